"""JAX-style function transformations: `grad` and `value_and_grad`.

They run `f` on fresh leaves that require grad (copies of the arguments, so
the caller's tensors and their `.grad` are never touched) and differentiate
with the eager engine's `autograd.grad(create_graph=True)` when grad mode is
on, which is what makes `grad(grad(f))` work. Inside a compiled function the
same calls are traced into the program.
"""
from __future__ import annotations

import copy
import functools
import numbers
import operator

import numpy as np

from fusegrad.tracer import Tensor, enable_grad, engine, is_grad_enabled, trace_state
from fusegrad.tracer.grad_mode import ARGUMENT_LEAVES_LEFT, TRANSFORM_LEAVES, TRANSFORMS_RUNNING
from fusegrad.tracer.creation import tensor as _tensor
from fusegrad.tracer.layout import in_dense_order, layout_stand_in


def _index(k, text: str) -> int:
    """An argnum as an int: anything with __index__ (NumPy integers too), else torch.func's error."""
    try:
        return operator.index(k)
    except TypeError:
        raise RuntimeError(f"{text}, got: {type(k)}") from None


def _argnums_tuple(argnums, nargs: int, torch_func: bool = False):
    """(whether argnums is one int, the argument indices); torch.func's checks and texts,
    except that an index out of range is a ValueError for fg.grad and fg.value_and_grad
    (API.md), torch.func's RuntimeError for fg.func's transforms (`torch_func`)."""
    single = not isinstance(argnums, tuple)
    if single:
        nums = (_index(argnums, "argnums must be int or Tuple[int, ...]"),)
    else:
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        nums = tuple(_index(k, "argnum must be int") for k in argnums)
    for k in nums:
        if not -nargs <= k < nargs:
            if torch_func:
                raise RuntimeError(f"Got argnum={k}, but only {nargs} positional inputs")
            raise ValueError(f"argnums {k} is out of range for a function called with {nargs} positional "
                             f"argument(s)")
    positions = tuple(k % nargs for k in nums)
    if len(set(positions)) != len(positions):
        raise RuntimeError(f"argnums elements must be unique, got {positions}")   # (normalised, as torch.func)
    return single, positions


def _reads_outside(t: Tensor, own: set) -> bool:
    """Whether `t`'s history reads a tensor that requires grad other than this call's own
    leaves (ids in `own`): a caller's tensor, a closure's parameter, or the leaf of an outer
    transformation still under way (fg.grad(lambda x: fg.grad(lambda y: x * y)(3.))). The
    leaf of an inner transformation that has returned does not count: a mixed partial,
    grad(grad(f, 1), 0), has nothing outside to keep history for."""
    trace = trace_state.current()
    if trace is None or t._sym is None:
        behind = engine.leaves_behind(t)
    else:
        # (in a trace, first the cheap question: does the call read any such tensor at all?)
        if not any(_outside(leaf, own) for leaf in trace.grad_source_tensors()):
            return False
        behind = trace.leaves_behind(t)
    return any(_outside(leaf, own) for leaf in behind)


def _outside(leaf: Tensor, own: set) -> bool:
    """Whether `leaf` is neither this call's own leaf nor one of a transformation that has returned."""
    return id(leaf) not in own and not leaf.__dict__.get("_transform_done", False)


def _tree_leaves(x) -> list:
    """The leaves of argument x, in order: x itself, or the items of its tuples, lists
    (namedtuples too) and dicts, depth first (torch.func's and JAX's pytrees)."""
    if isinstance(x, dict):
        return [leaf for v in x.values() for leaf in _tree_leaves(v)]
    if isinstance(x, (tuple, list)):
        return [leaf for v in x for leaf in _tree_leaves(v)]
    return [x]


def _tree_rebuild(x, leaves):
    """x with its leaves replaced by the next items of iterator `leaves` (same containers)."""
    if isinstance(x, dict):
        out = copy.copy(x)          # (keeps the dict's type: OrderedDict, defaultdict...)
        for key, v in x.items():
            out[key] = _tree_rebuild(v, leaves)
        return out
    if isinstance(x, tuple) and hasattr(x, "_fields"):        # a namedtuple
        return type(x)(*[_tree_rebuild(v, leaves) for v in x])
    if isinstance(x, (tuple, list)):
        return type(x)([_tree_rebuild(v, leaves) for v in x])
    return next(leaves)


def _as_input(x, k: int, again: bool = False, keep_history: bool = True, contained: bool = False,
              outer_grad: bool = False) -> Tensor:
    """A differentiable leaf standing for argument k (same value and graph as x); `again`: x is
    also an earlier differentiated argument; `keep_history` False (under no_grad): x's own
    history is not followed; `outer_grad`: something outside differentiates through the call."""
    if isinstance(x, Tensor):
        if not x.dtype.is_floating_point:
            if x.__dict__.get("_from_array"):      # (a NumPy argument fg.compile wrapped)
                raise _not_real_error(k, _array_kind(x.dtype.np))
            # (torch.func's error: it makes x require grad)
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if x.requires_grad and keep_history:
            # Differentiate through x's own history (for grad of grad) via an identity op. It
            # stands for torch.func's wrapper of x, a leaf of this transform's level: an in-place
            # op on it raises the leaf error (tracer.inplace.check_inplace).
            # (Traced, a copy: a traced view written through its memory is re-derived from its
            # base, which would move the stand-in off the graph f built from it.)
            trace = trace_state.current()
            if trace is None:
                leaf = x.view_as(x)
            else:
                leaf = x.clone()
                trace.share_counter(leaf)   # (a write of x after f read it is seen as eagerly)
            leaf.__dict__["_transform_input"] = True
            return leaf
        if again and trace_state.current() is not None:
            # Traced: a leaf is a program value, and a detach() shares x's memory and so its
            # value: one tensor passed as two differentiated arguments would be one leaf with
            # both uses' gradients (eagerly, and in JAX, each position has its own). A copy is
            # its own (only then: an identity copy of every argument would cost a pass).
            return x.detach().clone()._set_requires_grad(True)
        leaf = x.detach()
        # torch.func wraps an inference tensor at its level as any other: the wrapper may require
        # grad; but where something outside is differentiated too, the caller's level saves the
        # inference tensor itself, which raises (dispatch's check of saved inputs)
        inference = leaf.__dict__.pop("_inference", False)
        leaf._set_requires_grad(True)
        if inference and outer_grad:
            leaf.__dict__["_inference"] = True
        return leaf
    if isinstance(x, np.ndarray) or (isinstance(x, numbers.Real) and not isinstance(x, bool)):
        t = _tensor(x)
        if not t.dtype.is_floating_point:
            raise _not_real_error(k, _array_kind(x.dtype) if isinstance(x, np.ndarray) else
                                  f"a {'NumPy' if type(x).__module__ == 'numpy' else 'Python'} {type(x).__name__}")
        return t._set_requires_grad(True)
    what = f"argument {k} holds a {type(x).__name__}, which" if contained else \
        f"argument {k} of type {type(x).__name__}"
    raise TypeError(f"{what} is not a valid differentiable input: expected a fg.Tensor, a NumPy array or a Python "
                    f"float, or a tuple, list or dict of them")


def _array_kind(dtype: np.dtype) -> str:
    """An integer or bool NumPy array of `dtype`, as fg.grad's error names it."""
    return "a bool array" if dtype == np.bool_ else "an integer array"


def _not_real_error(k: int, what: str) -> TypeError:
    """fg.grad's error for differentiable argument `k`, `what` (JAX's rule: real inputs only)."""
    return TypeError(f"grad requires real-valued (floating point) inputs, but argument {k} is {what}")


def _check_output(out, transform: str) -> Tensor:
    if not isinstance(out, Tensor):
        raise TypeError(f"the function passed to {transform} must return a fg.Tensor, got {type(out).__name__}")
    if out.numel() != 1:
        raise RuntimeError(f"the function passed to {transform} must return a tensor with one element (a "
                           f"one-element tensor, such as a scalar), but its output has shape {tuple(out.shape)} "
                           f"({out.shape}, {out.numel()} elements)")
    return out       # (an integer or bool output is a constant: zero gradients, as torch.func's)


def _split_aux(result, has_aux: bool):
    """(output, aux) of `f`'s result; aux is None without has_aux."""
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: (output, aux) if "
                           "has_aux is True")
    return result[0], result[1]


def _map_tensors(aux, fn):
    """aux with `fn` applied to each of its tensors (in tuples, lists and dicts)."""
    if isinstance(aux, Tensor):
        return fn(aux)
    if isinstance(aux, (tuple, list)):
        return type(aux)(_map_tensors(a, fn) for a in aux)
    if isinstance(aux, dict):
        return {k: _map_tensors(v, fn) for k, v in aux.items()}
    return aux


def _caller_level(t: Tensor, own: set) -> Tensor:
    """A result of f as the caller sees it (torch.func's unwrapping to the caller's level):
    with its history where that reads a tensor from outside, else detached (the history of
    this transform's own leaves is not the caller's)."""
    if not t.requires_grad:
        return t
    if id(t) in own:
        return t.detach()
    if t._sym is None and t._grad_fn is None:
        return t            # a leaf from outside (traced tensors' nodes are made on demand)
    return t if _reads_outside(t, own) else t.detach()


def _unwrapped(fn, given_of: dict):
    """`fn` for f's results, except that the stand-in of a differentiated argument is given
    back as the tensor the caller passed (torch.func unwraps its wrapper to that very tensor:
    `grad_and_value(lambda x: x)(x)`'s value is x, with x's history)."""
    def unwrap(t: Tensor) -> Tensor:
        given = given_of.get(id(t))
        return given if isinstance(given, Tensor) else fn(t)
    return unwrap


def value_and_grad(f, argnums=0, has_aux: bool = False):
    """`f`'s value and its gradient with respect to `argnums` (int -> one gradient, tuple -> tuple).

    With `has_aux=True`, `f` returns `(output, aux)` and the result is
    `((value, aux), grads)`, as in JAX."""
    return _value_and_grad(f, argnums, has_aux, "fg.value_and_grad")


def _value_and_grad(f, argnums, has_aux: bool, transform: str):
    """value_and_grad; `transform` names the public transform in errors about f's output."""
    if not callable(f):
        raise TypeError(f"Expected a callable value, got {f!r}")      # JAX's check and text

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        single, nums = _argnums_tuple(argnums, len(args), transform.startswith("fg.func."))
        # Keep the gradient differentiable only when something outside is
        # differentiating through this call (grad of grad, or a caller's graph).
        # (under no_grad nothing outside is: the results are plain values, as torch.func's)
        grad_mode = is_grad_enabled()
        outer_grad = grad_mode and any(isinstance(x, Tensor) and x.requires_grad
                                       for a in args for x in _tree_leaves(a))
        # NumPy arrays are values (JAX): those not differentiated reach f as tensors too.
        args = [_tensor(a) if isinstance(a, np.ndarray) and k not in nums else a for k, a in enumerate(args)]
        given_args = list(args)
        leaves, given = [], []              # per differentiated leaf: its fresh input, what was given
        for k in nums:
            tree = args[k]
            contained = isinstance(tree, (tuple, list, dict))
            for x in _tree_leaves(tree):
                leaves.append(_as_input(x, k, again=any(g is x for g in given), keep_history=grad_mode,
                                        contained=contained, outer_grad=outer_grad))
                given.append(x)
        fresh = iter(leaves)
        for k in nums:
            args[k] = _tree_rebuild(args[k], fresh)
        own = {id(x) for x in leaves}
        given_of = {id(leaf): x for leaf, x in zip(leaves, given)}
        # The arguments passed as they are (not differentiated) that hold no history: one f
        # writes in place from a differentiated value gets none from it (see _drop_history).
        plain = [x for k, a in enumerate(args) if k not in nums for x in _tree_leaves(a)
                 if isinstance(x, Tensor) and _without_history(x) and (x._base is None or _without_history(x._base))]
        made = []           # leaves f makes to require grad (grad_mode.TRANSFORM_LEAVES)
        try:
            with enable_grad():
                TRANSFORMS_RUNNING[0] += 1
                TRANSFORM_LEAVES.append(made)
                try:
                    result = _differentiable(f, outer_grad)(*args, **kwargs)
                finally:
                    TRANSFORMS_RUNNING[0] -= 1
                    TRANSFORM_LEAVES.pop()
                    if TRANSFORM_LEAVES:            # (an enclosing transform's function made them too)
                        TRANSFORM_LEAVES[-1].extend(made)
                own.update(id(x) for x in made)     # (kept alive by `made`: no id is reused)
                out, aux = _split_aux(result, has_aux)
                out = _check_output(out, transform)
                if not outer_grad and grad_mode:
                    # f closes over a tensor that requires grad (torch.func.grad keeps that history)
                    outer_grad = _reads_outside(out, own)
                if out.requires_grad and leaves:     # (no leaves: empty containers, empty results)
                    grads = engine.grad([out], leaves, create_graph=outer_grad, allow_unused=True)
                else:
                    grads = (None,) * len(leaves)
            if not outer_grad:
                _drop_history(plain)
            grads = [g if g is not None else _zeros_like(x) for g, x in zip(grads, leaves)]
            if outer_grad:
                # Each result keeps its history only where it reads a tensor from outside (as
                # torch.func's, unwrapped from its level): d/dx of x*x + y.sum() with y
                # requiring grad is a plain tensor.
                at_caller = _unwrapped(lambda t: _caller_level(t, own), given_of)
                value = at_caller(out)
                aux = _map_tensors(aux, at_caller)
                grads = [g if g.requires_grad and _reads_outside(g, own) else g.detach() for g in grads]
            else:
                detached = _unwrapped(Tensor.detach, given_of)
                value = detached(out)
                # (a gradient without history made here is returned as it is: its detach() would
                # be an alias nothing else can see, and inside fg.compile each is an instruction)
                grads = [g if g._grad_fn is None and not g._requires_grad and g._base is None else g.detach()
                         for g in grads]
                aux = _map_tensors(aux, detached)      # (JAX: auxiliary data is not differentiated)
        finally:
            # The leaves this call made for its arguments (not x.view_as(x) of one that requires
            # grad) belong to a transformation that has returned (see _reads_outside)
            for leaf, x in zip(leaves, given):
                if leaf._grad_fn is None:
                    leaf.__dict__["_transform_done"] = True
                    ARGUMENT_LEAVES_LEFT[0] = True
                elif leaf.__dict__.get("_transform_input"):
                    # (the stand-in for an argument with history: a saved-tensor error after the
                    # call names that argument, as torch.func's, see saved_checks._modified_history)
                    leaf.__dict__["_transform_source"] = x
        by_leaf = iter(grads)               # each argument's gradients in its own containers
        grads = tuple(_tree_rebuild(given_args[k], by_leaf) for k in nums)
        grads = grads[0] if single else grads
        return ((value, aux), grads) if has_aux else (value, grads)
    return wrapped


def _without_history(t: Tensor) -> bool:
    return t._grad_fn is None and not t._requires_grad


def _drop_history(plain: list) -> None:
    """Cut the history that f's in-place writes gave arguments passed without any (`s.add_(x)`
    with x differentiated): torch.func wraps every argument at its transform's level, so such
    a write is history at that level only, and the caller's tensor has its value and no
    grad_fn. Nothing outside differentiates through the call here (no outer gradient). A view
    argument's write gave its base the history: the base's is cut, and the view's with it."""
    for x in plain:
        base = x._base
        if base is not None:
            if not _without_history(base):
                base.detach_()
            x._grad_fn, x._requires_grad = None, False
            x._view_version = x._vbox[0]        # (nothing to regenerate from the base now)
        elif not _without_history(x):
            x.detach_()


def _differentiable(f, outer_grad: bool):
    """`f`, or the Python function of a compiled `f` when the gradient must stay differentiable:
    a compiled call's backward runs on saved arrays and has no derivative itself, so
    fg.grad(fg.grad(fg.compile(f))) would give zero second derivatives. Run eagerly, it
    gives the same values (inside an outer fg.compile it is traced either way)."""
    from .compile import CompiledFunction
    if outer_grad and isinstance(f, CompiledFunction):
        return f.fn
    return f


def _zeros_like(t: Tensor) -> Tensor:
    """The gradient of an argument the output does not depend on: torch.func's zeros_like,
    laid out as the argument where its elements fill their memory densely (a transpose)."""
    return Tensor._wrap(in_dense_order(np.zeros(tuple(t.shape), dtype=t.dtype.np), layout_stand_in(t)))


def grad(f, argnums=0, has_aux: bool = False):
    """The gradient of scalar-valued `f` with respect to argument(s) `argnums`;
    with `has_aux=True`, `f` returns `(output, aux)` and this `(grads, aux)`."""
    vg = _value_and_grad(f, argnums, has_aux, "fg.grad")

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        value, grads = vg(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads
    return wrapped
