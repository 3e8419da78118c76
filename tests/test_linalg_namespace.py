"""fg.linalg (torch.linalg) against torch 2.13: values, named results, grad_fn names, gradients
(first and second order) and error texts."""
import math

import numpy as np
import pytest

import fusegrad as fg
from tests.parity_support import assert_same_outcome, lib_outcome

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")

RNG = np.random.default_rng(0)
SQ = RNG.standard_normal((3, 4, 4))
SPD = SQ @ SQ.transpose(0, 2, 1) + 4 * np.eye(4)
RHS = RNG.standard_normal((3, 4, 2))
TALL = RNG.standard_normal((2, 6, 4))


def _sum(r):
    return r.sum()


def _cube(r):
    return (r ** 3).sum()


# name -> (function of (lib, *tensors), inputs, a loss of the result). Losses of U, V, Q are
# sign-invariant (even powers) or use both factors (Q R), as the decompositions fix signs only so.
CASES = {
    "solve": (lambda L, a, b: L.linalg.solve(a, b), (SQ, RHS), _cube),
    "solve_right": (lambda L, a, b: L.linalg.solve(a, b.mT, left=False), (SQ, RHS), _cube),
    "solve_vector": (lambda L, a, b: L.linalg.solve(a, b), (SQ[0], RHS[0, :, 0]), _cube),
    "solve_batch_vector": (lambda L, a, b: L.linalg.solve(a, b), (SQ, RHS[..., 0]), _cube),
    "solve_broadcast": (lambda L, a, b: L.linalg.solve(a, b), (SQ[0], RHS), _cube),
    "inv": (lambda L, a: L.linalg.inv(a), (SQ,), _cube),
    "inv_ex": (lambda L, a: L.linalg.inv_ex(a).inverse, (SQ,), _cube),
    "det": (lambda L, a: L.linalg.det(a), (SQ,), _cube),
    "slogdet": (lambda L, a: L.linalg.slogdet(a).logabsdet, (SQ,), _cube),
    "cholesky": (lambda L, a: L.linalg.cholesky(a), (SPD,), _cube),
    "cholesky_upper": (lambda L, a: L.linalg.cholesky(a, upper=True), (SPD,), _cube),
    "cholesky_ex": (lambda L, a: L.linalg.cholesky_ex(a).L, (SPD,), _cube),
    "solve_triangular": (lambda L, a, b: L.linalg.solve_triangular(a, b, upper=True), (SPD, RHS), _cube),
    "solve_triangular_lower_right_unit": (lambda L, a, b: L.linalg.solve_triangular(
        a, b.mT, upper=False, left=False, unitriangular=True), (SPD, RHS), _cube),
    "qr": (lambda L, a: (lambda q, r: q @ r.exp())(*L.linalg.qr(a)), (TALL,), _cube),
    "qr_q": (lambda L, a: L.linalg.qr(a).Q ** 2, (TALL,), _cube),
    "qr_complete_square": (lambda L, a: (lambda q, r: q @ r.exp())(*L.linalg.qr(a, mode="complete")), (SQ,), _cube),
    "eigh": (lambda L, a: (lambda w, v: v ** 2 * w.unsqueeze(-2))(*L.linalg.eigh(a)), (SPD,), _cube),
    "eigh_upper": (lambda L, a: L.linalg.eigh(a, UPLO="U").eigenvalues, (SQ,), _cube),
    "eigvalsh": (lambda L, a: L.linalg.eigvalsh(a), (SPD,), _cube),
    "svd": (lambda L, a: (lambda u, s, vh: (u ** 2).sum(-1) + (vh ** 2).sum(-2)[..., :1] * s[..., :1])(
        *L.linalg.svd(a, full_matrices=False)), (TALL,), _cube),
    "svd_wide": (lambda L, a: (lambda u, s, vh: (u ** 4).sum(-1).sum(-1) + (vh ** 4).sum(-1).sum(-1) + s.sum(-1))(
        *L.linalg.svd(a.mT, full_matrices=False)), (TALL,), _cube),
    "svd_full_S": (lambda L, a: L.linalg.svd(a).S, (TALL,), _cube),
    "svd_reconstruct": (lambda L, a: (lambda u, s, vh: u @ L.diag_embed(s) @ vh)(*L.linalg.svd(a, False)), (TALL,),
                        _cube),
    "svdvals": (lambda L, a: L.linalg.svdvals(a), (TALL,), _cube),
    "pinv": (lambda L, a: L.linalg.pinv(a), (TALL,), _cube),
    "pinv_wide": (lambda L, a: L.linalg.pinv(a.mT), (TALL,), _cube),
    "pinv_hermitian": (lambda L, a: L.linalg.pinv(a, hermitian=True), (SPD,), _cube),
    "lstsq": (lambda L, a, b: L.linalg.lstsq(a, b).solution, (TALL, TALL[..., :3]), _cube),
    "lstsq_residuals": (lambda L, a, b: (lambda r: r.solution.sum(-2) + r.residuals ** 2)(
        L.linalg.lstsq(a, b, driver="gelsd")), (TALL, RNG.standard_normal((2, 6, 3))), _cube),
    "lstsq_broadcast": (lambda L, a, b: L.linalg.lstsq(a, b).solution, (TALL, TALL[:1, :, :3]), _cube),
    "lstsq_vector": (lambda L, a, b: L.linalg.lstsq(a, b).solution, (TALL, TALL[..., 0]), _cube),
    "lstsq_vector_residuals": (lambda L, a, b: L.linalg.lstsq(a, b, driver="gelss").residuals,
                               (TALL, TALL[..., 0] ** 2), _cube),
    "matrix_exp": (lambda L, a: L.linalg.matrix_exp(a * 0.3), (SQ,), _cube),
    "matrix_power": (lambda L, a: L.linalg.matrix_power(a, 3), (SQ,), _sum),
    "multi_dot": (lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), (TALL[0, 0], SQ[0], RHS[0]), _cube),
    "multi_dot_4": (lambda L, a, b, c: L.linalg.multi_dot([a, b, b.mT, c]), (TALL[0], SQ[0], RHS[0]), _cube),
    "vecdot": (lambda L, a, b: L.linalg.vecdot(a, b), (SQ, SQ[0]), _cube),
    "cross": (lambda L, a, b: L.linalg.cross(a, b), (TALL[..., :3], TALL[..., 1:]), _cube),
    "diagonal": (lambda L, a: L.linalg.diagonal(a, offset=1), (SQ,), _cube),
    "vector_norm": (lambda L, a: L.linalg.vector_norm(a, 3, dim=(0, 2)), (TALL,), _sum),
    "vector_norm_inf": (lambda L, a: L.linalg.vector_norm(a, math.inf, dim=-1, keepdim=True), (TALL,), _sum),
    "norm_vector": (lambda L, a: L.linalg.norm(a[0, 0], 1), (TALL,), _sum),
    "norm_matrix": (lambda L, a: L.linalg.norm(a[0], "nuc"), (TALL,), _sum),
    "norm_dim": (lambda L, a: L.linalg.norm(a, dim=(0, 1)), (TALL,), _sum),
    "norm_all": (lambda L, a: L.linalg.norm(a), (TALL,), _sum),
    "vector_norm_dtype": (lambda L, a: L.linalg.vector_norm(a.float(), 2, dtype=L.float64), (TALL,), _sum),
    "matrix_norm_dtype": (lambda L, a: L.linalg.matrix_norm(a.float(), dtype=L.float64), (TALL,), _sum),
}
for _ord in ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2):
    CASES[f"matrix_norm_{_ord}"] = (lambda L, a, o=_ord: L.linalg.matrix_norm(a, o), (TALL,), _sum)
    CASES[f"matrix_norm_{_ord}_keepdim"] = (
        lambda L, a, o=_ord: L.linalg.matrix_norm(a, o, dim=(2, 0), keepdim=True), (TALL,), _sum)

# gauge: the signs of U and Vh are LAPACK's choice (torch's and NumPy's differ), so the values of
# these are compared only through sign-invariant functions
_SIGN_FREE = {"svd", "svd_wide", "svd_reconstruct"}


def _run(lib, name, dtype="float64"):
    fn, arrays, loss = CASES[name]
    ins = [lib.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    out = fn(lib, *ins)
    loss(out).backward()
    return out, [t.grad for t in ins]


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_nodes_and_gradients(name):
    ours, our_grads = _run(fg, name)
    theirs, their_grads = _run(torch, name)
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype)[3:] == str(theirs.dtype)[6:]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-9, atol=1e-9)
    for g, tg in zip(our_grads, their_grads):
        np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", ["solve", "cholesky", "qr", "eigh", "svd_wide", "pinv", "lstsq", "inv"])
def test_float32(name):
    ours, our_grads = _run(fg, name, "float32")
    theirs, their_grads = _run(torch, name, "float32")
    assert ours.dtype is fg.float32
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=2e-4, atol=2e-4)
    for g, tg in zip(our_grads, their_grads):
        np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name", ["solve", "cholesky_upper", "qr", "eigh", "svd", "pinv", "solve_triangular",
                                  "matrix_exp", "lstsq"])
def test_double_backward(name):
    fn, arrays, loss = CASES[name]

    def second(lib):
        ins = [lib.tensor(a, requires_grad=True) for a in arrays]
        grads = lib.autograd.grad(loss(fn(lib, *ins)), ins, create_graph=True)
        sum(((g ** 2).sum() for g in grads)).backward()
        return [t.grad.numpy() for t in ins]
    for ours, theirs in zip(second(fg), second(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-8)


def test_named_results():
    a = SPD[0]
    for fn, kind, fields in (
            (lambda L, t: L.linalg.slogdet(t), "linalg_slogdet", ("sign", "logabsdet")),
            (lambda L, t: L.linalg.inv_ex(t), "linalg_inv_ex", ("inverse", "info")),
            (lambda L, t: L.linalg.cholesky_ex(t), "linalg_cholesky_ex", ("L", "info")),
            (lambda L, t: L.linalg.qr(t), "linalg_qr", ("Q", "R")),
            (lambda L, t: L.linalg.eigh(t), "linalg_eigh", ("eigenvalues", "eigenvectors")),
            (lambda L, t: L.linalg.svd(t), "linalg_svd", ("U", "S", "Vh")),
            (lambda L, t: L.linalg.lstsq(t, t), "linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))):
        ours, theirs = fn(fg, fg.tensor(a)), fn(torch, torch.tensor(a))
        assert type(ours).__name__ == type(theirs).__name__ == kind
        assert len(ours) == len(theirs) == len(fields)
        for field in fields:
            assert tuple(getattr(ours, field).shape) == tuple(getattr(theirs, field).shape), (kind, field)


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_outputs(driver):
    a, b = TALL, RNG.standard_normal((2, 6, 2))
    ours = fg.linalg.lstsq(fg.tensor(a), fg.tensor(b), driver=driver)
    theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape) and str(o.dtype)[3:] == str(t.dtype)[6:]
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-8, atol=1e-10)


def test_qr_modes_and_rank():
    for mode in ("reduced", "complete", "r"):
        for arr in (TALL, TALL.transpose(0, 2, 1)):
            q, r = fg.linalg.qr(fg.tensor(arr), mode=mode)
            tq, tr = torch.linalg.qr(torch.tensor(arr), mode=mode)
            assert tuple(q.shape) == tuple(tq.shape) and tuple(r.shape) == tuple(tr.shape)
            np.testing.assert_allclose(np.abs(r.numpy()), np.abs(tr.numpy()), atol=1e-10)
    low = TALL[..., :2] @ TALL[:, :2, :]
    for kwargs in ({}, {"atol": 1.0}, {"rtol": 0.5}):
        assert fg.linalg.matrix_rank(fg.tensor(low), **kwargs).tolist() == \
            torch.linalg.matrix_rank(torch.tensor(low), **kwargs).tolist()
    assert fg.linalg.matrix_rank(fg.tensor(SPD), hermitian=True).tolist() == [4, 4, 4]


def test_results_pickle():
    import pickle
    for result in (fg.linalg.svd(fg.tensor(SQ[0])), fg.linalg.eigh(fg.tensor(SPD[0])),
                   fg.linalg.lstsq(fg.tensor(SQ[0]), fg.tensor(RHS[0]))):
        back = pickle.loads(pickle.dumps(result))
        assert type(back) is type(result) and all(np.array_equal(x.numpy(), y.numpy()) for x, y in zip(back, result))


def test_failure_info():
    bad = np.array([[[1.0, 0], [0, 1]], [[1.0, 2], [2, 1]]])
    assert fg.linalg.cholesky_ex(fg.tensor(bad)).info.tolist() == [0, 2]
    assert fg.linalg.inv_ex(fg.zeros(2, 3, 3)).info.tolist() == [1, 1]
    assert isinstance(fg.linalg.LinAlgError("x"), RuntimeError)


def _f32(*shape, dtype="float32"):
    return np.ones(shape, dtype=dtype)


ERRORS = {
    "inv_singular": lambda L: L.linalg.inv(L.zeros(3, 3)),
    "inv_singular_2": lambda L: L.linalg.inv(L.tensor([[1.0, 2.0], [2.0, 4.0]])),
    "inv_int": lambda L: L.linalg.inv(L.ones(3, 3, dtype=L.int64)),
    "inv_nonsquare": lambda L: L.linalg.inv(L.ones(3, 2)),
    "inv_1d": lambda L: L.linalg.inv(L.ones(3)),
    "solve_singular": lambda L: L.linalg.solve(L.zeros(3, 3), L.ones(3)),
    "solve_singular_batch": lambda L: L.linalg.solve(L.stack([L.eye(3), L.zeros(3, 3)]), L.ones(2, 3)),
    "solve_int": lambda L: L.linalg.solve(L.ones(3, 3, dtype=L.int64), L.ones(3)),
    "solve_shape": lambda L: L.linalg.solve(L.eye(3), L.ones(4)),
    "solve_shape_matrix": lambda L: L.linalg.solve(L.eye(3), L.ones(4, 2)),
    "solve_matrix_not_vector": lambda L: L.linalg.solve(L.eye(3), L.ones(2, 3)),
    "solve_dtype": lambda L: L.linalg.solve(L.eye(3), L.ones(3, dtype=L.float64)),
    "cholesky_npd": lambda L: L.linalg.cholesky(L.tensor([[1.0, 2], [2, 1]])),
    "cholesky_npd_batch": lambda L: L.linalg.cholesky(L.tensor([[[1.0, 0], [0, 1]], [[1.0, 2], [2, 1]]])),
    "cholesky_int": lambda L: L.linalg.cholesky(L.ones(2, 2, dtype=L.int64)),
    "cholesky_nonsquare": lambda L: L.linalg.cholesky(L.ones(2, 3)),
    "cholesky_ex_check": lambda L: L.linalg.cholesky_ex(-L.eye(2), check_errors=True),
    "qr_int": lambda L: L.linalg.qr(L.ones(2, 2, dtype=L.int64)),
    "qr_mode": lambda L: L.linalg.qr(L.ones(2, 2), mode="x"),
    "qr_1d": lambda L: L.linalg.qr(L.ones(2)),
    "eigh_int": lambda L: L.linalg.eigh(L.ones(2, 2, dtype=L.int64)),
    "eigh_uplo": lambda L: L.linalg.eigh(L.ones(2, 2), UPLO="X"),
    "eigh_nonsquare": lambda L: L.linalg.eigh(L.ones(2, 3)),
    "svd_int": lambda L: L.linalg.svd(L.ones(2, 2, dtype=L.int64)),
    "svd_1d": lambda L: L.linalg.svd(L.ones(2)),
    "svdvals_int": lambda L: L.linalg.svdvals(L.ones(2, 2, dtype=L.int64)),
    "vector_norm_int": lambda L: L.linalg.vector_norm(L.ones(2, dtype=L.int64)),
    "matrix_norm_int": lambda L: L.linalg.matrix_norm(L.ones(2, 2, dtype=L.int64)),
    "matrix_norm_1d": lambda L: L.linalg.matrix_norm(L.ones(2)),
    "matrix_norm_ord": lambda L: L.linalg.matrix_norm(L.ones(2, 2), 3),
    "matrix_norm_ord_str": lambda L: L.linalg.matrix_norm(L.ones(2, 2), "abc"),
    "matrix_norm_dims": lambda L: L.linalg.matrix_norm(L.ones(2, 2), dim=(0, 0)),
    "norm_3d_ord": lambda L: L.linalg.norm(L.ones(2, 2, 2), 2),
    "norm_fro_1d": lambda L: L.linalg.norm(L.ones(2), "fro"),
    "solve_triangular_int": lambda L: L.linalg.solve_triangular(L.ones(2, 2, dtype=L.int64),
                                                                L.ones(2, 2, dtype=L.int64), upper=True),
    "solve_triangular_vector": lambda L: L.linalg.solve_triangular(L.eye(2), L.ones(2), upper=True),
    "solve_triangular_no_upper": lambda L: L.linalg.solve_triangular(L.eye(2), L.ones(2, 2)),
    "lstsq_int": lambda L: L.linalg.lstsq(L.ones(2, 2, dtype=L.int64), L.ones(2, 2, dtype=L.int64)),
    "lstsq_shape": lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(4, 2)),
    "lstsq_driver": lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(3, 2), driver="foo"),
    "lstsq_vector_shape": lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(4)),
    "lstsq_batch_shape": lambda L: L.linalg.lstsq(L.ones(2, 3, 2), L.ones(3, 3, 2)),
    "lstsq_dims": lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(2, 3, 2)),
    "lstsq_dtype": lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(3, 2, dtype=L.float64)),
    "multi_dot_one": lambda L: L.linalg.multi_dot([L.ones(2, 2)]),
    "multi_dot_3d": lambda L: L.linalg.multi_dot([L.ones(2, 2, 2), L.ones(2, 2)]),
    "multi_dot_dtype": lambda L: L.linalg.multi_dot([L.ones(2, 2), L.ones(2, 2, dtype=L.float64)]),
    "vecdot_int": lambda L: L.linalg.vecdot(L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64)),
    "vecdot_dtype": lambda L: L.linalg.vecdot(L.ones(2), L.ones(2, dtype=L.float64)),
    "det_int": lambda L: L.linalg.det(L.ones(2, 2, dtype=L.int64)),
    "matrix_rank_int": lambda L: L.linalg.matrix_rank(L.ones(2, 2, dtype=L.int64)),
    "pinv_int": lambda L: L.linalg.pinv(L.ones(2, 2, dtype=L.int64)),
    "norm_dim_length": lambda L: L.linalg.norm(L.ones(2, 2, 2), dim=(0, 1, 2)),
    "matrix_norm_dim_length": lambda L: L.linalg.matrix_norm(L.ones(2, 2, 2), dim=(0, 1, 2)),
    "solve_right_vector": lambda L: L.linalg.solve(L.eye(3), L.ones(3), left=False),
    "solve_int_B": lambda L: L.linalg.solve(L.eye(3), L.ones(3, dtype=L.int64)),
    "solve_triangular_shape": lambda L: L.linalg.solve_triangular(L.eye(3), L.ones(2, 2), upper=True, left=False),
    "multi_dot_shapes": lambda L: L.linalg.multi_dot([L.ones(2, 3), L.ones(2, 3)]),
    "multi_dot_middle_1d": lambda L: L.linalg.multi_dot([L.ones(2, 3), L.ones(3), L.ones(3, 2)]),
    "cross_length": lambda L: L.linalg.cross(L.ones(2), L.ones(2)),
    "matrix_exp_nonsquare": lambda L: L.linalg.matrix_exp(L.ones(2, 3)),
    "eigvalsh_1d": lambda L: L.linalg.eigvalsh(L.ones(2)),
    "matrix_rank_1d": lambda L: L.linalg.matrix_rank(L.ones(3)),
    "inv_ex_1d": lambda L: L.linalg.inv_ex(L.ones(3)),
    "matrix_power_float": lambda L: L.linalg.matrix_power(L.eye(2), 1.5),
    "vector_norm_int_dtype": lambda L: L.linalg.vector_norm(L.ones(2), dtype=L.int64),
    "qr_r_backward": lambda L: L.linalg.qr(L.ones(3, 2, requires_grad=True), mode="r").R.sum().backward(),
    "qr_complete_backward": lambda L: L.linalg.qr(L.tensor(TALL[0], requires_grad=True),
                                                  mode="complete").Q.sum().backward(),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    ours, theirs = lib_outcome(fg, ERRORS[name]), lib_outcome(torch, ERRORS[name])
    assert ours[0] == theirs[0] == "error", (ours, theirs)
    assert_same_outcome(ours, theirs)


@pytest.mark.parametrize("case", [
    lambda L: L.linalg.solve_triangular(L.eye(3, dtype=L.float64), L.ones(3, 2), upper=True),
    lambda L: L.linalg.matrix_norm(L.ones(2, 2), True),
    lambda L: L.linalg.matrix_rank(L.eye(3) * L.tensor([1.0, 1e-3, 1e-9]), atol=1e-4, rtol=0.0),
    lambda L: L.linalg.multi_dot([L.ones(3), L.ones(3, 2), L.ones(2)]),
    lambda L: L.linalg.vecdot(L.ones(2, 3), L.arange(3.0)),
    lambda L: L.linalg.diagonal(L.ones(2, 3, 4), offset=-1),
    lambda L: L.linalg.det(L.zeros(0, 0)),
    lambda L: L.linalg.svd(L.zeros(3, 0)).U,
])
def test_misc_values(case):
    assert_same_outcome(lib_outcome(fg, case), lib_outcome(torch, case))


def test_empty_and_batch_shapes():
    for fn in (lambda L, t: L.linalg.inv(t), lambda L, t: L.linalg.det(t), lambda L, t: L.linalg.cholesky(t),
               lambda L, t: L.linalg.eigvalsh(t), lambda L, t: L.linalg.svdvals(t), lambda L, t: L.linalg.pinv(t),
               lambda L, t: L.linalg.qr(t).R, lambda L, t: L.linalg.matrix_norm(t)):
        for shape in ((0, 3, 3), (2, 0, 0)):
            ours, theirs = fn(fg, fg.zeros(*shape)), fn(torch, torch.zeros(*shape))
            assert tuple(ours.shape) == tuple(theirs.shape)


def test_compiled_matches_eager():
    def f(a, b):
        x = fg.linalg.solve(a, b)
        chol = fg.linalg.cholesky(a @ a.mT + 4 * fg.eye(4, dtype=fg.float64))
        q, r = fg.linalg.qr(a)
        w, v = fg.linalg.eigh(a + a.mT)
        u, s, vh = fg.linalg.svd(a, full_matrices=False)
        return ((x ** 2).sum() + (chol ** 2).sum() + (q @ r).sum() + w.sum() + (v ** 4).sum() + (u ** 4).sum()
                + s.sum() + fg.linalg.matrix_norm(a, 2) + fg.linalg.pinv(a).sum() + fg.linalg.norm(a))
    a, b = fg.tensor(SQ[0], requires_grad=True), fg.tensor(RHS[0])
    eager, = fg.autograd.grad(f(a, b), a)
    compiled = fg.compile(f)
    traced, = fg.autograd.grad(compiled(a, b), a)
    np.testing.assert_allclose(traced.numpy(), eager.numpy(), rtol=1e-12, atol=1e-12)
    info = fg.compile(lambda t: fg.linalg.inv_ex(t).info)(fg.zeros(2, 3, 3))
    assert info.tolist() == [1, 1]
    with pytest.raises(fg.linalg.LinAlgError, match="The diagonal element 1 is zero"):
        fg.compile(lambda t: fg.linalg.inv(t))(fg.zeros(3, 3))
