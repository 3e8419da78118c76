"""A Module's full backward hooks and backward pre-hooks, built as torch builds them.

`module.register_full_backward_hook(hook)` calls `hook(module, grad_input, grad_output)`
once the gradients with respect to the module's positional tensor inputs are computed
(None for an input that needs none, or is no tensor); `register_full_backward_pre_hook`
calls `hook(module, grad_output)` when the gradients of its outputs arrive. Either may
return replacements.

As in torch (torch.utils.hooks.BackwardHook), `module(...)` passes the inputs that require
grad through an identity autograd Function, `BackwardHookFunction`, before forward, and its
outputs through another after it; their nodes (`BackwardHookFunctionBackward`) carry node
hooks that capture the outputs' gradients (running the pre-hooks there) and, once the
gradient reaches the inputs' node, run the hooks on it. No engine change is needed: the
engine runs node pre- and post-hooks already (tracer/hooks.py).
"""
from __future__ import annotations

import warnings

from fusegrad.tracer import trace_state
from fusegrad.tracer.creation import zeros_like
from fusegrad.tracer.custom_function import Function
from fusegrad.tracer.grad_mode import is_grad_enabled
from fusegrad.tracer.tensor import Tensor
from fusegrad.tracer.user_frame import user_stacklevel

_NO_INPUT_GRAD_WARNING = (
    "Full backward hook is firing when gradients are computed with respect to module outputs since no inputs "
    "require gradients. See https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
    "#torch.nn.Module.register_full_backward_hook for more details.")


class BackwardHookFunction(Function):
    """The identity on its tensors, whose node the module's backward hooks hang on (torch's)."""

    @staticmethod
    def forward(ctx, *args):
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


class BackwardHook:
    """One call's backward hooks of `module`: `setup_input_hook` on the inputs before
    forward, `setup_output_hook` on the output after it."""

    def __init__(self, module, hooks: list, pre_hooks: list):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = 0
        self.input_index = self.output_index = None
        self.constant_inputs: dict = {}     # position -> a tensor input that needs no gradient

    def setup_input_hook(self, args: tuple) -> tuple:
        """`args` with its tensors passed through the hook Function; the node's post-hook
        runs the user's hooks on the inputs' gradients."""
        result, self.input_index = _through_identity(args, self._on_input_node)
        self.n_inputs = len(args)
        # (torch passes every tensor input through its Function, those that need no gradient
        # marked non-differentiable: their grad_input is the zeros it materialises)
        self.constant_inputs = {i: v for i, v in enumerate(args) if isinstance(v, Tensor) and not v.requires_grad}
        return result

    def setup_output_hook(self, output):
        """`output` (a tensor, or a tuple) with its tensors passed through the hook Function;
        the node's pre-hook captures the outputs' gradients and runs the pre-hooks."""
        if not isinstance(output, (Tensor, tuple)):
            warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of Tensors "
                          f"but received {type(output)}", stacklevel=user_stacklevel())
        single = not isinstance(output, tuple)
        outputs = (output,) if single else output
        result, self.output_index = _through_identity(outputs, self._on_output_node)
        self.n_outputs = len(outputs)
        return result[0] if single else result

    def _on_input_node(self, node) -> None:
        def hook(grad_inputs, _):
            if self.grad_outputs is None:
                return None     # (a gradient reaching the inputs without passing the outputs)
            packed = list(_packed(self.input_index, grad_inputs, self.n_inputs))
            for i, t in self.constant_inputs.items():
                packed[i] = zeros_like(t)
            packed = tuple(packed)
            for user_hook in self.hooks:
                result = user_hook(self.module, packed, self.grad_outputs)
                if result is None:
                    continue
                if len(result) != len(packed):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(result)}, "
                                       f"but expected {len(packed)}")
                packed = result
            self.grad_outputs = None
            return tuple(packed[i] for i in self.input_index)
        node.register_hook(hook)

    def _on_output_node(self, node) -> None:
        def hook(grad_outputs):
            self.grad_outputs = _packed(self.output_index, grad_outputs, self.n_outputs)
            for pre_hook in self.pre_hooks:
                result = pre_hook(self.module, self.grad_outputs)
                if result is None:
                    continue
                if len(result) != len(self.grad_outputs):
                    raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got "
                                       f"{len(result)}, but expected {len(self.grad_outputs)}")
                self.grad_outputs = result
            captured = self.grad_outputs
            if self.input_index is None:
                # no input requires grad: the hooks run here, with no input gradients (torch's)
                warnings.warn(_NO_INPUT_GRAD_WARNING, stacklevel=user_stacklevel())
                no_inputs = (None,) * self.n_inputs
                for user_hook in self.hooks:
                    result = user_hook(self.module, no_inputs, self.grad_outputs)
                    if result is not None and not (isinstance(result, tuple) and all(r is None for r in result)):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                           "always return None or None for all gradients.")
                self.grad_outputs = None
            return tuple(captured[i] for i in self.output_index)
        node.register_prehook(hook)


def _through_identity(values: tuple, on_node):
    """(values with the tensors that require grad replaced by the hook Function's outputs, the
    positions of those tensors); (values, None) where none requires grad or grad mode is off."""
    index = [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]
    if not index or not is_grad_enabled():
        return values, None
    if trace_state.current() is not None:
        raise NotImplementedError("fusegrad: a Module's backward hooks (register_full_backward_hook / "
                                  "register_full_backward_pre_hook) do not run inside fg.compile; call the module "
                                  "eagerly, or remove the hooks")
    passed = BackwardHookFunction.apply(*[values[i] for i in index])
    on_node(passed[0].grad_fn)
    replaced = list(values)
    for i, t in zip(index, passed):
        replaced[i] = t
    return tuple(replaced), index


def _packed(index: list, grads, size: int) -> tuple:
    """One gradient per position (None where the position holds no hooked tensor)."""
    packed = [None] * size
    for i, g in zip(index, grads):
        packed[i] = g
    return tuple(packed)
