"""Forward-mode AD (torch.autograd.forward_ad): dual tensors carry a tangent through eager ops.

Inside `dual_level()`, `make_dual(primal, tangent)` is a view of `primal` holding `tangent`;
every eager op any of whose operands holds a tangent gives each floating-point result the
tangent J @ t of its inputs' tangents, and `unpack_dual(t)` returns (a view of t, its
tangent or None). Leaving the level drops every tangent made in it.

There are no JVP rules in the op table: an op's tangent is computed from its VJP (the same
IR the backward uses) by the double-VJP trick, one op at a time. The VJP is emitted on
Tensors with its cotangent `u` (ones: any value serves, the VJP being linear in it) requiring grad and the op's recorded inputs and
outputs as constants, then `grad(sum_i <vjp_i(u), t_i>, u)` is J @ t, since the VJP is
linear in u. The op is not run again (a random op keeps its draw). A tangent is a plain
tensor, without history (where the primal requires grad, torch's tangent has one).

Inside fg.compile an operand with a tangent raises NotImplementedError, as does make_dual.
"""
from __future__ import annotations

import re
import weakref
from typing import NamedTuple

import numpy as np

from fusegrad.ir import TensorType, Value
from fusegrad.ir.autodiff import emit_instr_vjp
from fusegrad.ir.ops import OPS
from fusegrad.ir.program import Instr, freeze_attrs

from . import trace_state
from .grad_mode import enable_grad, no_grad
from .tensor import Tensor

# The level now entered (an int), or None: dispatch checks it on every op (DUAL_LEVEL[0]).
DUAL_LEVEL: list = [None]
_WITH_TANGENTS: dict = {}      # id -> weakref of each tensor given a tangent at this level (Tensor's == is
#                               elementwise, so no WeakSet)
_IN_JVP = [False]       # (the ops run while computing a tangent carry none themselves)


class UnpackedDualTensor(NamedTuple):
    """What unpack_dual returns: the primal (a view) and its tangent (None where it has none)."""
    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Enter a new forward-AD level (only one at a time, as torch's) and return its number."""
    if DUAL_LEVEL[0] is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    DUAL_LEVEL[0] = 0
    _set_dispatch_flag(True)
    return 0


def _set_dispatch_flag(on: bool) -> None:
    from . import dispatch
    dispatch.DUAL_ACTIVE = on


def exit_dual_level(*, level=None) -> None:
    """Leave the level: every tangent made in it is dropped."""
    if DUAL_LEVEL[0] is None or (level is not None and level != DUAL_LEVEL[0]):
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    for ref in list(_WITH_TANGENTS.values()):
        t = ref()
        if t is not None:
            t.__dict__.pop("_tangent", None)
    _WITH_TANGENTS.clear()
    DUAL_LEVEL[0] = None
    _set_dispatch_flag(False)


class dual_level:
    """`with dual_level():` the scope in which dual tensors live (torch's context manager)."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


class tangents_hidden:
    """While active (`on`), ops carry no tangents: the ops that compute a tangent, the alias
    ops of make_dual and unpack_dual, a custom Function's forward run on the primals."""

    def __init__(self, on: bool = True):
        self.on = on

    def __enter__(self):
        self.before = _IN_JVP[0]
        if self.on:
            _IN_JVP[0] = True

    def __exit__(self, *exc):
        _IN_JVP[0] = self.before


def tangent_of(t) -> Tensor | None:
    """The tangent `t` holds at the current level, or None."""
    return t.__dict__.get("_tangent") if isinstance(t, Tensor) else None


def _set_tangent(t: Tensor, tangent: Tensor | None) -> None:
    if tangent is None:
        t.__dict__.pop("_tangent", None)
        return
    t.__dict__["_tangent"] = tangent
    _WITH_TANGENTS[id(t)] = weakref.ref(t)


def _check_level(level) -> None:
    if DUAL_LEVEL[0] is None or (level is not None and level != DUAL_LEVEL[0]):
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")


def make_dual(tensor: Tensor, tangent: Tensor, *, level=None) -> Tensor:
    """A view of `tensor` holding `tangent` (same size; a floating-point primal and tangent)."""
    from .parser_errors import type_name
    for name, x in (("tensor", tensor), ("tangent", tangent)):
        if not isinstance(x, Tensor):
            raise TypeError(f"_make_dual(): argument '{name}' (position {1 if name == 'tensor' else 2}) must be "
                            f"Tensor, not {type_name(x)}")
    _check_level(level)
    if trace_state.current() is not None:
        raise NotImplementedError("fusegrad: forward-mode AD (make_dual) inside fg.compile is not supported")
    if not tensor.dtype.is_floating_point:
        raise ValueError(f"Expected primal to be floating point or complex, but got: {_torch_dtype(tensor)}")
    if not tangent.dtype.is_floating_point:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {_torch_dtype(tangent)}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    dual = _alias(tensor, "ViewBackward0")
    _set_tangent(dual, tangent)
    return dual


def unpack_dual(tensor, *, level=None) -> UnpackedDualTensor:
    """(a view of `tensor` without tangent, its tangent or None); outside a level, (tensor, None)."""
    if not isinstance(tensor, Tensor):
        return UnpackedDualTensor(tensor, None)
    tangent = tangent_of(tensor) if DUAL_LEVEL[0] is not None and level in (None, DUAL_LEVEL[0]) else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_alias(tensor, "AliasBackward0"), tangent)


def _alias(tensor: Tensor, name: str) -> Tensor:
    """A view of all of `tensor` (node `name` where it has history), carrying no tangent."""
    from .dispatch import apply_op
    with tangents_hidden():
        return apply_op("reshape", [tensor], {"shape": tuple(tensor.shape)}, name)


def _torch_dtype(t: Tensor) -> str:
    return "torch." + t.dtype.name          # (fusegrad's four dtype names are torch's)


def carries_tangents(inputs, out) -> bool:
    """Whether an op on `inputs` (and into `out`) has a tangent to propagate (dispatch's check,
    made only while a level is entered)."""
    if _IN_JVP[0]:
        return False
    if out is not None and "_tangent" in out.__dict__:
        return True
    return any(isinstance(x, Tensor) and "_tangent" in x.__dict__ for x in inputs)


def apply_with_tangents(apply, op: str, inputs: list, attrs, name, out):
    """`apply(op, inputs, attrs, name, out)` (dispatch's apply_op), then each floating-point
    result's tangent from the operands' (see the module)."""
    if trace_state.current() is not None:
        raise NotImplementedError("fusegrad: forward-mode AD inside fg.compile is not supported (an operand holds "
                                  "a tangent)")
    tangents = [tangent_of(x) for x in inputs]
    # (an in-place op overwrites an operand: its value before the write is what the tangent needs)
    before = [x if type(x) is np.ndarray else np.array(x._concrete(), copy=True) for x in inputs] \
        if out is not None else None
    with tangents_hidden():
        result = apply(op, inputs, attrs, name, out)
        outs = result if isinstance(result, tuple) else (result,)
        arrays = before if before is not None else [x if type(x) is np.ndarray else x._concrete() for x in inputs]
        if out is None and OPS[op].view and tangents[0] is not None and all(
                isinstance(t, Tensor) and t._base is not None for t in outs):
            # a view's tangent is the same view of its base's tangent (as torch's), so that a
            # write through the view changes the base's tangent too
            views = apply(op, [tangents[0]], attrs, name, None)
            out_tangents = views if isinstance(views, tuple) else (views,)
        else:
            out_tangents = _jvp(op, attrs or {}, inputs, arrays, outs, tangents)
        for t, tangent in zip(outs, out_tangents):
            if not isinstance(t, Tensor):
                continue
            held = t.__dict__.get("_tangent")
            if out is not None and held is not None and tangent is not None:
                with no_grad():
                    held.copy_(tangent)        # (in place: views of it, and its base's, see the change)
            else:
                _set_tangent(t, tangent)
    return result


def _jvp(op: str, attrs: dict, inputs: list, arrays: list, outs: tuple, tangents: list) -> list:
    """Per output of op, J @ tangents (None for an output that is not floating point)."""
    from .engine import _TensorEvaluator
    from .functional import sum as tensor_sum
    from .engine import grad as engine_grad
    opdef = OPS[op]
    in_types = tuple(TensorType(tuple(np.shape(a)), _dtype_of(x, a)) for x, a in zip(inputs, arrays))
    out_types = tuple(TensorType(tuple(t.shape), t.dtype) for t in outs)
    given = tuple(t.dtype.is_floating_point and k not in opdef.nondiff_outputs for k, t in enumerate(out_types))
    needs = tuple(tangent is not None and t.dtype.is_floating_point and i not in opdef.nondiff_inputs
                  for i, (tangent, t) in enumerate(zip(tangents, in_types)))
    if opdef.vjp is None or True not in given or True not in needs:
        return [None] * len(outs)
    xs, ys = [Value(t) for t in in_types], [Value(t) for t in out_types]
    constants = {x.id: Tensor._wrap(np.asarray(a)) for x, a in zip(xs, arrays)}
    constants.update({y.id: Tensor._wrap(t._concrete()) for y, t in zip(ys, outs)})
    evaluator = _TensorEvaluator(lambda v: constants[v.id], frozenset(constants))
    evaluator.differentiable = True
    with enable_grad():
        # (the VJP is linear in its cotangent, so its derivative is the same at any one: ones,
        # not zeros, where a VJP computed through log|u| (logcumsumexp's) is singular)
        cotangents = [Tensor._wrap(np.ones(t.shape, t.dtype.np)).requires_grad_() if g else None
                      for t, g in zip(out_types, given)]
        seeds = [evaluator.input_value(t, u) for t, u in zip(out_types, cotangents) if u is not None]
        try:
            grads = emit_instr_vjp(evaluator, Instr(op, xs, ys, freeze_attrs(attrs)), needs, given, seeds)
        except RuntimeError as error:
            named = re.search(r"derivative for (\S+) is not implemented", str(error))
            if named is None:
                raise
            raise NotImplementedError(f"Trying to use forward AD with {named.group(1)} that does not support "
                                      "it.") from None
        pairing = None
        for g, tangent in zip(grads, tangents):
            if g is None:
                continue
            term = tensor_sum(evaluator.array(g) * tangent.detach())
            pairing = term if pairing is None else pairing + term
        wanted = [u for u in cotangents if u is not None]
        if pairing is None or not pairing.requires_grad:
            found = [None] * len(wanted)
        else:
            found = engine_grad([pairing], wanted, None, False, False, allow_unused=True)
    found = iter(found)
    results = []
    with no_grad():
        for t, u in zip(out_types, cotangents):
            if u is None:
                results.append(None)
                continue
            jt = next(found)
            results.append(Tensor._wrap(np.zeros(t.shape, t.dtype.np)) if jt is None else jt.detach())
    return results


def _dtype_of(x, array):
    from fusegrad.ir import from_numpy_dtype
    return x.dtype if isinstance(x, Tensor) else from_numpy_dtype(np.asarray(array).dtype)


# ---------------------------------------------------------------- custom autograd.Function
def input_tangents(args) -> list | None:
    """Per argument of a custom Function's apply, the tangent its jvp receives (zeros for a
    floating-point tensor without one, None for anything else), or None where no argument
    holds a tangent (or no level is entered)."""
    if DUAL_LEVEL[0] is None or _IN_JVP[0] or not any(tangent_of(a) is not None for a in args):
        return None
    from .creation import zeros_like
    out = []
    for a in args:
        tangent = tangent_of(a)
        if tangent is None and isinstance(a, Tensor) and a.dtype.is_floating_point:
            tangent = zeros_like(a)
        out.append(tangent)
    return out


def custom_jvp(jvp, ctx, args, tangents: list) -> tuple:
    """The outputs' tangents by the Function's jvp(ctx, *tangents), with what forward gave to
    ctx.save_for_forward readable as ctx.saved_tensors."""
    kept = ctx.__dict__.get("_to_save")
    if "_to_save_forward" in ctx.__dict__:
        ctx._to_save = ctx.__dict__["_to_save_forward"]
    try:
        with tangents_hidden(), no_grad():
            result = jvp(ctx, *tangents)
    finally:
        if kept is None:
            ctx.__dict__.pop("_to_save", None)
        else:
            ctx._to_save = kept
    return result if isinstance(result, tuple) else (result,)


def give_tangents(output, tangents: tuple) -> None:
    """Set each floating-point tensor output's tangent (jvp's results, in output order)."""
    outputs = output if isinstance(output, tuple) else (output,)
    for o, tangent in zip(outputs, tangents):
        if isinstance(o, Tensor) and o.dtype.is_floating_point and isinstance(tangent, Tensor):
            _set_tangent(o, tangent)
