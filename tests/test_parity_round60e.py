"""Round 60e of torch parity: LU and torch's legacy linear algebra.

- fg.linalg.lu_factor, lu_factor_ex, lu, lu_solve and cond (LU with partial pivoting written in
  NumPy, LAPACK getrf's pivots; pivots and info int64 where torch's are int32), their gradients
  (LinalgLuFactorExBackward0, LinalgLuBackward0, LinalgLuSolveBackward0), square, wide and tall.
- torch.svd / qr / cholesky / cholesky_solve / cholesky_inverse / lu / lu_solve / lu_unpack /
  triangular_solve / nuclear_norm / frobenius_norm and their Tensor methods; the removed
  lstsq, matrix_rank, eig, symeig raise torch's texts.
"""
import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _result_or_error(call):
    """call()'s result, or the exception's class name and message: the outcome compared."""
    try:
        return call()
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return type(exc).__name__, str(exc)


def _np(x):
    return x.detach().numpy() if isinstance(x, torch.Tensor) else x.detach().numpy()


def _tensors(L, arrays, grad):
    return [L.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]


def _compare(fn, arrays, grad=True, rtol=1e-5, atol=1e-5, diff_outputs=None):
    """fn(L, *tensors) for both libraries: values, dtypes of floats, grad_fn names and, where
    `grad`, the gradients of a weighted sum of the float outputs (diff_outputs: which)."""
    outs = {}
    for name, L in (("fg", fg), ("torch", torch)):
        ts = _tensors(L, arrays, grad)
        out = fn(L, *ts)
        outs[name] = (ts, out if isinstance(out, (tuple, list)) else (out,))
    (fts, fouts), (tts, touts) = outs["fg"], outs["torch"]
    assert len(fouts) == len(touts)
    for k, (f, t) in enumerate(zip(fouts, touts)):
        assert tuple(f.shape) == tuple(t.shape), k
        if t.dtype.is_floating_point:
            assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(_np(f).astype(np.float64), _np(t).astype(np.float64), rtol=rtol, atol=atol)
        fname = type(f.grad_fn).__name__ if f.grad_fn is not None else None
        tname = type(t.grad_fn).__name__ if t.grad_fn is not None else None
        assert fname == tname, (k, fname, tname)
    if not grad:
        return
    rng = np.random.default_rng(7)
    picks = [k for k, t in enumerate(touts) if t.requires_grad and (diff_outputs is None or k in diff_outputs)]
    weights = [rng.standard_normal(tuple(touts[k].shape)) for k in picks]
    fsum = sum((fouts[k] * fg.tensor(w.astype(_np(touts[k]).dtype))).sum() for k, w in zip(picks, weights))
    tsum = sum((touts[k] * torch.tensor(w.astype(_np(touts[k]).dtype))).sum() for k, w in zip(picks, weights))
    ferr, terr = _result_or_error(fsum.backward), _result_or_error(tsum.backward)
    assert ferr == terr         # (torch's cond(A, 1) backward raises its version error: so does fusegrad's)
    if terr is not None:
        return
    for f, t in zip(fts, tts):
        if t.requires_grad:
            np.testing.assert_allclose(_np(f.grad), _np(t.grad), rtol=rtol * 10, atol=atol * 10)


def _matrix(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _spd(shape, dtype=np.float64, seed=0):
    m = _matrix(shape, np.float64, seed)
    return (m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


SHAPES = [(3, 3), (2, 4, 4), (3, 5), (5, 3), (2, 1, 4, 2)]
DTYPES = [np.float32, np.float64]


def _tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-8, atol=1e-9)


# ------------------------------------------------------------------ LU
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_factor(shape, dtype):
    _compare(lambda L, a: L.linalg.lu_factor(a), [_matrix(shape, dtype)], diff_outputs=(0,), **_tol(dtype))
    _compare(lambda L, a: L.linalg.lu_factor_ex(a), [_matrix(shape, dtype, 1)], diff_outputs=(0,), **_tol(dtype))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_linalg_lu(shape, dtype):
    _compare(lambda L, a: L.linalg.lu(a), [_matrix(shape, dtype, 2)], **_tol(dtype))


def test_lu_pivots_ties_and_singular():
    x = _matrix((3, 3))
    x[:, 0] = [2.0, -2.0, 2.0]                  # ties: the first largest
    s = np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]])
    for a in (x, s, np.zeros((2, 3, 3))):
        f, t = fg.linalg.lu_factor_ex(fg.tensor(a)), torch.linalg.lu_factor_ex(torch.tensor(a))
        np.testing.assert_allclose(f.LU.numpy(), t.LU.numpy(), atol=1e-12)
        assert f.pivots.tolist() == t.pivots.tolist() and f.info.tolist() == t.info.tolist()
    assert fg.linalg.lu_factor(fg.tensor(x)).pivots.dtype == fg.int64          # (torch: int32)
    assert repr(fg.linalg.lu_factor_ex(fg.tensor(s))).startswith("fg.return_types.linalg_lu_factor_ex(")


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_solve(left, adjoint, dtype):
    a = _matrix((2, 4, 4), dtype, 3)
    b = _matrix((2, 4, 3) if left else (2, 3, 4), dtype, 4)

    def fn(L, a, b):
        lu_, piv = L.linalg.lu_factor(a)
        return L.linalg.lu_solve(lu_, piv, b, left=left, adjoint=adjoint)
    _compare(fn, [a, b], **_tol(dtype))


def test_lu_solve_gradient_of_factors_and_broadcast():
    a, b = _matrix((4, 4), seed=5), _matrix((3, 4, 2), seed=6)

    def fn(L, a, b):
        lu_, piv = L.linalg.lu_factor(a)
        return L.lu_solve(b, lu_, piv), L.linalg.lu_solve(lu_, piv, b)
    _compare(fn, [a, b])


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 5), (5, 3)])
def test_lu_unpack(shape):
    def fn(L, a):
        lu_, piv = L.linalg.lu_factor(a)
        return tuple(L.lu_unpack(lu_, piv))
    _compare(fn, [_matrix(shape, seed=8)])
    for data, pivots in ((False, True), (True, False)):
        _compare(lambda L, a: tuple(L.lu_unpack(*L.linalg.lu_factor(a), unpack_data=data, unpack_pivots=pivots)),
                 [_matrix(shape, seed=9)], grad=False)


def test_legacy_lu():
    a = _matrix((2, 3, 3), seed=10)
    _compare(lambda L, a: tuple(L.lu(a)), [a], diff_outputs=(0,))
    _compare(lambda L, a: tuple(a.lu(get_infos=True)), [a], diff_outputs=(0,))
    r = fg.lu(fg.tensor(np.zeros((3, 3))), get_infos=True)
    assert type(r).__name__ == "_lu_with_info" and r.info.item() == 1


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_cond(p, dtype):
    _compare(lambda L, a: L.linalg.cond(a, p), [_matrix((2, 3, 3), dtype, 11)], **_tol(dtype))


def test_cond_singular_and_empty():
    for a, p in ((np.zeros((3, 3)), "fro"), (np.zeros((3, 3)), 1), (np.zeros((0, 0)), None),
                 (np.zeros((2, 0, 0)), 1), (_matrix((3, 4)), None), (np.zeros((3, 0)), 1)):
        f, t = fg.linalg.cond(fg.tensor(a), p), torch.linalg.cond(torch.tensor(a), p)
        np.testing.assert_allclose(f.numpy(), t.numpy())
        assert tuple(f.shape) == tuple(t.shape)


# ------------------------------------------------------------------ legacy decompositions
@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (2, 3, 5)])
@pytest.mark.parametrize("some", [True, False])
def test_svd(shape, some):
    a = _matrix(shape, seed=12)

    def fn(L, a):
        u, s, v = L.svd(a, some=some)
        # sign-invariant uses of U and V (the columns' signs are LAPACK's either way)
        k = s.shape[-1]
        return (u[..., :k] * s.unsqueeze(-2)) @ v[..., :k].mT, s, u[..., :k].abs(), v[..., :k].abs()
    _compare(fn, [a])
    f, t = fg.svd(fg.tensor(a), some=some), torch.svd(torch.tensor(a), some=some)
    assert [tuple(x.shape) for x in f] == [tuple(x.shape) for x in t]
    _compare(lambda L, a: tuple(a.svd(compute_uv=False)), [a])
    assert repr(f).startswith("fg.return_types.svd(\nU=")


@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (2, 4, 3)])
@pytest.mark.parametrize("some", [True, False])
def test_qr(shape, some):
    grad = some or shape[-2] <= shape[-1]
    _compare(lambda L, a: tuple(L.qr(a, some)), [_matrix(shape, seed=13)], grad=grad)
    _compare(lambda L, a: tuple(a.qr(some=some)), [_matrix(shape, seed=14)], grad=False)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_family(upper, dtype):
    tol = _tol(dtype)
    _compare(lambda L, a: L.cholesky(a, upper), [_spd((2, 3, 3), dtype, 15)], **tol)
    _compare(lambda L, a: a.cholesky(upper=upper), [_spd((3, 3), dtype, 16)], **tol)
    factor = np.linalg.cholesky(_spd((2, 3, 3), np.float64, 17))
    factor = (np.swapaxes(factor, -1, -2) if upper else factor).astype(dtype)
    b = _matrix((3, 2), dtype, 18)
    _compare(lambda L, b, f: L.cholesky_solve(b, f, upper), [b, factor], **tol)
    _compare(lambda L, b, f: b.cholesky_solve(f, upper=upper), [_matrix((2, 3, 2), dtype, 19), factor[0]], **tol)
    _compare(lambda L, f: L.cholesky_inverse(f, upper), [factor], **tol)
    _compare(lambda L, f: f.cholesky_inverse(upper=upper), [factor[0]], **tol)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_triangular_solve(upper, transpose, unitriangular):
    a = _matrix((2, 3, 3), seed=20) + 3 * np.eye(3)
    b = _matrix((3, 2), seed=21)
    _compare(lambda L, b, a: tuple(L.triangular_solve(b, a, upper, transpose, unitriangular)), [b, a])
    _compare(lambda L, b, a: tuple(b.triangular_solve(a[0], upper=upper, transpose=transpose)), [b, a])


def test_norm_aliases():
    a = _matrix((2, 3, 4), seed=22)
    _compare(lambda L, a: L.nuclear_norm(a[0]), [a])
    _compare(lambda L, a: L.nuclear_norm(a, (0, 2), True), [a])
    _compare(lambda L, a: L.frobenius_norm(a, (1, 2)), [a])
    _compare(lambda L, a: L.frobenius_norm(a, (1,), True), [a])


# ------------------------------------------------------------------ compiled
def test_compiled():
    a, b = _matrix((3, 3), seed=23), _matrix((3, 2), seed=24)
    spd = _spd((3, 3), seed=25)

    def body(L):
        def fn(a, b, s):
            u, sv, v = L.svd(a)
            q, r = L.qr(a)
            low = L.linalg.cholesky(s)
            lu_, piv = L.linalg.lu_factor(a)
            x = L.linalg.lu_solve(lu_, piv, b)
            return (u @ L.diag_embed(sv) @ v.mT).sum() + (q @ r).sum() + L.cholesky_solve(b, low).sum() + x.sum()
        return fn

    compiled = fg.compile(body(fg))
    for _ in range(2):
        fts = [fg.tensor(x, requires_grad=True) for x in (a, b, spd)]
        tts = [torch.tensor(x, requires_grad=True) for x in (a, b, spd)]
        f, t = compiled(*fts), body(torch)(*tts)
        np.testing.assert_allclose(f.item(), t.item(), rtol=1e-9)
        f.backward()
        t.backward()
        for x, y in zip(fts, tts):
            np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-7, atol=1e-9)


# ------------------------------------------------------------------ errors
def _errors():
    A, S, R, v = _matrix((3, 3)), np.zeros((3, 3)), _matrix((3, 4)), _matrix((3,))
    B = _matrix((3, 2))
    I = np.ones((3, 3), dtype=np.int64)
    I1 = np.ones(3, dtype=np.int64)
    P = _spd((3, 3))
    return [
        ("lu_factor nopivot", lambda L: L.linalg.lu_factor(L.tensor(A), pivot=False)),
        ("lu_factor_ex nopivot", lambda L: L.linalg.lu_factor_ex(L.tensor(A), pivot=False)),
        ("lu nopivot", lambda L: L.linalg.lu(L.tensor(A), pivot=False)),
        ("lu_factor singular", lambda L: L.linalg.lu_factor(L.tensor(S))),
        ("lu_factor singular batch", lambda L: L.linalg.lu_factor(L.tensor(np.stack([A, S])))),
        ("lu_factor_ex check", lambda L: L.linalg.lu_factor_ex(L.tensor(S), check_errors=True)),
        ("lu_factor int", lambda L: L.linalg.lu_factor(L.tensor(I))),
        ("lu int", lambda L: L.linalg.lu(L.tensor(I))),
        ("lu_factor 1d", lambda L: L.linalg.lu_factor(L.tensor(v))),
        ("lu 1d", lambda L: L.linalg.lu(L.tensor(v))),
        ("lu_factor int 1d", lambda L: L.linalg.lu_factor(L.tensor(I1))),
        ("torch.lu 1d", lambda L: L.lu(L.tensor(v))),
        ("lu_solve shape", lambda L: L.linalg.lu_solve(*L.linalg.lu_factor(L.tensor(A)), L.tensor(_matrix((4, 2))))),
        ("lu_solve shape right", lambda L: L.linalg.lu_solve(*L.linalg.lu_factor(L.tensor(A)),
                                                             L.tensor(_matrix((4, 2))), left=False)),
        ("lu_solve 1d B", lambda L: L.linalg.lu_solve(*L.linalg.lu_factor(L.tensor(A)), L.tensor(v))),
        ("lu_solve dtype", lambda L: L.linalg.lu_solve(*L.linalg.lu_factor(L.tensor(A.astype(np.float32))),
                                                       L.tensor(B))),
        ("lu_solve rect", lambda L: L.linalg.lu_solve(L.tensor(R), L.linalg.lu_factor(L.tensor(A))[1], L.tensor(B))),
        ("lu_solve pivots short", lambda L: L.linalg.lu_solve(L.linalg.lu_factor(L.tensor(A))[0],
                                                              L.linalg.lu_factor(L.tensor(A))[1][:2], L.tensor(B))),
        ("lu_solve pivots float", lambda L: L.linalg.lu_solve(L.linalg.lu_factor(L.tensor(A))[0],
                                                              L.linalg.lu_factor(L.tensor(A))[1].double(),
                                                              L.tensor(B))),
        ("lu_solve LU int", lambda L: L.linalg.lu_solve(L.tensor(I), L.linalg.lu_factor(L.tensor(A))[1], L.tensor(B))),
        ("lu_unpack 1d", lambda L: L.lu_unpack(L.tensor(v), L.linalg.lu_factor(L.tensor(A))[1])),
        ("lu_unpack float pivots", lambda L: L.lu_unpack(L.tensor(A), L.tensor(A[0]))),
        ("cond 1d", lambda L: L.linalg.cond(L.tensor(v))),
        ("cond int", lambda L: L.linalg.cond(L.tensor(I))),
        ("cond int fro", lambda L: L.linalg.cond(L.tensor(I), "fro")),
        ("cond ord 3", lambda L: L.linalg.cond(L.tensor(A), 3)),
        ("cond ord 2.5", lambda L: L.linalg.cond(L.tensor(A), 2.5)),
        ("cond ord abc", lambda L: L.linalg.cond(L.tensor(A), "abc")),
        ("cond 1d abc", lambda L: L.linalg.cond(L.tensor(v), "abc")),
        ("cond rect fro", lambda L: L.linalg.cond(L.tensor(R), "fro")),
        ("cond rect 1", lambda L: L.linalg.cond(L.tensor(R), 1)),
        ("cond rect 1.0", lambda L: L.linalg.cond(L.tensor(R), 1.0)),
        ("cond rect -inf", lambda L: L.linalg.cond(L.tensor(R), -math.inf)),
        ("svd int", lambda L: L.svd(L.tensor(I))),
        ("svd 1d", lambda L: L.svd(L.tensor(v))),
        ("qr int", lambda L: L.qr(L.tensor(I))),
        ("qr 1d", lambda L: L.qr(L.tensor(v))),
        ("cholesky int", lambda L: L.cholesky(L.tensor(I))),
        ("cholesky 1d", lambda L: L.cholesky(L.tensor(v))),
        ("cholesky int 1d", lambda L: L.cholesky(L.tensor(I1))),
        ("cholesky rect", lambda L: L.cholesky(L.tensor(R))),
        ("cholesky not pd", lambda L: L.cholesky(L.tensor(-P))),
        ("cholesky not pd batch", lambda L: L.cholesky(L.tensor(np.stack([P, -P])))),
        ("cholesky_solve 1d", lambda L: L.cholesky_solve(L.tensor(v), L.tensor(P))),
        ("cholesky_solve 1d L", lambda L: L.cholesky_solve(L.tensor(B), L.tensor(v))),
        ("cholesky_solve int", lambda L: L.cholesky_solve(L.tensor(I), L.tensor(I))),
        ("cholesky_solve dtype", lambda L: L.cholesky_solve(L.tensor(B), L.tensor(P.astype(np.float32)))),
        ("cholesky_solve shape", lambda L: L.cholesky_solve(L.tensor(_matrix((4, 2))), L.tensor(P))),
        ("cholesky_solve rect", lambda L: L.cholesky_solve(L.tensor(B), L.tensor(R))),
        ("cholesky_inverse 1d", lambda L: L.cholesky_inverse(L.tensor(v))),
        ("cholesky_inverse int", lambda L: L.cholesky_inverse(L.tensor(I))),
        ("cholesky_inverse rect", lambda L: L.cholesky_inverse(L.tensor(R))),
        ("cholesky_inverse zero", lambda L: L.cholesky_inverse(L.tensor(S))),
        ("cholesky_inverse zero batch", lambda L: L.cholesky_inverse(L.tensor(np.stack([np.tril(P), S])))),
        ("triangular_solve 1d", lambda L: L.triangular_solve(L.tensor(v), L.tensor(A))),
        ("triangular_solve A 1d", lambda L: L.triangular_solve(L.tensor(A), L.tensor(v))),
        ("triangular_solve int", lambda L: L.triangular_solve(L.tensor(I), L.tensor(I))),
        ("triangular_solve dtype", lambda L: L.triangular_solve(L.tensor(B), L.tensor(A.astype(np.float32)))),
        ("triangular_solve shape", lambda L: L.triangular_solve(L.tensor(_matrix((4, 2))), L.tensor(A))),
        ("triangular_solve rect", lambda L: L.triangular_solve(L.tensor(B), L.tensor(R))),
        ("lstsq removed", lambda L: L.lstsq(L.tensor(A), L.tensor(A))),
        ("lstsq method removed", lambda L: L.tensor(A).lstsq(L.tensor(A))),
        ("matrix_rank removed", lambda L: L.matrix_rank(L.tensor(A))),
        ("eig removed", lambda L: L.eig(L.tensor(A))),
        ("symeig removed", lambda L: L.tensor(A).symeig()),
        ("nuclear_norm int", lambda L: L.nuclear_norm(L.tensor(I))),
        ("nuclear_norm 1d", lambda L: L.nuclear_norm(L.tensor(v))),
        ("frobenius_norm 3 dims", lambda L: L.frobenius_norm(L.tensor(A), (0, 1, 1))),
        ("frobenius_norm int", lambda L: L.frobenius_norm(L.tensor(I), (0, 1))),
    ]


@pytest.mark.parametrize("label,call", _errors(), ids=[e[0] for e in _errors()])
def test_errors(label, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f, t = _result_or_error(lambda: call(fg)), _result_or_error(lambda: call(torch))
    assert isinstance(t, tuple) and isinstance(t[0], str), t
    assert f == t


_WARNING_SCRIPT = """
import warnings, torch
a = torch.eye(3) * 2
calls = [lambda: torch.cholesky(a), lambda: torch.qr(a), lambda: torch.triangular_solve(a, a), lambda: torch.lu(a),
         lambda: torch.lu_solve(a, *torch.linalg.lu_factor(a)), lambda: torch.nuclear_norm(a),
         lambda: torch.frobenius_norm(a, (0, 1))]
for call in calls:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    print(repr([str(w.message) for w in caught]))
"""


def test_deprecation_warnings():
    """Each legacy function's warning, once a process (torch's TORCH_WARN_ONCE: torch's texts come
    from a fresh process, as this one's torch has warned already)."""
    import ast
    import subprocess
    import sys
    expected = [ast.literal_eval(line) for line in subprocess.run(
        [sys.executable, "-c", _WARNING_SCRIPT], capture_output=True, text=True, check=True).stdout.splitlines()]
    a = fg.eye(3) * 2
    calls = [lambda: fg.cholesky(a), lambda: fg.qr(a), lambda: fg.triangular_solve(a, a), lambda: fg.lu(a),
             lambda: fg.lu_solve(a, *fg.linalg.lu_factor(a)), lambda: fg.nuclear_norm(a),
             lambda: fg.frobenius_norm(a, (0, 1))]
    for call, texts in zip(calls, expected):
        fg.tracer.functional._WARNED_ONCE.clear()
        for repeat in range(2):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                call()
            assert [str(w.message) for w in caught] == (texts if repeat == 0 else [])


# ---------------------------------------------------------------- differential fuzzing's finds

def _outline(L, fn):
    out = _result_or_error(lambda: fn(L))
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], str):
        return out
    return [(tuple(t.shape), type(t.grad_fn).__name__) for t in out]


@pytest.mark.parametrize("shape", [(0, 4), (2, 0), (1, 2, 0, 4), (3, 0, 2), (0, 0), (0, 3, 3)])
@pytest.mark.parametrize("pivot", [True, False])
def test_lu_of_empty_matrices(shape, pivot):
    # an empty matrix with a nonzero side factors (getrf's batch was reshaped with -1); and
    # without pivoting an empty input is torch's result (P an empty (0,) tensor for linalg.lu)
    for fn in (lambda L: L.linalg.lu_factor_ex(L.ones(*shape, requires_grad=True), pivot=pivot)[:2],
               lambda L: L.linalg.lu(L.ones(*shape, requires_grad=True), pivot=pivot),
               lambda L: L.lu_unpack(*L.linalg.lu_factor(L.ones(*shape, requires_grad=True)))):
        assert _outline(fg, fn) == _outline(torch, fn)


def test_lu_solve_checks_dtypes_before_shapes():
    def case(lu, b, lu_dtype="float32", b_dtype="float32"):
        def run(L):
            pivots = L.ones(lu[:-1] or (2,), dtype=L.int32 if L is torch else L.int64)
            return L.linalg.lu_solve(L.ones(*lu, dtype=getattr(L, lu_dtype)), pivots,
                                     L.ones(*b, dtype=getattr(L, b_dtype)))
        return run
    for fn in (case((2,), (2, 1), b_dtype="float64"), case((2,), (2, 1), lu_dtype="int64"),
               case((2, 3), (2, 1), b_dtype="float64"), case((2, 2), (2,), b_dtype="float64"),
               case((2,), (2, 1)), case((2, 2), (2,))):
        assert _result_or_error(lambda: fn(fg)) == _result_or_error(lambda: fn(torch))


_COMPILED_LINALG = {
    "linalg_lu": lambda a, b: fg.linalg.lu(a),
    "lu_unpack": lambda a, b: fg.lu_unpack(*fg.linalg.lu_factor(a)),
    "cholesky_inverse": lambda a, b: (fg.cholesky_inverse(fg.linalg.cholesky(a @ a.mT + 3 * fg.eye(3))),),
    "triangular_solve": lambda a, b: fg.triangular_solve(b, a.triu() + 3 * fg.eye(3)),
    "geqrf": lambda a, b: fg.geqrf(a.detach()),
    "ormqr": lambda a, b: (fg.ormqr(*fg.geqrf(a.detach()), b),),
}


@pytest.mark.parametrize("name", list(_COMPILED_LINALG))
def test_compiled_matches_eager(name):
    """The LU, Cholesky, triangular and Householder ops inside fg.compile (their reference steps
    in the compiled program) against eager execution: values, and the gradients of the inputs."""
    fn = _COMPILED_LINALG[name]
    rng = np.random.default_rng(3)
    a0, b0 = rng.standard_normal((3, 3)), rng.standard_normal((3, 2))

    def loss(a, b):
        return sum(((t * t).sum() for t in fn(a, b) if t.dtype.is_floating_point), fg.zeros((), dtype=fg.float64))

    results = []
    for f in (loss, fg.compile(loss)):
        a = fg.tensor(a0, requires_grad=True)
        b = fg.tensor(b0, requires_grad=True)
        value = f(a, b)
        if value.requires_grad:
            value.backward()
        results.append([value.item()] + [None if t.grad is None else t.grad.numpy().copy() for t in (a, b)])
    eager, compiled = results
    assert compiled[0] == pytest.approx(eager[0], rel=1e-12)
    for g_eager, g_compiled in zip(eager[1:], compiled[1:]):
        assert (g_eager is None) == (g_compiled is None)
        if g_eager is not None:
            np.testing.assert_allclose(g_compiled, g_eager, rtol=1e-10, atol=1e-12)
