"""Special-value matrix against torch: NaN, infinities, signed zeros, denormals, the largest
finite values and the edges of the vectorised math's ranges, through every op of the API
list, eagerly and compiled, forward and gradient, in float32 and float64.

Each *group* of ops (unary, binary, reductions, softmax, losses) is one set of operands
holding all the special values at once (binary ops take the cross product of the values
with themselves), so that each compiled form compiles one program per group and dtype.
Every op has its own copies of the operands, so that its gradients stay separate.

Modes (each compared cell by cell with torch 2.13, one test per op):
  eager_fwd     the op on fusegrad tensors
  eager_grad    out.backward(ones)
  eager_seed    out.backward(seed), a gradient holding special values
  compiled_fwd  fg.compile(step): the forward of a step that also runs backward inside
  compiled_seed the gradients that step's backward(seed) leaves in the leaves' .grad
  compiled_grad fg.compile(fg.grad(sum of the ops' sums)): gradients of ones

Values compare NaN-aware: NaN where torch has NaN, infinities exactly, the sign of a zero
where both are zero, finite values within a few ulp (gradients, which chain several rounded
operations, within a relative 1e-5 / 1e-12 and a small absolute tolerance).
"""
from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")

INF, NAN = math.inf, math.nan
DTYPES = ("float32", "float64")


# ================================================================ the values
def _f32(v: float) -> float:
    return float(np.float32(v))


_COMMON = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5, 3.0, 1e-30, -1e-30, 1e30, -1e30, INF, -INF, NAN,
           9.0, -9.5, 10.0, 20.0, -22.5, 100.0, -100.0, 1e-7]
# Per dtype: denormal, smallest normal, largest finite, exp's overflow/underflow edges,
# the neighbours of 1 (log near 1).
_EDGES = {
    "float32": [1e-40, -1e-40, float(np.finfo(np.float32).tiny), 3e38, -3e38,
                float(np.finfo(np.float32).max), -float(np.finfo(np.float32).max),
                _f32(88.72), _f32(88.73), _f32(-87.4), _f32(-103.9), _f32(-104.0),
                float(np.nextafter(np.float32(1), np.float32(2))), float(np.nextafter(np.float32(1), np.float32(0)))],
    "float64": [1e-310, -1e-310, float(np.finfo(np.float64).tiny), 1e300, -1e300,
                float(np.finfo(np.float64).max), -float(np.finfo(np.float64).max),
                709.78, 709.79, -708.5, -745.0, -745.2, 1e-40, 3e38,
                math.nextafter(1.0, 2.0), math.nextafter(1.0, 0.0)],
}


def values(dtype: str) -> list[float]:
    """All special values of one dtype (float32 ones are representable)."""
    return _COMMON + _EDGES[dtype]


# A gradient seed with special values, repeated to the output's size.
_SEED = [1.0, -0.0, 2.0, INF, 0.5, NAN, -INF, 0.0, -1.0, 1e30, 1e-40, -3.0]


def seed_array(shape, dtype: str) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    return np.resize(np.asarray(_SEED, dtype=dtype), n).reshape(shape)


# ================================================================ op groups
@dataclass
class Op:
    """One cell: fn(L, *operands) -> tensor; operands are (numpy array, is a float leaf)."""
    name: str
    fn: Callable
    operands: Callable              # dtype -> list of np.ndarray
    differentiable: bool = True
    skip: Callable | None = None    # (dtype, operands) -> bool mask of output elements not compared
    zero_sign: bool = True          # compare the sign of zero results
    chained: bool = False           # several rounded ops: gradient tolerance for the values too


@dataclass
class Group:
    name: str
    ops: list = field(default_factory=list)

    def add(self, name, fn, operands, differentiable=True, skip=None, zero_sign=True, chained=False):
        self.ops.append(Op(name, fn, operands, differentiable, skip, zero_sign, chained))


def _unary_operands(dtype):
    return [np.asarray(values(dtype), dtype=dtype)]


def _binary_operands(dtype):
    v = np.asarray(values(dtype), dtype=dtype)
    return [np.repeat(v, v.size), np.tile(v, v.size)]


UNARY = Group("unary")
for _name in ("abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "neg"):
    UNARY.add(_name, (lambda n: lambda L, x: getattr(L, n)(x))(_name), _unary_operands)
UNARY.add("neg_op", lambda L, x: -x, _unary_operands)
UNARY.add("relu_F", lambda L, x: L.nn.functional.relu(x), _unary_operands)
for _e in (0, 0.5, -0.5, 1, 2, 3, -1, -2, 2.5, 0.0, 1.0, 2.0):
    # (x ** 0.5 and x ** -0.5 are sqrt and 1/sqrt, as torch's: nan at -inf, -0. at -0.)
    UNARY.add(f"pow_{_e!r}", (lambda e: lambda L, x: x ** e)(_e), _unary_operands)
UNARY.add("rpow_2", lambda L, x: 2.0 ** x, _unary_operands)
UNARY.add("rpow_neg", lambda L, x: (-2.0) ** x, _unary_operands)
UNARY.add("pow_fn_3", lambda L, x: L.pow(x, 3), _unary_operands)
UNARY.add("clamp_-1_1", lambda L, x: L.clamp(x, -1.0, 1.0), _unary_operands)
UNARY.add("clamp_min0", lambda L, x: x.clamp(min=0.0), _unary_operands)
UNARY.add("clamp_max0", lambda L, x: x.clamp(max=-0.0), _unary_operands)
UNARY.add("clamp_crossed", lambda L, x: x.clamp(1.0, -1.0), _unary_operands)
UNARY.add("clamp_inf", lambda L, x: x.clamp(-INF, INF), _unary_operands)
UNARY.add("add_inf", lambda L, x: x + INF, _unary_operands)
UNARY.add("mul_0", lambda L, x: x * 0.0, _unary_operands)
UNARY.add("rdiv_1", lambda L, x: 1.0 / x, _unary_operands)
UNARY.add("div_0", lambda L, x: x / 0.0, _unary_operands)
UNARY.add("rsub_1", lambda L, x: 1.0 - x, _unary_operands)
UNARY.add("where_pos", lambda L, x: L.where(x > 0, x, x * 2.0), _unary_operands)
# Chains: log(sigmoid(9)) amplifies sigmoid's last-bit rounding 1e4 times.
UNARY.add("log_sigmoid", lambda L, x: L.log(L.sigmoid(x)), _unary_operands, chained=True)
UNARY.add("exp_log", lambda L, x: L.exp(L.log(x)), _unary_operands, chained=True)
UNARY.add("tanh_exp", lambda L, x: L.tanh(L.exp(x)), _unary_operands, chained=True)
for _cmp in ("lt", "le", "gt", "ge", "eq", "ne"):
    UNARY.add(f"{_cmp}_0", (lambda c: lambda L, x: getattr(x, f"__{c}__")(0.0))(_cmp), _unary_operands,
              differentiable=False)
UNARY.add("eq_nan", lambda L, x: x == NAN, _unary_operands, differentiable=False)
UNARY.add("lt_inf", lambda L, x: x < INF, _unary_operands, differentiable=False)

BINARY = Group("binary")
for _name, _fn in (("add", lambda L, a, b: a + b), ("sub", lambda L, a, b: a - b),
                   ("mul", lambda L, a, b: a * b), ("div", lambda L, a, b: a / b),
                   ("pow", lambda L, a, b: a ** b), ("pow_fn", lambda L, a, b: L.pow(a, b)),
                   ("where_gt", lambda L, a, b: L.where(a > b, a, b))):
    BINARY.add(_name, _fn, _binary_operands)
# torch's own sign of a zero tie (maximum(0., -0.), clamp(-0., min=tensor(0.))) depends on
# the element's position: its vectorised loop returns the second operand, its scalar loop
# (tails, small tensors) the first. Zeros are compared by value here (the minimum/matmul
# case is recorded elsewhere; maximum and tensor-bound clamp share it).
for _name, _fn in (("maximum", lambda L, a, b: L.maximum(a, b)), ("minimum", lambda L, a, b: L.minimum(a, b)),
                   ("clamp_min_t", lambda L, a, b: L.clamp(a, min=b)),
                   ("clamp_max_t", lambda L, a, b: L.clamp(a, max=b)),
                   ("clamp_both_t", lambda L, a, b: L.clamp(a, b, b * 2.0))):
    BINARY.add(_name, _fn, _binary_operands, zero_sign=False)
for _cmp in ("lt", "le", "gt", "ge", "eq", "ne"):
    BINARY.add(_cmp, (lambda c: lambda L, a, b: getattr(a, f"__{c}__")(b))(_cmp), _binary_operands,
               differentiable=False)


def _big(dtype):
    return 3e38 if dtype == "float32" else 1e308


def _matrix_rows(dtype):
    big, tiny = _big(dtype), (1e-40 if dtype == "float32" else 1e-310)
    return [
        [1.0, 2.0, 3.0, 4.0],
        [INF, 1.0, 2.0, 3.0],
        [-INF, 1.0, -2.0, 3.0],
        [NAN, 1.0, 2.0, 3.0],
        [1.0, NAN, INF, -INF],
        [INF, -INF, 1.0, 2.0],
        [-INF, -INF, -INF, -INF],
        [INF, INF, 1.0, 2.0],
        [0.0, -0.0, 0.0, -0.0],
        [-0.0, -0.0, -0.0, -0.0],
        [big, big, big, 1.0],            # overflows in any summation order
        [1e30, 1e30, 1e-30, 0.0],
        [1e-30, -1e-30, 0.0, 0.0],
        [tiny, -tiny, tiny, 0.0],
        [NAN, NAN, NAN, NAN],
        [-1.0, -1.0, -1.0, -1.0],
        [1000.0, 0.0, -1000.0, 1.0],
        [800.0, 800.0, -INF, -INF],
    ]


def _matrix(dtype):
    return [np.asarray(_matrix_rows(dtype), dtype=dtype)]


def _finite_matrix(dtype):
    """Rows without NaN: full reductions see infinities and overflow, not only NaN."""
    rows = [r for r in _matrix_rows(dtype) if not any(math.isnan(v) for v in r)]
    return [np.asarray(rows, dtype=dtype)]


def _big_matrix(dtype):
    big = _big(dtype)
    return [np.asarray([[big, big], [-0.0, 1.0]], dtype=dtype)]


def _zero_matrix(dtype):
    return [np.asarray([[-0.0, -0.0], [-0.0, -0.0]], dtype=dtype)]


REDUCE = Group("reduce")
# Along dim 1 every row is its own case; the NaN-free matrix adds the reductions that
# mix rows (dim 0 and full), which NaN would otherwise decide alone.
REDUCE.add("sum_1", lambda L, x: x.sum(1), _matrix)
REDUCE.add("mean_1", lambda L, x: x.mean(1, keepdim=True), _matrix)
REDUCE.add("max_1", lambda L, x: x.max(1)[0], _matrix)
REDUCE.add("max_1_idx", lambda L, x: x.max(1)[1], _matrix, differentiable=False)
REDUCE.add("min_1", lambda L, x: x.min(1, keepdim=True)[0], _matrix)
REDUCE.add("min_1_idx", lambda L, x: x.min(1)[1], _matrix, differentiable=False)
# amax/amin of +0 and -0: torch's sign depends on position and vector lanes (the
# first of the tied zeros in a short row, not in a long one).
REDUCE.add("amax_1", lambda L, x: x.amax(1), _matrix, zero_sign=False)
REDUCE.add("amin_1", lambda L, x: x.amin(1), _matrix, zero_sign=False)
REDUCE.add("norm_1", lambda L, x: x.norm(dim=1), _matrix)
REDUCE.add("norm_p1", lambda L, x: x.norm(p=1, dim=1), _matrix)
REDUCE.add("norm_pinf", lambda L, x: x.norm(p=INF, dim=1), _matrix)
for _suffix, _operands in (("", _matrix), ("_nonan", _finite_matrix)):
    REDUCE.add(f"sum_0{_suffix}", lambda L, x: x.sum(0), _operands)
    REDUCE.add(f"max_0{_suffix}", lambda L, x: x.max(0)[0], _operands)
    REDUCE.add(f"norm_0{_suffix}", lambda L, x: x.norm(dim=0, keepdim=True), _operands)
    REDUCE.add(f"sum_all{_suffix}", lambda L, x: x.sum(), _operands)
    REDUCE.add(f"mean_all{_suffix}", lambda L, x: x.mean(), _operands)
    REDUCE.add(f"max_all{_suffix}", lambda L, x: x.max(), _operands)
    REDUCE.add(f"min_all{_suffix}", lambda L, x: x.min(), _operands)
    REDUCE.add(f"norm_all{_suffix}", lambda L, x: x.norm(), _operands)
for _suffix, _operands in (("_big", _big_matrix), ("_zeros", _zero_matrix)):
    REDUCE.add(f"sum_all{_suffix}", lambda L, x: x.sum(), _operands)
    REDUCE.add(f"sum_dims{_suffix}", lambda L, x: x.sum((0, 1), keepdim=True), _operands)
    REDUCE.add(f"mean_all{_suffix}", lambda L, x: x.mean(), _operands)
    REDUCE.add(f"max_all{_suffix}", lambda L, x: x.max(), _operands)
    REDUCE.add(f"min_all{_suffix}", lambda L, x: x.min(), _operands)
    REDUCE.add(f"norm_all{_suffix}", lambda L, x: x.norm(), _operands)

SOFTMAX = Group("softmax")
SOFTMAX.add("softmax_1", lambda L, x: x.softmax(1), _matrix)
SOFTMAX.add("log_softmax_1", lambda L, x: x.log_softmax(1), _matrix)
SOFTMAX.add("softmax_0", lambda L, x: x.t().softmax(0), _matrix)
SOFTMAX.add("log_softmax_0", lambda L, x: x.t().log_softmax(0), _matrix)
SOFTMAX.add("F_softmax", lambda L, x: L.nn.functional.softmax(x, dim=-1), _matrix)
SOFTMAX.add("F_log_softmax", lambda L, x: L.nn.functional.log_softmax(x, dim=-1), _matrix)
SOFTMAX.add("exp_log_softmax", lambda L, x: x.log_softmax(1).exp(), _matrix)


def _ce_operands(dtype):
    x = _matrix(dtype)[0]
    # Targets point at finite, inf, -inf and NaN logits across the rows.
    return [x, np.arange(x.shape[0], dtype=np.int64) % x.shape[1]]


def _mse_operands(dtype):
    a, b = _binary_operands(dtype)
    return [a, b]


LOSS = Group("loss")
for _red in ("none", "mean", "sum"):
    LOSS.add(f"cross_entropy_{_red}", (lambda r: lambda L, x, t: L.nn.functional.cross_entropy(x, t, reduction=r))(_red),
             _ce_operands)
    LOSS.add(f"mse_{_red}", (lambda r: lambda L, x, t: L.nn.functional.mse_loss(x, t, reduction=r))(_red),
             _mse_operands)
LOSS.add("cross_entropy_rows", lambda L, x, t: L.nn.functional.cross_entropy(x[1:3], t[1:3]), _ce_operands)
LOSS.add("mse_finite_mean", lambda L, x, t: L.nn.functional.mse_loss(x[:4], t[:4]), _mse_operands)

GROUPS = {g.name: g for g in (UNARY, BINARY, REDUCE, SOFTMAX, LOSS)}


# ================================================================ running a group
def _leaves(L, op: Op, dtype: str, grad: bool):
    out = []
    for a in op.operands(dtype):
        t = L.tensor(a.tolist(), dtype=getattr(L, str(a.dtype)))
        if grad and op.differentiable and t.dtype.is_floating_point:
            t.requires_grad_(True)
        out.append(t)
    return out


def _to_np(t):
    if t is None:
        return None
    return np.asarray(t.detach().numpy()).copy()


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _eager(L, group: Group, dtype: str, seed: bool):
    """{op: (output, [grads of float leaves])} eagerly on library L."""
    results = {}
    for op in group.ops:
        leaves = _leaves(L, op, dtype, grad=True)
        out = _quiet(op.fn, L, *leaves)
        grads = []
        if op.differentiable:
            g = seed_array(tuple(out.shape), dtype) if seed else np.ones(tuple(out.shape), dtype=dtype)
            out.backward(L.tensor(g.tolist(), dtype=out.dtype))
            grads = [_to_np(x.grad) for x in leaves if x.dtype.is_floating_point]
        results[op.name] = (_to_np(out), grads)
    return results


@functools.lru_cache(maxsize=None)
def reference(group: str, dtype: str, seed: bool):
    """torch's results for every op of a group (computed once)."""
    return _eager(torch, GROUPS[group], dtype, seed)


@functools.lru_cache(maxsize=None)
def eager(group: str, dtype: str, seed: bool):
    return _eager(fg, GROUPS[group], dtype, seed)


def _flat_leaves(group: Group, dtype: str):
    """All ops' operands as one argument list, and each op's slice of it."""
    args, spans = [], []
    for op in group.ops:
        leaves = _leaves(fg, op, dtype, grad=True)
        spans.append((len(args), len(args) + len(leaves)))
        args += leaves
    return args, spans


@functools.lru_cache(maxsize=None)
def compiled_step(group_name: str, dtype: str):
    """fg.compile of one step running every op, then backward(seed) of all of them at once:
    {op: (output, [grads])}."""
    group = GROUPS[group_name]
    args, spans = _flat_leaves(group, dtype)

    def step(*xs):
        outs, total = [], 0
        for op, (i, j) in zip(group.ops, spans):
            out = op.fn(fg, *xs[i:j])
            outs.append(out)
            if op.differentiable:
                total = total + (out * fg.tensor(seed_array(tuple(out.shape), dtype))).sum()
        total.backward()
        return tuple(o.detach() for o in outs)

    outs = _quiet(fg.compile(step), *args)
    results = {}
    for op, out, (i, j) in zip(group.ops, outs, spans):
        grads = [_to_np(x.grad) for x in args[i:j] if x.dtype.is_floating_point] if op.differentiable else []
        results[op.name] = (_to_np(out), grads)
    return results


@functools.lru_cache(maxsize=None)
def compiled_grad(group_name: str, dtype: str):
    """fg.compile(fg.grad(f)) with f the sum of every differentiable op's sum: {op: [grads]}."""
    group = GROUPS[group_name]
    ops = [op for op in group.ops if op.differentiable]
    args, spans, argnums = [], [], []
    for op in ops:
        leaves = [x.detach() for x in _leaves(fg, op, dtype, grad=False)]
        spans.append((len(args), len(args) + len(leaves)))
        argnums += [len(args) + k for k, x in enumerate(leaves) if x.dtype.is_floating_point]
        args += leaves

    def total(*xs):
        s = 0
        for op, (i, j) in zip(ops, spans):
            s = s + op.fn(fg, *xs[i:j]).sum()
        return s

    grads = _quiet(fg.compile(fg.grad(total, argnums=tuple(argnums))), *args)
    by_arg = dict(zip(argnums, grads))
    return {op.name: [_to_np(by_arg[k]) for k in range(i, j) if k in by_arg] for op, (i, j) in zip(ops, spans)}


# ================================================================ comparing
# (relative tolerance, ulps) for values and for gradients; gradients also get an absolute
# tolerance: they chain several rounded operations (1 - y*y next to y = 1 cancels).
_VALUE_TOL = {"float32": (1e-6, 2), "float64": (1e-14, 4)}
_GRAD_TOL = {"float32": (1e-5, 2, 1e-6), "float64": (1e-12, 4, 1e-13)}


def assert_special_close(cell: str, ours, theirs, dtype: str, grad: bool, skip=None, inputs=(),
                         zero_sign: bool = True):
    """NaN-aware comparison: NaN where torch has NaN, infinities and zero signs exact,
    finite values within tolerance (integers and bools exactly)."""
    assert ours is not None, f"{cell}: fusegrad gives None where torch gives a tensor"
    assert ours.shape == theirs.shape, f"{cell}: shape {ours.shape} != torch's {theirs.shape}"
    assert ours.dtype == theirs.dtype, f"{cell}: dtype {ours.dtype} != torch's {theirs.dtype}"
    o, t = ours.ravel(), theirs.ravel()
    keep = np.ones(o.shape, bool) if skip is None else ~np.broadcast_to(skip, ours.shape).ravel()
    if t.dtype.kind != "f":
        bad = keep & (o != t)
    else:
        if grad:
            rtol, ulps, atol = _GRAD_TOL[dtype]
        else:
            (rtol, ulps), atol = _VALUE_TOL[dtype], 0.0
        with np.errstate(all="ignore"):
            tol = np.maximum(np.maximum(rtol * np.abs(t), ulps * np.spacing(np.abs(t))), atol)
            finite = np.isfinite(o) & np.isfinite(t)
            close = np.where(finite, np.abs(o - t) <= tol, (o == t) | (np.isnan(o) & np.isnan(t)))
        sign_differs = (o == 0) & (t == 0) & (np.signbit(o) != np.signbit(t)) & zero_sign
        bad = keep & (~close | sign_differs)
    if bad.any():
        idx = np.flatnonzero(bad)
        flat = [np.broadcast_to(a, ours.shape).ravel() for a in inputs if a.shape == ours.shape]
        lines = [f"  [{i}] ours {o[i]!r} torch {t[i]!r}" + "".join(f" at {a[i]!r}" for a in flat)
                 for i in idx[:12]]
        raise AssertionError(f"{cell}: {idx.size} of {o.size} elements differ\n" + "\n".join(lines))


def _skip_mask(op: Op, dtype: str, out_shape):
    if op.skip is None:
        return None
    operands = op.operands(dtype)
    mask = op.skip(dtype, operands)
    return mask if mask.shape == tuple(out_shape) else None


def check_cell(mode: str, group: str, op_name: str, dtype: str):
    op = next(o for o in GROUPS[group].ops if o.name == op_name)
    cell = f"{mode}-{group}-{op_name}-{dtype}"
    if mode == "compiled_grad":
        theirs = reference(group, dtype, False)[op_name][1]
        ours = compiled_grad(group, dtype)[op_name]
        pairs = list(zip(ours, theirs))
        out_shape = reference(group, dtype, False)[op_name][0].shape
        skip = _skip_mask(op, dtype, out_shape)
        for k, (o, t) in enumerate(pairs):
            assert_special_close(f"{cell} grad {k}", o, t, dtype, True, skip, op.operands(dtype))
        assert len(ours) == len(theirs)
        return
    seed = mode in ("eager_seed", "compiled_seed")
    ref_out, ref_grads = reference(group, dtype, seed)[op_name]
    if mode.startswith("eager"):
        out, grads = eager(group, dtype, seed)[op_name]
    else:
        out, grads = compiled_step(group, dtype)[op_name]
    skip = _skip_mask(op, dtype, ref_out.shape)
    if mode in ("eager_fwd", "compiled_fwd"):
        assert_special_close(cell, out, ref_out, dtype, op.chained, skip, op.operands(dtype), op.zero_sign)
        return
    assert len(grads) == len(ref_grads), f"{cell}: {len(grads)} gradients, torch has {len(ref_grads)}"
    for k, (o, t) in enumerate(zip(grads, ref_grads)):
        assert_special_close(f"{cell} grad {k}", o, t, dtype, True, skip, op.operands(dtype))


# ================================================================ the matrix
MODES = ("eager_fwd", "eager_grad", "eager_seed", "compiled_fwd", "compiled_seed", "compiled_grad")
_GRAD_MODES = ("eager_grad", "eager_seed", "compiled_seed", "compiled_grad")

# Known differences outside this task's files: strict xfails, (mode, group, op, dtype) with
# None as a wildcard -> reason.
KNOWN: dict = {}


def _known(mode, group, op, dtype):
    for (m, g, o, d), reason in KNOWN.items():
        if (m is None or m == mode or (isinstance(m, tuple) and mode in m)) and g == group and \
                (o == op or (isinstance(o, tuple) and op in o)) and (d is None or d == dtype):
            return reason
    return None


# Compiled programs in the default run (each costs Numba 2-15 s on a cold cache): every
# group's step in float32, the unary step in float64 (float64 vmath), fg.grad of the unary
# group in float32. The others run with `-m slow`.
_MAIN_PROGRAMS = {("step", g, "float32") for g in GROUPS} | {("step", "unary", "float64"),
                                                            ("grad", "unary", "float32")}


def _program(mode: str):
    return {"compiled_fwd": "step", "compiled_seed": "step", "compiled_grad": "grad"}.get(mode)


def _cells():
    for group in GROUPS.values():
        for op in group.ops:
            for dtype in DTYPES:
                for mode in MODES:
                    if mode in _GRAD_MODES and not op.differentiable:
                        continue
                    reason = _known(mode, group.name, op.name, dtype)
                    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                    program = _program(mode)
                    if program and (program, group.name, dtype) not in _MAIN_PROGRAMS:
                        marks.append(pytest.mark.slow)
                    yield pytest.param(mode, group.name, op.name, dtype, marks=marks,
                                       id=f"{mode}-{group.name}-{op.name}-{dtype}")


@pytest.mark.parametrize("mode,group,op,dtype", list(_cells()))
def test_special_values(mode, group, op, dtype):
    """One op x dtype x mode cell against torch."""
    check_cell(mode, group, op, dtype)


# ================================================================ found on the way
def test_compiled_grad_of_one_tensor_passed_twice():
    x = fg.tensor([0.0, 1.0, -2.0])

    def f(a, b):
        return a.exp().sum() + b.tanh().sum()
    eager = fg.grad(f, argnums=(0, 1))(x, x)
    compiled = fg.compile(fg.grad(f, argnums=(0, 1)))(x, x)
    for e, c in zip(eager, compiled):
        np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-6)
