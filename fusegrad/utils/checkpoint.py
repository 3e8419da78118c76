"""torch.utils.checkpoint: checkpoint(fn, *args) and checkpoint_sequential, with torch's values,
nodes, warnings and errors.

- use_reentrant=False (torch's recommended form): torch's graph is the function's own (its
  saved tensors are recomputed through hooks), so the result has the function's nodes; here the
  function simply runs with grad: the same values, nodes and gradients, without the memory
  saving (fusegrad keeps the saved values).
- use_reentrant=True (and torch's default when it is not given, which warns that it should be):
  one CheckpointFunction node (CheckpointFunctionBackward) over the tensor arguments; the forward
  runs under no_grad and the backward runs the function again with grad, from the random state
  it had at the forward (so dropout draws the same mask), then backpropagates through it.
  Inside fg.compile the function is traced into the call's program (whose backward is
  compiled), as torch.compile inlines a checkpoint.
"""
from __future__ import annotations

import warnings

import fusegrad as fg
from fusegrad.tracer.custom_function import Function
from fusegrad.tracer import trace_state
from fusegrad.tracer.engine import CHECKPOINT_VALID
from fusegrad.tracer.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]

_EXPLICIT_REENTRANT = ("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                       "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                       "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                       "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
                       "the two variants.")


class CheckpointFunction(Function):
    """The reentrant checkpoint's node: forward without grad, backward by recomputing."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.rng_state = fg.get_rng_state()
        ctx.inputs, ctx.tensor_indices, tensors = [], [], []
        for k, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors.append(arg)
                ctx.tensor_indices.append(k)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensors)
        with fg.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not CHECKPOINT_VALID[0]:
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing "
                               "an `inputs` parameter to .backward(). To resolve this error, you can either set "
                               "use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for k, tensor in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[k] = tensor.detach().requires_grad_(tensor.requires_grad)
        state = fg.get_rng_state() if ctx.preserve_rng_state else None
        if state is not None:
            fg.set_rng_state(ctx.rng_state)         # (the forward's random numbers: dropout's mask)
        try:
            with fg.enable_grad():
                outputs = ctx.run_function(*inputs)
        finally:
            if state is not None:
                fg.set_rng_state(state)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(out, g) for out, g in zip(outputs, grads) if isinstance(out, Tensor) and out.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        fg.autograd.backward([out for out, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in inputs)


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=None, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, **kwargs):
    """torch.utils.checkpoint.checkpoint: `function(*args, **kwargs)`, its intermediate values
    recomputed in the backward (see the module for what each form does here)."""
    if use_reentrant is None:
        warnings.warn(_EXPLICIT_REENTRANT, UserWarning, stacklevel=2)
        use_reentrant = True
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant:
        if context_fn is not None or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", UserWarning,
                          stacklevel=2)
        if trace_state.current() is not None:
            # (inside fg.compile the call is one program whose backward is compiled too: the
            # function's ops are traced into it, as torch.compile inlines a checkpoint)
            return function(*args)
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """torch.utils.checkpoint.checkpoint_sequential: the modules (or functions) run in
    `segments` chunks, each but the last checkpointed."""
    if use_reentrant is None:
        warnings.warn(_EXPLICIT_REENTRANT, UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if isinstance(functions, fg.nn.Sequential):
        functions = list(functions.children())
    functions = list(functions)

    def run_function(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1)(input)
