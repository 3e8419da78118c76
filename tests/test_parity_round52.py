"""Round 52 of torch parity: a detach() (or .data) of a leaf that requires grad, written in place
in a call before the leaf itself is read there (alias fuzzer seed 143517). The alias lifted the
memory first, so the value the leaf came in with was the alias's raw value: the leaf's gradient
summed the alias's uses of it (`a1.mul_(c1)` gave the leaf c1's value, a silently wrong
gradient), and the compiled backward, taking the mul as needing its other operand, raised a
false version error. The leaf now has its own identity of that value (Trace._alias), which
nothing in the call read, as eagerly.

Later section: a backward from some outputs of a compiled call, through an op whose gradient is
zero (floor, sign, a whole tensor overwritten by zero_, fill_, copy_): torch's engine runs the
nodes behind it with the zeros, so a value they saved that changed after the call raises its
version error (seeds 201783, 142947, 143444). The zeros now read the cotangent
(Emitter.zero_gradient), so runtime/compiled_backward.reached_inputs follows them there.

Last section: a part of split/chunk/unbind of a tensor without grad (or a view of one), saved
by an op with grad in a compiled call and written after: torch's unpack raises the plain version
error, its multi-output error only where the part's base requires grad by then (its grad_fn is
None otherwise). The compiled backward raised the multi-output error in the first case (seed
212750), and the plain one for an unbind part promoted to the op's dtype or a view of a part in
the second (Trace.note_part).

And: torch's errors name a view of a view made under no_grad by its node's short name, with
SqueezeBackward1's number (`Output 0 of Squeeze1`), which fusegrad dropped (seed 213266); a
view of a view made under no_grad keeps torch's strides along size-1 dims (`a[::2].view(1, 3)`
of a [1, 3] row), so writing it into `a` is torch's full overlap, not a partial one (seeds
145629, 214700); and a view from outside a compiled call, whose detach() was written with a
value that requires grad, is read in the call after (seed 214684: an AttributeError). unsqueeze and a None index take
torch's unsqueeze strides (the reshape op knows the dim it inserted)."""
import numpy as np
import pytest

import fusegrad as fg
from parity_support import runtime_error

torch = pytest.importorskip("torch", reason="torch is the oracle")

ALIASES = {"detach": lambda t: t.detach(), "data": lambda t: t.data}

# (the in-place write of the alias a1, given the view c of the leaf that requires grad)
WRITES = {
    "mul_by_view": lambda a1, c: a1.mul_(c),
    "add_view": lambda a1, c: a1.add_(c),
    "mul_by_constant": lambda a1, c: a1.mul_(3.0),
    "copy_from_view": lambda a1, c: a1.copy_(c * 2),
}

# (how the call then reads the leaf's memory with grad: through a view made before the call,
# or the leaf itself)
READS = {
    "view": lambda leaf, view: view.permute(1, 0),
    "leaf": lambda leaf, view: leaf,
}


def _outcome(L, alias, write, read, compile_fn):
    leaf = L.tensor([[-1.25, -0.25, -1.75], [-1.5, -2.0, 0.5]], requires_grad=True)
    detached = ALIASES[alias](leaf)
    view = leaf.permute(0, 1)

    def f(a0, a1, c):
        WRITES[write](a1, c)
        t = READS[read](leaf, a0)
        return (t * t).sum() + (a1 * a1).sum()
    error = runtime_error(lambda: compile_fn(f)(view, detached, view).backward())
    return error if error is not None else leaf.grad.numpy().tolist()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("read", list(READS))
@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("alias", list(ALIASES))
def test_a_leaf_read_after_its_alias_wrote_it_gets_only_its_own_uses_gradient(alias, write, read, compiled):
    want = _outcome(torch, alias, write, read, lambda f: f)
    got = _outcome(fg, alias, write, read, fg.compile if compiled else (lambda f: f))
    if isinstance(want, str):
        assert got == want
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_the_fuzzer_seed_143517_as_it_was_found():
    def run(L, compile_fn):
        s0 = L.tensor([[-1.25, -0.25, -1.75], [-1.5, -2.0, 0.5]], requires_grad=True)
        s1, s2 = s0.detach(), s0.permute(0, 1)

        def f(a0, a1):
            a1.mul_(s2)
            t3 = a0.permute(0, 1)
            return (t3 * t3).sum() + s1.sum()
        compile_fn(f)(s2, s1).backward()
        return s0.grad.numpy()
    np.testing.assert_allclose(run(fg, fg.compile), run(torch, lambda f: f), rtol=1e-6)


# (an op whose gradient is zero, given the product it overwrites or reads)
ZERO_GRADIENT = {
    "zero_": lambda t: t.zero_(),
    "fill_": lambda t: t.fill_(2.0),
    "copy_": lambda t: t.copy_(t.detach() * 0 + 1),
    "setitem_all": lambda t: t.__setitem__(Ellipsis, 3.0) or t,
    "sign": lambda t: t.sign(),
    "floor": lambda t: t.floor(),
    "round": lambda t: t.round(),
}


def _partial_backward(L, op, compile_fn, write_after):
    x = L.tensor([[-1.75, 1.75, 1.5], [0.5, 1.25, 1.25]], requires_grad=True)

    def f(a0):
        t = ZERO_GRADIENT[op](a0 * a0)
        return t.tanh().sum(), t
    loss, _ = compile_fn(f)(x)
    if write_after:
        with L.no_grad():
            x.mul_(0.5)
    error = runtime_error(loss.backward)
    return error if error is not None else x.grad.numpy().tolist()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("write_after", [True, False], ids=["written_after", "unchanged"])
@pytest.mark.parametrize("op", list(ZERO_GRADIENT))
def test_a_backward_from_one_output_through_a_zero_gradient_checks_what_the_nodes_behind_saved(op, write_after,
                                                                                              compiled):
    want = _partial_backward(torch, op, lambda f: f, write_after)
    got = _partial_backward(fg, op, fg.compile if compiled else (lambda f: f), write_after)
    if write_after:
        assert isinstance(want, str) and "modified by an inplace operation" in want
    assert got == want


PARTS = {
    "chunk": lambda t: t.chunk(2, 0)[0],
    "split": lambda t: t.split(2, 0)[1],
    "unbind": lambda t: t.unbind(0)[1],              # (0-d: maximum promotes it to float32)
    "view_of_chunk": lambda t: t.chunk(2, 0)[0].unsqueeze(0),
}


def _saved_part_outcome(L, part, written, base_gains_grad, compile_fn):
    x = L.tensor([[-1.75, 1.75], [-2.0, 1.0]], requires_grad=True)
    base = L.tensor([1.5, -1.25, 1.5, 0.0], dtype=L.float64)
    w = L.tensor([0.5, 0.5, 0.5, 0.5], dtype=L.float64, requires_grad=True)

    def f(a0):
        p = PARTS[part](base)
        out = L.maximum(a0, p)
        if base_gains_grad:
            base.mul_(w)
        elif written == "in_call":
            p.fill_(2.0)
        return (out * out).sum()
    loss = compile_fn(f)(x)
    if written == "after_call":
        with L.no_grad():
            base.add_(1)
    error = runtime_error(loss.backward)
    return error if error is not None else x.grad.numpy().tolist()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("base_gains_grad", [False, True], ids=["base_without_grad", "base_gains_grad"])
@pytest.mark.parametrize("written", ["in_call", "after_call"])
@pytest.mark.parametrize("part", list(PARTS))
def test_a_saved_part_of_a_tensor_without_grad_raises_the_plain_version_error(part, written, base_gains_grad,
                                                                               compiled):
    want = _saved_part_outcome(torch, part, written, base_gains_grad, lambda f: f)
    got = _saved_part_outcome(fg, part, written, base_gains_grad, fg.compile if compiled else (lambda f: f))
    assert isinstance(want, str)
    assert ("A view was created in no_grad mode" in want) == base_gains_grad
    assert got == want


NO_GRAD_VIEW_VIEWS = {
    "squeeze_dim": lambda t: t.squeeze(1),          # SqueezeBackward1
    "squeeze_dims": lambda t: t.squeeze((1,)),      # SqueezeBackward2
    "squeeze": lambda t: t.squeeze(),               # SqueezeBackward0
    "select": lambda t: t[0],
    "transpose": lambda t: t.t(),
    "expand": lambda t: t.expand(2, 4, 1),
}


def _no_grad_view_outcome(L, view, compile_fn):
    leaf = L.tensor([-0.75, -1.5, 0.75, -1.25], requires_grad=True)
    with L.no_grad():
        base = leaf.unsqueeze(1)

    def f(b):
        NO_GRAD_VIEW_VIEWS[view](b).mul_(2)
        return b.sum()
    return runtime_error(lambda: compile_fn(f)(base))


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("view", list(NO_GRAD_VIEW_VIEWS))
def test_a_view_of_a_no_grad_view_written_in_place_is_named_as_torch_names_it(view, compiled):
    want = _no_grad_view_outcome(torch, view, lambda f: f)
    assert want is not None and "is a view of a view which was created in no_grad mode" in want
    assert _no_grad_view_outcome(fg, view, fg.compile if compiled else (lambda f: f)) == want


def test_a_view_of_a_one_row_slice_has_torchs_strides_and_writes_into_its_base():
    def run(L):
        a = L.tensor([[0.75, 0.75, 1.5]])
        view = a[::2].view(1, 3)
        strides = (a[::2].stride(), view.stride())
        a.mul_(view)
        return strides, a.tolist(), a._version
    assert run(fg) == run(torch)


@pytest.mark.parametrize("view_shape", [(1, 6), (6, 1), (1, 1, 6), (6,), (2, 1, 3)])
def test_views_of_a_strided_row_have_torchs_strides(view_shape):
    def strides(L):
        row = L.arange(36.0).reshape(3, 12)[::2, ::2][:1]         # [1, 6], strides (24, 2)
        return row.view(view_shape).stride(), row.reshape(view_shape).stride()
    assert strides(fg) == strides(torch)


# (after `t = view.detach()`: the writes of t, then the write of the view itself)
DETACHED_WRITES = {
    "copy_with_grad": lambda t, g: t.copy_(g.sum()),
    "copy_then_setitem": lambda t, g: (t.copy_(g.sum()), t.__setitem__(slice(None, None, 2), 1.5)),
    "setitem": lambda t, g: t.__setitem__(slice(None, None, 2), 1.5),
}


def _outside_view_outcome(L, writes, compile_fn):
    base = L.tensor([[-0.25, -0.5], [0.5, -1.75], [-1.5, -2.0]], dtype=L.float64)
    g = L.tensor([1.5, -1.0], requires_grad=True)
    view = base[..., 1:]

    def f(a):
        t = view.detach()
        DETACHED_WRITES[writes](t, a)
        view.copy_(view)
        return (t * 2).sum() + a.sum()
    error = runtime_error(lambda: compile_fn(f)(g).backward())
    return error, base.tolist(), base._version, None if g.grad is None else g.grad.tolist()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("writes", list(DETACHED_WRITES))
def test_a_view_from_outside_written_after_its_detach_matches_torch(writes, compiled):
    want = _outside_view_outcome(torch, writes, lambda f: f)
    assert _outside_view_outcome(fg, writes, fg.compile if compiled else (lambda f: f)) == want


STRIDED_BASES = {
    "transposed": lambda L: L.arange(24.0).reshape(2, 3, 4).transpose(0, 2),
    "stepped": lambda L: L.arange(48.0).reshape(2, 3, 8)[:, :, ::2],
    "one_row": lambda L: L.arange(48.0).reshape(4, 12)[::2, ::2][:1],
    "column": lambda L: L.arange(12.0).reshape(4, 3)[:, 1:2],
    "expanded": lambda L: L.arange(3.0).reshape(3, 1).expand(3, 4),
}
NEW_DIMS = {
    "unsqueeze_0": lambda t: t.unsqueeze(0),
    "unsqueeze_1": lambda t: t.unsqueeze(1),
    "unsqueeze_last": lambda t: t.unsqueeze(-1),
    "none_first": lambda t: t[None],
    "none_last": lambda t: t[..., None],
    "view_with_unit": lambda t: t.reshape(*t.shape[:-1], 1, t.shape[-1]) if t.is_contiguous() else t.flatten(),
}


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("new_dim", list(NEW_DIMS))
@pytest.mark.parametrize("base", list(STRIDED_BASES))
def test_a_new_size_1_dim_has_torchs_stride(base, new_dim, compiled):
    def strides(L, compile_fn):
        return compile_fn(lambda t: NEW_DIMS[new_dim](t))(STRIDED_BASES[base](L)).stride()
    assert strides(fg, fg.compile if compiled else (lambda f: f)) == strides(torch, lambda f: f)
