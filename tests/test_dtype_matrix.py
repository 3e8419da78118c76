"""Operand-kind matrices against torch: every binary op and operator over every pair of
operand kinds (float32/float64/int64/bool tensors, their 0-d forms, Python float/int/bool),
every unary op, reduction and in-place op over every dtype. Each cell runs the same call on
torch and fusegrad and compares success or error (class and exact text), result dtype, shape
and values (NaN positions equal, integers exactly), and where a float operand requires grad:
requires_grad, the grad_fn name and the gradients of a sum.

Cells are enumerated (pytest ids name them: op-form-left-right); the long sweeps are marked
`slow`. Differences whose fix lies outside the tracer/op-table files are strict xfails.
"""
import math
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")

from parity_support import assert_tensor_same, errors_match  # noqa: E402  (after the skip)

# ================================================================ operand kinds
TENSOR_DTYPES = ("f32", "f64", "i64", "bool")
DTYPE = {"f32": "float32", "f64": "float64", "i64": "int64", "bool": "bool"}
TENSOR_KINDS = TENSOR_DTYPES + tuple(d + "_0d" for d in TENSOR_DTYPES)
SCALAR_KINDS = ("py_float", "py_int", "py_bool")
ALL_KINDS = TENSOR_KINDS + SCALAR_KINDS

# Values per side, so that a - b differs from b - a; the right side holds a zero (x / 0) and
# negative integers (integer powers), the left a zero and negatives (0 ** b, roots of negatives).
FLOAT_VALUES = ([[1.5, -2.0, 0.0], [3.25, -0.5, 7.0]], [[0.5, 3.0, -1.5], [0.0, 2.0, -4.0]])
INT_VALUES = ([[3, -2, 0], [7, -5, 4]], [[2, 3, -1], [0, 2, -3]])
BOOL_VALUES = ([[True, False, True], [False, True, True]], [[False, False, True], [True, True, False]])
ZERO_D_VALUES = {"f": (2.5, -1.5), "i": (3, -2), "b": (True, True)}
SCALAR_VALUES = {"py_float": (2.5, 0.5), "py_int": (3, -2), "py_bool": (True, True)}


def tensor_values(kind: str, side: int):
    """The Python data of a tensor kind on the left (0) or right (1) side."""
    if kind.endswith("_0d"):
        return ZERO_D_VALUES[kind[0]][side]
    return {"f": FLOAT_VALUES, "i": INT_VALUES, "b": BOOL_VALUES}[kind[0]][side]


def make(L, kind: str, side: int, grad: bool = False, matrix_side: bool = False):
    """Operand `kind` for library L; float tensors require grad when `grad`.
    `matrix_side` gives the right operand of a matmul a (3, 2) shape (the transpose)."""
    if kind in SCALAR_VALUES:
        return SCALAR_VALUES[kind][side]
    data = tensor_values(kind, side)
    if matrix_side and isinstance(data, list):
        data = [list(row) for row in zip(*data)]
    dtype = getattr(L, DTYPE[kind.split("_")[0]])
    t = L.tensor(data, dtype=dtype)
    if grad and t.dtype.is_floating_point:
        t.requires_grad_(True)
    return t


def is_tensor_kind(kind: str) -> bool:
    return kind in TENSOR_KINDS


# ================================================================ comparing one cell
def run(fn):
    """(result, None) or (None, exception) of fn()."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as e:          # noqa: BLE001  (the comparison is the point)
            return None, e


def assert_same_outcome(cell: str, ours, theirs):
    """Both raise the same class and text, or both succeed; returns True when both succeeded."""
    (o, oe), (t, te) = ours, theirs
    if te is not None:
        errors_match(cell, oe, te, o)
        return False
    assert oe is None, f"{cell}: fusegrad raises {type(oe).__name__}({oe}), torch returns {t!r}"
    return True


def assert_grad_same(cell: str, ours, theirs, leaves_ours, leaves_theirs, rtol=1e-5, atol=1e-6, skip=()):
    """requires_grad, grad_fn name and the gradients of result.sum() of each float leaf."""
    assert ours.requires_grad == theirs.requires_grad, \
        f"{cell}: requires_grad {ours.requires_grad} != torch's {theirs.requires_grad}"
    tname = type(theirs.grad_fn).__name__ if theirs.grad_fn is not None else None
    oname = type(ours.grad_fn).__name__ if ours.grad_fn is not None else None
    assert oname == tname, f"{cell}: grad_fn {oname} != torch's {tname}"
    if not theirs.requires_grad:
        return
    if run(lambda: theirs.sum().backward())[1] is not None:
        return          # torch's own backward fails (x ** bool_tensor, True ** x): nothing to compare
    ours.sum().backward()
    for i, (lo, lt) in enumerate(zip(leaves_ours, leaves_theirs)):
        if isinstance(lt, torch.Tensor) and lt.requires_grad and i not in skip:
            assert_tensor_same(cell, lo.grad, lt.grad, f"grad of operand {i}", rtol, atol)


def compare_call(cell: str, call, kinds, grad: bool = True, matrix: bool = False, rtol=1e-5, atol=1e-6,
                 skip_grads=()):
    """Run call(L, *operands) on both libraries for operand kinds `kinds` and compare everything
    (but the gradients of the operands numbered in `skip_grads`)."""
    sides = range(len(kinds))
    leaves_t = [make(torch, k, min(s, 1), grad, matrix and s == 1) for k, s in zip(kinds, sides)]
    leaves_o = [make(fg, k, min(s, 1), grad, matrix and s == 1) for k, s in zip(kinds, sides)]
    theirs = run(lambda: call(torch, *leaves_t))
    ours = run(lambda: call(fg, *leaves_o))
    if not assert_same_outcome(cell, ours, theirs):
        return
    assert_result_same(cell, ours[0], theirs[0], leaves_o if grad else None, leaves_t, rtol, atol, skip_grads)


def assert_result_same(cell, o, t, leaves_o, leaves_t, rtol=1e-5, atol=1e-6, skip_grads=()):
    """A tensor result (and its gradients when leaves_o is given), a (values, indices) pair
    compared element by element, or a plain Python value."""
    if isinstance(t, tuple):
        assert isinstance(o, tuple) and len(o) == len(t), f"{cell}: result {o!r} != torch's {t!r}"
        for i, (oi, ti) in enumerate(zip(o, t)):
            assert_tensor_same(cell, oi, ti, f"result[{i}]", rtol, atol)
        if hasattr(t, "values"):
            assert_tensor_same(cell, o.values, t.values, "result.values", rtol, atol)
            assert_tensor_same(cell, o.indices, t.indices, "result.indices", rtol, atol)
        o, t = o[0], t[0]                   # the gradient flows through the values
    if isinstance(t, torch.Tensor):
        assert_tensor_same(cell, o, t, rtol=rtol, atol=atol)
        if leaves_o is not None:
            assert_grad_same(cell, o, t, leaves_o, leaves_t, rtol, atol, skip_grads)
    else:
        assert type(o) is type(t) and o == t, f"{cell}: result {o!r} != torch's {t!r}"


# ================================================================ 1. binary ops
# Each op: its operator (None where it has none), its function and method names.
BINARY_OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "matmul": lambda a, b: a @ b,
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "maximum": None, "minimum": None,
}
PAIRS = [(a, b) for a in ALL_KINDS for b in ALL_KINDS]


def _binary_cells(forms):
    for op, operator in BINARY_OPS.items():
        for form in forms:
            for a, b in PAIRS:
                if form == "op" and (operator is None or not (is_tensor_kind(a) or is_tensor_kind(b))):
                    continue                       # two Python numbers: plain Python, not ours
                if form == "method" and not is_tensor_kind(a):
                    continue
                yield pytest.param(op, form, a, b, id=f"{op}-{form}-{a}-{b}")


def _binary_call(op, form):
    if form == "op":
        operator = BINARY_OPS[op]
        return lambda L, a, b: operator(a, b)
    if form == "fn":
        return lambda L, a, b: getattr(L, op)(a, b)
    return lambda L, a, b: getattr(a, op)(b)


@pytest.mark.parametrize("op,form,a,b", list(_binary_cells(("op", "fn"))))
def test_binary_matrix(op, form, a, b):
    """Operators (and their reflected forms) and fg.<op> over every pair of operand kinds."""
    compare_call(f"{op}-{form}-{a}-{b}", _binary_call(op, form), (a, b), matrix=op == "matmul")


@pytest.mark.slow
@pytest.mark.parametrize("op,form,a,b", list(_binary_cells(("method",))))
def test_binary_method_matrix(op, form, a, b):
    """The method forms (t.add(other), ...) over every pair with a tensor self."""
    compare_call(f"{op}-{form}-{a}-{b}", _binary_call(op, form), (a, b), matrix=op == "matmul")


@pytest.mark.slow
@pytest.mark.parametrize("op,form,a,b", list(_binary_cells(("op", "fn"))))
def test_binary_matrix_without_grad(op, form, a, b):
    """The same matrix with no operand requiring grad (the no-autograd fast paths)."""
    compare_call(f"{op}-{form}-{a}-{b}-nograd", _binary_call(op, form), (a, b), grad=False,
                 matrix=op == "matmul")


# ---------------------------------------------------------------- where and clamp
def _where_cells():
    for a, b in PAIRS:
        yield pytest.param("fn", a, b, id=f"where-fn-{a}-{b}")
        if is_tensor_kind(a):
            yield pytest.param("method", a, b, id=f"where-method-{a}-{b}")


@pytest.mark.parametrize("form,a,b", list(_where_cells()))
def test_where_matrix(form, a, b):
    """where(cond, a, b) over every pair of value operand kinds (cond a (2, 3) bool tensor)."""
    mask = [[True, False, True], [False, False, True]]

    def call(L, x, y):
        cond = L.tensor(mask)
        return L.where(cond, x, y) if form == "fn" else x.where(cond, y)
    compare_call(f"where-{form}-{a}-{b}", call, (a, b))


CLAMP_BOUNDS = ("min", "max", "both")


def _clamp_cells():
    for bound in CLAMP_BOUNDS:
        for form in ("fn", "method"):
            for a in TENSOR_KINDS:
                for b in ALL_KINDS:
                    yield pytest.param(bound, form, a, b, id=f"clamp-{bound}-{form}-{a}-{b}")


def _clamp_call(bound, form):
    def call(L, x, lo):
        hi = lo + 2 if not isinstance(lo, bool) else lo    # a max above min, of min's kind
        if isinstance(lo, torch.Tensor | fg.Tensor):
            hi = (lo.detach() + 2) if lo.dtype is not L.bool else lo.detach().clone()
        kwargs = {"min": {"min": lo}, "max": {"max": lo}, "both": {"min": lo, "max": hi}}[bound]
        return L.clamp(x, **kwargs) if form == "fn" else x.clamp(**kwargs)
    return call


@pytest.mark.parametrize("bound,form,a,b", list(_clamp_cells()))
def test_clamp_matrix(bound, form, a, b):
    """clamp with min, max or both as every operand kind, over every tensor kind."""
    compare_call(f"clamp-{bound}-{form}-{a}-{b}", _clamp_call(bound, form), (a, b))


def test_clamp_tensor_bound_gradient():
    """fg.clamp(x, min=lo) with lo requiring grad: torch gives lo.grad [0., 1., 0.] (it was None)."""
    def call(L, x, lo):
        return L.clamp(x, min=lo)
    compare_call("clamp-min-tensor-bound-grad", call, ("f32", "f32"))


CLAMP_ODD_BOUNDS = {
    "none": lambda L, x: L.clamp(x),
    "method-none": lambda L, x: x.clamp(min=None, max=None),
    "0d-tensor-min-number-max": lambda L, x: L.clamp(x, min=L.tensor(0.5, requires_grad=True), max=2.0),
    "number-min-0d-tensor-max": lambda L, x: L.clamp(x, min=0.5, max=L.tensor(2.0)),
    "0d-f64-min-number-max-0d-x": lambda L, x: L.clamp(x.sum(), L.tensor(0.5, dtype=L.float64), 2.0),
    "0d-f64-min-0d-x": lambda L, x: L.clamp(x.sum(), L.tensor(0.5, dtype=L.float64)),
    "1d-tensor-min-number-max": lambda L, x: L.clamp(x, L.ones(3), 2.0),
    "number-min-1d-tensor-max": lambda L, x: L.clamp(x, 0.5, L.ones(3)),
    "method-1d-tensor-min-number-max": lambda L, x: x.clamp(L.ones(3), 2.0),
    "string-min": lambda L, x: L.clamp(x, "a"),
    "min-above-max": lambda L, x: L.clamp(x, min=3.0, max=1.0),
    "tensor-min-above-max": lambda L, x: L.clamp(x, min=L.full((3,), 3.0), max=L.ones(3)),
    "nan-min": lambda L, x: L.clamp(x, min=float("nan")),
    "bounds-not-broadcastable": lambda L, x: L.clamp(x, min=L.zeros(3), max=L.ones(2)),
    "bool-0d-tensor-min-number-max": lambda L, x: L.clamp(x > 0, L.tensor(True), True),
    "bool-int-min": lambda L, x: L.clamp(x > 0, 1),
}


@pytest.mark.parametrize("name", list(CLAMP_ODD_BOUNDS))
def test_clamp_odd_bounds(name):
    """Missing bounds, mixed tensor/number bounds, min > max, NaN bounds, bounds of bad shapes."""
    compare_call(f"clamp-{name}", CLAMP_ODD_BOUNDS[name], ("f32",))


# ================================================================ 2. unary ops
# Zeros of both signs, negatives, large and special values; float and int data hold 12 values.
UNARY_DATA = {
    "f": [[0.0, -0.0, -1.5, 2.0], [1e30, -1e30, math.inf, -math.inf], [math.nan, 88.5, 1e-40, -100.0]],
    "i": [[0, -1, 5, -7], [2 ** 40, -2 ** 40, 2 ** 62, -2 ** 62], [1, 100, -100, 3]],
    "b": [[True, False, True, False], [False, False, True, True], [True, True, False, False]],
}
UNARY_0D = {"f": (-1.5, 0.0, -0.0, math.inf, math.nan), "i": (-7, 0, 3), "b": (True, False)}
UNARY_OPS = ("abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "neg", "sign")
CASTS = ("float", "double", "long", "bool")


def _unary_operands():
    for d in TENSOR_DTYPES:
        yield d, UNARY_DATA[d[0]]
        for i, v in enumerate(UNARY_0D[d[0]]):
            yield f"{d}_0d{i}", v


def _unary_cells():
    for name, _ in _unary_operands():
        for op in UNARY_OPS:
            for form in ("fn", "method"):
                yield pytest.param(op, form, name, id=f"{op}-{form}-{name}")
        yield pytest.param("neg", "op", name, id=f"neg-op-{name}")
        yield pytest.param("abs", "builtin", name, id=f"abs-builtin-{name}")
        for cast in CASTS:
            yield pytest.param(cast, "method", name, id=f"{cast}-method-{name}")


UNARY_VALUES = dict(_unary_operands())


def _make_unary(L, name):
    dtype = getattr(L, DTYPE[name.split("_")[0]])
    t = L.tensor(UNARY_VALUES[name], dtype=dtype)
    return t.requires_grad_(True) if t.dtype.is_floating_point else t


@pytest.mark.parametrize("op,form,name", list(_unary_cells()))
def test_unary_matrix(op, form, name):
    """Unary ops and casts over every dtype, 2-d and 0-d, with special values."""
    call = {"fn": lambda L, x: getattr(L, op)(x), "method": lambda L, x: getattr(x, op)(),
            "op": lambda L, x: -x, "builtin": lambda L, x: abs(x)}[form]
    cell = f"{op}-{form}-{name}"
    leaves = [_make_unary(torch, name)], [_make_unary(fg, name)]
    theirs, ours = run(lambda: call(torch, *leaves[0])), run(lambda: call(fg, *leaves[1]))
    if assert_same_outcome(cell, ours, theirs):
        assert_result_same(cell, ours[0], theirs[0], leaves[1], leaves[0])


# ================================================================ 3. reductions
REDUCE_DATA = {
    "f32": [[1.5, -2.0, 7.0], [7.0, -2.0, 0.0]],          # ties: argmax/argmin take the first
    "f32nan": [[math.nan, 1.0, -math.inf], [math.inf, 2.0, 3.0]],
    "f64": [[1.5, -2.0, 7.0], [7.0, -2.0, 0.0]],
    "i64": [[3, -2, 7], [7, -2, 0]],
    "bool": [[True, False, True], [False, False, True]],
}
REDUCE_SHAPES = {"2x3": None, "0": (0,), "2x0": (2, 0), "0d": ()}
REDUCE_OPS = ("sum", "mean", "max", "min", "norm", "amax", "amin", "argmax", "argmin")
REDUCE_DIMS = {"all": None, "0": 0, "-1": -1, "1": 1, "t01": (0, 1), "t-1": (-1,), "2": 2}


def _make_reduce(L, dtype_name, shape_name):
    dtype = getattr(L, DTYPE.get(dtype_name, "float32"))
    shape = REDUCE_SHAPES[shape_name]
    data = REDUCE_DATA[dtype_name]
    if shape is None:
        t = L.tensor(data, dtype=dtype)
    elif shape == ():
        t = L.tensor(data[0][0], dtype=dtype)
    else:
        t = L.zeros(shape, dtype=dtype)
    return t.requires_grad_(True) if t.dtype.is_floating_point else t


def _reduce_cells(slow: bool):
    for op in REDUCE_OPS:
        for dt in REDUCE_DATA:
            for shape in REDUCE_SHAPES:
                for dim in REDUCE_DIMS:
                    for keepdim in ((None,) if dim == "all" else (False, True)):
                        # The main run keeps (2, 3) data; the other shapes are the slow sweep's.
                        if (shape != "2x3") == slow:
                            yield pytest.param(op, dt, shape, dim, keepdim,
                                               id=f"{op}-{dt}-{shape}-dim{dim}-keep{keepdim}")
        for dt in REDUCE_DATA:
            for shape in REDUCE_SHAPES:
                if (shape != "2x3") == slow:
                    yield pytest.param(op, dt, shape, "all", True, id=f"{op}-{dt}-{shape}-dimNone-keepTrue")


def _reduce_call(op, dim, keepdim):
    d = REDUCE_DIMS[dim]
    if keepdim is None:
        return lambda L, x: getattr(L, op)(x)
    return lambda L, x: getattr(L, op)(x, dim=d, keepdim=keepdim)


def _check_reduce(op, dt, shape, dim, keepdim):
    call = _reduce_call(op, dim, keepdim)
    cell = f"{op}-{dt}-{shape}-dim{dim}-keep{keepdim}"
    lt, lo = _make_reduce(torch, dt, shape), _make_reduce(fg, dt, shape)
    theirs, ours = run(lambda: call(torch, lt)), run(lambda: call(fg, lo))
    if assert_same_outcome(cell, ours, theirs):
        assert_result_same(cell, ours[0], theirs[0], [lo], [lt])


def test_amax_nan_gradient():
    """fg.amax(x, 0) with a NaN in column 0: torch's x.grad column 0 is [nan, nan] (max() gives [1, 0])."""
    compare_call("amax-nan-grad", lambda L, x: L.amax(x * L.tensor([[math.nan], [1.0]]), 0), ("f32",))


@pytest.mark.parametrize("op,dt,shape,dim,keepdim", list(_reduce_cells(slow=False)))
def test_reduction_matrix(op, dt, shape, dim, keepdim):
    """Reductions of (2, 3) data of every dtype over every kind of dim, with keepdim."""
    _check_reduce(op, dt, shape, dim, keepdim)


@pytest.mark.slow
@pytest.mark.parametrize("op,dt,shape,dim,keepdim", list(_reduce_cells(slow=True)))
def test_reduction_matrix_empty_and_0d(op, dt, shape, dim, keepdim):
    """Reductions of empty ((0,), (2, 0)) and 0-d tensors."""
    _check_reduce(op, dt, shape, dim, keepdim)


def _softmax_cells():
    for op in ("softmax", "log_softmax"):
        for form in ("fn", "method"):
            for dt in REDUCE_DATA:
                for shape in REDUCE_SHAPES:
                    for dim in (0, 1, -1, 2):
                        yield pytest.param(op, form, dt, shape, dim, id=f"{op}-{form}-{dt}-{shape}-dim{dim}")


@pytest.mark.parametrize("op,form,dt,shape,dim", list(_softmax_cells()))
def test_softmax_matrix(op, form, dt, shape, dim):
    """softmax and log_softmax over every dtype, shape (empty and 0-d too) and dim."""
    cell = f"{op}-{form}-{dt}-{shape}-dim{dim}"
    call = (lambda L, x: getattr(L, op)(x, dim)) if form == "fn" else (lambda L, x: getattr(x, op)(dim))
    lt, lo = _make_reduce(torch, dt, shape), _make_reduce(fg, dt, shape)
    theirs, ours = run(lambda: call(torch, lt)), run(lambda: call(fg, lo))
    if assert_same_outcome(cell, ours, theirs):
        assert_result_same(cell, ours[0], theirs[0], [lo], [lt])


# ================================================================ 4. in-place ops
INPLACE_OPS = ("add_", "sub_", "mul_", "div_")


def _inplace_cells():
    for op in INPLACE_OPS:
        for a in TENSOR_KINDS:
            for b in ALL_KINDS:
                yield pytest.param(op, a, b, id=f"{op}-{a}-{b}")


@pytest.mark.parametrize("op,a,b", list(_inplace_cells()))
def test_inplace_matrix(op, a, b):
    """self.<op>(other) for every self dtype (2-d and 0-d) and every operand kind: torch's
    'result type ... can't be cast' errors, broadcasting into self, values and dtype kept."""
    cell = f"{op}-{a}-{b}"
    results = []
    for L in (torch, fg):
        x, y = make(L, a, 0), make(L, b, 1)
        outcome = run(lambda: getattr(x, op)(y))
        results.append((outcome, x))
    (theirs, xt), (ours, xo) = results
    if assert_same_outcome(cell, ours, theirs):
        assert ours[0] is xo, f"{cell}: {op} does not return self"
        assert_tensor_same(cell, xo, xt, "self after the op")
    else:
        assert_tensor_same(cell, xo, xt, "self after a failed op")     # left unchanged


@pytest.mark.parametrize("op,a,b", [pytest.param(op, a, b, id=f"{op}-{a}-{b}") for op in INPLACE_OPS
                                    for a in ("f32", "f64", "f32_0d") for b in ("f32", "f64_0d", "i64", "py_float")])
def test_inplace_on_non_leaf_gradients(op, a, b):
    """In-place into a non-leaf that requires grad: grad_fn name, values and gradients."""
    cell = f"{op}-nonleaf-{a}-{b}"
    results = []
    for L in (torch, fg):
        leaf, y = make(L, a, 0, grad=True), make(L, b, 1, grad=True)
        x = leaf * 1
        outcome = run(lambda: getattr(x, op)(y))
        results.append((outcome, x, [leaf, y]))
    (theirs, xt, leaves_t), (ours, xo, leaves_o) = results
    if assert_same_outcome(cell, ours, theirs):
        assert_result_same(cell, xo, xt, leaves_o, leaves_t)


@pytest.mark.parametrize("name,call", [
    ("add-alpha", lambda L, x, y: x.add_(y, alpha=2)),
    ("sub-alpha-float-into-int", lambda L, x, y: x.long().sub_(y.long(), alpha=2.5)),
    ("add-alpha-int", lambda L, x, y: x.long().add_(y.long(), alpha=3)),
    ("leaf-requiring-grad", lambda L, x, y: x.requires_grad_().add_(y)),
    ("broadcast-into-smaller", lambda L, x, y: x[0].mul_(y)),
    ("int-div-float", lambda L, x, y: x.long().div_(2.5)),
    ("bool-add-int", lambda L, x, y: (x > 0).add_(1)),
    ("bool-mul-bool", lambda L, x, y: (x > 0).mul_(y > 0)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_inplace_odd_cases(name, call):
    """alpha, in-place on leaves that require grad, self too small for the broadcast result."""
    compare_call(f"inplace-{name}", call, ("f32", "f32"), grad=False)


# ================================================================ 5. a compiled sample
# One cell per op and per promotion rule (each program compiles its own Numba kernels): the
# tensor operands are the compiled function's arguments, Python scalars are constants in it.
COMPILED_CELLS = {
    # name: (call, operand kinds, in the main run)
    "add-f32-f64": (lambda L, a, b: a + b, ("f32", "f64"), True),
    "mul-f32-py_float": (lambda L, a: a * 2.5, ("f32",), False),
    "sub-i64-py_float": (lambda L, a: a - 2.5, ("i64",), True),
    "div-i64-i64": (lambda L, a, b: a / b, ("i64", "i64"), True),
    "pow-i64-i64": (lambda L, a, b: a ** b.abs(), ("i64", "i64"), False),
    "pow-f32-i64_0d": (lambda L, a, b: a ** b, ("f32", "i64_0d"), False),
    "rsub-py_int-bool": (lambda L, a: 3 - a.long(), ("bool",), False),
    "maximum-i64-bool": (lambda L, a, b: L.maximum(a, b), ("i64", "bool"), False),
    "add-f32_0d-i64": (lambda L, a, b: a + b, ("f32_0d", "i64"), True),
    "add-f64_0d-f32": (lambda L, a, b: a + b, ("f64_0d", "f32"), False),
    "mul-bool-bool": (lambda L, a, b: a * b, ("bool", "bool"), False),
    "lt-f32-i64": (lambda L, a, b: a < b, ("f32", "i64"), True),
    "where-f32-py_int": (lambda L, a, b: L.where(a > 0, a, 3) + b, ("f32", "f64_0d"), False),
    "clamp-i64-py_float": (lambda L, a: L.clamp(a, min=0.5), ("i64",), False),
    "clamp-f32-tensor-bounds": (lambda L, a, b: L.clamp(a, b.detach(), b.detach() + 2), ("f32", "f64"), False),
    "matmul-f64": (lambda L, a, b: a @ b.t(), ("f64", "f64"), False),
    "exp-i64": (lambda L, a: L.exp(a), ("i64",), False),
    "sqrt-sign-relu-f32": (lambda L, a: L.sqrt(a) + L.sign(a) + L.relu(a), ("f32",), False),
    "sum-bool": (lambda L, a: a.sum(0), ("bool",), True),
    "mean-f64-dim": (lambda L, a: a.mean(-1, keepdim=True), ("f64",), False),
    "argmax-amax-f32": (lambda L, a: a.amax((0, 1)) + a.argmax(1), ("f32",), False),
    "max-dim-i64": (lambda L, a: a.max(1)[0] * a.max(1)[1], ("i64",), False),
    "softmax-log_softmax": (lambda L, a: a.softmax(0) + a.double().log_softmax(1), ("f32",), False),
    "add_-f32-i64": (lambda L, a, b: (a * 1).add_(b, alpha=2), ("f32", "i64"), False),
    "div_-f64-py_int": (lambda L, a: (a * 1).div_(3), ("f64",), False),
}


def _compiled_cells():
    for name, (call, kinds, main) in COMPILED_CELLS.items():
        yield pytest.param(name, marks=() if main else pytest.mark.slow, id=name)


@pytest.mark.parametrize("name", list(_compiled_cells()))
def test_compiled_sample(name):
    """fg.compile(f) gives torch's dtype, shape and values, and (float inputs requiring grad)
    the gradients of a sum through the compiled backward."""
    call, kinds, _ = COMPILED_CELLS[name]
    leaves_t = [make(torch, k, i, grad=True) for i, k in enumerate(kinds)]
    leaves_o = [make(fg, k, i, grad=True) for i, k in enumerate(kinds)]
    theirs = call(torch, *leaves_t)
    ours = fg.compile(lambda *xs: call(fg, *xs))(*leaves_o)
    assert_tensor_same(f"compiled-{name}", ours, theirs)
    if theirs.requires_grad:
        theirs.sum().backward()
        ours.sum().backward()
        for i, (lo, lt) in enumerate(zip(leaves_o, leaves_t)):
            if lt.requires_grad:
                assert_tensor_same(f"compiled-{name}", lo.grad, lt.grad, f"grad of operand {i}")
