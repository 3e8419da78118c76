"""fg.autograd: `backward` and `grad`, as torch.autograd."""
from fusegrad.tracer.engine import backward, explain, grad
from fusegrad.tracer.node import Node as Function  # noqa: F401  (the grad_fn base class)

__all__ = ["backward", "grad", "explain"]
