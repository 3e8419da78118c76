"""Elementwise ops: broadcasting maps over one iteration space.

Operands of arithmetic ops have one dtype (the tracer inserts `cast` where
torch would promote); comparisons produce bool. Each op gives its NumPy
reference, its VJP in IR ops, and the scalar expression that the code
generator inlines into a fused loop (`fg_*` names live in codegen's math).
"""
from __future__ import annotations

import numpy as np

from .. import fma, rounded, threaded
from ..types import TensorType, bool_
from .registry import COMPOSITE, ELEMENTWISE, OTHER_THEN_SELF, SOURCE, NoDerivativeError, OpDef, broadcast_shapes, register


def _same_dtype(types, name):
    d = types[0].dtype
    for t in types[1:]:
        if t.dtype is not d:
            raise TypeError(f"{name}: operands must share a dtype, got {t.dtype.name} and {d.name}")
    return d


def _infer_map(name, result=None, float_only=False, bool_error=None, integer_only=False):
    def infer(types, attrs):
        d = _same_dtype(types, name)
        shape = types[0].shape
        if len(types) > 1 and any(t.shape != shape for t in types[1:]):
            # (first, as torch's TensorIterator: shapes that do not broadcast are that error
            # whatever the dtype, `bool_t // bool_t.T` too)
            shape = broadcast_shapes(*(t.shape for t in types))
        if bool_error is not None and d is bool_:
            raise bool_error
        if float_only and not d.is_floating_point:
            raise TypeError(f"{name}: expected a floating point operand, got {d.name}")
        if integer_only and d.is_floating_point:
            raise TypeError(f"{name}: expected integer or bool operands, got {d.name}")
        return [TensorType(shape, result or d)]
    infer.elementwise_rule = True           # (OpDef.pointwise)
    return infer


def elementwise(name, ref, vjp=None, expr=None, result=None, float_only=False, doc="", rewrite=None,
                bool_error=None, ref_into=None, extra=None, integer_only=False, nondiff_inputs=()):
    """Declare an elementwise op (all operands one dtype; output dtype `result` or theirs).
    `float_only` / `integer_only`: the operand kinds it takes (TypeError otherwise).
    `bool_error`: the exception torch raises for bool operands, if it does. `ref_into(out,
    *arrays)`: the reference writing its result into given memory (OpDef.extra, see
    ir/buffers.py), where `ref` is not a ufunc. `extra`: further OpDef.extra facts."""
    facts = dict(extra or {})
    if ref_into:
        facts["ref_into"] = ref_into
    return register(OpDef(name, ELEMENTWISE, _infer_map(name, result, float_only, bool_error, integer_only), ref,
                          vjp, expr, nondiff_inputs=nondiff_inputs,
                          doc=doc, rewrite=rewrite, extra=facts))


def _sigmoid_ref(x):
    # torch's formula, 1 / (1 + e**-x): exp overflows to inf for x below about -88
    # (float32) and the result is 0, as torch's is. (A select between two stable
    # branches would keep denormal results there, but np.where over an unpredictable
    # sign costs 5x the whole formula.)
    one = x.dtype.type(1)
    if x.ndim == 0 or x.dtype.kind != "f":
        return one / (one + rounded.exp(-x))
    out = np.empty_like(x)
    _sigmoid_into(out, x)
    return out


@threaded.in_row_blocks
def _sigmoid_into(out, x):
    """_sigmoid_ref of a floating array, worked in place in `out`: 1 / (1 + exp(-x))."""
    one = x.dtype.type(1)
    np.negative(x, out=out)
    rounded.exp(out, out=out)       # (torch's exp: correctly rounded for float32, see ir/rounded.py)
    out += one
    np.divide(one, out, out=out)


# ------------------------------------------------------------------ arithmetic
elementwise("add", np.add, lambda e, x, y, g, a, n: [g[0], g[0]], "({0} + {1})")
# extra["sign"]: (instruction, sign_of, producer) -> -1 where every element of its result is
# known to be <= 0 (or NaN), 1 where >= 0 (or NaN), None where nothing is known; sign_of(value)
# is what is known of an operand, producer maps value ids to their instructions.
# codegen/nonpositive_forms.py works the signs out, for exp's nonpositive_form.
def _never_negative(ins, sign_of, producer) -> int:
    return 1


def _negated_sign(ins, sign_of, producer):
    s = sign_of(ins.inputs[0])
    return -s if s else None


def _product_sign(ins, sign_of, producer):
    a, b = ins.inputs
    if a is b:
        return 1                                    # x * x
    sa, sb = sign_of(a), sign_of(b)
    return sa * sb if sa and sb else None


def _difference_sign(ins, sign_of, producer):
    """sub(a, amax(a, keepdim=True)), softmax's shift, is at most 0 (no movement op between:
    a transposed max is not aligned with a)."""
    m = producer.get(ins.inputs[1].id)
    if m is not None and m.op == "amax" and m.inputs[0] is ins.inputs[0] and dict(m.attrs).get("keepdim", False):
        return -1
    return None


elementwise("sub", np.subtract, lambda e, x, y, g, a, n: [g[0], e.neg(g[0]) if n[1] else None],
            "({0} - {1})", extra={"sign": _difference_sign})
elementwise("mul", np.multiply,
            lambda e, x, y, g, a, n: [e.mul(g[0], x[1]) if n[0] else None,
                                      e.mul(g[0], x[0]) if n[1] else None],
            "({0} * {1})", extra={"sign": _product_sign})
elementwise("div", np.true_divide,
            # torch's div_tensor_other_backward: -grad * ((x / y) / y), which keeps x / y
            # finite where y * y would underflow to 0 or overflow to inf.
            lambda e, x, y, g, a, n: [e.div(g[0], x[1]) if n[0] else None,
                                      e.mul(e.neg(g[0]), e.div(e.div(x[0], x[1]), x[1])) if n[1] else None],
            "({0} / {1})", extra={"unpack_order": OTHER_THEN_SELF,
                                  "reciprocal_of": 1})      # see registry.OpDef.extra
# scaled_add(a, b, alpha; negate) = a + b * alpha (a - b * alpha with negate) rounded once:
# torch's add(a, b, alpha=) and sub(a, b, alpha=) on floats, whose CPU kernel is a fused
# multiply-add (ufunc/add.h: vec::fmadd(other, alpha, self), the scalar tail contracted
# likewise; sub adds -alpha), so 8-20% of float32 results differ by an ulp from a multiply
# then an add. alpha is torch's Scalar: an input (a learning rate a schedule changes must
# not be an attribute, which keys the program cache), not saved (scalar_attributes), not
# listed in next_functions (torch_edges). The gradient of b is torch's formula, grad * alpha
# (sub: -grad * alpha), which create_graph records as it does.
def _scaled_add_ref(a, b, alpha, negate):
    return fma.fma(b, -alpha if negate else alpha, a, np.result_type(a, b, alpha))   # (it broadcasts)


def _scaled_add_vjp(e, x, y, g, a, n):
    grad = e.neg(g[0]) if a["negate"] else g[0]
    return [g[0] if n[0] else None, e.mul(grad, x[2]) if n[1] else None, e.mul(grad, x[1]) if n[2] else None]


elementwise("scaled_add", _scaled_add_ref, _scaled_add_vjp,
            lambda t, a: f"fg_fma({t[1]}, (-{t[2]}), {t[0]})" if a["negate"] else f"fg_fma({t[1]}, {t[2]}, {t[0]})",
            float_only=True, extra={"scalar_attributes": (2,), "torch_edges": (0, 1)},
            doc="scaled_add(a, b, alpha; negate): a + b * alpha (a - b * alpha) rounded once (torch's add/sub "
                "with alpha)")
elementwise("neg", np.negative, lambda e, x, y, g, a, n: [e.neg(g[0])], "(-{0})", extra={"sign": _negated_sign})


# torch's PowBackward1 computes `exponent - 1`, which a bool exponent refuses when it runs
BOOL_SUBTRACTION = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                    "invert a mask, use the `~` or `logical_not()` operator instead.")
# torch's text for `-` of a bool tensor (neg, and atan2's backward of a bool self)
BOOL_NEGATION = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                 "mask, use the `~` or `logical_not()` operator instead.")


def _pow_vjp(e, x, y, g, a, n):
    base, expo = x
    if a.get("no_derivative") and n[0]:
        # (the tracer sets it for a bool tensor exponent, which the IR sees cast to the base's dtype)
        raise NoDerivativeError(BOOL_SUBTRACTION)
    gx = gy = None
    if n[0]:
        # torch's pow_backward: grad * (exponent * x ** (exponent - 1)), in that order (the
        # order decides between inf, nan and 0 where a product over- or underflows).
        zero = e.eq(expo, 0)
        if expo.type.ndim == 0 and base.type.ndim > 0 and not a.get("per_element"):
            # A 0-d exponent that was a Python number: torch's pow(Tensor, Scalar) backward
            # is that product, recorded as a mul (MulBackward0 under create_graph), and zeros
            # with no history for exponent 0. The masks give the tensor-exponent form's
            # values; x**1 in place of x**-1 under the mask keeps the second derivative at
            # x = 0 finite (0, where torch's zeros have none).
            power = e.pow(base, e.where(zero, 1, e.sub(expo, 1)))
            gx = e.mul(e.where(zero, 0, g[0]), e.where(zero, 0, e.mul(expo, power)))
        else:
            # (a tensor exponent, 0-d too: torch's where(exponent == 0, 0, ...), whose second
            # derivative at x = 0 is NaN where the exponent is 0, as torch's: 0 * inf)
            gx = e.where(zero, 0, e.mul(g[0], e.mul(expo, e.pow(base, e.sub(expo, 1)))))
    if n[1]:
        mask = e.logical_and(e.eq(base, 0), e.ge(expo, 0))
        # torch: grad * where(base == 0 & exponent >= 0, 0, pow * log(base)) (a NaN grad stays NaN)
        gy = e.mul(g[0], e.where(mask, 0, e.mul(y[0], e.log(base))))
    return [gx, gy]


def _pow_ref(x, y, no_derivative=None, per_element=False):
    if x.dtype.kind == "b":
        return _pow_ref(x.astype(np.int64), np.asarray(y, np.int64)).astype(np.bool_)
    if x.dtype.kind == "f" and not per_element and np.ndim(y) == 0 and float(y) in _POW_CONST_REFS:
        # one exponent for the whole loop that torch's pow(Tensor, Scalar) computes by
        # multiplies and roots (x ** 1.5's x ** 0.5 and x ** -0.5 in its derivatives:
        # rsqrt(-0.) is -inf, where C's pow gives inf)
        return _POW_CONST_REFS[float(y)](x, x.dtype.type(1))
    if x.dtype == np.float32:
        # NumPy's float32 power is an ulp off in about 1 of 5 elements; torch's (glibc's powf,
        # and Sleef's in its vector loop, within an ulp) are correctly rounded nearly always,
        # as a float64 power rounded once is (measured: 100% and 99% of torch's results)
        wide = _pow_ref(x.astype(np.float64), np.asarray(y, np.float64), per_element=per_element)
        return np.asarray(wide, np.float32)
    if x.dtype.kind != "i":
        shape = np.broadcast_shapes(np.shape(x), np.shape(y))
        if per_element and (np.shape(y) != shape or 0 in y.strides or len(shape) == 0):
            # NumPy's loop takes an exponent that is one number for the whole loop as torch's
            # pow(Tensor, Scalar) does: x ** 0.5 as sqrt(x) ((-inf) ** 0.5 is nan, (-0.) ** 0.5
            # is -0.). A tensor exponent (`per_element`, set by the tracer) is torch's pow of
            # two tensors, which computes pow (inf, 0.): one exponent per element
            y = np.array(np.broadcast_to(y, shape).reshape(-1))
            return np.power(np.broadcast_to(x, shape).reshape(-1), y).reshape(shape)
        return np.power(x, y)
    # Integer powers: torch gives 1 / x**|y| truncated for negative exponents
    # (1 for x == 1, +-1 for x == -1, else 0) where NumPy raises.
    neg = y < 0
    safe = np.power(x, np.where(neg, 0, y))
    odd = (np.abs(y) % 2) == 1
    inverse = np.where(x == 1, 1, np.where(x == -1, np.where(odd, -1, 1), 0)).astype(x.dtype)
    return np.where(neg, inverse, safe)


def _pow_rewrite(e, xs, attrs, graph):
    """For kernels: a bool base to a bool exponent (torch's `b ** True`) is `b or not e` (x**0
    is 1): the kernels' pow is for numbers only. A float base to one exponent for all
    elements (0-d, not a tensor's: `per_element` unset) takes sqrt for 0.5 and 1/sqrt for -0.5,
    as torch's pow(Tensor, Scalar) and the reference's NumPy loop do ((-inf) ** 0.5 is nan,
    (-0.) ** 0.5 is -0., where the kernels' C99 pow gives inf and 0.): x ** 1.5's gradient
    computes x ** 0.5 so."""
    x, y = xs
    if x.dtype is bool_:
        return [e.op("logical_not", e.logical_and(e.op("logical_not", x), y))]
    if attrs.get("per_element") or y.type.ndim or not x.dtype.is_floating_point:
        return None
    made = graph.producer(y)
    if made is not None and made.op == "const":
        if float(dict(made.attrs)["value"]) not in (0.5, -0.5):
            return None                             # a constant exponent: C99 pow is torch's
    root = e.sqrt(x)
    power = e.op("pow", x, y, per_element=True)     # (kept as it is by the rewrite pass)
    return [e.where(e.eq(y, 0.5), root, e.where(e.eq(y, -0.5), e.div(1, root), power))]


elementwise("pow", _pow_ref, _pow_vjp, "fg_pow({0}, {1})", rewrite=_pow_rewrite,
            extra={"unpack_order": (("in", 1), ("in", 0), ("out", 0))})        # exponent, self, result


# ------------------------------------------------------------------ pow with a Python number
# torch's pow(Tensor, Scalar) and pow(Scalar, Tensor) take a Python number as a double. The
# tracer passes it so: a float64 0-d input (a runtime operand, as pow's: a new exponent
# compiles nothing). Measured against torch 2.13 on float32 tensors:
# - pow_number(x, number; tail) = x ** number. torch's CPU kernel runs whole blocks of 32
#   elements (16 on an AVX2 machine: ir/torch_cpu.py) with the exponent rounded to float32
#   (Sleef's powf), and the elements after the last whole block with the double one
#   (std::pow(float, double)): a tensor shorter than a block is all tail ((-1.) ** 1.00000001
#   is nan, 1e20 ** (1/3) is 4641589, not 4641591).
#   The tracer sets `tail` for such tensors; a longer one takes the float32 exponent (the
#   tail of a longer tensor is the difference left). Its gradient is torch's
#   grad * (exponent * x ** (exponent - 1)), exponent - 1 taken in double.
# - number_pow(number, x) = number ** x. torch rounds the number to x's dtype for the power;
#   its gradient is grad * (result * log(number)) with the log taken in double (of the
#   rounded number, 1.0001 ** x's gradient was 1.7e-4 off).
def _number_infer(name: str, tensor_at: int):
    def infer(types, attrs):
        t, number = types[tensor_at], types[1 - tensor_at]
        if not t.dtype.is_floating_point or number.ndim or number.dtype.name != "float64":
            raise TypeError(f"{name}: expected a floating point tensor and a float64 0-d number, got "
                            f"{types[0].dtype.name} and {types[1].dtype.name}")
        return [TensorType(t.shape, t.dtype)]
    infer.elementwise_rule = True           # (OpDef.pointwise)
    return infer


def _pow_number_ref(x, number, tail):
    if tail and x.dtype == np.float32 and float(number) not in _POW_CONST_REFS:
        # (torch takes its multiplies and roots for those first, in the tensor's dtype)
        return np.power(x.astype(np.float64), number).astype(np.float32)
    return _pow_ref(x, np.asarray(number, x.dtype))


def _pow_number_vjp(e, x, y, g, a, n):
    base, number = x
    # (the masks as pow's for a 0-d exponent: zeros for exponent 0, and x ** 1 in place of
    # x ** -1 there, which keeps the second derivative at x = 0 finite)
    zero = e.eq(number, 0)
    power = e.op("pow_number", base, e.where(zero, 1, e.sub(number, 1)), tail=a["tail"])
    return [e.mul(e.where(zero, 0, g[0]), e.where(zero, 0, e.mul(e.cast(number, base.dtype), power)))
            if n[0] else None, None]


def _pow_number_decompose(e, xs, a):
    x, number = xs
    if a["tail"] and x.dtype.np == np.float32:
        return [e.cast(e.op("pow", e.cast(x, number.dtype), number), x.dtype)]
    return [e.op("pow", x, e.cast(number, x.dtype))]


register(OpDef("pow_number", COMPOSITE, _number_infer("pow_number", 0), _pow_number_ref, _pow_number_vjp,
               decompose=_pow_number_decompose, nondiff_inputs=(1,), extra={"scalar_attributes": (1,)},
               doc="pow_number(x, number; tail): x ** a Python number, as torch's pow(Tensor, Scalar)"))


def _number_pow_ref(number, x):
    return _pow_ref(np.asarray(number, x.dtype), x)


def _number_pow_vjp(e, x, y, g, a, n):
    number, exponent = x
    if not n[1]:
        return [None, None]
    # torch: grad * where(base == 0 & exponent >= 0, 0, result * log(base))
    mask = e.logical_and(e.eq(number, 0), e.ge(exponent, 0))
    return [None, e.mul(g[0], e.where(mask, 0, e.mul(y[0], e.cast(e.log(number), exponent.dtype))))]


register(OpDef("number_pow", COMPOSITE, _number_infer("number_pow", 1), _number_pow_ref, _number_pow_vjp,
               decompose=lambda e, xs, a: [e.op("pow", e.cast(xs[0], xs[1].dtype), xs[1])],
               nondiff_inputs=(0,), extra={"scalar_attributes": (0,)},
               doc="number_pow(number, x): a Python number ** x, as torch's pow(Scalar, Tensor)"))


# pow_const(x; exponent): x ** exponent for the exponents torch's pow(Tensor, Scalar) computes
# by multiplies and square roots (ones, x, x*x, x*x*x, 1/x, 1/(x*x), sqrt(x), 1/sqrt(x); bit for bit,
# with sqrt's special values: (-inf) ** 0.5 is nan, (-0.) ** 0.5 is -0.). The tracer records a
# float tensor to such a Python exponent with it, as PowBackward0; the exponent is an
# attribute (part of the program's structure), so the kernel multiplies instead of calling
# fg_pow (~5x the work). Any other exponent stays a runtime operand of `pow`. A bool exponent
# is 0.0 or 1.0 with `bool_exponent` set: torch's general gradient formula, not exponent 0's zeros.
POW_CONST_EXPONENTS = (0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, -0.5)


_POW_CONST_REFS = {
    0.0: lambda x, one: np.ones_like(x), 1.0: lambda x, one: x.copy(), 2.0: lambda x, one: x * x,
    3.0: lambda x, one: x * x * x, -1.0: lambda x, one: one / x, -2.0: lambda x, one: one / (x * x),
    0.5: lambda x, one: np.sqrt(x), -0.5: lambda x, one: one / np.sqrt(x),
}


def _pow_const_ref(x, exponent, bool_exponent=False):
    return _POW_CONST_REFS[exponent](x, x.dtype.type(1))


def _pow_const_rewrite(e, xs, attrs, graph):
    """The same arithmetic in kernel ops (so kernels multiply and divide)."""
    x, n = xs[0], attrs["exponent"]
    if n == 0.0:
        return [e.expand(e.const(1, x), x.shape)]
    if n == 1.0:
        return [x]
    if n in (2.0, 3.0, -2.0):
        square = e.mul(x, x)
        return [square if n == 2.0 else e.mul(square, x) if n == 3.0 else e.div(1, square)]
    return [e.div(1, x) if n == -1.0 else e.sqrt(x) if n == 0.5 else e.div(1, e.sqrt(x))]


def pow_const_applies(dtype, exponent) -> bool:
    """Whether `x ** exponent` (a number) of a `dtype` tensor is pow_const rather than pow."""
    return dtype.is_floating_point and float(exponent) in POW_CONST_EXPONENTS


def pow_const_or_pow(e, x, exponent: float):
    """x ** exponent in IR: pow_const where it applies, else pow with a constant exponent."""
    if pow_const_applies(x.dtype, exponent):
        return e.op("pow_const", x, exponent=float(exponent))
    return e.pow(x, exponent)


def _pow_const_vjp(e, x, y, g, a, n):
    # torch's pow_backward: zeros for exponent 0 (no history), else
    # grad * (exponent * self.pow(exponent - 1)), in that order. A bool exponent (bool_exponent:
    # the tracer's x ** False, x ** True) is never equal to 0.0 there (Scalar::equal), so
    # x ** False takes the formula: 0 * x ** -1, NaN at x = 0.
    n_ = a["exponent"]
    if n_ == 0.0 and not a.get("bool_exponent"):
        # zeros that read x (torch's PowBackward0 saves self)
        return [e.zeros_reading(x[0], x[0])]
    return [e.mul(g[0], e.mul(n_, pow_const_or_pow(e, x[0], n_ - 1.0)))]


register(OpDef("pow_const", ELEMENTWISE, _infer_map("pow", float_only=True), _pow_const_ref, _pow_const_vjp,
               lambda t, a: f"fg_pow({t[0]}, {a['exponent']!r})", rewrite=_pow_const_rewrite,
               extra={"node": "PowBackward0"},
               doc="pow_const(x; exponent, bool_exponent=False): x ** exponent for exponent in 0, 1, 2, 3, -1, -2, "
                   "0.5, -0.5 (bool_exponent: a bool's 0 or 1, whose gradient is the general formula)"))


def _extremum_vjp(first_wins):
    # torch: ties share the gradient equally; the loser gets none.
    def vjp(e, x, y, g, a, n):
        half = e.div(g[0], 2)
        # (x[1] read first: torch's node unpacks its saved tensors by name, `other` before `self`,
        # which decides which one a version error names when both were changed)
        tie = e.eq(x[1], x[0])
        out = []
        for i, (me, other) in enumerate(((x[0], x[1]), (x[1], x[0]))):
            if not n[i]:
                out.append(None)
                continue
            lose = e.lt(me, other) if first_wins else e.gt(me, other)
            out.append(e.where(lose, 0, e.where(tie, half, g[0])))
        return out
    return vjp


# On a tie torch returns the first operand (maximum(-0., 0.) is -0.), NumPy the second: the
# references swap the operands (NaN propagates either way), as codegen's fg_maximum does.
def _maximum_ref(x, y):
    return np.maximum(y, x)


def _minimum_ref(x, y):
    return np.minimum(y, x)


elementwise("maximum", _maximum_ref, _extremum_vjp(True), "fg_maximum({0}, {1})",
            ref_into=lambda out, x, y: np.maximum(y, x, out=out))
elementwise("minimum", _minimum_ref, _extremum_vjp(False), "fg_minimum({0}, {1})",
            ref_into=lambda out, x, y: np.minimum(y, x, out=out))

# ------------------------------------------------------------------ transcendental
def _exp_rewrite(e, xs, attrs, graph):
    # exp(log_softmax(x)) is softmax(x). log_softmax's VJP reads exp of its output
    # (as torch's does); as softmax, once decomposed, it shares log_softmax's
    # exp(x - max) and its sum, so a kernel computes one exp per element, not two.
    src = graph.producer(xs[0])
    if src is not None and src.op == "log_softmax":
        return [e.op("softmax", src.inputs[0], **dict(src.attrs))]
    return None


# (exp, log, sin, cos, tanh: NumPy's, correctly rounded for float32 as torch's almost always
# are: ir/rounded.py)
# extra["nonpositive_form"]: the op computing the same bits, cheaper, for an argument known to be
# at most 0 (codegen/nonpositive_forms.py substitutes it in kernels).
elementwise("exp", rounded.exp, lambda e, x, y, g, a, n: [e.mul(g[0], y[0])], "fg_exp({0})", float_only=True,
            rewrite=_exp_rewrite, extra={"nonpositive_form": "exp_small", "sign": _never_negative})
# The code generator's exp of an argument known to be at most 0 (x - max(x)): fg_exp's bits,
# exact up to 43, without the scaling that the large arguments need. Never traced, so no VJP.
elementwise("exp_small", rounded.exp, None, "fg_exp_small({0})", float_only=True,
            doc="exp, computed in kernels where the argument is known to be at most 0",
            extra={"sign": _never_negative})
elementwise("log", rounded.log, lambda e, x, y, g, a, n: [e.div(g[0], x[0])], "fg_log({0})", float_only=True)
elementwise("sqrt", np.sqrt, lambda e, x, y, g, a, n: [e.div(g[0], e.mul(y[0], 2))], "fg_sqrt({0})",
            float_only=True, extra={"sign": _never_negative})
# extra["near_form"]: the op that computes the same in float32/float64 kernels with a cheaper
# reduction, exact only for |x| below a limit (codegen/trig_guard.py substitutes it, guarded).
elementwise("sin", rounded.sin, lambda e, x, y, g, a, n: [e.mul(g[0], e.cos(x[0]))], "fg_sin({0})",
            float_only=True, extra={"near_form": "sin_near"})
elementwise("cos", rounded.cos, lambda e, x, y, g, a, n: [e.mul(g[0], e.neg(e.sin(x[0])))], "fg_cos({0})",
            float_only=True, extra={"near_form": "cos_near"})
# The code generator's sin and cos for float kernels (codegen/trig_guard.py): a cheap
# range reduction, exact below 2**20, the pass guarding every use. Never traced, so no VJP.
elementwise("sin_near", rounded.sin, None, "fg_sin_near({0})", float_only=True,
            doc="sin, computed in kernels with a reduction exact for |x| < 2**20 (guarded)")
elementwise("cos_near", rounded.cos, None, "fg_cos_near({0})", float_only=True,
            doc="cos, computed in kernels with a reduction exact for |x| < 2**20 (guarded)")
# tanh, sigmoid and relu differentiate into torch's backward ops (below), so that a
# create_graph gradient records TanhBackwardBackward0 and so on, as torch's does.
elementwise("tanh", rounded.tanh, lambda e, x, y, g, a, n: [e.op("tanh_backward", g[0], y[0])],
            "fg_tanh({0})", float_only=True)
elementwise("sigmoid", _sigmoid_ref, lambda e, x, y, g, a, n: [e.op("sigmoid_backward", g[0], y[0])],
            "fg_sigmoid({0})", float_only=True, ref_into=_sigmoid_into)

# ------------------------------------------------------------------ piecewise
# torch's threshold_backward(grad, result, 0) (below): reading y, the gradient is
# differentiable (requires_grad under create_graph), as in torch.
def fresh_result(into):
    """An op's reference from its writer `into(out, *arrays, **attrs)`: into a new array of
    the operands' broadcast shape and (common) dtype."""
    def ref(*arrays, **attrs):
        # (one operand: its shape; np.broadcast_shapes costs ~1.5 us, a small eager relu's third)
        shape = arrays[0].shape if len(arrays) == 1 else np.broadcast_shapes(*(a.shape for a in arrays))
        out = np.empty(shape, arrays[0].dtype)
        into(out, *arrays, **attrs)
        return out
    return ref


def _maximum_keeps_negative_zero() -> bool:
    """Whether np.maximum(0, x) gives x where x is -0.0 (and 0 for negatives, NaN for NaN) in
    NumPy's float loops here: its SIMD max returns the second operand of equal zeros (x86's
    maxps), where its scalar loop returns the first. Probed once, contiguous and strided, both
    float dtypes, short and long arrays."""
    for dtype in (np.float32, np.float64):
        for n in (1, 7, 64, 1000):
            x = np.zeros(2 * n, dtype)
            x[::2] = -0.0
            x[1::3] = -1.5
            x[-1] = np.nan
            for operand in (x, x[::2]):
                want = np.where(operand < 0, dtype(0), operand)
                got = np.maximum(dtype(0), operand)
                if not (np.array_equal(got, want, equal_nan=True) and
                        np.array_equal(np.signbit(got), np.signbit(want))):
                    return False
    return True


_MAXIMUM_KEEPS_NEGATIVE_ZERO = _maximum_keeps_negative_zero()


@threaded.in_row_blocks
def _relu_into(out, x):
    """torch's relu, where(x < 0, 0, x), into `out`: 0 for negatives, x itself otherwise (NaN
    and -0.0 included). np.maximum is 8x faster than np.where or a masked copy on a random
    sign (0.24 against 1.9 ms on 512k float32); np.maximum(0, x) keeps -0.0 where NumPy's max
    returns its second operand of equal zeros (probed at import); elsewhere zeros are copied
    back from x, when there are any."""
    zero = x.dtype.type(0)
    if _MAXIMUM_KEEPS_NEGATIVE_ZERO and x.dtype.kind == "f":
        np.maximum(zero, x, out=out)
        return
    np.maximum(x, zero, out=out)
    if x.dtype.kind == "f":
        zeros = x == 0
        if zeros.any():
            np.copyto(out, x, where=zeros)


elementwise("relu", fresh_result(_relu_into),
            lambda e, x, y, g, a, n: [e.op("threshold_backward", g[0], y[0])], "fg_relu({0})",
            bool_error=RuntimeError("Boolean inputs not supported for relu"), ref_into=_relu_into,
            extra={"sign": _never_negative})
elementwise("abs", np.abs, lambda e, x, y, g, a, n: [e.mul(g[0], e.sign(x[0]))], "abs({0})",
            bool_error=NotImplementedError("\"abs_cpu\" not implemented for 'Bool'"),
            extra={"sign": _never_negative})
# sign is piecewise constant: its gradient is zeros (+0.0 whatever the cotangent, NaN
# too) that depend on nothing, as torch's sgn_backward (a ZeroTensor, no history).
def _sign_ref(x):
    if x.dtype == np.bool_:
        return x.copy()                  # torch: the sign of a bool is itself
    s = np.sign(x)
    return np.where(np.isnan(s), 0, s).astype(x.dtype) if x.dtype.kind == "f" else s   # torch: sign(nan) = 0


elementwise("sign", _sign_ref, lambda e, x, y, g, a, n: [e.zero_gradient(g[0])], "fg_sign({0})")


def _clamp_vjp(e, x, y, g, a, n):
    # torch's clamp_backward and clamp_backward_min_max: x's gradient where it lies in
    # [lo, hi]; lo's where x < lo < hi; hi's where x > hi, or hi < lo (hi wins then).
    v, lo, hi = x
    inside = e.logical_and(e.ge(v, lo), e.le(v, hi))
    g_lo = e.where(e.logical_and(e.lt(v, lo), e.lt(lo, hi)), g[0], 0) if n[1] else None
    if n[2]:
        above, crossed = e.op("logical_not", e.gt(v, hi)), e.op("logical_not", e.lt(hi, lo))
        g_hi = e.where(e.op("logical_not", e.logical_and(above, crossed)), g[0], 0)     # x > hi or hi < lo
    else:
        g_hi = None
    return [e.where(inside, g[0], 0) if n[0] else None, g_lo, g_hi]


def _clamp_ref(x, lo, hi):
    # torch: min wins over max when min > max; NaN propagates. On a tie x is kept (clamp(-0.0,
    # min=0.0) is -0.0, as torch's clamp with number bounds and codegen's fg_clamp): NumPy's
    # maximum/minimum return their second operand on a tie, so x goes second.
    return np.minimum(hi, np.maximum(lo, x))


elementwise("clamp", _clamp_ref, _clamp_vjp, "fg_clamp({0}, {1}, {2})",
            extra={"unpack_order": (("in", 2), ("in", 1), ("in", 0))})     # torch's max, min, self


# clamp with one tensor bound (torch's clamp_backward_min_max with the other bound undefined):
# x's gradient where x >= min (x <= max), the bound's where x < min (x > max). Ties keep x, as
# clamp's reference and fg_maximum/fg_minimum do (x is their first operand).
# (The bound is read first, as torch's node unpacks its saved tensors by name, `min`/`max`
# before `self`: that decides which one a version error names when both were changed.)
def _clamp_min_vjp(e, x, y, g, a, n):
    v, lo = x
    return [e.where(e.le(lo, v), g[0], 0) if n[0] else None, e.where(e.gt(lo, v), g[0], 0) if n[1] else None]


def _clamp_max_vjp(e, x, y, g, a, n):
    v, hi = x
    return [e.where(e.ge(hi, v), g[0], 0) if n[0] else None, e.where(e.lt(hi, v), g[0], 0) if n[1] else None]


# (torch_edges: torch's ClampBackward0 lists (self, min, max), the absent bound as (None, 0))
elementwise("clamp_min", lambda x, lo: np.maximum(lo, x), _clamp_min_vjp, "fg_maximum({0}, {1})",
            doc="clamp_min(x, lo): clamp with a tensor lower bound only", extra={"torch_edges": (0, 1, None)})
elementwise("clamp_max", lambda x, hi: np.minimum(hi, x), _clamp_max_vjp, "fg_minimum({0}, {1})",
            doc="clamp_max(x, hi): clamp with a tensor upper bound only", extra={"torch_edges": (0, None, 1)})


def _where_infer(types, attrs):
    c, x, y = types
    if c.dtype is not bool_:
        raise TypeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {c.dtype.name}")
    if x.dtype is not y.dtype:
        raise TypeError(f"where: operands must share a dtype, got {x.dtype.name} and {y.dtype.name}")
    return [TensorType(broadcast_shapes(c.shape, x.shape, y.shape), x.dtype)]


register(OpDef("where", ELEMENTWISE, _where_infer, np.where,
               lambda e, x, y, g, a, n: [None,
                                         e.where(x[0], g[0], 0) if n[1] else None,
                                         e.where(x[0], 0, g[0]) if n[2] else None],
               "({1} if {0} else {2})", extra={"select": True}))

def _masked_fill_infer(types, attrs):
    x, mask, value = types
    if mask.dtype is not bool_:
        raise TypeError(f"masked_fill expected a boolean mask, got {mask.dtype.name}")
    if value.dtype is not x.dtype or value.shape:
        raise TypeError(f"masked_fill: the value must be a 0-d {x.dtype.name} operand, got {value}")
    return [TensorType(broadcast_shapes(mask.shape, x.shape), x.dtype)]     # (torch names the mask a)


# masked_fill(x, mask, value): torch's operand order (self first), so an in-place write
# through a view replays it on the base as any in-place op; value is 0-d, of x's dtype.
# torch's out-of-place masked_fill fills a row-major clone: x.t().masked_fill(m, 0) is row-major.
register(OpDef("masked_fill", ELEMENTWISE, _masked_fill_infer, lambda x, mask, value: np.where(mask, value, x),
               lambda e, x, y, g, a, n: [e.where(x[1], 0, g[0]) if n[0] else None, None,
                                         e.where(x[1], g[0], 0) if n[2] else None],
               "({2} if {1} else {0})", extra={"row_major_result": True}))

# ------------------------------------------------------------------ torch's backward ops
# The VJPs of tanh, sigmoid and relu, as the ops torch's own backward calls
# (tanh_backward, sigmoid_backward, threshold_backward): a gradient built with
# create_graph records their nodes (TanhBackwardBackward0, ...), and differentiating
# it again applies torch's double-backward formulas. Composites: the scheduler
# decomposes them into the elementwise ops they stand for, so kernels are unchanged.
def backward_op(name, ref, vjp, decompose, doc, ref_into=None):
    """Declare a composite `name(grad, result)` of one shape and floating dtype; `ref_into(out,
    grad, result)`: its reference writing into given memory (ir/buffers.py), if it has one."""
    return register(OpDef(name, COMPOSITE, _infer_map(name, float_only=True), ref, vjp, decompose=decompose,
                          doc=doc, extra={"ref_into": ref_into} if ref_into else {}))


# torch's reciprocal (`2 / x` records reciprocal(x) * 2): its VJP reads the result, which
# torch saves, so a later in-place change of x does not invalidate it as div(1, x)'s would.
register(OpDef("reciprocal", COMPOSITE, _infer_map("reciprocal", float_only=True), np.reciprocal,
               lambda e, x, y, g, a, n: [e.mul(g[0], e.neg(e.mul(y[0], y[0])))],
               decompose=lambda e, xs, a: [e.div(e.const(1, xs[0]), xs[0])], doc="1 / x"))


def _tanh_backward_vjp(e, x, y, g, a, n):
    # torch: grad_output -> tanh_backward(grad, output); output -> grad * (-2 * output * grad_output)
    grad, out = x
    return [e.op("tanh_backward", g[0], out) if n[0] else None,
            e.mul(g[0], e.mul(e.mul(out, -2), grad)) if n[1] else None]


def _sigmoid_backward_vjp(e, x, y, g, a, n):
    # torch: grad_output -> sigmoid_backward(grad, output); output -> grad * grad_output * (-2 * output + 1)
    grad, out = x
    return [e.op("sigmoid_backward", g[0], out) if n[0] else None,
            e.mul(e.mul(g[0], grad), e.add(e.mul(out, -2), 1)) if n[1] else None]


def _threshold_backward_vjp(e, x, y, g, a, n):
    # torch: grad_output -> threshold_backward(grad, self, threshold); self -> zeros
    return [e.op("threshold_backward", g[0], x[1]) if n[0] else None, e.zeros_like(x[1]) if n[1] else None]


@threaded.in_row_blocks
def _threshold_backward_into(out, grad, result):
    """torch's threshold_backward(grad, result, 0) into `out`: +0.0 where result <= 0, else
    the gradient (a NaN result passes it), bit for bit as where(result <= 0, 0, grad): the
    gradient's bits, as integers, times the 0/1 mask of what passes. np.where (or a masked
    copy) takes 9x as long on a random mask (1.9 against 0.2 ms on 512k float32)."""
    passes = np.less_equal(result, 0)
    if type(passes) is np.ndarray:
        np.logical_not(passes, out=passes)
    else:                                   # 0-d operands give a NumPy scalar
        passes = not passes
    ints = np.dtype(f"i{grad.dtype.itemsize}")
    np.multiply(grad.view(ints), passes, out=out.view(ints))


# The references below work in place in their output (on large arrays each temporary is
# another allocation and pass over memory); products are commutative in IEEE arithmetic,
# so the values are torch's order's bit for bit.
@threaded.in_row_blocks
def _tanh_backward_into(out, g, y):
    if y.dtype.char == "f" and y.size <= rounded.EXACT_UP_TO:
        # torch's kernel contracts 1 - y * y into one fused multiply-add (rounded once): in
        # float64 the product of two float32s and its difference from 1 are exact, so one
        # rounding to float32 gives the FMA's value (bit for bit torch's; two roundings
        # differed for 56% of arguments, most near |y| = 1, where 1 - y * y cancels). As
        # for the transcendentals, a large operand keeps float32 (4 passes more over memory).
        wide = y.astype(np.float64)
        np.multiply(wide, wide, out=wide)
        np.subtract(1.0, wide, out=wide)
        np.copyto(out, wide, casting="same_kind")
    else:
        np.multiply(y, y, out=out)
        np.subtract(y.dtype.type(1), out, out=out)
    out *= g                            # g * (1 - y * y)


@threaded.in_row_blocks
def _sigmoid_backward_into(out, g, y):
    np.subtract(y.dtype.type(1), y, out=out)
    out *= g
    out *= y                            # (g * (1 - y)) * y


backward_op("tanh_backward", fresh_result(_tanh_backward_into), _tanh_backward_vjp,
            lambda e, xs, a: [e.mul(xs[0], e.sub(1, e.mul(xs[1], xs[1])))],
            "tanh_backward(grad, result): grad * (1 - result**2)", ref_into=_tanh_backward_into)
backward_op("sigmoid_backward", fresh_result(_sigmoid_backward_into), _sigmoid_backward_vjp,
            lambda e, xs, a: [e.mul(e.mul(xs[0], e.sub(1, xs[1])), xs[1])],
            "sigmoid_backward(grad, result): grad * (1 - result) * result, in torch's order",
            ref_into=_sigmoid_backward_into)
backward_op("threshold_backward", fresh_result(_threshold_backward_into), _threshold_backward_vjp,
            lambda e, xs, a: [e.where(e.le(xs[1], 0), 0, xs[0])],
            "threshold_backward(grad, result): relu's gradient, 0 where result <= 0",
            ref_into=_threshold_backward_into)

# ------------------------------------------------------------------ graft
def _graft_vjp(e, x, y, g, a, n):
    return [None, g[0] if n[1] else None]      # the gradient path is the source's


elementwise("graft", lambda value, source: np.array(value, copy=True), _graft_vjp, "{0}", nondiff_inputs=(0,),
            doc="graft(value, source): value's values on source's gradient path. Inside a trace, an "
                "in-place write through `source.detach()` changes source's value but not its history, as "
                "it does eagerly (where the two share memory)")


# ------------------------------------------------------------------ comparisons and logic
for _name, _ref, _sym in (("lt", np.less, "<"), ("le", np.less_equal, "<="), ("gt", np.greater, ">"),
                          ("ge", np.greater_equal, ">="), ("eq", np.equal, "=="), ("ne", np.not_equal, "!=")):
    elementwise(_name, _ref, None, "({0} %s {1})" % _sym, result=bool_,
                extra={"monotone": True} if _name in ("lt", "le", "gt", "ge") else None)
# Branch-free forms, so loops using them vectorise.
elementwise("logical_and", np.logical_and, None, "(({0} != 0) & ({1} != 0))", result=bool_)
# Bitwise ops of integers and bools (torch's NotImplementedError for floats comes from the tracer).
for _name, _ref, _sym in (("bitwise_and", np.bitwise_and, "&"), ("bitwise_or", np.bitwise_or, "|"),
                          ("bitwise_xor", np.bitwise_xor, "^")):
    elementwise(_name, _ref, None, "({0} %s {1})" % _sym, integer_only=True,
                doc=f"{_name}(a, b): a {_sym} b of integers or bools")


# Shifts of int64, as torch's kernels: a shift count outside [0, 64) gives 0 (left) or the sign
# (right: a >> 63); NumPy's and LLVM's shifts are undefined there, so the count is clamped first.
def _lshift_ref(a, b):
    valid = (b >= 0) & (b < 64)
    return np.where(valid, np.left_shift(a, np.where(valid, b, 0)), 0).astype(a.dtype)


def _rshift_ref(a, b):
    return np.right_shift(a, np.where((b >= 0) & (b < 63), b, 63)).astype(a.dtype)


for _name, _ref, _cpu in (("lshift", _lshift_ref, "lshift_cpu"), ("rshift", _rshift_ref, "rshift_cpu")):
    elementwise(_name, _ref, None, f"fg_{_name}({{0}}, {{1}})", integer_only=True,
                bool_error=NotImplementedError(f"\"{_cpu}\" not implemented for 'Bool'"),
                doc=f"{_name}(a, b): torch's int64 shift (0 or the sign beyond 63 or below 0)")
elementwise("logical_not", np.logical_not, None, "({0} == 0)", result=bool_)


# ------------------------------------------------------------------ casts
def _cast_infer(types, attrs):
    return [TensorType(types[0].shape, attrs["dtype"])]


def _cast_vjp(e, x, y, g, a, n):
    return [e.cast(g[0], x[0].dtype) if x[0].dtype.is_floating_point else None]


def _cast_expr(args, attrs) -> str:
    # to int64 by fg_to_int64: torch's value (INT64_MIN) for an inf or nan computed in the kernel
    if attrs["dtype"].np.name == "int64":
        return f"fg_to_int64({args[0]})"
    return f"np.{attrs['dtype'].np.name}({args[0]})"


def _cast_rewrite(e, xs, attrs, graph):
    """A cast to the dtype its operand has is the operand itself where the program does not
    return it. The trace makes such identities to keep gradients apart (a tensor and its
    detach() over one memory, a differentiated argument's stand-in); run, each was a copy,
    materialised where two kernels read it: softmax over a transposed argument read the
    argument, wrote the copy, then read the copy. A returned one stays a copy: clone()."""
    if attrs["dtype"] is not xs[0].dtype or graph.returned(0):
        return None
    return [xs[0]]


register(OpDef("cast", ELEMENTWISE, _cast_infer, lambda x, dtype: x.astype(dtype.np), _cast_vjp, _cast_expr,
               rewrite=_cast_rewrite))


# ------------------------------------------------------------------ sources
def _const_infer(types, attrs):
    return [TensorType(tuple(attrs["shape"]), attrs["dtype"])]


def _const_ref(value, dtype, shape):
    return np.full(shape, value, dtype=dtype.np)


def _const_expr(args, attrs):
    dtype, value = attrs["dtype"], attrs["value"]
    if dtype is bool_:
        return "True" if value else "False"
    if dtype.is_floating_point:
        v = float(value)
        text = repr(v) if np.isfinite(v) else ("np.nan" if np.isnan(v) else ("np.inf" if v > 0 else "-np.inf"))
    else:
        text = repr(int(value))
    return f"np.{dtype.np.name}({text})"


register(OpDef("const", SOURCE, _const_infer, _const_ref, None, _const_expr,
               doc="const(; value, dtype, shape): a tensor filled with a Python number"))


def _iota_ref(shape, axis, dtype):
    # A read-only broadcast of one arange: the ops reading it (a max's gradient compares it
    # with the argmax) then read a row, not a [4096, 1024] int64 array of 32 MiB (eager
    # x.max(1) value-and-grad 10.4 -> 8.1 ms). Nothing writes into an op's operand.
    idx = np.arange(shape[axis], dtype=dtype.np)
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return np.broadcast_to(idx.reshape(view), shape)


register(OpDef("iota", SOURCE, _const_infer, _iota_ref, None,
               lambda args, attrs: f"np.{attrs['dtype'].np.name}(i{attrs['axis']})",
               doc="iota(; shape, axis, dtype): each element's index along `axis`",
               extra={"position_along": "axis"}))
