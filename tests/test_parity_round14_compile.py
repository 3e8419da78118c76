"""Parity round 14, fg.compile (a transformations probe against torch 2.13; torch eager is the
oracle): a backward inside the call that reaches a tensor from outside the call with a history
of its own (a non-leaf argument, a closed-over non-leaf) goes on into the history that tensor
came in with, at the value it came in with, also when the call writes the tensor in place
(tracer/trace.py `backward`, `_history_now`, `input_value`)."""
from __future__ import annotations

import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

WRITES = {
    "add_": lambda x, b: x.add_(b),
    "mul_": lambda x, b: x.mul_(b),
    "copy_": lambda x, b: x.copy_(b.sin()),
    "setitem": lambda x, b: x.__setitem__(1, b[0]),
    "none": lambda x, b: None,
}


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("write", list(WRITES))
def test_a_backward_in_the_call_after_writing_a_non_leaf_argument(write, compiled):
    # before: compiled gave b's gradient twice (add_), x's at its written value (mul_), or
    # "Trying to backward through the graph a second time" (copy_, setitem)
    def grads(lib, compile_fn):
        a = lib.ones(3, requires_grad=True)
        b = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x = a * 2

        def f(x, b):
            WRITES[write](x, b)
            (x * x).sum().backward()
            return x
        compile_fn(f)(x, b)
        return [None if t.grad is None else [round(v, 5) for v in t.grad.tolist()] for t in (a, b)]
    assert grads(fg, fg.compile if compiled else (lambda f: f)) == grads(torch, lambda f: f)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_closed_over_non_leaf_overwritten_then_differentiated_in_the_call(compiled):
    def grads(lib, compile_fn):
        a = lib.ones(3, requires_grad=True)
        state = a * 1
        x0 = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)

        def f(x0):
            state.copy_(x0)
            state.sum().backward()
            return state * 1
        compile_fn(f)(x0)
        return a.grad.tolist(), x0.grad.tolist()
    assert grads(fg, fg.compile if compiled else (lambda f: f)) == grads(torch, lambda f: f)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_backward_in_the_call_then_one_after_it_through_the_written_argument(compiled):
    def grads(lib, compile_fn):
        a = lib.ones(3, requires_grad=True)
        b = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x = a * 2

        def f(x, b):
            x.mul_(b)
            (x * x).sum().backward(retain_graph=True)
            return x
        compile_fn(f)(x, b).sum().backward()
        return a.grad.tolist(), b.grad.tolist()
    assert grads(fg, fg.compile if compiled else (lambda f: f)) == grads(torch, lambda f: f)


def _state_calls(lib, compile_fn, second_from):
    """A closed-over tensor overwritten by each call, then backwards after the calls; the
    outcome of each: the argument's .grad or the error's text."""
    state = lib.zeros(3)

    def f(x):
        state.copy_(x + 1)
        return state - 1, x.min(0).values
    g, out, outputs = compile_fn(f), [], []
    for k in range(2):
        x = lib.ones(3, requires_grad=True)
        outputs.append(g(x))
        try:
            (outputs[-1][0].sum() + outputs[-1][1].sum()).backward()
            out.append(x.grad.tolist())
        except RuntimeError as exc:
            out.append(str(exc)[:50])
    try:        # through the first call's min again: its node was freed
        outputs[0][second_from].sum().backward()
        out.append("ok")
    except RuntimeError as exc:
        out.append(str(exc)[:50])
    return out


@pytest.mark.parametrize("second_from", [0, 1], ids=["through the copy", "through the min"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_freed_call_raises_only_for_a_backward_through_what_it_released(compiled, second_from):
    # the second call's backward reaches the first call's node through the overwritten state
    # tensor's old history, where nothing was saved: torch runs it; before, the compiled call's
    # one node raised "backward through the graph a second time" because its min had released
    want = _state_calls(torch, lambda f: f, second_from)
    assert _state_calls(fg, fg.compile if compiled else (lambda f: f), second_from) == want


def test_a_view_made_under_no_grad_in_a_call_with_no_gradient_requires_grad_as_its_base():
    # alias fuzz 14359: when no gradient can flow back into the call, its outputs were made
    # plain values, the no_grad view of an argument that requires grad too (torch's requires grad)
    def f(lib):
        def fn(a):
            with lib.no_grad():
                return a[..., None], a * 2, a.t()
        return fn

    def flags(lib, compile_fn):
        a = lib.ones(2, 3, requires_grad=True)
        return [(t.requires_grad, t.grad_fn is None, t.is_leaf) for t in compile_fn(f(lib))(a)]
    assert flags(fg, fg.compile) == flags(torch, lambda fn: fn)


def test_a_version_error_names_a_dead_tensor_by_its_latest_write_in_the_call():
    # sweep 1135: v2 saved by abs(), then written by div_ and a setitem, then gone: torch names
    # it by the history it had last, CopySlices (the compiled call named the first write, Div)
    def prog(lib):
        def fn(state, x0):
            v1 = 3 * state
            v1.fill_(-1.0)
            v2 = state + x0
            state.sub_(v2)
            v1[..., :2] = 1.5
            v2.div_(v2.abs() + 1)
            v1.copy_(v2)
            v2[..., :2] = 1.5
            return v1
        return fn

    def error(lib, compile_fn):
        state, x0 = lib.ones(3, 4), lib.ones(3, 4, requires_grad=True)
        try:
            compile_fn(prog(lib))(state, x0).sum().backward()
        except RuntimeError as exc:
            return str(exc)
        return "ok"
    assert error(fg, fg.compile) == error(torch, lambda fn: fn)


def _state_filled_each_call(lib, compile_fn):
    """Sweep 6040: a closed-over tensor the call fills, multiplies by and adds to, and an
    output that does not depend on it; a backward from that output after each call."""
    state = lib.ones(3, 4) * 0.5

    def f(x1):
        v1 = x1 @ x1.transpose(-1, -2)
        state.fill_(0.5)
        state.add_(v1 @ state)
        return v1.sigmoid().softmax(-1), (x1 * 0).sum() + x1.sign().sum()
    g, out = compile_fn(f), []
    for k in range(2):
        x1 = lib.ones(3, 4, requires_grad=True)
        try:
            y, z = g(x1 * (k + 1))
            y.sum().backward()
            z.backward()
            out.append(x1.grad.tolist())
        except RuntimeError as exc:
            out.append(str(exc)[:60])
    return out


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_backward_goes_only_where_the_graph_of_its_outputs_goes(compiled):
    # the call's one node gave the state's old history a zero gradient for the first output,
    # so the engine ran the previous call's node, whose saved state was written since; an
    # input reached through a zero derivative (sign, * 0) still gets its zeros
    want = _state_filled_each_call(torch, lambda fn: fn)
    assert _state_filled_each_call(fg, fg.compile if compiled else (lambda fn: fn)) == want
