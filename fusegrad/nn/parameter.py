"""torch.nn.parameter's names: Parameter and Buffer (nn/module.py), the lazy modules'
uninitialized forms (nn/lazy.py) and is_lazy."""
from fusegrad.nn.lazy import UninitializedBuffer, UninitializedParameter
from fusegrad.nn.module import Buffer, Parameter, _is_lazy as is_lazy

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]
