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
