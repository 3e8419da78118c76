"""`custom_call`: an opaque function inside a program.

This is the small interface through which higher layers plug into the IR
without the IR importing them: the op's attribute `fn` is any object with

    fn.out_types : list of TensorType      (its outputs' abstract values)
    fn.run(*arrays) -> tuple of arrays     (its value, on NumPy arrays)
    fn.vjp_fn     : another such object or None; called with one cotangent
                    per output, it returns one gradient per input; it may have
                    reached() -> one bool per input: whether any gradient
                    reaches that input (None is its gradient where not);
                    and expand(e, xs, gs) -> one gradient value per input
                    (None where none reaches): the same VJP emitted as IR
                    ops through Emitter `e` from the primal inputs `xs`,
                    used where the gradient must itself be differentiable
                    (a create_graph backward: `e.b.differentiable`). Without
                    it such a gradient raises rather than being silently
                    constant; and for_cotangents(given) -> the object to use
                    when only the outputs marked in `given` get a cotangent
                    (the others get zeros); and apply_tensors(*tensors) ->
                    its outputs as tensors: an engine that runs a program on
                    tensors (a create_graph backward) calls it, where present,
                    instead of `run`, so the object can record its own history;
                    and check_idle(given, idle) -> None: called when a backward()
                    without inputs reaches the node, with cotangents for the
                    outputs marked in `given` (None: all), whether or not it uses
                    a gradient the node computes (idle: none is used, its edges
                    lead nowhere); it raises what torch's nodes inside it would
                    (a compiled call's saved value on the way to a leaf made in
                    the call that died there, or changed since the call).

The eager engine uses it for a compiled function's backward
(CompiledFunctionBackward): the node's VJP is a custom_call of the compiled
backward program.
"""
from __future__ import annotations

from .registry import OPAQUE, OpDef, register


def _infer(types, attrs):
    return list(attrs["fn"].out_types)


def _ref(*arrays, fn):
    return tuple(fn.run(*arrays))


def _vjp(e, xs, ys, gs, attrs, needs):
    back = attrs["fn"].vjp_fn
    if back is None:
        return [None] * len(xs)
    # Per input, whether any gradient reaches it: from the outputs given cotangents where the
    # function can tell (reached_for), so that an input only an absent output reaches gets no
    # gradient, as from separate nodes (the engine then does not go on into its history)
    given = tuple(g is not None for g in gs)
    reached_for, reached = getattr(back, "reached_for", None), getattr(back, "reached", None)
    if reached_for is not None or reached is not None:
        flags = reached_for(given) if reached_for is not None else reached()
        needs = [need and r for need, r in zip(needs, flags)]
        if not any(needs):
            return [None] * len(xs)
    for_cotangents = getattr(back, "for_cotangents", None)
    if for_cotangents is not None and any(g is None for g in gs):
        back = for_cotangents(tuple(g is not None for g in gs))
    gs = [g if g is not None else e.zeros_like(y) for g, y in zip(gs, ys)]
    if e.b.differentiable:
        expand = getattr(back, "expand", None)
        if expand is None:
            raise RuntimeError("a create_graph backward cannot differentiate through this custom_call: its "
                               "backward has no IR form (expand)")
        grads = expand(e, xs, gs)
        return [g if need else None for g, need in zip(grads, needs)]
    grads = e.op("custom_call", *gs, fn=back)
    grads = grads if isinstance(grads, tuple) else (grads,)
    return [g if need else None for g, need in zip(grads, needs)]


def _apply_tensors(attrs, tensors):
    """The op on tensors by the object itself (its apply_tensors), or None: apply it as any op."""
    on_tensors = getattr(attrs["fn"], "apply_tensors", None)
    return None if on_tensors is None else on_tensors(*tensors)


# (its rule gets None for an output without a cotangent: the backward checks only what the others reach)
register(OpDef("custom_call", OPAQUE, _infer, _ref, _vjp, doc="custom_call(*xs; fn): an opaque function",
               extra={"vjp_takes_missing": True, "apply_tensors": _apply_tensors}))
