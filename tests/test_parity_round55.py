"""Round 55 of torch parity: an in-place op inside a compiled call on a tensor from outside
whose memory is an expand's, reached through its detach() (alias fuzzer seed 219998). torch
refuses the write before it makes it ("more than one element of the written-to tensor refers to
a single memory location"); the traced write, whose detach has no view to tell it, got as far as
writing the expand's memory before the error: the caller's tensor was left changed. Trace.record
now refuses it first, as the eager write does (dispatch._write_inplace); a fill or zero_ of a
number writes through an expand in torch, and still does."""
import pytest

import fusegrad as fg
from parity_support import runtime_error

torch = pytest.importorskip("torch", reason="torch is the oracle")

# (how the written tensor is made from s0, a [1, 3] tensor: from outside the call or in it)
TARGETS = {
    "outside_detach": (lambda s0: s0.expand(2, 1, 3).detach(), None),
    "outside_data": (lambda s0: s0.expand(2, 1, 3).data, None),
    "outside_view": (lambda s0: s0.expand(2, 1, 3), None),
    "outside_detach_of_view": (lambda s0: s0.expand(3, 3)[1:].detach(), None),
    "inside_expand": (lambda s0: s0, lambda c: c.expand(2, 1, 3)),
    "inside_expand_detach": (lambda s0: s0, lambda c: c.expand(2, 1, 3).detach()),
}

WRITES = {
    "sub_tensor": lambda t: t.sub_(t * 2),
    "mul_tensor": lambda t: t.mul_(t),
    "add_alpha": lambda t: t.add_(t * 2, alpha=2),
    "div_number": lambda t: t.div_(2.0),
    "copy_": lambda t: t.copy_(t * 2),
    "exp_": lambda t: t.exp_(),
    "clamp_": lambda t: t.clamp_(min=-1.0),
    "fill_": lambda t: t.fill_(0.5),
    "zero_": lambda t: t.zero_(),
    "setitem_number": lambda t: t.__setitem__(Ellipsis, 2.0),
}


def _outcome(L, target, write, compile_fn):
    s0 = L.tensor([[-1.0, -1.25, -0.75]])
    make, inner = TARGETS[target]
    arg = make(s0)

    def f(c):
        t = inner(c) if inner else c
        WRITES[write](t)
        return t.sum()
    error = runtime_error(lambda: compile_fn(f)(arg))
    return error, s0.tolist()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("target", list(TARGETS))
def test_a_write_over_an_expands_memory_is_refused_before_it_is_made(target, write, compiled):
    want = _outcome(torch, target, write, lambda f: f)
    assert _outcome(fg, target, write, fg.compile if compiled else (lambda f: f)) == want
