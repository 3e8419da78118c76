"""Convolution, pooling, padding and resampling (fusegrad/nn/conv.py, pooling.py, padding.py over
ir/ops/conv.py and ir/ops/pool.py) against torch: values, grad_fn names, gradients, error
texts, modules' reprs and initialisation, a small CNN trained eagerly and inside fg.compile."""
import math

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")
from parity_support import same_error  # noqa: E402

RNG = np.random.default_rng(0)


def _arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _as_list(y):
    return list(y) if isinstance(y, tuple) else [y]


def check(call, *arrays, grad=True, rtol=1e-4, atol=1e-5, cotangent=True):
    """call(F, *tensors) on torch and fusegrad: same values, dtypes, grad_fn names, and the
    gradients of every float input under one random cotangent of the first output."""
    def make(lib):
        return [lib.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    tin, fin = make(torch), make(fg)
    ty, fy = _as_list(call(torch.nn.functional, *tin)), _as_list(call(fg.nn.functional, *fin))
    assert len(ty) == len(fy)
    for t, f in zip(ty, fy):
        assert tuple(f.shape) == tuple(t.shape)
        assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)
        assert type(f.grad_fn).__name__ == type(t.grad_fn).__name__
    if grad and ty[0].requires_grad:
        g = _arr(*ty[0].shape) if cotangent else np.ones(ty[0].shape, np.float32)
        ty[0].backward(torch.tensor(g))
        fy[0].backward(fg.tensor(g))
        for t, f in zip(tin, fin):
            if t.requires_grad:
                np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)
    return fy


# ---------------------------------------------------------------- convolution

@pytest.mark.parametrize("kw", [{}, {"stride": 2}, {"padding": 1}, {"padding": (2, 0), "dilation": (1, 2)},
                                {"stride": (2, 1), "padding": "valid"}, {"padding": "same"},
                                {"padding": "same", "dilation": 2}, {"groups": 2, "padding": 1, "stride": 2}])
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(kw, bias):
    x, w = _arr(2, 4, 9, 8), _arr(6, 4 // kw.get("groups", 1), 3, 3)
    arrays = (x, w, _arr(6)) if bias else (x, w)
    fy = check(lambda F, x, w, *b: F.conv2d(x, w, *b, **kw), *arrays)
    edges = fy[0].grad_fn.next_functions
    assert len(edges) == 3 and (edges[2] == (None, 0)) == (not bias)


def test_conv2d_even_kernel_same_and_unbatched():
    with pytest.warns(UserWarning):
        check(lambda F, x, w: F.conv2d(x, w, padding="same"), _arr(1, 2, 6, 7), _arr(3, 2, 2, 4))
    check(lambda F, x, w, b: F.conv2d(x, w, b, padding=1), _arr(3, 5, 5), _arr(2, 3, 3, 3), _arr(2))


@pytest.mark.parametrize("kw", [{}, {"stride": 3, "padding": 2}, {"padding": "same", "dilation": 3},
                                {"groups": 3, "dilation": 2}])
def test_conv1d(kw):
    check(lambda F, x, w, b: F.conv1d(x, w, b, **kw), _arr(2, 3, 17), _arr(6, 3 // kw.get("groups", 1), 4), _arr(6))
    check(lambda F, x, w: F.conv1d(x, w, **kw), _arr(3, 17), _arr(6, 3 // kw.get("groups", 1), 4))


@pytest.mark.parametrize("kw", [{}, {"stride": 2, "padding": 1, "output_padding": 1}, {"groups": 2, "dilation": 2},
                                {"stride": (2, 3), "output_padding": (1, 2)}])
def test_conv_transpose2d(kw):
    check(lambda F, x, w, b: F.conv_transpose2d(x, w, b, **kw), _arr(2, 4, 5, 6), _arr(4, 3, 3, 3), _arr(3 * kw.get("groups", 1)))


def test_conv_transpose1d():
    check(lambda F, x, w: F.conv_transpose1d(x, w, stride=3, padding=1, output_padding=2), _arr(2, 4, 7), _arr(4, 2, 3))
    check(lambda F, x, w: F.conv_transpose1d(x, w), _arr(4, 7), _arr(4, 2, 3))


def test_conv_integer_and_double():
    check(lambda F, x, w: F.conv2d(x, w, padding=1), np.arange(2 * 3 * 5 * 5).reshape(2, 3, 5, 5) % 7 - 3,
          (np.arange(4 * 3 * 3 * 3).reshape(4, 3, 3, 3) % 5 - 2))
    check(lambda F, x, w: F.conv2d(x, w, stride=2), _arr(2, 3, 6, 6, dtype=np.float64), _arr(4, 3, 3, 3, dtype=np.float64))


def test_conv_double_backward():
    def run(lib):
        x = lib.tensor(_arr(1, 2, 5, 5, dtype=np.float64) * 0 + np.linspace(-1, 1, 50).reshape(1, 2, 5, 5),
                       requires_grad=True)
        w = lib.tensor(np.linspace(-0.5, 0.7, 36).reshape(2, 2, 3, 3), requires_grad=True)
        y = lib.nn.functional.conv2d(x, w, padding=1, stride=2)
        gx, gw = lib.autograd.grad((y * y).sum(), (x, w), create_graph=True)
        names = type(gx.grad_fn).__name__
        ((gx * gx).sum() + (gw ** 3).sum()).backward()
        return gx.detach().numpy(), gw.detach().numpy(), x.grad.numpy(), w.grad.numpy(), names
    for a, b in zip(run(torch)[:4], run(fg)[:4]):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", [
    lambda F, t: F.conv2d(t.randn(2, 3, 8, 8), t.randn(4, 2, 3, 3)),
    lambda F, t: F.conv2d(t.randn(2, 3, 2, 2), t.randn(4, 3, 3, 3)),
    lambda F, t: F.conv2d(t.randn(8, 8), t.randn(4, 3, 3, 3)),
    lambda F, t: F.conv2d(t.randn(2, 3, 8, 8), t.randn(4, 3, 3, 3), padding="foo"),
    lambda F, t: F.conv2d(t.randn(2, 3, 8, 8), t.randn(4, 3, 3, 3), padding="same", stride=2),
    lambda F, t: F.conv2d(t.randn(2, 3, 8, 8), t.randn(4, 3, 3, 3), padding=-1),
    lambda F, t: F.conv2d(t.randn(2, 3, 8, 8), t.randn(4, 3, 3, 3), stride=0),
    lambda F, t: F.conv2d(t.randn(2, 3, 8, 8), t.randn(4, 3, 3, 3), groups=2),
    lambda F, t: F.conv2d(t.randn(2, 3, 8, 8), t.randn(4, 1, 3, 3), groups=3),
    lambda F, t: F.conv2d(t.randn(2, 3, 8, 8), t.randn(3, 3, 3)),
    lambda F, t: F.conv2d(t.randn(2, 3, 8, 8), t.randn(4, 3, 3, 3), t.randn(3)),
    lambda F, t: F.conv2d(t.randn(2, 3, 8, 8), t.randn(4, 3, 3, 3).double()),
    lambda F, t: F.conv1d(t.randn(2, 3, 8, 8), t.randn(4, 3, 3)),
])
def test_conv_errors(case):
    same_error(lambda lib: case(lib.nn.functional, lib))


# ---------------------------------------------------------------- pooling

@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                {"kernel_size": (2, 3), "stride": (1, 2), "dilation": (2, 1)},
                                {"kernel_size": 3, "stride": 2, "ceil_mode": True}])
def test_max_pool2d(kw):
    check(lambda F, x: F.max_pool2d(x, **kw, return_indices=True), _arr(2, 3, 9, 10))
    check(lambda F, x: F.max_pool2d(x, **kw), _arr(3, 9, 10))


def test_max_pool1d_and_integers():
    check(lambda F, x: F.max_pool1d(x, 3, 2, 1, return_indices=True), _arr(2, 3, 11))
    check(lambda F, x: F.max_pool1d(x, 2, ceil_mode=True), _arr(3, 11))
    check(lambda F, x: F.max_pool2d(x, 2), np.arange(2 * 36).reshape(2, 6, 6) % 11)


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
                                {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
                                {"kernel_size": (2, 3), "ceil_mode": True, "count_include_pad": False},
                                {"kernel_size": 2, "divisor_override": 3}])
def test_avg_pool2d(kw):
    check(lambda F, x: F.avg_pool2d(x, **kw), _arr(2, 3, 9, 10))


def test_avg_pool1d_and_integers():
    check(lambda F, x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), _arr(2, 3, 10))
    check(lambda F, x: F.avg_pool2d(x, 2, 1), np.array([[[-7, 2, 3], [4, 5, 6], [7, 8, 9]]]))


@pytest.mark.parametrize("size", [3, (4, 5), (None, 2), 1, (7, 3)])
def test_adaptive_pools(size):
    check(lambda F, x: F.adaptive_avg_pool2d(x, size), _arr(2, 3, 7, 10))
    if size != 1:
        check(lambda F, x: F.adaptive_max_pool2d(x, size, return_indices=True), _arr(3, 7, 10))


def test_adaptive_pools_1d_and_lp():
    check(lambda F, x: F.adaptive_avg_pool1d(x, 4), _arr(2, 3, 10))
    check(lambda F, x: F.adaptive_avg_pool1d(x, 1), _arr(2, 3, 10))
    check(lambda F, x: F.adaptive_max_pool1d(x, 4, return_indices=True), _arr(3, 10))
    check(lambda F, x: F.lp_pool2d(x, 2, 2), np.abs(_arr(2, 3, 6, 6)) + 0.1)
    check(lambda F, x: F.lp_pool1d(x, 3, 2, 1), np.abs(_arr(2, 3, 6)) + 0.1)


@pytest.mark.parametrize("case", [
    lambda F, t: F.max_pool2d(t.randn(2, 3, 8, 8), 3, padding=2),
    lambda F, t: F.max_pool2d(t.randn(2, 3, 8, 8), 0),
    lambda F, t: F.max_pool2d(t.randn(2, 3, 8, 8), 0, 1),
    lambda F, t: F.max_pool2d(t.randn(8, 8), 2),
    lambda F, t: F.max_pool2d(t.randn(2, 3, 8, 8), 9),
    lambda F, t: F.max_pool2d(t.randn(2, 3, 8, 8), (2, 2, 2)),
    lambda F, t: F.max_pool1d(t.randn(8), 2),
    lambda F, t: F.max_pool1d(t.randn(2, 3, 8), 9),
    lambda F, t: F.max_pool1d(t.randn(2, 3, 8), 3, padding=2),
    lambda F, t: F.avg_pool2d(t.randn(2, 3, 8, 8), 3, padding=2),
    lambda F, t: F.avg_pool2d(t.randn(2, 3, 8, 8), 2, divisor_override=0),
    lambda F, t: F.avg_pool1d(t.randn(8), 2),
    lambda F, t: F.avg_pool1d(t.randn(2, 3, 8), 9),
    lambda F, t: F.adaptive_avg_pool2d(t.randn(8, 8), 2),
    lambda F, t: F.adaptive_avg_pool2d(t.randn(2, 3, 8, 8), (2,)),
    lambda F, t: F.adaptive_avg_pool2d(t.randn(2, 3, 8, 8), -1),
    lambda F, t: F.adaptive_max_pool2d(t.randn(8, 8), 2),
    lambda F, t: F.adaptive_avg_pool2d(t.randn(2, 3, 8, 8).long(), 2),
    lambda F, t: F.adaptive_avg_pool1d(t.randn(8), 2),
])
def test_pool_errors(case):
    same_error(lambda lib: case(lib.nn.functional, lib))


# ---------------------------------------------------------------- padding, resampling, shuffles, fold

@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("pads", [(1, 2), (2, 1, 0, 3)])
def test_pad(mode, pads):
    check(lambda F, x: F.pad(x, pads, mode=mode), _arr(2, 3, 5, 6) if len(pads) == 4 else _arr(2, 3, 5))
    check(lambda F, x: F.pad(x, pads[:2], mode=mode), _arr(3, 5))


def test_pad_constant_value_and_crop():
    check(lambda F, x: F.pad(x, (1, -2, -1, 0, 2, 1), value=1.5), _arr(2, 3, 5, 6))
    check(lambda F, x: F.pad(x, (1, 1), value=2), np.arange(6).reshape(2, 3))


@pytest.mark.parametrize("case", [
    lambda F, t: F.pad(t.randn(2, 3), (1,)),
    lambda F, t: F.pad(t.randn(2, 3), (1, 1, 1, 1, 1, 1)),
    lambda F, t: F.pad(t.randn(2, 3, 4, 4), (1, 1), mode="reflect"),
    lambda F, t: F.pad(t.randn(2, 3, 4), (1, 1), mode="foo"),
    lambda F, t: F.pad(t.randn(2, 3, 4), (1, 1), mode="reflect", value=2.0),
])
def test_pad_errors(case):
    same_error(lambda lib: case(lib.nn.functional, lib))


@pytest.mark.parametrize("kw", [{"scale_factor": 2}, {"size": (5, 7)}, {"scale_factor": (1.5, 0.7)},
                                {"size": 5, "mode": "nearest-exact"},
                                {"scale_factor": 2, "mode": "bilinear"}, {"size": (5, 13), "mode": "bilinear"},
                                {"scale_factor": 1.7, "mode": "bilinear", "align_corners": True},
                                {"size": (3, 4), "mode": "bilinear"}, {"size": (3, 4), "mode": "area"}])
def test_interpolate_2d(kw):
    check(lambda F, x: F.interpolate(x, **kw), _arr(2, 3, 6, 9))


def test_interpolate_1d():
    check(lambda F, x: F.interpolate(x, scale_factor=2.5, mode="linear"), _arr(2, 3, 6))
    check(lambda F, x: F.interpolate(x, size=4, mode="linear", align_corners=True), _arr(2, 3, 6))
    check(lambda F, x: F.interpolate(x, scale_factor=3), _arr(2, 3, 6))


@pytest.mark.parametrize("case", [
    lambda F, t: F.interpolate(t.randn(1, 2, 4, 4), size=4, scale_factor=2),
    lambda F, t: F.interpolate(t.randn(1, 2, 4, 4)),
    lambda F, t: F.interpolate(t.randn(1, 2, 4), scale_factor=2, mode="bilinear"),
    lambda F, t: F.interpolate(t.randn(1, 2, 4, 4), scale_factor=2, align_corners=True),
    lambda F, t: F.interpolate(t.randn(1, 2, 4, 4), size=(3,)),
    lambda F, t: F.interpolate(t.randn(1, 2, 4, 4), scale_factor=0.1),
])
def test_interpolate_errors(case):
    same_error(lambda lib: case(lib.nn.functional, lib))


def test_pixel_shuffle_unfold_fold():
    check(lambda F, x: F.pixel_shuffle(x, 2), _arr(2, 8, 3, 4))
    check(lambda F, x: F.pixel_unshuffle(x, 3), _arr(2, 6, 9))
    check(lambda F, x: F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), _arr(2, 3, 7, 8))
    check(lambda F, x: F.unfold(x, 2), _arr(3, 5, 5))
    check(lambda F, x: F.fold(x, (8, 9), (2, 3), padding=1, stride=(2, 1)), _arr(2, 12, 5 * 9))
    for case in (lambda F, t: F.pixel_shuffle(t.randn(1, 3, 4, 4), 2),
                 lambda F, t: F.unfold(t.randn(1, 2, 8, 8), 9),
                 lambda F, t: F.fold(t.randn(1, 12, 48), (8, 8), 2)):
        same_error(lambda lib: case(lib.nn.functional, lib))


# ---------------------------------------------------------------- modules

def test_module_reprs_and_parameters():
    pairs = [("Conv2d(3, 16, 3, padding=1)", None), ("Conv2d(4, 8, (3, 5), stride=2, dilation=2, groups=2, bias=False, "
                                                     "padding_mode='reflect')", None),
             ("Conv2d(3, 6, 3, padding='same')", None), ("Conv1d(2, 4, 5, stride=2, padding=2)", None),
             ("ConvTranspose2d(4, 6, 3, stride=2, output_padding=1)", None), ("ConvTranspose1d(4, 6, 3)", None),
             ("MaxPool2d(2)", None), ("MaxPool1d(3, 2, 1)", None), ("AvgPool2d(3, stride=2)", None),
             ("AvgPool1d(2)", None), ("AdaptiveAvgPool2d((5, 7))", None), ("AdaptiveMaxPool1d(3)", None),
             ("ZeroPad2d(2)", None), ("ConstantPad1d((1, 2), 3.5)", None), ("ReflectionPad2d((1, 1, 2, 0))", None),
             ("ReplicationPad1d(3)", None), ("Upsample(scale_factor=2, mode='bilinear')", None),
             ("PixelShuffle(2)", None), ("Unfold(kernel_size=(2, 3))", None), ("Fold((4, 5), 2)", None),
             ("LPPool2d(2, 3)", None)]
    for text, _ in pairs:
        ours, theirs = eval("fg.nn." + text), eval("torch.nn." + text)
        assert repr(ours) == repr(theirs)
        assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == \
            [(n, tuple(p.shape)) for n, p in theirs.named_parameters()]


def test_conv_default_init_bounds():
    fg.manual_seed(0)
    m = fg.nn.Conv2d(8, 32, 3)
    bound = 1 / math.sqrt(8 * 9)        # kaiming_uniform_(a=sqrt(5)) and the bias's bound
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound and np.abs(b).max() > 0.5 * bound
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        fg.nn.Conv2d(3, 4, 3, groups=2)


def test_module_forward_with_padding_mode_and_output_size():
    tm = torch.nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular")
    fm = fg.nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular")
    fm.load_state_dict({k: fg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = _arr(1, 2, 5, 6)
    np.testing.assert_allclose(fm(fg.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(), atol=1e-5)
    tt = torch.nn.ConvTranspose2d(2, 3, 3, stride=2)
    ft = fg.nn.ConvTranspose2d(2, 3, 3, stride=2)
    ft.load_state_dict({k: fg.tensor(v.detach().numpy()) for k, v in tt.state_dict().items()})
    out_t, out_f = tt(torch.tensor(x), output_size=(12, 14)), ft(fg.tensor(x), output_size=(12, 14))
    assert tuple(out_f.shape) == tuple(out_t.shape) == (1, 3, 12, 14)
    np.testing.assert_allclose(out_f.detach().numpy(), out_t.detach().numpy(), atol=1e-5)


# ---------------------------------------------------------------- compiled

def test_compiled_ops_match_eager():
    F = fg.nn.functional

    def f(x, w, b):
        y = F.conv2d(x, w, b, padding=1, stride=(1, 2))
        y = F.max_pool2d(F.relu(y), 2, ceil_mode=True) + F.avg_pool2d(y, 2, ceil_mode=True)
        y = F.pad(y, (1, 1, 0, 1), mode="reflect")
        y = F.interpolate(y, scale_factor=2, mode="bilinear") + F.interpolate(F.pixel_shuffle(y, 1), scale_factor=2)
        y = F.adaptive_avg_pool2d(y, (5, 3)) + F.adaptive_max_pool2d(y, (5, 3))
        z = F.conv_transpose2d(y, w, stride=2, output_padding=1)
        return (y * y).sum() + F.unfold(y, 2).sum() + (z * z).mean()

    arrays = _arr(2, 3, 8, 9), _arr(4, 3, 3, 3), _arr(4)
    grads = []
    for fn in (f, fg.compile(f)):
        xs = [fg.tensor(a, requires_grad=True) for a in arrays]
        out = fn(*xs)
        out.backward()
        grads.append([out.detach().numpy()] + [x.grad.numpy() for x in xs])
    for a, b in zip(*grads):
        # (x.grad reaches ~1e3 as sums that cancel: float32 rounding of the two summation
        # orders differs by ~3e-5 there, so the absolute tolerance scales with the magnitude)
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(a).max())))


def _cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 3))


@pytest.mark.parametrize("compiled", [False, True])
def test_small_cnn_training_matches_torch(compiled):
    tm, fm = _cnn(torch), _cnn(fg)
    fm.load_state_dict({k: fg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    topt, fopt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9), fg.optim.SGD(fm.parameters(), lr=0.1, momentum=0.9)
    x, target = _arr(6, 1, 8, 8), RNG.integers(0, 3, 6)

    def fstep(x, target):
        fopt.zero_grad()
        loss = fg.nn.functional.cross_entropy(fm(x), target)
        loss.backward()
        fopt.step()
        return loss
    step = fg.compile(fstep) if compiled else fstep
    for _ in range(4):
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(target))
        tloss.backward()
        topt.step()
        floss = step(fg.tensor(x), fg.tensor(target))
        np.testing.assert_allclose(floss.item(), tloss.item(), rtol=1e-5, atol=1e-6)
        for (name, p), (_, q) in zip(fm.named_parameters(), tm.named_parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_empty_batch_and_negative_pads():
    check(lambda F, x, w: F.conv2d(x, w, padding=1), _arr(0, 3, 5, 5), _arr(2, 3, 3, 3), cotangent=False)
    check(lambda F, x: F.max_pool2d(x, 2), _arr(0, 3, 4, 4))
    check(lambda F, x: F.pad(x, (-1, 2), mode="replicate"), _arr(2, 3, 5))
    check(lambda F, x: F.pad(x, (2, -1), mode="circular"), _arr(2, 3, 5))
    for case in (lambda F, t: F.conv_transpose2d(t.randn(1, 2, 4, 4), t.randn(2, 3, 3, 3), output_padding=1),
                 lambda F, t: F.conv_transpose1d(t.randn(1, 2, 4), t.randn(2, 3, 3), stride=2, output_padding=2),
                 lambda F, t: F.conv_transpose2d(t.randn(1, 3, 4, 4), t.randn(2, 3, 3, 3)),
                 lambda F, t: F.pad(t.randn(1, 2, 4), (4, 1), mode="reflect")):
        same_error(lambda lib: case(lib.nn.functional, lib))


@pytest.mark.parametrize("text", ["MaxPool2d(3, 2, 1, return_indices=True)", "AvgPool1d(3, 2, 1)",
                                  "AdaptiveMaxPool2d((2, 3))", "ReflectionPad2d(2)", "CircularPad1d((1, 2))",
                                  "Upsample(size=(5, 7), mode='bilinear', align_corners=True)", "PixelUnshuffle(2)",
                                  "Unfold(3, padding=1)", "LPPool1d(2, 3)", "ConstantPad2d((1, 0, 2, 1), -1.0)"])
def test_module_forward(text):
    shape = (2, 3, 6, 8) if "1d" not in text else (2, 3, 8)
    check(lambda F, x: eval("lib.nn." + text, {"lib": torch if F is torch.nn.functional else fg})(x),
          np.abs(_arr(*shape)) + 0.1)


# A None where a tensor goes: torch's parser text (one checker, nn.functional._check_tensor_args;
# conv, pooling and padding skipped None and failed later with an AttributeError)
NONE_INPUT_CALLS = {
    "conv_transpose2d": lambda L: L.nn.functional.conv_transpose2d(None, L.ones(2, 1, 3, 3)),
    "conv1d-bias-int": lambda L: L.nn.functional.conv_transpose1d(L.ones(1, 2, 4), L.ones(2, 1, 3), 3),
    "max_pool2d": lambda L: L.nn.functional.max_pool2d(None, 2),
    "avg_pool1d": lambda L: L.nn.functional.avg_pool1d(None, 2),
    "pad": lambda L: L.nn.functional.pad(None, (1, 1)),
}
# (torch's adaptive_avg_pool2d(None) fails with an AttributeError and its unfold names im2col:
# fusegrad names the function and argument there, its TypeError)


@pytest.mark.parametrize("name", list(NONE_INPUT_CALLS))
def test_none_where_a_tensor_goes_raises_torchs_text(name):
    def outcome(L):
        try:
            NONE_INPUT_CALLS[name](L)
        except Exception as exc:  # noqa: BLE001 - the class and text are compared
            return type(exc).__name__, str(exc)
        return None
    want = outcome(torch)
    assert want is not None and outcome(fg) == want
