"""Random programs of indexing inside compiled kernels: fg.compile against eager fusegrad.

The kernels' index arithmetic (slices with steps, integer indices, writes into slices of
slices, cat and stack, transposes, permutes, flattens, expands, keepdim reductions broadcast
back, softmaxes and maxima along any dim, `+=` through an index) is where a
compiled program can be silently wrong while every op is right on its own: a loop cut at a
slice's seam read a strided write's position as `i0 - 2 // 2` (alias fuzzer, seed 92111).
Each seed's program is a function of one tensor built from such statements; its value and
gradient under `fg.compile(fg.value_and_grad(f))` (Numba kernels, compiled on the first
call) must equal eager execution's (the reference executor; eager is checked against torch
by tests/test_api_fuzz.py).

Reproduce one seed (prints the program and what differs):
    python3 tests/test_index_kernel_fuzz.py 123
Sweep a range (one line per failing seed, then counts):
    python3 tests/test_index_kernel_fuzz.py 0 300
"""
from __future__ import annotations

import random
import sys
import warnings

import numpy as np
import pytest

import fusegrad as fg


class _Program:
    """Statements over named tensors whose shapes are tracked while generating."""

    def __init__(self, rng: random.Random, shape: tuple):
        self.rng = rng
        self.lines: list[str] = []
        self.shapes = {"x": shape}
        self.count = 0

    def new(self, shape: tuple) -> str:
        self.count += 1
        name = f"t{self.count}"
        self.shapes[name] = shape
        return name

    def source(self) -> str:
        body = "\n".join("    " + line for line in self.lines)
        last = list(self.shapes)[-1]
        extra = " + ".join(f"{name}.sum() * {0.1 * (k + 1):.1f}" for k, name in enumerate(list(self.shapes)[1:-1][-3:]))
        loss = f"({last} * {last}).sum()" + (f" + {extra}" if extra else "")
        return f"def f(x):\n{body}\n    return {loss}\n"


def _slice_text(rng: random.Random, size: int) -> tuple[str, int]:
    """A random slice of a dim of `size` (never empty): its text and its length."""
    step = rng.choice([1, 1, 1, 2, 3])
    start = rng.randrange(0, size)
    stop = rng.randrange(start + 1, size + 1)
    length = len(range(start, stop, step))
    text = f"{start if start else ''}:{stop if stop != size else ''}" + (f":{step}" if step != 1 else "")
    return text, length


def _index(rng: random.Random, shape: tuple, allow_int: bool = True) -> tuple[str, tuple]:
    """A basic index of a value of `shape`: slices, sometimes an integer; its text and the result's shape."""
    items, out = [], []
    for d, size in enumerate(shape):
        if allow_int and len(shape) > 1 and rng.random() < 0.15 and len(out) + (len(shape) - d - 1) >= 1:
            items.append(str(rng.randrange(size)))
            continue
        if rng.random() < 0.3:
            items.append(":")
            out.append(size)
            continue
        text, length = _slice_text(rng, size)
        items.append(text)
        out.append(length)
    return ", ".join(items), tuple(out)


UNARY = ["{v}.tanh()", "{v}.sin()", "(-{v} * {v}).exp()", "{v}.relu()", "{v}.sigmoid()", "({v} * 1.5 - 0.25)"]


def _statement(p: _Program) -> None:
    rng = p.rng
    name = rng.choice(list(p.shapes))
    shape = p.shapes[name]
    kind = rng.choice(["slice", "setitem", "setitem_nested", "cat", "stack", "transpose", "unary", "binary_reduce",
                       "expand", "inplace_slice", "reduce", "flatten", "permute", "softmax", "max_dim", "add_at",
                       "where", "negative_slice"])
    if kind == "slice":
        index, out = _index(rng, shape)
        p.lines.append(f"{p.new(out)} = {name}[{index}]")
    elif kind in ("setitem", "setitem_nested"):
        t = p.new(shape)
        p.lines.append(f"{t} = {name}.clone()")
        index, out = _index(rng, shape)
        target = f"{t}[{index}]"
        if kind == "setitem_nested" and out:
            inner, out = _index(rng, out, allow_int=False)
            target = f"{t}[{index}][{inner}]"
        value = rng.choice(["2.5", f"({target} * -2.0).tanh()", f"{name}[{index}].sum() * 0.5"]) \
            if kind == "setitem" else rng.choice(["-1.5", f"({target} + 1.0).sin()"])
        p.lines.append(f"{target} = {value}")
    elif kind == "cat" and shape:
        d = rng.randrange(len(shape))
        text, length = _slice_text(rng, shape[d])
        index = ", ".join(":" if k != d else text for k in range(len(shape)))
        out = tuple(s + length if k == d else s for k, s in enumerate(shape))
        first, second = (name, f"({name}[{index}] * 2.0)")
        if rng.random() < 0.5:
            first, second = second, first
        p.lines.append(f"{p.new(out)} = fg.cat([{first}, {second}], dim={d - len(shape) if rng.random() < 0.5 else d})")
    elif kind == "stack":
        d = rng.randrange(len(shape) + 1)
        out = shape[:d] + (2,) + shape[d:]
        p.lines.append(f"{p.new(out)} = fg.stack([{name}, {name}.cos()], dim={d})")
    elif kind == "transpose" and len(shape) >= 2:
        a, b = rng.sample(range(len(shape)), 2)
        out = list(shape)
        out[a], out[b] = out[b], out[a]
        p.lines.append(f"{p.new(tuple(out))} = {name}.transpose({a}, {b})")
    elif kind == "unary":
        p.lines.append(f"{p.new(shape)} = " + rng.choice(UNARY).format(v=name))
    elif kind == "binary_reduce" and shape:
        d = rng.randrange(len(shape))
        p.lines.append(f"{p.new(shape)} = {name} * {name}.sum({d}, keepdim=True).tanh() + {name}.mean({d}, keepdim=True)")
    elif kind == "expand" and shape:
        d = rng.randrange(len(shape) + 1)
        n = rng.choice([2, 3])
        out = shape[:d] + (n,) + shape[d:]
        p.lines.append(f"{p.new(out)} = {name}.unsqueeze({d}).expand({', '.join(map(str, out))}) * "
                       f"fg.arange({n}, dtype=fg.float32).reshape({', '.join('-1' if k == d else '1' for k in range(len(out)))})")
    elif kind == "inplace_slice" and shape:
        t = p.new(shape)
        index, _ = _index(rng, shape)
        p.lines.append(f"{t} = {name} * 1.0")
        p.lines.append(f"{t}[{index}].mul_(-3.0)")
    elif kind == "reduce" and len(shape) >= 2:
        d = rng.randrange(len(shape))
        out = shape[:d] + shape[d + 1:]
        p.lines.append(f"{p.new(out)} = {name}.sum({d})")
    elif kind == "flatten" and len(shape) >= 2:
        # (of a transposed value: a reshape that copies)
        source = f"{name}.transpose(0, 1)" if rng.random() < 0.5 else name
        out = list(shape)
        if source != name:
            out[0], out[1] = out[1], out[0]
        p.lines.append(f"{p.new((out[0] * out[1],) + tuple(out[2:]))} = {source}.flatten(0, 1)")
    elif kind == "permute" and len(shape) == 3:
        order = rng.sample(range(3), 3)
        p.lines.append(f"{p.new(tuple(shape[k] for k in order))} = {name}.permute({', '.join(map(str, order))}) * 1.5")
    elif kind == "softmax" and shape:
        d = rng.randrange(len(shape))
        fn = rng.choice(["softmax", "log_softmax"])
        p.lines.append(f"{p.new(shape)} = {name}.{fn}({d})")
    elif kind == "max_dim" and len(shape) >= 2:
        d = rng.randrange(len(shape))
        p.lines.append(f"{p.new(shape[:d] + shape[d + 1:])} = {name}.max({d})[0]")
    elif kind == "add_at" and shape:
        t = p.new(shape)
        index, _ = _index(rng, shape)
        p.lines.append(f"{t} = {name}.clone()")
        p.lines.append(f"{t}[{index}] += {name}[{index}].tanh()")
    elif kind == "where" and shape:
        d = rng.randrange(len(shape))
        p.lines.append(f"{p.new(shape)} = fg.where({name} > 0, {name}, {name}.sum({d}, keepdim=True) * 0.1)")
    elif kind == "negative_slice" and shape:
        d = rng.randrange(len(shape))
        k = rng.randrange(1, shape[d] + 1)
        index = ", ".join(":" if j != d else f"-{k}:" for j in range(len(shape)))
        p.lines.append(f"{p.new(tuple(k if j == d else n for j, n in enumerate(shape)))} = {name}[{index}] * 2.0")
    else:
        p.lines.append(f"{p.new(shape)} = {name} * 0.5")


def generate(seed: int) -> str:
    """The source of seed's function `f(x)`."""
    rng = random.Random(seed)
    ndim = rng.choice([1, 2, 2, 3])
    shape = tuple(rng.randrange(2, 9) for _ in range(ndim))
    p = _Program(rng, shape)
    for _ in range(rng.randrange(2, 7)):
        _statement(p)
    return f"# x: {list(shape)}\n" + p.source()


def _argument(seed: int, source: str) -> np.ndarray:
    shape = eval(source.splitlines()[0].split(":", 1)[1])       # the "# x: [...]" line
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def check(seed: int) -> list[str]:
    """What differs between eager and compiled value and gradient (empty if nothing)."""
    source = generate(seed)
    ns = {"fg": fg}
    exec(source, ns)
    x = _argument(seed, source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = fg.value_and_grad(ns["f"])(fg.from_numpy(x.copy()))
        except Exception as exc:  # noqa: BLE001 - compared below
            want = exc
        try:
            got = fg.compile(fg.value_and_grad(ns["f"]))(fg.from_numpy(x.copy()))
        except Exception as exc:  # noqa: BLE001
            got = exc
    if isinstance(want, Exception) or isinstance(got, Exception):
        same = type(want) is type(got) and str(want) == str(got)
        return [] if same else [f"eager: {want!r} | compiled: {got!r}"]
    diffs = []
    for label, w, g in (("value", want[0], got[0]), ("gradient", want[1], got[1])):
        w, g = w.numpy(), g.numpy()
        if w.shape != g.shape or not np.allclose(g, w, rtol=2e-5, atol=2e-5, equal_nan=True):
            diffs.append(f"{label}: eager {np.array2string(w, precision=5)} | compiled {np.array2string(g, precision=5)}")
    return diffs


@pytest.mark.parametrize("seed", range(4))
def test_compiled_indexing_matches_eager(seed):
    diffs = check(seed)
    assert not diffs, f"seed {seed}; reproduce with `python3 tests/test_index_kernel_fuzz.py {seed}`\n" + \
        generate(seed) + "\n".join(diffs)


@pytest.mark.slow
@pytest.mark.parametrize("block", range(2))
def test_compiled_indexing_sweep(block):
    """A longer sweep, once per CI run (the slow marker)."""
    failing = [seed for seed in range(1000 + block * 30, 1000 + block * 30 + 30) if check(seed)]
    assert not failing, f"seeds differ: {failing}"


def _main(argv: list[str]) -> int:
    if len(argv) == 1:
        seed = int(argv[0])
        print(generate(seed))
        for d in check(seed):
            print(d)
        return 0
    lo, hi = int(argv[0]), int(argv[1])
    bad = 0
    for seed in range(lo, hi):
        diffs = check(seed)
        if diffs:
            bad += 1
            print(seed, diffs[0][:300], flush=True)
    print(f"{bad} of {hi - lo} seeds differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
