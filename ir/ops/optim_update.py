"""Optimizer updates as one op per parameter (`sgd_update`, `adam_update`).

fusegrad.optim's step used to apply a dozen public in-place ops per parameter;
traced, each one is an instruction (a few microseconds apiece), and eagerly
each one is a dispatch. These composites record the whole update of one
parameter as one instruction. Their `decompose` emits exactly the elementwise
ops, in the same order and dtypes, that the per-op code records, so compiled
kernels fuse the update into one loop and compute the same bits; their `ref`
does the same NumPy arithmetic as the per-op code does eagerly.

torch's kernels round some of those steps once where a multiply then an add would round
twice (add with alpha, lerp and addcmul are fused multiply-adds on the CPU): the IR's
scaled_add, and ir/fma.py in the references, compute them as torch does, bit for bit.

Every number enters as a 0-d input of the parameter's dtype, as a Python
scalar operand of a Tensor op does (tracer.functional._scalar_array): the
step-dependent ones (bias corrections, step size) and the learning rate a
schedule may change must not be attributes, which key the program cache.
Attributes only say which terms the update has (fixed per parameter group).
No VJP: updates run under no_grad (a differentiable step takes the per-op path).
"""
from __future__ import annotations

import numpy as np

from ..fma import fma
from ..types import TensorType
from .registry import COMPOSITE, OpDef, register


# Eager forms that write an update op's results over the memory of the tensors it updates (the
# parameter, then its state tensors in the op's order), lent by codegen/eager_loops.py: op ->
# form(*arrays, **attrs) -> bool (False: it declined, nothing written). A fused eager step then
# makes no fresh results and copies none back (fusegrad.optim: update_in_place).
IN_PLACE_FORMS: dict = {}


def update_in_place(op: str, arrays: list, attrs: dict) -> bool:
    """Eagerly, write update op `op`'s results over its updated operands' arrays where a lent
    form takes them (IN_PLACE_FORMS); False where none does (the caller applies the op)."""
    form = IN_PLACE_FORMS.get(op)
    return form is not None and form(*arrays, **attrs)


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
    return decay + ("weight", "beta2", "one_minus_beta2", "sqrt_bias_correction2", "eps", "neg_step_size")


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
# exists (the first step, which makes the buffer, stays per-op). Per-op code (fma: one
# rounding, torch's add with alpha):
#   g = -grad (maximize);  g = fma(p, weight_decay, g)
#   buf = buf * momentum + g (fma(g, 1 - dampening, buf * momentum) when dampened)
#   g = fma(buf, momentum, g) (nesterov) or buf;  p = fma(g, -lr, p)
def _sgd_infer(types, attrs):
    param = _check_types("sgd_update", types, _sgd_tensor_count(attrs), sgd_scalars(attrs))
    return [param, param] if attrs["momentum"] else [param]


def _sgd_ref(*arrays, maximize, weight_decay, momentum, dampening, nesterov):
    attrs = dict(maximize=maximize, weight_decay=weight_decay, momentum=momentum, dampening=dampening,
                 nesterov=nesterov)
    n = _sgd_tensor_count(attrs)
    p, s = arrays[0], dict(zip(sgd_scalars(attrs), arrays[n:]))
    dtype = p.dtype
    work = arrays[2] if momentum else p          # the layout the gradient terms are computed in
    g = _like(arrays[1], work)
    if maximize:
        g = np.negative(g)
    if weight_decay:
        g = _like(fma(_like(p, work), s["weight_decay"], g, dtype), work)
    if not momentum:
        return _like(fma(g, s["neg_lr"], p, dtype), p)
    buf = arrays[2] * s["momentum"]
    buf = _like(fma(g, s["one_minus_dampening"], buf, dtype), work) if dampening else buf + g
    step = _like(fma(buf, s["nesterov_momentum"], g, dtype), work) if nesterov else buf
    return _like(fma(_like(step, p), s["neg_lr"], p, dtype), p), buf


def _sgd_decompose(e, xs, attrs):
    n = _sgd_tensor_count(attrs)
    p, g = xs[0], xs[1]
    s = dict(zip(sgd_scalars(attrs), xs[n:]))
    if attrs["maximize"]:
        g = e.neg(g)
    if attrs["weight_decay"]:
        g = e.scaled_add(g, p, s["weight_decay"])
    if not attrs["momentum"]:
        return [e.scaled_add(p, g, s["neg_lr"])]
    buf = e.mul(xs[2], s["momentum"])
    buf = e.scaled_add(buf, g, s["one_minus_dampening"]) if attrs["dampening"] else e.add(buf, g)
    step = e.scaled_add(g, buf, s["nesterov_momentum"]) if attrs["nesterov"] else buf
    return [e.scaled_add(p, step, s["neg_lr"]), buf]


register(OpDef("sgd_update", COMPOSITE, _sgd_infer, _sgd_ref, decompose=_sgd_decompose,
               doc="sgd_update(param, grad[, momentum_buffer], *scalars; maximize, weight_decay, momentum, "
                   "dampening, nesterov): torch's SGD step of one parameter -> (param[, momentum_buffer])"))


# ------------------------------------------------------------------ adam_update
# adam_update(param, grad, exp_avg, exp_avg_sq[, max_exp_avg_sq], *scalars; amsgrad, maximize,
# weight_decay ("none", "l2", "decoupled"), lerp_low) -> (param', exp_avg', exp_avg_sq'[,
# max_exp_avg_sq']): torch's (non-capturable) Adam/AdamW step. (The step count is the
# caller's: it knows the new count as a number, which it writes without a kernel.) Per-op code
# (torch's; fma: one rounding):
#   p = p * decay_factor (decoupled);  g = -grad (maximize);  g = fma(p, wd, g) (l2)
#   m = lerp(m, g, weight): fma(weight, g - m, m) (lerp_low: weight = 1 - beta1 < 0.5), else
#       fma(weight - 1, g - m, g)
#   v = fma(one_minus_beta2 * g, g, v * beta2) (addcmul);  mx = maximum(mx, v) (amsgrad)
#   p = p + (neg_step_size * m) / (sqrt(mx or v) / sqrt_bias_correction2 + eps) (addcdiv)
def _adam_infer(types, attrs):
    if attrs["weight_decay"] not in ("none", "l2", "decoupled"):
        raise ValueError(f"adam_update: weight_decay must be 'none', 'l2' or 'decoupled', got "
                         f"{attrs['weight_decay']!r}")
    n = _adam_tensor_count(attrs)
    param = _check_types("adam_update", types, n, adam_scalars(attrs))
    return [param] * (n - 1)


def _adam_ref(*arrays, amsgrad, maximize, weight_decay, lerp_low):
    # The per-op code's arithmetic, operand for operand (the moments' terms in the moments'
    # layout, the parameter's in its own).
    attrs = dict(amsgrad=amsgrad, maximize=maximize, weight_decay=weight_decay, lerp_low=lerp_low)
    n = _adam_tensor_count(attrs)
    p, m, v = arrays[0], arrays[2], arrays[3]
    dtype = p.dtype
    s = dict(zip(adam_scalars(attrs), arrays[n:]))
    g = _like(arrays[1], m)
    if weight_decay == "decoupled":
        p = np.multiply(p, s["decay_factor"], out=np.empty_like(p))
    if maximize:
        g = np.negative(g, out=np.empty_like(m))
    if weight_decay == "l2":
        g = _like(fma(_like(p, m), s["weight_decay"], g, dtype), m)
    diff = np.subtract(g, m, out=np.empty_like(m))
    if lerp_low:
        m_new = _like(fma(s["weight"], diff, m, dtype), m)
    else:
        m_new = _like(fma(s["weight"] - dtype.type(1), diff, g, dtype), m)
    v_new = _like(fma(s["one_minus_beta2"] * g, g, v * s["beta2"], dtype), v)
    second = np.maximum(arrays[4], v_new, out=np.empty_like(v)) if amsgrad else v_new
    work = np.sqrt(second, out=np.empty_like(v))  # denom = sqrt(second) / sqrt_bias_correction2 + eps
    np.divide(work, s["sqrt_bias_correction2"], out=work)
    np.add(work, s["eps"], out=work)
    update = np.multiply(m_new, s["neg_step_size"], out=np.empty_like(m))   # addcdiv: (value * m) / denom
    np.divide(update, work, out=update)
    update = _like(update, p)
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
        g = e.scaled_add(g, p, s["weight_decay"])
    diff = e.sub(g, m)
    if attrs["lerp_low"]:
        m = e.scaled_add(m, diff, s["weight"])
    else:
        m = e.scaled_add(g, diff, e.sub(s["weight"], e.const(1, s["weight"])))
    v = e.scaled_add(e.mul(v, s["beta2"]), g, e.mul(s["one_minus_beta2"], g))
    second = e.maximum(xs[4], v) if attrs["amsgrad"] else v
    denom = e.add(e.div(e.sqrt(second), s["sqrt_bias_correction2"]), s["eps"])
    p = e.add(p, e.div(e.mul(s["neg_step_size"], m), denom))
    return [p, m, v, second] if attrs["amsgrad"] else [p, m, v]


register(OpDef("adam_update", COMPOSITE, _adam_infer, _adam_ref, decompose=_adam_decompose,
               doc="adam_update(param, grad, exp_avg, exp_avg_sq[, max_exp_avg_sq], *scalars; amsgrad, "
                   "maximize, weight_decay, lerp_low): torch's Adam/AdamW step of one parameter -> (param, "
                   "exp_avg, exp_avg_sq[, max_exp_avg_sq])"))
