"""Optimizer updates as one op per parameter (`sgd_update`, `adam_update`).

fusegrad.optim's step used to apply a dozen public in-place ops per parameter;
traced, each one is an instruction (a few microseconds apiece), and eagerly
each one is a dispatch. These composites record the whole update of one
parameter as one instruction. Their `decompose` emits exactly the elementwise
ops, in the same order and dtypes, that the per-op code records, so compiled
kernels fuse the update into one loop and compute the same bits; their `ref`
does the same NumPy arithmetic as the per-op code does eagerly.

Every number enters as a 0-d input of the parameter's dtype, as a Python
scalar operand of a Tensor op does (tracer.functional._scalar_array): the
step-dependent ones (bias corrections, step size) and the learning rate a
schedule may change must not be attributes, which key the program cache.
Attributes only say which terms the update has (fixed per parameter group).
No VJP: updates run under no_grad (a differentiable step takes the per-op path).
"""
from __future__ import annotations

import numpy as np

from ..types import TensorType
from .registry import COMPOSITE, OpDef, register


# ------------------------------------------------------------------ operands
# The 0-d scalar inputs that follow the tensors, by name, in input order.
def sgd_scalars(attrs) -> tuple:
    """Names of sgd_update's scalar inputs for these attributes, in input order."""
    names = ("weight_decay",) if attrs["weight_decay"] else ()
    if attrs["momentum"]:
        names += ("momentum",) + (("one_minus_dampening",) if attrs["dampening"] else ())
        names += ("nesterov_momentum",) if attrs["nesterov"] else ()
    return names + ("neg_lr",)


def adam_scalars(attrs) -> tuple:
    """Names of adam_update's scalar inputs for these attributes, in input order."""
    decay = {"none": (), "l2": ("weight_decay",), "decoupled": ("decay_factor",)}[attrs["weight_decay"]]
    lerp = ("weight",) if attrs["lerp_low"] else ("one_minus_weight",)
    return decay + lerp + ("beta2", "one_minus_beta2", "sqrt_bias_correction2", "eps", "neg_step_size")


def _sgd_tensor_count(attrs) -> int:
    return 3 if attrs["momentum"] else 2                 # param, grad[, momentum_buffer]


def _adam_tensor_count(attrs) -> int:
    return 5 if attrs["amsgrad"] else 4                  # param, grad, exp_avg, exp_avg_sq[, max_exp_avg_sq]


def _check_types(name, types, n_tensors, scalar_names) -> TensorType:
    """The parameter's type, after checking the operands: `n_tensors` of the parameter's
    shape and floating dtype, then one 0-d scalar of the parameter's dtype per name."""
    expected = n_tensors + len(scalar_names)
    if len(types) != expected:
        raise TypeError(f"{name}: expected {expected} operands ({n_tensors} tensors, then the scalars "
                        f"{', '.join(scalar_names)}), got {len(types)}")
    param = types[0]
    if not param.dtype.is_floating_point:
        raise TypeError(f"{name}: expected a floating point parameter, got {param}")
    for t in types[1:n_tensors]:
        if t != param:
            raise TypeError(f"{name}: the gradient and state must have the parameter's type {param}, got {t}")
    scalar = TensorType((), param.dtype)
    for t, scalar_name in zip(types[n_tensors:], scalar_names):
        if t != scalar:
            raise TypeError(f"{name}: scalar {scalar_name} must be {scalar}, got {t}")
    return param


def _like(a, target):
    """`a` in `target`'s memory order (C or Fortran; as it is for any other layout). The
    references compute each output in the layout of the tensor it is written into: the
    gradient of a transposed product is in Fortran order (and so is a momentum buffer
    cloned from it), and NumPy calls over operands of two layouts run several times
    slower than one transposing copy. The values are the same."""
    if target.flags.c_contiguous:
        return np.asarray(a, order="C")          # (ascontiguousarray would make a 0-d array 1-d)
    if target.flags.f_contiguous:
        return np.asarray(a, order="F")
    return a


# ------------------------------------------------------------------ sgd_update
# sgd_update(param, grad[, momentum_buffer], *scalars; maximize, weight_decay, momentum,
# dampening, nesterov) -> (param'[, momentum_buffer']): torch's SGD step on a buffer that
# exists (the first step, which makes the buffer, stays per-op). Per-op code:
#   g = -grad (maximize);  g = g + p * weight_decay
#   buf = buf * momentum + g (* (1 - dampening) when dampened)
#   g = g + buf * momentum (nesterov) or buf;  p = p + g * -lr
def _sgd_infer(types, attrs):
    param = _check_types("sgd_update", types, _sgd_tensor_count(attrs), sgd_scalars(attrs))
    return [param, param] if attrs["momentum"] else [param]


def _sgd_ref(*arrays, maximize, weight_decay, momentum, dampening, nesterov):
    attrs = dict(maximize=maximize, weight_decay=weight_decay, momentum=momentum, dampening=dampening,
                 nesterov=nesterov)
    n = _sgd_tensor_count(attrs)
    p, s = arrays[0], dict(zip(sgd_scalars(attrs), arrays[n:]))
    work = arrays[2] if momentum else p          # the layout the gradient terms are computed in
    g = _like(arrays[1], work)
    if maximize:
        g = np.negative(g)
    if weight_decay:
        g = g + _like(p, work) * s["weight_decay"]
    if not momentum:
        return p + g * s["neg_lr"]
    buf = arrays[2] * s["momentum"]
    buf += g * s["one_minus_dampening"] if dampening else g
    step = g + buf * s["nesterov_momentum"] if nesterov else buf
    return p + _like(step, p) * s["neg_lr"], buf


def _sgd_decompose(e, xs, attrs):
    n = _sgd_tensor_count(attrs)
    p, g = xs[0], xs[1]
    s = dict(zip(sgd_scalars(attrs), xs[n:]))
    if attrs["maximize"]:
        g = e.neg(g)
    if attrs["weight_decay"]:
        g = e.add(g, e.mul(p, s["weight_decay"]))
    if not attrs["momentum"]:
        return [e.add(p, e.mul(g, s["neg_lr"]))]
    buf = e.mul(xs[2], s["momentum"])
    buf = e.add(buf, e.mul(g, s["one_minus_dampening"]) if attrs["dampening"] else g)
    step = e.add(g, e.mul(buf, s["nesterov_momentum"])) if attrs["nesterov"] else buf
    return [e.add(p, e.mul(step, s["neg_lr"])), buf]


register(OpDef("sgd_update", COMPOSITE, _sgd_infer, _sgd_ref, decompose=_sgd_decompose,
               doc="sgd_update(param, grad[, momentum_buffer], *scalars; maximize, weight_decay, momentum, "
                   "dampening, nesterov): torch's SGD step of one parameter -> (param[, momentum_buffer])"))


# ------------------------------------------------------------------ adam_update
# adam_update(param, grad, exp_avg, exp_avg_sq[, max_exp_avg_sq], *scalars; amsgrad, maximize,
# weight_decay ("none", "l2", "decoupled"), lerp_low) -> (param', exp_avg', exp_avg_sq'[,
# max_exp_avg_sq']): torch's (non-capturable) Adam/AdamW step. (The step count is the
# caller's: it knows the new count as a number, which it writes without a kernel.) Per-op code:
#   p = p * decay_factor (decoupled);  g = -grad (maximize);  g = g + p * wd (l2)
#   m = m + (g - m) * weight (lerp_low, weight = 1 - beta1 < 0.5) or g - (g - m) * (1 - weight)
#   v = v * beta2 + (g * g) * (1 - beta2);  mx = maximum(mx, v) (amsgrad)
#   p = p + (m / (sqrt(mx or v) / sqrt_bias_correction2 + eps)) * -step_size
def _adam_infer(types, attrs):
    if attrs["weight_decay"] not in ("none", "l2", "decoupled"):
        raise ValueError(f"adam_update: weight_decay must be 'none', 'l2' or 'decoupled', got "
                         f"{attrs['weight_decay']!r}")
    n = _adam_tensor_count(attrs)
    param = _check_types("adam_update", types, n, adam_scalars(attrs))
    return [param] * (n - 1)


def _adam_ref(*arrays, amsgrad, maximize, weight_decay, lerp_low):
    # The per-op code's arithmetic, operand for operand, into as few fresh arrays as can
    # hold it (each fresh array of a large parameter costs its page faults).
    attrs = dict(amsgrad=amsgrad, maximize=maximize, weight_decay=weight_decay, lerp_low=lerp_low)
    n = _adam_tensor_count(attrs)
    p, m, v = arrays[0], arrays[2], arrays[3]
    s = dict(zip(adam_scalars(attrs), arrays[n:]))
    g = _like(arrays[1], m)                      # the moments' terms in the moments' layout
    if weight_decay == "decoupled":
        p = np.multiply(p, s["decay_factor"], out=np.empty_like(p))
    if maximize:
        g = np.negative(g, out=np.empty_like(m))
    if weight_decay == "l2":
        decay = np.multiply(_like(p, m), s["weight_decay"], out=np.empty_like(m))
        g = np.add(g, decay, out=decay)
    m_new = np.subtract(g, m, out=np.empty_like(m))
    if lerp_low:                                 # m + (g - m) * weight
        np.multiply(m_new, s["weight"], out=m_new)
        np.add(m, m_new, out=m_new)
    else:                                        # g - (g - m) * (1 - weight)
        np.multiply(m_new, s["one_minus_weight"], out=m_new)
        np.subtract(g, m_new, out=m_new)
    v_new = np.multiply(v, s["beta2"], out=np.empty_like(v))
    work = np.multiply(g, g, out=np.empty_like(m))
    np.multiply(work, s["one_minus_beta2"], out=work)
    np.add(v_new, work, out=v_new)
    second = np.maximum(arrays[4], v_new, out=np.empty_like(v)) if amsgrad else v_new
    np.sqrt(second, out=work)                    # denom = sqrt(second) / sqrt_bias_correction2 + eps
    np.divide(work, s["sqrt_bias_correction2"], out=work)
    np.add(work, s["eps"], out=work)
    np.divide(m_new, work, out=work)             # update = m / denom * -step_size
    np.multiply(work, s["neg_step_size"], out=work)
    update = _like(work, p)
    p_new = np.add(p, update, out=update)
    return (p_new, m_new, v_new, second) if amsgrad else (p_new, m_new, v_new)


def _adam_decompose(e, xs, attrs):
    n = _adam_tensor_count(attrs)
    p, g, m, v = xs[:4]
    s = dict(zip(adam_scalars(attrs), xs[n:]))
    if attrs["weight_decay"] == "decoupled":
        p = e.mul(p, s["decay_factor"])
    if attrs["maximize"]:
        g = e.neg(g)
    if attrs["weight_decay"] == "l2":
        g = e.add(g, e.mul(p, s["weight_decay"]))
    if attrs["lerp_low"]:
        m = e.add(m, e.mul(e.sub(g, m), s["weight"]))
    else:
        m = e.sub(g, e.mul(e.sub(g, m), s["one_minus_weight"]))
    v = e.mul(v, s["beta2"])
    v = e.add(v, e.mul(e.mul(g, g), s["one_minus_beta2"]))
    second = e.maximum(xs[4], v) if attrs["amsgrad"] else v
    denom = e.add(e.div(e.sqrt(second), s["sqrt_bias_correction2"]), s["eps"])
    p = e.add(p, e.mul(e.div(m, denom), s["neg_step_size"]))
    return [p, m, v, second] if attrs["amsgrad"] else [p, m, v]


register(OpDef("adam_update", COMPOSITE, _adam_infer, _adam_ref, decompose=_adam_decompose,
               doc="adam_update(param, grad, exp_avg, exp_avg_sq[, max_exp_avg_sq], *scalars; amsgrad, "
                   "maximize, weight_decay, lerp_low): torch's Adam/AdamW step of one parameter -> (param, "
                   "exp_avg, exp_avg_sq[, max_exp_avg_sq])"))
