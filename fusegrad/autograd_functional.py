"""fg.autograd.functional: torch.autograd.functional's jacobian, hessian, vjp, jvp, hvp, vhp.

The same algorithms as torch's, over the eager engine (fg.autograd.grad): the
inputs are copied to fresh leaves (`view_as` under `create_graph` for inputs
that require grad, so the results keep history to them), `func` runs once,
and the products come from backward passes; `jvp` and `hvp` use torch's
double-backward trick. The tuple conventions are torch's: a Tensor argument
gives Tensor results, a tuple gives tuples; `jacobian` of a tuple of outputs
with respect to a tuple of inputs is a tuple (per output) of tuples (per
input), each of shape `output.shape + input.shape`.

Choices: `vectorize=True` is accepted and computes the same values with one
backward pass per output element (torch batches them with vmap), and
`strategy="forward-mode"` (which torch allows only with `vectorize=True`)
computes the Jacobian in reverse mode too: the same values.
"""
from __future__ import annotations

from fusegrad.autograd import grad as _grad
from fusegrad.tracer.creation import zeros_like
from fusegrad.tracer.functional import stack
from fusegrad.tracer.grad_mode import enable_grad, set_grad_enabled
from fusegrad.tracer import is_grad_enabled
from fusegrad.tracer.tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(inp, arg_name: str, fn_name: str):
    """(whether `inp` was a tuple, `inp` as a tuple of Tensors); torch's TypeError otherwise."""
    is_tuple = isinstance(inp, tuple)
    items = inp if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"{where} has type {type(el)}.")
    return is_tuple, items


def _tuple_postprocess(res, to_unpack):
    """Unpack the tuple levels of `res` that were not tuples in the call (torch's rule)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph: bool, need_graph: bool):
    """Fresh leaves for `inputs`: a view keeping history under create_graph, else a detached copy."""
    return tuple(inp.view_as(inp) if create_graph and inp.requires_grad else
                 inp.detach().requires_grad_(need_graph) for inp in inputs)


def _grad_postprocess(inputs, create_graph: bool):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


def _check_requires_grad(inputs, input_type: str, strict: bool) -> None:
    """strict mode's checks (torch's texts)."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode.")
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(f"The hessian of the user-provided function with respect to input {i} is "
                                   "independent of the input. This is not allowed in strict mode. You should ensure "
                                   "that your function is thrice differentiable and that the hessian depends on the "
                                   "inputs.")
            if input_type == "jacobian":
                raise RuntimeError(f"While computing the hessian, found that the jacobian of the user-provided "
                                   f"function with respect to input {i} is independent of the input. This is not "
                                   "allowed in strict mode. You should ensure that your function is twice "
                                   "differentiable and that the jacobian depends on the inputs (this would be "
                                   "violated by a linear function for example).")
            if input_type == "grad_inputs":
                raise RuntimeError(f"The gradient with respect to input {i} is independent of the inputs of the "
                                   "user-provided function. This is not allowed in strict mode.")
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                               "must be computed in a differentiable manner from the input when running in strict "
                               "mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """fg.autograd.grad over the outputs that require grad (None for every input when none does)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(out, g) for out, g in zip(outputs, grad_outputs) if out is not None and out.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs, seeds = zip(*pairs)
    return _grad(outs, inputs, seeds, allow_unused=True, create_graph=create_graph, retain_graph=retain_graph)


_STAGE_TEXTS = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when using "
                  "the double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. "
                         "This is not allowed in strict mode as it prevents from using the double backward trick to "
                         "replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict: bool, create_graph: bool, stage: str):
    """Zeros for the None gradients (strict mode raises torch's errors instead)."""
    res = ()
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise RuntimeError(_STAGE_TEXTS[stage].format(i=i))
            grads_i = zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode when create_graph=True.")
        res += (grads_i,)
    return res


def _prepare_v(v, against, is_tuple: bool, create_graph: bool, fn_name: str, what: str):
    """`v` checked against `against`; None is allowed only for one single-element tensor."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, against, is_tuple)
    elif len(against) != 1 or against[0].nelement() != 1:
        raise RuntimeError(f"The vector v can only be None if the {what} a single Tensor with a single element.")
    return v


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """torch.autograd.functional.vjp: `(func(*inputs), v^T J)`; the second has the inputs' structure."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        v = _prepare_v(v, outputs, is_outputs_tuple, create_graph, "vjp", "user-provided function returns")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """torch.autograd.functional.jvp: `(func(*inputs), J v)`; the second has the outputs' structure.
    Computed as torch does, by the double-backward trick."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "jvp", "input to the user-provided function is")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_outputs_tuple)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """torch.autograd.functional.jacobian: J[i][j] of shape `outputs[i].shape + inputs[j].shape`,
    unpacked where the inputs or outputs are not tuples. One backward pass per output element
    (also with `vectorize=True`); `strategy="forward-mode"` gives the same values from reverse mode."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either set '
                                      '`create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are '
                               'not supported together (yet). Please either set `strict=False` or '
                               '`strategy="reverse-mode"`.')
        _as_tuple(inputs, "inputs", "jacobian")
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly "
                                      "implemented for `vectorize=True`.")
    if vectorize and strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                           "supported together. Please either set `strict=False` or `vectorize=False`.")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        result = ()
        for i, out in enumerate(outputs):
            jac_i = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for j in range(out.nelement()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
                for el_idx, (jac_i_el, vj_el, inp_el) in enumerate(zip(jac_i, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError(f"The jacobian of the user-provided function is independent of input "
                                               f"{i}. This is not allowed in strict mode when create_graph=True.")
                        jac_i_el.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input "
                                               f"{el_idx}. This is not allowed in strict mode.")
                        jac_i_el.append(zeros_like(inp_el))
            result += (tuple(_stacked(jac_i_el, inputs[k]).view(out.size() + inputs[k].size())
                             for k, jac_i_el in enumerate(jac_i)),)
        result = _grad_postprocess(result, create_graph)
        return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def _stacked(rows: list, like: Tensor) -> Tensor:
    """stack(rows), or an empty (0, *like.shape) tensor for an output without elements."""
    return stack(rows) if rows else zeros_like(like).unsqueeze(0)[:0]


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """torch.autograd.functional.hessian of a function with one single-element output: H[i][j]
    of shape `inputs[i].shape + inputs[j].shape` (the Jacobian of the Jacobian)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _single_scalar_output(func, inputs, strict: bool, fn_name: str):
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")
    return is_outputs_tuple, outputs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """torch.autograd.functional.vhp: `(func(*inputs), v^T H)` for a single-element output."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "vhp", "input to the user-provided function is")
        is_outputs_tuple, outputs = _single_scalar_output(func, inputs, strict, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """torch.autograd.functional.hvp: `(func(*inputs), H v)` for a single-element output, by
    torch's double-backward trick."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "hvp", "input to the user-provided function is")
        is_outputs_tuple, outputs = _single_scalar_output(func, inputs, strict, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)
