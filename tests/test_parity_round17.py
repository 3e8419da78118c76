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


# ------------------------------------------------------------------ F.linear's paths (torch's at::linear)
LINEAR_SHAPES = [((4,), (4,), ()), ((5, 2, 4), (4,), ()), ((5, 2, 4), (3, 4), (2, 3)), ((5, 2, 4), (3, 4), ()),
                 ((4,), (3, 4), (3,)), ((2, 4), (3, 4), (3,)), ((3, 5, 2, 4), (3, 4), (2, 3)), ((2, 4), (4,), ()),
                 ((4,), (3, 4), (2, 3)), ((4,), (5,), ()), ((4,), (4,), (2, 2)), ((3, 5, 2, 4), (4,), (2,)),
                 ((5, 2, 4), (3, 4), (1, 3)), ((5, 2, 4), (3, 4), (2, 1)), ((5, 2, 4), (3, 4), (1, 1)),
                 ((6, 5, 2, 4), (3, 4), (5, 1, 3)), ((2,), (3, 2), (1, 3)), ((5, 2, 4), (1, 4), (3, 1))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("contiguous", [True, False])
@pytest.mark.parametrize("dtypes", [(None, None, None), (None, "float64", None), ("float64", None, None),
                                    (None, None, "float64"), (None, "bool", "bool")])
@pytest.mark.parametrize("x_shape, w_shape, b_shape", LINEAR_SHAPES)
def test_linear_takes_torchs_path_for_each_shape(mode, contiguous, dtypes, x_shape, w_shape, b_shape):
    """A 2-d input, or a contiguous one with a 1-d bias: addmm; else matmul then an in-place
    add of the bias: values, gradients, node names and errors as torch's."""
    x_dtype, w_dtype, b_dtype = dtypes

    def case(L, compiled):
        x = L.ones(x_shape, dtype=getattr(L, x_dtype) if x_dtype else None)
        x = (x.transpose(0, 1) if not contiguous and x.dim() >= 2 else x).requires_grad_(x.dtype.is_floating_point)
        w = L.ones(w_shape, dtype=getattr(L, w_dtype) if w_dtype else None)
        b = L.ones(b_shape, dtype=getattr(L, b_dtype) if b_dtype else None)

        def f(x):
            y = L.nn.functional.linear(x, w, b)
            name = y.grad_fn.name() if y.grad_fn is not None else None
            if y.requires_grad:
                y.sum().backward()
            return y, name
        y, name = _run(mode, f, x) if compiled else f(x)
        return y, name, x.grad
    try:
        theirs = case(torch, False)
    except Exception as exc:        # noqa: BLE001  (the error is the outcome compared)
        with pytest.raises(type(exc)) as ours:
            case(fg, True)
        assert str(ours.value) == str(exc)
        return
    ours = case(fg, True)
    assert outcome(lambda: ours[0]) == outcome(lambda: theirs[0]) and ours[1] == theirs[1]
    assert outcome(lambda: ours[2]) == outcome(lambda: theirs[2])


# ------------------------------------------------------------------ writes and memory shared with the value
OVERLAPS = {
    "partial": lambda v: v.__setitem__([1, 2], v[:2]),
    "permutation": lambda v: v.__setitem__([2, 0, 1], v),
    "mask_with_itself": lambda v: v.__setitem__(v > 0, v),
    "zero_d_view_by_index": lambda v: v.__setitem__([0], v[0]),
    "shorter_index": lambda v: v.__setitem__([1], v),
    "zero_d_view_by_mask": lambda v: v.__setitem__(v > 1, v[0]),
    "masked_fill_zero_d_view": lambda v: v.masked_fill_(v > 1, v[0]),
    "clamp_int_broadcast_bound": lambda v: v.long().clamp_(L_ones_f64(v)),
}


def L_ones_f64(v):
    return (fg if isinstance(v, fg.Tensor) else torch).ones(4, 3, dtype=(fg if isinstance(v, fg.Tensor)
                                                                         else torch).float64)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(OVERLAPS))
def test_an_index_write_refuses_a_value_sharing_its_memory(mode, name):
    """index_put_ raises on any overlap of the value with what it writes; masked_fill_ and a
    mask write read a 0-d value as a number first; an in-place clamp checks the shape first."""
    write = OVERLAPS[name]

    def run(v, compiled):
        def f(v):
            write(v)
            return v
        return _run(mode, f, v) if compiled else f(v)
    assert outcome(lambda: run(fg.tensor([1.0, 2.0, 3.0]), True)) == \
        outcome(lambda: run(torch.tensor([1.0, 2.0, 3.0]), False))
