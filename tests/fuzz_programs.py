"""Seeded random straight-line programs over the public API, run on torch and fusegrad.

`generate(seed)` builds a `Program`: input tensors (shape, dtype, values, requires_grad) and
source lines `v3 = L.maximum(v1, 2.5)` over a library name `L` (torch or fusegrad). Each line
is drawn from `TEMPLATES` and checked on torch while generating, so programs are mostly valid;
a line torch rejects is kept, as the program's last line, for about one program in six (so
error classes and texts are compared too) and dropped otherwise.

`outcome(lib, program, mode)` runs a program ('eager', 'compiled' or 'second_order') and
records everything the comparison needs; `differences(want, got, mode)` lists what differs.
Torch is only the oracle: nothing here knows fusegrad's expected results.

Left out of generation because API.md / README.md put them outside the contract: advanced
(tensor or list) indexing, `|`, `^`, `//`, `%`, in-place ops (tests/test_view_fuzz.py covers
them with views), and ops API.md does not list.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import random
import warnings

import numpy as np

SHAPES = [(), (1,), (3,), (2, 1), (1, 3), (2, 3), (3, 2), (2, 1, 3), (2, 2, 3), (1, 2, 1), (0,), (2, 0)]
SHAPE_WEIGHTS = [6, 3, 6, 4, 4, 10, 3, 5, 3, 2, 1, 1]
DTYPES = ["float32", "float64", "int64", "bool"]
DTYPE_WEIGHTS = [12, 3, 3, 1]
INTS = [0, 1, 2, 3, -1, -2]
FLOATS = [0.0, 0.5, -1.5, 2.0, 1e-3, 3.25, 1e10, -0.25]
BOOLS = [True, False]
EXPONENTS = [2, 3, 0, -1, 0.5, 2.0, -0.5, 1.5, True]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e20, -1e20, float("nan"), float("inf"), float("-inf")]


@dataclasses.dataclass
class Input:
    name: str
    shape: tuple
    dtype: str
    values: np.ndarray
    requires_grad: bool

    def make(self, lib, float64: bool = False):
        """The input on `lib`; `float64` runs float32 inputs in float64 (second derivatives of
        float32 programs cancel too much for a tolerance to tell noise from a bug)."""
        dtype = "float64" if float64 and self.dtype == "float32" else self.dtype
        data = lib.tensor(self.values.astype(dtype), dtype=getattr(lib, dtype))
        return data.requires_grad_() if self.requires_grad else data

    def source(self) -> str:
        values = np.array2string(self.values, separator=", ", threshold=10**6, floatmode="unique",
                                 max_line_width=10**6)
        values = " ".join(values.split()).replace("nan", "np.nan").replace("inf", "np.inf")
        rg = ", requires_grad=True" if self.requires_grad else ""
        return (f"{self.name} = L.tensor(np.array({values}, dtype=np.{self.dtype}).reshape({self.shape}), "
                f"dtype=L.{self.dtype}{rg})")


@dataclasses.dataclass
class Program:
    seed: int
    inputs: list
    lines: list
    outputs: list
    ends_in_error: bool = False

    def function(self, lib):
        """The program as `f(*inputs) -> tuple of outputs`, over `lib`."""
        body = "\n    ".join(self.lines + [f"return ({', '.join(self.outputs)},)"])
        names = ", ".join(i.name for i in self.inputs)
        namespace = {"L": lib, "F": lib.nn.functional}
        exec(f"def f({names}):\n    {body}", namespace)
        return namespace["f"]

    def source(self) -> str:
        """A standalone script: `L` is torch or fusegrad, then the inputs and the lines."""
        head = ["import numpy as np", "import torch as L  # or: import fusegrad as L",
                "F = L.nn.functional"]
        return "\n".join(head + [i.source() for i in self.inputs] + self.lines
                         + [f"outputs = ({', '.join(self.outputs)},)"])


# ------------------------------------------------------------------ values
def _values(rng: random.Random, shape: tuple, dtype: str, specials: bool) -> np.ndarray:
    n = math.prod(shape)
    if dtype == "bool":
        flat = [rng.random() < 0.5 for _ in range(n)]
    elif dtype == "int64":
        flat = [rng.randint(-3, 4) for _ in range(n)]
    else:
        flat = []
        for _ in range(n):
            r = rng.random()
            if specials and r < 0.12:
                flat.append(rng.choice(SPECIAL))
            elif r < 0.2:
                flat.append(rng.choice([0.0, 1.0, -1.0, 0.5, 2.0]))  # ties and kinks (abs, relu, clamp)
            else:
                flat.append(round(rng.gauss(0, 1.5), 3))
    return np.array(flat, dtype=dtype).reshape(shape)


# ------------------------------------------------------------------ the generator
class Generator:
    """Draws lines one at a time; `pool` maps each tensor variable to its torch value."""

    def __init__(self, seed: int, torch):
        self.rng = random.Random(seed)
        self.torch = torch
        self.seed = seed
        self.specials = self.rng.random() < 0.25
        self.inputs: list[Input] = []
        self.lines: list[str] = []
        self.pool: dict = {}
        self.count = 0

    # -- variables
    def new_input(self, shape=None, dtype=None) -> str:
        rng = self.rng
        shape = shape if shape is not None else rng.choices(SHAPES, SHAPE_WEIGHTS)[0]
        dtype = dtype or rng.choices(DTYPES, DTYPE_WEIGHTS)[0]
        requires_grad = dtype.startswith("float") and rng.random() < 0.75
        name = "abcdefghijklmnopqrstu"[len(self.inputs)]
        spec = Input(name, tuple(shape), dtype, _values(rng, shape, dtype, self.specials), requires_grad)
        self.inputs.append(spec)
        self.pool[name] = spec.make(self.torch)
        return name

    def var(self, want=None) -> str:
        """A variable from the pool (a fresh input now and then); `want(t)` filters."""
        names = [n for n, t in self.pool.items() if want is None or want(t)]
        if not names or self.rng.random() < 0.12:
            return self.new_input(dtype="float32" if want is not None else None)
        return self.rng.choice(names)

    def floating(self) -> str:
        return self.var(lambda t: t.dtype.is_floating_point)

    def scalar(self) -> str:
        kind = self.rng.choices(["int", "float", "bool"], [4, 5, 1])[0]
        return repr(self.rng.choice({"int": INTS, "float": FLOATS, "bool": BOOLS}[kind]))

    def operand(self) -> str:
        return self.scalar() if self.rng.random() < 0.3 else self.var()

    def dim(self, name: str, extra: int = 0) -> int:
        """A valid dim of `name` (negative half the time); `extra` widens the range (unsqueeze)."""
        ndim = self.pool[name].dim() + extra
        if ndim == 0:
            return self.rng.choice([0, -1])
        d = self.rng.randrange(ndim)
        return d - ndim if self.rng.random() < 0.5 else d

    def like(self, name: str) -> str:
        """A variable broadcastable with `name`, usually; a fresh input of a compatible shape."""
        shape = tuple(self.pool[name].shape)
        r = self.rng.random()
        if r < 0.5:
            return self.var()
        if r < 0.8 and shape:
            # Drop leading dims and turn some dims into 1s: broadcastable.
            keep = shape[self.rng.randrange(len(shape) + 1):]
            shape = tuple(1 if self.rng.random() < 0.3 else s for s in keep)
        return self.new_input(shape=shape)

    # -- one line
    def step(self, keep_error: bool) -> bool:
        """Append one line; False when the program has ended (a kept error line)."""
        for _ in range(30):
            template = self.rng.choices(TEMPLATES, [w for w, _ in TEMPLATES_W])[0]
            snapshot = (len(self.inputs), dict(self.pool))
            expr = template(self)
            if expr is None:
                continue
            name = f"v{self.count}"
            line = f"{name} = {expr}"
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    value = eval(expr, {"L": self.torch, "F": self.torch.nn.functional, "float": float},
                                 dict(self.pool))
            except Exception:  # noqa: BLE001 - torch rejected the line
                if keep_error:
                    self.lines.append(line)
                    return False
                del self.inputs[snapshot[0]:]
                self.pool = snapshot[1]
                continue
            if not isinstance(value, self.torch.Tensor):
                continue
            self.lines.append(line)
            self.pool[name] = value
            self.count += 1
            return True
        return True


def generate(seed: int, steps: tuple = (2, 7)) -> Program:
    """The program of `seed` (deterministic: torch's checks are deterministic)."""
    import torch
    gen = Generator(seed, torch)
    for _ in range(gen.rng.randint(1, 2)):
        gen.new_input()
    n = gen.rng.randint(*steps)
    error_at = gen.rng.randrange(n) if gen.rng.random() < 0.17 else None
    ended = False
    for i in range(n):
        if not gen.step(keep_error=(i == error_at)):
            ended = True
            break
    outputs = [f"v{i}" for i in range(gen.count)] or [gen.inputs[0].name]
    return Program(seed, gen.inputs, gen.lines, outputs, ended)


# ------------------------------------------------------------------ templates
def _binary(g: Generator):
    op = g.rng.choice(["+", "-", "*", "/", "**", "+", "*"])
    a = g.var()
    r = g.rng.random()
    if r < 0.35:
        if op == "**":
            return f"{a} ** {g.rng.choice(EXPONENTS)!r}"
        return f"{a} {op} {g.scalar()}"
    if r < 0.55:
        return f"{g.scalar()} {op} {a}"          # reflected: radd, rsub, rmul, rdiv, rpow
    return f"{a} {op} {g.like(a)}"


def _functional_arith(g: Generator):
    fn = g.rng.choice(["add", "sub", "mul", "div", "pow"])
    a = g.var()
    b = g.rng.choice([g.like(a), g.scalar()])
    if g.rng.random() < 0.5:
        return f"{a}.{fn}({b})"
    return f"L.{fn}({a}, {b})"


def _neg(g: Generator):
    a = g.var()
    return g.rng.choice([f"-{a}", f"L.neg({a})", f"{a}.neg()"])


UNARY = ["abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu"]


def _unary(g: Generator):
    fn = g.rng.choice(UNARY)
    a = g.var() if g.rng.random() < 0.3 else g.floating()
    form = g.rng.random()
    if form < 0.45:
        return f"{a}.{fn}()"
    if form < 0.9 or fn != "relu":
        return f"L.{fn}({a})"
    return f"F.relu({a})"


def _pow_tensor(g: Generator):
    a = g.floating()
    b = g.like(a)
    return g.rng.choice([f"L.pow({a}, {b})", f"{a}.pow({b})", f"{a} ** {b}"])


def _extremum_pair(g: Generator):
    fn = g.rng.choice(["maximum", "minimum"])
    a = g.var()
    b = g.like(a)
    return g.rng.choice([f"L.{fn}({a}, {b})", f"{a}.{fn}({b})"])


def _clamp(g: Generator):
    a = g.var()
    lo, hi = sorted(g.rng.sample([-1, -0.5, 0, 0.5, 1, 2], 2))
    if g.rng.random() < 0.1:
        lo, hi = hi, lo                          # min > max: torch returns max everywhere
    return g.rng.choice([f"{a}.clamp({lo}, {hi})", f"L.clamp({a}, min={lo})", f"{a}.clamp(max={hi})",
                         f"L.clamp({a}, {lo}, {hi})"])


def _compare(g: Generator):
    op = g.rng.choice(["<", "<=", ">", ">=", "==", "!="])
    a = g.var()
    r = g.rng.random()
    if r < 0.4:
        return f"{a} {op} {g.scalar()}"
    if r < 0.55:
        return f"{g.scalar()} {op} {a}"
    return f"{a} {op} {g.like(a)}"


def _where(g: Generator):
    a = g.var()
    cond = g.var(lambda t: t.dtype == g.torch.bool) if g.rng.random() < 0.5 else f"({a} > 0)"
    if g.rng.random() < 0.05:
        cond = a                                 # not bool: torch's error
    b = g.rng.choice([g.like(a), g.scalar()])
    return f"L.where({cond}, {a}, {b})" if g.rng.random() < 0.7 else f"L.where({cond}, {b}, {a})"


def _dims_arg(g: Generator, name: str):
    ndim = g.pool[name].dim()
    r = g.rng.random()
    if r < 0.3 or ndim == 0:
        return None
    if r < 0.75:
        return g.dim(name)
    k = g.rng.randint(1, max(1, ndim))
    return tuple(g.rng.sample([d - ndim if g.rng.random() < 0.5 else d for d in range(ndim)], k))


def _reduce(g: Generator):
    fn = g.rng.choice(["sum", "mean", "norm", "sum", "mean"])
    a = g.var() if fn == "sum" else g.var() if g.rng.random() < 0.1 else g.floating()
    dim = _dims_arg(g, a)
    keep = g.rng.random() < 0.35
    args = [] if dim is None else [f"dim={dim!r}" if g.rng.random() < 0.6 else repr(dim)]
    if fn == "norm" and args and not args[0].startswith("dim="):
        args[0] = f"dim={dim!r}"                  # norm's second positional argument is p
    if keep and dim is not None:
        args.append("keepdim=True")
    if fn == "norm" and g.rng.random() < 0.2:
        args.insert(0, f"p={g.rng.choice([1, 2])}")
    if g.rng.random() < 0.5:
        return f"{a}.{fn}({', '.join(args)})"
    return f"L.{fn}({', '.join([a] + args)})"


def _extremum(g: Generator):
    fn = g.rng.choice(["max", "min"])
    a = g.var()
    if g.rng.random() < 0.35 or g.pool[a].dim() == 0:
        return f"{a}.{fn}()" if g.rng.random() < 0.5 else f"L.{fn}({a})"
    dim = g.dim(a)
    keep = ", keepdim=True" if g.rng.random() < 0.35 else ""
    pick = g.rng.choice(["[0]", ".values", ".indices", "[1]", "[0]"])
    call = f"{a}.{fn}({dim}{keep})" if g.rng.random() < 0.5 else f"L.{fn}({a}, dim={dim}{keep})"
    return call + pick


def _softmax(g: Generator):
    fn = g.rng.choice(["softmax", "log_softmax"])
    a = g.floating()
    dim = g.dim(a)
    return g.rng.choice([f"{a}.{fn}({dim})", f"L.{fn}({a}, dim={dim})", f"F.{fn}({a}, dim={dim})"])


def _matmul(g: Generator):
    a = g.floating()
    shape = tuple(g.pool[a].shape)
    if not shape:
        return None
    r = g.rng.random()
    if r < 0.6:                                  # a compatible right operand
        k = shape[-1]
        right = g.rng.choice([(k,), (k, g.rng.choice([1, 2, 3])), (2, k, 2) if len(shape) <= 2 else (k, 2)])
        b = g.new_input(shape=right, dtype=str(g.pool[a].dtype).split(".")[-1])
    else:
        b = g.var()
    return g.rng.choice([f"{a} @ {b}", f"L.matmul({a}, {b})", f"{a}.matmul({b})"])


def _reshape(g: Generator):
    a = g.var()
    shape = tuple(g.pool[a].shape)
    n = math.prod(shape)
    options = [(-1,), (n,), (1, n), (n, 1), tuple(reversed(shape)) or (1,), shape + (1,)]
    if n == 6:
        options += [(2, 3), (3, 2), (3, -1), (1, 2, 3), (2, 1, 3)]
    if n == 12:
        options += [(4, 3), (2, 6), (3, -1), (2, 2, 3)]
    target = g.rng.choice(options)
    if g.rng.random() < 0.05:
        target = (n + 1,)                        # wrong size: torch's error
    fn = g.rng.choice(["reshape", "view", "reshape"])
    args = ", ".join(map(str, target)) if g.rng.random() < 0.6 else repr(tuple(target))
    return f"{a}.{fn}({args})" if g.rng.random() < 0.8 or fn == "view" else f"L.reshape({a}, {tuple(target)!r})"


def _permute(g: Generator):
    a = g.var()
    ndim = g.pool[a].dim()
    r = g.rng.random()
    if r < 0.4:
        perm = list(range(ndim))
        g.rng.shuffle(perm)
        return f"{a}.permute({', '.join(map(str, perm))})" if g.rng.random() < 0.6 else f"L.permute({a}, {tuple(perm)!r})"
    if r < 0.75:
        d0, d1 = g.dim(a), g.dim(a)
        return f"{a}.transpose({d0}, {d1})" if g.rng.random() < 0.6 else f"L.transpose({a}, {d0}, {d1})"
    return g.rng.choice([f"{a}.t()", f"L.t({a})", f"{a}.T"]) if ndim <= 2 or g.rng.random() < 0.2 else None


def _squeeze(g: Generator):
    a = g.var()
    r = g.rng.random()
    if r < 0.45:
        d = g.dim(a, extra=1)
        return f"{a}.unsqueeze({d})" if g.rng.random() < 0.6 else f"L.unsqueeze({a}, {d})"
    if r < 0.7:
        return f"{a}.squeeze()" if g.rng.random() < 0.6 else f"L.squeeze({a})"
    return f"{a}.squeeze({g.dim(a)})"


def _expand(g: Generator):
    a = g.var()
    shape = list(g.pool[a].shape)
    target = [g.rng.choice([s, 2, -1]) if s == 1 else g.rng.choice([s, -1]) for s in shape]
    if g.rng.random() < 0.4:
        target = [2] + target
    if not target:
        target = [3]
    return f"{a}.expand({', '.join(map(str, target))})"


def _flatten(g: Generator):
    a = g.var()
    if g.rng.random() < 0.5:
        return g.rng.choice([f"{a}.flatten()", f"L.flatten({a})"])
    s, e = sorted([g.dim(a), g.dim(a)], key=lambda d: d % max(1, g.pool[a].dim()))
    return f"{a}.flatten({s}, {e})"


INDICES = ["0", "-1", ":, 1:3", "..., None", "1:", "::2", "None", "0, 1", ":, 0", "..., 0", "..., -1",
           ":, :, 1", "1:, ::-1", "2", "0, None", ":, None, :", "..., 1:2", "-3"]


def _index(g: Generator):
    a = g.var()
    idx = g.rng.choice(INDICES)
    if "::-1" in idx:
        idx = idx.replace("::-1", "")            # negative steps: torch raises ValueError; keep rare
    return f"{a}[{idx}]"


def _cat(g: Generator):
    a = g.var()
    fn = g.rng.choice(["cat", "stack"])
    shape = tuple(g.pool[a].shape)
    others = [a]
    for _ in range(g.rng.randint(1, 2)):
        if g.rng.random() < 0.7:
            if fn == "cat" and shape:
                # Same shape except along dim 0 or the last dim.
                d = g.rng.choice([0, len(shape) - 1])
                new = list(shape)
                new[d] = g.rng.choice([1, 2])
                others.append(g.new_input(shape=tuple(new)))
            else:
                others.append(g.new_input(shape=shape))
        else:
            others.append(g.var())
    dim = g.dim(a, extra=1 if fn == "stack" else 0)
    if fn == "cat" and g.rng.random() < 0.5 and shape:
        dim = g.rng.choice([0, -1])
    seq = f"[{', '.join(others)}]" if g.rng.random() < 0.7 else f"({', '.join(others)},)"
    return f"L.{fn}({seq}, {dim})" if g.rng.random() < 0.6 else f"L.{fn}({seq}, dim={dim})"


def _detach(g: Generator):
    a = g.var()
    # fg.detach(t) is missing (test_api_fuzz.py records it as an xfail): method forms only here.
    return g.rng.choice([f"{a}.detach()", f"{a}.detach() * {g.like(a)}"])


def _cast(g: Generator):
    a = g.var()
    return g.rng.choice([f"{a}.float()", f"{a}.double()", f"{a}.long()", f"{a}.bool()",
                         f"{a}.to(L.float64)", f"{a}.to(L.float32)", f"{a}.to(dtype=L.int64)"])


def _scalar_read(g: Generator):
    a, b = g.floating(), g.var()
    return f"{b} * float({a}.sum())"             # a value read back: a graph break when compiled


def _bad_argument(g: Generator):
    """A non-tensor where a tensor is required: torch's TypeError."""
    a = g.var()
    return g.rng.choice([f"L.exp({g.scalar()})", f"L.add({g.scalar()}, {a})", f"L.matmul({a}, {g.scalar()})",
                         f"L.cat({a}, 0)", f"L.maximum({a}, {g.scalar()})", f"{a}.sum(dim=1.5)"])


TEMPLATES_W = [
    (14, _binary), (4, _functional_arith), (2, _neg), (10, _unary), (2, _pow_tensor), (3, _extremum_pair),
    (3, _clamp), (4, _compare), (3, _where), (7, _reduce), (4, _extremum), (3, _softmax), (4, _matmul),
    (4, _reshape), (4, _permute), (3, _squeeze), (2, _expand), (2, _flatten), (5, _index), (3, _cat),
    (2, _detach), (3, _cast), (1, _scalar_read), (1, _bad_argument),
]
TEMPLATES = [t for _, t in TEMPLATES_W]


# ------------------------------------------------------------------ running
def _dtype_name(t) -> str:
    return str(t.dtype).split(".")[-1]


def _array(t) -> np.ndarray:
    try:
        return np.array(t.detach().tolist() if t.dim() else t.detach().item(), dtype=_dtype_name(t))
    except RuntimeError:                         # torch's efficient zero tensor has no storage to read
        return np.zeros(tuple(t.shape), dtype=_dtype_name(t))


def _weight(lib, t):
    """A fixed weight the shape of `t`, so a transposed or mis-summed gradient shows."""
    n = t.numel()
    w = np.linspace(0.5, 1.5, n).reshape(tuple(t.shape)) if n else np.zeros(tuple(t.shape))
    return lib.tensor(w.astype(_dtype_name(t)), dtype=t.dtype)


def _record(t, with_repr: bool) -> dict:
    fn = t.grad_fn
    return {"shape": tuple(t.shape), "dtype": _dtype_name(t), "value": _array(t),
            "requires_grad": t.requires_grad, "grad_fn": None if fn is None else type(fn).__name__,
            "repr": repr(t) if with_repr else None}


def _error(exc) -> tuple:
    return ("error", type(exc).__name__, str(exc))


def outcome(lib, program: Program, mode: str = "eager") -> dict:
    """Everything observable about running `program` on `lib` in `mode`.

    mode: 'eager'; 'compiled' (fg.compile of the function; torch runs eagerly);
    'second_order' (eager, then gradients with create_graph=True differentiated again)."""
    fn = program.function(lib)
    if mode == "compiled" and lib.__name__ == "fusegrad":
        fn = lib.compile(fn)
    inputs = [i.make(lib, float64=mode == "second_order") for i in program.inputs]
    result: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            outs = fn(*inputs)
        except Exception as exc:  # noqa: BLE001 - the class and text are compared
            result["forward"] = _error(exc)
            return result
        result["forward"] = ("ok",)
        result["outputs"] = [_record(t, mode == "eager") for t in outs]
        grads_of = [o for o in outs if o.dtype.is_floating_point and o.requires_grad]
        if not grads_of:
            return result
        loss = sum((o * _weight(lib, o)).sum().double() for o in grads_of)
        leaves = [t for t in inputs if t.requires_grad]
        try:
            if mode == "second_order":
                firsts = lib.autograd.grad(loss, leaves, create_graph=True, allow_unused=True)
                result["first"] = [None if g is None else (_array(g), g.requires_grad) for g in firsts]
                loss = sum(((g * g).sum() + (g * _weight(lib, g)).sum()).double()
                           for g in firsts if g is not None and g.requires_grad)
                if not isinstance(loss, lib.Tensor):
                    return result
            loss.backward()
        except Exception as exc:  # noqa: BLE001
            result["backward"] = _error(exc)
            return result
        result["grads"] = [None if t.grad is None else (_array(t.grad), _dtype_name(t.grad)) for t in inputs]
    return result


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    if got.shape != want.shape:
        return False
    if want.dtype.kind in "biu":
        return np.array_equal(got, want)
    # float32 tolerance; relative to the values' magnitude for sums of large terms
    scale = np.nanmax(np.abs(np.where(np.isfinite(want), want, 0)), initial=1.0)
    return np.allclose(got, want, rtol=2e-4, atol=2e-5 * scale, equal_nan=True) and \
        np.array_equal(np.isnan(got), np.isnan(want))


def _identical(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit-equal values, the sign of zero included (reprs are compared only then: the sign of
    a zero product or sum is not part of the comparison, torch prints it as -0.)."""
    return got.shape == want.shape and got.dtype == want.dtype and \
        np.array_equal(got, want, equal_nan=want.dtype.kind == "f") and \
        (want.dtype.kind != "f" or np.array_equal(np.signbit(got), np.signbit(want)))


# torch's own backward bugs, not behaviour to match: pow with a bool exponent tensor and a few
# bool/int mixes fail inside torch's backward formulas.
TORCH_BACKWARD_BUGS = ("Subtraction, the `-` operator, with a bool tensor is not supported",
                       "INTERNAL ASSERT FAILED")


def differences(want: dict, got: dict, mode: str = "eager") -> list[str]:
    """What differs between torch's outcome `want` and fusegrad's `got`, one line each."""
    out = []
    if want["forward"] != got["forward"]:
        if want["forward"][0] == "error" and mode == "compiled":
            return []                            # compiled runs are checked where torch succeeds
        return [f"forward: torch {want['forward']} fusegrad {got['forward']}"]
    for i, (w, g) in enumerate(zip(want.get("outputs", []), got.get("outputs", []))):
        for key in ("shape", "dtype", "requires_grad", "grad_fn", "repr"):
            if key == "grad_fn" and mode == "compiled":
                continue                         # README: compiled outputs carry CompiledFunctionBackward
            if key == "repr" and not _identical(g["value"], w["value"]):
                continue                         # printed digits may differ in the last place
            if key == "repr" and w[key] is not None and w[key].replace("torch.", "fg.") == g[key]:
                continue                         # dtype=torch.float64 is printed dtype=fg.float64
            if w[key] != g[key]:
                out.append(f"output {i} {key}: torch {w[key]!r} fusegrad {g[key]!r}")
        if w["shape"] == g["shape"] and not _close(g["value"], w["value"]):
            out.append(f"output {i} value: torch {w['value'].tolist()} fusegrad {g['value'].tolist()}")
    if want.get("backward") and any(bug in want["backward"][2] for bug in TORCH_BACKWARD_BUGS):
        return out
    for key in ("backward",):
        if want.get(key) != got.get(key):
            out.append(f"{key}: torch {want.get(key)} fusegrad {got.get(key)}")
    for key in ("first", "grads"):
        ws, gs = want.get(key), got.get(key)
        if ws is None or gs is None:
            if (ws is None) != (gs is None):
                out.append(f"{key}: torch {ws} fusegrad {gs}")
            continue
        for i, (w, g) in enumerate(zip(ws, gs)):
            if (w is None) != (g is None):
                out.append(f"{key} {i}: torch {w} fusegrad {g}")
            elif w is not None and (w[1] != g[1] or not _close(g[0], w[0])):
                out.append(f"{key} {i}: torch {w[0].tolist()} {w[1]} fusegrad {g[0].tolist()} {g[1]}")
    return out


def check(seed: int, mode: str = "eager") -> tuple[Program, list[str]]:
    """The program of `seed` and its differences from torch in `mode`."""
    import torch
    import fusegrad as fg
    program = generate(seed)
    return program, differences(outcome(torch, program, mode), outcome(fg, program, mode), mode)
