"""Custom autograd functions: `fg.autograd.Function`, as torch.autograd.Function.

    class Cube(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * grad

    y = Cube.apply(x)

`apply` runs `forward` with grad mode off and gives its tensor outputs one grad_fn,
a `<Name>Backward` node that is also the `ctx` (as torch's: `y.grad_fn.saved_tensors`).
The node is a `custom_call` (ir/ops/custom.py) whose VJP calls `backward` on the
gradient tensors: the eager engine calls `run_backward` node by node, and a
create_graph backward calls it through `apply_tensors` with grad mode on, so a
differentiable `backward` gives differentiable gradients (higher derivatives, fg.grad).
Inside fg.compile the call is refused with a clear error: the trace cannot run Python
code at backward time.
"""
from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np

from fusegrad.ir import TensorType
from fusegrad.ir.ops import expands_to, unbroadcast_axes
from fusegrad.ir.program import freeze_attrs

from . import forward_ad, saved_hooks, trace_state
from .dispatch import edge_of
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .node import Node, SavedTensor, _FREED_MSG
from .tensor import Tensor
from .user_frame import user_stacklevel

_NO_BACKWARD = ("You must implement either the backward or vjp method for your custom autograd.Function to use it "
                "with backward mode AD.")


class FunctionCtx:
    """What `forward` (or `setup_context`) records for `backward`; torch's ctx methods."""

    def save_for_forward(self, *tensors) -> None:
        """Keep `tensors` (or None) for `jvp` (forward-mode AD), which reads them as
        ctx.saved_tensors."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_forward expects all arguments to be tensors; but got an argument of "
                                f"type {type(t).__name__}")
        self._to_save_forward = tensors

    def save_for_backward(self, *tensors) -> None:
        """Keep `tensors` (or None) for backward, version-checked when read back."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to save_for_backward (torch's error if one changed in place since,
        or if a backward without retain_graph freed them)."""
        if self.__dict__.get("_saved_freed"):
            raise RuntimeError(_FREED_MSG)
        saved = self.__dict__.get("_saved_slots")
        if saved is None:                   # forward still running: what it asked to save
            return tuple(self.__dict__.get("_to_save", ()))
        from .saved_checks import modified_error, output_of
        out = []
        for k, (t, slot) in enumerate(saved):
            if isinstance(slot, saved_hooks.PackedSaved):
                out.append(slot.unpacked())
                continue
            if slot is not None and slot.box[0] != slot.version:
                # (a saved output of this function is named by this node, as torch's: "output 0
                # of MyExp" after a later y.add_(1); a saved input by its history now)
                owner, output_nr = self._saved_outputs.get(k) or (t._grad_fn, t._output_nr)
                raise modified_error(slot.array.shape, slot.array.dtype.name, output_of(owner, output_nr),
                                     slot.box[0], slot.version)
            out.append(t)
        return tuple(out)

    def mark_dirty(self, *tensors) -> None:
        """Tensors `forward` modified in place (they must be returned)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Outputs that carry no gradient (indices, masks): they get no grad_fn."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward gets zeros (True, the default) or None for outputs without a gradient."""
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The grad_fn of a custom Function's outputs, and its `ctx`: attributes set in forward
    live on it. Subclassed per Function as `<Name>Backward` (torch's class name)."""

    materialize_grads = True
    _function = None                    # the Function subclass

    def __repr__(self) -> str:
        # torch makes the class in torch.autograd.function, so its default repr is qualified:
        # <torch.autograd.function.SqBackward object at 0x...> (built-in nodes' are not)
        return f"<fg.autograd.function.{type(self).__name__} object at {hex(id(self))}>"

    def run_backward(self, needs: tuple, given: tuple, seeds: list) -> list:
        """The engine's call (tracer/engine.py): per input, its gradient array or None."""
        grads = [Tensor._wrap(np.array(g, copy=True)) for g in seeds]
        full = iter(grads)
        cotangents = [next(full) if g else (Tensor._wrap(_zeros_of(t)) if self.materialize_grads else None)
                      for g, t in zip(given, self.out_types)]
        cotangents = self._with_non_tensor_outputs(cotangents)
        with no_grad():
            results = self._call_backward(cotangents)
        return [None if r is None or not need else r._concrete() for r, need in zip(results, needs)]

    def apply_tensors(self, *cotangents) -> tuple:
        """A create_graph backward's call: `backward` on gradient tensors with grad mode on;
        one tensor per input (zeros where backward gave None)."""
        with enable_grad():
            results = self._call_backward(self._with_non_tensor_outputs(list(cotangents)))
        return tuple(r if r is not None else Tensor._wrap(_zeros_of(t))
                     for r, t in zip(results, self.in_types))

    def _with_non_tensor_outputs(self, cotangents: list) -> list:
        """One cotangent per output of forward: None for an output that is not a tensor (torch's)."""
        given = iter(cotangents)
        return [next(given) if is_tensor else None for is_tensor in self._output_is_tensor]

    def _call_backward(self, cotangents: list) -> list:
        """`backward(ctx, *cotangents)` with torch's checks of what it returns; per tensor input
        of forward, a Tensor of its shape and dtype, or None."""
        function = self._function
        result = function.backward(self, *cotangents)
        result = result if isinstance(result, tuple) else (result,)
        name = type(self).__name__
        if len(result) != len(self._arg_is_tensor):
            raise RuntimeError(f"function {name} returned an incorrect number of gradients (expected "
                               f"{len(self._arg_is_tensor)}, got {len(result)})")
        grads = []
        for position, (g, is_tensor) in enumerate(zip(result, self._arg_is_tensor), start=1):
            if not is_tensor:
                if g is not None:
                    raise RuntimeError(f"function {name} returned a gradient different than None at position "
                                       f"{position}, but the corresponding forward input was not a Variable")
                continue
            grads.append(g)
        checked = []
        for index, (g, t) in enumerate(zip(grads, self.in_types)):
            if g is None:
                checked.append(None)
                continue
            if not isinstance(g, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
            if tuple(g.shape) != tuple(t.shape):
                if not expands_to(t.shape, g.shape):
                    raise RuntimeError(f"Function {name} returned an invalid gradient at index {index} - got "
                                       f"[{', '.join(map(str, g.shape))}] but expected shape compatible with "
                                       f"[{', '.join(map(str, t.shape))}]")
                g = _sum_to(g, tuple(t.shape))      # (torch's validate_outputs: at::sum_to)
            if g.dtype is not t.dtype:
                from .functional import cast
                g = cast(g, t.dtype)
            checked.append(g)
        return checked

    def free_saved(self) -> None:
        """After a backward without retain_graph: saved_tensors raises torch's error from now on."""
        super().free_saved()
        self._saved_freed = True


def _zeros_of(t: TensorType) -> np.ndarray:
    """The zero array of a value's type: the gradient where there is none."""
    return np.zeros(t.shape, t.dtype.np)


def _sum_to(g: Tensor, shape: tuple) -> Tensor:
    """`g` summed over the dims a tensor of `shape` was broadcast along."""
    dims = tuple(unbroadcast_axes(g.shape, shape))
    summed = g.sum(dims, keepdim=True) if dims else g
    return summed.reshape(shape)


class _Forward:
    """custom_call protocol (ir/ops/custom.py) of a custom Function's node: its outputs as
    computed, and the node itself as the VJP (`vjp_fn`)."""

    def __init__(self, node: BackwardCFunction, in_types: list, out_types: list, results: list):
        self.out_types, self.results, self.node = out_types, results, node
        self.vjp_fn = _Backward(node, in_types)

    def run(self, *arrays) -> tuple:
        return tuple(self.results)

    def __repr__(self) -> str:
        return f"{self.node._function.__name__}.forward"


class _Backward:
    """custom_call protocol of `backward`: arrays (run) or, under create_graph, IR that calls
    the node's apply_tensors when the engine runs it on tensors (expand)."""

    def __init__(self, node: BackwardCFunction, in_types: list):
        self.node = node
        self.out_types = list(in_types)

    def run(self, *cotangents) -> tuple:
        given = tuple(True for _ in cotangents)
        grads = self.node.run_backward(tuple(True for _ in self.out_types), given, list(cotangents))
        return tuple(g if g is not None else _zeros_of(t) for g, t in zip(grads, self.out_types))

    def apply_tensors(self, *cotangents) -> tuple:
        return self.node.apply_tensors(*cotangents)

    def __repr__(self) -> str:
        return f"{self.node._function.__name__}.backward"

    def expand(self, e, xs, gs) -> list:
        grads = e.op("custom_call", *gs, fn=self)
        return list(grads) if isinstance(grads, tuple) else [grads]


class _FunctionMeta(type):
    """Gives each Function subclass its `<Name>Backward` node class."""

    def __init__(cls, name, bases, namespace):
        super().__init__(name, bases, namespace)
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_function": cls})


class Function(metaclass=_FunctionMeta):
    """Base class of custom differentiable functions: subclass it with static `forward(ctx,
    *args)` (or `forward(*args)` with `setup_context(ctx, inputs, output)`) and
    `backward(ctx, *grad_outputs)` returning one gradient (or None) per forward argument,
    then call `YourFunction.apply(*args)`."""

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions are all static, so "
                      "you should invoke them on the class itself. Instantiating an autograd function will raise an "
                      "error in a future version of PyTorch.", DeprecationWarning, stacklevel=user_stacklevel())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """The function's value (override)."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Record what backward needs, when forward does not take ctx (override, optional)."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """One gradient per forward argument, None where there is none (override)."""
        raise NotImplementedError(_NO_BACKWARD)

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """The outputs' tangents from the inputs' (forward-mode AD, fg.autograd.forward_ad):
        override to use the function with dual tensors."""
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward on `args`; its tensor outputs get this function's backward as grad_fn."""
        if trace_state.current() is not None:
            raise NotImplementedError(f"fusegrad: a custom autograd.Function ({cls.__name__}) cannot run inside "
                                      "fg.compile (its backward is Python code the compiled program cannot call); "
                                      "call it outside the compiled function")
        own_setup = cls.setup_context.__func__ if hasattr(cls.setup_context, "__func__") else cls.setup_context
        separate_setup = own_setup is not Function.__dict__["setup_context"].__func__
        # torch binds keywords and defaults to forward's parameters: each one is an input
        # (backward returns a gradient, or None, per parameter)
        args = _bound_arguments(cls.forward, args, kwargs, skip_ctx=not separate_setup)
        tensors = [a for a in args if isinstance(a, Tensor)]
        node = cls._backward_cls.__new__(cls._backward_cls)
        node.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        node._arg_is_tensor = tuple(isinstance(a, Tensor) for a in args)
        tangents = forward_ad.input_tangents(args)
        if tangents is not None and _own(cls, "jvp") is None:
            raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                      "with forward mode AD.")
        with no_grad(), forward_ad.tangents_hidden(tangents is not None):
            if separate_setup:
                output = cls.forward(*args)
                cls.setup_context(node, tuple(args), output)
            else:
                output = cls.forward(node, *args)
        out_tangents = forward_ad.custom_jvp(cls.jvp, node, args, tangents) if tangents is not None else None
        record = is_grad_enabled() and any(t.requires_grad for t in tensors)
        if record:
            output = _attach(node, tensors, output)
        if out_tangents is not None:
            forward_ad.give_tangents(output, out_tangents)
        return output


def _own(cls, name: str):
    """cls's own override of Function's method `name`, or None."""
    fn = getattr(cls, name)
    return None if fn is getattr(Function, name) else fn


def _bound_arguments(forward, args: tuple, kwargs: dict, skip_ctx: bool) -> list:
    """`args` and `kwargs` bound to forward's parameters, defaults filled in, as a list (torch's
    bind_default_args); as given when forward takes *args or **kwargs."""
    try:
        signature = inspect.signature(forward)
    except (TypeError, ValueError):
        return list(args) + list(kwargs.values())
    parameters = list(signature.parameters.values())[1 if skip_ctx else 0:]
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
        return list(args) + list(kwargs.values())
    bound = inspect.Signature(parameters).bind(*args, **kwargs)
    bound.apply_defaults()
    return list(bound.args)


def _attach(node: BackwardCFunction, tensors: list, output):
    """Give forward's tensor outputs their history through `node`."""
    single = not isinstance(output, tuple)
    outputs = list((output,) if single else output)
    inputs = {id(t) for t in tensors}
    dirty = {id(t) for t in node.__dict__.get("_dirty", ())}
    frozen_out = {id(t) for t in node.__dict__.get("_non_differentiable", ())}
    # (by position: an input returned as is and marked non-differentiable is replaced below)
    frozen = {k for k, o in enumerate(outputs) if id(o) in frozen_out}
    for k, o in enumerate(outputs):
        if isinstance(o, Tensor) and id(o) in inputs and id(o) not in dirty:
            outputs[k] = o.detach()         # an input returned as is: a new tensor on its memory (torch's view)
    out_tensors = [(k, o) for k, o in enumerate(outputs) if isinstance(o, Tensor)]
    node._output_is_tensor = tuple(isinstance(o, Tensor) for o in outputs)
    out_types = [TensorType(tuple(o.shape), o.dtype) for _, o in out_tensors]
    in_types = [TensorType(tuple(t.shape), t.dtype) for t in tensors]
    fwd = _Forward(node, in_types, out_types, [o._concrete() for _, o in out_tensors])
    Node.__init__(node, "custom_call", freeze_attrs({"fn": fwd}), tuple(in_types), tuple(out_types),
                  tuple(edge_of(t) if t.requires_grad else None for t in tensors), (None,) * len(tensors), {})
    to_save = node.__dict__.pop("_to_save", ())
    node._saved_slots = [(t, None if t is None else SavedTensor(t._concrete(), t._vbox, t)) for t in to_save]
    if saved_hooks.HOOKS:
        # (torch packs what save_for_backward kept through saved_tensors_hooks, in order)
        node._saved_slots = [(t, slot if t is None else saved_hooks.pack_tensor(t)) for t, slot in node._saved_slots]
    node._had_saved = bool(to_save)
    for n, (k, o) in enumerate(out_tensors):
        if k in frozen or not o.dtype.is_floating_point:
            continue
        if id(o) in dirty and o.is_leaf and o.requires_grad:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        o._grad_fn, o._output_nr, o._requires_grad = node, n, True
    node._saved_outputs = {k: (node, t._output_nr) for k, (t, _) in enumerate(node._saved_slots)
                           if t is not None and t._grad_fn is node}
    return outputs[0] if single else tuple(outputs)


# ---------------------------------------------------------------- once_differentiable
_TWICE = "trying to differentiate twice a function that was marked with @once_differentiable"


class _DelayedError(Function):
    """torch's DelayedError: passes its inputs through; differentiating it raises."""

    @staticmethod
    def forward(ctx, *values):
        return values if len(values) != 1 else values[0]

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(_TWICE)


_DelayedError._backward_cls.__name__ = _DelayedError._backward_cls.__qualname__ = "Error"   # (torch's node)


def once_differentiable(fn):
    """torch.autograd.function.once_differentiable: a backward run under no_grad; where a
    create_graph backward gives it gradients that require grad, its results come out of an
    `Error` node, whose own backward raises torch's error."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not is_grad_enabled() or not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        aliased = _DelayedError.apply(*[o.detach().requires_grad_() if isinstance(o, Tensor) else o for o in outs])
        aliased = aliased if isinstance(aliased, tuple) else (aliased,)
        return aliased[0] if single else tuple(aliased)
    return wrapper
