"""The executor's buffer pool (ir/buffers.py): compiled programs reuse the memory of
arrays nobody holds any more, and never hand out memory that someone still holds."""
import gc

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.ir import buffers
from fusegrad.ir.buffers import MAX_POOLED_BYTES, MIN_POOLED_BYTES, BufferPool

BIG = MIN_POOLED_BYTES // 4 * 2          # float32 elements: twice the pooled minimum


@pytest.fixture
def pool_on(monkeypatch):
    """The process's pool enabled whatever FUSEGRAD_BUFFER_POOL_MB says (tests of reuse)."""
    monkeypatch.setattr(buffers.POOL, "limit_bytes", 512 << 20)


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_empty_gives_the_requested_array():
    pool = BufferPool(1 << 30)
    a = pool.empty((2, BIG // 2), np.float32)
    assert a.shape == (2, BIG // 2) and a.dtype == np.float32
    assert a.flags.c_contiguous and a.flags.writeable and a.flags.aligned


def test_a_dropped_array_is_reused_and_a_held_one_never():
    pool = BufferPool(1 << 30)
    a = pool.empty((BIG,), np.float32)
    first = _address(a)
    b = pool.empty((BIG,), np.float32)            # a is alive: new memory
    assert _address(b) != first and pool.reused == 0
    del a
    c = pool.empty((4, BIG // 4), np.float32)      # same element count and dtype: a's buffer
    assert _address(c) == first and pool.reused == 1
    assert pool.held_bytes == 2 * BIG * 4


@pytest.mark.parametrize("keep", [lambda a: a.T, lambda a: a[1:], lambda a: a.reshape(-1),
                                  lambda a: fg.from_numpy(a), lambda a: memoryview(a)],
                         ids=["transpose", "slice", "reshape", "tensor", "memoryview"])
def test_a_view_of_an_array_keeps_its_buffer(keep):
    pool = BufferPool(1 << 30)
    a = pool.empty((2, BIG // 2), np.float32)
    a[...] = 7.0
    view = keep(a)
    del a
    gc.collect()
    b = pool.empty((2, BIG // 2), np.float32)
    b[...] = -1.0
    assert pool.reused == 0
    assert (np.asarray(view.numpy() if isinstance(view, fg.Tensor) else view) == 7.0).all()


def test_dtypes_and_sizes_have_their_own_buffers():
    pool = BufferPool(1 << 30)
    a = pool.empty((BIG,), np.float32)
    del a
    b = pool.empty((BIG,), np.int32)                # same bytes, other dtype: not a's buffer
    c = pool.empty((BIG // 2,), np.float64)         # same bytes, other count
    assert pool.reused == 0 and b.dtype == np.int32 and c.dtype == np.float64


def test_small_and_huge_arrays_are_not_pooled():
    pool = BufferPool(1 << 30)
    for _ in range(3):
        pool.empty((16,), np.float32)
        pool.empty((MAX_POOLED_BYTES // 4 + 1,), np.float32)
    assert pool.held_bytes == 0 and pool.reused == 0


def test_the_limit_releases_free_buffers_then_falls_back():
    nbytes = BIG * 4
    pool = BufferPool(2 * nbytes)
    a = pool.empty((BIG,), np.float32)
    b = pool.empty((BIG,), np.int32)
    c = pool.empty((BIG,), np.uint32)               # over the limit, nothing free: plain np.empty
    # (buckets are keyed by element count, dtype and whether on huge pages)
    assert pool.held_bytes == 2 * nbytes and (BIG, np.dtype(np.uint32), False) not in pool._buckets
    del b, c
    d = pool.empty((BIG,), np.uint32)               # b's free buffer is released to make room
    assert pool.held_bytes == 2 * nbytes and (BIG, np.dtype(np.int32), False) not in pool._buckets
    assert pool._buckets[(BIG, np.dtype(np.uint32), False)][0].base is None and d.base is not None
    assert a.shape == (BIG,)


def test_a_zero_limit_turns_the_pool_off():
    pool = BufferPool(0)
    pool.empty((BIG,), np.float32)
    assert pool.held_bytes == 0


def test_clear_caches_releases_free_buffers(pool_on):
    keep = buffers.POOL.empty((BIG + 8,), np.float32)
    buffers.POOL.empty((BIG + 16,), np.float32)
    fg.clear_caches()
    sizes = [flat.size for bucket in buffers.POOL._buckets.values() for flat in bucket]
    assert BIG + 8 in sizes and BIG + 16 not in sizes
    del keep


# ---------------------------------------------------------------- compiled programs


def _fresh(n, seed):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def test_compiled_results_kept_by_the_caller_are_never_overwritten(pool_on):
    f = fg.compile(lambda x, w: ((x * 2).exp(), (x.reshape(64, -1) @ w).tanh()))
    w = fg.from_numpy(_fresh(BIG // 64 * 64, 9).reshape(BIG // 64, 64))
    kept = []
    for k in range(4):
        x = _fresh(BIG, k)
        kept.append((x, f(fg.from_numpy(x), w)))
    before = buffers.POOL.reused
    for _ in range(3):           # results dropped at once: their buffers are reused
        f(fg.from_numpy(_fresh(BIG, 99)), w)
    assert buffers.POOL.reused > before
    for x, (e, t) in kept:
        np.testing.assert_allclose(e.numpy(), np.exp(x * 2), rtol=2e-6)
        np.testing.assert_allclose(t.numpy(), np.tanh(x.reshape(64, -1) @ w.numpy()), rtol=2e-5, atol=1e-6)


def test_values_saved_for_a_later_backward_are_never_overwritten(pool_on):
    f = fg.compile(lambda x: (x.sin() * x).exp())
    xs = [fg.tensor(_fresh(BIG, k) * 0.3, requires_grad=True) for k in range(3)]
    outs = [f(x) for x in xs]
    for _ in range(3):
        f(fg.tensor(_fresh(BIG, 50), requires_grad=True))      # calls in between
    for x, y in zip(xs, outs):
        y.sum().backward()
        v = x.detach().numpy().astype(np.float64)
        expected = np.exp(np.sin(v) * v) * (np.cos(v) * v + np.sin(v))
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-4, atol=1e-6)


def _mse_mlp():
    """A small MLP's regression training step (SGD with momentum): the model and the step."""
    fg.manual_seed(0)
    model = fg.nn.Sequential(fg.nn.Linear(64, 256), fg.nn.ReLU(), fg.nn.Linear(256, 1))
    opt = fg.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = fg.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return model, step


def _mse_data():
    return fg.from_numpy(_fresh(512 * 64, 1).reshape(512, 64)), fg.from_numpy(_fresh(512, 2).reshape(512, 1))


def test_a_training_loop_reaches_a_steady_pool(pool_on):
    """After the first steps a compiled training step allocates no new pooled memory, and it
    computes what eager steps compute."""
    x, y = _mse_data()
    eager_model, eager_step = _mse_mlp()
    model, step = _mse_mlp()
    step = fg.compile(step)
    for k in range(6):
        if k == 3:
            held = buffers.POOL.held_bytes
        np.testing.assert_allclose(step(x, y).item(), eager_step(x, y).item(), rtol=1e-5)
    assert buffers.POOL.held_bytes == held
    for p, q in zip(model.parameters(), eager_model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_pooled_results_pickle_and_copy_as_tensors(pool_on):
    import copy
    import pickle
    f = fg.compile(lambda x: (x * 3).reshape(2, -1))
    x = fg.from_numpy(_fresh(BIG, 5))
    y = f(x)
    expected = (x.numpy() * 3).reshape(2, -1)
    for z in (pickle.loads(pickle.dumps(y)), copy.deepcopy(y), copy.copy(y)):
        assert z.dtype == fg.float32 and z.shape == (2, BIG // 2) and z.storage_offset() == 0
        np.testing.assert_array_equal(z.numpy(), expected)


# ---------------------------------------------------------------- eager ufunc results


def test_eager_ufunc_results_come_from_the_pool_and_stay_the_callers(pool_on):
    x = fg.from_numpy(_fresh(BIG, 21))
    kept = [x * 2.0, x > 0, (x * 3).exp()]       # float32, bool and a chain, all held
    before = buffers.POOL.reused
    for _ in range(4):
        (x - 1.0).tanh()                         # results dropped at once: reused
    assert buffers.POOL.reused > before
    v = x.numpy()
    np.testing.assert_array_equal(kept[0].numpy(), v * np.float32(2.0))
    np.testing.assert_array_equal(kept[1].numpy(), v > 0)
    np.testing.assert_allclose(kept[2].numpy(), np.exp(v * 3), rtol=1e-6)
    assert kept[1].dtype == fg.bool and kept[0].dtype == fg.float32


@pytest.mark.parametrize("expr", [lambda x, i: x + i, lambda x, i: i * 2, lambda x, i: i / 2,
                                  lambda x, i: (i > 0) & (x > 0), lambda x, i: x.double() * 2],
                         ids=["float+int", "int", "int true divide", "bool and", "float64"])
def test_eager_results_keep_torchs_dtypes_whatever_the_pool_does(expr):
    torch = pytest.importorskip("torch", reason="torch is the oracle for result dtypes")
    x = _fresh(BIG, 22)
    i = np.arange(BIG, dtype=np.int64) % 7 - 3
    got = expr(fg.from_numpy(x), fg.from_numpy(i))
    want = expr(torch.from_numpy(x), torch.from_numpy(i))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_eager_training_with_the_pool_matches_without(monkeypatch):
    """Eager steps of a small MLP compute the same bits with pooled results as with fresh ones."""
    def run():
        model, step = _mse_mlp()
        x, y = _mse_data()
        losses = [step(x, y).item() for _ in range(4)]
        return losses, [p.detach().numpy().copy() for p in model.parameters()]
    pooled = run()
    monkeypatch.setattr(buffers.POOL, "limit_bytes", 0)
    fresh = run()
    assert pooled[0] == fresh[0]
    for a, b in zip(pooled[1], fresh[1]):
        np.testing.assert_array_equal(a, b)


def _ref_into_cases():
    rng = np.random.default_rng(30)
    x = rng.standard_normal((256, 128)).astype(np.float32)
    x[0, :4] = [-0.0, 0.0, np.nan, -np.inf]
    y = np.tanh(rng.standard_normal((256, 128))).astype(np.float32)
    g = rng.standard_normal((256, 128)).astype(np.float32)
    m1, m2 = rng.standard_normal((256, 64)).astype(np.float32), rng.standard_normal((64, 128)).astype(np.float32)
    b = rng.standard_normal(128).astype(np.float32)
    g[1, :6] = [-0.0, 0.0, np.nan, np.inf, -np.inf, -2.0]
    r = np.maximum(x, 0)
    r[1, :6] = [0.0, np.nan, 0.0, -1.0, 3.0, -0.0]
    target, classes = rng.integers(0, 128, 256), np.arange(128)
    target[::7] = -100                       # ignored samples
    return {"relu": [x], "sigmoid": [x * 40], "tanh_backward": [g, y], "sigmoid_backward": [g, (y + 1) / 2],
            "threshold_backward": [g, r], "threshold_backward_f64": [g.astype(np.float64), r.astype(np.float64)],
            "addmm": [b, m1, m2], "matmul": [m1, m2], "maximum": [g, r], "minimum": [g, r], "softmax": [x], "log_softmax": [x],
            "softmax_backward_data": [g, y], "log_softmax_backward_data": [g, y],
            "log_softmax_f64": [x.astype(np.float64)],
            "nll_loss_backward": [np.float32(0.5) * np.ones((), np.float32), x, target, classes],
            "nll_loss_backward_f64": [g[:, 0].astype(np.float64), x.astype(np.float64), target, classes,
                                      rng.random(128)]}


_REF_INTO_ATTRS = {"softmax": {"axis": 1}, "log_softmax": {"axis": 0}, "softmax_backward_data": {"axis": 1},
                   "log_softmax_backward_data": {"axis": 0}, "log_softmax_f64": {"axis": 1},
                   "nll_loss_backward": {"reduction": "mean", "ignore_index": -100},
                   "nll_loss_backward_f64": {"reduction": "none", "ignore_index": -100}}


@pytest.mark.parametrize("op", sorted(_ref_into_cases()))
def test_each_ref_into_writes_exactly_what_its_reference_returns(op):
    """The op table's `ref_into` (used for pooled results) computes its reference's bits."""
    from fusegrad.ir import OPS
    arrays, attrs = _ref_into_cases()[op], _REF_INTO_ATTRS.get(op, {})
    op = op.removesuffix("_f64")
    with np.errstate(all="ignore"):
        want = OPS[op].ref(*arrays, **attrs)
        out = np.full(want.shape, 7.0, want.dtype)
        OPS[op].extra["ref_into"](out, *arrays, **attrs)
    np.testing.assert_array_equal(out, want)
    assert np.array_equal(np.signbit(out), np.signbit(want))


def test_every_ref_into_is_checked_above():
    from fusegrad.ir import OPS
    assert {name for name, op in OPS.items() if "ref_into" in op.extra} == \
        {case.removesuffix("_f64") for case in _ref_into_cases()}


@pytest.mark.parametrize("fn", ["tanh", "sigmoid", "relu"])
def test_eager_backward_of_large_activations_matches_torch(pool_on, fn):
    """Eager forward and backward through large activations (their results and gradients come
    from the pool: the eager plan and the engine's StraightLine) give torch's values."""
    torch = pytest.importorskip("torch", reason="torch is the oracle")
    a = _fresh(BIG * 2, 31).reshape(64, -1)
    g = _fresh(BIG * 2, 32).reshape(64, -1)
    for _ in range(2):              # the second round reuses the first's buffers
        x, tx = fg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        y, ty = getattr(x, fn)() * 3, getattr(tx, fn)() * 3
        y.backward(fg.from_numpy(g))
        ty.backward(torch.from_numpy(g))
        # (NumPy's and torch's tanh differ by an ulp or so; 1 - y*y amplifies that near |y| = 1)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_relu_and_its_gradient_keep_torchs_bits():
    """relu (np.maximum, -0.0 copied back) and threshold_backward (integer masking) are
    where(x < 0, 0, x) and where(result <= 0, 0, grad) bit for bit: signed zeros, NaN, inf."""
    from fusegrad.ir import OPS
    cases = _ref_into_cases()
    for dtype in (np.float32, np.float64):
        x = cases["relu"][0].astype(dtype)
        got = OPS["relu"].ref(x)
        want = np.where(x < 0, dtype(0), x)
        assert np.array_equal(got.view(f"i{x.itemsize}"), want.view(f"i{x.itemsize}"))
        g, r = (a.astype(dtype) for a in cases["threshold_backward"])
        got = OPS["threshold_backward"].ref(g, r)
        want = np.where(r <= 0, dtype(0), g)
        assert np.array_equal(got.view(f"i{g.itemsize}"), want.view(f"i{g.itemsize}"))


HUGE = buffers.HUGE_PAGE_BYTES // 4      # float32 elements of one huge page


@pytest.mark.skipif(not buffers._HUGE_PAGES, reason="no transparent huge pages here (not Linux, or turned off)")
def test_huge_page_buffers_are_aligned_mappings_of_their_own():
    pool = BufferPool(1 << 30)
    a = pool.empty((3, HUGE), np.float32, huge_pages=True)
    assert _address(a) % buffers.HUGE_PAGE_BYTES == 0      # (its own mapping, at a 2 MiB boundary)
    assert a.flags.c_contiguous and a.flags.writeable and not isinstance(a.base.base, np.ndarray)
    a[...] = 7.0
    assert pool.holds(a.base) and float(a.sum()) == 7.0 * a.size
    b = pool.empty((3 * HUGE,), np.float32)                 # eager's buffers: glibc's, a bucket of their own
    assert _address(b) != _address(a) and pool.reused == 0
    first = _address(a)
    del a
    c = pool.empty((3 * HUGE,), np.float32, huge_pages=True)
    assert _address(c) == first and pool.reused == 1
    small = pool.empty((HUGE // 2,), np.float32, huge_pages=True)     # below 2 MiB: NumPy's memory
    assert small.base.base is None


def test_a_parameter_over_a_compiled_result_is_updated_as_any_other(pool_on):
    # A compiled call's large result lives in a huge-page buffer of the pool (a flat array over
    # a mapping); a parameter made of it is still written in place by a compiled step
    # (runtime/compile._owns_memory), and its values are those of eager steps.
    def make(run):
        w = run(lambda: fg.ones(512, 1024) * 0.5)().requires_grad_()
        opt = fg.optim.SGD([w], lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = (w * x).tanh().sum()
            loss.backward()
            opt.step()
            return loss
        return w, run(step)
    x = fg.from_numpy(np.random.default_rng(0).standard_normal((512, 1024)).astype(np.float32))
    (w_c, step_c), (w_e, step_e) = make(fg.compile), make(lambda f: f)
    memory = _address(w_c.detach().numpy())
    for _ in range(3):
        np.testing.assert_allclose(step_c(x).item(), step_e(x).item(), rtol=1e-5)
    np.testing.assert_allclose(w_c.detach().numpy(), w_e.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert _address(w_c.detach().numpy()) == memory         # (updated in its own memory)
