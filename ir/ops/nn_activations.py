"""torch.nn's activations and pointwise losses that torch records as a node of their own
(HardtanhBackward0, MishBackward0, GluBackward0, SmoothL1LossBackward0, ...).

Each op's formula is written once, in Emitter calls (torch's formula, in its order of
operations): the same function is the op's `decompose` (run on an `Emitter`, so kernels fuse
it) and its NumPy reference (run on `_ARRAYS`, an Emitter whose ops are the existing ops'
references: torch's correctly rounded exp, tanh, log1p...). The VJPs are torch's backward
formulas, written in IR ops (so they differentiate again: a create_graph gradient records
those ops' nodes, not torch's `*BackwardBackward0`).

A loss op takes `reduction` ('none', 'sum', 'mean') as an attribute, so the reduced loss
is one node, as torch's.
"""
from __future__ import annotations

import numpy as np

from ..types import TensorType
from .elementwise import _infer_map
from .registry import COMPOSITE, OPS, OpDef, register


def _array_emitter():
    """An Emitter whose methods run on NumPy arrays, each op by its reference implementation
    (made on first use: ir.emit imports the op table)."""
    from ..emit import Emitter

    class ArrayEmitter(Emitter):
        def __init__(self):
            self.b = None
            self.loc = None

        def op(self, name, *inputs, **attrs):
            return np.asarray(OPS[name].ref(*inputs, **attrs))

        def const(self, value, like, shape=()):
            return np.full(tuple(shape), value, dtype=_np_dtype(like))

        def cast(self, x, dtype):
            dtype = _np_dtype(dtype)
            return x if x.dtype == dtype else x.astype(dtype)

        def _pair(self, x, y):
            if not isinstance(x, np.ndarray):
                x = np.asarray(x, dtype=y.dtype)
            if not isinstance(y, np.ndarray):
                y = np.asarray(y, dtype=x.dtype)
            return x, y

        def where(self, c, x, y):
            return np.asarray(np.where(c, *self._pair(x, y)))

    return ArrayEmitter()


def _np_dtype(like):
    """The NumPy dtype of an array, a Value, a DType or a NumPy dtype."""
    if isinstance(like, np.ndarray):
        return like.dtype
    dtype = getattr(like, "dtype", like)
    return np.dtype(getattr(dtype, "np", dtype))


_ARRAYS = []       # (the one array emitter, once made)


def _number(x, value):
    """`value` rounded to x's dtype, as torch's kernels take a Scalar (`to<scalar_t>()`)."""
    return float(_np_dtype(x).type(value))


def _arrays():
    if not _ARRAYS:
        _ARRAYS.append(_array_emitter())
    return _ARRAYS[0]


def _float_ref(forward):
    def ref(*arrays, **attrs):
        return forward(_arrays(), *arrays, **attrs)
    return ref


def _activation(name, forward, backward, doc, nondiff_inputs=(), piecewise=False, backward_name=None, extra=None):
    """Declare a pointwise op `name(x, *more; attrs)`: forward(e, *xs, **attrs) its value,
    backward(e, g, xs, y, **attrs) the gradients of xs (a list, None where there is none).
    `piecewise`: a piecewise-linear activation of one input, whose gradient is an op of its
    own, `name_backward` or `backward_name` (see _piecewise_backward). `extra`: OpDef.extra."""
    backward_name = backward_name or name + "_backward"
    if piecewise:
        _piecewise_backward(backward_name, backward)

    def vjp(e, xs, ys, gs, attrs, needs):
        if piecewise:
            source = ys[0] if attrs.get("from_result") else xs[0]
            return [e.op(backward_name, gs[0], source, **attrs)]
        grads = backward(e, gs[0], xs, ys[0], **attrs)
        return [gr if need else None for gr, need in zip(grads, needs)]
    return register(OpDef(name, COMPOSITE, _infer_map(name, float_only=True), _float_ref(forward), vjp,
                          decompose=lambda e, xs, a: [forward(e, *xs, **a)], nondiff_inputs=nondiff_inputs,
                          doc=doc, extra=extra or {}))


def _piecewise_backward(name, backward):
    """Declare `name(grad, source; attrs)`, a piecewise-linear activation's gradient (grad
    masked or scaled by the source's place), as torch's backward ops: linear in grad, of zero
    derivative in the source, but differentiable in it, so that a create_graph gradient
    requires grad as torch's (its node `*BackwardBackward0`) and differentiates to zeros."""
    def formula(e, g, source, **attrs):
        return backward(e, g, [source], source, **attrs)[0]

    def vjp(e, xs, ys, gs, attrs, needs):
        return [e.op(name, gs[0], xs[1], **attrs) if needs[0] else None,
                e.zeros_like(xs[1]) if needs[1] else None]
    # (torch's node: the op's name in CamelCase, threshold_value_backward's too, as relu's
    # threshold_backward has the name)
    node = "".join(part.title() for part in name.replace("_value", "").split("_")) + "Backward0"
    register(OpDef(name, COMPOSITE, _infer_map(name, float_only=True), _float_ref(formula), vjp,
                   decompose=lambda e, xs, a: [formula(e, *xs, **a)], doc=f"{name}(grad, source; attrs)",
                   extra={"node": node}))


# ---------------------------------------------------------------- activations
def _hardtanh(e, x, min_val, max_val, from_result=False):
    # torch's clamp: NaN passes
    return e.where(e.lt(x, min_val), min_val, e.where(e.gt(x, max_val), max_val, x))


def _hardtanh_grad(e, g, xs, y, min_val, max_val, from_result=False):
    # hardtanh_backward: (x <= min || x >= max) ? 0 : grad (in place: from the result, the same test)
    s = y if from_result else xs[0]
    return [e.where(e.le(s, min_val), 0, e.where(e.ge(s, max_val), 0, g))]


_activation("hardtanh", _hardtanh, _hardtanh_grad, "hardtanh(x; min_val, max_val): x clamped to [min, max]",
            piecewise=True)


def _relu6_of_shift(e, x):
    return e.op("minimum", *e._pair(e.maximum(e.add(x, 3), 0), 6))


_activation("hardsigmoid", lambda e, x: e.div(_relu6_of_shift(e, x), 6),
            lambda e, g, xs, y: [e.where(e.logical_and(e.gt(xs[0], -3), e.lt(xs[0], 3)), e.div(g, 6), 0)],
            "hardsigmoid(x): min(max(x + 3, 0), 6) / 6", piecewise=True)
_activation("hardswish", lambda e, x: e.div(e.mul(x, _relu6_of_shift(e, x)), 6),
            # torch's hardswish_backward: x <= -3 ? 0 : x < 3 ? grad * (x / 3 + 0.5) : grad
            lambda e, g, xs, y: [e.where(e.le(xs[0], -3), 0,
                                         e.where(e.lt(xs[0], 3), e.mul(g, e.add(e.div(xs[0], 3), 0.5)), g))],
            "hardswish(x): x * min(max(x + 3, 0), 6) / 6")


def _scaled_elu(e, x, alpha, scale, input_scale, from_result=False):
    # torch's elu kernel: x <= 0 ? expm1(x * input_scale) * (alpha * scale) : x * scale
    negcoef = _number(x, _number(x, alpha) * _number(x, scale))
    negative = e.mul(e.op("expm1", e.mul(x, input_scale)), negcoef)
    return e.where(e.le(x, 0), negative, e.mul(x, scale))


def _scaled_elu_grad(e, g, xs, y, alpha, scale, input_scale, from_result=False):
    # torch's elu_backward: from the result, grad * input_scale * (result + alpha * scale);
    # from the input, grad * input_scale * (alpha * scale) * exp(x * input_scale); else grad * scale
    negcoef = _number(g, _number(g, alpha) * _number(g, scale))
    if from_result:
        negative = e.mul(e.mul(g, input_scale), e.add(y, negcoef))
        source = y
    else:
        source = xs[0]
        negative = e.mul(e.mul(e.mul(g, input_scale), negcoef), e.exp(e.mul(source, input_scale)))
    # (at 0 the same value, written so that it does not vary with the source: torch's double
    # backward, elu_double_backward, masks with source < 0)
    at_zero = e.mul(e.mul(g, input_scale), negcoef)
    return [e.where(e.lt(source, 0), negative, e.where(e.le(source, 0), at_zero, e.mul(g, scale)))]


_activation("scaled_elu", _scaled_elu, _scaled_elu_grad,
            "scaled_elu(x; alpha, scale, input_scale, from_result): torch's elu with scales (selu, celu)")


def _tanh_softplus(e, x):
    return e.tanh(e.op("log1p", e.exp(x)))


def _mish_grad(e, g, xs, y):
    # torch's mish_backward: grad * (tanh(softplus(x)) + x * sigmoid(x) * (1 - tanh(softplus(x))**2))
    x = xs[0]
    t = _tanh_softplus(e, x)
    return [e.mul(g, e.add(t, e.mul(e.mul(x, e.sigmoid(x)), e.sub(1, e.mul(t, t)))))]


_activation("mish", lambda e, x: e.mul(x, _tanh_softplus(e, x)), _mish_grad, "mish(x): x * tanh(log1p(exp(x)))")


def _log_sigmoid(e, x):
    # torch's log_sigmoid kernel: min(x, 0) - log1p(exp(-|x|))
    return e.sub(e.op("minimum", *e._pair(x, 0)), e.op("log1p", e.exp(e.neg(e.op("abs", x)))))


def _log_sigmoid_grad(e, g, xs, y):
    # torch's log_sigmoid_backward is grad * (x < 0 ? 1 - z / (1 + z) : z / (1 + z)), z = exp(-|x|):
    # sigmoid(-x) * grad, which is written here, so that its derivative is torch's double
    # backward, grad * sigmoid(x) * (sigmoid(x) - 1), also at 0 (where |x| has none). (Within
    # rounding of torch's; an underflowing gradient, x > 88 in float32, is 0 where torch's is a
    # denormal.)
    return [e.mul(e.sigmoid(e.neg(xs[0])), g)]


_activation("log_sigmoid", _log_sigmoid, _log_sigmoid_grad, "log_sigmoid(x): log(1 / (1 + exp(-x))), stably",
            extra={"row_major_result": True})       # (torch's log_sigmoid_forward allocates it contiguous)

_activation("threshold", lambda e, x, threshold, value: e.where(e.le(x, threshold), value, x),
            lambda e, g, xs, y, threshold, value: [e.where(e.le(xs[0], threshold), 0, g)],
            "threshold(x; threshold, value): x where x > threshold, else value", piecewise=True,
            backward_name="threshold_value_backward")


def _inside(e, x, lambd):
    return e.logical_and(e.ge(x, -lambd), e.le(x, lambd))


_activation("hardshrink", lambda e, x, lambd: e.where(_inside(e, x, lambd), 0, x),
            lambda e, g, xs, y, lambd: [e.where(_inside(e, xs[0], lambd), 0, g)],
            "hardshrink(x; lambd): 0 where -lambd <= x <= lambd, else x", piecewise=True)
_activation("softshrink",
            lambda e, x, lambd: e.where(e.gt(x, lambd), e.sub(x, lambd),
                                        e.where(e.lt(x, -lambd), e.add(x, lambd), e.mul(x, 0))),
            lambda e, g, xs, y, lambd: [e.where(_inside(e, xs[0], lambd), 0, g)],
            "softshrink(x; lambd): x - lambd above lambd, x + lambd below -lambd, else 0 (x * 0)", piecewise=True)


def _prelu_grad(e, g, xs, y):
    # torch's _prelu_kernel_backward: (x > 0 ? grad : w * grad, x > 0 ? 0 : x * grad); the
    # weight's gradient is summed to its shape by autodiff
    x, w = xs
    positive = e.gt(x, 0)
    return [e.where(positive, g, e.mul(w, g)), e.where(positive, 0, e.mul(x, g))]


_activation("prelu", lambda e, x, w: e.where(e.gt(x, 0), x, e.mul(w, x)), _prelu_grad,
            "prelu(x, weight): x where x > 0, else weight * x (weight broadcast)")


def _rrelu_grad(e, g, xs, y, from_result=False):
    # torch's rrelu_with_noise_backward: grad * noise where the input is <= 0 (eval: the mean slope)
    source = y if from_result else xs[0]
    return [e.where(e.gt(source, 0), g, e.mul(g, xs[1])), None]


_activation("rrelu", lambda e, x, noise, from_result=False: e.where(e.gt(x, 0), x, e.mul(x, noise)), _rrelu_grad,
            "rrelu(x, noise; from_result): x where x > 0, else x * noise (a slope per element, or one)",
            nondiff_inputs=(1,), extra={"row_major_result": True})     # (torch's rrelu_with_noise allocates so)


# ---------------------------------------------------------------- glu
def _glu_infer(types, attrs):
    t = types[0]
    if not t.dtype.is_floating_point:
        raise TypeError(f"glu: expected a floating point operand, got {t.dtype.name}")
    shape = list(t.shape)
    shape[attrs["dim"]] //= 2
    return [TensorType(tuple(shape), t.dtype)]


def _halves(e, x, dim):
    size = x.shape[dim] // 2
    lead = tuple(("s", 0, s, 1) for s in x.shape[:dim])
    return (e.op("getitem", x, index=lead + (("s", 0, size, 1),)),
            e.op("getitem", x, index=lead + (("s", size, 2 * size, 1),)))


def _glu(e, x, dim):
    # torch's glu kernel: a * (1 / (1 + exp(-b)))
    a, b = _halves(e, x, dim)
    return e.mul(a, e.div(1, e.add(e.exp(e.neg(b)), 1)))


def _glu_vjp(e, xs, ys, gs, attrs, needs):
    # torch's glu_backward: the first half grad * sigmoid(b), the second (1 - s) * s * a * grad
    a, b = _halves(e, xs[0], attrs["dim"])
    s = e.sigmoid(b)
    g = gs[0]
    first = e.mul(s, g)
    second = e.mul(e.mul(e.mul(e.sub(1, s), s), a), g)
    return [e.op("cat", first, second, axis=attrs["dim"])]


register(OpDef("glu", COMPOSITE, _glu_infer, _float_ref(_glu), _glu_vjp,
               decompose=lambda e, xs, a: [_glu(e, xs[0], **a)],
               doc="glu(x; dim): the first half along dim times the sigmoid of the second"))


# ---------------------------------------------------------------- pointwise losses
def _loss_infer(name):
    def infer(types, attrs):
        x = types[0]
        for t in types[1:]:
            if t.shape != x.shape or t.dtype is not x.dtype:
                raise TypeError(f"{name}: operands must share a shape and dtype")
        if not x.dtype.is_floating_point:
            raise TypeError(f"{name}: expected a floating point operand, got {x.dtype.name}")
        return [TensorType(x.shape if attrs["reduction"] == "none" else (), x.dtype)]
    return infer


def _reduce(e, losses, reduction):
    axes = tuple(range(len(losses.shape)))
    if reduction == "sum":
        return e.op("sum", losses, axes=axes, keepdim=False)
    if reduction == "mean":
        return e.op("mean", losses, axes=axes, keepdim=False)
    return losses


def _loss_grad(e, g, like, reduction):
    """The output's gradient brought to every element: 1/numel of it for a mean."""
    if reduction == "none":
        return g
    g = e.expand(g, like.shape)
    if reduction == "mean":
        count = int(np.prod(like.shape, dtype=np.int64))
        g = e.mul(g, _number(g, 1.0 / count) if count else float("inf"))
    return g


def _pointwise_loss(name, forward, backward, doc, nondiff_inputs=()):
    """Declare a loss op `name(input, target; reduction, params)`: forward(e, x, t, **params)
    the elementwise losses, backward(e, g, x, t, **params) the gradients of x and t (g: the
    gradient of each element's loss)."""
    def ref(x, t, reduction, **params):
        arrays = _arrays()
        return _reduce(arrays, forward(arrays, x, t, **params), reduction)

    def vjp(e, xs, ys, gs, attrs, needs):
        params = {k: v for k, v in attrs.items() if k != "reduction"}
        g = _loss_grad(e, gs[0], xs[0], attrs["reduction"])
        grads = backward(e, g, xs[0], xs[1], **params)
        return [gr if need else None for gr, need in zip(grads, needs)]

    def decompose(e, xs, attrs):
        params = {k: v for k, v in attrs.items() if k != "reduction"}
        return [_reduce(e, forward(e, xs[0], xs[1], **params), attrs["reduction"])]

    # (reduction="none": an elementwise result, laid out by its operands as torch's, traced too)
    return register(OpDef(name, COMPOSITE, _loss_infer(name), ref, vjp, decompose=decompose,
                          nondiff_inputs=nondiff_inputs, doc=doc, extra={"takes_operand_layout": True}))


def _smooth_l1(e, x, t, beta):
    # torch: z = |x - t|; z < beta ? 0.5 * z * z / beta : z - 0.5 * beta
    z = e.op("abs", e.sub(x, t))
    return e.where(e.lt(z, beta), e.div(e.mul(e.mul(z, 0.5), z), beta), e.sub(z, 0.5 * beta))


def _smooth_l1_grad(e, g, x, t, beta):
    # torch's smooth_l1_loss_backward: d = x - t; d <= -beta ? -grad : d >= beta ? grad : d * grad / beta
    d = e.sub(x, t)
    gx = e.where(e.le(d, -beta), e.neg(g), e.where(e.ge(d, beta), g, e.div(e.mul(d, g), beta)))
    return [gx, e.neg(gx)]


_pointwise_loss("smooth_l1_loss", _smooth_l1, _smooth_l1_grad, "smooth_l1_loss(x, t; reduction, beta)")


def _huber(e, x, t, delta):
    # torch: z = |x - t|; z < delta ? 0.5 * z * z : delta * (z - 0.5 * delta)
    z = e.op("abs", e.sub(x, t))
    return e.where(e.lt(z, delta), e.mul(e.mul(z, 0.5), z), e.mul(e.sub(z, 0.5 * delta), delta))


def _huber_grad(e, g, x, t, delta):
    # torch's huber_loss_backward: d <= -delta ? -grad * delta : d >= delta ? grad * delta : d * grad
    d = e.sub(x, t)
    gx = e.where(e.le(d, -delta), e.mul(e.neg(g), delta), e.where(e.ge(d, delta), e.mul(g, delta), e.mul(d, g)))
    return [gx, e.neg(gx)]


_pointwise_loss("huber_loss", _huber, _huber_grad, "huber_loss(x, t; reduction, delta)")


def _soft_margin_grad(e, g, x, t):
    # torch's soft_margin_loss_backward: -t * z / (1 + z) * grad, z = exp(-t * x); no target gradient
    z = e.exp(e.mul(e.neg(x), t))
    return [e.mul(e.div(e.mul(e.neg(t), z), e.add(z, 1)), g), None]


_pointwise_loss("soft_margin_loss", lambda e, x, t: e.op("log1p", e.exp(e.mul(e.neg(x), t))), _soft_margin_grad,
                "soft_margin_loss(x, t; reduction): log1p(exp(-x * t))", nondiff_inputs=(1,))


# ---------------------------------------------------------------- multi_margin_loss
def _multi_margin_infer(types, attrs):
    x, target, classes = types[:3]
    if not x.dtype.is_floating_point:
        raise TypeError(f"multi_margin_loss: expected a floating point input, got {x.dtype.name}")
    if x.ndim != 2 or target.shape != x.shape[:1] or classes.shape != x.shape[1:]:
        raise TypeError("multi_margin_loss: expects (N, C) input, (N,) target and (C,) classes")
    return [TensorType(x.shape[:1] if attrs["reduction"] == "none" else (), x.dtype)]


def _multi_margin_parts(e, x, target, classes, weight, p, margin):
    """(per-sample losses, what the backward reads): torch's multi_margin_loss, for each sample
    sum over i != y of max(0, margin - x[y] + x[i]) ** p (times weight[y]) / C."""
    n, c = x.shape
    hit = e.eq(e.reshape(target, (n, 1)), e.reshape(classes, (1, c)))
    picked = e.sum(e.where(hit, x, 0), (1,), keepdim=True)
    z = e.add(e.sub(margin, picked), x)
    live = e.logical_and(e.gt(z, 0), e.op("logical_not", hit))
    h = e.where(live, z if p == 1 else e.mul(z, z), 0)
    scale = None
    if weight is not None:
        scale = e.sum(e.where(hit, e.reshape(weight, (1, c)), 0), (1,), keepdim=True)
        h = e.mul(h, scale)
    return e.div(e.sum(h, (1,)), c), (hit, z, live, scale)


def _multi_margin_forward(e, x, target, classes, *weight, p, margin, reduction):
    losses, _ = _multi_margin_parts(e, x, target, classes, weight[0] if weight else None, p, margin)
    return _reduce(e, losses, reduction)


def _multi_margin_vjp(e, xs, ys, gs, attrs, needs):
    # torch's multi_margin_loss_backward: each live term's derivative (1, or 2z) * weight[y] / C,
    # and minus their sum at the target's class
    x, target, classes = xs[:3]
    weight = xs[3] if len(xs) > 3 else None
    _, (hit, z, live, scale) = _multi_margin_parts(e, x, target, classes, weight, attrs["p"], attrs["margin"])
    n, c = x.shape
    g = gs[0]
    if attrs["reduction"] == "none":
        g = e.reshape(g, (n, 1))
    else:
        g = e.reshape(g, (1, 1))
        if attrs["reduction"] == "mean":
            g = e.div(g, n)
    slope = e.cast(live, x.dtype) if attrs["p"] == 1 else e.where(live, e.mul(z, 2), 0)
    if scale is not None:
        slope = e.mul(slope, scale)
    d = e.mul(e.div(slope, c), g)
    gx = e.sub(d, e.where(hit, e.sum(d, (1,), keepdim=True), 0))
    return [gx] + [None] * (len(xs) - 1)


register(OpDef("multi_margin_loss", COMPOSITE, _multi_margin_infer, _float_ref(_multi_margin_forward),
               _multi_margin_vjp, decompose=lambda e, xs, a: [_multi_margin_forward(e, *xs, **a)],
               nondiff_inputs=(1, 2, 3),
               doc="multi_margin_loss(x, target, classes[, weight]; p, margin, reduction)"))


# ---------------------------------------------------------------- multilabel_margin_loss
def _multilabel_margin_infer(types, attrs):
    x, counts = types
    if not x.dtype.is_floating_point:
        raise TypeError(f"multilabel_margin_loss: expected a floating point input, got {x.dtype.name}")
    if x.ndim not in (1, 2) or counts.shape != x.shape or counts.dtype != x.dtype:
        raise TypeError("multilabel_margin_loss: expects an (N, C) or (C,) input and target counts of its shape "
                        "and dtype")
    return [TensorType(x.shape[:1] if attrs["reduction"] == "none" and x.ndim == 2 else (), x.dtype)]


def _multilabel_margin_parts(e, x, counts):
    """(per-sample losses, (live, weights)): torch's multilabel_margin_loss, for each sample the
    sum over its targets j (the target row's entries before its first -1, a class as often as it
    is listed: counts[k]) and every class i not among them of max(0, 1 - x[j] + x[i]), over C.
    A 1-d x is one sample."""
    n, c = x.shape if len(x.shape) == 2 else (1, x.shape[0])
    z = e.add(e.sub(1.0, e.reshape(x, (n, c, 1))), e.reshape(x, (n, 1, c)))
    other = e.op("logical_not", e.gt(e.reshape(counts, (n, 1, c)), 0))
    live = e.logical_and(e.gt(z, 0), other)
    weights = e.reshape(counts, (n, c, 1))
    h = e.mul(e.where(live, z, 0), weights)
    return e.div(e.sum(h, (1, 2)), c), (live, weights)


def _multilabel_margin_forward(e, x, counts, reduction):
    losses, _ = _multilabel_margin_parts(e, x, counts)
    if len(x.shape) == 1:
        return e.reshape(losses, ())
    return _reduce(e, losses, reduction)


def _multilabel_margin_vjp(e, xs, ys, gs, attrs, needs):
    # torch's multilabel_margin_loss_backward: each live pair (j, i) adds 1/C to i's gradient
    # and takes 1/C from j's, times the sample's gradient
    x, counts = xs
    n, c = x.shape if len(x.shape) == 2 else (1, x.shape[0])
    _, (live, weights) = _multilabel_margin_parts(e, x, counts)
    g = gs[0]
    if attrs["reduction"] == "none" or len(x.shape) == 1:
        g = e.reshape(g, (n, 1, 1))
    else:
        g = e.reshape(g, (1, 1, 1))
        if attrs["reduction"] == "mean":
            g = e.div(g, n)
    d = e.mul(e.div(e.where(live, weights, 0), c), g)
    gx = e.sub(e.sum(d, (1,)), e.sum(d, (2,)))
    return [gx if len(x.shape) == 2 else e.reshape(gx, x.shape), None]


register(OpDef("multilabel_margin_loss", COMPOSITE, _multilabel_margin_infer, _float_ref(_multilabel_margin_forward),
               _multilabel_margin_vjp, decompose=lambda e, xs, a: [_multilabel_margin_forward(e, *xs, **a)],
               nondiff_inputs=(1,),
               doc="multilabel_margin_loss(x, counts; reduction): counts[n, k] how often class k is among "
                   "sample n's targets"))
