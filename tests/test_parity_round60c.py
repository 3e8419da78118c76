"""Round 60c of torch parity: torch APIs fusegrad lacked.

- F.max_pool{1,2,3}d_with_indices and F.adaptive_max_pool{1,2,3}d_with_indices (always a
  (values, indices) pair; F.max_pool1d(return_indices=True) takes torch's with-indices path and
  its checks and texts), the top-level torch.max_pool1d_with_indices and
  torch.adaptive_max_pool1d (a tuple, where F's returns the values).
- F.upsample_bilinear / F.upsample_nearest (torch's deprecation warnings), nn.UpsamplingBilinear2d
  and nn.UpsamplingNearest2d (values, gradients, reprs).
- F.channel_shuffle / F.native_channel_shuffle, nn.ChannelShuffle, torch.channel_shuffle and
  torch.native_channel_shuffle: values, ChannelShuffleBackward0 / NotImplemented nodes, the
  error of a backward through native_channel_shuffle, torch's texts for bad groups.
- F.multilabel_margin_loss / nn.MultiLabelMarginLoss (every reduction, -1 terminated targets,
  0-d, 1-d and 2-d input, gradients, MultilabelMarginLossBackward0, errors) and
  F.triplet_margin_with_distance_loss / nn.TripletMarginWithDistanceLoss (default and custom
  distances, swap, margin, reductions, the module's repr).
- torch's top-level aten forms: dropout, alpha_dropout, feature_dropout, feature_alpha_dropout
  and their in-place forms (train positional, torch's random stream), the losses whose reduction
  is an int (left out: 0, as torch's Python binding takes it), batch_norm, instance_norm,
  rms_norm, embedding (weight first), constant_pad_nd, pinverse, matrix_exp, and the Tensor
  methods hardshrink, prelu, pinverse, matrix_exp; torch's parser TypeErrors for bad arguments.
- The pure-tensor ones inside fg.compile: the same values and gradients as eagerly.
"""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402


def _result_or_error(call, text=lambda t: t):
    """call()'s result, or the exception's class and `text(its message)`: the outcome compared
    with torch's."""
    try:
        return call()
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return type(exc).__name__, text(str(exc))


def _plain(value):
    """A comparable form of a result: tensors as (shape, dtype name, grad_fn name, float array)."""
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, (torch.Tensor, fg.Tensor)):
        array = np.asarray(value.detach().tolist(), dtype=np.float64)
        return ("tensor", tuple(value.shape), str(value.dtype).split(".")[-1],
                type(value.grad_fn).__name__, array)
    return value


def _assert_same(got, expected, rtol=1e-5, atol=1e-6):
    if isinstance(expected, tuple) and expected and expected[0] == "tensor":
        assert isinstance(got, tuple) and got[0] == "tensor", (got, expected)
        assert got[1:4] == expected[1:4]
        np.testing.assert_allclose(got[4], expected[4], rtol=rtol, atol=atol, equal_nan=True)
    elif isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), (got, expected)
        for g, e in zip(got, expected):
            _assert_same(g, e, rtol, atol)
    else:
        assert got == expected


def _compare(case):
    """Run case(L) with torch and with fusegrad (warnings off); compare the outcomes."""
    outcomes = []
    for L in (torch, fg):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outcomes.append(_plain(_result_or_error(lambda: case(L))))
    expected, got = outcomes
    _assert_same(got, expected)


def _data(L, *shape, k=0, grad=False, dtype=None):
    n = int(np.prod(shape))
    array = np.sin(np.arange(n) * 1.7 + 0.3 + k).reshape(shape)
    return L.tensor(array, dtype=dtype or L.float32, requires_grad=grad)


def _with_grads(fn, *shapes):
    """case(L): fn(L, *inputs) for inputs of `shapes` requiring grad, then the outputs' weighted
    sum's backward: (output, each input's gradient)."""
    def case(L):
        xs = [_data(L, *s, k=i, grad=True) for i, s in enumerate(shapes)]
        out = fn(L, *xs)
        first = out[0] if isinstance(out, tuple) else out
        (first * _data(L, *first.shape, k=9)).sum().backward()
        return (out,) + tuple(x.grad for x in xs)
    return case


# ---------------------------------------------------------------- pools with indices

_POOL_CASES = {
    "mp1 values": _with_grads(lambda L, x: L.nn.functional.max_pool1d_with_indices(x, 3, 2, 1), (2, 3, 9)),
    "mp1 return_indices ignored": lambda L: L.nn.functional.max_pool1d_with_indices(_data(L, 2, 8), 2,
                                                                                      return_indices=False),
    "mp2": _with_grads(lambda L, x: L.nn.functional.max_pool2d_with_indices(x, 2, ceil_mode=True), (2, 3, 5, 5)),
    "mp3": _with_grads(lambda L, x: L.nn.functional.max_pool3d_with_indices(x, 2, 1), (1, 2, 3, 4, 4)),
    "amp1": _with_grads(lambda L, x: L.nn.functional.adaptive_max_pool1d_with_indices(x, 3), (2, 3, 8)),
    "amp2": _with_grads(lambda L, x: L.nn.functional.adaptive_max_pool2d_with_indices(x, (3, None)), (2, 5, 6)),
    "amp3": _with_grads(lambda L, x: L.nn.functional.adaptive_max_pool3d_with_indices(x, 2), (1, 2, 4, 3, 5)),
    "amp1 neg": lambda L: L.nn.functional.adaptive_max_pool1d_with_indices(_data(L, 2, 8), -1),
}
for _name, _args in {"kernel 0": ((2, 3, 8), (0,)), "4d": ((2, 3, 8, 8), (2,)), "1d": ((8,), (2,)),
                     "kernel pair": ((2, 8), ((2, 2),)), "stride pair": ((2, 8), (2, (2, 2))),
                     "pad": ((2, 8), (2, None, 2)), "too big": ((2, 8), (20,)), "dilation 0": ((2, 8), (2, None, 0, 0)),
                     "empty": ((0, 8), (2,)), "empty list": ((2, 8), ([],))}.items():
    _POOL_CASES[f"mp1 {_name}"] = (lambda s, a: lambda L: L.nn.functional.max_pool1d_with_indices(_data(L, *s), *a))(*_args)
    _POOL_CASES[f"mp1 return_indices {_name}"] = (lambda s, a: lambda L: L.nn.functional.max_pool1d(
        _data(L, *s), *a, return_indices=True))(*_args)
    _POOL_CASES[f"top mp1 {_name}"] = (lambda s, a: lambda L: L.max_pool1d_with_indices(_data(L, *s), *a))(*_args)
_POOL_CASES.update({
    "mp1 bool": lambda L: L.nn.functional.max_pool1d_with_indices(_data(L, 3, 8) > 0, 2),
    "mp1 int": lambda L: L.nn.functional.max_pool1d_with_indices(_data(L, 3, 8, dtype=L.int64), 2),
    "top mp1": _with_grads(lambda L, x: L.max_pool1d_with_indices(x, 3, None, 1, 1, True), (2, 3, 8)),
    "top mp1 seven": lambda L: L.max_pool1d_with_indices(_data(L, 2, 8), 2, 1, 0, 1, False, True),
    "top mp1 str": lambda L: L.max_pool1d_with_indices(_data(L, 2, 8), "a"),
    "top mp1 padding None": lambda L: L.max_pool1d_with_indices(_data(L, 2, 8), 2, None, None),
    "top amp1": _with_grads(lambda L, x: L.adaptive_max_pool1d(x, 3), (2, 3, 8)),
    "top amp1 tuple": lambda L: L.adaptive_max_pool1d(_data(L, 2, 8), (3,)),
    "top amp1 pair": lambda L: L.adaptive_max_pool1d(_data(L, 2, 8), (3, 2)),
    "top amp1 three": lambda L: L.adaptive_max_pool1d(_data(L, 2, 8), 3, True),
    "top amp1 long": lambda L: L.adaptive_max_pool1d(_data(L, 2, 8, dtype=L.int64), 3),
    "top amp1 4d": lambda L: L.adaptive_max_pool1d(_data(L, 1, 2, 2, 8), 3),
})


@pytest.mark.parametrize("name", list(_POOL_CASES))
def test_pools_with_indices_match_torch(name):
    _compare(_POOL_CASES[name])


def test_top_level_pools_return_tuples():
    for L in (torch, fg):
        x = _data(L, 2, 3, 8)
        assert type(L.adaptive_max_pool1d(x, 3)) is tuple
        assert type(L.max_pool1d_with_indices(x, 2)) is tuple
        assert type(L.nn.functional.max_pool2d_with_indices(x, 2)) is tuple


# ---------------------------------------------------------------- upsampling

_UPSAMPLE_CASES = {
    "bilinear scale": _with_grads(lambda L, x: L.nn.functional.upsample_bilinear(x, scale_factor=2), (1, 2, 3, 3)),
    "bilinear size": _with_grads(lambda L, x: L.nn.functional.upsample_bilinear(x, size=(4, 5)), (2, 1, 3, 2)),
    "bilinear 3d input": lambda L: L.nn.functional.upsample_bilinear(_data(L, 1, 2, 3), size=4),
    "nearest scale": _with_grads(lambda L, x: L.nn.functional.upsample_nearest(x, scale_factor=2), (1, 2, 3, 3)),
    "nearest size": _with_grads(lambda L, x: L.nn.functional.upsample_nearest(x, 5), (1, 2, 3)),
    "nearest none": lambda L: L.nn.functional.upsample_nearest(_data(L, 1, 2, 3, 3)),
    "module bilinear": _with_grads(lambda L, x: L.nn.UpsamplingBilinear2d(scale_factor=2)(x), (1, 2, 3, 3)),
    "module nearest": _with_grads(lambda L, x: L.nn.UpsamplingNearest2d(size=(2, 5))(x), (1, 2, 3, 3)),
}


@pytest.mark.parametrize("name", list(_UPSAMPLE_CASES))
def test_deprecated_upsampling_matches_torch(name):
    _compare(_UPSAMPLE_CASES[name])


@pytest.mark.parametrize("fn", ["upsample_bilinear", "upsample_nearest", "upsample"])
def test_deprecated_upsampling_warns_as_torch(fn):
    caught = {}
    for L in (torch, fg):
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always")
            getattr(L.nn.functional, fn)(_data(L, 1, 1, 2, 2), scale_factor=2)
        caught[L.__name__] = [(r.category, str(r.message), r.filename) for r in records]
    assert caught["fusegrad"] == caught["torch"]
    assert caught["torch"] and caught["torch"][0][2] == __file__


@pytest.mark.parametrize("make", [lambda nn: nn.UpsamplingBilinear2d(scale_factor=2),
                                  lambda nn: nn.UpsamplingBilinear2d(size=3),
                                  lambda nn: nn.UpsamplingNearest2d(scale_factor=(2, 3)),
                                  lambda nn: nn.UpsamplingNearest2d((3, 4)),
                                  lambda nn: nn.ChannelShuffle(2),
                                  lambda nn: nn.MultiLabelMarginLoss(),
                                  lambda nn: nn.MultiLabelMarginLoss(reduction="sum"),
                                  lambda nn: nn.TripletMarginWithDistanceLoss(),
                                  lambda nn: nn.TripletMarginWithDistanceLoss(distance_function=abs, swap=True)],
                         ids=["bil-scale", "bil-size", "near-scale", "near-size", "shuffle", "mlm", "mlm-sum",
                              "triplet", "triplet-fn"])
def test_module_reprs_match_torch(make):
    assert repr(make(fg.nn)) == repr(make(torch.nn))
    with warnings.catch_warnings(record=True) as records:      # (the modules do not warn)
        warnings.simplefilter("always")
        make(fg.nn)
    assert not records


# ---------------------------------------------------------------- channel shuffle

_SHUFFLE_CASES = {}
for _where in ("F", "top"):
    for _fn in ("channel_shuffle", "native_channel_shuffle"):
        def _get(L, where=_where, fn=_fn):
            return getattr(L.nn.functional if where == "F" else L, fn)
        for _name, _call in {
                "groups 2": lambda L, f: f(L)(_data(L, 2, 6, 3, 2, grad=True), 2),
                "groups 3": lambda L, f: f(L)(_data(L, 2, 6, 3, 2), 3),
                "groups 6": lambda L, f: f(L)(_data(L, 1, 6, 2), 6),
                "not dividing": lambda L, f: f(L)(_data(L, 2, 6, 3), 4),
                "groups 0": lambda L, f: f(L)(_data(L, 2, 6, 3), 0),
                "groups negative": lambda L, f: f(L)(_data(L, 2, 6, 3), -2),
                "2d input": lambda L, f: f(L)(_data(L, 2, 6), 3),
                "float groups": lambda L, f: f(L)(_data(L, 2, 6, 3), 3.0),
                "list input": lambda L, f: f(L)([1.0], 3),
                "int64": lambda L, f: f(L)(_data(L, 2, 6, 3, dtype=L.int64), 3),
                "bool": lambda L, f: f(L)(_data(L, 2, 6, 3) > 0, 3),
                "transposed": lambda L, f: f(L)(_data(L, 2, 3, 6).transpose(1, 2), 3),
                "empty batch": lambda L, f: f(L)(_data(L, 0, 6, 1), 3),
                "6d": lambda L, f: f(L)(_data(L, 1, 6, 1, 2, 1, 2), 2)}.items():
            _SHUFFLE_CASES[f"{_where} {_fn} {_name}"] = (lambda c, g: lambda L: c(L, g))(_call, _get)
_SHUFFLE_CASES.update({
    "gradient": _with_grads(lambda L, x: L.channel_shuffle(x, 3), (2, 6, 3, 2)),
    "F gradient": _with_grads(lambda L, x: L.nn.functional.channel_shuffle(x, 2), (1, 4, 3)),
    "native backward": _with_grads(lambda L, x: L.native_channel_shuffle(x, 3), (2, 6, 3, 2)),
    "module": _with_grads(lambda L, x: L.nn.ChannelShuffle(2)(x), (2, 4, 3)),
    "module bad": lambda L: L.nn.ChannelShuffle(3)(_data(L, 2, 4, 3)),
})


@pytest.mark.parametrize("name", list(_SHUFFLE_CASES))
def test_channel_shuffle_matches_torch(name):
    _compare(_SHUFFLE_CASES[name])


# ---------------------------------------------------------------- multilabel margin loss

_X = [[0.1, 0.2, 0.4, 0.8], [0.3, -0.2, 0.5, 0.1], [0.7, 0.7, -0.1, 0.0]]
_Y = [[3, 0, -1, 1], [1, 1, 2, -1], [-1, 2, 3, 0]]


def _mlm(xs, ys, module=False, **kwargs):
    def case(L):
        x = L.tensor(xs, requires_grad=True)
        y = L.tensor(ys)
        if module:
            out = L.nn.MultiLabelMarginLoss(**kwargs)(x, y)
        else:
            out = L.nn.functional.multilabel_margin_loss(x, y, **kwargs)
        (out * 2).sum().backward()
        return out, x.grad
    return case


_MLM_CASES = {}
for _r in ("mean", "sum", "none"):
    _MLM_CASES[f"2d {_r}"] = _mlm(_X, _Y, reduction=_r)
    _MLM_CASES[f"1d {_r}"] = _mlm(_X[1], _Y[1], reduction=_r)
    _MLM_CASES[f"0d {_r}"] = _mlm(0.5, -1, reduction=_r)
    _MLM_CASES[f"module {_r}"] = _mlm(_X, _Y, module=True, reduction=_r)
    _MLM_CASES[f"no targets {_r}"] = _mlm(_X, [[-1, 0, 1, 2]] * 3, reduction=_r)
    _MLM_CASES[f"all targets {_r}"] = _mlm(_X, [[0, 1, 2, 3]] * 3, reduction=_r)
    _MLM_CASES[f"wide {_r}"] = lambda L, r=_r: _mlm(
        np.cos(np.arange(15) * 0.7).reshape(3, 5).tolist(), [[4, 1, -1, 0, 0], [2, -1, 3, 3, 3], [0, 1, 2, 3, 4]],
        reduction=r)(L)
_MLM_CASES.update({
    "legacy reduce": _mlm(_X, _Y, reduce=False),
    "legacy size_average": _mlm(_X, _Y, size_average=False),
    "float64": lambda L: L.nn.functional.multilabel_margin_loss(L.tensor(_X, dtype=L.float64), L.tensor(_Y)),
    "0d target out of range": _mlm(0.5, 0),
    "bad reduction": _mlm(_X, _Y, reduction="bad"),
    "target columns": lambda L: L.nn.functional.multilabel_margin_loss(L.tensor(_X), L.tensor(_Y)[:, :3]),
    "target 1d": lambda L: L.nn.functional.multilabel_margin_loss(L.tensor(_X), L.tensor(_Y)[0]),
    "target float": lambda L: L.nn.functional.multilabel_margin_loss(L.tensor(_X), L.tensor(_Y).float()),
    "input int64": lambda L: L.nn.functional.multilabel_margin_loss(L.tensor(_X).long(), L.tensor(_Y)),
    "target above": lambda L: L.nn.functional.multilabel_margin_loss(L.tensor(_X), L.tensor(_Y) + 1),
    "target below": lambda L: L.nn.functional.multilabel_margin_loss(L.tensor(_X), L.tensor(_Y) - 1),
    "out of range after -1": lambda L: L.nn.functional.multilabel_margin_loss(
        L.tensor(_X), L.tensor([[3, -1, 7, 0], [0, -1, 0, 0], [0, -1, 0, 0]])),
    "3d": lambda L: L.nn.functional.multilabel_margin_loss(L.zeros(2, 3, 4), L.zeros(2, 3, 4).long()),
    "no classes": lambda L: L.nn.functional.multilabel_margin_loss(L.zeros(2, 0), L.zeros(2, 0).long()),
    "empty batch none": lambda L: L.nn.functional.multilabel_margin_loss(L.zeros(0, 4), L.zeros(0, 4).long(),
                                                                         reduction="none"),
    "list input": lambda L: L.nn.functional.multilabel_margin_loss([1.0], L.tensor(_Y)),
})


@pytest.mark.parametrize("name", list(_MLM_CASES))
def test_multilabel_margin_loss_matches_torch(name):
    _compare(_MLM_CASES[name])


# ---------------------------------------------------------------- triplet margin with distance

def _cosine_distance(L):
    return lambda x, y: 1.0 - L.nn.functional.cosine_similarity(x, y)


def _tmwd(shapes=((3, 4),) * 3, module=False, distance=None, **kwargs):
    def case(L):
        xs = [_data(L, *s, k=3 * i, grad=True) * (i + 1) for i, s in enumerate(shapes)]
        d = None if distance is None else distance(L)
        if module:
            out = L.nn.TripletMarginWithDistanceLoss(distance_function=d, **kwargs)(*xs)
        else:
            out = L.nn.functional.triplet_margin_with_distance_loss(*xs, distance_function=d, **kwargs)
        out.sum().backward()
        return out, xs[0].grad is None
    return case


def _leaf_grads(shapes=((3, 4),) * 3, **kwargs):
    def case(L):
        xs = [_data(L, *s, k=3 * i, grad=True) for i, s in enumerate(shapes)]
        out = L.nn.functional.triplet_margin_with_distance_loss(xs[0], xs[1] * 2, xs[2] * 3, **kwargs)
        out.sum().backward()
        return (out,) + tuple(x.grad for x in xs)
    return case


_TMWD_CASES = {}
for _r in ("mean", "sum", "none"):
    for _swap in (False, True):
        _TMWD_CASES[f"pairwise {_r} swap={_swap}"] = _leaf_grads(reduction=_r, swap=_swap)
        _TMWD_CASES[f"cosine {_r} swap={_swap}"] = _leaf_grads(
            reduction=_r, swap=_swap, margin=0.5, distance_function=None)
        _TMWD_CASES[f"custom {_r} swap={_swap}"] = (lambda r, s: lambda L: _leaf_grads(
            reduction=r, swap=s, margin=2.0, distance_function=_cosine_distance(L))(L))(_r, _swap)
        _TMWD_CASES[f"module {_r} swap={_swap}"] = _tmwd(module=True, reduction=_r, swap=_swap, margin=1.5)
_TMWD_CASES.update({
    "1d inputs": _leaf_grads(shapes=((4,),) * 3),
    "margin 0": _tmwd(margin=0),
    "margin negative": _tmwd(margin=-1.0),
    "module margin 0": _tmwd(module=True, margin=0.0),
    "bad reduction": _tmwd(reduction="batchmean"),
    "dims differ": _tmwd(shapes=((3, 4), (3, 4), (4,))),
    "module dims differ": _tmwd(module=True, shapes=((3, 4), (4,), (3, 4))),
})


@pytest.mark.parametrize("name", list(_TMWD_CASES))
def test_triplet_margin_with_distance_loss_matches_torch(name):
    _compare(_TMWD_CASES[name])


# ---------------------------------------------------------------- top-level dropout

_DROPOUT_CASES = {}
for _fn in ("dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout"):
    for _p in (0.3, 0.0, 1.0, 1.5, -0.1):
        for _train in (True, False):
            def _out_of_place(L, fn=_fn, p=_p, train=_train):
                L.manual_seed(7)
                x = _data(L, 4, 5, 3, grad=True)
                y = getattr(L, fn)(x, p, train)
                y.sum().backward()
                return y, x.grad, y is x

            def _in_place(L, fn=_fn, p=_p, train=_train):
                L.manual_seed(7)
                x = _data(L, 4, 5, 3)
                y = getattr(L, fn + "_")(x, p, train)
                return y, x, y is x
            _DROPOUT_CASES[f"{_fn} p={_p} train={_train}"] = _out_of_place
            _DROPOUT_CASES[f"{_fn}_ p={_p} train={_train}"] = _in_place
    for _name, _call in {
            "1d": lambda L, fn: getattr(L, fn)(_data(L, 5), 0.5, True),
            "int64": lambda L, fn: getattr(L, fn)(_data(L, 3, 4, dtype=L.int64), 0.5, True),
            "two arguments": lambda L, fn: getattr(L, fn)(_data(L, 3, 4), 0.5),
            "keywords": lambda L, fn: getattr(L, fn)(_data(L, 3, 4), p=0.5, train=False),
            "training keyword": lambda L, fn: getattr(L, fn)(_data(L, 3, 4), 0.5, training=False),
            "str train": lambda L, fn: getattr(L, fn)(_data(L, 3, 4), 0.5, "x"),
            "int train": lambda L, fn: getattr(L, fn)(_data(L, 3, 4), 0.5, 1),
            "four arguments": lambda L, fn: getattr(L, fn)(_data(L, 3, 4), 0.5, True, False),
            "in place on a leaf": lambda L, fn: getattr(L, fn + "_")(_data(L, 3, 4, grad=True), 0.5, True),
            "seeded 2d": lambda L, fn: (L.manual_seed(11), getattr(L, fn)(_data(L, 6, 7), 0.4, True))[1]}.items():
        _DROPOUT_CASES[f"{_fn} {_name}"] = (lambda c, f: lambda L: (L.manual_seed(3), c(L, f))[1])(_call, _fn)


@pytest.mark.parametrize("name", list(_DROPOUT_CASES))
def test_top_level_dropouts_match_torch(name):
    _compare(_DROPOUT_CASES[name])


def test_top_level_dropout_draws_as_functional_dropout():
    for L in (torch, fg):
        L.manual_seed(5)
        a = L.dropout(_data(L, 8, 9), 0.5, True)
        L.manual_seed(5)
        b = L.nn.functional.dropout(_data(L, 8, 9), 0.5, True)
        assert a.tolist() == b.tolist()


# ---------------------------------------------------------------- top-level losses (reduction an int)

def _loss_grads(fn):
    return _with_grads(fn, (3, 4), (3, 4), (3, 4))


_LOSS_CASES = {}
for _r in (0, 1, 2, 3, -1, None):
    _red = () if _r is None else (_r,)
    _LOSS_CASES.update({
        f"kl_div {_r}": _loss_grads(lambda L, a, b, c, r=_red: L.kl_div(a, b.abs(), *r)),
        f"kl_div log_target {_r}": _loss_grads(lambda L, a, b, c, r=_red: L.kl_div(a, b, *r, log_target=True)),
        f"bce logits {_r}": _loss_grads(lambda L, a, b, c, r=_red: L.binary_cross_entropy_with_logits(
            a, b.abs(), None, c.abs(), *r)),
        f"bce logits weight {_r}": _loss_grads(lambda L, a, b, c, r=_red: L.binary_cross_entropy_with_logits(
            a, b.abs(), c.abs(), None, *r)),
        f"cosine_embedding {_r}": _loss_grads(lambda L, a, b, c, r=_red: L.cosine_embedding_loss(
            a, b, L.tensor([1, -1, 1]), 0.1, *r)),
        f"margin_ranking {_r}": _loss_grads(lambda L, a, b, c, r=_red: L.margin_ranking_loss(a, b, c.sign(), 0.2, *r)),
        f"hinge_embedding {_r}": _loss_grads(lambda L, a, b, c, r=_red: L.hinge_embedding_loss(a, c.sign(), 0.5, *r)),
        f"triplet {_r}": _loss_grads(lambda L, a, b, c, r=_red: L.triplet_margin_loss(a, b, c, 1.0, 2.0, 1e-6,
                                                                                        False, *r)),
        f"triplet swap {_r}": _loss_grads(lambda L, a, b, c, r=_red: L.triplet_margin_loss(a, b, c, 0.5, 1.0, 1e-6,
                                                                                             True, *r)),
    })
    if _r is not None:
        _LOSS_CASES[f"poisson {_r}"] = _loss_grads(lambda L, a, b, c, r=_r: L.poisson_nll_loss(
            a, b.abs(), True, False, 1e-8, r))
        _LOSS_CASES[f"poisson full {_r}"] = _loss_grads(lambda L, a, b, c, r=_r: L.poisson_nll_loss(
            a.abs(), b.abs() * 3, False, True, 1e-8, r))
_LOSS_CASES.update({
    "kl_div str": lambda L: L.kl_div(_data(L, 2), _data(L, 2), "mean"),
    "kl_div str keyword": lambda L: L.kl_div(_data(L, 2), _data(L, 2), reduction="mean"),
    "kl_div four positional": lambda L: L.kl_div(_data(L, 2), _data(L, 2), 1, True),
    "kl_div int64": lambda L: L.kl_div(_data(L, 2, dtype=L.int64), _data(L, 2), 1),
    "bce str": lambda L: L.binary_cross_entropy_with_logits(_data(L, 2), _data(L, 2), None, None, "sum"),
    "bce smaller target": lambda L: L.binary_cross_entropy_with_logits(_data(L, 2, 3), _data(L, 3).abs()),
    "bce larger target": lambda L: L.binary_cross_entropy_with_logits(_data(L, 3), _data(L, 2, 3).abs()),
    "poisson missing": lambda L: L.poisson_nll_loss(_data(L, 2), _data(L, 2), True, False, 1e-8),
    "poisson str": lambda L: L.poisson_nll_loss(_data(L, 2), _data(L, 2), True, False, 1e-8, "sum"),
    "triplet margin 0": lambda L: L.triplet_margin_loss(_data(L, 2, 3), _data(L, 2, 3, k=1), _data(L, 2, 3, k=2), 0.0),
    "triplet dims": lambda L: L.triplet_margin_loss(_data(L, 2, 3), _data(L, 2, 3, k=1), _data(L, 3, k=2)),
    "triplet str": lambda L: L.triplet_margin_loss(_data(L, 2, 3), _data(L, 2, 3), _data(L, 2, 3), 1.0, 2.0, 1e-6,
                                                   False, "mean"),
    "margin_ranking dims": lambda L: L.margin_ranking_loss(_data(L, 3), _data(L, 3, k=1), _data(L, 3, 1).sign(),
                                                           0.0, 1),
    "cosine_embedding dims": lambda L: L.cosine_embedding_loss(_data(L, 3), _data(L, 3), L.tensor([1, -1]), 0.0, 1),
    "hinge str": lambda L: L.hinge_embedding_loss(_data(L, 3), _data(L, 3), 1.0, "sum"),
})


@pytest.mark.parametrize("name", list(_LOSS_CASES))
def test_top_level_losses_match_torch(name):
    _compare(_LOSS_CASES[name])


# ---------------------------------------------------------------- top-level norms, embedding, pad, linalg

def _batch_norm(training, stats=True, affine=True, shape=(4, 3, 2), eps=1e-5, instance=False):
    def case(L):
        x = _data(L, *shape, grad=True)
        c = shape[1]
        rm, rv = (_data(L, c, k=5), _data(L, c, k=6).abs() + 0.5) if stats else (None, None)
        w, b = (_data(L, c, k=7, grad=True), _data(L, c, k=8, grad=True)) if affine else (None, None)
        fn = L.instance_norm if instance else L.batch_norm
        y = fn(x, w, b, rm, rv, training, 0.1, eps, False)
        (y * _data(L, *shape, k=9)).sum().backward()
        return y, x.grad, rm, rv, None if w is None else (w.grad, b.grad)
    return case


_NORM_CASES = {}
for _training in (True, False):
    for _stats in (True, False):
        for _affine in (True, False):
            _NORM_CASES[f"batch_norm {_training} {_stats} {_affine}"] = _batch_norm(_training, _stats, _affine)
        _NORM_CASES[f"instance_norm {_training} {_stats}"] = _batch_norm(_training, _stats, shape=(2, 3, 4),
                                                                          instance=True)
_NORM_CASES.update({
    "batch_norm negative eps": _batch_norm(True, eps=-1e-6),
    "batch_norm 4d": _batch_norm(True, shape=(2, 3, 2, 2)),
    "batch_norm str cudnn": lambda L: L.batch_norm(_data(L, 2, 3), None, None, None, None, True, 0.1, 1e-5, "a"),
    "batch_norm eight arguments": lambda L: L.batch_norm(_data(L, 2, 3), None, None, None, None, True, 0.1, 1e-5),
    "batch_norm stats size": lambda L: L.batch_norm(_data(L, 2, 3), None, None, _data(L, 4), _data(L, 4), False,
                                                    0.1, 1e-5, True),
    "instance_norm one stat": lambda L: L.instance_norm(_data(L, 2, 3, 4), None, None, _data(L, 3), None, True, 0.1,
                                                        1e-5, False),
    "rms_norm": _with_grads(lambda L, x: L.rms_norm(x, [3]), (2, 3)),
    "rms_norm weight eps": _with_grads(lambda L, x, w: L.rms_norm(x, (3,), w, 1e-3), (2, 3), (3,)),
    "rms_norm two dims": _with_grads(lambda L, x, w: L.rms_norm(x, [2, 3], w), (4, 2, 3), (2, 3)),
    "rms_norm int shape": lambda L: L.rms_norm(_data(L, 2, 3), 3),
    "rms_norm bad shape": lambda L: L.rms_norm(_data(L, 2, 3), [4]),
})


def _embedding(*args, **kwargs):
    def case(L):
        w = _data(L, 5, 3, grad=True)
        y = L.embedding(w, L.tensor([[0, 2], [2, 4]]), *args, **kwargs)
        (y * _data(L, 2, 2, 3, k=4)).sum().backward()
        return y, w.grad
    return case


for _padding_idx in (-1, -2, 0, 2, 5, -6):
    _NORM_CASES[f"embedding padding_idx={_padding_idx}"] = _embedding(_padding_idx)
_NORM_CASES.update({
    "embedding default": _embedding(),
    "embedding scale_grad_by_freq": _embedding(-1, True),
    "embedding out of range": lambda L: L.embedding(_data(L, 5, 3), L.tensor([0, 7])),
    "embedding float indices": lambda L: L.embedding(_data(L, 5, 3), _data(L, 2)),
    "embedding indices first": lambda L: L.embedding(L.tensor([0, 1]), _data(L, 5, 3)),
    "embedding 1d weight": lambda L: L.embedding(_data(L, 5), L.tensor([0, 1])),
    "embedding str padding_idx": lambda L: L.embedding(_data(L, 5, 3), L.tensor([0, 1]), "a"),
})
for _pad in ([1, 2], (1, 1, 1, 1), [-1, -1], [-1, 2, 0, 1], [1, 2, 3], [1, 1, 1, 1, 1, 1], [-2, -2], [], [-3, -3]):
    _NORM_CASES[f"constant_pad_nd {_pad}"] = _with_grads(lambda L, x, p=_pad: L.constant_pad_nd(x, p), (2, 3))
_NORM_CASES.update({
    "constant_pad_nd value": _with_grads(lambda L, x: L.constant_pad_nd(x, [1, 1], 2.5), (2, 3)),
    "constant_pad_nd int64 float value": lambda L: L.constant_pad_nd(_data(L, 2, 3, dtype=L.int64), [1, 1], 1.5),
    "constant_pad_nd str": lambda L: L.constant_pad_nd(_data(L, 2, 3), "ab"),
    "pinverse": _with_grads(lambda L, a: L.pinverse(a + 2 * L.eye(3, 4)), (3, 4)),
    "pinverse rcond": _with_grads(lambda L, a: L.pinverse(a + 2 * L.eye(3, 4), 0.5), (3, 4)),
    "pinverse batch": lambda L: L.pinverse(_data(L, 2, 3, 2) + L.eye(3, 2)),
    "pinverse 1d": lambda L: L.pinverse(_data(L, 3)),
    "pinverse str": lambda L: L.pinverse(_data(L, 3, 3), "a"),
    "matrix_exp": _with_grads(lambda L, a: L.matrix_exp(a * 0.5), (3, 3)),
    "matrix_exp not square": lambda L: L.matrix_exp(_data(L, 2, 3)),
    "Tensor.pinverse": _with_grads(lambda L, a: (a + 2 * L.eye(3, 4)).pinverse(0.3), (3, 4)),
    "Tensor.pinverse str": lambda L: _data(L, 3, 3).pinverse(rcond="a"),
    "Tensor.matrix_exp": _with_grads(lambda L, a: (a * 0.5).matrix_exp(), (3, 3)),
    "Tensor.matrix_exp 1d": lambda L: _data(L, 3).matrix_exp(),
    "Tensor.matrix_exp argument": lambda L: _data(L, 3, 3).matrix_exp(1),
    "Tensor.hardshrink": _with_grads(lambda L, a: a.hardshrink(), (3, 4)),
    "Tensor.hardshrink lambd": _with_grads(lambda L, a: a.hardshrink(0.7), (3, 4)),
    "Tensor.hardshrink keyword": _with_grads(lambda L, a: a.hardshrink(lambd=0.7), (3, 4)),
    "Tensor.hardshrink str": lambda L: _data(L, 2).hardshrink("a"),
    "Tensor.prelu": _with_grads(lambda L, a, w: a.prelu(w), (3, 4), (1,)),
    "Tensor.prelu channels": _with_grads(lambda L, a, w: a.prelu(w), (3, 4), (4,)),
    "Tensor.prelu float": lambda L: _data(L, 2, 2).prelu(0.2),
    "Tensor.prelu wrong size": lambda L: _data(L, 2, 2).prelu(_data(L, 3)),
})


@pytest.mark.parametrize("name", list(_NORM_CASES))
def test_top_level_norms_embedding_pad_linalg_match_torch(name):
    _compare(_NORM_CASES[name])


def test_tensor_methods_exist_where_torch_has_them():
    for name in ("hardshrink", "prelu", "pinverse", "matrix_exp"):
        assert hasattr(torch.Tensor, name) and hasattr(fg.Tensor, name)


# ---------------------------------------------------------------- inside fg.compile

_COMPILED = {
    "channel_shuffle": (lambda L: lambda x: L.channel_shuffle(x, 3).sin().sum(), [(2, 6, 3)]),
    "F.channel_shuffle": (lambda L: lambda x: (L.nn.functional.channel_shuffle(x, 2) * 2).sum(), [(1, 4, 2, 2)]),
    "multilabel_margin_loss": (lambda L: lambda x: L.nn.functional.multilabel_margin_loss(
        x, L.tensor([[3, 0, -1, 1], [1, 1, 2, -1], [-1, 2, 3, 0]])), [(3, 4)]),
    "multilabel_margin_loss none": (lambda L: lambda x: L.nn.functional.multilabel_margin_loss(
        x, L.tensor([[3, 0, -1, 1], [1, 1, 2, -1], [-1, 2, 3, 0]]), reduction="none").sum() * 3, [(3, 4)]),
    "triplet_margin_with_distance_loss": (lambda L: lambda a, p, n: L.nn.functional.triplet_margin_with_distance_loss(
        a, p * 2, n * 3, swap=True), [(3, 4), (3, 4), (3, 4)]),
    "max_pool1d_with_indices": (lambda L: lambda x: L.nn.functional.max_pool1d_with_indices(x, 3, 2, 1)[0].sum(),
                                [(2, 3, 9)]),
    "adaptive_max_pool1d": (lambda L: lambda x: L.adaptive_max_pool1d(x, 3)[0].exp().sum(), [(2, 3, 8)]),
    "upsample_bilinear": (lambda L: lambda x: L.nn.functional.upsample_bilinear(x, scale_factor=2).pow(2).sum(),
                          [(1, 2, 3, 3)]),
    "kl_div": (lambda L: lambda a, b: L.kl_div(a, b.abs(), 1), [(3, 4), (3, 4)]),
    "triplet_margin_loss": (lambda L: lambda a, p, n: L.triplet_margin_loss(a, p, n, 1.0, 2.0, 1e-6, True, 2),
                            [(3, 4), (3, 4), (3, 4)]),
    "constant_pad_nd": (lambda L: lambda x: (L.constant_pad_nd(x, [1, 2]) ** 2).sum(), [(2, 3)]),
    "rms_norm": (lambda L: lambda x: L.rms_norm(x, [4]).sin().sum(), [(3, 4)]),
    "hardshrink method": (lambda L: lambda x: x.hardshrink(0.3).sum(), [(3, 4)]),
}


@pytest.mark.parametrize("name", list(_COMPILED))
def test_compiled_calls_match_eager_and_torch(name):
    make, shapes = _COMPILED[name]
    results = []
    for L, compiled in ((torch, False), (fg, False), (fg, True)):
        xs = [_data(L, *s, k=i, grad=True) for i, s in enumerate(shapes)]
        fn = make(L)
        if compiled:
            fn = fg.compile(fn)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*xs)
        out.backward()
        results.append((float(out.detach()), [np.asarray(x.grad.tolist()) for x in xs]))
    expected = results[0]
    for value, grads in results[1:]:
        assert value == pytest.approx(expected[0], rel=1e-5, abs=1e-6)
        for g, e in zip(grads, expected[1]):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- differential fuzzing's finds

def _bn_case(fn, shape, weight=None, bias=None, mean=None, var=None, flag=True, eps=1e-5):
    def case(L):
        x = _data(L, *shape, grad=True)
        vec = (lambda n, k: None if n is None else _data(L, n, k=k, grad=True))
        stat = (lambda n, v: None if n is None else L.full((n,), v))
        return fn(L)(x, vec(weight, 1), vec(bias, 2), stat(mean, 0.0), stat(var, 1.0), flag, 0.1, eps, False)
    return case


_FUZZ_CASES = {
    # at::batch_norm: one running statistic without the other is batch_norm_cpu's ValueError
    # (after the size checks); an empty input is a clone (times weight[0], plus bias[0]) before
    # any check; instance_norm leaves that ValueError to batch_norm
    "bn_mean_only": _bn_case(lambda L: L.batch_norm, (2, 3, 4), mean=3),
    "bn_var_only": _bn_case(lambda L: L.batch_norm, (2, 3, 4), var=3),
    "bn_empty_weight_bias": _bn_case(lambda L: L.batch_norm, (0, 3, 4), weight=3, bias=3),
    "bn_empty_clone": _bn_case(lambda L: L.batch_norm, (0, 3, 4)),
    "bn_empty_skips_checks": _bn_case(lambda L: L.batch_norm, (0, 3, 4), mean=5, flag=False),
    "bn_empty_bad_weight": _bn_case(lambda L: L.batch_norm, (2, 0, 4), weight=3),
    "bn_empty_empty_weight": _bn_case(lambda L: L.batch_norm, (0, 3, 4), weight=0),
    "in_mean_only_bad_size": _bn_case(lambda L: L.instance_norm, (2, 3, 4), mean=5),
    "in_mean_only_eval": _bn_case(lambda L: L.instance_norm, (2, 3, 4), mean=3, flag=False),
    "in_mean_only_empty": _bn_case(lambda L: L.instance_norm, (2, 0, 4), mean=0),
    "in_empty_batch_weight": _bn_case(lambda L: L.instance_norm, (0, 3, 4), weight=3),
    "in_mean_only": _bn_case(lambda L: L.instance_norm, (2, 3, 4), mean=3),
    # binary_cross_entropy_with_logits: the target's size is tensor a's in the broadcast error
    "bce_logits_broadcast_text": lambda L: L.binary_cross_entropy_with_logits(_data(L, 2, 0, 1), _data(L, 4, 3)),
    # constant_pad_nd: a 0-d input and no pads; a negative pad after, past the dim, is narrow's error
    "pad_0d_no_pads": lambda L: L.constant_pad_nd(L.tensor(2.0, requires_grad=True), [], 3),
    "pad_narrow_after": lambda L: L.constant_pad_nd(_data(L, 3, 1), [1, -2], 1.5),
    "F_pad_narrow_after": lambda L: L.nn.functional.pad(_data(L, 3, 1), [1, -2]),
    # rms_norm ends in .contiguous(): CloneBackward0 for a permuted input's layout
    "rms_norm_transposed": lambda L: L.rms_norm(_data(L, 4, 2, 4, grad=True).transpose(-1, -2), [4, 2]),
    "rms_norm_transposed_weight": lambda L: L.rms_norm(_data(L, 4, 2, 4, grad=True).transpose(-1, -2), [2],
                                                       _data(L, 2, k=1, grad=True)),
    # embedding of an empty weight: index_select's own texts for bad indices
    "embedding_empty_rows_bad_index": lambda L: L.embedding(L.ones(3, 0), L.tensor([[0, 5, -1]])),
    "embedding_no_rows": lambda L: L.embedding(L.ones(0, 2), L.tensor([0])),
    "F_embedding_empty_bad_index": lambda L: L.nn.functional.embedding(L.tensor([4]), L.ones(3, 0)),
    # adaptive max pools: an output size of 0 is an empty result; 1-d's own check and name
    "amp2d_output_zero": lambda L: L.nn.functional.adaptive_max_pool2d_with_indices(_data(L, 2, 3, 4), (0, 2)),
    "amp3d_output_zero": lambda L: L.nn.functional.adaptive_max_pool3d_with_indices(_data(L, 1, 2, 3, 4),
                                                                                      (1, 0, 1)),
    "amp1d_output_zero": lambda L: L.nn.functional.adaptive_max_pool1d_with_indices(_data(L, 2, 3), 0),
    "amp1d_empty_unbatched": lambda L: L.nn.functional.adaptive_max_pool1d_with_indices(_data(L, 3, 0), 1),
    "amp1d_empty_channels": lambda L: L.nn.functional.adaptive_max_pool1d(_data(L, 2, 0, 3), 1),
    "amp1d_output_size_first": lambda L: L.nn.functional.adaptive_max_pool1d(_data(L, 3, 0), (1, 2)),
}


@pytest.mark.parametrize("name", sorted(_FUZZ_CASES))
def test_fuzzer_finds_aten_forms_and_pools(name):
    _compare(_FUZZ_CASES[name])


def test_batch_norm_of_empty_input_differentiates_as_torch():
    grads = []
    for L in (torch, fg):
        x, w, b = _data(L, 0, 3, 4, grad=True), _data(L, 3, k=1, grad=True), _data(L, 3, k=2, grad=True)
        out = L.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False)
        out.sum().backward()
        grads.append((type(out.grad_fn).__name__, w.grad.tolist(), b.grad.tolist(), tuple(x.grad.shape)))
    assert grads[0] == grads[1]
