"""fg.save and fg.load (torch.save / torch.load): objects holding tensors, pickled.

The file is one pickle stream (not torch's zip archive: fusegrad and torch cannot read each
other's files). A tensor keeps its dtype, shape, strides, requires_grad (a non-leaf comes back
a leaf, as torch's) and its subclass (nn.Parameter); tensors saved in one call that share
memory (views of one tensor) share it again after loading, as torch's storages do. A whole
nn.Module, an optimizer's state_dict or any picklable object can be saved.

fg.load(weights_only=True), torch 2.6's default, unpickles only tensors, Parameters, fusegrad
dtypes, devices and sizes, OrderedDict, the builtin containers, numbers, strings and the NumPy
pieces a tensor's memory is made of; any other global raises pickle.UnpicklingError with
torch's text (its advice names fusegrad.serialization.add_safe_globals / safe_globals, this
module's versions of torch.serialization's)."""
from __future__ import annotations

import collections
import contextlib
import os
import pickle

from fusegrad.tracer import tensor as _tensor_module
from fusegrad.tracer.tensor import Tensor

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "safe_globals", "save"]

DEFAULT_PROTOCOL = 2
_USER_SAFE: list = []

_WEIGHTS_ONLY_DOC = ("\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
                     "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


def _weights_only_text(detail: str) -> str:
    return ("Weights only load failed. This file can still be loaded, to do so you have two options, \x1b[1mdo those "
            "steps only if you trust the source of the checkpoint\x1b[0m. \n\t(1) In PyTorch 2.6, we changed the "
            "default value of the `weights_only` argument in `torch.load` from `False` to `True`. Re-running "
            "`torch.load` with `weights_only` set to `False` will likely succeed, but it can result in arbitrary "
            "code execution. Do it only if you got the file from a trusted source.\n\t(2) Alternatively, to load "
            "with `weights_only=True` please check the recommended steps in the following error message.\n\t"
            "WeightsUnpickler error: " + detail + _WEIGHTS_ONLY_DOC)


def _default_safe() -> dict:
    """{(module, name): object} that weights_only loading resolves."""
    from fusegrad import Size
    from fusegrad.ir import types
    from fusegrad.nn.module import Parameter
    from fusegrad.tracer.device import device
    safe = [collections.OrderedDict, Tensor, Parameter, Size, device, types.from_name, _tensor_module._rebuild_tensor,
            dict, list, tuple, set, frozenset, int, float, complex, bool, str, bytes, bytearray, slice]
    found = {(obj.__module__, obj.__qualname__): obj for obj in safe}
    found[("fusegrad", "Size")] = Size
    import codecs
    import numpy as np
    found[("_codecs", "encode")] = codecs.encode           # (protocol 2's bytes)
    found[("numpy", "ndarray")] = np.ndarray
    found[("numpy", "dtype")] = np.dtype
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        found[(module, "_reconstruct")] = np._core.multiarray._reconstruct if hasattr(np, "_core") \
            else np.core.multiarray._reconstruct
    return found


def add_safe_globals(safe_globals) -> None:
    """torch.serialization.add_safe_globals: allow these classes and functions (or
    (object, "module.name") pairs) in weights_only loading."""
    _USER_SAFE.extend(safe_globals)


def get_safe_globals() -> list:
    """torch.serialization.get_safe_globals: the globals add_safe_globals allowed."""
    return list(_USER_SAFE)


def clear_safe_globals() -> None:
    """torch.serialization.clear_safe_globals."""
    _USER_SAFE.clear()


@contextlib.contextmanager
def safe_globals(safe):
    """torch.serialization.safe_globals: add_safe_globals for the duration of a with-block."""
    before = list(_USER_SAFE)
    _USER_SAFE.extend(safe)
    try:
        yield
    finally:
        _USER_SAFE[:] = before


class _WeightsUnpickler(pickle.Unpickler):
    """An Unpickler resolving only allowed globals."""

    def find_class(self, module, name):
        module = {"__builtin__": "builtins", "copy_reg": "copyreg"}.get(module, module)   # (protocol 2's names)
        allowed = _default_safe()
        for entry in _USER_SAFE:
            obj, full = entry if isinstance(entry, tuple) else (entry, f"{entry.__module__}.{entry.__qualname__}")
            allowed[tuple(full.rsplit(".", 1))] = obj
        if (module, name) in allowed:
            return allowed[(module, name)]
        raise pickle.UnpicklingError(_weights_only_text(
            f"Unsupported global: GLOBAL {module}.{name} was not an allowed global by default. Please use "
            f"`fusegrad.serialization.add_safe_globals([{module}.{name}])` or the "
            f"`fusegrad.serialization.safe_globals([{module}.{name}])` context manager to allowlist this global if "
            f"you trust this class/function."))

    def persistent_load(self, pid):
        raise pickle.UnpicklingError(_weights_only_text("A load persistent id instruction was encountered, but no "
                                                        "persistent_load function was specified."))


class _SharingPickler(pickle.Pickler):
    """A Pickler writing each tensor with the array owning its memory itself (not a fresh view
    of it, as Tensor.__reduce_ex__ does for plain pickling), so that the pickle memo writes that
    memory once and views saved together share it after loading."""

    def reducer_override(self, obj):
        if not isinstance(obj, Tensor):
            return NotImplemented
        fn, args = obj.__reduce_ex__(2)[:2]
        root = _tensor_module._memory_of(obj._concrete())[0]
        return fn, (args[0], root) + tuple(args[2:])


def _is_path(f) -> bool:
    return isinstance(f, (str, os.PathLike))


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """torch.save: pickle `obj` into `f`, a path (str or os.PathLike) or a writable binary file
    object (io.BytesIO). Tensors keep dtype, shape, requires_grad and subclass, and tensors
    sharing memory keep sharing it (see the module's docstring). `pickle_module` other than
    the standard pickle is used as given (its Pickler then decides how memory is shared)."""
    if _is_path(f):
        with open(f, "wb") as handle:
            _dump(obj, handle, pickle_module, pickle_protocol)
    else:
        _dump(obj, f, pickle_module, pickle_protocol)


def _dump(obj, handle, pickle_module, protocol) -> None:
    pickler = _SharingPickler if pickle_module is pickle else pickle_module.Pickler
    pickler(handle, protocol=protocol).dump(obj)


def _check_map_location(map_location) -> None:
    from fusegrad.tracer.device import device
    places = []
    if isinstance(map_location, dict):
        places = list(map_location.values())
    elif isinstance(map_location, (str, device)):
        places = [map_location]
    for place in places:
        if str(place).split(":")[0] not in ("cpu",):
            raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                               "False. If you are running on a CPU-only machine, please use torch.load with "
                               "map_location=torch.device('cpu') to map your storages to the CPU.")


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """torch.load: the object fg.save wrote to `f` (a path or a readable binary file object).

    weights_only (None means True, torch 2.6's default) unpickles only tensors, Parameters,
    containers, numbers, strings and fusegrad dtypes/devices; anything else raises
    pickle.UnpicklingError with torch's text (load a whole module with weights_only=False).
    map_location: every tensor is on the CPU, so None, "cpu", fg.device("cpu"), a dict mapping to
    "cpu" and a callable are accepted (a callable is not called); a CUDA place raises torch's
    RuntimeError. `mmap` is accepted and ignored."""
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    _check_map_location(map_location)
    if _is_path(f):
        with open(f, "rb") as handle:
            return _load(handle, pickle_module, weights_only, pickle_load_args)
    return _load(f, pickle_module, weights_only, pickle_load_args)


def _load(handle, pickle_module, weights_only, pickle_load_args):
    if weights_only:
        try:
            return _WeightsUnpickler(handle, **pickle_load_args).load()
        except pickle.UnpicklingError:
            raise
        except Exception as exc:
            raise pickle.UnpicklingError(_weights_only_text(str(exc))) from None
    return (pickle_module or pickle).Unpickler(handle, **pickle_load_args).load()

