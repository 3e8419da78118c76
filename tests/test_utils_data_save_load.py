"""fg.utils.data (datasets, samplers, collation, DataLoader) and fg.save / fg.load, against torch."""
import collections
import io
import pickle

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.utils import data as fd

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")
import torch.utils.data as td  # noqa: E402

from parity_support import assert_same  # noqa: E402


def same_error(make_fg, make_torch):
    with pytest.raises(Exception) as theirs:
        make_torch()
    with pytest.raises(type(theirs.value)) as ours:
        make_fg()
    assert str(ours.value) == str(theirs.value)


def test_import_paths():
    import fusegrad.utils.data as d
    assert d is fg.utils.data and fd.DataLoader is fg.utils.data.DataLoader


def _collated_equal(ours, theirs):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, fg.Tensor)
        assert_same(ours, theirs)
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _collated_equal(a, b)
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs)
        for k in theirs:
            _collated_equal(ours[k], theirs[k])
    else:
        assert ours == theirs


Point = collections.namedtuple("Point", "x y")


@pytest.mark.parametrize("make", [
    lambda lib: [(1, 2.0, "a", True), (3, 4.0, "b", False)],
    lambda lib: [np.float32(1), np.float32(2)],
    lambda lib: [np.arange(3, dtype=np.float64), np.arange(3, dtype=np.float64)],
    lambda lib: [{"x": lib.ones(2), "y": [1, 2]}, {"x": lib.zeros(2), "y": [3, 4]}],
    lambda lib: [Point(1.5, lib.ones(3)), Point(2.5, lib.ones(3))],
    lambda lib: [[lib.ones(2, 3), 7], [lib.zeros(2, 3), 8]],
    lambda lib: [b"x", b"y"],
])
def test_default_collate_like_torch(make):
    _collated_equal(fd.default_collate(make(fg)), td.default_collate(make(torch)))


def test_default_collate_errors_and_convert():
    same_error(lambda: fd.default_collate([[1, 2], [3]]), lambda: td.default_collate([[1, 2], [3]]))
    same_error(lambda: fd.default_collate([object(), object()]), lambda: td.default_collate([object(), object()]))
    same_error(lambda: fd.default_collate([np.array(["a"]), np.array(["b"])]),
               lambda: td.default_collate([np.array(["a"]), np.array(["b"])]))
    _collated_equal(fd.default_convert((np.arange(2), 3, "s")), td.default_convert((np.arange(2), 3, "s")))


def test_datasets():
    x, y = fg.randn(10, 3), fg.arange(10)
    ds = fd.TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    same_error(lambda: fd.TensorDataset(fg.zeros(3), fg.zeros(4)), lambda: td.TensorDataset(torch.zeros(3), torch.zeros(4)))
    sub = fd.Subset(ds, [9, 0, 4])
    assert len(sub) == 3 and sub[0][1].item() == 9
    cat = ds + sub
    assert isinstance(cat, fd.ConcatDataset) and len(cat) == 13 and cat[10][1].item() == 9 and cat[-1][1].item() == 4
    same_error(lambda: fd.ConcatDataset([]), lambda: td.ConcatDataset([]))
    same_error(lambda: cat[-20], lambda: td.ConcatDataset([range(10), range(3)])[-20])
    stack = fd.StackDataset(a=range(3), b=range(3))
    assert stack[1] == {"a": 1, "b": 1}


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.5, 0.25, 0.25], [1, 1, 8]])
def test_random_split(lengths):
    ours = fd.random_split(range(10), lengths, generator=fg.Generator().manual_seed(42))
    theirs = td.random_split(range(10), lengths, generator=torch.Generator().manual_seed(42))
    assert [list(s) for s in ours] == [list(s) for s in theirs]       # (fusegrad's randperm is torch's)
    fg.manual_seed(1)
    a = [list(s) for s in fd.random_split(range(10), lengths)]
    fg.manual_seed(1)
    assert a == [list(s) for s in fd.random_split(range(10), lengths)]
    same_error(lambda: fd.random_split(range(10), [3, 3]), lambda: td.random_split(range(10), [3, 3]))


def test_samplers():
    assert list(fd.SequentialSampler(range(4))) == [0, 1, 2, 3]
    torch.manual_seed(5)
    fg.manual_seed(5)
    assert list(fd.RandomSampler(range(10))) == list(td.RandomSampler(range(10)))
    g1, g2 = fg.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert list(fd.RandomSampler(range(7), num_samples=12, generator=g1)) == \
        list(td.RandomSampler(range(7), num_samples=12, generator=g2))
    drawn = list(fd.RandomSampler(range(5), replacement=True, num_samples=40))
    assert len(drawn) == 40 and set(drawn) <= set(range(5))
    assert sorted(fd.SubsetRandomSampler([4, 8, 9])) == [4, 8, 9]
    for drop in (False, True):
        assert list(fd.BatchSampler(range(10), 3, drop)) == list(td.BatchSampler(range(10), 3, drop))
        assert len(fd.BatchSampler(range(10), 3, drop)) == len(td.BatchSampler(range(10), 3, drop))
    same_error(lambda: fd.BatchSampler(range(3), 0, False), lambda: td.BatchSampler(range(3), 0, False))
    w = fd.WeightedRandomSampler([0.0, 1.0, 3.0], 50)
    assert len(list(w)) == 50 and 0 not in list(w)
    assert sorted(fd.WeightedRandomSampler([1.0, 1.0, 3.0, 0.0], 3, replacement=False)) == [0, 1, 2]


@pytest.mark.parametrize("kw", [dict(), dict(batch_size=4), dict(batch_size=4, drop_last=True),
                                dict(batch_size=3, shuffle=True), dict(batch_size=None)])
def test_dataloader_lengths_and_shapes(kw):
    ours = fd.DataLoader(fd.TensorDataset(fg.randn(10, 3), fg.arange(10)), **kw)
    theirs = td.DataLoader(td.TensorDataset(torch.randn(10, 3), torch.arange(10)), **kw)
    assert len(ours) == len(theirs)
    a, b = list(ours), list(theirs)
    assert len(a) == len(b)
    for (xa, ya), (xb, yb) in zip(a, b):
        assert tuple(xa.shape) == tuple(xb.shape) and tuple(ya.shape) == tuple(yb.shape)
        assert str(ya.dtype).split(".")[-1] == str(yb.dtype).split(".")[-1]
    if not kw.get("shuffle"):
        assert [int(v) for _, y in a for v in np.atleast_1d(y.numpy())] == \
            [int(v) for _, y in b for v in np.atleast_1d(y.numpy())]


def test_dataloader_options_and_errors():
    ds = fd.TensorDataset(fg.arange(10))
    fg.manual_seed(0)
    first = [b[0].tolist() for b in fd.DataLoader(ds, batch_size=4, shuffle=True)]
    fg.manual_seed(0)
    assert first == [b[0].tolist() for b in fd.DataLoader(ds, batch_size=4, shuffle=True)]
    assert sorted(sum(first, [])) == list(range(10))
    g = fg.Generator().manual_seed(1)
    assert len(list(fd.DataLoader(ds, batch_size=4, shuffle=True, generator=g))) == 3
    loader = fd.DataLoader(ds, batch_sampler=fd.BatchSampler(range(10), 5, False))
    assert [b[0].tolist() for b in loader] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    loader = fd.DataLoader(ds, sampler=[9, 8], collate_fn=lambda batch: len(batch), batch_size=2)
    assert list(loader) == [2]
    with pytest.warns(UserWarning, match="num_workers"):
        loader = fd.DataLoader(ds, batch_size=5, num_workers=2)
    assert len(list(loader)) == 2
    tds = td.TensorDataset(torch.arange(10))
    same_error(lambda: fd.DataLoader(ds, sampler=[1], shuffle=True), lambda: td.DataLoader(tds, sampler=[1], shuffle=True))
    same_error(lambda: fd.DataLoader(ds, batch_sampler=[[1]], batch_size=2),
               lambda: td.DataLoader(tds, batch_sampler=[[1]], batch_size=2))
    same_error(lambda: fd.DataLoader(ds, batch_size=None, drop_last=True),
               lambda: td.DataLoader(tds, batch_size=None, drop_last=True))
    same_error(lambda: fd.DataLoader(ds, num_workers=-1), lambda: td.DataLoader(tds, num_workers=-1))
    built = fd.DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        built.batch_size = 3


class Stream(fd.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_iterable_dataset():
    for kw in (dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None)):
        ours = fd.DataLoader(Stream(7), **kw)
        theirs = td.DataLoader(StreamT(7), **kw)
        assert len(ours) == len(theirs)
        _collated_equal(list(ours), list(theirs))
    same_error(lambda: fd.DataLoader(Stream(3), shuffle=True), lambda: td.DataLoader(StreamT(3), shuffle=True))
    assert list(Stream(2) + Stream(3)) == [0, 1, 0, 1, 2]


class StreamT(td.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_training_loop_over_dataloader():
    fg.manual_seed(0)
    x = fg.randn(64, 3)
    y = x @ fg.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    model = fg.nn.Linear(3, 1)
    opt = fg.optim.SGD(model.parameters(), lr=0.1)
    loader = fd.DataLoader(fd.TensorDataset(x, y), batch_size=16, shuffle=True)
    losses = []
    for _ in range(30):
        for xb, yb in loader:
            opt.zero_grad()
            loss = fg.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            opt.step()
        losses.append(loss.item())
    assert losses[-1] < 1e-3 < losses[0]


# --------------------------------------------------------------------- save / load
def _roundtrip(obj, **load_kw):
    buffer = io.BytesIO()
    fg.save(obj, buffer)
    buffer.seek(0)
    return fg.load(buffer, **load_kw)


def test_tensors_round_trip():
    for t in (fg.randn(3, 4), fg.arange(5), fg.tensor([True, False]), fg.tensor(2.5, dtype=fg.float64),
              fg.randn(4, 3).t(), fg.zeros(0, 3)):
        back = _roundtrip(t)
        assert back.dtype is t.dtype and tuple(back.shape) == tuple(t.shape) and back.stride() == t.stride()
        assert np.array_equal(back.numpy(), t.numpy())
    leaf = fg.ones(2, requires_grad=True)
    a, b = _roundtrip([leaf, leaf * 2])
    assert a.requires_grad and a.is_leaf and b.requires_grad and b.is_leaf       # (as torch)
    p = _roundtrip(fg.nn.Parameter(fg.ones(3)))
    assert type(p) is fg.nn.Parameter and p.requires_grad


def test_shared_memory_kept():
    base = fg.arange(6.0)
    x, y, z = _roundtrip([base, base[2:], base.view(2, 3).t()])
    y[0] = 100.0
    assert x[2].item() == 100.0 and z[2, 0].item() == 100.0
    tb = torch.arange(6.0)
    buffer = io.BytesIO()
    torch.save([tb, tb[2:]], buffer)
    buffer.seek(0)
    tx, ty = torch.load(buffer)
    ty[0] = 100.0
    assert tx[2].item() == 100.0     # (torch keeps it so too)


def test_state_dicts_and_modules(tmp_path):
    model = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.ReLU(), fg.nn.Linear(4, 2))
    opt = fg.optim.Adam(model.parameters(), lr=0.01)
    model(fg.randn(5, 3)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    fg.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 3}, path)
    ckpt = fg.load(path, map_location="cpu")
    assert ckpt["epoch"] == 3 and isinstance(ckpt["model"], collections.OrderedDict)
    fresh = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.ReLU(), fg.nn.Linear(4, 2))
    fresh.load_state_dict(ckpt["model"])
    for a, b in zip(fresh.parameters(), model.parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    opt2 = fg.optim.Adam(fresh.parameters(), lr=0.01)
    opt2.load_state_dict(ckpt["opt"])
    assert opt2.state_dict()["state"][0]["step"].item() == 1
    fg.save(model, str(path))
    whole = fg.load(str(path), weights_only=False)
    assert isinstance(whole, fg.nn.Sequential)
    assert np.array_equal(whole(fg.ones(1, 3)).detach().numpy(), model(fg.ones(1, 3)).detach().numpy())
    assert pickle.loads(pickle.dumps(fg.ones(2))).tolist() == [1.0, 1.0]


class Foo:
    pass


class FooT:
    pass


def test_weights_only_refuses_other_classes():
    buffer = io.BytesIO()
    fg.save({"a": Foo()}, buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError) as ours:
        fg.load(buffer)
    tbuffer = io.BytesIO()
    torch.save({"a": FooT()}, tbuffer)
    tbuffer.seek(0)
    with pytest.raises(pickle.UnpicklingError) as theirs:
        torch.load(tbuffer)
    name = f"{__name__}.Foo"
    expected = str(theirs.value).replace(f"{__name__}.FooT", name).replace("torch.serialization",
                                                                            "fusegrad.serialization")
    assert str(ours.value) == expected
    buffer.seek(0)
    assert isinstance(fg.load(buffer, weights_only=False)["a"], Foo)
    buffer.seek(0)
    with fg.serialization.safe_globals([Foo]):
        assert isinstance(fg.load(buffer)["a"], Foo)
    with pytest.raises(RuntimeError, match="CUDA"):
        _roundtrip(fg.ones(1), map_location="cuda")
