"""`Module` and `Parameter`: torch.nn's containers for trainable state.

A `Module` keeps three ordered registries (parameters, buffers, submodules)
that attribute assignment fills, exactly as torch's `nn.Module.__setattr__`
does, so `named_parameters()` yields torch's dotted names in torch's order.
"""
from __future__ import annotations

import functools
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import Any, Callable, Iterator

import numpy as np

import fusegrad as fg
from fusegrad.ir.types import DType
from fusegrad.tracer.device import check_cuda, check_device, device as torch_device
from fusegrad.tracer.hooks import RemovableHandle
from fusegrad.tracer.parser_errors import type_name
from fusegrad.tracer.tensor import Tensor

from .backward_hooks import BackwardHook

__all__ = ["Module", "Parameter", "Buffer"]


class Parameter(Tensor):
    """A leaf Tensor that a `Module` registers as trainable (torch.nn.Parameter).

    `Parameter(data, requires_grad=True)` shares `data`'s memory (as torch
    does) but none of its history; `Parameter()` holds an empty float32
    tensor. Ops on a Parameter return plain Tensors.
    """

    def __init__(self, data=None, requires_grad: bool = True):
        if data is not None and not isinstance(data, Tensor):
            # torch's Parameter calls data.detach(), so a non-tensor fails on that attribute,
            # with Python's text ('numpy.ndarray' object has no attribute 'detach')
            data.detach  # noqa: B018
            raise TypeError(f"Parameter data must be a tensor, got {type(data).__name__}")
        if type(requires_grad) is not bool:
            raise TypeError(f"_make_subclass(): argument 'require_grad' (position 3) must be bool, not "
                            f"{type_name(requires_grad)}")
        if requires_grad and data is not None and not data.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        super().__init__(None if data is None else data.detach(), requires_grad=requires_grad)
        if data is not None:
            self._vbox = data._vbox     # torch's Parameter shares data's version counter, as a detach()

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__


class _BufferMeta(type(Tensor)):
    """isinstance(t, Buffer) holds for the tensors Buffer(...) made (torch's _BufferMeta)."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer and isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False):
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor that a `Module` registers as a buffer when assigned as its attribute (torch.nn.Buffer):
    `m.running = Buffer(t, persistent=False)` is `m.register_buffer("running", t, persistent=False)`.

    As torch's, `Buffer(data)` is a plain tensor (data.detach(), keeping requires_grad) marked
    as a buffer; `Buffer()` holds an empty float32 tensor."""

    def __new__(cls, data=None, *, persistent: bool = True):
        if data is None:
            data = fg.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


def _addindent(text: str, spaces: int) -> str:
    """Indent every line but the first (torch's `_addindent`)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * spaces + line for line in lines)


def class_text(cls: type) -> str:
    """str(cls) as torch's texts print it: a class fusegrad mirrors under torch's path
    (<class 'torch.nn.modules.container.Sequential'>), any other as Python does."""
    return f"<class '{typename(cls)}'>"


def typename(value) -> str:
    """torch.typename, for error texts (torch's verbatim): `torch.FloatTensor` for tensors, else
    the qualified type name (`int`)."""
    if isinstance(value, Tensor):
        names = {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor", "bool": "BoolTensor"}
        return "torch." + names.get(value.dtype.name, "Tensor")
    # as torch.typename: a class or function by its own name, anything else by its type's
    module = getattr(value, "__module__", "") or ""
    qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if not isinstance(qualname, str):
        module, qualname = type(value).__module__ or "", type(value).__qualname__
    if module in ("builtins", ""):
        return qualname
    if module == "fusegrad":
        module = "torch"                                # (fg.Tensor, fg.Size: torch.Size)
    elif module.startswith("fusegrad."):
        module = _TORCH_MODULES.get(qualname, module)   # (torch's own text names torch's path)
    return f"{module}.{qualname}"


# Where torch keeps the classes fusegrad mirrors, for typename's texts (a user's own
# classes keep their module).
_TORCH_MODULES = {
    **{name: "torch.nn.modules.activation" for name in (
        "CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
        "LogSigmoid", "LogSoftmax", "Mish", "MultiheadAttention", "PReLU", "RReLU", "ReLU", "ReLU6", "SELU",
        "SiLU", "Sigmoid", "Softmax", "Softmin", "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink",
        "Threshold")},
    **{name: "torch.nn.modules.batchnorm" for name in (
        "BatchNorm1d", "BatchNorm2d", "BatchNorm3d")},
    **{name: "torch.nn.modules.container" for name in (
        "ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential")},
    **{name: "torch.nn.modules.conv" for name in (
        "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d")},
    **{name: "torch.nn.modules.distance" for name in (
        "CosineSimilarity", "PairwiseDistance")},
    **{name: "torch.nn.modules.dropout" for name in (
        "AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout")},
    "Flatten": "torch.nn.modules.flatten",
    **{name: "torch.nn.modules.fold" for name in (
        "Fold", "Unfold")},
    **{name: "torch.nn.modules.instancenorm" for name in (
        "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d")},
    **{name: "torch.nn.modules.linear" for name in (
        "Identity", "Linear")},
    **{name: "torch.nn.modules.loss" for name in (
        "BCELoss", "BCEWithLogitsLoss", "CosineEmbeddingLoss", "CrossEntropyLoss", "GaussianNLLLoss",
        "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss", "MarginRankingLoss",
        "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss", "PoissonNLLLoss", "SmoothL1Loss",
        "SoftMarginLoss", "TripletMarginLoss")},
    "Module": "torch.nn.modules.module",
    **{name: "torch.nn.modules.normalization" for name in (
        "GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm")},
    **{name: "torch.nn.modules.padding" for name in (
        "CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
        "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "ZeroPad1d", "ZeroPad2d")},
    **{name: "torch.nn.modules.pixelshuffle" for name in (
        "PixelShuffle", "PixelUnshuffle")},
    **{name: "torch.nn.modules.pooling" for name in (
        "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AvgPool1d",
        "AvgPool2d", "LPPool1d", "LPPool2d", "MaxPool1d", "MaxPool2d")},
    **{name: "torch.nn.modules.rnn" for name in (
        "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase")},
    "Embedding": "torch.nn.modules.sparse",
    **{name: "torch.nn.modules.transformer" for name in (
        "TransformerEncoder", "TransformerEncoderLayer")},
    "Upsample": "torch.nn.modules.upsampling",
    "Parameter": "torch.nn.parameter",
    "Adadelta": "torch.optim.adadelta",
    "Adagrad": "torch.optim.adagrad",
    "Adam": "torch.optim.adam",
    "Adamax": "torch.optim.adamax",
    "AdamW": "torch.optim.adamw",
    "ASGD": "torch.optim.asgd",
    "NAdam": "torch.optim.nadam",
    "Optimizer": "torch.optim.optimizer",
    "RAdam": "torch.optim.radam",
    "RMSprop": "torch.optim.rmsprop",
    "Rprop": "torch.optim.rprop",
    "SGD": "torch.optim.sgd",
    "Tensor": "torch", "Size": "torch", "device": "torch",
}


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """`load_state_dict`'s result, printed as torch prints it."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class Module:
    """Base class of every layer and model (torch.nn.Module).

    Subclasses assign Parameters, submodules and plain attributes in
    `__init__` and define `forward`; calling the module runs `forward`.
    """

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        # hooks as torch keeps them (user code reads and clears these dicts): handle id -> hook,
        # and the ids of forward hooks registered with_kwargs / always_call
        for kind in _HOOK_DICTS:
            object.__setattr__(self, kind, OrderedDict())

    # ---- forward ------------------------------------------------------------

    def forward(self, *args, **kwargs):
        """The module's computation, which `module(...)` calls; every subclass defines it
        (the base class raises NotImplementedError, as torch's does)."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        """Run forward(*args, **kwargs) with the module's hooks; a NumPy array argument is taken
        as a tensor sharing its memory (API.md: arrays are accepted wherever a tensor is). After
        `module.compile()`, through fg.compile."""
        compiled = self.__dict__.get("_compiled_call_impl")
        if compiled is not None:
            return compiled(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        """`module(...)` without module.compile()'s compiled call (torch's _call_impl)."""
        if any(isinstance(a, np.ndarray) for a in args) or kwargs and \
                any(isinstance(v, np.ndarray) for v in kwargs.values()):
            from .functional import _arrays_as_tensors
            args, kwargs = _arrays_as_tensors(args, kwargs)
        own = self.__dict__
        if not own.get("_forward_hooks") and not own.get("_forward_pre_hooks") and \
                not own.get("_backward_hooks") and not own.get("_backward_pre_hooks"):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args: tuple, kwargs: dict):
        """`module(...)` with forward pre-hooks and hooks, as torch runs them: each pre-hook may
        replace the inputs (a non-tuple result is the one input), each hook the output."""
        own = self.__dict__
        for key, hook in list(own.get("_forward_pre_hooks", {}).items()):
            if key in own.get("_forward_pre_hooks_with_kwargs", ()):
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        backward_hook = None
        if own.get("_backward_hooks") or own.get("_backward_pre_hooks"):
            backward_hook = BackwardHook(self, list(self._hook_dict("_backward_hooks").values()),
                                         list(self._hook_dict("_backward_pre_hooks").values()))
            args = backward_hook.setup_input_hook(args)
        called = set()
        output = None
        try:
            output = self.forward(*args, **kwargs)
            with_kwargs = own.get("_forward_hooks_with_kwargs", ())
            for key, hook in list(own.get("_forward_hooks", {}).items()):
                called.add(key)
                result = hook(self, args, kwargs, output) if key in with_kwargs else hook(self, args, output)
                if result is not None:
                    output = result
        except Exception:
            # torch: the hooks registered with always_call=True that have not run yet run on
            # the output so far (None where forward raised); an error of theirs is a warning
            always = own.get("_forward_hooks_always_called", ())
            with_kwargs = own.get("_forward_hooks_with_kwargs", ())
            for key, hook in list(own.get("_forward_hooks", {}).items()):
                if key not in always or key in called:
                    continue
                try:
                    result = hook(self, args, kwargs, output) if key in with_kwargs else hook(self, args, output)
                    if result is not None:
                        output = result
                except Exception as error:
                    warnings.warn("module forward hook with ``always_call=True`` raised an exception that was silenced as "
                                  f"another error was raised in forward: {error}", stacklevel=2)
            raise
        return output if backward_hook is None else backward_hook.setup_output_hook(output)

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """Run `hook(module, grad_input, grad_output)` when the gradients with respect to the
        module's positional tensor inputs are computed (None where an input needs none); a
        result other than None replaces grad_input. Returns a handle (see backward_hooks.py)."""
        return self._add_hook("_backward_hooks", hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """Run `hook(module, grad_output)` when the gradients of the module's outputs arrive;
        a result other than None replaces grad_output. Returns a handle."""
        return self._add_hook("_backward_pre_hooks", hook, prepend)

    def _add_hook(self, kind: str, hook, prepend: bool, flag_dicts: tuple = ()) -> RemovableHandle:
        """Register `hook` in the dict `kind` (torch's layout: handle id -> hook), first where
        `prepend`; its handle's remove() clears its entries in `flag_dicts` too."""
        hooks = self._hook_dict(kind)
        handle = RemovableHandle(hooks, flag_dicts)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """Run `hook(module, args)` (with_kwargs: `hook(module, args, kwargs)`) before each
        forward; a result other than None replaces the inputs. Returns a handle whose
        `remove()` unregisters it."""
        return self._add_forward_hook("_forward_pre_hooks", hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """Run `hook(module, args, output)` (with_kwargs: `hook(module, args, kwargs, output)`)
        after each forward; a result other than None replaces the output. Returns a handle
        whose `remove()` unregisters it. With `always_call`, it also runs when forward (or an
        earlier hook) raises, on the output so far (None), before the error goes on."""
        return self._add_forward_hook("_forward_hooks", hook, prepend, with_kwargs, always_call)

    def _add_forward_hook(self, kind: str, hook, prepend: bool, with_kwargs: bool, always_call: bool = False):
        """_add_hook for a forward (pre-)hook: its with_kwargs and always_call flags are noted
        in dicts of their own, as torch's."""
        flags = self._hook_dict(kind + "_with_kwargs")
        always = self._hook_dict("_forward_hooks_always_called")
        handle = self._add_hook(kind, hook, prepend, (flags, always) if kind == "_forward_hooks" else (flags,))
        if with_kwargs:
            flags[handle.id] = True
        if always_call:
            always[handle.id] = True
        return handle

    def _hook_dict(self, kind: str) -> OrderedDict:
        """The module's hook dict `kind` (made here for a module unpickled from an older
        fusegrad, whose __init__ did not make it)."""
        hooks = self.__dict__.get(kind)
        if hooks is None:
            hooks = OrderedDict()
            object.__setattr__(self, kind, hooks)
        return hooks

    # ---- registration -------------------------------------------------------

    def _check_initialized(self) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")

    def register_parameter(self, name: str, param) -> None:
        """Add `param` (a Parameter, or None) under `name`."""
        self._check_initialized()
        _check_name(self, name, "parameter")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        else:
            self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a non-trainable tensor (or None) that `state_dict` saves when `persistent`."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name(self, name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a submodule (or None) under `name`."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        initialized = "_modules" in self.__dict__
        if initialized and hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        if not initialized:     # (torch's: its self._modules, read before Module.__init__ made it)
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '_modules'")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        # The same dispatch as torch: a Parameter goes to _parameters, a Module
        # to _modules; assigning over a registered name keeps the kind.
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, self.__dict__, self._buffers, self._modules)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                self._remove_from(name, self.__dict__, self._parameters, self._buffers)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{typename(value)}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer):
                    # (a Buffer says whether it persists; a tensor over a buffer keeps the buffer's say)
                    self.register_buffer(name, value, value.persistent)
                elif buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                        "(torch.nn.Buffer, torch.Tensor or None expected)")
                    buffers[name] = value
                else:
                    object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name: str, *dicts) -> None:
        for d in dicts:
            d.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: look in the registries.
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        # torch leaves out names starting with a digit (a container's "0", "1", ...)
        keys = set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules)
        return sorted(key for key in keys if not key[0].isdigit())

    # ---- traversal ----------------------------------------------------------

    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        """Yield `(name, module)` for this module and all below it, pre-order, each once."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub_prefix, remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        """Yield this module and every module below it, each once."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        """Yield `(name, module)` for the direct submodules, each once."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator["Module"]:
        """Yield the direct submodules."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, get_members: Callable, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True):
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        seen = set()
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Yield `(dotted_name, parameter)` in registration order, shared parameters once."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator:
        """Yield every parameter (the values of `named_parameters()`)."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Yield `(dotted_name, buffer)` in registration order."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator:
        """Yield every buffer."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path `target` (`""` is this module)."""
        module = self
        for item in target.split(".") if target else []:
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return module

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put `module` at dotted path `target` (its parent must exist); with `strict`, only
        in place of an existing submodule. torch's checks and texts."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {class_text(type(module))}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target: str) -> Parameter:
        """The Parameter at dotted path `target` (`"fc1.weight"`), with torch's AttributeErrors."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str):
        """The buffer at dotted path `target`, with torch's AttributeErrors."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        buffer = getattr(module, name)
        if name not in module._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return buffer

    # ---- state --------------------------------------------------------------

    def train(self, mode: bool = True) -> "Module":
        """Set `training` on this module, then call each child's own `train(mode)` (as torch: a
        child that overrides train(), to keep a frozen part in eval mode, is obeyed); returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        object.__setattr__(self, "training", mode)
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        """`train(False)`."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set `requires_grad` of every parameter (freezing when False); returns self."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's `.grad`: to None (torch's default) or to zeros."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                param.grad = zeroed_grad(param.grad)

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call `fn` on every submodule (children first) and then on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply_to_tensors(self, convert: Callable) -> "Module":
        # Parameters are converted in place (their identity is kept, so an
        # optimizer built earlier still holds them), and so are their grads,
        # as torch's `_apply` does.
        with fg.no_grad():
            for module in self.modules():
                for name, param in module._parameters.items():
                    if param is None:
                        continue
                    _set_data(param, convert(param.detach()))
                    if param.grad is not None:
                        param.grad = convert(param.grad)
                for name, buf in module._buffers.items():
                    if buf is not None:
                        module._buffers[name] = convert(buf)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """Cast floating-point parameters, their grads and buffers, as torch's `Module.to`.

        Accepts torch's forms: `to(dtype)`, `to(device)`, `to(device, dtype)`,
        `to(tensor)` (its dtype) and the keywords `device`, `dtype`,
        `non_blocking`, `copy`, `memory_format`. The only device is the CPU.
        """
        dtype = _parse_to(*args, **kwargs)
        if dtype is None:
            return self
        if not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype=torch.{str(dtype).split('.')[-1]}")

        def convert(t):
            return t.to(dtype) if t.dtype.is_floating_point else t
        return self._apply_to_tensors(convert)

    def compile(self, *args, **kwargs) -> None:
        """torch's Module.compile: from now on `module(...)` (its hooks and forward) runs through
        fg.compile with these options, the module itself unchanged (torch.compile(module)
        returns a wrapper instead)."""
        object.__setattr__(self, "_compiled_call_impl", fg.compile(self._call_impl, *args, **kwargs))

    def to_empty(self, *, device=None, recurse: bool = True) -> "Module":
        """torch's Module.to_empty: every parameter and buffer given new, uninitialised memory of
        its shape and dtype (the CPU is the only device); returns self."""
        check_device(device)
        modules = self.modules() if recurse else (self,)
        with fg.no_grad():
            for module in modules:
                for name, param in module._parameters.items():
                    if param is not None:
                        _set_data(param, fg.empty_like(param.detach()))
                for name, buf in module._buffers.items():
                    if buf is not None:
                        module._buffers[name] = fg.empty_like(buf)
        return self

    def share_memory(self) -> "Module":
        """torch's Module.share_memory: a no-op here (fusegrad has no shared-memory tensors); returns self."""
        return self

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """Run `hook(module, incompatible_keys)` after each load_state_dict that reaches this
        module (its missing_keys and unexpected_keys lists, which the hook may edit in place
        before the strict check); it must return None. Returns a handle to remove it."""
        return self._add_hook("_load_state_dict_post_hooks", hook, prepend=False)

    def cpu(self) -> "Module":
        """Move to the CPU: a no-op, fusegrad keeps every tensor there; returns self."""
        return self

    def cuda(self, device=None) -> "Module":
        """torch's Module.cuda: AssertionError, as `.to("cuda")` (fusegrad runs on the CPU only)."""
        check_cuda(device)
        return self

    def type(self, dst_type) -> "Module":
        """Cast every parameter and buffer (integer ones too) to `dst_type`; returns self."""
        return self._apply_to_tensors(lambda t: t.to(dst_type))

    def float(self) -> "Module":
        """Cast floating-point parameters and buffers to float32."""
        return self.to(fg.float32)

    def double(self) -> "Module":
        """Cast floating-point parameters and buffers to float64."""
        return self.to(fg.float64)

    def half(self) -> "Module":
        """torch's Module.half: fusegrad has no float16 dtype (NotImplementedError, as Tensor.half)."""
        raise NotImplementedError("fusegrad has no float16 dtype (Module.half() casts to it); its dtypes are "
                                  "float32 (fg.float), float64 (fg.double), int64 (fg.long) and bool")

    def bfloat16(self) -> "Module":
        """torch's Module.bfloat16: fusegrad has no bfloat16 dtype (NotImplementedError, as Tensor.bfloat16)."""
        raise NotImplementedError("fusegrad has no bfloat16 dtype (Module.bfloat16() casts to it); its dtypes are "
                                  "float32 (fg.float), float64 (fg.double), int64 (fg.long) and bool")

    _version: int = 1        # torch's: saved as each module's metadata "version" by state_dict

    def register_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """Run `hook(module, prefix, keep_vars)` before this module saves its state in each
        state_dict call. Returns a handle to remove it."""
        return self._add_hook("_state_dict_pre_hooks", hook, prepend=False)

    def register_state_dict_post_hook(self, hook) -> RemovableHandle:
        """Run `hook(module, state_dict, prefix, local_metadata)` after this module and its
        children saved their state; it may edit the dict in place and must return None."""
        hook._from_public_api = True
        return self._add_hook("_state_dict_hooks", hook, prepend=False)

    def _register_state_dict_hook(self, hook) -> RemovableHandle:
        """torch's older form of register_state_dict_post_hook: a result other than None
        replaces the dict, where this module is the one state_dict was called on."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was previously "
                               "registered via register_state_dict_post_hook")
        return self._add_hook("_state_dict_hooks", hook, prepend=False)

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """Run `hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)` before this module loads its part of a state dict (it may
        edit the dict and the lists in place). Returns a handle to remove it."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False) -> RemovableHandle:
        """register_load_state_dict_pre_hook, the hook taking the module first only `with_module`."""
        return self._add_hook("_load_state_dict_pre_hooks", _WrappedHook(hook, self if with_module else None),
                              prepend=False)

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ordered dict of parameters and persistent buffers (and extra state) by dotted
        name, as torch's: each module runs its state-dict pre-hooks, `_save_to_state_dict`,
        its children's state_dict, then its post-hooks; the dict's `_metadata` holds each
        module's `{"version": _version}`. Values are detached tensors sharing memory with the
        module's state (the Parameters themselves when `keep_vars`)."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                          " for details.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in list(self.__dict__.get("_state_dict_pre_hooks", {}).values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        # Recursing through _modules (not named_modules) lists a shared submodule
        # under every name it has, as torch does.
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in list(self.__dict__.get("_state_dict_hooks", {}).values()):
            result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if result is not None:
                    destination = result
            elif result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        """This module's own state (not its children's) into `destination` under `prefix`:
        what a subclass overrides to save differently, as in torch."""
        for key, param in self._parameters.items():
            if param is not None:
                # (a lazy module's uninitialized parameter is saved as itself, as torch's)
                destination[prefix + key] = param if keep_vars or _is_lazy(param) else param.detach()
        for key, buf in self._buffers.items():
            if buf is not None and key not in self._non_persistent_buffers_set:
                destination[prefix + key] = buf if keep_vars or _is_lazy(buf) else buf.detach()
        if _overrides(self, "get_extra_state"):
            destination[prefix + EXTRA_STATE_KEY] = self.get_extra_state()

    def get_extra_state(self):
        """State beyond parameters and buffers for `state_dict()` to save under the key
        `_extra_state` (torch's): a subclass that has such state overrides this and
        `set_extra_state`. The base class's raises, as torch's, and is never called."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. Please "
                           "file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                           "to report this bug.")

    def set_extra_state(self, state) -> None:
        """Restore what `get_extra_state` returned, from `load_state_dict` (see there)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. Please "
                           "file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                           "to report this bug.")

    def _load_from_state_dict(self, state_dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """Load this module's own state (not its children's) from the entries of `state_dict`
        under `prefix`, noting missing and unexpected keys and errors in the lists, as torch's:
        what a subclass overrides to load differently (an older layout of its state)."""
        for hook in list(self.__dict__.get("_load_state_dict_pre_hooks", {}).values()):
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        local_state = {k: v for k, v in self._parameters.items() if v is not None}
        local_state.update((k, v) for k, v in self._buffers.items()
                           if v is not None and k not in self._non_persistent_buffers_set)
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, target in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if isinstance(value, np.ndarray):        # (NumPy arrays are tensors to fusegrad)
                value = fg.tensor(value)
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(value)}")
                continue
            if _is_lazy(target) and not _is_lazy(value):
                target.materialize(value.shape)     # (torch's lazy modules' load pre-hook)
            if target.dim() == 0 and value.dim() == 1 and value.shape[0] == 1:
                value = value[0]                    # (torch's: a 0.3-era 1-element checkpoint entry)
            if tuple(value.shape) != tuple(target.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape torch.Size("
                                  f"{list(value.shape)}) from checkpoint, the shape in current model is "
                                  f"torch.Size({list(target.shape)}).")
                continue
            try:
                with fg.no_grad():
                    if assign:
                        _assign(self, name, target, value)
                    else:
                        target.copy_(value)
            except Exception as ex:         # noqa: BLE001  (torch's text, collected)
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"torch.Size({list(target.shape)}) and whose dimensions in the checkpoint are "
                                  f"torch.Size({list(value.shape)}), an exception occurred : {ex.args}.")
        extra_key = prefix + EXTRA_STATE_KEY
        if _overrides(self, "set_extra_state"):
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    name = key[len(prefix):].split(".", 1)
                    if (name[0] not in self._modules) if len(name) > 1 else (name[0] not in local_state):
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False) -> _IncompatibleKeys:
        """Copy values (Tensors or NumPy arrays) into the parameters and buffers, as torch's:
        each module, from the root down, runs `_load_from_state_dict` (its load pre-hooks
        first) on the entries under its prefix, then its children load, then its load
        post-hooks run. With `assign`, the module takes the state dict's tensors themselves
        (parameters wrapped as Parameters keeping `requires_grad`). Raises torch's
        `RuntimeError` listing size mismatches and, when `strict`, missing and unexpected
        keys; returns the key lists."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)},
                         child_prefix)
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in list(module.__dict__.get("_load_state_dict_post_hooks", {}).values()):
                if hook(module, incompatible) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be modified, "
                                         "it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    # ---- printing -----------------------------------------------------------

    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text inside the parentheses of this module's repr; subclasses override it."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


EXTRA_STATE_KEY = "_extra_state"       # torch's _EXTRA_STATE_KEY_SUFFIX
_HOOK_DICTS = ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
               "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_backward_hooks", "_backward_pre_hooks",
               "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks")


def _is_lazy(t) -> bool:
    """Whether `t` is a lazy module's uninitialized parameter or buffer (nn/lazy.py)."""
    return getattr(type(t), "_uninitialized", False)


class _WrappedHook:
    """A load-state-dict pre-hook, called with its module first where registered so
    (torch's _WrappedHook; the module held weakly, as torch's)."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.module = None if module is None else weakref.ref(module)

    def __call__(self, *args, **kwargs):
        if self.module is None:
            return self.hook(*args, **kwargs)
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(module, *args, **kwargs)


def _overrides(module: Module, method: str) -> bool:
    """Whether `module`'s class defines its own `method` (get_extra_state / set_extra_state:
    only then has it extra state, as torch decides)."""
    return getattr(type(module), method) is not getattr(Module, method)


def _check_name(module: Module, name: str, kind: str) -> None:
    """torch's validation of a parameter or buffer name."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    registry = module._parameters if kind == "parameter" else module._buffers
    if hasattr(module, name) and name not in registry:
        raise KeyError(f"attribute '{name}' already exists")


def _assign(module: Module, name: str, current, value) -> None:
    """load_state_dict(assign=True) for one entry: the value replaces the parameter or buffer."""
    if isinstance(current, Parameter):
        if isinstance(value, Parameter):
            value.requires_grad_(current.requires_grad)
        else:
            value = Parameter(value, requires_grad=current.requires_grad)
        module._parameters[name] = value
    else:
        module._buffers[name] = value


def zeroed_grad(grad):
    """A `.grad` zeroed as torch's zero_grad(set_to_none=False) does: in place, keeping the
    tensor object (a gradient with history, from create_graph, is detached in place first;
    like torch's it is never a view, so its in-place write records nothing)."""
    if grad.grad_fn is not None:
        grad.detach_()
    else:
        grad._set_requires_grad(False)
    return grad.zero_()


_TO_KEYWORDS = ("device", "dtype", "non_blocking", "copy", "memory_format")


def _parse_to(*args, **kwargs):
    """The dtype that `Module.to(*args, **kwargs)` asks for (None: keep), checking the device."""
    unknown = [key for key in kwargs if key not in _TO_KEYWORDS]
    if unknown:
        raise TypeError(f"to() got an unexpected keyword argument '{unknown[0]}'")
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    for arg in args:
        if isinstance(arg, DType):
            dtype = arg
        elif isinstance(arg, Tensor):
            dtype = arg.dtype
        elif isinstance(arg, (str, int, torch_device)) and not isinstance(arg, bool) and device is None:
            device = arg
        elif not isinstance(arg, bool):      # non_blocking / copy are accepted and ignored
            raise TypeError(f"to() received an invalid combination of arguments - got {type(arg).__name__}")
    check_device(device)
    return dtype


def _set_data(param, value) -> None:
    """Replace a Parameter's value in place, keeping the object (torch's `param.data = value`)."""
    param.data = value
