"""torch's lazy modules: LazyLinear, LazyConv1d/2d/3d, LazyConvTranspose1d/2d/3d,
LazyBatchNorm1d/2d/3d and LazyInstanceNorm1d/2d/3d, whose parameters' shapes come from the first
input, and the UninitializedParameter / UninitializedBuffer they hold until then.

As torch's: the first call materializes the parameters in place (the same objects, so an
optimizer made before it optimizes them), draws their initial values as the eager module does,
and turns the module into its eager class (`LazyLinear` becomes `Linear`). load_state_dict
materializes them from the loaded shapes. An uninitialized parameter refuses its tensor
methods and operators with torch's ValueError (its shape with torch's RuntimeError); size(),
dtype, requires_grad, grad and data answer. (A function form given one, fg.add(p, 1), sees an
empty tensor: only the methods are guarded.)
"""
from __future__ import annotations

import numpy as np

import fusegrad as fg
from fusegrad.tracer.tensor import Tensor

from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .layers import Linear
from .module import Parameter
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d,
                            InstanceNorm3d)

__all__ = ["UninitializedParameter", "UninitializedBuffer", "LazyModuleMixin", "LazyLinear", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]

# What an uninitialized tensor still answers (torch's _allowed_methods and properties).
_ALLOWED = frozenset({"size", "copy_", "is_complex", "is_floating_point", "float", "double", "long", "cpu", "to",
                      "get_device", "materialize", "cls_to_become", "dtype", "device", "requires_grad",
                      "requires_grad_", "grad", "data", "is_leaf", "grad_fn", "share_memory_", "shape"})
# The operators an uninitialized tensor refuses, with how torch's error names what was called
# (a TensorBase method, a slot wrapper, or a Python function of torch.Tensor: "{fn}" is then the
# refusing function itself, as torch prints its function's address).
_OPERATORS = {
    "add": "<method 'add' of 'torch._C.TensorBase' objects>", "radd": "<method 'add' of 'torch._C.TensorBase' objects>",
    "iadd": "<method 'add_' of 'torch._C.TensorBase' objects>", "sub": "<method 'sub' of 'torch._C.TensorBase' objects>",
    "isub": "<method 'sub_' of 'torch._C.TensorBase' objects>", "rsub": "<function Tensor.__rsub__ at {fn}>",
    "mul": "<method 'mul' of 'torch._C.TensorBase' objects>", "rmul": "<method 'mul' of 'torch._C.TensorBase' objects>",
    "imul": "<method 'mul_' of 'torch._C.TensorBase' objects>", "truediv": "<method 'div' of 'torch._C.TensorBase' objects>",
    "itruediv": "<method 'div_' of 'torch._C.TensorBase' objects>", "rtruediv": "<function Tensor.__rdiv__ at {fn}>",
    "floordiv": "<function Tensor.__floordiv__ at {fn}>", "rfloordiv": "<function Tensor.__rfloordiv__ at {fn}>",
    "mod": "<method 'remainder' of 'torch._C.TensorBase' objects>", "rmod": "<function Tensor.__rmod__ at {fn}>",
    "pow": "<function TensorBase.pow at {fn}>", "rpow": "<function Tensor.__rpow__ at {fn}>",
    "matmul": "<method 'matmul' of 'torch._C.TensorBase' objects>", "rmatmul": "<function Tensor.__rmatmul__ at {fn}>",
    "neg": "<method 'neg' of 'torch._C.TensorBase' objects>", "pos": "<method 'positive' of 'torch._C.TensorBase' objects>",
    "abs": "<method 'abs' of 'torch._C.TensorBase' objects>", "invert": "<method '__invert__' of 'torch._C.TensorBase' objects>",
    "and": "<method '__and__' of 'torch._C.TensorBase' objects>", "or": "<method '__or__' of 'torch._C.TensorBase' objects>",
    "xor": "<method '__xor__' of 'torch._C.TensorBase' objects>", "lt": "<method 'lt' of 'torch._C.TensorBase' objects>",
    "le": "<method 'le' of 'torch._C.TensorBase' objects>", "gt": "<method 'gt' of 'torch._C.TensorBase' objects>",
    "ge": "<method 'ge' of 'torch._C.TensorBase' objects>", "getitem": "<slot wrapper '__getitem__' of 'torch._C.TensorBase' objects>",
    "setitem": "<slot wrapper '__setitem__' of 'torch._C.TensorBase' objects>", "len": "<function Tensor.__len__ at {fn}>",
    "iter": "<method 'dim' of 'torch._C.TensorBase' objects>", "bool": "<method '__bool__' of 'torch._C.TensorBase' objects>",
    "float": "<method '__float__' of 'torch._C.TensorBase' objects>", "int": "<method '__int__' of 'torch._C.TensorBase' objects>",
    "index": "<method '__index__' of 'torch._C.TensorBase' objects>", "format": "<function Tensor.__format__ at {fn}>",
}


def _uninitialized_error(cls, name: str, called: str | None = None) -> ValueError:
    called = called or f"<method '{name}' of 'torch._C.TensorBase' objects>"
    return ValueError(f"Attempted to use an uninitialized parameter in {called}. This error happens when you are "
                      "using a `LazyModule` or explicitly manipulating "
                      f"`torch.nn.parameter.{cls.__name__}` objects. When using LazyModules Call `forward` with a "
                      "dummy batch to initialize the parameters before calling torch functions")


class UninitializedTensorMixin:
    """What UninitializedParameter and UninitializedBuffer share (torch's mixin)."""

    _uninitialized = True
    cls_to_become = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor memory of `shape` (zeros, where torch's is uninitialized) and its
        class to become, in place."""
        if device is not None:
            from fusegrad.tracer.device import check_device
            check_device(device)
        dtype = object.__getattribute__(self, "_dtype") if dtype is None else dtype
        object.__setattr__(self, "_data", np.zeros(tuple(shape), dtype.np))
        object.__setattr__(self, "_dtype", dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually happens "
                           "in `load_state_dict` when trying to load an uninitialized parameter into an initialized "
                           "one. Call `forward` to initialize the parameters before accessing their attributes.")

    def share_memory_(self):
        """Refused, as torch's."""
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize "
                           "the parameters before calling `module.share_memory()`.")

    def __getattribute__(self, name: str):
        if name.startswith("_") or name in _ALLOWED:
            return object.__getattribute__(self, name)
        if callable(getattr(Tensor, name, None)):
            raise _uninitialized_error(type(self), name)
        return object.__getattribute__(self, name)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad,))


def _refusing(name: str, called: str):
    def refuse(self, *args, **kwargs):
        raise _uninitialized_error(type(self), name, called.format(fn=hex(id(refuse))))
    refuse.__name__ = f"__{name}__"
    return refuse


for _name, _called in _OPERATORS.items():
    setattr(UninitializedTensorMixin, f"__{_name}__", _refusing(_name, _called))
del _name, _called


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """torch.nn.UninitializedParameter: a Parameter without a shape yet (requires grad)."""

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        if device is not None:
            from fusegrad.tracer.device import check_device
            check_device(device)
        Parameter.__init__(self, fg.empty(0, dtype=dtype or fg.float32), requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """torch.nn.UninitializedBuffer: a buffer without a shape yet."""

    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True) -> None:
        if device is not None:
            from fusegrad.tracer.device import check_device
            check_device(device)
        data = np.zeros(0, (dtype or fg.float32).np)
        object.__getattribute__(self, "_init")(data, dtype or fg.float32)
        self.persistent = persistent
        if requires_grad:
            object.__setattr__(self, "_requires_grad", True)


def is_lazy(value) -> bool:
    """Whether `value` is an uninitialized parameter or buffer."""
    return isinstance(value, UninitializedTensorMixin)


class LazyModuleMixin:
    """torch.nn.modules.lazy.LazyModuleMixin: the first call's forward pre-hook runs
    `initialize_parameters(*args, **kwargs)`, then the module becomes `cls_to_become`."""

    cls_to_become = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._register_initialize_hook()

    def _register_initialize_hook(self) -> None:
        """The forward pre-hook that initializes the parameters at the first call (the lazy
        modules whose constructors bypass this __init__ call it at their end)."""
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of the module is still uninitialized."""
        return any(is_lazy(v) for v in list(self._parameters.values()) + list(self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Materialize the parameters from the first input (each lazy module's own)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def _infer_parameters(self, module, args, kwargs=None):
        kwargs = kwargs if kwargs else {}
        with fg.no_grad():
            module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


# ---------------------------------------------------------------- the lazy modules

class LazyLinear(LazyModuleMixin, Linear):
    """torch.nn.LazyLinear(out_features, bias=True): in_features from the input's last dim."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False, device=device, dtype=dtype)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """Linear's, once the parameters have their shapes."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        """weight (out_features, input.shape[-1]), bias (out_features,), drawn as Linear's."""
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    """The lazy convolutions: in_channels from the input's channel dim."""

    def reset_parameters(self) -> None:
        """The convolution's, once the parameters have their shapes."""
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _lazy_init(self, out_channels: int, bias: bool, device, dtype) -> None:
        """The end of a lazy convolution's constructor (after the eager one's, with no channels)."""
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        self._register_initialize_hook()

    def _get_in_channels(self, input) -> int:
        no_batch = self._nd + 1
        if input.dim() not in (no_batch, no_batch + 1):
            raise RuntimeError(f"Expected {no_batch}D (unbatched) or {no_batch + 1}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == no_batch + 1 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        """weight (out, in/groups, *kernel) or, transposed, (in, out/groups, *kernel); bias (out,)."""
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            self.weight.materialize(shape + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(name: str, eager: type, transposed: bool):
    if transposed:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                     dilation=1, padding_mode="zeros", device=None, dtype=None) -> None:
            eager.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                           padding_mode, device, dtype)
            self._lazy_init(out_channels, bias, device, dtype)
    else:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                     padding_mode="zeros", device=None, dtype=None) -> None:
            eager.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device,
                           dtype)
            self._lazy_init(out_channels, bias, device, dtype)

    cls = type(name, (_LazyConvXdMixin, eager), {
        "__init__": __init__, "cls_to_become": eager,
        "__doc__": f"torch.nn.{name}: {eager.__name__} whose in_channels come from the first input."})
    cls.__module__ = __name__
    return cls


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d, False)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d, False)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d, False)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d, True)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d, True)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d, True)


class _LazyNormBase(LazyModuleMixin):
    """The lazy norms: num_features from the input's dim 1."""

    def _lazy_norm_init(self, eps, momentum, affine, track_running_stats, device, dtype, bias) -> None:
        self._eager.__init__(self, 0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = fg.tensor(0, dtype=fg.int64)
        self._register_initialize_hook()

    def reset_parameters(self) -> None:
        """The norm's, once the parameters have their shapes."""
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        """weight, bias, running_mean and running_var of (input.shape[1],)."""
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(name: str, eager: type):
    # (torch's lazy norms all default to affine=True and track_running_stats=True, the
    # instance norms too, unlike InstanceNorm1d/2d/3d)
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        self._lazy_norm_init(eps, momentum, affine, track_running_stats, device, dtype, bias)
    cls = type(name, (_LazyNormBase, eager), {
        "__init__": __init__, "cls_to_become": eager, "_eager": eager,
        "__doc__": f"torch.nn.{name}: {eager.__name__} whose num_features come from the first input."})
    cls.__module__ = __name__
    return cls


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d)
