"""fusegrad's random generator: torch's CPU generator, number for number.

`fg.manual_seed(n)` followed by `fg.rand`, `fg.randn`, `fg.randint`, `Tensor.uniform_`
/ `normal_` or `fg.nn.init` (so `nn.Linear`'s initial weights) gives the numbers
torch gives after `torch.manual_seed(n)`, so that a model built from a seed in both
libraries starts from the same weights.

torch's CPU generator is a 32-bit Mersenne Twister (MT19937) seeded by the seed's
low 32 bits (init_genrand); NumPy's legacy `RandomState(seed)` is the same engine
seeded the same way, and its state, moved into a bare MT19937 bit generator, supplies
the raw 32-bit words here (random_raw). What torch makes of
the words (ATen's TransformationHelper.h and cpu/DistributionTemplates.h,
checked against torch 2.13 sample by sample in tests/test_random.py):

- uniform float32: (word & (2**24 - 1)) * 2**-24, then `x * (to - from) + from` in
  float32 as one fused multiply-add; float64 takes 64-bit words (first word high) and
  53 bits.
- integers in [low, high): word % (high - low) + low (64-bit words when the range
  needs them).
- normal, float32 tensors of 16 or more contiguous elements: torch's AVX2 fill. All
  uniforms are drawn first; each block of 16 becomes 8 Box-Muller pairs computed with
  avx_mathfun's float32 log and sincos (Cephes polynomials, emulated here operation
  by operation, with the fused multiply-adds GCC contracts there); a last partial block
  is redrawn as 16 fresh uniforms written over the last 16 elements.
- normal, float64 of 16 or more contiguous elements: the same blocks in double, with
  libm's log, cos and sin (Python's math module calls the same functions).
- normal, anything else: one double-precision Box-Muller pair per two elements, the
  second value cached on the generator for the next sample (torch keeps it across
  calls; a seed clears it).
"""
from __future__ import annotations

import math
import os
import weakref

import numpy as np

from fusegrad.ir.fma import fma32, fma64

f32, f64 = np.float32, np.float64
_MASK24, _MASK53 = (1 << 24) - 1, (1 << 53) - 1
_UNIT53, _TWO_PI = 2.0 ** -53, 2.0 * math.pi


# torch's seed of a new torch.Generator() (its default_rng_seed_val)
DEFAULT_SEED = 67280421310721


def check_sample_dtype(dtype, kernel: str, numel: int) -> None:
    """torch's refusal of a random kernel for a dtype it does not sample (integers, bool),
    named by the kernel; the normal kernel refuses only when it has elements to write, so an
    empty tensor of any dtype passes it (torch.randn(0, dtype=torch.int64) is empty)."""
    if not dtype.is_floating_point and not (numel == 0 and kernel == "normal_kernel_cpu"):
        from fusegrad.ir.types import TORCH_SCALAR_NAMES
        raise NotImplementedError(f'"{kernel}" not implemented for \'{TORCH_SCALAR_NAMES[dtype.name]}\'')


# Every generator alive, the global one included: a compiled function's explain() is a dry run,
# which puts each stream back where it was (runtime/compile.py).
LIVE: weakref.WeakSet = weakref.WeakSet()


class Generator:
    """torch.Generator for the CPU: an MT19937 stream giving torch's numbers for its seed.
    `fg.Generator()` starts from torch's default seed; the global generator (DEFAULT, which
    `fg.manual_seed` seeds) starts from a non-deterministic one, as torch's."""

    def __init__(self, device="cpu"):
        from .device import check_device       # (device imports nothing of this module's)
        check_device(device)
        self.manual_seed(DEFAULT_SEED)
        LIVE.add(self)

    def snapshot_state(self) -> tuple:
        """Where the stream is, for restore_state (cheaper than get_state's torch bytes)."""
        return self._seed, self._bits.state, self._next_normal

    def restore_state(self, snapshot: tuple) -> None:
        """Put the stream back where snapshot_state found it."""
        self._seed, bits, self._next_normal = snapshot
        self._bits.state = bits

    @property
    def device(self):
        """Always the CPU."""
        from .device import device
        return device("cpu")

    def seed(self) -> int:
        """Seed from a non-deterministic 64-bit number, and return it (torch.Generator.seed)."""
        value = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(value)
        return value

    def get_state(self):
        """The state as torch's 5056 bytes (int64 values 0..255: see fg.get_rng_state)."""
        from .random_extra import state_tensor
        return state_tensor(self)

    def set_state(self, new_state) -> "Generator":
        """Restore a state from get_state (fusegrad's or torch's); returns the generator."""
        from .random_extra import set_state_tensor
        set_state_tensor(new_state, self)
        return self

    def manual_seed(self, seed: int) -> "Generator":
        """Restart the stream from `seed` (taken modulo 2**64, as torch's)."""
        self._seed = seed % 2 ** 64
        # RandomState's integer seeding is init_genrand, as torch's mt19937(seed); its state then
        # moves into a bare MT19937 bit generator, whose random_raw gives the words cheaply.
        _, key, pos, _, _ = np.random.RandomState(self._seed & 0xFFFFFFFF).get_state()
        self._bits = np.random.MT19937()
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self._next_normal = None            # the cached second value of a Box-Muller pair
        return self

    def initial_seed(self) -> int:
        """The seed the stream started from (torch.initial_seed)."""
        return self._seed

    # ------------------------------------------------------------------ raw words
    def words32(self, n: int) -> np.ndarray:
        """n raw 32-bit draws of the engine (as uint64)."""
        return self._bits.random_raw(n)

    def words64(self, n: int) -> np.ndarray:
        """n 64-bit draws, each two 32-bit words, the first the high half (torch's random64)."""
        w = self.words32(2 * n)
        return (w[0::2] << np.uint64(32)) | w[1::2]

    # ------------------------------------------------------------------ samples
    def uniform(self, n: int, dtype, low: float = 0.0, high: float = 1.0, fused: bool = True) -> np.ndarray:
        """n samples of U[low, high) in `dtype` (float32 or float64), in draw order: u * (high -
        low) + low rounded once, as torch's uniform_ kernel, or (float64, not `fused`) twice, as
        its scalar uniform_real_distribution in other kernels (rrelu's)."""
        if np.dtype(dtype) == np.float32:
            x = (self.words32(n) & np.uint64(_MASK24)).astype(f32) * f32(2.0 ** -24)
            lo, hi = f32(low), f32(high)
            # torch computes fma(x, to - from, from) in float32 (0 and 1: x itself)
            return x if (lo, hi) == (0, 1) else fma32(x, hi - lo, lo)
        x = (self.words64(n) & np.uint64(_MASK53)).astype(f64) * _UNIT53
        if (low, high) == (0, 1):
            return x
        return fma64(x, f64(high) - f64(low), f64(low)) if fused else x * (f64(high) - f64(low)) + f64(low)

    def integers(self, low: int, high: int, n: int) -> np.ndarray:
        """n integers uniform in [low, high) as int64 (torch's random_from_to)."""
        span = high - low
        words = self.words64(n) if span >= 2 ** 32 else self.words32(n)
        return ((words % np.uint64(span)).astype(np.int64) + np.int64(low)).astype(np.int64)

    def normal(self, n: int, dtype, mean: float = 0.0, std: float = 1.0, contiguous: bool = True) -> np.ndarray:
        """n samples of N(mean, std**2) in `dtype`, in fill order, by torch's path for a
        tensor of n elements (`contiguous`: whether that tensor is)."""
        if n >= 16 and contiguous:
            if np.dtype(dtype) == np.float32:
                return self._normal_blocks(n, f32, lambda blocks: _box_muller_avx2(blocks, f32(mean), f32(std)))
            return self._normal_blocks(n, f64, lambda blocks: _box_muller_libm(blocks, float(mean), float(std)))
        return self._normal_pairs(n, float(mean), float(std), dtype)

    # torch's per-element distributions of a double uniform (transformation.h, CPU): each is a
    # libm function of one 53-bit uniform (or, log-normal, of one per-element normal sample)
    def exponential(self, n: int, lambd: float) -> np.ndarray:
        """n samples of Exp(lambd) in float64: -1 / lambd * log1p(-u)."""
        scale = -1.0 / lambd
        return _libm(lambda u: scale * math.log1p(-u), lambda u: scale * np.log1p(-u), self.uniform(n, f64))

    def geometric(self, n: int, p: float) -> np.ndarray:
        """n samples of Geometric(p) (trials to the first success) in float64: ceil(log(u) / log1p(-p))."""
        denominator = math.log1p(-p)
        return _libm(lambda u: math.ceil(math.log(u) / denominator) if u > 0 else math.inf,
                     lambda u: np.ceil(np.log(u) / denominator), self.uniform(n, f64))

    def cauchy(self, n: int, median: float, sigma: float) -> np.ndarray:
        """n samples of Cauchy(median, sigma) in float64: median + sigma * tan(pi * (u - 0.5))."""
        return _libm(lambda u: median + sigma * math.tan(math.pi * (u - 0.5)),
                     lambda u: median + sigma * np.tan(math.pi * (u - 0.5)), self.uniform(n, f64))

    def log_normal(self, n: int, mean: float, std: float) -> np.ndarray:
        """n samples of exp(N(mean, std**2)) in float64, each from one per-element normal sample."""
        return _libm(math.exp, np.exp, self._normal_pairs(n, float(mean), float(std), f64))

    def _normal_blocks(self, n: int, dtype, transform) -> np.ndarray:
        """torch's normal_fill: n uniforms, each whole block of 16 transformed in place; a last
        partial block is 16 fresh uniforms (drawn after the n) transformed and written over the
        last 16 elements. (The tail block rides along in the one call of `transform`.)"""
        full, tail = n // 16 * 16, n % 16
        uniforms = self.uniform(n + (16 if tail else 0), dtype)
        blocks = np.concatenate([uniforms[:full], uniforms[n:]]) if tail else uniforms
        normals = transform(blocks.reshape(-1, 16)).reshape(-1)
        data = uniforms[:n]
        data[:full] = normals[:full]
        if tail:
            data[n - 16:] = normals[full:]
        return data

    def _normal_pairs(self, n: int, mean: float, std: float, dtype) -> np.ndarray:
        """torch's normal_distribution<double>, one sample at a time (its path for tensors of
        under 16 elements): a Box-Muller pair from two 53-bit uniforms, the second value kept
        for the next sample. Python floats: a few samples cost less than NumPy's calls."""
        values = []
        if self._next_normal is not None and n:
            values.append(self._next_normal)
            self._next_normal = None
        pairs = (n - len(values) + 1) // 2
        words = self.words32(4 * pairs).tolist()
        sqrt, log1p, cos, sin = math.sqrt, math.log1p, math.cos, math.sin
        for k in range(0, 4 * pairs, 4):
            u1 = ((words[k] << 32 | words[k + 1]) & _MASK53) * _UNIT53
            u2 = ((words[k + 2] << 32 | words[k + 3]) & _MASK53) * _UNIT53
            radius = sqrt(-2.0 * log1p(-u2))
            theta = _TWO_PI * u1
            values.append(radius * cos(theta))
            values.append(radius * sin(theta))
        if len(values) > n:                 # an odd count: the last sine waits for the next sample
            self._next_normal = values.pop()
        if (mean, std) == (0.0, 1.0):
            return np.array(values, dtype)
        return fma64(np.array(values, f64), std, mean).astype(dtype)


# Up to this many samples a distribution's libm function runs per element in Python, giving
# torch's values exactly; beyond, NumPy's (its float64 log1p, tan, exp may differ from libm's
# in the last bit, which a float32 result almost never shows).
LIBM_UP_TO = 4096


def _libm(scalar, vector, values: np.ndarray) -> np.ndarray:
    """scalar(v) for each of `values` (float64) where they are few, else vector(values)."""
    if values.size <= LIBM_UP_TO:
        return np.array([scalar(v) for v in values.tolist()], f64)
    with np.errstate(all="ignore"):
        return np.asarray(vector(values), f64)


def _box_muller_libm(blocks: np.ndarray, mean: float, std: float) -> np.ndarray:
    """torch's normal_fill_16 in double: per row, u[:8] and u[8:] make 8 pairs."""
    u1 = (1.0 - blocks[:, :8]).ravel().tolist()
    u2 = blocks[:, 8:].ravel().tolist()
    radius = [math.sqrt(-2.0 * math.log(u)) for u in u1]
    theta = [2.0 * math.pi * u for u in u2]
    first = np.array([r * math.cos(t) for r, t in zip(radius, theta)], f64)
    second = np.array([r * math.sin(t) for r, t in zip(radius, theta)], f64)
    out = np.empty_like(blocks)
    out[:, :8] = fma64(first, std, mean).reshape(-1, 8)
    out[:, 8:] = fma64(second, std, mean).reshape(-1, 8)
    return out


# ---------------------------------------------------------------------- torch's AVX2 fill
_LOG_P = tuple(f32(c) for c in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                                1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                                3.3333331174e-1))
_SIN_P = tuple(f32(c) for c in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1))
_COS_P = tuple(f32(c) for c in (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2))
_DP = tuple(f32(c) for c in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8))


def _log_avx(x: np.ndarray) -> np.ndarray:
    """avx_mathfun's log256_ps on positive float32 (the fill's 1 - u is in (0, 1])."""
    bits = np.maximum(x, f32(1.17549435e-38)).view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(f32) + f32(1)
    x = ((bits & ~0x7F800000) | 0x3F000000).view(f32)          # mantissa in [0.5, 1)
    small = x < f32(0.707106781186547524)
    tmp = np.where(small, x, f32(0))
    x = x - f32(1)
    e = e - np.where(small, f32(1), f32(0))
    x = x + tmp
    z = x * x
    y = fma32(_LOG_P[0], x, _LOG_P[1])
    for p in _LOG_P[2:]:
        y = fma32(y, x, p)
    y = y * x
    y = fma32(y, z, e * f32(-2.12194440e-4))
    y = fma32(-z, f32(0.5), y)
    x = x + y
    return fma32(e, f32(0.693359375), x)


def _sincos_avx(x: np.ndarray) -> tuple:
    """avx_mathfun's sincos256_ps on float32 in [0, 2 pi): (sin, cos)."""
    sign_sin = x.view(np.int32) & np.int32(-2 ** 31)
    x = np.abs(x)
    j = (x * f32(1.27323954473516)).astype(np.int32)
    j = (j + 1) & ~1
    y = j.astype(f32)
    swap_sin = (j & 4) << 29
    use_sin_poly = (j & 2) == 0
    for dp in _DP:
        x = fma32(y, dp, x)
    sign_cos = ((~(j - 2)) & 4) << 29
    sign_sin = sign_sin ^ swap_sin
    z = x * x
    yc = fma32(fma32(_COS_P[0], z, _COS_P[1]), z, _COS_P[2])
    yc = yc * z
    yc = fma32(yc, z, -(z * f32(0.5)))
    yc = yc + f32(1)
    ys = fma32(fma32(_SIN_P[0], z, _SIN_P[1]), z, _SIN_P[2])
    ys = ys * z
    ys = fma32(ys, x, x)
    # (avx_mathfun selects with masks and adds the unselected +0: -0 comes out +0)
    sin = np.where(use_sin_poly, ys, yc) + f32(0)
    cos = np.where(use_sin_poly, yc, ys) + f32(0)
    return ((sin.view(np.int32) ^ sign_sin).view(f32), (cos.view(np.int32) ^ sign_cos.astype(np.int32)).view(f32))


def _box_muller_avx2(blocks: np.ndarray, mean, std) -> np.ndarray:
    """torch's normal_fill_16_AVX2 on rows of 16 float32 uniforms."""
    u1 = f32(1) - blocks[:, :8]
    theta = f32(2.0 * math.pi) * blocks[:, 8:]
    radius = np.sqrt(f32(-2) * _log_avx(u1))
    sin, cos = _sincos_avx(theta)
    out = np.empty_like(blocks)
    out[:, :8] = fma32(radius * cos, std, mean)
    out[:, 8:] = fma32(radius * sin, std, mean)
    return out


# ---------------------------------------------------------------------- filling arrays
def in_memory_order(array: np.ndarray) -> np.ndarray:
    """Indices into array.ravel() (logical order) of its elements sorted by address: the
    order torch's nullary kernels fill a tensor in."""
    offsets = np.zeros(array.shape, np.int64)
    for axis, stride in enumerate(array.strides):
        shape = [1] * array.ndim
        shape[axis] = array.shape[axis]
        offsets = offsets + np.arange(array.shape[axis], dtype=np.int64).reshape(shape) * stride
    return np.argsort(offsets.ravel(), kind="stable")


def in_logical_order(array: np.ndarray, values: np.ndarray) -> np.ndarray:
    """`values`, given in the order torch's kernels fill `array`'s memory, as an array of
    array's shape in logical order (each value at the element it fills)."""
    if array.flags.c_contiguous:
        return values.reshape(array.shape)
    flat = np.empty(array.size, values.dtype)
    flat[in_memory_order(array)] = values
    return flat.reshape(array.shape)


def fill(array: np.ndarray, values: np.ndarray) -> None:
    """Write `values` (in fill order) into `array` in memory order, as torch fills a tensor."""
    array[...] = in_logical_order(array, values)


DEFAULT = Generator()
DEFAULT.seed()


def chosen(gen):
    """The generator a `generator=` argument names: the global one for None, `gen` itself for a
    Generator, None for anything else (each caller raises its function's TypeError)."""
    if gen is None:
        return DEFAULT
    return gen if isinstance(gen, Generator) else None


def required(gen, fn: str) -> Generator:
    """`chosen(gen)`, or torch's TypeError for a `generator=` argument of `fn` that is no Generator."""
    found = chosen(gen)
    if found is None:
        from .parser_errors import type_name      # (it imports the tensor module)
        raise TypeError(f"{fn}(): argument 'generator' must be torch.Generator, not {type_name(gen)}")
    return found
