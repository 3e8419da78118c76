"""torch.nn.utils.stateless: functional_call, deprecated for torch.func.functional_call."""
import warnings

from fusegrad.runtime.function_transforms import functional_call as _functional_call
from fusegrad.tracer.user_frame import user_stacklevel


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """torch.nn.utils.stateless.functional_call: fg.func.functional_call, with torch's FutureWarning."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in "
                  "a future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
                  "replacement.", FutureWarning, stacklevel=user_stacklevel())
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
