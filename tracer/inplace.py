"""In-place ops (`add_`, `mul_`, `zero_`, `copy_`, ...): a functional op whose
result is written into the tensor, bumping its version counter, with torch's
checks for leaves and views of leaves that require grad."""
from __future__ import annotations

import builtins

import numpy as np

from fusegrad.ir import bool_, float32
from fusegrad.ir.types import TORCH_SCALAR_NAMES

from fusegrad.ir.ops import broadcast_shapes
from fusegrad.ir.ops.elementwise import pow_const_applies

from .dispatch import (_OVERLAP_MSG, _PARTIAL_OVERLAP, _check_multi_output_write, _check_no_partial_overlap,
                       _overlaps_itself, apply_op, broadcast_shape_error, no_grad_view_error, refresh_view_history,
                       result_cast_error)
from .parser_errors import ArgParser
from .scalar_checks import check_int_parses, check_scalar_fits
from .grad_mode import check_inference_write, is_grad_enabled
from . import generator, trace_state
from . import generator as random_generator     # (where a `generator=` argument hides the module)
from .layout import layout_stand_in, traced_overlaps_itself, traced_partial_overlap
from .tensor import Tensor


def check_inplace(t: Tensor) -> None:
    """torch's errors for an in-place op on a leaf (or a view of one) that requires grad, and on
    an inference tensor outside inference_mode (whatever the grad mode)."""
    check_inference_write(t)
    if not is_grad_enabled():
        return
    if (t._no_grad_view or (t._base is not None and t._base._requires_grad and t.__dict__.get("_no_grad_mode"))) \
            and t._multi_output is None:
        # (the second: made under no_grad before its base gained a history; a part of split made
        # of such a view with grad on is the split's, torch's latest creation mode: below)
        raise no_grad_view_error(t)
    if t._multi_output is not None and (t._requires_grad or t._base._requires_grad):
        from .splitting import multi_output_no_grad_error, multi_output_view_error
        raise multi_output_no_grad_error(t, "is being modified inplace") or multi_output_view_error(t)
    if t._requires_grad and t.__dict__.get("_transform_input"):
        # fg.grad's input standing for an argument with history (grad of grad): a leaf at
        # torch.func's level of the transform
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    # Inside a trace, a tensor an op made or wrote with grad has history though no grad_fn
    # node is built for it; Tensor.is_leaf tells (a write under no_grad leaves a leaf).
    # As torch: a view that requires grad of a base that is a leaf, whether the base requires
    # grad or not (a view of a leaf made by requires_grad_() on a view: arange(4.).view(2, 2)).
    # (a view made before its base gained a history, whose node nothing has asked for since:
    # torch's check reads the node as it is, null, and the view requires grad through its base;
    # read before is_leaf below, which asks for the node)
    nodeless = t._base is not None and t._base._requires_grad and t.__dict__.get("_nodeless", False)
    view_of_leaf = t._base is not None and t._base is not t and t._base.is_leaf and \
        (t._requires_grad or t._base._requires_grad)
    if view_of_leaf or (t._requires_grad and t.is_leaf and t._base is not None):
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if nodeless:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if t._requires_grad and t.is_leaf:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def check_operand_overlap(t: Tensor, other: Tensor) -> None:
    """torch's error where `other`, an operand of an in-place op on `t`, partly overlaps the
    memory written (eagerly by the arrays, inside a trace by the views of one tensor)."""
    if t._data is not None and other._data is not None:
        _check_no_partial_overlap(t._data, [other._data])
        return
    if traced_partial_overlap(t, [other]):
        raise RuntimeError(_PARTIAL_OVERLAP)
    trace = trace_state.current()
    if trace is not None:
        trace.check_outside_overlap(t, [other])


def check_operand_history(t: Tensor, other) -> None:
    """torch's autograd collects the edges of an in-place op's operands before its kernel
    checks memory, shapes and types: an operand view whose history must be regenerated and
    cannot be (made under no_grad, its base written in place since) raises there first
    (`t.mul_(v)` of `v = t[1, 0]` made under no_grad, after `t.mul_(0.5)`)."""
    if not isinstance(other, Tensor) or other._base is None or not is_grad_enabled() or \
            not (other._requires_grad or t._requires_grad):
        return
    trace = trace_state.current()
    if trace is None:
        if other._view_version != other._vbox[0]:
            # (a part of split/chunk/unbind raises its multi-output error here where the op records
            # a node, as torch collects the operand's edge before its kernel's memory checks:
            # `a0.copy_(c0)` of c0 = s.unbind(0)[0] written before, whose memory a0 overlaps)
            refresh_view_history(other, deferring=other._multi_output is None or not t._dtype.is_floating_point)
    elif other._rebased or trace.rebased_outside.get(id(other)) is other:
        raise trace.rebased_error(other)


def check_write_overlaps(t: Tensor, other=None) -> None:
    """torch's memory checks of an in-place op on `t`, made before its shape and type checks
    (TensorIterator's order): no element of `t` shares memory with another, and `other` (an
    operand, as given) does not partly overlap `t`. An operand's history is asked for first
    (check_operand_history)."""
    check_operand_history(t, other)
    if _overlaps_itself(t._data) if t._data is not None else traced_overlaps_itself(t):
        raise RuntimeError(_OVERLAP_MSG)
    if isinstance(other, Tensor):
        check_operand_overlap(t, other)


def check_result_fits(t: Tensor, shape: tuple, dtype) -> None:
    """torch's checks of an in-place op's out-of-place result (its broadcast `shape`, its
    `dtype`) against `t`, in torch's order: the shape, then the type (not of a higher kind)."""
    if tuple(shape) != tuple(t.shape):
        raise broadcast_shape_error(tuple(t.shape), shape)
    if dtype.category > t._dtype.category:
        raise result_cast_error(TORCH_SCALAR_NAMES[dtype.name], TORCH_SCALAR_NAMES[t._dtype.name])


def _scaled_in_place(self: Tensor, other, alpha, op: str, name: str) -> Tensor:
    """self += alpha * other (-= for sub_) as torch's add_ kernel does it on floats: one
    fused multiply-add (IR scaled_add; alpha is torch's Scalar, `_saved_alpha`)."""
    from .functional import _scalar_array
    from .saved_attributes import remember_alpha
    if not isinstance(other, Tensor):
        other = _scalar_array(other, self._dtype)
    apply_op("scaled_add", [self, other, _scalar_array(alpha, self._dtype)], {"negate": op == "sub"}, name,
             out=self)
    remember_alpha(self, alpha)
    return self


def binary_inplace(op: str, name: str, method_name: str | None = None, tensor_name: str | None = None,
                   attrs: dict | None = None):
    """The in-place form of a binary IR op: `t.add_(other)` records AddBackward0 with t as output
    (`method_name`: torch's name of the method, where it is not the op's name and "_";
    `tensor_name`: the node's name where other is a tensor, if torch's overloads differ there;
    `attrs`: the op's attributes)."""
    def method(self: Tensor, other, alpha=1) -> Tensor:
        name_here = tensor_name if tensor_name is not None and isinstance(other, Tensor) else name
        from .functional import _check_bool_sub, _coerce, _promoted, alpha_number, check_alpha, mul
        if type(alpha) is not int and type(alpha) is not float:
            check_alpha(alpha, method.__name__)     # (torch parses its arguments first)
        check_inplace(self)
        if self._multi_output is not None:
            _check_multi_output_write(self, [other])    # (torch's autograd checks come before shapes)
        # The common case (an optimizer's p.add_(g, alpha=-lr)): float tensors of one dtype and
        # shape, a number alpha. No promotion, broadcast or cast check can fail or change it.
        if (type(other) is Tensor and other._dtype is self._dtype and self._dtype.is_floating_point
                and (type(alpha) is float or type(alpha) is int)
                and other._value_shape() == self._value_shape()):
            if alpha != 1:
                if not -3.4e38 < alpha < 3.4e38:
                    check_int_parses(alpha)                 # (10**40: torch's parser's OverflowError)
                    check_scalar_fits(alpha, self._dtype)   # (1e300 overflows a float32 result: torch's error)
                check_operand_overlap(self, other)
                return _scaled_in_place(self, other, alpha, op, name_here)
            apply_op(op, [self, other], attrs, name_here, out=self)
            return self
        if op == "sub":
            _check_bool_sub(self, other)
        if op == "pow" and (type(other) is float or type(other) is int) and pow_const_applies(self._dtype, other):
            # x.pow_(0.5): computed as x ** 0.5 is (a root, with sqrt's special values: ir pow_const)
            apply_op("pow_const", [self], {"exponent": float(other)}, name_here, out=self)
            return self
        check_write_overlaps(self, other)
        if op == "pow" and (type(other) is float or type(other) is int) and self._dtype.is_floating_point:
            # the exponent a double, as torch's Scalar (ir/ops/elementwise.py pow_number)
            from .functional import _double, pow_number_tail
            apply_op("pow_number", [self, _double(other)], {"tail": pow_number_tail(self)}, name_here, out=self)
            return self
        # (a bool tensor exponent: the backward for self raises, as out of place, functional.pow)
        bool_exponent = op == "pow" and isinstance(other, Tensor) and other._dtype is bool_ and \
            self._dtype.is_floating_point
        scaled = type(alpha) is not int or alpha != 1
        if scaled:
            alpha, dtype = alpha_number(self, other, alpha, method.__name__)
            if not dtype.is_floating_point:
                # exact, or wrapping around as torch's (an integer result records no node)
                if isinstance(other, Tensor):
                    other = mul(_coerce(other, dtype), alpha)
                else:
                    other = builtins.bool(other * alpha) if dtype is bool_ else other * alpha
                scaled = False
        (_, other), dtype = _promoted([self, other], op + "_")
        if op == "div" and not dtype.is_floating_point:
            dtype = float32                  # true division: an integer quotient is a float
        check_result_fits(self, broadcast_shapes(tuple(self.shape), tuple(np.shape(other))), dtype)
        if scaled:
            return _scaled_in_place(self, _coerce(other, self._dtype), alpha, op, name_here)
        apply_op(op, [self, _coerce(other, self._dtype)], {"no_derivative": "pow"} if bool_exponent else attrs,
                 name_here, out=self)
        return self
    method.__name__ = method_name or op + "_"
    method.__doc__ = f"In-place `{op}`: writes the result into self (alpha scales other)."
    return method


def unary_inplace(op: str, name: str):
    """The in-place form of a unary IR op (`exp_`, `relu_`, ...)."""
    def method(self: Tensor) -> Tensor:
        check_inplace(self)
        apply_op(op, [self], None, name, out=self)
        return self
    method.__name__ = op + "_"
    method.__doc__ = f"In-place `{op}`."
    return method


def clamp_(t: Tensor, min=None, max=None) -> Tensor:
    """In-place clamp: number bounds (ClampBackward1), or tensor bounds, which take part in
    autograd as in the out-of-place clamp (ClampBackward0). torch's checks, in its order: the
    leaf, memory, the result's broadcast shape, then its type, which must fit t (a float bound
    cannot clamp an integer tensor, an integer one a bool tensor; torch names t's type as C++
    does for number bounds, "long int", and as a scalar type for tensor bounds, "Long")."""
    from .functional import _c_name, _clamp_overload, clamp_bounds, clamp_call, clamp_result_type
    tensor_bounds, dtype = clamp_result_type(t, min, max)
    check_inplace(t)
    for bound in (min, max):
        check_write_overlaps(t, bound)                 # (before the bounds broadcast)
    bound_shapes = [tuple(b.shape) for b in (min, max) if isinstance(b, Tensor)]
    if bound_shapes:
        # torch's TensorIterator: bounds broadcasting beyond t are refused before any type check
        # (eagerly the write would refuse it too; traced, nothing else would)
        shape = broadcast_shapes(tuple(t.shape), *bound_shapes)
        if tuple(shape) != tuple(t.shape):
            raise broadcast_shape_error(tuple(t.shape), shape)
    if dtype.category > t._dtype.category:
        raise result_cast_error(TORCH_SCALAR_NAMES[dtype.name], TORCH_SCALAR_NAMES[t._dtype.name]
                                if tensor_bounds else _c_name(t._dtype))
    if min is None and max is None:
        clamp_bounds(t._dtype, min, max)             # raises torch's error
    op, operands, name = clamp_call(t, min, max, t._dtype, _clamp_overload(t, min, max))
    apply_op(op, operands, None, name, out=t)
    return t


def fill_(t: Tensor, value) -> Tensor:
    """Set every element to `value` (a number or a one-element tensor)."""
    check_inplace(t)
    if isinstance(value, Tensor) and value.dim() == 0 and \
            (_overlaps_itself(t._data) if t._data is not None else traced_overlaps_itself(t)):
        raise RuntimeError(_OVERLAP_MSG)    # torch's fill_.Tensor refuses an expand; fill_(number) not
    value, tensor_value = _fill_value(t, value)
    # torch's fill_.Tensor and fill_.Scalar (FillBackward1 and 0 are the out-of-place fill's)
    apply_op("index_put", [t, value], {"index": ()}, "FillBackward3" if tensor_value else "FillBackward2", out=t)
    return t


def fill(input, value) -> Tensor:
    """torch.fill: a copy of `input` (its layout kept) with every element `value`, a number or a
    0-d tensor (FillBackward0 / FillBackward1: no gradient reaches input, value gets the sum)."""
    from .functional import as_tensor
    t = as_tensor(input, "fill")
    value, tensor_value = _fill_value(t, value, "fill")
    return apply_op("index_put", [t, value], {"index": ()}, "FillBackward1" if tensor_value else "FillBackward0")


_FILL = ArgParser("fill", "(Tensor input, Tensor value)", "(Tensor input, Number value)")


def _fill_value(t: Tensor, value, fn: str = "fill_"):
    """(the value fill/fill_ write into `t`: a 0-d tensor cast to t's dtype or a NumPy scalar,
    whether it was a tensor), with torch's errors for a tensor of more dimensions or a number
    out of t's dtype's range."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        from .functional import cast
        return cast(value, t._dtype, implicit=True), True
    if fn == "fill" and not (isinstance(value, (int, float, np.number, np.bool_))):
        raise _FILL.refusal((t, value), {})
    check_int_parses(value)
    check_scalar_fits(value, t._dtype)
    return np.asarray(value, dtype=t._dtype.np), False


def zero_(t: Tensor) -> Tensor:
    """torch's Tensor.zero_: fill `t` with zeros in place and return it."""
    check_inplace(t)
    apply_op("index_put", [t, np.zeros((), dtype=t._dtype.np)], {"index": ()}, "ZeroBackward0", out=t)
    return t


def _random_fill(t: Tensor, kernel: str | None, draw, name: str) -> Tensor:
    """Write random samples into `t` in place: `draw(n, dtype, contiguous)` gives them in the
    order torch's kernel fills t's memory (tracer/generator.py). `kernel`: the name in torch's
    refusal of a dtype it does not sample (None: the caller checked the dtype)."""
    if kernel is not None:
        generator.check_sample_dtype(t._dtype, kernel, t.numel())
    check_inplace(t)
    n = t.numel()
    if not n and not t._dtype.is_floating_point:
        return t                    # (an empty integer tensor: nothing to draw, nothing recorded)
    memory = t._data if t._data is not None else layout_stand_in(t)      # (traced: its layout)
    values = generator.in_logical_order(memory, draw(n, t._dtype.np, memory.flags.c_contiguous))
    apply_op("index_put", [t, values], {"index": ()}, name, out=t)
    return t


def uniform_(t: Tensor, low: float = 0.0, high: float = 1.0, gen=None) -> Tensor:
    """Fill `t` with samples of U[low, high) from fusegrad's generator, or `gen` (torch's numbers)."""
    gen = generator.required(gen, "uniform_")
    from .creation import _scalar_str
    if t._dtype.is_floating_point:
        kind = "float" if t._dtype is float32 else "double"
        limit = np.finfo(t._dtype.np).max
        for which, bound in (("from", low), ("to", high)):
            if not -limit <= bound <= limit:
                raise RuntimeError(f"{which} is out of bounds for {kind}")
        if low > high:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_scalar_str(low)} > "
                               f"to={_scalar_str(high)}")
    return _random_fill(t, "check_uniform_bounds",
                        lambda n, dtype, _: gen.uniform(n, dtype, low, high), "UniformBackward0")


# (torch's bound of random_ without `to`, per dtype: the largest integer it holds exactly,
# 2**digits, for floats; the largest value for int64)
_RANDOM_TOP = {"float32": 2 ** 24, "float64": 2 ** 53, "int64": 2 ** 63 - 1, "bool": 1}


def random_(t: Tensor, low=None, high=None, gen=None, name: str = "RandomBackward0") -> Tensor:
    """Fill `t` with integers uniform in [low, high) (torch's random_: no bounds, the dtype's
    range of exact integers [0, 2**digits]; only `low`, [low, 2**digits]), torch's numbers
    (uniform_int and uniform_int_from_to of one 32-bit word each, 64-bit where the range needs
    it or the dtype is float64 or int64). `name`: the node of torch's overload."""
    gen = generator.required(gen, "random_")
    if low is not None and high is not None and low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if t._dtype is bool_:
        # (torch's bounds check of an integral dtype; floats only warn)
        if low is not None and not 0 <= low <= 1:
            raise RuntimeError("from is out of bounds for bool")
        if high is not None and not 0 <= high - 1 <= 1:
            raise RuntimeError("to - 1 is out of bounds for bool")
    check_inplace(t)
    n, top = t.numel(), _RANDOM_TOP[t._dtype.name]
    if low is None:
        if t._dtype is bool_:
            words = gen.words32(n) & np.uint64(1)
        elif t._dtype.name in ("float64", "int64"):
            words = gen.words64(n) % np.uint64(top + 1)
        else:
            words = gen.words32(n) % np.uint64(top + 1)
        values = words.astype(t._dtype.np)
    else:
        values = gen.integers(int(low), int(high) if high is not None else top + 1, n).astype(t._dtype.np)
    memory = t._data if t._data is not None else layout_stand_in(t)
    values = generator.in_logical_order(memory, values)
    apply_op("index_put", [t, values], {"index": ()}, name, out=t)
    return t


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, gen=None) -> Tensor:
    """Fill `t` with samples of N(mean, std**2) from fusegrad's generator, or `gen` (torch's numbers)."""
    from .creation import _scalar_str
    gen = generator.required(gen, "normal_")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_scalar_str(std)}")
    return _random_fill(t, "normal_kernel_cpu",
                        lambda n, dtype, contiguous: gen.normal(n, dtype, mean, std, contiguous),
                        "NormalBackward0")


def _continuous_only(t: Tensor, distribution: str, names: dict) -> None:
    """torch's refusal of a continuous distribution's fill of an integer or bool tensor (the
    dtype named as `names` spells it: exponential_ says Long, cauchy_ long int)."""
    if not t._dtype.is_floating_point:
        raise RuntimeError(f"{distribution} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {names[t._dtype.name]}")


_C_TYPE_NAMES = {"int64": "long int", "bool": "bool"}


def exponential_(t: Tensor, lambd: float = 1.0, gen=None) -> Tensor:
    """Fill `t` with samples of Exp(lambd), torch's numbers (ExponentialBackward0)."""
    from .creation import _scalar_str
    gen = generator.required(gen, "exponential_")
    check_inplace(t)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_scalar_str(lambd)}")
    _continuous_only(t, "Exponential", TORCH_SCALAR_NAMES)
    return _random_fill(t, None, lambda n, dtype, _: gen.exponential(n, lambd).astype(dtype), "ExponentialBackward0")


def geometric_(t: Tensor, p: float, gen=None) -> Tensor:
    """Fill `t` with samples of Geometric(p), the trials up to a first success, torch's numbers
    (GeometricBackward0; integer tensors too)."""
    from .creation import _scalar_str
    gen = generator.required(gen, "geometric_")
    check_inplace(t)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_scalar_str(p)}")
    if t._dtype is bool_:
        raise NotImplementedError('"geometric_cpu" not implemented for \'Bool\'')
    return _random_fill(t, None, lambda n, dtype, _: gen.geometric(n, p).astype(dtype), "GeometricBackward0")


def cauchy_(t: Tensor, median: float = 0.0, sigma: float = 1.0, gen=None) -> Tensor:
    """Fill `t` with samples of Cauchy(median, sigma), torch's numbers (CauchyBackward0)."""
    from .creation import _scalar_str
    gen = generator.required(gen, "cauchy_")
    check_inplace(t)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_scalar_str(sigma)}")
    _continuous_only(t, "Cauchy", _C_TYPE_NAMES)
    return _random_fill(t, None, lambda n, dtype, _: gen.cauchy(n, median, sigma).astype(dtype), "CauchyBackward0")


def log_normal_(t: Tensor, mean: float = 1.0, std: float = 2.0, gen=None) -> Tensor:
    """Fill `t` with samples of exp(N(mean, std**2)), torch's numbers (LogNormalBackward0)."""
    from .creation import _scalar_str
    gen = generator.required(gen, "log_normal_")
    check_inplace(t)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_scalar_str(std)}")
    return _random_fill(t, "log_normal_cpu", lambda n, dtype, _: gen.log_normal(n, mean, std).astype(dtype),
                        "LogNormalBackward0")


def bernoulli_(t: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill `t` with 1 where a uniform draw is below `p`, else 0 (torch's numbers, one draw
    per element in fill order; any dtype). A number p: torch's CPU kernel draws a double
    uniform; a tensor p (broadcast to t, each element its probability): one of p's dtype."""
    values = bernoulli_values(t, p, random_generator.required(generator, "bernoulli_"))
    name = "BernoulliBackward1" if isinstance(p, Tensor) else "BernoulliBackward2"
    check_inplace(t)
    apply_op("index_put", [t, values], {"index": ()}, name, out=t)
    return t


def bernoulli_values(t: Tensor, p, gen=None, row_major: bool = False) -> np.ndarray:
    """0/1 values of t's shape and dtype drawn as torch's bernoulli_(p) fills t (from `gen`,
    else the global generator): in t's memory order, or row-major (`row_major`: torch.bernoulli,
    whose result it allocates contiguous before filling it)."""
    gen = gen or generator.DEFAULT
    from .creation import _scalar_str
    n = t.numel()
    if isinstance(p, Tensor):
        if not p.dtype.is_floating_point:
            raise NotImplementedError(f'"bernoulli_tensor_cpu_p_" not implemented for '
                                      f"'{TORCH_SCALAR_NAMES[p.dtype.name]}'")
        probabilities = p.detach().expand(tuple(t.shape))._concrete()   # (torch's expand error first)
        if not np.all((probabilities >= 0) & (probabilities <= 1)):     # (NaN fails both)
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
                               "message be improved?  If so, please report an enhancement request to PyTorch.)")
        draws = gen.uniform(n, p.dtype.np)                # (a uniform of p's dtype)
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_scalar_str(p)}")
        probabilities, draws = p, gen.uniform(n, np.float64)
    if row_major:
        ordered = draws.reshape(tuple(t.shape))
    else:
        memory = t._data if t._data is not None else layout_stand_in(t)      # (traced: its layout)
        ordered = generator.in_logical_order(memory, draws)
    # (np.asarray: a 0-d comparison is a NumPy scalar, no array)
    return np.asarray(ordered < probabilities).astype(t._dtype.np)


def copied_into_itself(t: Tensor, src) -> bool:
    """`t.copy_(src)` where src is t's own memory in t's layout (the same memory, dtype, shape
    and strides: x.copy_(x), also of an expand), eagerly with no gradient involved: torch's
    copy_ returns at once (no overlap check), the write still counted. Whether it was one.
    (In a compiled call the write is traced, so that what saved t before it is stale, as the
    counted write makes it in torch, alias fuzzer seed 100526; not for an expand's memory,
    which a traced write refuses: there it is counted at once, as eagerly.)"""
    a, b = t._data, src._data if isinstance(src, Tensor) else None
    if a is None or b is None or a.dtype != b.dtype or a.shape != b.shape or a.strides != b.strides:
        return False
    if trace_state.current() is not None and not _overlaps_itself(a):
        return False
    if a.__array_interface__["data"][0] != b.__array_interface__["data"][0]:
        return False
    if is_grad_enabled() and (t._requires_grad or src._requires_grad):
        return False
    t._vbox[0] += 1
    return True


def copy_(t: Tensor, src, operand_checked: bool = False) -> Tensor:
    """Copy `src` (broadcast, cast to t's dtype) into t. `operand_checked`: the caller has
    checked src's overlap with t by its own rule (a setitem's, where a value of another shape
    passes: torch cannot decide for a broadcast), so only t's own elements are checked here."""
    check_inplace(t)
    from .functional import as_tensor, cast
    src = as_tensor(src, "copy_", "src")
    if copied_into_itself(t, src):
        return t
    check_write_overlaps(t, None if operand_checked else src)      # as torch's copy_: before the shapes
    src = cast(src, t._dtype, implicit=True)
    from fusegrad.ir.ops import broadcast_shapes
    broadcast_shapes(tuple(t.shape), tuple(src.shape))
    apply_op("index_put", [t, src], {"index": ()}, "CopyBackwards", out=t)
    return t
