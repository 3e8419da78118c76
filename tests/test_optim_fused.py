"""Fused optimizer updates (ir/ops/optim_update.py: sgd_update, adam_update).

The fused path must compute the same bits as the per-op path it replaces
(`Optimizer._fuse_updates = False`), eagerly and compiled; match torch.optim;
trace as one instruction per parameter whose kernels fuse the update into one
loop; recompile nothing from step to step; and bump version counters as
torch's in-place ops do.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import fusegrad as fg
from fusegrad import nn, optim
from fusegrad.ir import OPS, TensorType, float32, float64
from fusegrad.optim import _fused as _fused_original

SHAPES = [(3, 4), (4,)]          # few shapes: every compiled kernel is shared between tests
DTYPES = [fg.float32, fg.float64]

SGD_CONFIGS = [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.1),
    dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    dict(lr=0.05, momentum=0.5, maximize=True),
]
ADAM_CONFIGS = [
    dict(),
    dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05),
    dict(lr=0.01, amsgrad=True),
    dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
    dict(lr=0.01, maximize=True, amsgrad=True, weight_decay=0.01),
    dict(lr=0.01, betas=(0.4, 0.9)),     # 1 - beta1 >= 0.5: torch's lerp takes its other branch
]
CONFIGS = [("SGD", c) for c in SGD_CONFIGS] + [("Adam", c) for c in ADAM_CONFIGS] + [("AdamW", dict(lr=0.01))]


def _grads(steps: int, seed: int = 1) -> list:
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s) for s in SHAPES] for _ in range(steps)]


@pytest.fixture
def kernels_now(monkeypatch):
    """Compiled calls run their kernels from the first call (no tiered reference runs)."""
    monkeypatch.setenv("FUSEGRAD_ASYNC_COMPILE", "0")


def _grad(g: np.ndarray, dtype) -> fg.Tensor:
    """A gradient in Fortran order where it has two dimensions, as a transposed product's is
    (the fused reference reorders it; the values must not change)."""
    return fg.from_numpy(np.asfortranarray(g.astype(dtype.np)))


def _params(dtype) -> list:
    rng = np.random.default_rng(0)
    return [fg.tensor(rng.standard_normal(s), dtype=dtype, requires_grad=True) for s in SHAPES]


def _snapshot(params, opt) -> list:
    """Every parameter and state tensor's values (copies)."""
    out = [p.detach().numpy().copy() for p in params]
    for p in params:
        out += [v.numpy().copy() for _, v in sorted(opt.state[p].items()) if isinstance(v, fg.Tensor)]
    return out


def _run(name, config, dtype, fused: bool, compiled: bool, steps: int = 4) -> list:
    """Snapshots after each of `steps` steps on fixed gradients. Compiled runs take the
    first step eagerly (it creates the state) and compile the rest, so each compiles once."""
    params = _params(dtype)
    opt = getattr(optim, name)(params, **config)
    opt._fuse_updates = fused
    step = fg.compile(lambda: opt.step()) if compiled else opt.step
    snapshots = []
    for k, grads in enumerate(_grads(steps)):
        for p, g in zip(params, grads):
            p.grad = _grad(g, dtype)
        (opt.step if k == 0 else step)()
        snapshots.append(_snapshot(params, opt))
    return snapshots


def _assert_identical(ours, expected):
    assert len(ours) == len(expected)
    for step, (a, b) in enumerate(zip(ours, expected)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and np.array_equal(x, y), f"step {step + 1} differs"


# ------------------------------------------------------------------ bit identity with the per-op path
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name, config", CONFIGS, ids=[f"{n}-{c}" for n, c in CONFIGS])
def test_fused_eager_is_bit_identical_to_per_op(name, config, dtype):
    _assert_identical(_run(name, config, dtype, True, False), _run(name, config, dtype, False, False))


@pytest.mark.parametrize("name, config", [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
                                          ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
                                          ("AdamW", dict(lr=0.01))], ids=["sgd", "adam", "adamw"])
def test_fused_eager_layouts_do_not_change_values(name, config):
    """A Fortran-order parameter with C-order gradients (the references compute each result
    in its destination's layout)."""
    runs = []
    for fused in (True, False):
        rng = np.random.default_rng(0)
        p = fg.from_numpy(np.asfortranarray(rng.standard_normal((5, 3)))).requires_grad_()
        opt = getattr(optim, name)([p], **config)
        opt._fuse_updates = fused
        for _ in range(3):
            p.grad = fg.tensor(rng.standard_normal((5, 3)))
            opt.step()
        runs.append([_snapshot([p], opt)])
    _assert_identical(*runs)


COMPILED_CONFIGS = [
    ("SGD", dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.1, maximize=True), fg.float32),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01), fg.float64),
    ("SGD", dict(lr=0.1), fg.float32),
    ("Adam", dict(lr=0.01, maximize=True, amsgrad=True, weight_decay=0.01), fg.float32),
    ("Adam", dict(lr=0.01, betas=(0.4, 0.9), weight_decay=0.1, decoupled_weight_decay=True), fg.float32),
    ("Adam", dict(lr=0.01, amsgrad=True), fg.float64),
]


@pytest.mark.parametrize("name, config, dtype", COMPILED_CONFIGS, ids=[f"{n}-{c}-{d}" for n, c, d in COMPILED_CONFIGS])
def test_fused_compiled_is_bit_identical_to_per_op(name, config, dtype, kernels_now):
    fused = _run(name, config, dtype, True, True)
    _assert_identical(fused, _run(name, config, dtype, False, True))
    # and compiled agrees with eager (kernels round as NumPy does up to the last bits)
    for a, b in zip(fused, _run(name, config, dtype, True, False)):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-6 if dtype is fg.float32 else 1e-14, atol=1e-7)


# ------------------------------------------------------------------ against torch.optim
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name, config", CONFIGS, ids=[f"{n}-{c}" for n, c in CONFIGS])
def test_fused_matches_torch_over_ten_steps(name, config, dtype):
    torch = pytest.importorskip("torch", reason="torch.optim is the oracle for the update formulas")
    tdtype = torch.float32 if dtype is fg.float32 else torch.float64
    params = _params(dtype)
    theirs = [torch.tensor(p.detach().numpy().copy(), requires_grad=True) for p in params]
    opt, t_opt = getattr(optim, name)(params, **config), getattr(torch.optim, name)(theirs, **config)
    for grads in _grads(10):
        for p, tp, g in zip(params, theirs, grads):
            p.grad, tp.grad = _grad(g, dtype), torch.tensor(g, dtype=tdtype)
        opt.step()
        t_opt.step()
    tol = 1e-5 if dtype is fg.float32 else 1e-12
    for p, tp in zip(params, theirs):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=tol, atol=tol)
        for key, value in t_opt.state[tp].items():
            np.testing.assert_allclose(opt.state[p][key].numpy(), value.numpy(), rtol=tol, atol=tol, err_msg=key)


# ------------------------------------------------------------------ tracing, kernels, caching
def _tiny_training_step(make_opt):
    """A training step whose learning rate decays every step (a schedule)."""
    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 4))     # weights (3, 4), (4, 3); biases
    opt = make_opt(model.parameters())
    x, y = fg.randn(8, 4), fg.randn(8, 4)

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.param_groups[0]["lr"] *= 0.97
        return loss
    return step, (x, y)


@pytest.mark.parametrize("make_opt", [
    lambda ps: optim.Adam(ps, lr=0.01, amsgrad=True),
    lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
], ids=["adam", "sgd-momentum"])
def test_compiled_steps_recompile_nothing(make_opt, kernels_now):
    """The step count and the learning rate change every step; they enter as runtime
    scalars, never as attributes (which key the program cache)."""
    step, args = _tiny_training_step(make_opt)
    compiled = fg.compile(step)
    eager_step, eager_args = _tiny_training_step(make_opt)
    for _ in range(2):                  # the first step makes the state: a program of its own
        compiled(*args)
        eager_step(*eager_args)
    before = fg.cache_info()
    losses = [compiled(*args).item() for _ in range(20)]
    after = fg.cache_info()
    assert (after.misses, after.kernels_compiled, after.disk_hits) == \
        (before.misses, before.kernels_compiled, before.disk_hits)
    assert after.hits - before.hits >= 20
    expected = [eager_step(*eager_args).item() for _ in range(20)]
    np.testing.assert_allclose(losses, expected, rtol=1e-5)
    assert losses[-1] < losses[0]


def test_update_traces_as_one_op_per_parameter_and_one_kernel_per_shape():
    params = [fg.zeros(s, requires_grad=True) for s in SHAPES + SHAPES[:1]]
    opt = optim.Adam(params, lr=0.01, amsgrad=True)
    for p in params:
        p.grad = fg.ones(p.shape)
    opt.step()                          # eagerly: the state exists before the compiled calls
    compiled = fg.compile(lambda: opt.step())
    report = compiled.explain()
    traced = report.split("## forward program")[1].split("## graph breaks")[0]
    ops = re.findall(r"= (\w+)\[", traced)
    assert ops == ["adam_update"] * len(params)
    # one loop over each parameters' shape, and nothing else (the step count is written as a
    # number; the updates of parameters of one shape read the same hyperparameter inputs, so
    # they share a loop)
    kernels = re.findall(r"^\[\d+\] (\w+)(?: \d+ \(pointwise\) over \[([\d, ]*)\])?", report, re.M)
    assert sorted(kernels) == sorted({("kernel", ", ".join(map(str, p.shape))) for p in params})
    # explain is a dry run: the step count and the parameters are as the eager step left them
    assert [opt.state[p]["step"].item() for p in params] == [1.0] * len(params)
    compiled()
    assert [opt.state[p]["step"].item() for p in params] == [2.0] * len(params)


def test_update_ops_reject_mismatched_operands():
    f32 = lambda *s: TensorType(s, float32)      # noqa: E731
    attrs = dict(amsgrad=False, maximize=False, weight_decay="none", lerp_low=True)
    scalars = [f32()] * 6
    assert OPS["adam_update"].infer([f32(3)] * 4 + scalars, attrs) == [f32(3)] * 3
    with pytest.raises(TypeError, match="gradient and state must have the parameter's type"):
        OPS["adam_update"].infer([f32(3), f32(2), f32(3), f32(3)] + scalars, attrs)
    with pytest.raises(TypeError, match="scalar eps must be"):
        OPS["adam_update"].infer([f32(3)] * 4 + scalars[:4] + [TensorType((), float64), f32()], attrs)
    with pytest.raises(TypeError, match="expected 10 operands"):
        OPS["adam_update"].infer([f32(3)] * 4 + scalars[:5], attrs)
    sgd = dict(maximize=False, weight_decay=False, momentum=False, dampening=False, nesterov=False)
    with pytest.raises(TypeError, match="floating point parameter"):
        OPS["sgd_update"].infer([TensorType((3,), fg.int64)] * 2 + [TensorType((), fg.int64)], sgd)


# ------------------------------------------------------------------ what stays per-op
def test_grad_of_another_dtype_or_shape_takes_the_per_op_path_and_its_errors():
    for make in (lambda ps: optim.Adam(ps, lr=0.1), lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9)):
        results = []
        for fused in (True, False):
            p = fg.zeros(3, requires_grad=True)
            opt = make([p])
            opt._fuse_updates = fused
            p._grad = fg.ones(2)          # (the .grad setter refuses this; torch's optimizers raise too)
            with pytest.raises(RuntimeError) as info:
                opt.step()
            results.append(str(info.value))
        assert results[0] == results[1]


@pytest.mark.parametrize("make", [lambda ps: optim.Adam(ps, lr=0.1, differentiable=True),
                                  lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, differentiable=True)],
                         ids=["adam", "sgd"])
def test_differentiable_steps_record_history(make):
    """A differentiable step records the update's ops (the fused ops have no VJP)."""
    w = fg.tensor([1.0, 2.0], requires_grad=True) * 1
    w.retain_grad()
    opt = make([w])
    (w * w).sum().backward()
    for _ in range(2):                  # (SGD's second step is the one a fused op would take)
        opt.step()
        assert w.grad_fn is not None and w.requires_grad


def test_unusual_hyper_parameters_keep_the_per_op_path(monkeypatch):
    import fusegrad.optim as optim_module
    applied = []

    def spy(op, *args):
        applied.append(op)
        return _fused_original(op, *args)
    monkeypatch.setattr(optim_module, "_fused", spy)
    # (eagerly a lent loop may write the update over the tensors instead: the fused path too)
    real_in_place = optim_module.update_in_place
    monkeypatch.setattr(optim_module, "update_in_place",
                        lambda op, *args: real_in_place(op, *args) and not applied.append(op))
    for make in (lambda ps: optim.Adam(ps, lr=fg.tensor(0.1)),
                 lambda ps: optim.Adam(ps, lr=0.1, betas=(fg.tensor(0.9), fg.tensor(0.99))),
                 lambda ps: optim.Adam(ps, lr=0.1, betas=(0.9, 0.0)),        # 1 - beta2 == 1: add_ skips alpha
                 lambda ps: optim.SGD(ps, lr=fg.tensor(0.1), momentum=0.9),
                 lambda ps: optim.SGD(ps, lr=0.1, momentum=1, nesterov=True)):
        p = fg.tensor([1.0, 2.0], requires_grad=True)
        opt = make([p])
        for _ in range(2):
            p.grad = fg.tensor([0.5, -0.5])
            opt.step()
    assert applied == []
    opt = optim.Adam([p], lr=0.1)
    opt.step()
    assert applied == ["adam_update"]


# ------------------------------------------------------------------ versions
@pytest.mark.parametrize("name, config", [("Adam", dict(amsgrad=True)), ("AdamW", {}),
                                          ("SGD", dict(momentum=0.9))], ids=["adam", "adamw", "sgd"])
def test_versions_count_in_place_ops_as_torch(name, config):
    torch = pytest.importorskip("torch", reason="torch's version counters are the oracle")
    p, tp = fg.zeros(3, requires_grad=True), torch.zeros(3, requires_grad=True)
    opt, t_opt = getattr(optim, name)([p], lr=0.1, **config), getattr(torch.optim, name)([tp], lr=0.1, **config)
    for g in ([1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [0.1, 0.2, 0.3]):
        p.grad, tp.grad = fg.tensor(g), torch.tensor(g)
        opt.step()
        t_opt.step()
    assert p._version == tp._version
    for key, value in t_opt.state[tp].items():
        assert opt.state[p][key]._version == value._version, key


@pytest.mark.parametrize("make", [lambda ps: optim.Adam(ps, lr=0.1), lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9)],
                         ids=["adam", "sgd"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_saved_parameter_modified_by_a_step_raises_at_backward(make, compiled):
    p = fg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    opt = make([p])
    for _ in range(2):                  # the second step is the fused one for SGD with momentum
        p.grad = fg.ones(3)
        y = (p * p).sum()               # MulBackward0 saves p
        (fg.compile(lambda: opt.step()) if compiled else opt.step)()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


def test_two_steps_in_one_compiled_call_count_both(kernels_now):
    """The step count written by the first step is read by the second (no graph break)."""
    results = []
    for compiled in (False, True):
        params = _params(fg.float32)
        opt = optim.Adam(params, lr=0.01)
        for p, g in zip(params, _grads(1)[0]):
            p.grad = _grad(g, fg.float32)

        def two_steps():
            opt.step()
            opt.step()
        fn = fg.compile(two_steps) if compiled else two_steps
        for _ in range(2):
            fn()
        if compiled:
            assert fn.last_run.breaks == []
        results.append(_snapshot(params, opt))
        assert [opt.state[p]["step"].item() for p in params] == [4.0] * len(params)
    for x, y in zip(*results):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("make", [lambda ps: optim.Adam(ps, lr=0.1, amsgrad=True, weight_decay=0.1),
                                  lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)],
                         ids=["adam", "sgd"])
def test_zero_dim_parameter(make):
    runs = []
    for fused in (True, False):
        p = fg.tensor(1.5, requires_grad=True)
        opt = make([p])
        opt._fuse_updates = fused
        for g in (0.3, -0.2, 0.7):
            p.grad = fg.tensor(g)
            opt.step()
        snapshot = _snapshot([p], opt)
        assert all(a.shape == () for a in snapshot)
        runs.append([snapshot])
    _assert_identical(*runs)


def test_references_keep_zero_dim_and_layouts():
    """The references' results have the operands' shape (a reordering must not make a 0-d
    array 1-d) and are never an operand itself."""
    attrs = dict(amsgrad=True, maximize=True, weight_decay="l2", lerp_low=True)
    for shape in ((), (3, 2)):
        tensors = [np.full(shape, v, order="F") for v in (1.0, 0.5, 0.1, 0.2, 0.3)]
        scalars = [np.asarray(v) for v in (0.1, 0.1, 0.9, 0.1, 1.0, 1e-8, -0.01)]
        outs = OPS["adam_update"].ref(*tensors, *scalars, **attrs)
        assert [np.shape(o) for o in outs] == [shape] * 4
        assert not any(o is t for o in outs for t in tensors)
