"""torch.nn's multi-device and deprecated module forms, as they behave in one CPU process:
DataParallel (no devices to spread over: the wrapped module runs as is), SyncBatchNorm (no other
processes to synchronise with: batch norm over the local batch, any number of dims) and its
convert_sync_batchnorm, and the deprecated NLLLoss2d and Container (torch's warnings). Also
nn.utils.stateless.functional_call, deprecated for torch.func's (fusegrad/nn/utils/stateless.py)."""
from __future__ import annotations

import warnings

import fusegrad as fg
from fusegrad.tracer.user_frame import user_stacklevel

from .layers import NLLLoss
from .module import Module
from .normalization import _BatchNorm


class DataParallel(Module):
    """torch.nn.DataParallel on a machine with no accelerator: `module` runs as is (its state
    under the key prefix `module.`); device_ids is empty."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids = []
        self.dim = dim
        self.output_device = None

    def forward(self, *inputs, **kwargs):
        """The wrapped module's forward."""
        return self.module(*inputs, **kwargs)


class SyncBatchNorm(_BatchNorm):
    """torch.nn.SyncBatchNorm in one process: batch norm of a (N, C, *) input over its own batch."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        """Batch norm over the batch (torch's checks first)."""
        self._check_input_dim(input)
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """`module` with each batch norm layer in it replaced by a SyncBatchNorm holding its
        parameters and buffers (the same tensors), as torch's."""
        output = module
        if isinstance(module, _BatchNorm):
            output = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                         process_group, bias=module.bias is not None)
            if module.affine:
                with fg.no_grad():
                    output.weight = module.weight
                    output.bias = module.bias
            output.running_mean = module.running_mean
            output.running_var = module.running_var
            output.num_batches_tracked = module.num_batches_tracked
            output.training = module.training
        for name, child in module.named_children():
            output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return output


class NLLLoss2d(NLLLoss):
    """torch.nn.NLLLoss2d: NLLLoss, deprecated (FutureWarning)."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement and "
                      "see https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.", FutureWarning,
                      stacklevel=user_stacklevel())
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class Container(Module):
    """torch.nn.Container: a Module holding the keyword arguments as submodules, deprecated."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
                      "Subclass that instead.", FutureWarning, stacklevel=user_stacklevel())
        for key, value in kwargs.items():
            self.add_module(key, value)
