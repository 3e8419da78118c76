"""The vectorisable math library (codegen/vmath.py) and its libm twin (codegen/libmath.py).

* accuracy: float32 over a strided sweep of all bit patterns plus dense
  sweeps near 0 and the overflow/underflow thresholds, against float64 NumPy
  rounded to float32; float64 on random samples against mpmath;
* special values and integer/bool semantics, against torch (the oracle);
* dtype: float32 in gives float32 arithmetic and result;
* vectorisation: a fused float32 chain compiles to packed SIMD code with no
  calls in it.

Kernels are generated per (module, dtype) and compiled once: each evaluates
every function of a group in one loop, as the code generator's fused loops do.
"""
from __future__ import annotations

import functools
import re

import numpy as np
import pytest
from numba import njit, types
from numba.np.numpy_support import from_dtype

from fusegrad.codegen import libmath, vmath
from fusegrad.codegen.target import has_avx512

torch = pytest.importorskip("torch", reason="torch is the oracle for special values")
mpmath = pytest.importorskip("mpmath", reason="mpmath is the oracle for float64 accuracy")

MODULES = {"vmath": vmath, "libmath": libmath}
UNARY = ("exp", "expm1", "log", "log1p", "tanh", "sigmoid", "softplus", "sqrt", "sin", "cos")
# Max error of vmath in ulp, as documented in vmath's module docstring.
# float32: distance to the float64 result rounded to float32.
ULP32 = {"exp": 1, "expm1": 1, "log": 1, "log1p": 1, "tanh": 1, "sigmoid": 1, "softplus": 2,
         "sqrt": 0, "sin": 1, "cos": 1, "pow": 1}
# float64: real-valued distance to the exact result (mpmath); sin/cos are libm.
ULP64 = {"exp": 1.0, "expm1": 1.7, "log": 1.0, "log1p": 1.5, "tanh": 1.0, "sigmoid": 1.5,
         "softplus": 1.8, "sqrt": 0.5, "sin": 1.0, "cos": 1.0, "pow": 1.5}


# --------------------------------------------------------------------- kernels
def _compile(source: str, namespace: dict):
    exec(source, namespace)
    return njit(error_model="numpy")(namespace["kernel"])


@functools.lru_cache(maxsize=None)
def unary_kernel(module: str):
    """kernel(x, out): out[j, i] = UNARY[j](x[i]); results named r_<name>."""
    body = "".join(f"        r_{n} = fg_{n}(v)\n        out[{j}, i] = r_{n}\n" for j, n in enumerate(UNARY))
    source = f"def kernel(x, out):\n    for i in range(x.shape[0]):\n        v = x[i]\n{body}"
    return _compile(source, {f"fg_{n}": getattr(MODULES[module], f"fg_{n}") for n in UNARY})


PIECEWISE = ("pow", "maximum", "minimum", "clamp", "relu", "sign")


@functools.lru_cache(maxsize=None)
def piecewise_kernel(module: str, with_pow: bool = True):
    """kernel(x, y, z, out): pow(x, y), maximum(x, y), minimum(x, y), clamp(x, y, z), relu(x), sign(x)."""
    calls = {"pow": "fg_pow(x[i], y[i])", "maximum": "fg_maximum(x[i], y[i])",
             "minimum": "fg_minimum(x[i], y[i])", "clamp": "fg_clamp(x[i], y[i], z[i])",
             "relu": "fg_relu(x[i])", "sign": "fg_sign(x[i])"}
    body = "".join(f"        r_{n} = {calls[n]}\n        out[{j}, i] = r_{n}\n"
                   for j, n in enumerate(PIECEWISE) if with_pow or n != "pow")
    source = f"def kernel(x, y, z, out):\n    for i in range(x.shape[0]):\n{body}"
    return _compile(source, {f"fg_{n}": getattr(MODULES[module], f"fg_{n}") for n in PIECEWISE})


def run_unary(module: str, x: np.ndarray) -> dict:
    out = np.empty((len(UNARY), x.size), x.dtype)
    unary_kernel(module)(x, out)
    return dict(zip(UNARY, out))


def run_piecewise(module: str, x, y, z) -> dict:
    with_pow = x.dtype != np.bool_
    out = np.zeros((len(PIECEWISE), x.size), x.dtype)
    piecewise_kernel(module, with_pow)(x, y, z, out)
    return {n: out[j] for j, n in enumerate(PIECEWISE) if with_pow or n != "pow"}


def signature_for(kernel, dtype):
    """The kernel's compiled signature whose first argument holds `dtype`."""
    (sig,) = [s for s in kernel.signatures if s[0].dtype == from_dtype(np.dtype(dtype))]
    return sig


def result_types(kernel, dtype) -> dict:
    """The Numba type of each r_<name> in the kernel compiled for `dtype` arrays."""
    cres = kernel.overloads[signature_for(kernel, dtype)]
    return {k.split(".")[0][2:]: t for k, t in cres.type_annotation.typemap.items() if k.startswith("r_")}


# --------------------------------------------------------------------- references
def reference64(name: str, x: np.ndarray) -> np.ndarray:
    """float64 NumPy reference for UNARY[name] (accurate to ~1 float64 ulp)."""
    with np.errstate(all="ignore"):     # signalling NaN bit patterns warn on conversion
        d = x.astype(np.float64)
        if name == "sigmoid":
            # 0 where torch's e**-x overflows (its 1/(1 + inf)), else without that rounding
            e = np.exp(-np.abs(d))
            return np.where(x < libmath.SIGMOID_ZERO[x.dtype.type], 0.0, np.where(d >= 0, 1 / (1 + e), e / (1 + e)))
        if name == "softplus":
            return np.logaddexp(0.0, d)
        return getattr(np, name)(d)


def _ordered(a: np.ndarray) -> np.ndarray:
    """float32 bits mapped to integers that are ordered like the floats (-0 = +0)."""
    i = a.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def ulp_distance32(got: np.ndarray, want64: np.ndarray) -> np.ndarray:
    """Distance in float32 ulps from `got` to `want64` rounded to float32.

    NaN against NaN is 0; NaN against a number, or inf against anything else
    (a wrong side of an overflow threshold), is infinite.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        want = want64.astype(np.float32)
    d = np.zeros(got.shape)
    # Most results are exact: measure only the others.
    i = np.flatnonzero(got.view(np.int32) != want.view(np.int32))
    g, w = got[i], want[i]
    di = np.abs(_ordered(g) - _ordered(w)).astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    di[nan_g != nan_w] = np.inf
    di[nan_g & nan_w] = 0
    di[(np.isinf(g) | np.isinf(w)) & (g != w) & ~(nan_g | nan_w)] = np.inf
    d[i] = di
    return d


def assert_ulp32(name: str, x: np.ndarray, got: np.ndarray, want64: np.ndarray, bound: float):
    d = ulp_distance32(got, want64)
    worst = int(np.argmax(d))
    assert d[worst] <= bound, (f"{name}({x[worst]!r}) = {got[worst]!r}, want {np.float32(want64[worst])!r}: "
                               f"{d[worst]} ulp > {bound}")


def float32_sweep(stride: int) -> np.ndarray:
    """Every `stride`-th float32 bit pattern, plus dense sweeps where functions change regime."""
    strided = np.arange(0, 2**32, stride, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near_zero = np.linspace(-1, 1, 100_001, dtype=np.float32) * np.float32(2.0**-10)
    small = np.linspace(-20, 20, 200_001, dtype=np.float32)
    thresholds = [88.72283935546875, 89.0, -87.33654, -103.972, -103.28, 9.01, 44.36, 17.33, -17.33]
    dense = [np.float32(t) + np.arange(-500, 500, dtype=np.float32) * np.spacing(np.float32(t)) for t in thresholds]
    denormals = np.arange(0, 2**23, 97, dtype=np.uint32).view(np.float32)
    return np.concatenate([strided, near_zero, small, *dense, denormals, -denormals])


# --------------------------------------------------------------------- accuracy
@pytest.fixture(scope="module")
def sweep32():
    x = float32_sweep(stride=4099)
    return x, run_unary("vmath", x)


@pytest.mark.parametrize("name", UNARY)
def test_float32_accuracy(sweep32, name):
    x, got = sweep32
    assert_ulp32(name, x, got[name], reference64(name, x), ULP32[name])


def _mp_reference(name: str, x: float):
    mp = mpmath
    v = mp.mpf(x)
    if name == "sigmoid":
        return mp.mpf(0) if x < libmath.SIGMOID_ZERO[np.float64] else 1 / (1 + mp.exp(-v))
    if name == "softplus":
        return mp.log1p(mp.exp(v))
    return getattr(mp, name)(v)


def max_ulp64(name: str, x: np.ndarray, got: np.ndarray) -> tuple[float, float]:
    """Largest real-valued error in float64 ulps against mpmath, and where."""
    worst = (0.0, None)
    with mpmath.workprec(120):
        for xi, gi in zip(x.tolist(), got.tolist()):
            want = _mp_reference(name, xi)
            w = float(want)
            if w == 0.0 or not np.isfinite(w) or not np.isfinite(gi):
                assert gi == w, f"{name}({xi!r}) = {gi!r}, want {w!r}"
                continue
            err = float(abs(mpmath.mpf(gi) - want) / np.spacing(abs(w)))
            worst = max(worst, (err, xi))
    return worst


def float64_sample(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Random float64 arguments covering the function's interesting range."""
    wide = {"exp": (-750, 712), "expm1": (-45, 712), "tanh": (-25, 25), "sigmoid": (-745, 60),
            "softplus": (-745, 800), "sin": (-10, 10), "cos": (-10, 10)}
    parts = [rng.uniform(-1, 1, n) * 2.0 ** rng.integers(-60, 8, n)]
    if name in wide:
        parts.append(rng.uniform(*wide[name], n))
    else:   # log, log1p, sqrt: positive, over the whole exponent range
        parts.append(rng.uniform(1, 2, n) * 2.0 ** rng.integers(-1074, 1024, n))
        parts.append(rng.uniform(-1, 4, n))
    x = np.concatenate(parts)
    if name in ("log", "sqrt"):
        x = np.abs(x)
    if name == "log1p":
        x = x[x > -1]
    return x


@pytest.mark.parametrize("name", UNARY)
def test_float64_accuracy(name):
    x = float64_sample(name, 150, np.random.default_rng(sum(map(ord, name))))
    got = run_unary("vmath", x)[name]
    err, where = max_ulp64(name, x, got)
    assert err <= ULP64[name], f"{name}({where!r}): {err:.2f} ulp > {ULP64[name]}"


def pow_sample32(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Positive and negative bases over the float32 range; exponents keep y*log|x| in range."""
    x = rng.integers(0, 0x7F800000, n, dtype=np.int64).astype(np.int32).view(np.float32)
    y = (rng.uniform(-1, 1, n) * 150 / np.maximum(np.abs(np.log(x.astype(np.float64))), 1e-3)).astype(np.float32)
    y[: n // 4] = rng.integers(-10, 10, n // 4)
    neg = slice(n // 2, n // 2 + n // 8)
    x[neg] = -x[neg]
    y[neg] = np.round(y[neg])
    return x, y


def test_pow_float32_accuracy():
    x, y = pow_sample32(200_000, np.random.default_rng(1))
    got = run_piecewise("vmath", x, y, y)["pow"]
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64))
    assert_ulp32("pow", x, got, want, ULP32["pow"])


def test_pow_float64_accuracy():
    rng = np.random.default_rng(2)
    n = 300
    x = np.concatenate([rng.uniform(0, 4, n), np.abs(rng.standard_normal(n)) * 2.0 ** rng.integers(-1000, 1000, n)])
    # Exponents up to |y*log x| = 700: the hard case for exp(y*log x).
    y = rng.uniform(-1, 1, 2 * n) * 700 / np.maximum(np.abs(np.log(x)), 1e-3)
    y[::3] = rng.uniform(-8, 8, y[::3].size)
    got = run_piecewise("vmath", x, y, y)["pow"]
    with mpmath.workprec(150):
        for xi, yi, gi in zip(x.tolist(), y.tolist(), got.tolist()):
            want = mpmath.power(mpmath.mpf(xi), mpmath.mpf(yi))
            w = float(want)
            if w < 2.3e-308 or not np.isfinite(w):      # underflow/overflow: checked exactly elsewhere
                continue
            err = float(abs(mpmath.mpf(gi) - want) / np.spacing(w))
            assert err <= ULP64["pow"], f"pow({xi!r}, {yi!r}) = {gi!r}: {err:.2f} ulp"


# --------------------------------------------------------------------- special values (torch)
F32 = np.finfo(np.float32)
F64 = np.finfo(np.float64)
SPECIAL = {
    np.float32: [0.0, -0.0, 1e-45, -1e-45, float(F32.tiny), 1.0, -1.0, 0.5, -0.5, np.inf, -np.inf, np.nan,
                 float(F32.max), -float(F32.max), 88.72283935546875, 88.72284, 89.0, -87.3, -103.28, -103.9,
                 -104.0, -200.0, 1e-30, -1e-30, 9.0, 10.0, -10.0, 20.0, 100.0, -100.0, 1e20, 3e38],
    np.float64: [0.0, -0.0, 5e-324, -5e-324, float(F64.tiny), 1.0, -1.0, 0.5, -0.5, np.inf, -np.inf, np.nan,
                 float(F64.max), -float(F64.max), 709.782712893384, 709.79, 710.0, -708.4, -744.4, -745.2,
                 -746.0, -800.0, 1e-300, -1e-300, 19.0, 22.0, -22.0, 40.0, 1e200],
}


def torch_reference(name: str, x: np.ndarray) -> np.ndarray:
    """torch's result in x's dtype, except where torch is less accurate than our semantics."""
    t = torch.from_numpy(x)
    if name == "sigmoid":           # torch's rounding of e**-x is not part of our semantics
        return reference64(name, x).astype(x.dtype)
    if name == "softplus":          # torch's threshold=20 cut-off is not part of our semantics
        return reference64(name, x).astype(x.dtype)
    if name == "log1p":             # torch flushes denormal x to 0; C99 (and we) return x
        with np.errstate(all="ignore"):
            return np.log1p(x)
    return getattr(torch, name)(t).numpy()


def is_special(v: np.ndarray) -> np.ndarray:
    return (v == 0) | ~np.isfinite(v)


def assert_matches(name, args, got, want, bound):
    """Specials (0, inf, nan in or out) exactly, including the sign of zero; others within `bound` ulp."""
    exact = is_special(want) | np.logical_or.reduce([is_special(a) for a in args])
    for i in np.flatnonzero(exact):
        ok = (np.isnan(got[i]) and np.isnan(want[i])) or (
            got[i] == want[i] and np.signbit(got[i]) == np.signbit(want[i]))
        assert ok, f"{name}{tuple(a[i] for a in args)} = {got[i]!r}, torch gives {want[i]!r}"
    rest = ~exact
    if rest.any():
        with np.errstate(over="ignore"):
            spacing = np.spacing(np.abs(want[rest]).astype(want.dtype))
        err = np.abs(got[rest].astype(np.float64) - want[rest]) / spacing
        assert err.max() <= bound + 1, f"{name}: {err.max()} ulp"  # + torch's own error


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_special_values(module, dtype):
    x = np.array(SPECIAL[dtype], dtype)
    got = run_unary(module, x)
    for name in UNARY:
        bound = (ULP32 if dtype is np.float32 else ULP64)[name] if module == "vmath" else 1
        assert_matches(name, (x,), got[name], torch_reference(name, x), bound)


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_underflows_where_torchs_does(module, dtype):
    """torch's sigmoid is 1/(1 + e**-x): 0 exactly where e**-x overflows, a denormal just above."""
    edge = libmath.SIGMOID_ZERO[dtype]
    x = np.array([edge, np.nextafter(edge, dtype(-np.inf)), -88.0, -95.0, -100.0, -708.0, -745.0, -1e30], dtype)
    got = run_unary(module, x)["sigmoid"]
    want = torch.sigmoid(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(got == 0, want == 0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


POW_BASES = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, np.inf, -np.inf, np.nan, 1e-45, 10.0]
POW_EXPONENTS = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.5, -0.5, 1 / 3, np.inf, -np.inf, np.nan,
                 1000.0, -1000.0, 127.0, -149.0, 0.1, 1e10, -1e10]


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_piecewise_special_values(module, dtype):
    xs, ys = np.meshgrid(np.array(POW_BASES, dtype), np.array(POW_EXPONENTS, dtype))
    x, y = xs.ravel(), ys.ravel()
    got = run_piecewise(module, x, y, y)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    assert_matches("pow", (x, y), got["pow"], torch.pow(tx, ty).numpy(), ULP32["pow"])
    # maximum/minimum: torch's scalar and vector paths disagree on the sign of
    # a zero tie, so zeros are compared by value only here.
    for name, ref in (("maximum", torch.maximum), ("minimum", torch.minimum)):
        np.testing.assert_array_equal(got[name], ref(tx, ty).numpy(), err_msg=name)
    np.testing.assert_array_equal(np.signbit(got["relu"]), np.signbit(torch.relu(tx).numpy()))
    np.testing.assert_array_equal(got["relu"], torch.relu(tx).numpy())
    np.testing.assert_array_equal(got["sign"], torch.sign(tx).numpy())
    np.testing.assert_array_equal(np.signbit(got["sign"]), np.signbit(torch.sign(tx).numpy()))


@pytest.mark.parametrize("module", MODULES)
def test_clamp_special_values(module):
    v = np.array([np.nan, -np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, 2.5], np.float32)
    x, lo, hi = (a.ravel() for a in np.meshgrid(v, v, v))
    got = run_piecewise(module, x, lo, hi)["clamp"]
    want = torch.clamp(torch.from_numpy(x), torch.from_numpy(lo), torch.from_numpy(hi)).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("module", MODULES)
def test_int64_semantics(module):
    bases = np.array([-7, -3, -2, -1, 0, 1, 2, 3, 7, 2**31, -(2**40)], np.int64)
    exps = np.array([0, 1, 2, 3, 5, 30, 63, 64, 65, -1, -2, -3], np.int64)
    xs, ys = np.meshgrid(bases, exps)
    x, y = xs.ravel(), ys.ravel()
    z = np.roll(x, 3)
    got = run_piecewise(module, x, y, z)
    tx, ty, tz = (torch.from_numpy(a) for a in (x, y, z))
    want = {"pow": torch.pow(tx, ty), "maximum": torch.maximum(tx, ty), "minimum": torch.minimum(tx, ty),
            "clamp": torch.clamp(tx, ty, tz), "relu": torch.relu(tx), "sign": torch.sign(tx)}
    for name, w in want.items():
        np.testing.assert_array_equal(got[name], w.numpy(), err_msg=name)


@pytest.mark.parametrize("module", MODULES)
def test_bool_semantics(module):
    x, y, z = (a.ravel() for a in np.meshgrid(*[np.array([False, True])] * 3))
    got = run_piecewise(module, x, y, z)
    tx, ty, tz = (torch.from_numpy(a) for a in (x, y, z))
    want = {"maximum": torch.maximum(tx, ty), "minimum": torch.minimum(tx, ty),
            "clamp": torch.clamp(tx.long(), ty.long(), tz.long()).bool(), "sign": torch.sign(tx), "relu": tx}
    for name, w in want.items():
        np.testing.assert_array_equal(got[name], w.numpy(), err_msg=name)


# --------------------------------------------------------------------- dtypes
@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_results_keep_the_input_dtype(module, dtype):
    run_unary(module, np.ones(1, dtype))
    run_piecewise(module, *[np.ones(1, dtype)] * 3)
    want = types.float32 if dtype is np.float32 else types.float64
    found = {**result_types(unary_kernel(module), dtype), **result_types(piecewise_kernel(module, True), dtype)}
    assert set(found) == set(UNARY) | set(PIECEWISE)
    assert {n: t for n, t in found.items() if t != want} == {}


def test_mixed_operands_take_the_first_operands_type():
    """A literal or int operand is converted to the float operand's type (torch's scalar rule)."""
    fg_pow, fg_clamp = vmath.fg_pow, vmath.fg_clamp

    @njit
    def mixed(x):
        r_pow = fg_pow(x, 2)
        r_clamp = fg_clamp(x, 0.0, 1.5)
        return r_pow, r_clamp

    assert mixed(np.float32(3.0)) == (9.0, 1.5)
    (cres,) = mixed.overloads.values()
    assert cres.signature.return_type == types.UniTuple(types.float32, 2)


def test_python_call_runs_the_jitted_function():
    assert vmath.fg_sign(float("nan")) == 0.0
    assert vmath.fg_pow(np.int64(-1), np.int64(-3)) == -1


# --------------------------------------------------------------------- vectorisation
def w1_kernel(module):
    """A fused W1-like chain: tanh * sigmoid + exp(-x*x), and its gradient expression."""
    m = MODULES[module]
    fg_tanh, fg_sigmoid, fg_exp = m.fg_tanh, m.fg_sigmoid, m.fg_exp
    one, two = np.float32(1), np.float32(2)

    @njit(error_model="numpy")
    def kernel(x, g, y, dx):
        for i in range(x.shape[0]):
            v = x[i]
            t = fg_tanh(v)
            s = fg_sigmoid(v)
            e = fg_exp(-v * v)
            y[i] = t * s + e
            dx[i] = g[i] * ((one - t * t) * s + t * s * (one - s) - two * v * e)
    return kernel


def function_asm(kernel, dtype=np.float32) -> str:
    """Assembly of the kernel's own function (not its CPython wrapper) for `dtype` arrays."""
    sig = signature_for(kernel, dtype)
    asm = kernel.inspect_asm(sig)
    name = kernel.overloads[sig].fndesc.mangled_name
    start = asm.index(f"\n{name}:")
    return asm[start: asm.index(".Lfunc_end", start)]


PACKED = re.compile(r"\bv(?:fn?m(?:add|sub)\w*|mul|add|sub|div|max|min|blendv)ps\s[^\n]*\b[xyz]mm\d")


def test_fused_chain_vectorises():
    kernel = w1_kernel("vmath")
    x = np.linspace(-5, 5, 1000, dtype=np.float32)
    y, dx = np.empty_like(x), np.empty_like(x)
    kernel(x, np.ones_like(x), y, dx)
    asm = function_asm(kernel)
    assert re.search(r"\bcall", asm) is None, "a call is left in the fused loop"
    packed = PACKED.findall(asm)
    assert len(packed) > 20 and any(re.search(r"[yz]mm", p) for p in packed), asm[:2000]
    # And the vectorised chain computes the right thing.
    want = np.tanh(x.astype(np.float64)) / (1 + np.exp(-x.astype(np.float64))) + np.exp(-x.astype(np.float64) ** 2)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-7)


def test_unary_functions_vectorise():
    """Every float32 function, in one loop, still gives a loop without calls."""
    run_unary("vmath", np.ones(1, np.float32))
    asm = function_asm(unary_kernel("vmath"))
    assert re.search(r"\bcall", asm) is None
    assert re.search(r"[yz]mm", asm)


def test_libmath_chain_is_scalar_libm():
    """For the record (not a requirement): the libm twin leaves calls in the loop."""
    kernel = w1_kernel("libmath")
    x = np.linspace(-5, 5, 64, dtype=np.float32)
    kernel(x, x, np.empty_like(x), np.empty_like(x))
    calls = len(re.findall(r"\bcall", function_asm(kernel)))
    print(f"libmath W1 kernel: {calls} calls in the loop, {len(PACKED.findall(function_asm(kernel)))} packed ops")


# --------------------------------------------------------------------- near forms of sin/cos
NEAR = ("sin", "cos")


@functools.lru_cache(maxsize=None)
def near_kernel(module: str):
    """kernel(x, out): out[0..1] = fg_sin(x), fg_cos(x); out[2..3] = their near forms."""
    names = [f"fg_{n}" for n in NEAR] + [f"fg_{n}_near" for n in NEAR]
    body = "".join(f"        out[{j}, i] = {f}(x[i])\n" for j, f in enumerate(names))
    source = f"def kernel(x, out):\n    for i in range(x.shape[0]):\n{body}"
    return _compile(source, {f: getattr(MODULES[module], f) for f in names})


def assert_near_forms_agree(x: np.ndarray) -> None:
    """fg_sin_near/fg_cos_near give fg_sin/fg_cos's float32 results bit for bit on x."""
    out = np.empty((4, x.size), np.float32)
    near_kernel("vmath")(x, out)
    for j, name in enumerate(NEAR):
        full, near = out[j], out[j + 2]
        differ = (full.view(np.int32) != near.view(np.int32)) & ~(np.isnan(full) & np.isnan(near))
        assert not differ.any(), f"{name}_near({x[differ][0]!r}) = {near[differ][0]!r}, not {full[differ][0]!r}"


def test_near_forms_agree_with_the_full_forms_below_the_limit():
    """Below vmath.NEAR_LIMIT (2**20) the Cody-Waite reduction gives the Payne-Hanek one's
    results bit for bit: the sweep, the floats just under the limit, and specials."""
    x = float32_sweep(stride=4099)
    x = x[np.abs(x) < vmath.NEAR_LIMIT]
    limit = np.float32(vmath.NEAR_LIMIT)
    under = limit - np.arange(1, 20_001, dtype=np.float32) * np.spacing(np.float32(2.0 ** 19))
    ints = np.arange(0, 2**20, 7, dtype=np.float32)          # whole numbers: near multiples of pi/2 too
    specials = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-45], np.float32)
    assert_near_forms_agree(np.concatenate([x, under, -under, ints, -ints, specials]))


def test_near_forms_are_wrong_beyond_the_limit():
    """Why codegen/trig_guard.py guards them: far arguments lose the reduction's accuracy."""
    x = np.float32(2.0) ** np.arange(21, 127, dtype=np.float32) * np.float32(1.2345)
    out = np.empty((4, x.size), np.float32)
    near_kernel("vmath")(x, out)
    assert np.abs(out[0] - np.sin(x.astype(np.float64))).max() < 1e-6     # the full form is exact
    assert np.abs(out[2] - np.sin(x.astype(np.float64))).max() > 1e-3


def test_near_forms_vectorise():
    near_kernel("vmath")(np.ones(1, np.float32), np.empty((4, 1), np.float32))
    asm = function_asm(near_kernel("vmath"))
    assert re.search(r"\bcall", asm) is None
    assert re.search(r"[yz]mm", asm)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_libmath_near_forms_are_libm(dtype):
    """The libm twin's near forms are libm's sin/cos: any argument."""
    x = np.array([0.5, -3.0, 1e7, 3e30], dtype)
    for name in NEAR:
        got = np.array([getattr(libmath, f"fg_{name}_near")(v) for v in x], dtype)
        np.testing.assert_array_equal(got, getattr(np, name)(x.astype(np.float64)).astype(dtype))


@functools.lru_cache(maxsize=None)
def near_kernel64():
    """kernel(x, out): out[0..1] = vmath's float64 fg_sin_near(x), fg_cos_near(x)."""
    source = ("def kernel(x, out):\n    for i in range(x.shape[0]):\n"
              "        out[0, i] = fg_sin_near(x[i])\n        out[1, i] = fg_cos_near(x[i])\n")
    return _compile(source, {"fg_sin_near": vmath.fg_sin_near, "fg_cos_near": vmath.fg_cos_near})


def float64_near_sample(n: int, rng) -> np.ndarray:
    """Random float64 arguments below NEAR_LIMIT over many magnitudes, and the hard ones: the
    floats nearest to k*pi/2 (the remainder cancels to ~2**-60 of x) and their neighbours."""
    limit = vmath.NEAR_LIMIT
    k = rng.integers(1, int(limit * 0.6366), n)
    with mpmath.workprec(200):
        hard = np.array([float(mpmath.mpf(int(j)) * mpmath.pi / 2) for j in k])
    return np.concatenate([rng.uniform(-10, 10, n), rng.uniform(-1, 1, n) * 2.0 ** rng.integers(-60, 20, n),
                           hard, -np.nextafter(hard, 0), np.nextafter(hard, np.inf),
                           [np.pi / 4, np.pi / 2, np.pi, limit * (1 - 2 ** -40), 5e-324, 1e-300]])


def assert_near64_under_one_ulp(x: np.ndarray) -> None:
    """vmath's float64 fg_sin_near/fg_cos_near on x are under 1 ulp from mpmath's sin/cos."""
    out = np.empty((2, x.size))
    near_kernel64()(x, out)
    for j, name in enumerate(NEAR):
        err, where = max_ulp64(name, x, out[j])
        print(f"{name}_near: {err:.3f} ulp at {where!r}")
        assert err < 1.0, f"{name}_near({where!r}): {err:.2f} ulp"


def test_float64_near_forms_accuracy():
    """Under 1 ulp against mpmath (0.71 found), also where x is nearest a multiple of pi/2."""
    assert_near64_under_one_ulp(float64_near_sample(300, np.random.default_rng(64)))


def test_float64_near_forms_special_values():
    x = np.array([0.0, -0.0, np.nan, np.inf, -np.inf])
    out = np.empty((2, x.size))
    near_kernel64()(x, out)
    assert [np.copysign(1.0, v) for v in out[0, :2]] == [1.0, -1.0] and (out[0, :2] == 0).all()
    assert (out[1, :2] == 1.0).all() and np.isnan(out[:, 2:]).all()


def test_float64_near_forms_vectorise():
    near_kernel64()(np.ones(1), np.empty((2, 1)))
    asm = function_asm(near_kernel64(), np.float64)
    assert re.search(r"\bcall", asm) is None
    assert re.search(r"[yz]mm", asm)


@pytest.mark.slow
def test_float64_near_forms_accuracy_large_sample():
    assert_near64_under_one_ulp(float64_near_sample(10_000, np.random.default_rng(65)))


# --------------------------------------------------------------------- exp of an argument at most 43
@functools.lru_cache(maxsize=None)
def exp_small_kernel(module: str):
    """kernel(x, out): out[0] = fg_exp(x), out[1] = fg_exp_small(x)."""
    source = ("def kernel(x, out):\n    for i in range(x.shape[0]):\n"
              "        out[0, i] = fg_exp(x[i])\n        out[1, i] = fg_exp_small(x[i])\n")
    m = MODULES[module]
    return _compile(source, {"fg_exp": m.fg_exp, "fg_exp_small": m.fg_exp_small})


def assert_exp_small_agrees(x: np.ndarray, module: str = "vmath") -> None:
    """fg_exp_small gives fg_exp's results bit for bit on x (each <= SMALL_EXP_LIMIT or NaN)."""
    out = np.empty((2, x.size), x.dtype)
    exp_small_kernel(module)(x, out)
    ints = np.int32 if x.dtype == np.float32 else np.int64
    differ = (out[0].view(ints) != out[1].view(ints)) & ~(np.isnan(out[0]) & np.isnan(out[1]))
    assert not differ.any(), f"fg_exp_small({x[differ][0]!r}) = {out[1][differ][0]!r}, not {out[0][differ][0]!r}"


def _small_exp_edges(dtype) -> np.ndarray:
    limit, lo = dtype(vmath.SMALL_EXP_LIMIT), dtype(vmath._EXP_RANGE[dtype][0])
    edges = [limit, lo, dtype(-87.33654), dtype(-103.972), dtype(-103.28), dtype(-708.4), dtype(-745.1), dtype(0)]
    dense = [e + np.arange(-300, 1, dtype=dtype) * np.spacing(e) for e in edges[:2]] + \
            [e + np.arange(-300, 300, dtype=dtype) * np.spacing(e) for e in edges[2:]]
    specials = np.array([0.0, -0.0, np.nan, -np.inf, -1e-45, -3.4e38] + ([-1e300] if dtype is np.float64 else []),
                        dtype)
    return np.concatenate(dense + [specials])


def test_exp_small_agrees_with_exp_on_its_domain():
    """Up to vmath.SMALL_EXP_LIMIT (43) fg_exp_small is fg_exp, bit for bit: a float32 sweep,
    the clamp and the denormal results' thresholds, the limit, specials; float64 samples."""
    x = float32_sweep(stride=4099)
    x = x[~(x > vmath.SMALL_EXP_LIMIT)]
    assert_exp_small_agrees(np.concatenate([x, _small_exp_edges(np.float32)]))
    rng = np.random.default_rng(11)
    x64 = np.concatenate([rng.uniform(-800, 43, 1_000_000), -np.exp(rng.uniform(-700, 700, 100_000)),
                          _small_exp_edges(np.float64)])
    assert_exp_small_agrees(x64)
    assert_exp_small_agrees(x64, "libmath")     # (the libm twin's is libm's exp)


def test_exp_small_above_its_domain():
    """Why kernels use it only for arguments known to be at most 0: past 2**63 the one built
    factor of its scaling overflows. On AVX-512 both scale with LLVM's ldexp (one vscalefps),
    exact for every k, so there the two agree everywhere."""
    out = np.empty((2, 3), np.float32)
    exp_small_kernel("vmath")(np.array([44.5, 60.0, 88.0], np.float32), out)
    assert np.isfinite(out[0]).all()
    assert np.array_equal(out[0], out[1]) == has_avx512()


def test_exp_small_vectorises():
    exp_small_kernel("vmath")(np.ones(1, np.float32), np.empty((2, 1), np.float32))
    asm = function_asm(exp_small_kernel("vmath"))
    assert re.search(r"\bcall", asm) is None
    assert re.search(r"[yz]mm", asm)


# --------------------------------------------------------------------- exhaustive (slow)
@pytest.mark.slow
@pytest.mark.parametrize("module", ["vmath"])
def test_float32_exhaustive(module):
    """Every float32 bit pattern whose index is a multiple of FUSEGRAD_SWEEP_STRIDE
    (default 16: every exponent, every 16th mantissa, a few minutes in CI); set it
    to 1 for all 2**32 inputs (about 25 minutes on 2 cores)."""
    import os
    stride = int(os.environ.get("FUSEGRAD_SWEEP_STRIDE", "16"))
    chunk = 1 << 24
    worst = {n: 0.0 for n in UNARY}
    for start in range(0, 1 << 32, chunk * stride):
        x = (np.arange(chunk, dtype=np.uint64) * stride + start).astype(np.uint32).view(np.float32)
        got = run_unary(module, x)
        for name in UNARY:
            d = ulp_distance32(got[name], reference64(name, x))
            worst[name] = max(worst[name], float(d.max()))
        if start % (1 << 30) == 0:
            print(f"{start:#010x}", worst, flush=True)
    print(worst)
    assert all(worst[n] <= ULP32[n] for n in UNARY), worst


@pytest.mark.slow
def test_near_forms_exhaustive():
    """The near forms against the full forms, bit for bit, on every float32 below the limit
    whose index is a multiple of FUSEGRAD_SWEEP_STRIDE (default 16)."""
    import os
    stride = int(os.environ.get("FUSEGRAD_SWEEP_STRIDE", "16"))
    top = int(np.float32(vmath.NEAR_LIMIT).view(np.uint32))
    chunk = 1 << 24
    for start in range(0, top, chunk * stride):
        x = (np.arange(chunk, dtype=np.uint64) * stride + start).astype(np.uint32)
        x = x[x < top].view(np.float32)
        assert_near_forms_agree(np.concatenate([x, -x]))


@pytest.mark.slow
def test_exp_small_exhaustive():
    """fg_exp_small against fg_exp, bit for bit, on every float32 up to the limit (negative
    ones included) whose index is a multiple of FUSEGRAD_SWEEP_STRIDE (default 16)."""
    import os
    stride = int(os.environ.get("FUSEGRAD_SWEEP_STRIDE", "16"))
    chunk = 1 << 24
    for start in range(0, 1 << 32, chunk * stride):
        x = (np.arange(chunk, dtype=np.uint64) * stride + start).astype(np.uint32).view(np.float32)
        assert_exp_small_agrees(x[~(x > vmath.SMALL_EXP_LIMIT)])


@pytest.mark.slow
@pytest.mark.parametrize("name", UNARY)
def test_float64_accuracy_large_sample(name):
    x = float64_sample(name, 20_000, np.random.default_rng(sum(map(ord, name)) + 1))
    err, where = max_ulp64(name, x, run_unary("vmath", x)[name])
    print(f"{name}: {err:.3f} ulp at {where!r}")
    assert err <= ULP64[name]


# --------------------------------------------------------------------- erf (gelu's)
@functools.lru_cache(maxsize=None)
def erf_kernel():
    """kernel(x, out): out[i] = fg_erf(x[i]), as gelu's fused loops call it."""
    return _compile("def kernel(x, out):\n    for i in range(x.shape[0]):\n        out[i] = fg_erf(x[i])\n",
                    {"fg_erf": vmath.fg_erf})


def test_float32_erf_accuracy_special_values_and_vectorisation():
    """float32 erf (evaluated in float32, without a division) is within 1 ulp of the float64
    erf over the sweep and densely around its regime change (|x| = 1) and
    where it reaches 1 (|x| = 3.92); erf(+-0) keeps the sign, erf(+-inf) = +-1, NaN stays
    NaN; and the loop is packed SIMD code without calls (libm's erff was a call per element:
    gelu's kernels took 12.3 ms for value and gradient of [2048, 1024]; evaluated in float64,
    4.7 ms; in float32, 2.5 ms)."""
    import math
    dense = [np.arange(np.float32(lo).view(np.int32), np.float32(hi).view(np.int32), 7, dtype=np.int32).view(np.float32)
             for lo, hi in ((0.9, 1.1), (3.8, 4.1))]
    x = np.concatenate([float32_sweep(stride=40009), *dense, *[-d for d in dense]])
    got = np.empty_like(x)
    erf_kernel()(x, got)
    with np.errstate(all="ignore"):
        want = np.array([math.erf(v) for v in x.astype(np.float64).tolist()])
    assert_ulp32("erf", x, got, want, 1)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 4.0, -10.0, 1e-45], np.float32)
    out = np.empty_like(specials)
    erf_kernel()(specials, out)
    assert out[:4].tolist() == [0.0, -0.0, 1.0, -1.0] and np.signbit(out[1]) and not np.signbit(out[0])
    assert np.isnan(out[4]) and out[5:].tolist() == [1.0, -1.0, float(np.float32(1e-45 * 2 / math.sqrt(math.pi)))]
    asm = function_asm(erf_kernel())
    assert re.search(r"\bcall", asm) is None, "a call is left in the erf loop"
    # (its arithmetic is float32: packed single ops on ymm/zmm, and no division)
    assert len(re.findall(r"\bv\w+ps\s[^\n]*\b[yz]mm\d", asm)) > 20, asm[:3000]
    assert re.search(r"\bvdiv", asm) is None, "a division is left in the erf loop"


@pytest.mark.slow
def test_float32_erf_exhaustive():
    """fg_erf within 1 ulp of the float64 erf (Cody's, within 4 float64 ulp of libm's) rounded
    to float32 on every float32 from 0 to 4.5 whose index is a multiple of
    FUSEGRAD_SWEEP_STRIDE (default 16; 1 for all ~1.1e9 of them, about 9 minutes: erf is
    odd, by copysign, and 1 beyond 3.92); the negatives of a sample give the negated results
    bit for bit."""
    import os
    from fusegrad.ir.ops.erf_gelu import erf64
    stride = int(os.environ.get("FUSEGRAD_SWEEP_STRIDE", "16"))
    top = int(np.float32(4.5).view(np.uint32))
    chunk = 1 << 24
    worst = 0.0
    for start in range(0, top, chunk * stride):
        bits = np.arange(chunk, dtype=np.uint64) * stride + start
        x = bits[bits < top].astype(np.uint32).view(np.float32)
        got = np.empty_like(x)
        erf_kernel()(x, got)
        worst = max(worst, float(ulp_distance32(got, erf64(x)).max()))
        negated = np.empty_like(x[::997])
        erf_kernel()(-x[::997], negated)
        np.testing.assert_array_equal(negated.view(np.uint32), (-got[::997]).view(np.uint32))
    assert worst <= 1, worst


# --------------------------------------------------------------------- float32 in float64
# exp2, log2, log10, sinh, cosh, atanh, tan, atan, asin, acos (and atan2, below): float32
# evaluated in float64 and rounded once; the reference is NumPy's float64 function.
IN_FLOAT64 = {"exp2": np.exp2, "log2": np.log2, "log10": np.log10, "sinh": np.sinh, "cosh": np.cosh,
              "atanh": np.arctanh, "tan": np.tan, "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos}


@functools.lru_cache(maxsize=None)
def in_float64_kernel(name):
    return _compile(f"def kernel(x, out):\n    for i in range(x.shape[0]):\n        out[i] = fg_{name}(x[i])\n",
                    {f"fg_{name}": getattr(vmath, f"fg_{name}")})


def _in_float64_values(name, x):
    got = np.empty_like(x)
    in_float64_kernel(name)(x, got)
    with np.errstate(all="ignore"):
        want = IN_FLOAT64[name](x.astype(np.float64))
    return got, want


@pytest.mark.parametrize("name", sorted(IN_FLOAT64))
def test_float32_functions_evaluated_in_float64_accuracy_exact_cases_and_vectorisation(name):
    """Within 1 ulp of NumPy's float64 function rounded to float32 over the sweep (denormals,
    overflow thresholds, NaN and infinities included); exact cases exact (exp2 of integers,
    the least denormal's half tie included; log2 of powers of two; log10 of powers of ten;
    odd functions keep -0.0); and the loop is SIMD code without calls (it called libm's
    float32 function per element: exp2 15.6 -> 2.9 ms on 4M elements, log10 36 -> 2.9,
    sinh 91 -> 3.3, cosh 40 -> 3.0, atanh 106 -> 7.4, tan 75 -> 6.8, atan 78 -> 3.6,
    asin 44 -> 11, acos 46 -> 10)."""
    edges = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 0.99999994, -0.99999994, 89.41, 89.42, -89.42, 88.7, 127.99, 128.0,
                      -149.0, -150.0, -151.0, 1e-45, -1e-45, 1.5707964, 3.1415927, 1e10, 3.4e38, -3.4e38,
                      np.inf, -np.inf, np.nan], np.float32)
    x = np.concatenate([float32_sweep(stride=40009), edges])
    got, want = _in_float64_values(name, x)
    assert_ulp32(name, x, got, want, 1)
    special, expected = _in_float64_values(name, edges)
    np.testing.assert_array_equal(np.isnan(special), np.isnan(expected))
    exact = {"exp2": np.arange(-160, 130, dtype=np.float32),
             "log2": np.float32(2.0) ** np.arange(-149, 128, dtype=np.float32),
             "log10": np.float32(10.0) ** np.arange(-10, 11, dtype=np.float32)}.get(name)
    if exact is not None:
        got, want = _in_float64_values(name, exact)
        with np.errstate(over="ignore"):                 # (exp2(128) is inf in float32)
            np.testing.assert_array_equal(got, want.astype(np.float32))
    if name in ("sinh", "atanh", "tan", "atan", "asin"):
        zero = np.array([-0.0], np.float32)
        assert np.signbit(_in_float64_values(name, zero)[0][0])
    asm = function_asm(in_float64_kernel(name))
    assert re.search(r"\bcall", asm) is None, f"a call is left in the {name} loop"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(IN_FLOAT64))
def test_float32_functions_evaluated_in_float64_exhaustive(name):
    """Within 1 ulp on every float32 whose index is a multiple of FUSEGRAD_SWEEP_STRIDE
    (default 64, about 20 s per function; 1 for all 2**32; 16 passed for all ten, 4 for all
    but atan, asin and acos)."""
    import os
    stride = int(os.environ.get("FUSEGRAD_SWEEP_STRIDE", "64"))
    chunk = 1 << 24
    worst = 0.0
    for start in range(0, 1 << 32, chunk * stride):
        x = (np.arange(chunk, dtype=np.uint64) * stride + start).astype(np.uint32).view(np.float32)
        got, want = _in_float64_values(name, x)
        worst = max(worst, float(ulp_distance32(got, want).max()))
    assert worst <= 1, worst



def test_float32_atan2_accuracy_c99_special_cases_and_vectorisation():
    """fg_atan2 (in float64, rounded once) within 1 ulp of NumPy's float64 arctan2 on random
    bit patterns (NaN, infinities, denormals, every exponent) and normal pairs, and equal to
    it, sign included, on every pair of C99's special values (signed zeros, infinities, NaN,
    the least denormal, the largest floats); the loop vectorises (atan2f per element took 91
    ms on 4M pairs, 8.5 now)."""
    kernel = _compile("def kernel(y, x, out):\n    for i in range(x.shape[0]):\n        out[i] = fg_atan2(y[i], x[i])\n",
                      {"fg_atan2": vmath.fg_atan2})
    rng = np.random.default_rng(11)
    values = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3e38, -3e38, 0.5], np.float32)
    grid_y, grid_x = (a.ravel() for a in np.meshgrid(values, values))
    bits = rng.integers(0, 2 ** 32, (2, 400_000), dtype=np.uint64).astype(np.uint32).view(np.float32)
    normal = rng.standard_normal((2, 400_000)).astype(np.float32)
    for y, x, bound in ((grid_y, grid_x, 0), (bits[0], bits[1], 1), (normal[0], normal[1], 1)):
        got = np.empty_like(y)
        kernel(y, x, got)
        with np.errstate(all="ignore"):
            want = np.arctan2(y.astype(np.float64), x.astype(np.float64))
        assert_ulp32("atan2", y, got, want, bound)
        finite = ~np.isnan(got)
        np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(want[finite]))
    asm = function_asm(kernel)
    assert re.search(r"\bcall", asm) is None, "a call is left in the atan2 loop"


def test_float32_erfc_accuracy_special_values_and_vectorisation():
    """fg_erfc (in float64, rounded once) within 1 ulp of libm's double erfc rounded to
    float32 over the sweep, densely over [-11, 11] (its underflow to 0 past 10.06 included,
    through the denormals) and around the switch at |x| = 1/2; erfc(+-inf) = 0 / 2, NaN stays
    NaN; the loop vectorises (erfcf per element took 68 ms on 4M elements, 9-10 now)."""
    import math
    kernel = _compile("def kernel(x, out):\n    for i in range(x.shape[0]):\n        out[i] = fg_erfc(x[i])\n",
                      {"fg_erfc": vmath.fg_erfc})
    x = np.concatenate([float32_sweep(stride=400009), np.linspace(-11, 11, 400_001, dtype=np.float32),
                        np.linspace(9.0, 10.2, 100_001, dtype=np.float32),
                        np.float32(0.5) + np.arange(-2000, 2000, dtype=np.float32) * np.spacing(np.float32(0.5))])
    got = np.empty_like(x)
    kernel(x, got)
    with np.errstate(invalid="ignore"):             # (signalling NaN patterns)
        want = np.array([math.erfc(v) for v in x.astype(np.float64).tolist()])
    assert_ulp32("erfc", x, got, want, 1)
    specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 10.06, 30.0], np.float32)
    out = np.empty_like(specials)
    kernel(specials, out)
    assert out[[0, 1, 3, 4, 5, 6]].tolist() == [0.0, 2.0, 1.0, 1.0, 0.0, 0.0] and np.isnan(out[2])
    assert re.search(r"\bcall", function_asm(kernel)) is None, "a call is left in the erfc loop"
