"""fg.func: torch.func's function transforms (grad, grad_and_value, vjp, jvp, jacrev,
jacfwd, hessian, vmap, functional_call), with torch.func's signatures and results.
The implementations and how each is computed (vmap is a loop; jvp and jacfwd come from
reverse mode) are described in fusegrad.runtime.function_transforms.

The top-level JAX-style names fg.vmap, fg.jacrev, fg.jacfwd, fg.hessian, fg.jvp and
fg.vjp are these same functions, with torch.func's argument conventions (vmap's
in_dims/out_dims rather than JAX's in_axes/out_axes; vjp's vjp_fn returns a tuple)."""
from fusegrad.runtime.function_transforms import (functional_call, grad, grad_and_value, hessian, jacfwd, jacrev,
                                                  jvp, vjp, vmap)

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp", "vmap"]


def _tree_spec(n: int) -> str:
    """torch's printed TreeSpec of a tuple of n tensors (its texts show it)."""
    return "TreeSpec(tuple, None, [" + ",\n  ".join(["*"] * n) + "])"


def linearize(func, *primals):
    """torch.func.linearize: (func(*primals), jvp_fn), where jvp_fn(*tangents) is the
    Jacobian-vector product of func at primals (computed by fg.func.jvp at each call, where
    torch traces the linearised graph once)."""
    from fusegrad.tracer.grad_mode import no_grad
    from fusegrad.tracer.tensor import Tensor
    with no_grad():
        output = func(*primals)

    def jvp_fn(*tangents):
        if len(tangents) != len(primals):
            raise RuntimeError(f"Expected the tangents {_tree_spec(len(tangents))} to have the same argspec as the "
                               f"primals {_tree_spec(len(primals))}")
        for k, (t, p) in enumerate(zip(tangents, primals)):
            if isinstance(t, Tensor) and isinstance(p, Tensor) and tuple(t.shape) != tuple(p.shape):
                raise RuntimeError(f"tangent:{k} with shape torch.Size({list(t.shape)}) in flattened pytree doesn't "
                                   f"match the shape torch.Size({list(p.shape)}) of the corresponding primal.")
        return jvp(func, primals, tangents)[1]
    return output, jvp_fn


def stack_module_state(models):
    """torch.func.stack_module_state: (params, buffers), each name's tensors of the models
    stacked along a new first dim (leaves requiring grad where the models' do)."""
    import fusegrad as fg
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(tensors, name):
        if not (all(t.requires_grad for t in tensors) or all(not t.requires_grad for t in tensors)):
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        result = fg.stack(tensors)
        return result.detach().requires_grad_() if tensors[0].requires_grad else result
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: stacked(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    buffers = {k: stacked(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers


__all__ += ["linearize", "stack_module_state"]
