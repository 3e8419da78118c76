"""Normalisation layers, channel/alpha dropout and attention against torch 2.13: values,
gradients, grad_fn names, running statistics, state_dict keys, reprs and error texts,
eagerly and inside fg.compile."""
import warnings

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")

from parity_support import same_error  # noqa: E402

FF = fg.nn.functional
TF = torch.nn.functional


def A(t):
    return t.detach().numpy()


def pair(array, grad=True):
    """(torch tensor, fusegrad tensor) of one float array, both leaves."""
    array = np.asarray(array)
    return (torch.tensor(array, requires_grad=grad and array.dtype.kind == "f"),
            fg.tensor(array, requires_grad=grad and array.dtype.kind == "f"))


def close(ours, theirs, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(A(ours), A(theirs), rtol=rtol, atol=atol)


def backward_both(ty, fy, seed=0):
    g = np.random.default_rng(seed).standard_normal(tuple(ty.shape)).astype(A(ty).dtype)
    ty.backward(torch.tensor(g))
    fy.backward(fg.tensor(g))


def copy_state(tm, fm):
    """Copy torch module's state into ours; the keys must be torch's, in its order."""
    assert list(fm.state_dict()) == list(tm.state_dict())
    fm.load_state_dict({k: fg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


rng = np.random.default_rng(0)


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# ---- batch_norm --------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_functional(shape, training, affine):
    (tx, fx) = pair(randn(*shape))
    tw, fw = pair(randn(3)) if affine else (None, None)
    tb, fb = pair(randn(3)) if affine else (None, None)
    mean, var = randn(3), np.abs(randn(3)) + 0.5
    trm, frm = torch.tensor(mean), fg.tensor(mean.copy())
    trv, frv = torch.tensor(var), fg.tensor(var.copy())
    ty = TF.batch_norm(tx, trm, trv, tw, tb, training, 0.3, 1e-3)
    fy = FF.batch_norm(fx, frm, frv, fw, fb, training, 0.3, 1e-3)
    close(fy, ty)
    assert type(fy.grad_fn).__name__ == "NativeBatchNormBackward0"
    close(frm, trm, atol=1e-6)
    close(frv, trv, atol=1e-6)
    backward_both(ty, fy)
    close(fx.grad, tx.grad, atol=1e-4)
    if affine:
        close(fw.grad, tw.grad, atol=1e-4)
        close(fb.grad, tb.grad, atol=1e-4)


def test_batch_norm_float64_no_stats_and_double_backward():
    tx, fx = pair(randn(5, 2, 3, dtype=np.float64))
    tw, fw = pair(randn(2, dtype=np.float64))
    ty = TF.batch_norm(tx, None, None, tw, None, True)
    fy = FF.batch_norm(fx, None, None, fw, None, True)
    assert fy.dtype == fg.float64
    close(fy, ty, atol=1e-10)
    # a gradient of a gradient: the VJP is written in differentiable ops
    (tg,) = torch.autograd.grad((ty ** 3).sum(), tx, create_graph=True)
    (fgx,) = fg.autograd.grad((fy ** 3).sum(), fx, create_graph=True)
    close(fgx, tg, atol=1e-8)
    (tg2,) = torch.autograd.grad((tg ** 2).sum(), tw)
    (fg2,) = fg.autograd.grad((fgx ** 2).sum(), fw)
    close(fg2, tg2, atol=1e-7)


@pytest.mark.parametrize("case", [
    lambda lib: lib.nn.functional.batch_norm(lib.ones(4, 3, 5), lib.zeros(4), lib.ones(4), training=True),
    lambda lib: lib.nn.functional.batch_norm(lib.ones(4, 3), lib.zeros(3), lib.ones(3), lib.ones(4)),
    lambda lib: lib.nn.functional.batch_norm(lib.ones(4, 3), lib.zeros(3), lib.ones(3), None, lib.ones(2)),
    lambda lib: lib.nn.functional.batch_norm(lib.ones(4, 3), None, None),
    lambda lib: lib.nn.functional.batch_norm(lib.ones(4, 3), lib.zeros(3), None),
    lambda lib: lib.nn.functional.batch_norm(lib.ones(1, 3), None, None, training=True),
    lambda lib: lib.nn.functional.batch_norm(lib.ones(4, 3), None, None, training=True, eps=0.0),
    lambda lib: lib.nn.functional.batch_norm(lib.ones(4, 3).long(), None, None, training=True),
    lambda lib: lib.nn.functional.batch_norm(lib.ones(4, 3), lib.zeros(3).double(), lib.ones(3).double(),
                                             training=True),
    lambda lib: lib.nn.BatchNorm1d(3)(lib.ones(2, 3, 4, 5)),
    lambda lib: lib.nn.BatchNorm2d(3)(lib.ones(2, 3, 4)),
    lambda lib: lib.nn.BatchNorm3d(3)(lib.ones(2, 3, 4)),
])
def test_batch_norm_errors(case):
    same_error(case)


@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (6, 3, 4)),
                                       ("BatchNorm2d", (4, 3, 2, 3)), ("BatchNorm3d", (2, 3, 2, 2, 3))])
@pytest.mark.parametrize("options", [{}, {"momentum": None}, {"affine": False, "track_running_stats": False},
                                     {"bias": False, "eps": 1e-3}])
def test_batch_norm_modules(cls, shape, options):
    tm = getattr(torch.nn, cls)(3, **options)
    fm = getattr(fg.nn, cls)(3, **options)
    assert repr(fm) == repr(tm)
    assert [n for n, _ in fm.named_buffers()] == [n for n, _ in tm.named_buffers()]
    tm.weight is not None and torch.nn.init.uniform_(tm.weight)
    copy_state(tm, fm)
    for step in range(3):
        x = randn(*shape) * (step + 1) + step
        tx, fx = pair(x)
        ty, fy = tm(tx), fm(fx)
        close(fy, ty, atol=1e-5)
        backward_both(ty, fy)
        close(fx.grad, tx.grad, atol=1e-4)
        if tm.weight is not None:
            close(fm.weight.grad, tm.weight.grad, atol=1e-4)
    for name, buf in tm.named_buffers():
        np.testing.assert_allclose(fm.get_buffer(name).numpy(), buf.numpy(), rtol=1e-6, atol=1e-6)
    tm.eval(), fm.eval()
    x = randn(*shape)
    close(fm(fg.tensor(x)), tm(torch.tensor(x)), atol=1e-5)


def test_batch_norm_module_defaults():
    fm = fg.nn.BatchNorm2d(4)
    assert fm.num_batches_tracked.dtype == fg.int64 and fm.num_batches_tracked.dim() == 0
    assert list(fm.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert A(fm.weight).tolist() == [1.0] * 4 and fm.running_var.numpy().tolist() == [1.0] * 4
    assert repr(fg.nn.BatchNorm1d(3, momentum=None)) == repr(torch.nn.BatchNorm1d(3, momentum=None))


def test_batch_norm_compiled_training_step_matches_eager():
    """A compiled SGD step through BatchNorm updates the running statistics as eagerly."""
    xs = [fg.tensor(randn(8, 4)) for _ in range(3)]
    results = []
    for compiled in (False, True):
        fg.manual_seed(0)
        model = fg.nn.Sequential(fg.nn.Linear(4, 6), fg.nn.BatchNorm1d(6), fg.nn.ReLU(), fg.nn.Linear(6, 2))
        opt = fg.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
            return loss.detach()
        run = fg.compile(step) if compiled else step
        losses = [run(x).item() for x in xs]
        bn = model[1]
        results.append((losses, bn.running_mean.numpy().copy(), bn.running_var.numpy().copy(),
                        int(bn.num_batches_tracked), model[0].weight.detach().numpy().copy()))
    (l0, m0, v0, n0, w0), (l1, m1, v1, n1, w1) = results
    np.testing.assert_allclose(l1, l0, rtol=1e-5)
    np.testing.assert_allclose(m1, m0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v1, v0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w1, w0, rtol=1e-5, atol=1e-6)
    assert n0 == n1 == 3


def test_batch_norm_compiled_cumulative_momentum():
    tm, fm = torch.nn.BatchNorm1d(3, momentum=None), fg.nn.BatchNorm1d(3, momentum=None)
    run = fg.compile(lambda x: fm(x))
    for _ in range(3):
        x = randn(5, 3)
        close(run(fg.tensor(x)), tm(torch.tensor(x)))
    close(fm.running_mean, tm.running_mean, atol=1e-6)
    close(fm.running_var, tm.running_var, atol=1e-6)


# ---- group_norm, instance_norm -------------------------------------------------

@pytest.mark.parametrize("shape,groups", [((4, 6), 3), ((2, 6, 5), 2), ((2, 4, 3, 3), 4), ((3, 4, 5), 1)])
def test_group_norm(shape, groups):
    tx, fx = pair(randn(*shape))
    tw, fw = pair(randn(shape[1]))
    tb, fb = pair(randn(shape[1]))
    ty, fy = TF.group_norm(tx, groups, tw, tb, 1e-4), FF.group_norm(fx, groups, fw, fb, 1e-4)
    close(fy, ty)
    assert type(fy.grad_fn).__name__ == "NativeGroupNormBackward0"
    backward_both(ty, fy)
    for ours, theirs in ((fx, tx), (fw, tw), (fb, tb)):
        close(ours.grad, theirs.grad, atol=1e-4)


def test_group_norm_module_and_compiled():
    tm, fm = torch.nn.GroupNorm(2, 4), fg.nn.GroupNorm(2, 4)
    assert repr(fm) == repr(tm) and list(fm.state_dict()) == list(tm.state_dict())
    tx, fx = pair(randn(3, 4, 5))
    ty = tm(tx)
    fy = fg.compile(lambda x: fm(x))(fx)
    close(fy, ty)
    backward_both(ty, fy)
    close(fx.grad, tx.grad, atol=1e-4)
    close(fm.weight.grad, tm.weight.grad, atol=1e-4)


@pytest.mark.parametrize("case", [
    lambda lib: lib.nn.functional.group_norm(lib.ones(4, 3, 5), 2),
    lambda lib: lib.nn.functional.group_norm(lib.ones(4, 3, 5), 3, lib.ones(4)),
    lambda lib: lib.nn.functional.group_norm(lib.ones(3), 1),
    lambda lib: lib.nn.functional.group_norm(lib.ones(1, 3), 3),
    lambda lib: lib.nn.GroupNorm(2, 3),
])
def test_group_norm_errors(case):
    same_error(case)


@pytest.mark.parametrize("use_stats", [True, False])
def test_instance_norm_functional(use_stats):
    tx, fx = pair(randn(3, 4, 5))
    tw, fw = pair(randn(4))
    mean, var = randn(4), np.abs(randn(4)) + 0.5
    trm, frm = torch.tensor(mean), fg.tensor(mean.copy())
    trv, frv = torch.tensor(var), fg.tensor(var.copy())
    ty = TF.instance_norm(tx, trm, trv, tw, None, use_stats, 0.2)
    fy = FF.instance_norm(fx, frm, frv, fw, None, use_stats, 0.2)
    close(fy, ty)
    assert type(fy.grad_fn).__name__ == "ViewBackward0"
    assert type(fy.grad_fn.next_functions[0][0]).__name__ == "NativeBatchNormBackward0"
    close(frm, trm, atol=1e-6)
    close(frv, trv, atol=1e-6)
    backward_both(ty, fy)
    close(fx.grad, tx.grad, atol=1e-4)
    close(fw.grad, tw.grad, atol=1e-4)


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm1d", (3, 5)),
                                       ("InstanceNorm2d", (2, 3, 4, 4)), ("InstanceNorm2d", (3, 4, 4))])
@pytest.mark.parametrize("options", [{}, {"affine": True, "track_running_stats": True}])
def test_instance_norm_modules(cls, shape, options):
    tm, fm = getattr(torch.nn, cls)(3, **options), getattr(fg.nn, cls)(3, **options)
    assert repr(fm) == repr(tm)
    copy_state(tm, fm)
    for _ in range(2):
        x = randn(*shape)
        close(fm(fg.tensor(x)), tm(torch.tensor(x)))
    for name, buf in tm.named_buffers():
        np.testing.assert_allclose(fm.get_buffer(name).numpy(), buf.numpy(), rtol=1e-6, atol=1e-6)
    tm.eval(), fm.eval()
    x = randn(*shape)
    close(fm(fg.tensor(x)), tm(torch.tensor(x)))


@pytest.mark.parametrize("case", [
    lambda lib: lib.nn.functional.instance_norm(lib.ones(3, 4)),
    lambda lib: lib.nn.functional.instance_norm(lib.ones(3, 4, 5), lib.zeros(4), None),
    lambda lib: lib.nn.functional.instance_norm(lib.ones(3, 4, 5), use_input_stats=False),
    lambda lib: lib.nn.InstanceNorm1d(3)(lib.ones(2, 3, 4, 5)),
    lambda lib: lib.nn.InstanceNorm2d(3, affine=True)(lib.ones(2, 4, 4, 5)),
])
def test_instance_norm_errors(case):
    same_error(case)


# ---- rms_norm, local_response_norm ----------------------------------------------

@pytest.mark.parametrize("shape,normalized", [((4, 5), (5,)), ((2, 3, 4), (3, 4))])
@pytest.mark.parametrize("eps", [None, 1e-3])
@pytest.mark.parametrize("weighted", [True, False])
def test_rms_norm(shape, normalized, eps, weighted):
    tx, fx = pair(randn(*shape) * 1e-3)        # (small values: eps matters)
    tw, fw = pair(randn(*normalized)) if weighted else (None, None)
    ty, fy = TF.rms_norm(tx, normalized, tw, eps), FF.rms_norm(fx, normalized, fw, eps)
    close(fy, ty, rtol=1e-5, atol=1e-6)
    assert type(fy.grad_fn).__name__ == type(ty.grad_fn).__name__ == "MulBackward0"
    backward_both(ty, fy)
    close(fx.grad, tx.grad, rtol=1e-4, atol=1e-3)
    if weighted:
        close(fw.grad, tw.grad, rtol=1e-4, atol=1e-4)


def test_rms_norm_module():
    for args in [(4,), ((3, 4), 1e-4, False)]:
        tm, fm = torch.nn.RMSNorm(*args), fg.nn.RMSNorm(*args)
        assert repr(fm) == repr(tm) and list(fm.state_dict()) == list(tm.state_dict())
        x = randn(2, 3, 4)
        close(fm(fg.tensor(x)), tm(torch.tensor(x)))


@pytest.mark.parametrize("case", [
    lambda lib: lib.nn.functional.rms_norm(lib.ones(4, 3, 5), (4,)),
    lambda lib: lib.nn.functional.rms_norm(lib.ones(4, 3, 5), (3, 4)),
    lambda lib: lib.nn.functional.rms_norm(lib.ones(4, 3, 5), (5,), lib.ones(4)),
    lambda lib: lib.nn.functional.rms_norm(lib.ones(4, 3, 5).long(), (5,)),
    lambda lib: lib.nn.functional.local_response_norm(lib.ones(4, 3), 2),
])
def test_rms_lrn_errors(case):
    same_error(case)


@pytest.mark.parametrize("shape", [(2, 5, 4), (2, 6, 3, 3), (1, 4, 2, 2, 3)])
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_local_response_norm(shape, size):
    tx, fx = pair(randn(*shape))
    ty = TF.local_response_norm(tx, size, alpha=0.3, beta=0.6, k=1.5)
    fy = FF.local_response_norm(fx, size, alpha=0.3, beta=0.6, k=1.5)
    close(fy, ty)
    assert type(fy.grad_fn).__name__ == "DivBackward0"
    backward_both(ty, fy)
    close(fx.grad, tx.grad, atol=1e-4)


def test_local_response_norm_module():
    tm, fm = torch.nn.LocalResponseNorm(3), fg.nn.LocalResponseNorm(3)
    assert repr(fm) == repr(tm)
    x = randn(2, 5, 3)
    close(fm(fg.tensor(x)), tm(torch.tensor(x)))


# ---- dropout variants ----------------------------------------------------------------

@pytest.mark.parametrize("fn,shape", [("dropout1d", (40, 50, 6)), ("dropout1d", (50, 6)),
                                      ("dropout2d", (40, 50, 3, 3)), ("dropout3d", (20, 50, 2, 2, 2)),
                                      ("dropout3d", (50, 2, 2, 2))])
def test_feature_dropout_structure(fn, shape):
    p = 0.3
    x = fg.ones(*shape, requires_grad=True)
    y = getattr(FF, fn)(x, p)
    assert tuple(y.shape) == shape
    values = y.detach().numpy()
    spatial = {"dropout1d": 1, "dropout2d": 2, "dropout3d": 3}[fn]
    channels = values.reshape(-1, int(np.prod(shape[-spatial:])))
    assert (channels == channels[:, :1]).all()              # whole channels kept or zeroed
    assert np.isin(values, np.float32([0.0, 1 / (1 - p)])).all()
    assert abs((channels[:, 0] == 0).mean() - p) < 0.08
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), values)
    off = getattr(FF, fn)(x, p, training=False)
    t = torch.ones(*shape, requires_grad=True)
    assert (off is x) == (getattr(TF, fn)(t, p, training=False) is t)     # (unbatched: a squeezed view)
    np.testing.assert_array_equal(A(off), A(x))


def test_alpha_dropout_statistics():
    x = fg.randn(500, 200)
    for fn in (FF.alpha_dropout, FF.feature_alpha_dropout):
        y = fn(x, 0.2, True).numpy()
        assert abs(y.mean()) < 0.05 and abs(y.std() - 1) < 0.05
        assert fn(x, 0.2) is x                               # training defaults to False
    # the dropped value is SELU's saturation mapped by the affine correction
    alpha, p = 1.7580993408473766, 0.2
    a = 1 / np.sqrt((alpha ** 2 * p + 1) * (1 - p))
    y = FF.alpha_dropout(fg.zeros(1000), p, True).numpy()
    np.testing.assert_allclose(np.unique(y), sorted([a * alpha * p, -alpha * a + alpha * a * p]), rtol=1e-6)
    y = FF.feature_alpha_dropout(fg.ones(300, 20, 4), p, True).numpy()
    assert (y == y[:, :, :1]).all()
    t = FF.alpha_dropout(fg.ones(3, 4, requires_grad=True), p, True)
    assert type(t.grad_fn).__name__ == "AddBackward0"


def test_dropout_modules():
    for name, shape in (("Dropout1d", (2, 3, 4)), ("Dropout2d", (2, 3, 4, 4)), ("Dropout3d", (2, 3, 4, 4, 4)),
                        ("AlphaDropout", (2, 3)), ("FeatureAlphaDropout", (2, 3, 4))):
        tm, fm = getattr(torch.nn, name)(0.25), getattr(fg.nn, name)(0.25)
        assert repr(fm) == repr(tm)
        x = fg.ones(*shape)
        assert tuple(fm(x).shape) == shape
        fm.eval()
        assert fm(x) is x
    assert (FF.dropout2d(fg.ones(2, 3, 4, 4), 1.0).numpy() == 0).all()
    x = fg.ones(4, 6, 5)
    assert FF.dropout1d(x, 0.5, inplace=True) is x


@pytest.mark.parametrize("case", [
    lambda lib: lib.nn.functional.dropout1d(lib.ones(3), 0.5),
    lambda lib: lib.nn.functional.dropout2d(lib.ones(3, 4, 5), 1.5),
    lambda lib: lib.nn.functional.feature_alpha_dropout(lib.ones(3), 0.5, True),
    lambda lib: lib.nn.functional.alpha_dropout(lib.ones(3, 4).long(), 0.5, True),
    lambda lib: lib.nn.Dropout2d(-0.1),
])
def test_dropout_errors(case):
    same_error(case)


def test_dropout2d_warning():
    with pytest.warns(UserWarning, match="dropout2d: Received a 2-D input to dropout2d"):
        FF.dropout2d(fg.ones(3, 4), 0.5)


# ---- scaled_dot_product_attention --------------------------------------------------------

def _masks():
    bool_mask = rng.random((4, 5)) > 0.3
    bool_mask[1] = False                                     # a fully masked row: zeros
    return {"none": None, "bool": bool_mask, "float": randn(4, 5)}


@pytest.mark.parametrize("mask", ["none", "bool", "float", "causal"])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_sdpa(mask, scale):
    q, k, v = randn(2, 3, 4, 8), randn(2, 3, 5, 8), randn(2, 3, 5, 6)
    (tq, fq), (tk, fk), (tv, fv) = pair(q), pair(k), pair(v)
    m = _masks().get(mask)
    tkw = {"scale": scale, "is_causal": mask == "causal"}
    fkw = dict(tkw)
    if m is not None:
        tkw["attn_mask"], fkw["attn_mask"] = torch.tensor(m), fg.tensor(m)
    ty = TF.scaled_dot_product_attention(tq, tk, tv, **tkw)
    fy = FF.scaled_dot_product_attention(fq, fk, fv, **fkw)
    close(fy, ty)
    backward_both(ty, fy)
    for ours, theirs in ((fq, tq), (fk, tk), (fv, tv)):
        close(ours.grad, theirs.grad, atol=1e-4)


def test_sdpa_gqa_broadcast_and_compiled():
    q, k, v = randn(2, 4, 3, 8), randn(2, 2, 5, 8), randn(2, 2, 5, 8)
    ty = TF.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), enable_gqa=True)
    close(FF.scaled_dot_product_attention(*map(fg.tensor, (q, k, v)), enable_gqa=True), ty)
    q3 = randn(4, 3, 8)                                       # batch dims broadcast
    k4 = randn(2, 4, 5, 8)
    ty = TF.scaled_dot_product_attention(torch.tensor(q3), torch.tensor(k4), torch.tensor(k4))
    close(FF.scaled_dot_product_attention(fg.tensor(q3), fg.tensor(k4), fg.tensor(k4)), ty)
    (tq, fq) = pair(q)
    ty = TF.scaled_dot_product_attention(tq, tq, tq, is_causal=True)
    fy = fg.compile(lambda x: FF.scaled_dot_product_attention(x, x, x, is_causal=True))(fq)
    close(fy, ty)
    backward_both(ty, fy)
    close(fq.grad, tq.grad, atol=1e-4)


def test_sdpa_dropout_keeps_expectation():
    q = fg.zeros(1, 1, 2000, 4)                              # uniform attention over 10 values of 1
    v = fg.ones(1, 1, 10, 4)
    y = FF.scaled_dot_product_attention(q, fg.zeros(1, 1, 10, 4), v, dropout_p=0.5).numpy()
    assert abs(y.mean() - 1) < 0.05 and y.std() > 0.1


@pytest.mark.parametrize("case", [
    lambda lib: lib.nn.functional.scaled_dot_product_attention(lib.ones(2, 4, 8), lib.ones(2, 5, 7), lib.ones(2, 5, 6)),
    lambda lib: lib.nn.functional.scaled_dot_product_attention(lib.ones(8), lib.ones(8), lib.ones(8)),
    lambda lib: lib.nn.functional.scaled_dot_product_attention(lib.ones(2, 4, 8), lib.ones(2, 5, 8),
                                                               lib.ones(2, 5, 8).double()),
    lambda lib: lib.nn.functional.scaled_dot_product_attention(lib.ones(4, 8), lib.ones(4, 8), lib.ones(4, 8),
                                                               attn_mask=lib.ones(4, 4, dtype=lib.bool),
                                                               is_causal=True),
    lambda lib: lib.nn.functional.scaled_dot_product_attention(lib.ones(4, 8), lib.ones(4, 8), lib.ones(4, 8),
                                                               attn_mask=lib.ones(4, 4, dtype=lib.int64)),
])
def test_sdpa_errors(case):
    same_error(case)


# ---- MultiheadAttention, TransformerEncoder -----------------------------------------------

@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("options", [{}, {"kdim": 5, "vdim": 7}, {"add_bias_kv": True, "add_zero_attn": True},
                                     {"bias": False}])
def test_multihead_attention_values(batch_first, options):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first, **options).eval()
    fm = fg.nn.MultiheadAttention(8, 2, batch_first=batch_first, **options).eval()
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert repr(fm) == repr(tm)
    copy_state(tm, fm)
    shape = (lambda L, E: (2, L, E)) if batch_first else (lambda L, E: (L, 2, E))
    q, k, v = randn(*shape(4, 8)), randn(*shape(5, options.get("kdim", 8))), randn(*shape(5, options.get("vdim", 8)))
    padding = np.zeros((2, 5), bool)
    padding[0, 3:] = True
    causal = np.triu(np.ones((4, 5), bool), 2)
    for extra in [{}, {"key_padding_mask": padding}, {"attn_mask": causal},
                  {"need_weights": False, "attn_mask": causal, "key_padding_mask": padding},
                  {"average_attn_weights": False}]:
        t_extra = {n: torch.tensor(a) if isinstance(a, np.ndarray) else a for n, a in extra.items()}
        f_extra = {n: fg.tensor(a) if isinstance(a, np.ndarray) else a for n, a in extra.items()}
        to, tw = tm(torch.tensor(q), torch.tensor(k), torch.tensor(v), **t_extra)
        fo, fw = fm(fg.tensor(q), fg.tensor(k), fg.tensor(v), **f_extra)
        close(fo, to)
        if tw is None:
            assert fw is None
        else:
            close(fw, tw)


def test_multihead_attention_init_and_gradients():
    fm = fg.nn.MultiheadAttention(16, 4)
    bound = np.sqrt(6 / (16 + 48))                          # xavier_uniform_ of (3E, E)
    w = fm.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert (fm.in_proj_bias.detach().numpy() == 0).all() and (fm.out_proj.bias.detach().numpy() == 0).all()
    tm = torch.nn.MultiheadAttention(8, 2)
    fm = fg.nn.MultiheadAttention(8, 2)
    copy_state(tm, fm)
    (tx, fx) = pair(randn(4, 3, 8))
    to, _ = tm(tx, tx, tx)
    fo = fg.compile(lambda x: fm(x, x, x)[0])(fx)
    close(fo, to)
    backward_both(to, fo)
    close(fx.grad, tx.grad, atol=1e-4)
    for (name, ours), (_, theirs) in zip(fm.named_parameters(), tm.named_parameters()):
        close(ours.grad, theirs.grad, atol=1e-4)


@pytest.mark.parametrize("case", [
    lambda lib: lib.nn.MultiheadAttention(8, 3),
    lambda lib: lib.nn.MultiheadAttention(0, 2),
    lambda lib: lib.nn.MultiheadAttention(8, 2)(lib.ones(4, 8), lib.ones(5, 2, 8), lib.ones(5, 2, 8)),
    lambda lib: lib.nn.MultiheadAttention(8, 2)(lib.ones(4, 2, 8), lib.ones(5, 2, 8), lib.ones(5, 2, 8),
                                                attn_mask=lib.ones(4, 4, dtype=lib.bool)),
    lambda lib: lib.nn.MultiheadAttention(8, 2)(lib.ones(4, 2, 8), lib.ones(5, 2, 8), lib.ones(5, 2, 8),
                                                attn_mask=lib.ones(4, 5).long()),
])
def test_multihead_attention_errors(case):
    same_error(case)


@pytest.mark.parametrize("batch_first,norm_first,activation", [(False, False, "relu"), (True, False, "gelu"),
                                                                (True, True, "relu")])
def test_transformer_encoder(batch_first, norm_first, activation):
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=batch_first, norm_first=norm_first,
                                          activation=activation)
    fl = fg.nn.TransformerEncoderLayer(8, 2, 16, batch_first=batch_first, norm_first=norm_first,
                                       activation=activation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        te = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8)).eval()
        fe = fg.nn.TransformerEncoder(fl, 2, norm=fg.nn.LayerNorm(8)).eval()
    assert repr(fe) == repr(te)
    copy_state(te, fe)
    x = randn(*((2, 5, 8) if batch_first else (5, 2, 8)))
    padding = np.zeros((2, 5), bool)
    padding[1, 3:] = True
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5).numpy()
    for kw in ({}, {"src_key_padding_mask": padding}, {"mask": causal}, {"mask": causal, "is_causal": True}):
        t_kw = {n: torch.tensor(a) if isinstance(a, np.ndarray) else a for n, a in kw.items()}
        f_kw = {n: fg.tensor(a) if isinstance(a, np.ndarray) else a for n, a in kw.items()}
        close(fe(fg.tensor(x), **f_kw), te(torch.tensor(x), **t_kw))
        with torch.no_grad(), fg.no_grad(), warnings.catch_warnings():     # (torch's fast paths)
            warnings.simplefilter("ignore")                                  # (its nested-tensor note)
            close(fe(fg.tensor(x), **f_kw), te(torch.tensor(x), **t_kw))
