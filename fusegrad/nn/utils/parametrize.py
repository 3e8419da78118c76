"""torch.nn.utils.parametrize: a module's parameter or buffer computed by modules from
unconstrained tensors.

`register_parametrization(module, "weight", p)` moves `module.weight` into
`module.parametrizations.weight` (a ParametrizationList holding it as `original`, or as
`original0`, `original1`, ... where p's `right_inverse` returns several tensors) and gives the
module's class a property `weight` that runs the list on every read (or once per `cached()`
context) and, on assignment, stores `right_inverse(value)` into the originals. The module's
class becomes a subclass named `Parametrized<Class>`, as torch's, which
`remove_parametrizations` takes back when the last parametrization goes.
"""
from __future__ import annotations

import collections.abc
from contextlib import contextmanager

from fusegrad.tracer.grad_mode import no_grad
from fusegrad.tracer.tensor import Tensor

from .. import functional as F
from ..containers import ModuleDict, ModuleList
from ..module import Module, Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_depth = 0
_cache: dict = {}


@contextmanager
def cached():
    """Inside, each parametrized tensor is computed once (at its first read) and reused; the
    values are dropped when the outermost context ends."""
    global _cache_depth, _cache
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, value) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_in_place(dest: Tensor, src: Tensor) -> None:
    """dest takes src's value and shape, keeping its identity (torch's Tensor.set_, which
    optimizers holding `dest` rely on)."""
    with no_grad():
        dest.data = src


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor of a module, and its unconstrained original(s):
    `original` where the first parametrization's right_inverse gives one tensor (or it has
    none), else `original0`, `original1`, .... Made by register_parametrization."""

    def __init__(self, modules, original, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {F._torch_dtype(original.dtype)}\n"
                                 f"right_inverse(original).dtype: {F._torch_dtype(new.dtype)}")
            if new is not original:
                _set_in_place(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                     f"(list, tuple...). Got element {i} of the sequence with type "
                                     f"{type(part).__name__}.")
                if isinstance(original, Parameter):
                    part = Parameter(part, original.requires_grad)
                part.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", part)
        if not self.unsafe:
            value = self()
            if not isinstance(value, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
            if value.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized dtype: {F._torch_dtype(original_dtype)}\n"
                                 f"parametrized dtype: {F._torch_dtype(value.dtype)}")
            if value.shape != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized shape: {F._torch_size(original_shape)}\n"
                                 f"parametrized shape: {F._torch_size(value.shape)}")

    def right_inverse(self, value: Tensor) -> None:
        """Store the originals that give `value`: each parametrization's right_inverse, last
        registered first (torch's RuntimeError where one has none)."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {F._torch_dtype(value.dtype)} "
                                     f"while `original` has dtype {F._torch_dtype(self.original.dtype)}")
                _set_in_place(self.original, value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError("'right_inverse' must return a sequence of tensors of length "
                                 f"{self.ntensors}. Got a sequence of length {len(value)}.")
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor):
                    raise ValueError("'right_inverse' must return a sequence of tensors or reference-type "
                                     f"opaques. Got element {i} of type {type(tensor).__name__}.")
                if original_i.dtype != tensor.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {F._torch_dtype(tensor.dtype)} "
                                     f"while `original{i}` has dtype {F._torch_dtype(original_i.dtype)}")
                _set_in_place(original_i, tensor)

    def forward(self) -> Tensor:
        """The parametrized tensor: the first parametrization of the original(s), then each
        later one of the previous result."""
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module: Module) -> None:
    """Give `module` a subclass of its class, Parametrized<Class>, to hold the properties."""
    cls = module.__class__

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                           "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                           "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"__getstate__": getstate})


def _inject_property(module: Module, tensor_name: str) -> None:
    """The property reading module.<tensor_name> through its ParametrizationList (cached inside
    `cached()`) and assigning through the list's right_inverse."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_depth:
            return parametrization()
        key = (id(module), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make module.<tensor_name> the output of `parametrization` (appended after any registered
    before) of the original tensor, which moves to module.parametrizations.<tensor_name>.
    Unless `unsafe`, the parametrization may not change the tensor's shape or dtype."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_appended(module, tensor_name, parametrization)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element "
                         f"with name '{tensor_name}'")
    return module


def _check_appended(module: Module, tensor_name: str, parametrization: Module) -> None:
    """torch's checks of a parametrization appended to a parametrized tensor."""
    current = getattr(module, tensor_name)
    value = parametrization(current)
    if not isinstance(value, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
    where = f"module.{tensor_name}"
    if value.dtype != current.dtype:
        raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless the `unsafe` "
                         f"flag is enabled.\n{where}.dtype: {F._torch_dtype(current.dtype)}\n"
                         f"parametrization({where}).dtype: {F._torch_dtype(value.dtype)}")
    if value.shape != current.shape:
        raise ValueError("Registering a parametrization may not change the shape of the tensor, unless the `unsafe` "
                         f"flag is enabled.\n{where}.shape: {F._torch_size(current.shape)}\n"
                         f"parametrization({where}).shape: {F._torch_size(value.shape)}")
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        inverse = parametrization.right_inverse(value)
    except NotImplementedError:
        return
    if not isinstance(inverse, Tensor):
        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(inverse).__name__}")
    if inverse.dtype != current.dtype:
        raise ValueError("The tensor returned by parametrization.right_inverse must have the same dtype as "
                         f"{where}, unless the `unsafe` flag is enabled.\n"
                         f"{where}.dtype: {F._torch_dtype(current.dtype)}\n"
                         f"returned dtype: {F._torch_dtype(inverse.dtype)}")
    if inverse.shape != current.shape:
        raise ValueError("The tensor returned by parametrization.right_inverse must have the same shape as "
                         f"{where}, unless the `unsafe` flag is enabled.\n"
                         f"{where}.shape: {F._torch_size(current)}\nreturned shape: {F._torch_size(inverse)}")


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether module.<tensor_name> is parametrized (without a name: whether any tensor is)."""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo register_parametrization for module.<tensor_name>: it becomes a parameter or buffer
    again, holding its parametrized value (`leave_parametrized`) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            _set_in_place(original, value)
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        original = Parameter(value) if value.requires_grad else value
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                         "in terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before any parametrization was registered."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register `from_module`'s parametrizations (of `tensor_name`, or all) on `to_module`, with
    the same original tensors (shared, not copied)."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in from_module.parametrizations[name]:
            register_parametrization(to_module, name, parametrization)
        source, target = from_module.parametrizations[name], to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            k = 0
            while hasattr(source, f"original{k}"):
                setattr(target, f"original{k}", getattr(source, f"original{k}"))
                k += 1
    return to_module
