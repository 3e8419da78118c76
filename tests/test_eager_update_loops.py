"""Eager optimizer updates in one Numba pass (codegen/eager_loops.py's adam_update and
sgd_update forms).

An eager Adam step of a 784-512-512-512-10 MLP spent 5 ms of its 15 in adam_update's NumPy
reference (about ten passes, each into a fresh array) and 1 ms more copying the results back
into the parameter and its moments; torch's whole step took 8. The op's eager form runs one
loop over the elements, and the optimizer's eager step has it write over the tensors' own
memory (ir/ops/optim_update.py: update_in_place): 1.6 -> 0.8 ms.

Oracles: the op's NumPy reference, bit for bit, over every combination of its attributes and
special values; torch's Adam/AdamW for the optimizer's steps, parameters and versions."""
import itertools

import numpy as np
import pytest

import fusegrad as fg
from fusegrad.codegen import eager_loops
from fusegrad.ir.ops import EAGER_FORMS, OPS
from fusegrad.ir.ops.optim_update import IN_PLACE_FORMS, adam_scalars, sgd_scalars

torch = pytest.importorskip("torch", reason="torch is the oracle")

ATTRS = [dict(amsgrad=a, maximize=m, weight_decay=w, lerp_low=low)
         for a, m, w, low in itertools.product([False, True], [False, True], ["none", "l2", "decoupled"],
                                               [False, True])]


@pytest.fixture
def loops_pay(monkeypatch):
    """The loops run whatever the process has done so far (the policy: torch_order_jit.loop_pays)."""
    monkeypatch.setattr(eager_loops, "loop_pays", lambda size: True)


def _operands(attrs, dtype, seed):
    rng = np.random.default_rng(seed)
    n = 5 if attrs["amsgrad"] else 4
    tensors = [rng.standard_normal((300, 70)).astype(dtype) for _ in range(n)]
    tensors[3] = np.abs(tensors[3])
    if attrs["amsgrad"]:
        tensors[4] = np.abs(tensors[4])
        tensors[4].reshape(-1)[10:12] = [np.nan, 0.0]
    tensors[1].reshape(-1)[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    tensors[2].reshape(-1)[5:8] = [np.nan, 1e30, -0.0]
    tensors[3].reshape(-1)[8:10] = [0.0, np.inf]
    scalars = [np.asarray(dtype(x)) for x in rng.uniform(0.01, 0.99, len(adam_scalars(attrs)))]
    return tensors, scalars


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("attrs", ATTRS, ids=lambda a: "-".join(f"{k}={v}" for k, v in a.items()))
def test_the_loops_compute_the_references_bits(attrs, dtype, loops_pay):
    _check_forms("adam_update", *_operands(attrs, dtype, 0), attrs)


def _check_forms(op: str, tensors: list, scalars: list, attrs: dict) -> None:
    """The op's eager form returns the reference's results, bit for bit, and its in-place form
    writes them over the updated tensors (all but the gradient, operand 1)."""
    with np.errstate(all="ignore"):
        expected = OPS[op].ref(*tensors, *scalars, **attrs)
    fresh = EAGER_FORMS[op](*tensors, *scalars, **attrs)
    assert type(fresh) is type(expected)            # (sgd_update without momentum: one array)
    if type(expected) is not tuple:
        fresh, expected = (fresh,), (expected,)
    assert len(fresh) == len(expected)
    for got, want in zip(fresh, expected):
        assert got.dtype == want.dtype and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
    assert IN_PLACE_FORMS[op](*tensors, *scalars, **attrs)
    for got, want in zip(tensors[:1] + tensors[2:], expected):
        np.testing.assert_array_equal(got, want)


def test_the_in_place_form_declines_arrays_that_share_memory(loops_pay):
    attrs = ATTRS[0]
    tensors, scalars = _operands(attrs, np.float32, 1)
    tensors[1] = tensors[2]                          # the gradient is the first moment's memory
    before = [t.copy() for t in tensors]
    assert not IN_PLACE_FORMS["adam_update"](*tensors, *scalars, **attrs)
    for got, want in zip(tensors, before):
        np.testing.assert_array_equal(got, want)
    transposed = [t.T.copy().T for t in tensors]     # (column-major: the fresh form's reference)
    assert not IN_PLACE_FORMS["adam_update"](*transposed, *scalars, **attrs)


SGD_ATTRS = [dict(maximize=mx, weight_decay=wd, momentum=mo, dampening=mo and da, nesterov=mo and ne)
             for mx, wd, mo, da, ne in itertools.product([False, True], repeat=5) if mo or not (da or ne)]


def _sgd_operands(attrs, dtype, seed):
    rng = np.random.default_rng(seed)
    tensors = [rng.standard_normal((300, 70)).astype(dtype) for _ in range(3 if attrs["momentum"] else 2)]
    tensors[1].reshape(-1)[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    tensors[0].reshape(-1)[5:8] = [np.nan, 1e30, -0.0]
    scalars = [np.asarray(dtype(x)) for x in rng.uniform(-0.99, 0.99, len(sgd_scalars(attrs)))]
    return tensors, scalars


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("attrs", SGD_ATTRS, ids=lambda a: "-".join(f"{k}={v}" for k, v in a.items()))
def test_the_sgd_loops_compute_the_references_bits(attrs, dtype, loops_pay):
    tensors, scalars = _sgd_operands(attrs, dtype, 3)
    _check_forms("sgd_update", tensors, scalars, attrs)
    shared = [tensors[0], tensors[0][::-1]] + tensors[2:]           # (the gradient over the parameter)
    assert not IN_PLACE_FORMS["sgd_update"](*shared, *scalars, **attrs)


@pytest.mark.parametrize("name,options", [
    ("Adam", {}), ("Adam", {"amsgrad": True, "weight_decay": 0.1}), ("Adam", {"maximize": True, "betas": (0.4, 0.9)}),
    ("AdamW", {"weight_decay": 0.3}), ("AdamW", {"amsgrad": True, "lr": 0.05}),
    ("SGD", {"lr": 0.05}), ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "dampening": 0.3, "maximize": True}),
])
def test_an_eager_step_writes_the_parameters_in_place_as_the_reference_and_torch(name, options, loops_pay,
                                                                                   monkeypatch):
    """The loop's steps give the reference's bits (the gradients themselves are within float32
    rounding of torch's, not its bits: matmul and tanh), torch's values, state and versions."""
    op = "sgd_update" if name == "SGD" else "adam_update"
    calls = []
    real = IN_PLACE_FORMS[op]
    rng = np.random.default_rng(2)
    w0, x0 = rng.standard_normal((64, 300)).astype(np.float32), rng.standard_normal((8, 64)).astype(np.float32)

    def run(L):
        w = L.from_numpy(w0.copy()).requires_grad_()
        memory = w.detach().numpy()                 # (a view of its memory)
        opt = getattr(L.optim, name)([w], **options)
        x = L.from_numpy(x0)
        for _ in range(3):
            opt.zero_grad()
            (x @ w).tanh().sum().backward()
            opt.step()
        state = opt.state[w]
        return (w.detach().numpy().copy(), memory, w._version,
                {k: (v.numpy().copy(), v._version) for k, v in state.items() if k != "step"})
    monkeypatch.setitem(IN_PLACE_FORMS, op, lambda *a, **k: calls.append(1) or real(*a, **k))
    ours, theirs = run(fg), run(torch)
    monkeypatch.delitem(IN_PLACE_FORMS, op)
    monkeypatch.delitem(EAGER_FORMS, op)
    reference = run(fg)
    assert len(calls) == 3
    np.testing.assert_array_equal(ours[1], ours[0])             # (written over its own memory)
    np.testing.assert_array_equal(ours[0], reference[0])
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)
    assert ours[2] == reference[2] == theirs[2]
    assert ours[3].keys() == theirs[3].keys() == reference[3].keys()     # (no buffer of plain SGD in any)
    for key in ours[3]:
        np.testing.assert_array_equal(ours[3][key][0], reference[3][key][0])
        np.testing.assert_allclose(ours[3][key][0], theirs[3][key][0], rtol=1e-5, atol=1e-6)
        assert ours[3][key][1] == reference[3][key][1] == theirs[3][key][1], key


@pytest.mark.parametrize("op", ["adam_update", "sgd_update"])
def test_a_large_parameter_updates_in_blocks_on_threads_as_the_reference(op, loops_pay, monkeypatch):
    """At least threaded.MIN_ELEMENTS elements: the loop runs in blocks, on threads."""
    from fusegrad.ir import threaded
    monkeypatch.setattr(threaded, "thread_count", lambda: 2)
    attrs = ATTRS[-1] if op == "adam_update" else SGD_ATTRS[-1]
    rng = np.random.default_rng(5)
    n = (5 if attrs["amsgrad"] else 4) if op == "adam_update" else 3
    tensors = [np.abs(rng.standard_normal((1100, 1000))).astype(np.float32) for _ in range(n)]
    assert tensors[0].size >= threaded.MIN_ELEMENTS
    names = adam_scalars(attrs) if op == "adam_update" else sgd_scalars(attrs)
    scalars = [np.asarray(np.float32(x)) for x in rng.uniform(0.01, 0.99, len(names))]
    expected = OPS[op].ref(*tensors, *scalars, **attrs)
    assert IN_PLACE_FORMS[op](*tensors, *scalars, **attrs)
    for got, want in zip(tensors[:1] + tensors[2:], expected):
        np.testing.assert_array_equal(got, want)
