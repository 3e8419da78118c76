"""fg.Tensor: a NumPy array plus autograd state, with torch's API.

Eagerly a Tensor holds its value in `_data`; inside a compiled function's
trace it holds a symbolic IR value instead (see trace.py). Operations are
defined in `functional.py`; this module holds the state, the attributes and
the Python protocol methods, and binds the functional forms as methods.
"""
from __future__ import annotations

import copy
import warnings
import weakref

import numpy as np

from fusegrad.ir import DType, bool_, float32, from_numpy_dtype
from fusegrad.ir.types import TORCH_SCALAR_NAMES

from . import trace_state
from .device import CPU, check_cuda
from .layout import is_contiguous, strides_of
from .memory_format import contiguous_format, memory_format_arg, strided
from .grad_mode import (INFERENCE_DEPTH, TRANSFORMS_RUNNING, check_inference_requires_grad, is_grad_enabled,
                        is_inference_mode_enabled, is_inference_tensor, mark_inference, note_new_leaf)
from .user_frame import user_stacklevel


_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.")


_ORPHAN_MSG = (
    "This tensor was made inside a compiled (fg.compile) call that did not finish (it raised an exception), so "
    "its value was never computed. Return the values you need from the compiled function instead.")

# torch.func's text for requires_grad_() inside a transformed function (fg.grad's)
_REQUIRES_GRAD_IN_TRANSFORM = (
    "You are attempting to call Tensor.requires_grad_() (or perhaps using torch.autograd.functional.* APIs) inside "
    "of a function being transformed by a functorch transform. This is unsupported, please attempt to use the "
    "functorch transforms (e.g. grad, vjp, jacrev, jacfwd, hessian) or call requires_grad_() outside of a function "
    "being transformed instead.")


# torch.func's text for retain_grad() of a tensor at a transform's level
_RETAIN_GRAD_IN_TRANSFORM = (
    "You are attempting to call Tensor.retain_grad() inside of a function being transformed by a functorch "
    "transform. This is unsupported, please attempt to use the functorch transforms (e.g. grad, vjp, jacrev, "
    "jacfwd, hessian) or call retain_grad() outside of a function being transformed instead.")


class Size(tuple):
    """A tensor's shape: a tuple of ints printed `fg.Size([2, 3])`.

    Slicing, `+` and `*` keep the type, as torch.Size does. Internal code makes
    shapes with `_size`, which skips the item check.
    """

    __module__ = "fusegrad"     # (its public home: type(t.shape) prints fusegrad.Size)

    def __new__(cls, sizes=()):
        items = tuple(sizes)
        for k, item in enumerate(items):
            if type(item) is not int:
                items = _size_items(items, k)
                break
        return tuple.__new__(cls, items)

    def __repr__(self) -> str:
        return f"fg.Size([{', '.join(str(s) for s in self)}])"

    __str__ = __repr__

    def numel(self) -> int:
        """torch's Size.numel: the product of the sizes (1 for an empty Size)."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key):
        out = super().__getitem__(key)
        return _size(out) if isinstance(key, slice) else out

    def __add__(self, other):
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to torch.Size")
        return _size(tuple(self) + other)

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _size(other + tuple(self))

    def __mul__(self, count):
        if not isinstance(count, int):
            return NotImplemented
        return _size(tuple(self) * count)

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))


def _as_index(dim):
    """A 0-d integer tensor without history as the int it holds (torch's parser reads it so
    where an int is expected: x.size(torch.tensor(1))); anything else as it is."""
    if isinstance(dim, Tensor) and dim.dim() == 0 and dim._dtype.name == "int64" and not dim.requires_grad:
        return int(dim.item())
    return dim


def _size(items) -> Size:
    """A Size from a tuple of ints (no check: shapes of arrays)."""
    return tuple.__new__(Size, items)


def _size_items(items: tuple, start: int) -> tuple:
    """`items` with every entry from `start` on as an int (bools and one-element integer
    tensors convert, NumPy integers stay, as in torch), or torch's TypeError naming the
    first that is none of these."""
    out = list(items[:start])
    for k in range(start, len(items)):
        item = items[k]
        if isinstance(item, Tensor):
            if item.numel() != 1 or item.dtype.is_floating_point:
                raise TypeError(f"torch.Size() takes an iterable of 'int' (item {k} is 'Tensor')")
            out.append(int(item.item()))
        elif isinstance(item, np.integer):
            out.append(item)            # torch keeps a NumPy integer as it is
        elif isinstance(item, int):
            out.append(int(item))       # bool -> int
        else:
            raise TypeError(f"torch.Size() takes an iterable of 'int' (item {k} is '{type(item).__name__}')")
    return tuple(out)


def _tp_name(value) -> str:
    """A value's type as CPython's tp_name spells it in torch's messages: `list`, `Foo` for a
    class defined in Python, `numpy.ndarray` for a type defined in C outside the builtins."""
    kind = type(value)
    if kind.__module__ == "builtins" or kind.__flags__ & (1 << 9):     # Py_TPFLAGS_HEAPTYPE
        return kind.__name__
    return f"{kind.__module__}.{kind.__qualname__}"


# torch's names of a dtype in the .grad assignment error: the C type, and the scalar type.
_C_TYPE_NAME = {"float32": "float", "float64": "double", "int64": "long int", "bool": "bool"}


_ENGINE_BACKWARD = [None]       # engine.backward, once Tensor.backward has imported it

_SCALAR_WARNED: list = []


def warn_scalar_conversion() -> None:
    """torch's warning for a tensor that requires grad converted to a Python number (float(),
    complex(), an element of a list given to tensor()): TORCH_WARN_ONCE, once a process
    whatever the warnings filters say."""
    if not _SCALAR_WARNED:
        _SCALAR_WARNED.append(True)
        warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                      "Consider using tensor.detach() first.", UserWarning, stacklevel=user_stacklevel())


class Tensor:
    """A multi-dimensional array that records the operations applied to it."""

    __module__ = "fusegrad"     # (its public home, as torch.Tensor's: type(t) prints fusegrad.Tensor)

    __slots__ = ("_data", "_dtype", "_requires_grad", "_grad_fn", "_vbox", "_sym", "__weakref__", "__dict__")

    # State that most tensors never change is a class-level default; a tensor that
    # sets one keeps its own in its __dict__. Making a tensor (every op does, eager
    # or traced) then costs six attribute stores instead of thirteen.
    _grad = None                # accumulated gradient of a leaf
    _output_nr = 0              # which output of _grad_fn this tensor is
    _grad_acc = None            # a leaf's AccumulateGrad node, once made
    _retains_grad = False
    _no_grad_view = False       # a view made under no_grad of a tensor that requires grad (torch's
                                # CreationMeta.NO_GRAD_MODE), or a view of one: see dispatch._make_view
    _rebased = False            # such a view, traced, whose base was written since (Trace.begin_write)
    _base = None                # for a view: the tensor whose memory it shares
    _view_chain = ()            # for a view: the view ops that derive it from _base
    _view_version = 0           # _version when the view's history was last derived
    # _vbox: the version counter, a one-element list shared by a tensor, its views and its
    # detach()es (torch's VariableVersion); `_version` reads it as torch's int.
    _traced_leaf = False        # made a leaf that requires grad inside a compiled call (requires_grad_)
    _hooks = None               # a leaf's register_hook functions (tracer/hooks.py)
    _layout = None              # a traced value's element strides where not row-major (tracer/layout.py)
    _origin = None              # a detach() or .data of a view: (weak ref to its base, its chain); _pass_origin
    _multi_output = None        # a part of split/chunk/unbind, or a view of one: its index (tracer/splitting.py)
    _INTERNAL = frozenset(("_grad", "_output_nr", "_grad_acc", "_retains_grad", "_base", "_view_chain",
                           "_view_version", "_traced_leaf", "_no_grad_view", "_rebased",
                           "_view_node", "_hooks", "_layout", "_origin", "_multi_output",
                           "_multi_output_node", "_storage_start", "_tangent", "_shared"))

    def __init__(self, *args, requires_grad: bool = False):
        """torch's legacy constructor: `Tensor()` is empty, `Tensor(t)` shares `t`'s memory and
        dtype, `Tensor(2, 3)` or `Tensor(fg.Size([2, 3]))` is a float32 tensor of that shape
        (zeros here; torch leaves it uninitialised), `Tensor(data)` copies a sequence or array
        as float32. `requires_grad` (not torch's) serves nn.Parameter."""
        from .creation import legacy_array
        none = len(args) == 1 and args[0] is None       # (None: nn.Parameter())
        array = legacy_array(() if none else args, float32, "Tensor")
        self._init(array, from_numpy_dtype(array.dtype))
        if requires_grad:
            self._set_requires_grad(True)

    @property
    def _version(self) -> int:
        """How many in-place writes this tensor's memory has had (torch's `_version`); inside
        fg.compile it counts the call's writes so far (the counters move when it returns)."""
        trace = trace_state.current()
        if trace is not None:
            return trace.version_now(trace.counter_of(self))
        if is_inference_tensor(self):
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._vbox[0]

    def _init(self, array: np.ndarray, dtype: DType) -> None:
        # (written out on two hot paths, dispatch._run_plan and Trace.record: keep them in step)
        self._data = array
        self._dtype = dtype
        self._requires_grad = False
        self._grad_fn = None
        self._vbox = [0]
        self._sym = None
        if INFERENCE_DEPTH[0] and is_inference_mode_enabled():
            mark_inference(self)

    @classmethod
    def _wrap(cls, array: np.ndarray, dtype: DType | None = None) -> "Tensor":
        """A new leaf around `array` (no copy)."""
        t = object.__new__(Tensor)
        t._init(array, dtype or from_numpy_dtype(array.dtype))
        return t

    def _snapshot(self) -> "Tensor":
        """A copy of this tensor's current value that keeps its autograd history."""
        t = Tensor._wrap(self._data.copy(), self._dtype)
        t._grad_fn, t._output_nr, t._requires_grad = self._grad_fn, self._output_nr, self._requires_grad
        return t

    # ------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        """torch's Tensor.shape: the sizes as a Size (a tuple)."""
        return _size(self._value_shape())

    def _value_shape(self) -> tuple:
        return self._sym.shape if self._data is None else self._data.shape

    def size(self, dim: int | None = None):
        """The shape, or one dimension's size."""
        shape = self._value_shape()
        if dim is None:
            return _size(shape)
        dim = _as_index(dim)
        if type(dim) is bool or not isinstance(dim, (int, np.integer)):
            from .parser_errors import type_name      # (it imports this module)
            raise TypeError(f"size(): argument 'dim' (position 1) must be int, not {type_name(dim)}")
        if not shape:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        from fusegrad.ir.ops import normalize_dim
        return shape[normalize_dim(int(dim), len(shape))]

    def dim(self, *args, **kwargs) -> int:
        """torch's Tensor.dim: the number of dimensions."""
        if args or kwargs:      # (checked here, not by a wrapper: fusegrad asks dim() everywhere)
            from .parser_errors import no_arguments_error
            raise no_arguments_error("dim", args, kwargs)
        return len(self._value_shape())

    @property
    def ndim(self) -> int:
        """torch's Tensor.ndim: the number of dimensions."""
        return len(self._value_shape())

    def numel(self, *args, **kwargs) -> int:
        """torch's Tensor.numel: the number of elements (1 for a 0-d tensor)."""
        if args or kwargs:
            from .parser_errors import no_arguments_error
            raise no_arguments_error("numel", args, kwargs)
        n = 1
        for s in self._value_shape():
            n *= s
        return n

    nelement = numel

    @property
    def dtype(self) -> DType:
        """torch's Tensor.dtype: the element type (fg.float32, fg.float64, fg.int64 or fg.bool)."""
        return self._dtype

    @property
    def device(self):
        """torch's Tensor.device: always `fg.device("cpu")` (fusegrad runs on the CPU only)."""
        return CPU

    def is_floating_point(self) -> bool:
        """torch's Tensor.is_floating_point: is the dtype float32 or float64?"""
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        """torch's Tensor.is_complex: always False (fusegrad has no complex dtypes)."""
        return False                    # fusegrad has no complex dtypes

    def is_signed(self) -> bool:
        """torch's Tensor.is_signed: True for every dtype but bool."""
        return self._dtype is not bool_

    def element_size(self) -> int:
        """torch's Tensor.element_size: bytes per element."""
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        """torch's Tensor.itemsize: bytes per element."""
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        """torch's Tensor.nbytes: numel() * itemsize, the bytes its elements take."""
        return self.numel() * self._dtype.itemsize

    def ndimension(self) -> int:
        """torch's Tensor.ndimension: the number of dimensions (an alias of dim())."""
        return self.dim()

    # Where the data lives: always the CPU, dense and strided, never shared or inference-only.
    is_cuda = is_sparse = is_meta = is_quantized = is_mkldnn = False
    is_cpu = True

    @property
    def layout(self):
        """torch's Tensor.layout: always `fg.strided` (dense tensors only)."""
        return strided

    def get_device(self) -> int:
        """torch's Tensor.get_device: -1, torch's answer for a CPU tensor."""
        return -1                       # torch's answer for a CPU tensor

    def cpu(self, *, memory_format=None) -> "Tensor":
        """torch's Tensor.cpu: the tensor itself (it is already on the CPU)."""
        memory_format_arg("cpu", memory_format)
        return self

    def cuda(self, device=None, non_blocking: bool = False) -> "Tensor":
        """torch's Tensor.cuda: AssertionError, as `.to("cuda")` (fusegrad runs on the CPU only)."""
        check_cuda(device)
        return self

    def register_post_accumulate_grad_hook(self, hook):
        """torch's: hook(self) runs after a backward() accumulated into this leaf's .grad (an
        optimizer step per parameter); returns a handle whose remove() unregisters it."""
        from . import hooks         # (it imports this module)
        return hooks.register_post_accumulate_hook(self, hook)

    def is_inference(self) -> bool:
        """torch's Tensor.is_inference: made inside inference_mode (eagerly), or a view of such a tensor."""
        return bool(is_inference_tensor(self))

    def is_shared(self) -> bool:
        """torch's Tensor.is_shared: True after share_memory_() (tracer/element_callables.py)."""
        return self.__dict__.get("_shared", False)

    @property
    def output_nr(self) -> int:
        """Which output of its grad_fn this tensor is (0 for leaves)."""
        return self._output_nr

    # ------------------------------------------------------------ memory layout
    def stride(self, dim: int | None = None):
        """Elements to step in memory per index of each dim (a tuple), or of one dim."""
        shape = self._value_shape()
        strides = strides_of(self)
        if dim is None:
            return strides
        dim = _as_index(dim)
        if type(dim) is bool or not isinstance(dim, (int, np.integer)):
            from .parser_errors import type_name      # (it imports this module)
            raise TypeError(f"stride(): argument 'dim' (position 1) must be int, not {type_name(dim)}")
        if not shape:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        from fusegrad.ir.ops import normalize_dim
        return strides[normalize_dim(int(dim), len(shape))]

    def dim_order(self, *, ambiguity_check: bool = False) -> tuple:
        """torch's Tensor.dim_order: the dims from outermost to innermost in memory (0, 1, ...
        where the tensor is contiguous; else ordered by stride, ties to the larger dim, as
        torch's elementwise output permutation). `ambiguity_check`: torch's errors where two
        dims share a stride or one has size 1, or one has stride 0."""
        strides = strides_of(self)
        if ambiguity_check and (len(set(strides)) < len(strides) or 1 in self._value_shape()):
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                               "memory formats.")
        if ambiguity_check and 0 in strides:
            raise RuntimeError("The tensor does not have unique dim order.")
        if self.is_contiguous():
            return tuple(range(self.dim()))
        from fusegrad.ir.iteration_order import iteration_order     # (ir is below tracer)
        return tuple(iteration_order(self._value_shape(), [list(strides)]))

    def is_contiguous(self, *, memory_format=contiguous_format) -> bool:
        """Row-major without gaps (dims of size 1 may have any stride, as in torch)."""
        if memory_format is not contiguous_format:
            memory_format_arg("is_contiguous", memory_format, optional=False)
        if self._data is None:          # traced: from the layout its view chain gives it
            return is_contiguous(self._value_shape(), strides_of(self))
        return bool(self._data.flags.c_contiguous)

    def storage_offset(self) -> int:
        """Elements between the start of the memory this tensor views and its first element.
        A tensor made of a NumPy array that is itself a view (fg.from_numpy(a[1:])) starts its
        storage at that array's memory, as torch.from_numpy does, and so do its views."""
        t = self
        while t is not None:
            start = t.__dict__.get("_storage_start")
            if start is not None:
                array = self._concrete()
                return (array.ctypes.data - start) // array.itemsize
            t = t._base
        root, offset, _ = _memory_of(self._concrete())
        return offset // root.itemsize

    def data_ptr(self) -> int:
        """The address of the first element."""
        return self._concrete().ctypes.data

    def untyped_storage(self):
        """torch's Tensor.untyped_storage(): the memory this tensor views (tracer/storage.py)."""
        from .storage import untyped_storage
        return untyped_storage(self)

    def storage(self):
        """torch's deprecated Tensor.storage(): the memory as elements of this dtype (it warns once)."""
        from .storage import typed_storage
        return typed_storage(self)

    def is_set_to(self, tensor) -> bool:
        """torch's Tensor.is_set_to: the same memory, storage offset, sizes and strides."""
        from .storage import is_set_to
        return is_set_to(self, tensor)

    # ------------------------------------------------------------ autograd state
    @property
    def requires_grad(self) -> bool:
        """torch's Tensor.requires_grad: does autograd record the ops that read this tensor?
        Only a leaf's flag may be assigned, and only a floating-point tensor can require grad."""
        if self._base is not None and self._view_version != self._vbox[0] and not self._no_grad_view \
                and self._sym is None:
            if self.__dict__.get("_no_grad_mode"):
                # made under no_grad: it requires grad as its base does, with no history of its own
                return self._requires_grad or self._base._requires_grad
            if self._multi_output is not None:
                # (a part of split/unbind/chunk: its history cannot be regenerated, which only
                # reading its grad_fn reports; it requires grad as its base does, as torch's)
                return self._requires_grad or self._base._requires_grad
            # a view whose base gained history in place since has it too (regenerated as for an
            # op about to read it: torch's requires_grad does not ask for the node, so the view
            # stays without one for its in-place check, dispatch._make_view)
            from .dispatch import refresh_view_history
            refresh_view_history(self, deferring=True)
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if type(flag) is not bool:
            raise RuntimeError("requires_grad must be a bool")
        if flag and self.is_leaf and not self._dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if flag and not self.is_leaf:       # requires_grad_() allows it; the setter does not (torch)
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        self._set_requires_grad(flag)     # (allowed inside fg.grad's function, as in torch.func's)

    @requires_grad.deleter
    def requires_grad(self) -> None:
        raise RuntimeError("requires_grad must be a bool")

    def requires_grad_(self, requires_grad: bool = True, **flag) -> "Tensor":
        """Set `requires_grad` on a leaf, in place; returns self. (API.md spells the argument
        `flag`: `requires_grad_(flag=True)` is taken too; torch's keyword is `requires_grad`.)"""
        if flag:
            if set(flag) != {"flag"}:
                raise TypeError(f"requires_grad_() got an unexpected keyword argument '{next(iter(flag))}'")
            requires_grad = flag["flag"]
        if type(requires_grad) is not bool:
            # (torch's parser takes a bool only; fusegrad's own callers may pass NumPy's)
            from .parser_errors import type_name      # (it imports this module)
            raise TypeError(f"requires_grad_(): argument 'requires_grad' (position 1) must be bool, not "
                            f"{type_name(requires_grad)}")
        if TRANSFORMS_RUNNING[0]:
            raise RuntimeError(_REQUIRES_GRAD_IN_TRANSFORM)
        return self._set_requires_grad(requires_grad)

    def _set_requires_grad(self, requires_grad) -> "Tensor":
        """requires_grad_ without the transform check: the setter, factories and fusegrad itself."""
        if type(requires_grad) is not bool and not isinstance(requires_grad, np.bool_):
            raise TypeError(f"requires_grad_(): argument 'requires_grad' (position 1) must be bool, not "
                            f"{type(requires_grad).__name__}")
        if not self.is_leaf:
            if not requires_grad:
                raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use "
                                   "a computed variable in a subgraph that doesn't require differentiation use "
                                   "var_no_grad = var.detach().")
            return self
        if requires_grad and not self._dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad:
            check_inference_requires_grad(self)
        self._requires_grad = bool(requires_grad)
        if requires_grad and TRANSFORMS_RUNNING[0]:
            note_new_leaf(self)
        if self._sym is not None and requires_grad and not self._traced_leaf:
            trace_state.current().new_leaf(self)    # a leaf made inside a compiled call
        return self

    @property
    def is_leaf(self) -> bool:
        """torch's rule: no grad_fn. (Inside a trace, a tensor an op made that requires grad
        has history though no node is built for it; a leaf written there under no_grad, such
        as a Parameter initialised in place, has none and stays a leaf.)"""
        if (self._base is not None and self._sym is None and self._view_version != self._vbox[0]) \
                or self._rebased:
            self.grad_fn                # the base was written since: the view's history is regenerated
                                        # (or, for a view made under no_grad, torch's error)
        elif self._base is not None:
            self.__dict__.pop("_nodeless", None)    # (torch's is_leaf asks for the view's node: grad_fn())
        return self._is_leaf_as_is()

    def _is_leaf_as_is(self) -> bool:
        """is_leaf without regenerating a view's history first (torch's C++ is_leaf())."""
        if self._grad_fn is not None:
            return False
        if self._sym is None or not self._requires_grad or self._traced_leaf:
            return True
        if self._data is None and not self._no_grad_view:
            return False
        trace = trace_state.current()
        # (a caller's leaf that requires grad stays one: a write through memory it shares is
        # grafted onto its gradient path, which is no history of its own)
        return trace is None or trace.is_callers_leaf(self) or trace.grad_producer(self._sym) is None

    @property
    def grad_fn(self):
        """torch's Tensor.grad_fn: the node that made this tensor, None for a leaf.
        Inside fg.compile, a traced non-leaf gets the node its op would have had."""
        if self._rebased:
            trace = trace_state.current()
            if trace is not None:
                raise trace.rebased_error(self)
        if self._base is not None:
            self.__dict__.pop("_nodeless", None)    # (asked for: torch regenerates it, see dispatch._make_view)
        if self._sym is not None and self._grad_fn is None and self._requires_grad and not self._traced_leaf:
            # A traced non-leaf: the trace names the node its op would have (trace.grad_fn_of).
            trace = trace_state.current()
            return trace.grad_fn_of(self) if trace is not None else None
        if self._base is not None and self._view_version != self._vbox[0]:
            from .dispatch import refresh_view_history
            refresh_view_history(self)
        return self._grad_fn

    @property
    def grad(self):
        """torch's Tensor.grad: the gradient backward accumulated, or None.
        Reading it on a non-leaf that does not retain grad warns, and assigning checks dtype
        and shape, as torch does."""
        # torch warns only while the non-leaf's .grad is unset (one assigned is simply returned);
        # its check reads the node the tensor has, not one a view would regenerate (which, for
        # a view made under no_grad and written since, raises: .grad is None there)
        if self._grad is None and not self._retains_grad and not self._is_leaf_as_is():
            warnings.warn(_NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=user_stacklevel())
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is self:
            raise RuntimeError("can't assign Variable as its own grad")
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{_tp_name(value)}")
            if value._dtype is not self._dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_C_TYPE_NAME[value._dtype.name]}' to a tensor "
                    f"with grad_dtype '{TORCH_SCALAR_NAMES[self._dtype.name]}'. The gradient must match the tensor's "
                    "grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with "
                    "a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes "
                    "of a tensor and its gradient may break downstream systems that assume they match.")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError(f"attempting to assign a gradient of size '[{', '.join(map(str, value.shape))}]' "
                                   f"to a tensor of size '[{', '.join(map(str, self.shape))}]'. Please ensure that "
                                   f"the gradient and the tensor are the same size")
        self._keep_grad_for_dry_run()
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._keep_grad_for_dry_run()
        self._grad = None

    def _keep_grad_for_dry_run(self) -> None:
        """explain()'s call is a dry run: a `.grad` it sets (opt.zero_grad()) comes back after it."""
        trace = trace_state.current()
        if trace is not None and trace.dry:
            trace.grad_leaves.setdefault(id(self), (self, self._grad))

    @property
    def retains_grad(self) -> bool:
        """torch's Tensor.retains_grad: did retain_grad() make this non-leaf keep its .grad?"""
        return self._retains_grad

    def retain_grad(self) -> None:
        """Keep `.grad` for this non-leaf tensor after backward (refused inside fg.grad's function
        for a tensor that requires grad there, as torch.func refuses it)."""
        if TRANSFORMS_RUNNING[0] and self._requires_grad:
            raise RuntimeError(_RETAIN_GRAD_IN_TRANSFORM)
        self._retain()

    def _retain(self) -> None:
        """retain_grad without the transform check (a write giving a retaining tensor history)."""
        if self._requires_grad and (self._data is None or self._sym is not None) and not self.is_leaf:
            # a traced non-leaf (also the caller's tensor given a history in the call, such as
            # its detach() written with grad): the trace keeps it
            self._retains_grad = True
            trace_state.current().retain(self)
            return
        if self._grad_fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        self._retains_grad = True
        import weakref
        node = self._grad_fn
        if node.retained is None:
            node.retained = {}
        node.retained[self._output_nr] = weakref.ref(self)

    def register_hook(self, hook):
        """Call `hook(grad)` with this tensor's gradient during backward; a tensor it returns
        replaces the gradient. Returns a handle whose `remove()` unregisters it."""
        from .hooks import register_hook
        return register_hook(self, hook)

    def detach(self) -> "Tensor":
        """A tensor sharing this one's memory and version counter, with no history."""
        if self._data is None or self._outside_view_rebound():
            return trace_state.current().detach(self)
        t = Tensor._wrap(self._data, self._dtype)
        t._vbox = self._vbox      # shared, as torch: in-place on either is seen by the other's checks
        if is_inference_tensor(self):
            mark_inference(t)
        if self._base is not None or self._origin is not None:
            self._pass_origin(t)
        return t

    def _pass_origin(self, t: "Tensor") -> None:
        """`t` (this tensor's detach() or .data) shares its memory. Where that memory is a view's,
        `t` remembers the view's (base, view chain), privately: torch's detach() of a view has no
        `_base`, but a compiled call that writes the base must reach `t`, and a write through `t`
        the base (Trace._origin_view). The base is held weakly: as torch's, such a detach keeps
        the memory alive, not the base's history (_BaseRef)."""
        origin = (_BaseRef(self._base), self._view_chain) if self._base is not None else self._origin
        if origin is not None:
            t._origin = origin

    def _outside_view_rebound(self) -> bool:
        """Inside a trace, for a view made before the call whose base the call has written: read
        it (the trace then gives it its part of the base's new value) and say so, so that its
        detach() or .data takes that value, not the memory's old one."""
        if self._base is None:
            return False
        trace = trace_state.current()
        if trace is None or not trace.memory_written(self._base):
            return False
        trace.value_of(self)
        return self._sym is not None

    def detach_(self) -> "Tensor":
        """Cut this tensor's history in place (not allowed on a view, as torch)."""
        if self._base is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) "
                "for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and "
                "hence detach_() cannot be called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        if self._sym is not None:
            # (traced: later reads take a value outside the gradient path, as detach()'s; clearing
            # the flags alone left the value's instruction differentiated)
            trace_state.current().detach_in_place(self)
        if self._grad_fn is not None:
            # a node that saved this tensor before now cannot use it (torch's error at backward:
            # saved_checks._checked_array), compared in the order nodes are made (Node._seq)
            from .node import next_sequence
            self.__dict__["_detached_at"] = next_sequence()
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> "Tensor":
        """The value without history; shares memory but not the version counter."""
        if self._data is None or self._outside_view_rebound():
            return trace_state.current().detach(self, shares_version=False)
        t = Tensor._wrap(self._data, self._dtype)
        if self._base is not None or self._origin is not None:
            self._pass_origin(t)
        return t

    @data.setter
    def data(self, value) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {_tp_name(value)}")
        if self._requires_grad and not value._dtype.is_floating_point:
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        if self._data is None or value._data is None:
            trace_state.current().assign_data(self, value)
            return
        if value._data.shape != self._data.shape:
            # (the nodes that recorded the old shape keep it: the engine checks gradients
            # against theirs from now on, as torch's validate_outputs)
            from .node import SHAPES_CHANGED
            SHAPES_CHANGED[0] = True
        self._data = value._data
        self._dtype = value._dtype
        self.__dict__["_data_assigned"] = True     # (a saved input reads its new data: saved_checks)
        trace = trace_state.current()
        if trace is not None:
            trace.data_moved = True        # (its memory index no longer holds: Trace.lifted_by_memory)

    @data.deleter
    def data(self) -> None:
        raise RuntimeError("Deleting tensor data is not allowed. Delete tensor instead!")

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into each leaf's `.grad` (see fg.autograd.backward)."""
        backward = _ENGINE_BACKWARD[0]
        if backward is None:            # (imported on first use: the engine imports this module)
            from .engine import backward
            _ENGINE_BACKWARD[0] = backward
        grads = None if gradient is None else [gradient]
        if gradient is not None and not isinstance(gradient, Tensor):
            # torch reads a non-tensor gradient as a sequence of gradients (`backward([g])`) and
            # names the first item that is not a tensor
            from .parser_errors import type_name      # (it imports this module)
            try:
                grads = list(gradient)
            except TypeError:
                raise TypeError(f"'{type_name(gradient)}' object is not iterable") from None
            for item in grads:          # (an empty sequence: the engine's count error)
                if not (isinstance(item, Tensor) or item is None):
                    raise TypeError(f"gradients can be either Tensors or None, but got {type(item).__name__}")
        backward([self], grads, retain_graph, create_graph, inputs=inputs)

    # ------------------------------------------------------------ conversion
    def _concrete(self) -> np.ndarray:
        """The value as a NumPy array; inside a trace this runs the program so far (a graph break)."""
        if self._sym is not None:
            trace = trace_state.current()
            if trace is None:
                raise RuntimeError(_ORPHAN_MSG)
            return trace.materialize(self)
        trace = trace_state.current()
        if trace is not None and trace.mutated:
            # memory the call wrote through another tensor over it (x.detach().zero_())
            now = trace.written_memory(self)
            if now is not None:
                return now
        return self._data

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The value as a NumPy array sharing memory (error if it requires grad while grad mode is
        on, unless `force`: torch's check, so `with no_grad(): w.numpy()` works)."""
        if type(force) is not bool:
            from .parser_errors import type_name      # (it imports this module)
            raise TypeError(f"numpy(): argument 'force' must be bool, not {type_name(force)}")
        if self._requires_grad and not force and is_grad_enabled():
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        trace = trace_state.current()
        if trace is None and self._sym is None:
            # a new array object over the memory (torch's is one per call): setting its shape,
            # dtype or flags leaves the tensor as it was
            return self._data.view()
        return _array_inside_trace(self, trace)

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._concrete().reshape(()).item()

    def tolist(self):
        """torch's Tensor.tolist: the value as nested Python lists of numbers (a number for a 0-d tensor)."""
        return self._concrete().tolist()

    def __float__(self) -> float:
        if self._requires_grad:     # torch warns here (float() and complex()), not in int() or item()
            warn_scalar_conversion()
        return float(self._python_scalar())

    def __int__(self) -> int:
        return int(self._python_scalar())

    def _python_scalar(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __index__(self) -> int:
        if self._dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self) -> bool:
        data = self._data
        if data is not None and data.size == 1 and self._sym is None:
            return bool(data.item())        # the common case (a loop's test): no checks to make
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"Boolean value of Tensor with {'no values' if n == 0 else 'more than one value'} "
                               "is ambiguous")
        return bool(self.item())

    def __contains__(self, element) -> bool:
        """`element in t`: whether any entry equals it (torch's rule)."""
        from .functional import _is_scalar
        if not (isinstance(element, Tensor) or _is_scalar(element)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element)}.")
        return bool((element == self).any().item())     # torch's operand order (its error texts)

    # NumPy defers to a Tensor's reflected operators (`np.float64(2) * t` is a Tensor, as torch).
    __array_priority__ = 1000

    def __array__(self, dtype=None, copy=None):
        """`np.asarray(t)`: the memory itself, as `numpy()` (so the same error if it requires grad)."""
        a = self.numpy()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A NumPy ufunc applied to a tensor (`np.exp(t)`) returns a tensor, as in torch.

        torch turns a bool result into uint8, a dtype fusegrad lacks: it stays bool here."""
        try:
            dtype = from_numpy_dtype(array.dtype)
        except (TypeError, ValueError, KeyError):
            return array                # a dtype a tensor cannot hold: leave the array
        return Tensor._wrap(np.asarray(array, dtype=dtype.np), dtype)

    def __format__(self, spec: str) -> str:
        """`f"{t:.3f}"` formats a 0-d tensor's value; other tensors take only an empty spec (torch)."""
        if type(self) is Tensor and self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __len__(self) -> int:
        shape = self._value_shape()
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    def __iter__(self):
        """The slices along dim 0, as torch's `iter(t.unbind(0))`: views, the outputs of one
        UnbindBackward0 node."""
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        from .splitting import unbind
        return iter(unbind(self, 0))

    def __reversed__(self):
        """torch's Tensor.__reversed__: `self.flip(0)` (FlipBackward0), a 0-d tensor itself."""
        if self.dim() == 0:
            return self
        return self.flip(0)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        from .formatting import format_tensor
        suffixes = []
        try:
            # (torch's repr reads grad_fn: a view whose base was written since prints the node it
            # regenerates, <AsStridedBackward0>, and one made under no_grad, whose regeneration
            # raises, prints <Invalid>)
            grad_fn = self.grad_fn
            # torch prints the class name: <CopySlices>, where name() says torch::autograd::CopySlices
            node_name = type(grad_fn).__name__ if grad_fn is not None else None
        except RuntimeError:
            node_name = "Invalid"
        if node_name is not None:
            suffixes.append(f"grad_fn=<{node_name}>")
        elif self._requires_grad:
            suffixes.append("requires_grad=True")
        tangent = self.__dict__.get("_tangent")
        if tangent is not None:             # (forward-mode AD's dual tensor: tracer/forward_ad.py)
            suffixes.append(f"tangent={tangent!r}")
        return format_tensor(self._concrete(), suffixes)

    __str__ = __repr__

    # ------------------------------------------------------------ copy and pickle
    def __reduce_ex__(self, protocol):
        """Pickle (and `copy.copy`) as torch: the value, `requires_grad` and the user's attributes;
        no history (a non-leaf comes back a leaf) and no `.grad`. The memory travels as its root
        array (a fresh view object of it, so that, as in torch, two tensors pickled together do
        not share memory after loading) plus this tensor's place in it; `copy.copy` does not
        copy that array, so its copy shares memory with the original, as torch's does."""
        root, offset, strides = _memory_of(self._concrete())
        root = root.view()
        state = {k: v for k, v in self.__dict__.items() if k not in Tensor._INTERNAL}
        return (_rebuild_tensor, (type(self), root, offset, self._value_shape(), strides, self._dtype.name,
                                  self._requires_grad, state))

    def __deepcopy__(self, memo):
        """A leaf with copied memory (views copied together still share it), `requires_grad`, a
        copy of `.grad` and of the user's attributes; torch's error for a non-leaf.

        A subclass (nn.Parameter) copies as torch's Parameter does: value and requires_grad."""
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the "
                "moment.  If you were attempting to deepcopy a module, this may be because of a "
                "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        if type(self) is not Tensor:
            t = _new_like(type(self), self._concrete().copy(), self._dtype, self._requires_grad)
            memo[id(self)] = t
            return t
        root, offset, strides = _memory_of(self._concrete())
        key = ("fusegrad root array", id(root))         # never collides with an object's id
        if key not in memo:
            memo[key] = root.copy(order="K")
            memo.setdefault(id(memo), []).append(root)  # keep `root` alive while its id is a key
        t = _new_like(Tensor, _view_of(memo[key], offset, self._value_shape(), strides), self._dtype,
                      self._requires_grad)
        t._vbox = [1]       # (torch's copy is an empty tensor set_ to the copied storage: version 1)
        memo[id(self)] = t
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        state = {k: v for k, v in self.__dict__.items() if k not in Tensor._INTERNAL}
        if state:
            t.__dict__.update(copy.deepcopy(state, memo))
        return t


def read_only(prop: property, name: str) -> property:
    """`prop` with a setter and deleter that raise torch's AttributeError for its read-only attributes."""
    def refuse(self, value=None):
        raise AttributeError(f"attribute '{name}' of 'torch._C.TensorBase' objects is not writable")
    return property(prop.fget, refuse, refuse, prop.__doc__)


for _name in ("grad_fn", "is_leaf", "shape", "dtype", "ndim", "device", "output_nr", "itemsize", "nbytes",
              "retains_grad"):
    setattr(Tensor, _name, read_only(getattr(Tensor, _name), _name))
del _name


def _memory_of(array: np.ndarray):
    """(root, byte offset, strides): the contiguous array owning `array`'s memory and where
    `array` lies in it; (a contiguous copy, 0, its strides) where there is no such owner."""
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is not array and (root.flags.c_contiguous or root.flags.f_contiguous):
        offset = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        return root, offset, array.strides
    if root is array and (array.flags.c_contiguous or array.flags.f_contiguous):
        return array, 0, array.strides
    compact = np.ascontiguousarray(array)
    return compact, 0, compact.strides


def _view_of(root: np.ndarray, offset: int, shape: tuple, strides: tuple) -> np.ndarray:
    """The array of `shape` and `strides` at byte `offset` in `root`'s memory."""
    if offset == 0 and root.shape == tuple(shape) and root.strides == tuple(strides):
        return root
    flat = root.reshape(-1, order="A")      # C or F contiguous, so a view of the same memory
    return np.lib.stride_tricks.as_strided(flat[offset // flat.itemsize:], shape, strides)


def _new_like(cls, array: np.ndarray, dtype: DType, requires_grad: bool) -> Tensor:
    """A leaf of class `cls` around `array`, built without running `cls.__init__`."""
    t = object.__new__(cls)
    t._init(array, dtype)
    t._requires_grad = requires_grad
    return t


def _rebuild_tensor(cls, root, offset, shape, strides, dtype_name, requires_grad, state):
    """Unpickle a Tensor written by `Tensor.__reduce_ex__`."""
    t = _new_like(cls, _view_of(root, offset, shape, strides), from_numpy_dtype(np.dtype(dtype_name)),
                  requires_grad)
    t._vbox = [1]       # (torch rebuilds a tensor by set_ onto its storage: version 1, a Parameter too)
    t.__dict__.update(state)
    return t


# ------------------------------------------------------------ traced tensors: NumPy views
def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def _array_inside_trace(t: Tensor, trace) -> np.ndarray:
    """`t.numpy()` inside a compiled call. Eagerly the array is the tensor's memory, so writing
    to it changes the tensor; inside a trace that cannot hold:

    - a traced tensor's value is a snapshot computed at this graph break (later ops read the
      traced value, not this array);
    - memory the trace has already read as a program input is read when the program runs,
      so a write now would also change the ops recorded before it.

    Both come back read-only: writing raises NumPy's "assignment destination is read-only"
    instead of silently giving values that differ from eager execution. Memory the trace
    has not read yet is the tensor's own, writable, as eagerly; the trace then reads it
    by copying it at each op (Trace.expose), so writes between ops are seen as eagerly."""
    if t._sym is not None:
        return _read_only(t._concrete())
    now = trace.written_memory(t) if trace.mutated else None
    if now is not None:             # memory the call wrote through another tensor over it
        return _read_only(now)
    array = t._data
    if any(np.may_share_memory(array, lifted) for lifted in trace.input_arrays):
        return _read_only(array)
    trace.expose(array)             # later reads of this memory take its value at their time
    return array


class _BaseRef:
    """The base of a view a detach() or .data came from (Tensor._pass_origin): the base itself
    while it lives (held weakly), then a stand-in over its memory with its version counter
    and no history (`x.expand(3, 3).detach()` outlives its base: a compiled call that writes
    it must still write the memory its rows share)."""

    __slots__ = ("ref", "memory", "dtype", "vbox", "stand_in")

    def __init__(self, base: Tensor):
        self.ref = weakref.ref(base)
        self.memory, self.dtype, self.vbox, self.stand_in = base._data, base._dtype, base._vbox, None

    def __call__(self) -> Tensor | None:
        base = self.ref()
        if base is not None:
            return base
        if self.stand_in is None and self.memory is not None:
            self.stand_in = Tensor._wrap(self.memory, self.dtype)
            self.stand_in._vbox = self.vbox
        return self.stand_in
