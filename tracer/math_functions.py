"""torch's further elementwise math and logsumexp, as user-level functions (their ops are in
ir/ops/more_math.py): floor, ceil, trunc (fix), round (decimals), frac, rsqrt, log2, log10,
exp2, sinh, cosh, tan, asin/acos/atan (arcsin/arccos/arctan), atan2 (arctan2), logsumexp.

Rounding keeps the operand's dtype: an integer tensor is copied (torch returns a new tensor),
a bool one is torch's NotImplementedError; the others compute integer operands in float32.
"""
from __future__ import annotations

from fusegrad.ir import bool_, float32, int64
from fusegrad.ir.ops import normalize_dim
from fusegrad.ir.types import TORCH_SCALAR_NAMES

from . import functional as F
from .dispatch import apply_op, result_cast_error
from .grad_mode import is_grad_enabled
from .node import hide_node
from .functional import (_c_name, _check_dim_list, int_argument, _dims, _float_operands, _keyword_texts, _numpy_spellings, _unary_float,
                         REQUIRED, as_tensor, cast, clone, one_input)
from .parser_errors import no_arguments_error
from .tensor import Tensor
from . import inplace

rsqrt = _unary_float("rsqrt", "RsqrtBackward0")
log2 = _unary_float("log2", "Log2Backward0")
log10 = _unary_float("log10", "Log10Backward0")
exp2 = _unary_float("exp2", "Exp2Backward0")
sinh = _unary_float("sinh", "SinhBackward0")
cosh = _unary_float("cosh", "CoshBackward0")
tan = _unary_float("tan", "TanBackward0")
asin = _unary_float("asin", "AsinBackward0")
acos = _unary_float("acos", "AcosBackward0")
atan = _unary_float("atan", "AtanBackward0")


def _alias(fn, alias: str):
    """`fn` (a function with a `.method` form) under torch's other name, which its errors use."""
    def function(input=REQUIRED, *surplus) -> Tensor:
        if input is REQUIRED or surplus:
            as_tensor(one_input(input, surplus, alias), alias)      # raises torch's or Python's text
        return fn(input)

    def method(self, *args, **kwargs) -> Tensor:
        if args or kwargs:
            raise no_arguments_error(alias, args, kwargs)
        return fn.method(self)
    function.__name__ = function.__qualname__ = method.__name__ = method.__qualname__ = alias
    function.__doc__ = method.__doc__ = f"torch.{alias}, an alias of {fn.__name__}."
    function.method = method
    return function


arcsin, arccos, arctan = _alias(asin, "arcsin"), _alias(acos, "arccos"), _alias(atan, "arctan")


def _not_implemented(kernel: str, a: Tensor) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for \'{TORCH_SCALAR_NAMES[a._dtype.name]}\'')


def _rounding(op: str, name: str):
    """`op` (floor, ceil, trunc) in the operand's dtype: an integer tensor's copy; bool raises."""
    def compute(a: Tensor) -> Tensor:
        if a._dtype is bool_:
            raise _not_implemented(f"{op}_vml_cpu", a)
        if not a._dtype.is_floating_point:
            return clone(a)
        return apply_op(op, [a], None, name)

    def fn(input=REQUIRED, *surplus) -> Tensor:
        return compute(as_tensor(one_input(input, surplus, op), op))

    def method(self, *args, **kwargs) -> Tensor:
        if args or kwargs:
            raise no_arguments_error(op, args, kwargs)
        return compute(self)
    fn.__name__ = fn.__qualname__ = method.__name__ = method.__qualname__ = op
    fn.__doc__ = method.__doc__ = f"torch.{op} elementwise, in the operand's dtype (zero gradient)."
    fn.method = method
    return fn


floor = _rounding("floor", "FloorBackward0")
ceil = _rounding("ceil", "CeilBackward0")
trunc = _rounding("trunc", "TruncBackward0")
fix = _alias(trunc, "fix")


_PLAIN = object()                   # round() with no decimals (None is a bad argument, as torch's)


def round(input, *, decimals=_PLAIN) -> Tensor:
    """torch.round: half to even; with `decimals`, torch's nearbyint(x * 10**d) / 10**d
    (RoundBackward1). An integer tensor is copied; with decimals it is torch's error."""
    a = as_tensor(input, "round")
    if decimals is _PLAIN:
        decimals = None
    elif type(decimals) is not int:
        raise TypeError(f"round(): argument 'decimals' must be int, not {type(decimals).__name__}")
    if a._dtype is bool_ or (decimals is not None and not a._dtype.is_floating_point):
        # (decimals=0 takes torch's plain rounding kernel, and its name)
        raise _not_implemented("round_cpu" if decimals else "round_vml_cpu", a)
    if not a._dtype.is_floating_point:
        return clone(a)
    if decimals is None:
        return apply_op("round", [a], None, "RoundBackward0")
    return apply_op("round_decimals", [a], {"decimals": decimals}, "RoundBackward1")


def frac(input=REQUIRED, *surplus) -> Tensor:
    """torch.frac: x - trunc(x), float operands only (its gradient passes through)."""
    a = as_tensor(one_input(input, surplus, "frac"), "frac")
    if not a._dtype.is_floating_point:
        raise _not_implemented("frac_cpu", a)
    return apply_op("frac", [a], None, "FracBackward0")


def atan2(input, other) -> Tensor:
    """torch.atan2(input, other): the angle of (other, input), two tensors promoted to a float dtype."""
    a, b = as_tensor(input, "atan2"), as_tensor(other, "atan2", "other", 2)
    # (a bool self: torch's backward of other raises, ir/ops/more_math.py _atan2_vjp)
    attrs = {"bool_self": True} if a._dtype is bool_ else None
    return apply_op("atan2", _float_operands([a, b], "atan2"), attrs, "Atan2Backward0")


arctan2 = atan2


@_keyword_texts
@_numpy_spellings
def logsumexp(input, dim, keepdim: bool = False) -> Tensor:
    """torch.logsumexp over `dim` (int or tuple, required): log(sum(exp(x))) computed stably."""
    a = as_tensor(input, "logsumexp")
    if dim is None:                 # (no "all dims" here, unlike sum's)
        raise TypeError("logsumexp(): argument 'dim' (position 2) must be tuple of ints, not NoneType")
    _check_dim_list("logsumexp", dim)
    if isinstance(dim, (tuple, list)) and not dim and not keepdim and a.dim() > 0 and a.numel():
        # (torch reduces over every dim into a keepdim result, then fails to fit it into its 0-d out;
        # an empty tensor takes its sum(exp).log() path instead: -inf)
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape {[1] * a.dim()}")
    axes = _dims(dim, a.dim(), "logsumexp")
    if not a._dtype.is_floating_point:
        a = cast(a, float32)
    return apply_op("logsumexp", [a], {"axes": axes, "keepdim": bool(keepdim)}, "LogsumexpBackward0")


@_numpy_spellings
def cumsum(input, dim, *, dtype=None) -> Tensor:
    """torch.cumsum: running sums along `dim` (CumsumBackward0); integer and bool tensors sum
    in int64, `dtype` casts the input first (its cast node not shown, as torch's)."""
    a = as_tensor(input, "cumsum")
    axis = normalize_dim(int_argument(dim, "cumsum"), a.dim())
    if dtype is bool_ and (a.dim() == 0 or a.numel() == 0):
        return cast(a, bool_)       # (torch's kernel copies these without summing: no Bool error)
    return apply_op("cumsum", [_accumulated(a, dtype, "cumsum")], {"axis": axis, "reverse": False}, "CumsumBackward0")


def _accumulated(a: Tensor, dtype, fn: str) -> Tensor:
    """`a` in the dtype a running sum or product of it takes: `dtype`, else int64 for integer
    and bool tensors (the cast's node is not shown, as torch's is inside its node)."""
    target = dtype if dtype is not None else (a._dtype if a._dtype.is_floating_point else int64)
    if target is bool_:
        raise NotImplementedError(f'"{fn}_out_cpu" not implemented for \'Bool\'')
    if a._requires_grad and not target.is_floating_point and is_grad_enabled():
        raise RuntimeError(f"Autograd not support dtype: {TORCH_SCALAR_NAMES[target.name]}")
    if target is a._dtype:
        return a
    a = cast(a, target)
    hide_node(a)
    return a


_ALL = object()                     # prod() over every element (no dim given)


@_numpy_spellings
def prod(input, dim=_ALL, keepdim=_ALL, *, dtype=None) -> Tensor:
    """torch.prod: the product of all elements (ProdBackward0) or over `dim` (an int:
    ProdBackward1), integers in int64; its gradient is torch's, zeros included."""
    a = as_tensor(input, "prod")
    if dim is _ALL and keepdim is not _ALL:
        raise TypeError("prod(): keepdim without dim")      # (the parser words torch's text)
    if dtype is bool_:
        return _bool_product(a, dim, keepdim)
    if dim is _ALL:
        return apply_op("prod", [_accumulated(a, dtype, "prod")], {"axis": None, "keepdim": False}, "ProdBackward0")
    dim = int_argument(dim, "prod")
    if keepdim is _ALL:
        keepdim = False
    if type(keepdim) is not bool:
        raise TypeError(f"prod(): argument 'keepdim' (position 3) must be bool, not {type(keepdim).__name__}")
    axis = normalize_dim(dim, a.dim())
    if a.dim() == 0:
        axis = None if not keepdim else axis
    return apply_op("prod", [_accumulated(a, dtype, "prod")], {"axis": axis, "keepdim": bool(keepdim)},
                    "ProdBackward1")


def _bool_product(a: Tensor, dim, keepdim) -> Tensor:
    """prod(dtype=bool): a product of bools is whether all are True (torch's kernel multiplies
    the elements cast to bool)."""
    if a._requires_grad and is_grad_enabled():
        raise RuntimeError("Autograd not support dtype: Bool")
    if dim is _ALL:
        return F.all(cast(a, bool_))
    return F.all(cast(a, bool_), int_argument(dim, "prod"), False if keepdim is _ALL else keepdim)


def _triangle(op: str, name: str):
    """torch.tril / torch.triu(input, diagonal=0) over the last two dims."""
    def check(a: Tensor, diagonal) -> None:
        int_argument(diagonal, op, "diagonal")
        if a.dim() < 2:
            raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")

    def fn(input, diagonal=0) -> Tensor:
        a = as_tensor(input, op)
        check(a, diagonal)
        return apply_op(op, [a], {"diagonal": int(diagonal)}, name)

    def in_place(self, diagonal=0) -> Tensor:
        int_argument(diagonal, op, "diagonal")  # (torch parses its arguments first)
        inplace.check_inplace(self)
        check(self, diagonal)
        apply_op(op, [self], {"diagonal": int(diagonal)}, name, out=self)
        return self
    fn.__name__ = fn.__qualname__ = op
    in_place.__name__ = in_place.__qualname__ = op + "_"
    fn.__doc__ = f"torch.{op}: input with the elements {'above' if op == 'tril' else 'below'} the `diagonal` of " \
                 "its last two dims set to zero."
    in_place.__doc__ = f"In-place torch.{op}."
    fn.in_place = in_place
    return fn


tril = _triangle("tril", "TrilBackward0")
triu = _triangle("triu", "TriuBackward0")


def _cumsum_(self, dim, *, dtype=None) -> Tensor:
    """In-place torch.cumsum (its dtype must be self's)."""
    axis = normalize_dim(int_argument(dim, "cumsum_", pos=1), self.dim())     # (torch wraps the dim first)
    if dtype is not None and dtype is not self._dtype:
        raise RuntimeError(f"Bad in-place call: input tensor dtype {_c_name(self._dtype)} and output tensor dtype "
                           f"{_c_name(dtype)} should match")
    if self._dtype is bool_:
        raise NotImplementedError("\"cumsum_out_cpu\" not implemented for 'Bool'")    # (its sums are no bools)
    inplace.check_inplace(self)
    apply_op("cumsum", [self], {"axis": axis, "reverse": False}, "CumsumBackward0", out=self)
    return self


# ------------------------------------------------------------------ methods
def _float_inplace(fn, name: str):
    """`t.op_()` of an op with a floating result: an integer or bool tensor cannot hold it
    (frac's is its own NotImplementedError)."""
    op = fn.__name__
    write = inplace.unary_inplace(op, name)

    def method(self) -> Tensor:
        if not self._dtype.is_floating_point:
            if op == "frac":
                fn(self)                        # raises torch's text
            raise result_cast_error("Float", TORCH_SCALAR_NAMES[self._dtype.name])
        return write(self)
    method.__name__, method.__doc__ = op + "_", write.__doc__
    return method


def _rounding_inplace(fn, name: str, op: str | None = None):
    """`t.floor_()` and its kin (`op`: the IR op, where fn is an alias): an integer tensor
    stays as it is; bool raises."""
    write = inplace.unary_inplace(op or fn.__name__, name)

    def method(self) -> Tensor:
        if self._dtype.is_floating_point:
            return write(self)
        fn(self)                                # bool: raises torch's text
        return _rewrite_unchanged(self)
    method.__name__, method.__doc__ = fn.__name__ + "_", write.__doc__
    return method


def _rewrite_unchanged(t: Tensor) -> Tensor:
    """An in-place rounding of an integer tensor: its values stay, but torch's kernel writes
    them, so its version moves (a copy of itself into itself)."""
    inplace.check_inplace(t)
    apply_op("cast", [t], {"dtype": t._dtype}, "CloneBackward0", out=t)
    return t


def _round_method(self, *, decimals=_PLAIN) -> Tensor:
    return round(self, decimals=decimals)


def _round_(self, *, decimals=_PLAIN) -> Tensor:
    """In-place torch.round (half to even, or to `decimals` places)."""
    if type(decimals) is not int and decimals is not _PLAIN:
        round(self, decimals=decimals)          # raises torch's text
    if not self._dtype.is_floating_point:
        round(self, decimals=decimals)          # bool, or decimals of an integer: raises torch's text
        return _rewrite_unchanged(self)
    if decimals is _PLAIN:
        return _round_plain(self)
    inplace.check_inplace(self)
    apply_op("round_decimals", [self], {"decimals": decimals}, "RoundBackward1", out=self)
    return self


_round_method.__name__, _round_method.__doc__ = "round", round.__doc__
_round_plain = inplace.unary_inplace("round", "RoundBackward0")
_atan2_write = inplace.binary_inplace("atan2", "Atan2Backward0")


def _atan2_(self, other) -> Tensor:
    """In-place torch.atan2: other a tensor; self must hold the floating result."""
    other = as_tensor(other, "atan2_", "other", 1)
    if not self._dtype.is_floating_point:
        dtype = F._promoted([self, other], "atan2_")[1]     # (an integer pair's result: float32)
        raise result_cast_error(TORCH_SCALAR_NAMES[(dtype if dtype.is_floating_point else float32).name],
                                TORCH_SCALAR_NAMES[self._dtype.name])
    return _atan2_write(self, other)


_FLOAT_RESULTS = {fn: name for fn, name in (
    (rsqrt, "RsqrtBackward0"), (log2, "Log2Backward0"), (log10, "Log10Backward0"), (exp2, "Exp2Backward0"),
    (sinh, "SinhBackward0"), (cosh, "CoshBackward0"), (tan, "TanBackward0"), (asin, "AsinBackward0"),
    (acos, "AcosBackward0"), (atan, "AtanBackward0"), (frac, "FracBackward0"))}

# Tensor methods (tracer/methods.py binds them)
METHODS = {
    "rsqrt": rsqrt, "log2": log2, "log10": log10, "exp2": exp2, "sinh": sinh, "cosh": cosh, "tan": tan,
    "asin": asin, "acos": acos, "atan": atan, "arcsin": arcsin, "arccos": arccos, "arctan": arctan,
    "floor": floor, "ceil": ceil, "trunc": trunc, "fix": fix, "round": _round_method, "frac": frac,
    "atan2": atan2, "arctan2": atan2, "logsumexp": logsumexp, "cumsum": cumsum, "cumsum_": _cumsum_, "prod": prod,
    "tril": tril, "triu": triu, "tril_": tril.in_place, "triu_": triu.in_place,
    "floor_": _rounding_inplace(floor, "FloorBackward0"), "ceil_": _rounding_inplace(ceil, "CeilBackward0"),
    "trunc_": _rounding_inplace(trunc, "TruncBackward0"), "fix_": _rounding_inplace(fix, "TruncBackward0", "trunc"),
    "round_": _round_, "atan2_": _atan2_, "arctan2_": _atan2_,
    **{fn.__name__ + "_": _float_inplace(fn, name) for fn, name in _FLOAT_RESULTS.items()},
    "arcsin_": _float_inplace(asin, "AsinBackward0"), "arccos_": _float_inplace(acos, "AcosBackward0"),
    "arctan_": _float_inplace(atan, "AtanBackward0"),
}
