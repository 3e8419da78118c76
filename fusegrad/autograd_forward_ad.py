"""torch.autograd.forward_ad: dual tensors (tracer/forward_ad.py has how tangents propagate)."""
from fusegrad.tracer.forward_ad import (UnpackedDualTensor, dual_level, enter_dual_level, exit_dual_level,
                                        make_dual, unpack_dual)

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]
