"""More of torch's random API on fusegrad's generator (tracer/generator.py), number for number:
`fg.randperm`, `fg.normal` (its four overloads), the generator's state (`fg.get_rng_state` /
`fg.set_rng_state`, in torch's byte layout), `fg.seed`, and the dtype helpers
`fg.is_floating_point`, `fg.promote_types`, `fg.result_type`.

The state is torch's CPUGeneratorImplState, byte for byte (5056 bytes: the seed, the
MT19937's `left` and `next` counters and its 624 words each widened to 64 bits, the cached
second normal sample of a Box-Muller pair, and the float one torch's CPU kernels never set).
fusegrad has no uint8 dtype, so `get_rng_state()` is an int64 tensor of those 5056 byte values;
`set_rng_state` takes such a tensor or a NumPy uint8 array (`torch.get_rng_state().numpy()`),
so states move between torch and fusegrad both ways.
"""
from __future__ import annotations

import os
import struct

import numpy as np

from fusegrad.ir import DType, bool_, float32, float64, int64
from fusegrad.ir.types import DIMMED, SCALAR, ZERO_DIM, promote_types as _promote
from fusegrad.ir.types import result_type as _result_type, scalar_dtype

from . import generator as random_generator, trace_state
from .creation import _allocated, _dtype_arg, _grad_flag, _new, _require_grad, _scalar_str, _size, manual_seed
from .device import check_device
from .dispatch import apply_op, edge_of
from .grad_mode import is_grad_enabled
from .node import display_edges
from .parser_errors import type_name
from .tensor import Tensor

_MISSING = object()


def _generator(generator, fn: str, got: str):
    """The generator to draw from: fusegrad's default one, or a Generator passed as torch's
    `generator=` (`fg.manual_seed` returns the default one, as `torch.manual_seed`)."""
    gen = random_generator.chosen(generator)
    if gen is not None:
        return gen
    raise TypeError(f"{fn}() received an invalid combination of arguments - got ({got}generator="
                    f"{type(generator).__name__}), but expected one of:\n" + _SIGNATURES[fn])


_SIGNATURES = {
    "randperm": (
        " * (int n, *, torch.Generator generator, Tensor out = None, torch.dtype dtype = None, torch.layout layout = "
        "None, torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n"
        " * (int n, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, torch.device device = "
        "None, bool pin_memory = False, bool requires_grad = False)\n"),
    "normal": (
        " * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
        " * (Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor out = None)\n"
        " * (float mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
        " * (float mean, float std, tuple of ints size, *, torch.Generator generator = None, Tensor out = None, "
        "torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, bool pin_memory = False, "
        "bool requires_grad = False)\n"),
}


def _invalid_call(fn: str, got: str) -> TypeError:
    return TypeError(f"{fn}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                     + _SIGNATURES[fn])


# ---------------------------------------------------------------------- randperm
def randperm(n=_MISSING, *, generator=None, out=None, dtype: DType | None = None, layout=None, device=None,
             pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1 (int64 unless `dtype` says otherwise), torch's CPU
    algorithm and numbers: for n under 2**32 / 20, r = arange(n), then for i in 0 .. n-2,
    z = random32() % (n - i) and r[i], r[i + z] swap (n - 1 draws); beyond, the inside-out
    Fisher-Yates shuffle with 64-bit draws."""
    if n is _MISSING:
        raise _invalid_call("randperm", "")
    if type(n) is bool or not isinstance(n, (int, np.integer)):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not {type_name(n)}")
    if out is not None:
        raise NotImplementedError("fusegrad's randperm takes no out= tensor")
    gen = _generator(generator, "randperm", "int, ")
    check_device(device)
    dtype = _dtype_arg("randperm", dtype) or int64
    requires_grad = _grad_flag("randperm", requires_grad)
    n = int(n)
    shape = _size(((n,),), "randperm")          # torch's empty(n) first: its negative-size error
    if dtype is bool_:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    values = _allocated(shape, dtype.np, lambda: _permutation(n, gen))
    if dtype is float32 and n > (1 << 24) + 1:
        raise RuntimeError("n cannot be greater than 2^24+1 for Float type.")
    if dtype is float64 and n > (1 << 53) + 1:
        raise RuntimeError("n cannot be greater than 2^53+1 for Double type.")
    return _new(values.astype(dtype.np, copy=False), requires_grad)


_SMALL_N = (2 ** 32 - 1) // 20      # torch's switch to 64-bit draws (uint32 max / 20)


def _permutation(n: int, gen) -> np.ndarray:
    if n < _SMALL_N:
        if n < 2:
            return np.arange(n, dtype=np.int64)
        steps = np.arange(n - 1, dtype=np.int64)
        targets = (gen.words32(n - 1) % (n - steps).astype(np.uint64)).astype(np.int64) + steps
        if n > 2 ** 18:             # (below, a Python loop costs less than loading the kernel)
            r = np.arange(n, dtype=np.int64)
            _jitted(_swap_in_turn)(r, targets)
            return r
        r = list(range(n))
        for i, z in enumerate(targets.tolist()):
            r[i], r[z] = r[z], r[i]
        return np.array(r, dtype=np.int64)
    # the inside-out variant: r[i] = i; r[i] = r[z]; r[z] = i, z = random64() % (i + 1)
    steps = np.arange(n, dtype=np.uint64)
    targets = (gen.words64(n) % (steps + np.uint64(1))).astype(np.int64)
    r = np.empty(n, dtype=np.int64)
    _jitted(_place_inside_out)(r, targets)
    return r


def _swap_in_turn(r, targets):
    """Swap r[i] with r[targets[i]] for each i in turn (torch's shuffle of a smaller n)."""
    for i in range(targets.shape[0]):
        z = targets[i]
        r[i], r[z] = r[z], r[i]


def _place_inside_out(r, targets):
    """torch's inside-out shuffle of a large n: r[i] = r[z], r[z] = i for each i in turn."""
    for i in range(targets.shape[0]):
        z = targets[i]
        r[i] = r[z]
        r[z] = i


_JITTED: dict = {}


def _jitted(loop):
    """`loop` compiled by Numba on first use (and cached on disk): it runs over up to n elements."""
    compiled = _JITTED.get(loop)
    if compiled is None:
        import numba
        compiled = _JITTED[loop] = numba.njit(cache=True)(loop)
    return compiled


# ---------------------------------------------------------------------- the generator's state
_STATE_SIZE = 5056
_HEAD = struct.Struct("<QiiQ")               # the_initial_seed, left, seeded, next
_TAIL = struct.Struct("<dddi4xf?3x")         # normal_x, normal_y, normal_rho, normal_is_valid; float sample, valid
_N = 624


def _seeded_key(seed: int) -> np.ndarray:
    return np.random.RandomState(seed & 0xFFFFFFFF).get_state()[1]


def state_bytes(gen=None) -> bytes:
    """The generator's state as torch's CPUGeneratorImplState bytes."""
    gen = gen or random_generator.DEFAULT
    state = gen._bits.state["state"]
    key, pos = np.asarray(state["key"], dtype=np.uint32), int(state["pos"])
    if pos >= _N:
        # torch: left = 1, and next = 0 right after seeding or 624 after a whole block's draws
        left, nxt = 1, (0 if np.array_equal(key, _seeded_key(gen._seed)) else _N)
    else:
        left, nxt = _N + 1 - pos, pos
    normal = gen._next_normal
    float_normal = getattr(gen, "_next_float_normal", None)
    return (_HEAD.pack(gen._seed, left, 1, nxt) + key.astype("<u8").tobytes()
            + _TAIL.pack(0.0, 0.0 if normal is None else normal, 0.0, normal is not None,
                         0.0 if float_normal is None else float_normal, float_normal is not None))


def get_rng_state() -> Tensor:
    """torch.get_rng_state: the global generator's state, torch's 5056 bytes (as int64 values
    0..255: fusegrad has no uint8 dtype). `torch.set_rng_state(torch.tensor(s.numpy(),
    dtype=torch.uint8))` takes it, and `fg.set_rng_state(torch.get_rng_state().numpy())` takes
    torch's."""
    return state_tensor(None)


def state_tensor(gen) -> Tensor:
    """get_rng_state of Generator `gen` (None: the global one), for Generator.get_state."""
    return Tensor._wrap(np.frombuffer(state_bytes(gen), dtype=np.uint8).astype(np.int64))


def set_rng_state(new_state) -> None:
    """torch.set_rng_state: restore a state from get_rng_state (fusegrad's or torch's)."""
    set_state_bytes(_state_array(new_state), None)


def set_state_tensor(new_state, gen) -> None:
    """set_rng_state of Generator `gen`, for Generator.set_state."""
    set_state_bytes(_state_array(new_state), gen)


def _state_array(new_state) -> np.ndarray:
    if isinstance(new_state, np.ndarray) and new_state.dtype == np.uint8:
        return np.ascontiguousarray(new_state).reshape(-1)
    if not isinstance(new_state, Tensor):
        raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
    array = new_state.detach()._concrete().reshape(-1)
    if new_state.dtype is not int64 or (array.size and (array.min() < 0 or array.max() > 255)):
        raise TypeError("RNG state must be a torch.ByteTensor")
    return array.astype(np.uint8)


def set_state_bytes(data, gen=None) -> None:
    """Set the generator from torch's CPUGeneratorImplState bytes (checked as torch checks them)."""
    gen = gen or random_generator.DEFAULT
    data = bytes(np.asarray(data, dtype=np.uint8))
    if len(data) != _STATE_SIZE:
        raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_SIZE} but found the input RNG state "
                           f"size to be {len(data)}")
    seed, left, seeded, nxt = _HEAD.unpack_from(data, 0)
    nxt &= 0xFFFFFFFF                       # (torch keeps next as a uint32)
    if not (seeded and 0 < left <= _N and nxt <= _N):
        raise RuntimeError("Invalid mt19937 state")
    if left == 1:
        pos = _N                            # the next draw regenerates the block
    elif left + nxt == _N + 1:
        pos = nxt
    else:
        # (torch would read words next .. next + left - 2, then regenerate: no state its own
        # generator reaches; NumPy's MT19937 has one counter)
        raise RuntimeError(f"fusegrad's generator cannot take this mt19937 state (left={left}, next={nxt}: "
                           "torch's generator keeps left + next = 625)")
    key = np.frombuffer(data, dtype="<u8", count=_N, offset=_HEAD.size).astype(np.uint32)
    _, normal_y, _, normal_valid, float_normal, float_valid = _TAIL.unpack_from(data, _HEAD.size + 8 * _N)
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
    gen._bits = bits
    gen._seed = seed
    gen._next_normal = normal_y if normal_valid else None
    gen._next_float_normal = float_normal if float_valid else None


def seed() -> int:
    """torch.seed: seed the generator from a non-deterministic 64-bit number, and return it."""
    value = int.from_bytes(os.urandom(8), "little")
    manual_seed(value)
    return value


# ---------------------------------------------------------------------- normal
_NORMAL_KEYWORDS = ("mean", "std", "size", "generator", "out", "dtype", "layout", "device", "pin_memory",
                    "requires_grad")


def normal(*args, **kwargs) -> Tensor:
    """torch.normal(mean, std, size=None, *, generator=None, dtype=None, requires_grad=False, ...):
    see _normal."""
    got = ", ".join(["Tensor" if isinstance(v, Tensor) else type_name(v) for v in args]
                    + [f"{k}={'Tensor' if isinstance(v, Tensor) else type_name(v)}" for k, v in kwargs.items()])
    if len(args) > 3 or any(k not in _NORMAL_KEYWORDS for k in kwargs) or \
            any(k in kwargs for k in _NORMAL_KEYWORDS[:len(args)]):
        raise _invalid_call("normal", got)
    return _normal(*args, got=got, **kwargs)


def _normal(mean=_MISSING, std=_MISSING, size=_MISSING, *, got: str, generator=None, out=None,
            dtype: DType | None = None, layout=None, device=None, pin_memory: bool = False,
            requires_grad: bool = False) -> Tensor:
    """torch.normal's overloads, torch's numbers:
    `normal(mean: Tensor, std: Tensor)` (broadcast; mean's dtype), `normal(mean: Tensor, std=1.0)`,
    `normal(mean: float, std: Tensor)` and `normal(mean: float, std: float, size, dtype=, requires_grad=)`.
    As torch, a tensor overload draws N(0, 1) samples of the result's shape in one fill, then
    multiplies by std and adds mean (`output.mul_(std).add_(mean)`); its node (NormalBackward1,
    2 or 3) passes zero gradients to mean and std."""
    mean_t, std_t = isinstance(mean, (Tensor, np.ndarray)), isinstance(std, (Tensor, np.ndarray))
    factory = size is not _MISSING or dtype is not None or requires_grad is not False or layout is not None \
        or device is not None or pin_memory is not False
    if mean is _MISSING or (not mean_t and std is _MISSING) or (factory and (mean_t or std_t)):
        raise _invalid_call("normal", got)
    for value, is_tensor in ((mean, mean_t), (std, std_t)):
        if value is not _MISSING and not is_tensor and (isinstance(value, bool) or not _is_number(value)):
            raise _invalid_call("normal", got)
    if out is not None:
        raise NotImplementedError("fusegrad's normal takes no out= tensor")
    if generator is not None and not isinstance(generator, random_generator.Generator):
        raise _invalid_call("normal", got)
    gen = _generator(generator, "normal", "")
    if not mean_t and not std_t:
        if size is _MISSING:
            raise _invalid_call("normal", got)
        if not isinstance(size, (tuple, list)):
            raise _invalid_call("normal", got)
        check_device(device)
        dtype = _dtype_arg("normal", dtype)
        requires_grad = _grad_flag("normal", requires_grad)
        shape = _size((size,), "normal")
        from .inplace import normal_
        from .creation import empty
        result = normal_(empty(shape, dtype=dtype), float(mean), float(std)) if gen is random_generator.DEFAULT \
            else _normal_fill(empty(shape, dtype=dtype), gen, float(mean), float(std))
        if requires_grad:
            _require_grad(result)           # (torch's check: floating dtypes only)
        return result
    from .functional import as_tensor
    if mean_t and std_t:
        mean, std = as_tensor(mean, "normal"), as_tensor(std, "normal", "std", 2)
        s = std.detach()._concrete()
        if s.size and not s.min() >= 0:
            raise RuntimeError("normal expects all elements of std >= 0.0")
        shape = _broadcast(tuple(mean.shape), tuple(std.shape))
        out_dtype = mean.dtype
        samples = _samples(gen, shape, out_dtype, 0.0, 1.0)
        values = _in_place(samples, std, np.multiply)
        values = _in_place(values, mean, np.add)
        return _recorded(values, [mean, std], "NormalBackward3")
    if mean_t:
        mean = as_tensor(mean, "normal")
        std = 1.0 if std is _MISSING else float(std)
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_scalar_str(std)}")
        samples = _samples(gen, tuple(mean.shape), mean.dtype, 0.0, std)
        return _recorded(_in_place(samples, mean, np.add), [mean], "NormalBackward1")
    std = as_tensor(std, "normal", "std", 2)
    s = std.detach()._concrete()
    if s.size and not s.min() >= 0:
        raise RuntimeError("normal expects all elements of std >= 0.0")
    samples = _samples(gen, tuple(std.shape), std.dtype, 0.0, 1.0)
    values = _in_place(samples, std, np.multiply)
    mean_value = np.asarray(float(mean), dtype=std.dtype.np)        # torch's full({}, mean) of the result dtype
    with np.errstate(all="ignore"):
        values = np.asarray(values + mean_value).astype(std.dtype.np)
    return _recorded(values, [std], "NormalBackward2")


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) or (isinstance(x, Tensor) and x.dim() == 0)


def _broadcast(a: tuple, b: tuple) -> tuple:
    """torch's infer_size, with its error text."""
    n = max(len(a), len(b))
    out = []
    for k in range(n):
        i, j = len(a) - n + k, len(b) - n + k
        x, y = (a[i] if i >= 0 else 1), (b[j] if j >= 0 else 1)
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                               f"non-singleton dimension {k}")
        out.append(y if x == 1 else x)
    return tuple(out)


def _samples(gen, shape: tuple, dtype: DType, mean: float, std: float) -> np.ndarray:
    """torch's normal_ of a new contiguous tensor of `shape` and `dtype`."""
    n = 1
    for s in shape:
        n *= s
    random_generator.check_sample_dtype(dtype, "normal_kernel_cpu", n)
    if not n:
        return np.empty(shape, dtype.np)
    return _allocated(shape, dtype.np, lambda: gen.normal(n, dtype.np, mean, std).reshape(shape))


def _in_place(values: np.ndarray, other: Tensor, ufunc) -> np.ndarray:
    """`values` (a dimensioned result, or 0-d) combined in place with tensor `other` as torch's
    in-place op: computed in the promoted dtype, written back in values' dtype."""
    own = from_np(values.dtype)
    kinds = [(own, DIMMED if values.ndim else ZERO_DIM), (other.dtype, DIMMED if other.dim() else ZERO_DIM)]
    compute = _result_type(kinds).np
    o = other.detach()._concrete()
    with np.errstate(all="ignore"):
        return np.asarray(ufunc(values.astype(compute, copy=False), o.astype(compute, copy=False))).astype(values.dtype)


def from_np(dt) -> DType:
    from fusegrad.ir import from_numpy_dtype
    return from_numpy_dtype(dt)


def _recorded(values: np.ndarray, inputs: list, name: str) -> Tensor:
    """`values` as the result of torch's node `name` over `inputs` (a zero gradient to each)."""
    if not (is_grad_enabled() and any(t.requires_grad for t in inputs)):
        return Tensor._wrap(np.array(values, order="C"))
    from .functional import cast, expand
    base = inputs[0]
    if len(inputs) == 2:
        shape = values.shape
        base = expand(base, shape) if tuple(base.shape) != shape else base
        other = inputs[1]
        if other.requires_grad:
            # (a zero gradient reaches std through this sum; the node shows mean and std)
            other = cast(other, base.dtype, implicit=True)
            other = expand(other, shape) if tuple(other.shape) != shape else other
            base = apply_op("add", [base, other], None, "AddBackward0")
    result = apply_op("index_put", [base, np.array(values, order="C")], {"index": ()}, name)
    if trace_state.current() is None and result._grad_fn is not None:
        display_edges(result._grad_fn, tuple(edge_of(t) if t.requires_grad else None for t in inputs))
    return result


def _normal_fill(t: Tensor, gen, mean: float, std: float) -> Tensor:
    """normal_ with another generator than the default one (a fresh contiguous tensor)."""
    random_generator.check_sample_dtype(t.dtype, "normal_kernel_cpu", t.numel())
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_scalar_str(std)}")
    t._data[...] = gen.normal(t.numel(), t.dtype.np, mean, std).reshape(t._data.shape)
    return t


# ---------------------------------------------------------------------- dtype helpers
def is_floating_point(input) -> bool:
    """torch.is_floating_point: is the tensor's dtype a floating one."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_floating_point(): argument 'input' (position 1) must be Tensor, not {type_name(input)}")
    return input.dtype.is_floating_point


def promote_types(type1, type2) -> DType:
    """torch.promote_types: the smallest dtype both dtypes convert to without losing kind."""
    for k, (name, value) in enumerate((("type1", type1), ("type2", type2))):
        if not isinstance(value, DType):
            raise TypeError(f"promote_types(): argument '{name}' (position {k + 1}) must be torch.dtype, not "
                            f"{type_name(value)}")
    return _promote(type1, type2)


def result_type(tensor, other) -> DType:
    """torch.result_type of two operands (tensors or Python numbers): dimensioned tensors
    before 0-d ones, 0-d ones before numbers, within one category (bool, integer, floating)."""
    def kind(x, name, pos):
        if isinstance(x, Tensor):
            return (x.dtype, DIMMED if x.dim() else ZERO_DIM)
        if type(x) is np.bool_:
            x = float(x)            # (torch's parser reads a NumPy bool as a float number)
        if isinstance(x, (bool, int, float, np.integer, np.floating)):
            return (scalar_dtype(x), SCALAR)
        return None
    a, b = kind(tensor, "tensor", 1), kind(other, "other", 2)
    if a is None or b is None:
        raise TypeError(_result_type_text(tensor, other))
    return _result_type([a, b])


def _result_type_text(*args) -> str:
    """torch's parser text for result_type called with something neither a tensor nor a number."""
    names = ["Tensor" if isinstance(x, Tensor) else type_name(x) for x in args]
    # (torch marks a number as invalid even where the overload takes one: a call this text
    # describes has a bad argument, and its parser then rejects the numbers too)
    number = [False for _ in args]
    tensor = [isinstance(x, Tensor) for x in args]
    lines = []
    for overload, wants in (("Tensor tensor, Tensor other", (tensor, tensor)),
                            ("Number scalar, Tensor tensor", (number, tensor)),
                            ("Tensor tensor, Number other", (tensor, number)),
                            ("Number scalar1, Number scalar2", (number, number))):
        marked = [n if wants[k][k] else f"!{n}!" for k, n in enumerate(names)]
        lines.append(f" * ({overload})\n      didn't match because some of the arguments have invalid types: "
                     f"({', '.join(marked)})\n")
    return (f"result_type() received an invalid combination of arguments - got ({', '.join(names)}), but expected "
            "one of:\n" + "".join(lines))

