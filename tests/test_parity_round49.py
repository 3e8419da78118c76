"""Round 49 of torch parity: a `.data` of a view made before a compiled call, read by an op
that saves it, and the view's memory written after that through the `.data`, the view, its
base or a second `.data`. torch's node saved the `.data` tensor: its own version counter, so
only a write through it makes the backward raise, and otherwise the backward reads the
memory as the writes left it. Inside fg.compile the `.data` read the value the trace lifted
for the view (Trace._origin_view, on the base's counter): a write through the `.data` was
missed (the backward read the new value where torch raises: alias fuzzer seed 111759) and a
write of the base raised a version error torch does not (seed 111403). Both fixed in
Trace._replaced (the reader's counter decides, alias_counters / reader_counter, and the
saving node reads the memory's latest value: read_as). Later sections: views made under
no_grad written with grad (seed 114118), a leaf's detach() written again after the leaf was
saved (seed 115686), and an in-place op's rebased operand view (seed 116313)."""
import itertools

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

VIEWS = {
    "transpose": lambda s: s.t(),
    "rows": lambda s: s[0:2],
    "view": lambda s: s.view(3, 3),
}

# how the call reads the `.data` d of the view v with a node that saves it
USES = {
    "other-operand": lambda v, d, q: (q @ d),                  # MmBackward0 saves d for q
    "beside-view": lambda v, d, q: (d @ v.t()),                # saves d for v.t()
    "elementwise": lambda v, d, q: (v * d),                    # MulBackward0 saves d for v
}

WRITES = {
    "none": None,
    "through-data": lambda s, v, d: d.mul_(2.0),
    "through-view": lambda s, v, d: v.fill_(-1.0),
    "through-base": lambda s, v, d: s.sub_(3.0),
    "second-data": lambda s, v, d: v.data.add_(1.0),
    "base-then-view": lambda s, v, d: (s.sub_(3.0), v.fill_(-1.0)),
    "base-then-data": lambda s, v, d: (s.sub_(3.0), d.mul_(2.0)),
    "data-then-base": lambda s, v, d: (d.mul_(2.0), s.sub_(3.0)),
    "view-then-base": lambda s, v, d: (v.fill_(-1.0), s.sub_(3.0)),
    "base-twice": lambda s, v, d: (s.sub_(3.0), s.mul_(0.5)),
    "second-data-then-view": lambda s, v, d: (v.data.add_(1.0), v.mul_(2.0)),
}


def _run(L, compiled: bool, view: str, use: str, write: str, closure: bool):
    s = L.tensor([[1.5, 1.75, -1.75], [-0.5, 1.5, 0.25], [-2.0, 0.75, -1.25]], dtype=L.float64,
                 requires_grad=True)
    v0 = VIEWS[view](s)
    q = L.tensor(np.array([[0.5, -1.0, 2.0], [1.0, 0.25, -0.5]])[:, :v0.shape[0]], dtype=L.float64,
                 requires_grad=True)

    def f(v, base):
        v = v0 if closure else v
        d = v.data
        t = USES[use](v, d, q)
        if WRITES[write] is not None:
            with L.no_grad():
                WRITES[write](base, v, d)
        return (t * t).sum()

    try:
        out = (fg.compile(f) if compiled else f)(v0, s)
        out.backward()
    except RuntimeError as error:
        return ("error", str(error))
    return ("grads",) + tuple(None if g is None else g.tolist() for g in (s.grad, q.grad))


# Known: a second .data of the view written, then the view itself, where the call also read the
# view with grad: the saved .data's value is the memory's after the .data write, which the view
# holds grafted onto its history; the view's write marks that graft stale on the base's counter,
# and the backward raises the version error torch does not (loud, not a wrong value).
KNOWN = {("second-data-then-view", "beside-view"), ("second-data-then-view", "elementwise")}

CASES = [pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason="a false version error: see KNOWN"))
         if (case[2], case[1]) in KNOWN else case
         for case in itertools.product(VIEWS, USES, WRITES, ("argument", "closure"))]


@pytest.mark.parametrize("view,use,write,how", CASES)
def test_data_of_an_outside_view_saved_then_written_compiled(view, use, write, how):
    _compare(view, use, write, how, compiled=True)


@pytest.mark.parametrize("view,use,write,how", itertools.product(VIEWS, USES, WRITES, ("argument", "closure")))
def test_data_of_an_outside_view_saved_then_written_eagerly(view, use, write, how):
    _compare(view, use, write, how, compiled=False)


def _compare(view, use, write, how, compiled):
    theirs = _run(torch, False, view, use, write, how == "closure")
    ours = _run(fg, compiled, view, use, write, how == "closure")
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "error":
        assert ours[1] == theirs[1]
    else:
        for a, b in zip(ours[1:], theirs[1:]):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# ---- a view made under no_grad, written in place with grad enabled by a value that requires grad
# torch refuses it ("A view was created in no_grad mode and is being modified inplace ...") before
# writing anything, whether or not its base requires grad; inside fg.compile the write went through
# and a later use raised another error with the memory changed (alias fuzzer seed 114118).

NO_GRAD_WRITES = {
    "sub_": lambda a, w: a.sub_(w.sum()),
    "copy_": lambda a, w: a.copy_(w),
    "mul_": lambda a, w: a.mul_(w),
    "setitem": lambda a, w: a.__setitem__(slice(0, 2), w[1:]),
    "sub_-no-grad-value": lambda a, w: a.sub_(w.detach()),
}


def _no_grad_view_written(L, compiled: bool, where: str, base_grad: bool, write: str):
    s0 = L.tensor([[-1.0, 1.25], [1.25, 1.5], [-0.75, -1.25]], requires_grad=base_grad)
    w = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with L.no_grad():
        s1 = s0.t()[1]

    def f(a, x):
        if where == "made-in-call":
            with L.no_grad():
                a = x.t()[1]
        NO_GRAD_WRITES[write](a, w)
        return (a * 2).sum()
    try:
        out = (fg.compile(f) if compiled else f)(s1, s0)
        result = ("value", out.tolist())
    except RuntimeError as error:
        result = ("error", str(error))
    return result, s0.tolist(), s0._version


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("where", ["made-before", "made-in-call"])
@pytest.mark.parametrize("base_grad", [False, True], ids=["base-no-grad", "base-grad"])
@pytest.mark.parametrize("write", list(NO_GRAD_WRITES))
def test_view_made_under_no_grad_written_with_grad(write, base_grad, where, compiled):
    theirs = _no_grad_view_written(torch, False, where, base_grad, write)
    ours = _no_grad_view_written(fg, compiled, where, base_grad, write)
    assert ours == theirs


# ---- a detach() (or .data) of a leaf argument written, then the leaf read by an op that saves
# it, then the detach() written again: the leaf's read is an identity of the detach()'s value
# (Trace._alias), on the leaf's counter where the writer is a detach(), so the second write makes
# the saved leaf stale, as torch's version check (alias fuzzer seed 115686); a `.data` has a
# counter of its own, and the backward reads the memory's new value.

ALIAS_STEPS = {
    "mul-self": lambda d, x: d.mul_(d * 2),
    "add-number": lambda d, x: d.add_(1.0),
    "add-grad": lambda d, x: d.add_(x.pow(2), alpha=3.0),
    "sub-leaf-no-grad": "no_grad",
}


def _writer_rewritten(L, compiled: bool, writer: str, before: str, after: str, read_first: bool):
    s0 = L.tensor([[-1.0, 0.5], [0.5, -1.0], [0.5, -1.25]], requires_grad=True)

    def step(d, x, name):
        if ALIAS_STEPS[name] == "no_grad":
            with L.no_grad():
                d.sub_(x)
        else:
            ALIAS_STEPS[name](d, x)

    def f(x):
        d = x.detach() if writer == "detach" else x.data
        first = x.exp() if read_first else None
        step(d, x, before)
        t2 = x.pow(3)
        step(d, x, after)
        total = (x * x).sum() + (t2 * 2.0).sum()
        return total + first.sum() if first is not None else total
    try:
        out = (fg.compile(f) if compiled else f)(s0)
        out.backward()
    except RuntimeError as error:
        return ("error", str(error))
    return ("grad", s0.grad.tolist())


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("read_first", [False, True], ids=["unread", "read-first"])
@pytest.mark.parametrize("after", list(ALIAS_STEPS))
@pytest.mark.parametrize("before", list(ALIAS_STEPS))
@pytest.mark.parametrize("writer", ["detach", "data"])
def test_writer_of_a_leaf_written_again_after_the_leaf_is_saved(writer, before, after, read_first, compiled):
    theirs = _writer_rewritten(torch, False, writer, before, after, read_first)
    ours = _writer_rewritten(fg, compiled, writer, before, after, read_first)
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "error":
        assert ours[1] == theirs[1]
    else:
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-5)


# ---- an in-place op whose operand is a view made under no_grad of the tensor written, whose base
# was written in place since: torch's autograd asks for the operand's history (and raises the
# rebased-view error) before its kernel checks memory overlap (alias fuzzer seed 116313, where
# fusegrad raised the overlap error first).

OPERAND_WRITES = {
    "mul_": lambda t, v: t.mul_(v),
    "add_": lambda t, v: t.add_(v),
    "sub_-alpha": lambda t, v: t.sub_(v, alpha=2.0),
    "div_": lambda t, v: t.div_(v),
    "copy_": lambda t, v: t.copy_(v),
    "other-tensor": lambda t, v: (t * 1).mul_(v),
}


def _rebased_operand(L, compiled: bool, write: str, grad_on: bool):
    s0 = L.tensor([[0.75, -1.5], [0.5, 1.75], [1.0, -0.75]], requires_grad=True)

    def f(a):
        t = a * a
        with L.no_grad():
            v = t[1, 0]
        t.mul_(0.5)
        with L.set_grad_enabled(grad_on):
            OPERAND_WRITES[write](t, v)
        return t.sum()
    try:
        out = (fg.compile(f) if compiled else f)(s0)
        return ("value", out.item(), out.requires_grad)
    except RuntimeError as error:
        return ("error", str(error))


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("grad_on", [True, False], ids=["grad", "no-grad"])
@pytest.mark.parametrize("write", list(OPERAND_WRITES))
def test_rebased_no_grad_view_operand_raises_before_overlap(write, grad_on, compiled):
    assert _rebased_operand(fg, compiled, write, grad_on) == _rebased_operand(torch, False, write, grad_on)


# ---- a .data or detach() of an expand written in place with a value that requires grad: inside
# fg.compile the write is refused with torch's overlap error (the writer would keep a value whose
# other rows miss the write; torch computes it, and its backward raises that error), but the
# memory takes the write first, with its version bump, as torch's did before the error it raises
# at the next in-place op on the overlapping tensor (alias fuzzer seed 122047: the write was lost).

def _expand_alias_written(L, compiled: bool, made: str, alias: str, value: str, then: str):
    s1 = L.tensor([0.5, -1.0, 1.25, 1.25, 0.5, -1.75], requires_grad=True)
    outside = s1.expand(2, 6)

    def f(a0):
        t1 = a0.expand(2, 6) if made == "in-call" else outside
        t2 = t1.data if alias == "data" else t1.detach()
        t2[0, 3] = a0[0] * 2 if value == "grad" else 7.0
        if then == "overlap-add":
            t2.add_(1.0)
        elif then == "read":
            return (t2 * 1).sum() + a0.sum()
        return a0.sum()
    try:
        result = ("value", (fg.compile(f) if compiled else f)(s1).item())
    except RuntimeError as error:
        result = ("error", str(error))
    return result, s1.tolist(), s1._version


EXPAND_CASES = [pytest.param(*case, marks=pytest.mark.xfail(
    strict=True, reason="refused inside fg.compile (torch's overlap error, where torch's backward raises it)"))
    if case[2] == "grad" and case[3] != "overlap-add" else case
    for case in itertools.product(("in-call", "outside"), ("data", "detach"), ("grad", "number"),
                                  ("overlap-add", "read", "none"))]


@pytest.mark.parametrize("made,alias,value,then", EXPAND_CASES)
def test_expand_alias_written_keeps_the_memory_write(made, alias, value, then):
    assert _expand_alias_written(fg, True, made, alias, value, then) == \
        _expand_alias_written(torch, False, made, alias, value, then)


@pytest.mark.parametrize("case", list(itertools.product(("in-call", "outside"), ("data", "detach"), ("grad", "number"),
                                                        ("overlap-add", "read", "none"))))
def test_expand_alias_written_eagerly(case):
    assert _expand_alias_written(fg, False, *case) == _expand_alias_written(torch, False, *case)
