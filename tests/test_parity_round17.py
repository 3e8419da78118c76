"""Parity round 17 (the random-program generators on new seeds; torch 2.13 is the oracle): a
0-d tensor written through masked_fill or a mask raises torch's overflow error where its value
does not fit, a compiled detach() keeps its source's layout, fills through two stacked expands
compile, and a loss over zero classes whose targets are all ignored is torch's nan / 0."""
from __future__ import annotations

import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

from parity_support import exact_outcome as outcome  # noqa: E402  (after the torch check, as its users)

MODES = ["eager", "compiled"]


def _run(mode, fn, *args):
    return fg.compile(fn)(*args) if mode == "compiled" else fn(*args)


# ------------------------------------------------------------------ a 0-d value that does not fit
VALUE_CASES = [("int64", [1, -2, 3], "float32", float("nan")), ("int64", [1, -2, 3], "float64", float("inf")),
               ("float32", [1.0, -2.0, 3.0], "float64", 1e300), ("int64", [1, -2, 3], "float32", 2.5),
               ("float32", [1.0, -2.0, 3.0], "float64", -1e30)]
WRITES = {
    "masked_fill": lambda x, v: x.masked_fill(x < 0, v),
    "masked_fill_": lambda x, v: x.masked_fill_(x < 0, v),
    "mask_setitem": lambda x, v: x.__setitem__(x < 0, v) or x,
    "all_false_mask": lambda x, v: x.masked_fill(x > 100, v),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize("dtype, data, value_dtype, value", VALUE_CASES)
def test_a_zero_d_value_is_checked_as_the_number_torch_fills_with(mode, write, dtype, data, value_dtype, value):
    """torch fills with value.item(): NaN into int64 raises, not the minimum int64."""
    def case(L, compiled):
        x = L.tensor(data, dtype=getattr(L, dtype))
        v = L.tensor(value, dtype=getattr(L, value_dtype))
        fn = WRITES[write]
        return _run(mode, fn, x, v) if compiled else fn(x, v)
    assert outcome(lambda: case(fg, True)) == outcome(lambda: case(torch, False))


# ------------------------------------------------------------------ detach() layout inside fg.compile
DETACHED = {
    "t_detach_strides": lambda x: x.t().detach().stride(),
    "t_data_strides": lambda x: x.t().data.stride(),
    "t_detach_contiguous": lambda x: x.t().detach().is_contiguous(),
    "slice_detach_strides": lambda x: x[:, ::2].detach().stride(),
    "t_detach_t_view": lambda x: x.t().detach().t().view(-1) * 1,
    "t_detach_view": lambda x: x.t().detach().view(-1) * 1,
    "t_detach_requires_grad_view": lambda x: x.t().detach().requires_grad_().view(-1) * 1,
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(DETACHED))
def test_a_detached_view_keeps_its_layout(mode, name):
    fn = DETACHED[name]

    def ours():
        r = _run(mode, fn, fg.tensor([[1.0, 2, 3], [4, 5, 6]]))
        return r if isinstance(r, fg.Tensor) else fg.tensor(r)

    def theirs():
        r = fn(torch.tensor([[1.0, 2, 3], [4, 5, 6]]))
        return r if isinstance(r, torch.Tensor) else torch.tensor(r)
    assert outcome(ours) == outcome(theirs)


# ------------------------------------------------------------------ fills through stacked expands
FILLS = {    # (each returns the base after the write)
    "zero_": (lambda x: (x.expand(2).expand(3, 2).zero_(), x)[1], [3.0]),
    "fill_": (lambda x: (x.expand(2).expand(3, 2).fill_(7), x)[1], [3.0]),
    "expand_as": (lambda x: (x.expand_as(x).expand(2).zero_(), x)[1], 2.0),
    "reshaped": (lambda x: (x.reshape(1, 1).expand(1, 2).expand(3, 1, 2).fill_(-1), x)[1], [5.0]),
    "slice_of_two": (lambda x: (x.expand(3, 2).expand(2, 3, 2)[0, 1].fill_(4), x)[1], [[1.0, 2.0]]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(FILLS))
def test_a_fill_through_two_expands_writes_the_base(mode, name):
    fn, data = FILLS[name]
    assert outcome(lambda: _run(mode, fn, fg.tensor(data))) == outcome(lambda: fn(torch.tensor(data)))


# ------------------------------------------------------------------ no classes, every target ignored
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_a_loss_over_zero_classes_with_every_target_ignored(mode, loss, reduction, weighted):
    def case(L, compiled):
        x = L.zeros(2, 0, requires_grad=True)
        weight = L.ones(0) if weighted else None

        def f(x):
            out = getattr(L.nn.functional, loss)(x, L.tensor([1, 1]), weight=weight, ignore_index=1,
                                                  reduction=reduction)
            out.sum().backward()
            return out
        out = _run(mode, f, x) if compiled else f(x)
        return out, x.grad
    ours, theirs = case(fg, True), case(torch, False)
    assert outcome(lambda: ours[0]) == outcome(lambda: theirs[0])
    assert tuple(ours[1].shape) == tuple(theirs[1].shape)
