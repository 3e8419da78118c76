"""Parity round 7: differences from torch 2.13 found by a probe of the API contract.

Each test runs the same code on torch and fusegrad and compares values, printed forms
and exception texts.
"""
from __future__ import annotations

import numpy as np
import pytest

import fusegrad as fg

from parity_support import outcome as _outcome

torch = pytest.importorskip("torch", reason="torch is the oracle")


# --------------------------------------------------------------------- printed grad_fn names
@pytest.mark.parametrize("write", ["setitem", "select mul_", "copy_"])
def test_repr_prints_the_grad_fn_class_name(write):
    """torch prints <CopySlices> and <CopyBackwards>, though their name() is torch::autograd::..."""
    def run(lib):
        y = lib.tensor([1.0, 2.0], requires_grad=True) * 1
        if write == "setitem":
            y[0] = 5.0
        elif write == "select mul_":
            y[0].mul_(3)
        else:
            y.copy_(lib.ones(2))
        return repr(y), y.grad_fn.name(), type(y.grad_fn).__name__
    assert run(fg) == run(torch)


def test_version_error_names_copy_backwards_whole():
    """torch drops "Backward0" from a node's name in this text, but keeps CopyBackwards."""
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 2
        h.copy_(h * h)              # h * h saved h, which copy_ then overwrites
        return _outcome(lambda: h.sum().backward())
    got = run(fg)
    assert got == run(torch)
    assert "which is output 0 of torch::autograd::CopyBackwards, is at version 1" in got[1]


# --------------------------------------------------------------------- compiled backward checks
def _linear_case(lib, compile_):
    m = lib.nn.Linear(3, 2)
    with lib.no_grad():
        m.weight.copy_(lib.ones(2, 3))
        m.bias.fill_(0.1)
    x = lib.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    r = compile_(m)(x).sum()
    with lib.no_grad():
        m.weight.mul_(2)
    return _outcome(lambda: r.backward())


def _argument_case(body, change):
    def case(lib, compile_):
        x = lib.tensor(np.ones((2, 3), np.float32), requires_grad=True)
        w = lib.ones(3, 2) if "t()" in body or "@" in body else lib.ones(2, 3)
        f = compile_(eval(f"lambda x, w: {body}"))
        r = f(x, w)
        getattr(w, change)(2)
        return _outcome(lambda: (r.backward(), x.grad.tolist())[1])
    return case


CASES = {
    "a module's weight, saved transposed": _linear_case,
    "an argument without grad, saved": _argument_case("(x @ w).sum()", "mul_"),
    "an argument without grad, saved as a view": _argument_case("(x * w.t()).sum()", "add_"),
    "an argument without grad, not saved": _argument_case("(x + w).sum()", "add_"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_compiled_backward_checks_every_saved_tensor_it_read(case):
    """torch checks the version of every saved tensor: also those that need no grad, and a
    weight saved as its transpose (fusegrad checked only the inputs that require grad)."""
    want = CASES[case](torch, lambda f: f)
    got = CASES[case](fg, fg.compile)
    assert got == want


def test_version_is_an_int_shared_by_views_as_torchs():
    def run(lib):
        x = lib.ones(2, 3)
        seen = [x._version]
        x.add_(1)
        v = x[0]
        v.mul_(2)
        x[1] = 3.0
        d = x.detach()
        d.zero_()
        seen += [x._version, v._version, d._version, type(x._version).__name__]
        p = lib.nn.Parameter(lib.ones(3))
        opt = lib.optim.SGD([p], lr=0.1, momentum=0.9)
        for _ in range(2):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
        return seen + [p._version]
    assert run(fg) == run(torch)


# --------------------------------------------------------------------- devices and arange
DEVICE_CALLS = [
    'L.zeros(2, device="cpu").device', 'L.ones(2, 3, device=L.device("cpu")).shape',
    'L.tensor([1.0], device="cpu")', 'L.arange(3, device="cpu")', 'L.full((2,), 1.0, device="cpu")',
    'L.zeros_like(L.ones(2), device="cpu")', 'L.randn(2, device="cpu").shape', 'L.rand(2, device="cpu").shape',
    'L.eye(2, device="cpu")', 'L.linspace(0, 1, 3, device="cpu")', 'L.randint(0, 3, (2,), device="cpu").shape',
    'L.full_like(L.ones(2), 3.0, device="cpu")', 'L.empty(2, device="cpu").shape',
    'L.zeros(2, device="foo")', 'L.zeros(2, device=3)', 'L.device("cpu:x")', 'L.device("cpu:0", 1)',
    'L.device("cpu", -1)', 'L.device("cpu", 0)', 'str(L.device("cpu:0"))', 'L.device("cpu") == "cpu"',
    'L.zeros(2).device.type', 'str(L.zeros(2).device)', 'L.zeros(2).device == L.device("cpu")',
    'L.zeros(2).to(L.device("cpu"))', 'L.zeros(2).to("cpu", L.float64)', 'L.nn.Linear(2, 2).to("cpu").weight.shape',
    'L.nn.Linear(2, 2).to(L.device("cpu")).weight.dtype',
]


def _eval(call: str, lib):
    outcome = _outcome(lambda: eval(call, {"L": lib}))
    text = repr(outcome) if not isinstance(outcome, tuple) else repr(outcome)
    return text.replace("torch.", "").replace("fusegrad.", "").replace("fg.", "")


@pytest.mark.parametrize("call", DEVICE_CALLS)
def test_devices_as_torch(call):
    """fusegrad runs on the CPU: device="cpu" (or fg.device("cpu")) is accepted wherever torch
    takes a device, and a Tensor's device is torch's device object."""
    assert _eval(call, fg) == _eval(call, torch)


def test_device_arguments_inside_compile():
    f = fg.compile(lambda x: x + fg.ones(2, device="cpu") + fg.zeros_like(x, device=x.device))
    np.testing.assert_array_equal(f(fg.zeros(2)).numpy(), [1.0, 1.0])


@pytest.mark.parametrize("args", [(0, 5, 1.5), (0, 5.5), (-2.5, 2, 1.5), (0, 1, 0.3), (0.5, 3.7, 0.9),
                                  (-3.7, -0.2, 0.9), (0, 5, 0), (7, 2.2, -1.5)])
@pytest.mark.parametrize("dtype", ["int64", "float64", "bool"])
def test_arange_with_a_dtype_as_torch(args, dtype):
    """An integer dtype truncates start, end and step first (a step that truncates to 0 is
    torch's ValueError); bool is refused."""
    assert _eval(f"L.arange(*{args!r}, dtype=L.{dtype})", fg) == _eval(f"L.arange(*{args!r}, dtype=L.{dtype})", torch)


# --------------------------------------------------------------------- reciprocal
@pytest.mark.parametrize("write", ["divisor", "none"])
def test_scalar_over_tensor_saves_the_reciprocal_as_torch(write):
    """`2 / h` is reciprocal(h) * 2, and the reciprocal saves its result: changing h in place
    afterwards does not invalidate the backward (it did: div(1, h) saved h)."""
    def run(lib):
        x = lib.tensor([1.0, 2.0, 4.0], requires_grad=True)
        h = x * 1
        y = 2 / h
        names = [type(y.grad_fn).__name__, type(y.grad_fn.next_functions[0][0]).__name__,
                 len(y.grad_fn.next_functions[0][0].next_functions)]
        if write == "divisor":
            h.add_(1)
        y.sum().backward()
        return names, x.grad.tolist()
    assert run(fg) == run(torch)


def test_reciprocal_values_and_derivatives_as_torch():
    def run(lib):
        z = lib.tensor([1.0, -2.0, 4.0, 0.0], requires_grad=True)
        r = lib.reciprocal(z)
        g, = lib.autograd.grad((r * r.detach()).sum(), z, create_graph=True)
        g2, = lib.autograd.grad(g[:3].sum(), z)
        return repr(r.detach()), z.reciprocal().grad_fn.name(), g.tolist(), g2[:3].tolist()  # (g2[3] is nan)
    assert run(fg) == run(torch)
    f = fg.compile(fg.value_and_grad(lambda x: (3 / x + x.reciprocal()).sum()))
    value, grad = f(fg.tensor([1.0, 2.0]))
    np.testing.assert_allclose([value.item()] + grad.tolist(), [6.0, -4.0, -1.0])


@pytest.mark.parametrize("call", ["L.zeros(2, dtype=float)", "L.ones(2, dtype=int)", "L.tensor([1, 0], dtype=bool)",
                                  "L.full((2,), 1, dtype=float)", "L.arange(3, dtype=float)",
                                  "L.zeros_like(L.ones(2), dtype=int)", "L.eye(2, dtype=bool)",
                                  "L.empty(2, dtype=str)", "L.zeros(2, dtype='float32')"])
def test_python_types_as_dtypes(call):
    """torch takes float, int and bool for float64, int64 and bool."""
    assert _eval(call, fg) == _eval(call, torch)


# --------------------------------------------------------------------- compiled version errors
STALE_VIEW_BODIES = {
    "a setitem after two temporary views were multiplied": "h = x * 2; y = h[0] * h[1]; h[0] = 1.0; return y.sum()",
    "an add_ after two temporary views were multiplied": "h = x * 2; y = h[0] * h[1]; h.add_(1); return y.sum()",
    "a view of a view": "h = x * 2; y = h[0][1:] * h[1][1:]; h[1] = 0.0; return y.sum()",
    "setitem of a product of its own views": "h = x * 2; h[0] = h[0] * h[1]; return h.sum()",
    "mul_ by itself": "h = x * 2; h.mul_(h); return h.sum()",
    "a view made after the write": "h = x * 2; h.add_(1); y = h[0] * h[1]; return y.sum()",
    "a live view": "h = x * 2; v = h[0]; y = v * h[1]; h.mul_(3); return y.sum()",
    "a view not saved": "h = x * 2; y = h[0] * 2; h.add_(1); return y.sum()",
    "add_ by itself": "h = x * 2; h.add_(h); return h.sum()",
}


@pytest.mark.parametrize("body", STALE_VIEW_BODIES)
def test_compiled_version_errors_for_views_and_self_operands(body):
    """Inside fg.compile, a saved view of a tensor written later (also one no longer alive) and
    an operand of an in-place op that is the written tensor itself raise torch's error, and
    nothing else does."""
    namespace = {}
    exec("def f(x):\n    " + STALE_VIEW_BODIES[body].replace("; ", "\n    "), namespace)
    f = namespace["f"]

    def run(lib, compile_):
        x = lib.tensor(np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3), requires_grad=True)
        return _outcome(lambda: (compile_(f)(x).backward(), x.grad.tolist())[1])
    assert run(fg, fg.compile) == run(torch, lambda g: g)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_a_reshape_that_copies_is_not_a_view(compiled):
    """torch's reshape of data that needs a copy (and matmul's folded batch) ends in _unsafe_view,
    which is not a view: an in-place op on it records its own node."""
    def body(x, lib):
        h = x * 1
        r = h.t().reshape(6)
        r.add_(1)
        g = h[:, ::2].reshape(4)
        g.mul_(2)
        m = h.reshape(1, 2, 3) @ lib.ones(3, 2)
        m.sub_(1)
        names = [type(t.grad_fn).__name__ for t in (r, g, m)] + [t._base is None for t in (r, g, m)]
        return r.sum() + g.sum() + m.sum() + h.sum(), names

    def run(lib, compile_):
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        loss, names = compile_(lambda x: body(x, lib))(x)
        loss.backward()
        return loss.item(), names, x.grad.tolist()
    assert run(fg, fg.compile if compiled else (lambda f: f)) == run(torch, lambda f: f)


@pytest.mark.parametrize("code", ["a.add_(a[0])", "a.div_(a[1])", "a.mul_(a)", "a[0].add_(a[1])",
                                  "a[:, 0].add_(a[:, 1])", "a[:, 0].copy_(a[0, :2])", "a[0, :2].copy_(a[:, 0])",
                                  "a.fill_(a[0, 0])", "a[0] = a[1]", "a[:, 1] = a[0, 1:]", "a.clamp_(min=a[0])",
                                  "a.sub_(a.t().t())", "a.add_(a.view(6)[:3].view(3))", "a.sub_(a[1, 1])",
                                  "a.mul_(a[0, 0])", "a.copy_(a[1, 2])", "a.copy_(a.t().reshape(2, 3))",
                                  "a.view(3, 2).copy_(a.t())", "a[:, :2].copy_(a[:, 1:])",
                                  "a[0].copy_(a[0])", "a[0].add_(a[0, 1])", "a[1, 1].add_(a[1, 1])",
                                  "a.view(3, 2)[...] = a.t()", "a[:, 0:2] = a[:, 1:3]", "a[0, 0:2] = a[0, 1:3]",
                                  "a[...] = a[0]", "a[...] = a[0:1]", "a[0:1] = a[1:2]", "a[:] = a[1, 1]",
                                  "a.view(3, 2)[...] = a.t()[None]"])
def test_in_place_ops_on_partly_overlapping_memory(code):
    """torch refuses an in-place elementwise op whose operand partly overlaps the memory it
    writes (the result would depend on the order of the writes); copies are allowed."""
    def run(lib):
        a = lib.arange(6.0).reshape(2, 3)
        return _outcome(lambda: (exec(code, {"a": a}), a.tolist())[1])
    assert run(fg) == run(torch)


@pytest.mark.parametrize("call", ["L.is_tensor(L.ones(1))", "L.is_tensor(1.0)", "L.is_tensor(L.nn.Parameter(L.ones(1)))",
                                  "L.numel(L.ones(2, 3))", "L.numel([1])", "L.get_default_dtype()",
                                  "[d.is_signed for d in (L.float32, L.float64, L.int64, L.bool)]",
                                  "[d.is_floating_point for d in (L.float32, L.float64, L.int64, L.bool)]"])
def test_small_torch_helpers(call):
    assert _eval(call, fg) == _eval(call, torch)


@pytest.mark.parametrize("code", ["v[0] = 1.0", "v[0] = L.ones(3)", "v[:, 0] = 5.0", "v[1, 1] = 2.0",
                                  "v[0, :, 1:] = 3.0", "v[1] = L.arange(3.0)"])
def test_setitem_into_an_expanded_tensor(code):
    """t[key] = v on an expand's view writes only the selected region, as torch's copy_ into
    t[key]: allowed where that region overlaps nothing."""
    def run(lib):
        a = lib.zeros(2, 3)
        v = a.expand(2, 2, 3)
        return _outcome(lambda: (exec(code, {"v": v, "L": lib}), a.tolist())[1])
    assert run(fg) == run(torch)


def test_clamp_with_one_tensor_bound_lists_torchs_three_edges():
    def run(lib):
        x = lib.ones(3, requires_grad=True)
        m = lib.zeros(3, requires_grad=True)
        out = []
        for y in (x.clamp(min=m), x.clamp(max=m), x.clamp(m, m * 2), x.clamp(min=0.5)):
            out.append((type(y.grad_fn).__name__,
                        [(type(n).__name__ if n is not None else None, i) for n, i in y.grad_fn.next_functions]))
        return out
    assert run(fg) == run(torch)


OVERFLOW_CALLS = [
    'L.full((2,), 1e300)', 'L.full((2,), 3.4028235e38 * 1.0000001)', 'L.full((2,), float("inf"))',
    'L.full((2,), 1e300, dtype=L.float64)', 'L.full((2,), float("nan"), dtype=L.int64)',
    'L.full((2,), 1e19, dtype=L.int64)', 'L.full((2,), 2**63)', 'L.full((2,), -2**63)',
    'L.full((2,), 2.5, dtype=L.int64)', 'L.zeros(2).fill_(1e300)', 'L.zeros(2).fill_(-1e39)',
    'L.zeros(2).fill_(3.4e38)', 'L.zeros(2, dtype=L.int64).fill_(float("nan"))',
    'L.zeros(2, dtype=L.int64).fill_(1e30)', 'L.zeros(2, dtype=L.int64).fill_(2**63)',
    'L.tensor([1e20], dtype=L.int64)', 'L.tensor([float("nan")], dtype=L.int64)',
    'L.tensor([1.5, -2.7], dtype=L.int64)', 'L.tensor([1e300], dtype=L.float32)', 'L.tensor(1e300)',
    'L.zeros(2) + 1e300', 'L.full((2,), -1.5, dtype=L.bool)', 'L.full_like(L.arange(3), float("nan"))',
    '_setitem(L.zeros(2, dtype=L.int64), float("nan"))', '_setitem(L.zeros(2, dtype=L.int64), 1e30)',
    '_setitem(L.zeros(2, dtype=L.int64), 7.9)', '_setitem(L.zeros(2), 1e300)',
]


def _setitem(t, v):
    t[0] = v
    return t


@pytest.mark.parametrize("call", OVERFLOW_CALLS)
def test_numbers_that_overflow_the_dtype(call):
    """torch refuses a number its dtype cannot hold (c10's checked_convert), where NumPy would
    store inf or the minimum integer; rounding, inf and nan into floats are fine."""
    def run(lib):
        return _outcome(lambda: repr(eval(call, {"L": lib, "_setitem": _setitem}))).__repr__() \
            .replace("torch.", "").replace("fusegrad.", "").replace("fg.", "")
    assert run(fg) == run(torch)


def test_explain_shows_the_backward_kernels_before_the_backward_runs():
    """explain() runs one call; the backward that gradients flowing into it will run is
    scheduled too, so its kernels and their generated source are described."""
    f = fg.compile(lambda x, w: (x @ w).tanh() * x.sum())
    x = fg.tensor(np.ones((4, 3), np.float32), requires_grad=True)
    w = fg.ones(3, 2, requires_grad=True)
    text = f.explain(x, w)
    forward, backward = text.split("## backward kernels and generated source")
    assert "## forward kernels and generated source" in forward and "def kernel(" in forward
    assert "def kernel(" in backward and "ran: not run yet" in backward
    before = fg.cache_info()
    y = f(x, w)
    y.sum().backward()
    after = fg.cache_info()
    assert after.misses == before.misses           # the backward explain scheduled is reused
    tw = torch.ones(3, 2, requires_grad=True)
    tx = torch.ones(4, 3, requires_grad=True)
    ((tx @ tw).tanh() * tx.sum()).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5)


@pytest.mark.parametrize("target_dtype", ["float64", "int64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_with_a_target_of_another_dtype(target_dtype, reduction):
    """torch computes in the promoted dtype under one MseLossBackward0 node."""
    def run(lib):
        x = lib.tensor(np.linspace(0, 1, 6).reshape(2, 3).astype(np.float32), requires_grad=True)
        t = lib.ones(2, 3, dtype=getattr(lib, target_dtype))
        loss = lib.nn.functional.mse_loss(x, t, reduction=reduction)
        g, = lib.autograd.grad(loss.sum(), x)
        return str(loss.dtype).split(".")[1], type(loss.grad_fn).__name__, loss.detach().tolist(), g.tolist()
    got, want = run(fg), run(torch)
    assert got[:2] == want[:2]
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)
    np.testing.assert_allclose(got[3], want[3], rtol=1e-6)


@pytest.mark.parametrize("code", [
    "x.expand(2, 3).sigmoid()", "x.expand(2, 3) * 2", "x.expand(2, 3) + a", "a.t().t().exp()",
    "L.arange(6.).reshape(3, 2).t().expand(2, 2, 3).exp()", "x.reshape(3, 1).expand(3, 4).exp()",
    "a.t() * x.reshape(3, 1)", "x.reshape(3, 1).expand(3, 2) + a.t()", "b.permute(2, 0, 1).exp()",
    "b.permute(1, 2, 0) + 1", "b.transpose(0, 2).expand(3, 4, 3, 2).tanh()",
    "x.reshape(1, 3, 1).expand(2, 3, 4).neg()", "x.expand(4, 3).t().exp()", "x.expand(2, 3).t() + a.t()"])
def test_elementwise_results_have_torchs_strides(code):
    """TensorIterator's layout: dims ordered by the operands' strides, a broadcast dim deciding
    nothing (NumPy put an expand's stride-0 dim innermost: strides (1, 2), so .view(6) raised)."""
    def run(lib):
        env = {"L": lib, "x": lib.arange(3.0), "a": lib.arange(6.0).reshape(2, 3),
               "b": lib.arange(24.0).reshape(2, 3, 4)}
        t = eval(code, env)
        return t.stride(), t.is_contiguous(), np.array(t.tolist())
    got, want = run(fg), run(torch)
    assert got[:2] == want[:2]
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)


@pytest.mark.parametrize("code", ["e[...] = t", "e[...] = 1.0", "e[:] = 1.0", "e[:, :] = L.ones(2, 3)",
                                  "e.copy_(t)", "e.fill_(t)", "e.fill_(1.0)", "e.zero_()", "e[0] = t",
                                  "e[0, 0] = t", "e[0][...] = 1.0", "e[0] = L.ones(2, 3)"])
def test_writes_into_an_expand(code):
    """torch refuses a copy into memory whose elements alias (an expand), even of a number;
    only fill_ and zero_ of a number, and writes into a region without aliases, go through."""
    def run(lib):
        x = lib.zeros(2, 3)
        env = {"L": lib, "e": x.expand(2, 2, 3), "t": lib.tensor(5.0)}
        return _outcome(lambda: (exec(code, env), x.tolist())[1])
    assert run(fg) == run(torch)
