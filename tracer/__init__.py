"""fusegrad.tracer: Tensor, grad mode, recording ops (eagerly or into a
trace), grad_fn nodes and the eager autograd engine."""
from .tensor import Size, Tensor
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled
from . import functional, creation, indexing, inplace, engine
from .methods import bind_methods
from .node import Node, AccumulateGrad

bind_methods()
