"""More elementwise functions: expm1, log1p, silu, softplus, leaky_relu and elu, each with
torch's formula (the order of its operations decides the rounding) and its backward
formula as the VJP (softplus, leaky_relu and elu: torch's backward ops, softplus_backward,
leaky_relu_backward and elu_backward, with torch's double-backward formulas); kernels use
codegen's vectorisable expm1/log1p/exp."""
from __future__ import annotations

import numpy as np

from .. import rounded, torch_cpu
from .elementwise import _infer_map, elementwise
from .registry import COMPOSITE, OpDef, register

# torch's expm1_backward: grad * (result + 1); log1p_backward: grad / (self + 1)
# (float32 eager results correctly rounded, as torch's: ir/rounded.py)
elementwise("expm1", rounded.RoundedUfunc(np.expm1), lambda e, x, y, g, a, n: [e.mul(g[0], e.add(y[0], 1))], "fg_expm1({0})",
            float_only=True)
elementwise("log1p", rounded.RoundedUfunc(np.log1p), lambda e, x, y, g, a, n: [e.div(g[0], e.add(x[0], 1))], "fg_log1p({0})",
            float_only=True)


def _silu_ref(x):
    one = x.dtype.type(1)
    return x / (one + np.exp(-x))


def _silu_vjp(e, x, y, g, a, n):
    # torch's silu_backward: grad * sigmoid(x) * (1 + x * (1 - sigmoid(x)))
    s = e.sigmoid(x[0])
    return [e.mul(e.mul(g[0], s), e.add(e.mul(x[0], e.sub(1, s)), 1))]


register(OpDef("silu", COMPOSITE, _infer_map("silu", float_only=True), _silu_ref, _silu_vjp,
               decompose=lambda e, xs, a: [e.div(xs[0], e.add(e.exp(e.neg(xs[0])), 1))],
               doc="silu(x): x / (1 + exp(-x)), torch's formula"))


def _softplus_ref(x, beta, threshold):
    # torch's CPU kernel: x where x * beta > threshold, else log1p(exp(x * beta)) / beta
    beta, threshold = x.dtype.type(beta), x.dtype.type(threshold)
    scaled = x * beta
    return np.where(scaled > threshold, x, np.log1p(np.exp(scaled)) / beta).astype(x.dtype)


def _softplus_vjp(e, x, y, g, a, n):
    # torch's softplus_backward(grad, self, beta, threshold), as its op: a create_graph gradient
    # records SoftplusBackwardBackward0 and differentiates by torch's double-backward formula
    return [e.op("softplus_backward", g[0], x[0], beta=a["beta"], threshold=a["threshold"])]


def _softplus_backward_ref(grad, x, beta, threshold):
    # torch's CPU kernel: z = exp(x * beta); x * beta > threshold ? grad : grad * z / (z + 1)
    beta, threshold = x.dtype.type(beta), x.dtype.type(threshold)
    scaled = x * beta
    z = np.exp(scaled)
    return np.where(scaled > threshold, grad, grad * z / (z + 1)).astype(grad.dtype)


def _softplus_backward_vjp(e, x, y, g, a, n):
    # torch: grad_output -> softplus_backward(grad, self, beta, threshold); self ->
    # softplus_double_backward(grad * grad_output, self, beta, threshold), that is
    # sigmoid_backward(grad * grad_output, sigmoid(self * beta)) * (self * beta < threshold) * beta:
    # finite past the threshold, where exp(self * beta) overflows
    grad, inp = x
    first = e.op("softplus_backward", g[0], inp, beta=a["beta"], threshold=a["threshold"]) if n[0] else None
    second = None
    if n[1]:
        scaled = e.mul(inp, a["beta"])
        curve = e.op("sigmoid_backward", e.mul(g[0], grad), e.sigmoid(scaled))
        second = e.mul(e.where(e.lt(scaled, a["threshold"]), curve, 0), a["beta"])
    return [first, second]


def _softplus_backward_decompose(e, xs, a):
    grad, x = xs
    scaled = e.mul(x, a["beta"])
    z = e.exp(scaled)
    return [e.where(e.gt(scaled, a["threshold"]), grad, e.div(e.mul(grad, z), e.add(z, 1)))]


register(OpDef("softplus_backward", COMPOSITE, _infer_map("softplus_backward", float_only=True),
               _softplus_backward_ref, _softplus_backward_vjp, decompose=_softplus_backward_decompose,
               doc="softplus_backward(grad, self; beta, threshold): softplus's gradient, torch's formula"))


def _softplus_decompose(e, xs, a):
    x = xs[0]
    scaled = e.mul(x, a["beta"])
    return [e.where(e.gt(scaled, a["threshold"]), x, e.div(e.op("log1p", e.exp(scaled)), a["beta"]))]


register(OpDef("softplus", COMPOSITE, _infer_map("softplus", float_only=True), _softplus_ref, _softplus_vjp,
               decompose=_softplus_decompose,
               doc="softplus(x; beta, threshold): log1p(exp(x * beta)) / beta, x itself past the threshold"))


def _leaky_relu_ref(x, slope):
    return np.where(x > 0, x, x * slope).astype(x.dtype)


def _leaky_relu_vjp(e, x, y, g, a, n):
    # torch's leaky_relu_backward(grad, self, negative_slope), as its op: a create_graph
    # gradient records LeakyReluBackwardBackward0 (with history whenever self requires grad)
    return [e.op("leaky_relu_backward", g[0], x[0], x[1]) if n[0] else None, None]


elementwise("leaky_relu", _leaky_relu_ref, _leaky_relu_vjp, "({0} if {0} > 0 else {0} * {1})", float_only=True)


def _leaky_relu_backward_ref(grad, x, slope):
    # torch: self > 0 ? grad : grad * negative_slope
    return np.where(x > 0, grad, grad * slope).astype(grad.dtype)


def _leaky_relu_backward_vjp(e, x, y, g, a, n):
    # torch: grad_output -> leaky_relu_backward(grad, self, negative_slope); self -> zeros
    return [e.op("leaky_relu_backward", g[0], x[1], x[2]) if n[0] else None,
            e.zeros_like(x[1]) if n[1] else None, None]


register(OpDef("leaky_relu_backward", COMPOSITE, _infer_map("leaky_relu_backward", float_only=True),
               _leaky_relu_backward_ref, _leaky_relu_backward_vjp,
               decompose=lambda e, xs, a: [e.where(e.gt(xs[1], 0), xs[0], e.mul(xs[0], xs[2]))],
               nondiff_inputs=(2,),
               doc="leaky_relu_backward(grad, self, slope): leaky_relu's gradient, grad * slope where self <= 0"))


def _elu_ref(x, alpha, from_result=False):
    # torch's elu kernel (its vectorised form, which takes every size): x >= 0 ? x :
    # expm1(x) * alpha; so zeros keep their sign whatever alpha's
    with np.errstate(over="ignore"):
        return np.where(x >= 0, x, np.expm1(x) * alpha).astype(x.dtype)


def _elu_vjp(e, x, y, g, a, n):
    # torch's elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result), as its
    # op: from the input (EluBackward0), or from the result of an in-place elu_ (EluBackward1);
    # a create_graph gradient records EluBackwardBackward0
    if not n[0]:
        return [None, None]
    source = y[0] if a.get("from_result") else x[0]
    return [e.op("elu_backward", g[0], source, x[1], from_result=bool(a.get("from_result"))), None]


def _elu_scalar_formula(shape, dtype) -> bool:
    """Does torch's elu_backward take its scalar formula for all of a tensor of `shape`, one
    shorter than a block of its vectorised loop (ir/torch_cpu.py)? The two differ at a NaN
    source: the scalar `source <= 0 ? scaled : grad` passes the gradient through, the vector
    `blendv(scaled, grad, source > 0)` gives the scaled NaN."""
    return int(np.prod(shape)) < torch_cpu.block_elements(dtype)


def _elu_backward_ref(grad, source, alpha, from_result=False):
    # torch's kernel: source <= 0 ? (from the result) grad * (result + alpha), (from the input)
    # grad * alpha * exp(x) : grad. At a NaN source, its formula for the element's place: the
    # vector one in the whole blocks of a contiguous tensor (NaN), the scalar one in the tails
    # (of the tensor, of each thread's chunk) and for a strided tensor (the gradient).
    # (Compiled kernels decide by the length alone: _elu_backward_decompose.)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = grad * (source + alpha) if from_result else grad * alpha * np.exp(source)
        negative = source <= 0
        nan = np.isnan(source)
        if nan.any() and source.flags.c_contiguous and grad.shape == source.shape:
            negative, nan = negative.reshape(-1).copy(), nan.reshape(-1)
            for lo, hi in torch_cpu.vector_ranges(source.size, source.dtype):
                negative[lo:hi] |= nan[lo:hi]
            negative = negative.reshape(source.shape)
        return np.where(negative, scaled, grad).astype(grad.dtype)


def _elu_backward_decompose(e, xs, a):
    # (a NaN source: torch's formula by the tensor's length, not by the element's place: a
    # kernel does not know an element's place in torch's loop; a long tensor's tail differs)
    grad, source, alpha = xs
    scaled = e.mul(grad, e.add(source, alpha)) if a["from_result"] else e.mul(e.mul(grad, alpha), e.exp(source))
    if _elu_scalar_formula(source.type.shape, source.type.dtype.np):
        return [e.where(e.le(source, 0), scaled, grad)]
    return [e.where(e.gt(source, 0), grad, scaled)]


def _elu_backward_vjp(e, x, y, g, a, n):
    # torch: grad_output -> elu_backward(grad, ..., self_or_result); self_or_result ->
    # elu_double_backward: from the result, grad * grad_output * (result < 0); from the input,
    # elu_backward(grad * grad_output, ..., self) * (self < 0)
    grad, source, alpha = x
    first = e.op("elu_backward", g[0], source, alpha, from_result=a["from_result"]) if n[0] else None
    second = None
    if n[1]:
        negative = e.cast(e.lt(source, 0), source.type.dtype)
        product = e.mul(g[0], grad)
        second = e.mul(product if a["from_result"] else
                       e.op("elu_backward", product, source, alpha, from_result=False), negative)
    return [first, second, None]


register(OpDef("elu_backward", COMPOSITE, _infer_map("elu_backward", float_only=True), _elu_backward_ref,
               _elu_backward_vjp, decompose=_elu_backward_decompose, nondiff_inputs=(2,),
               doc="elu_backward(grad, self_or_result, alpha; from_result): elu's gradient, torch's formula"))


elementwise("elu", _elu_ref, _elu_vjp, "({0} if {0} >= 0 else fg_expm1({0}) * {1})", float_only=True,
            nondiff_inputs=(1,), doc="elu(x, alpha; from_result): x where x >= 0, else alpha * expm1(x)")
