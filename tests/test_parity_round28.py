"""Round 28 of torch parity (findings of probe F): parameters that are detach()es of views of one
buffer, updated by one compiled optimizer step, no longer send fg.compile into endless grafts
(RecursionError), and `w[::2] = v` where w views an expand of v's own memory passes torch's
overlap rule for a value of another shape inside fg.compile as it does eagerly."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")


def _shared_buffer_training(L, compile_fn, shape: str, momentum: float, pass_buffer: bool, steps: int = 3):
    """Two leaves over one flat buffer (w = a part of it as a matrix, b another part), trained by
    SGD inside one step function that may also read the buffer itself."""
    buffer = L.arange(15.) * 0.1
    if shape == "matrix":
        w = buffer[:8].view(4, 2).detach().requires_grad_()
    elif shape == "slice":
        w = buffer[:8].detach().requires_grad_()
    else:
        w = buffer.detach().requires_grad_()        # the whole buffer, and b a part of it
    b = buffer[8:12].detach().requires_grad_()
    optimizer = L.optim.SGD([w, b], lr=0.1, momentum=momentum)

    def step(x, whole):
        optimizer.zero_grad()
        loss = (w ** 2).sum() * x.sum() + (b ** 3).sum()
        loss.backward()
        optimizer.step()
        return loss.detach(), (whole * 1.0).sum()

    run = compile_fn(step)
    history = []
    for _ in range(steps):
        loss, total = run(L.ones(3), buffer if pass_buffer else buffer * 1)
        history.append([float(loss), float(total)])
    return np.array(history), buffer.numpy().copy(), w.detach().numpy().copy(), b.detach().numpy().copy()


@pytest.mark.parametrize("pass_buffer", [True, False])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("shape", ["matrix", "slice", "whole"])
def test_parameters_over_one_buffer_train_in_one_compiled_step(shape, momentum, pass_buffer):
    """Each parameter's write reached the buffer, whose other view's detach() took it and wrote
    it back into the buffer: RecursionError. Values, buffer and parameters as torch's."""
    expected = _shared_buffer_training(torch, lambda f: f, shape, momentum, pass_buffer)
    for compile_fn in (lambda f: f, fg.compile):
        got = _shared_buffer_training(fg, compile_fn, shape, momentum, pass_buffer)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def _write_into_an_expand_of_itself(L, x, form: str):
    v = (x * 1).sum()
    if form == "one element of a strided expand":
        w = v[None][:, None].expand(-1, 2)[:, ::2]
        w[::2] = v
    elif form == "part of an expand":
        w = v[None][:, None].expand(-1, 2)
        w[:, 1:] = v
    elif form == "a row of an expand":
        w = (x * 1).expand(2, 3)
        w[0] = L.tensor(5.)
    else:       # torch: every row of the expand is one memory
        w = (x * 1).expand(2, 3)
        w[0:2] = L.tensor(5.)
    return w * 1, v * 1


FORMS = ["one element of a strided expand", "part of an expand", "a row of an expand", "all rows of an expand"]


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("form", FORMS)
def test_setitem_into_an_expand_of_the_value_itself(form, compiled):
    def run(L):
        x = L.tensor([1., 2., 3.], requires_grad=True)
        f = lambda x: _write_into_an_expand_of_itself(L, x, form)     # noqa: E731
        try:
            w, v = (fg.compile(f) if compiled and L is fg else f)(x)
            (w.sum() + v).backward()
        except RuntimeError as exc:
            return ("error", str(exc))
        return ("value", w.tolist(), v.item(), x.grad.tolist())
    assert run(fg) == run(torch)


# ------------------------------------------------------------------------------------------
# A backward inside a compiled call that goes on into history from before the call (probe G
# F1): it reaches the leaves there during the call, so a step, a clip or a read of .grad later
# in the call sees their gradients (they were filled only when the call returned: the step
# used no gradient, silently, or raised the version error once the deferred backward ran).
def _set_weights(L, module):
    with L.no_grad():
        for p in module.parameters():
            p.copy_(L.tensor(np.linspace(-0.5, 0.5, p.numel(), dtype=np.float32).reshape(tuple(p.shape))))


def _eager_forward_compiled_step(L, compile_fn, layers: int, optimizer: str, set_to_none: bool):
    model = L.nn.Linear(3, 2) if layers == 1 else L.nn.Sequential(L.nn.Linear(3, 4), L.nn.ReLU(), L.nn.Linear(4, 2))
    _set_weights(L, model)
    opt = L.optim.SGD(model.parameters(), lr=0.1, momentum=0.5) if optimizer == "SGD" else \
        L.optim.Adam(model.parameters(), lr=0.05)

    def loss_and_step(out, y):
        opt.zero_grad(set_to_none=set_to_none)
        loss = L.nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        return loss.detach()

    step = compile_fn(loss_and_step)
    x = L.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    y = L.tensor([0, 1])
    losses = [float(step(model(x), y)) for _ in range(4)]
    return losses, [p.detach().numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
@pytest.mark.parametrize("layers", [1, 2])
def test_an_eager_forward_trains_through_a_compiled_loss_and_step(layers, optimizer, set_to_none):
    want = _eager_forward_compiled_step(torch, lambda f: f, layers, optimizer, set_to_none)
    got = _eager_forward_compiled_step(fg, fg.compile, layers, optimizer, set_to_none)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _upstream_cases():
    def clip(L, compile_fn):
        w = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = w * 4                                   # history from before the call

        def step(h):
            (h * h).sum().backward()
            norm = L.nn.utils.clip_grad_norm_([w], 1.0)
            return norm, w.grad * 1
        norm, grad = compile_fn(step)(h)
        return [float(norm)] + grad.tolist() + w.grad.tolist()

    def manual_update(L, compile_fn):
        w = L.tensor([1.0, -2.0, 0.5], requires_grad=True)

        def step(h):
            (h ** 3).sum().backward()
            with L.no_grad():
                w.sub_(0.1 * w.grad)
            return w * 1
        out = compile_fn(step)(w.exp())
        return out.tolist() + w.grad.tolist()

    def compiled_model_then_step(L, compile_fn):
        model = L.nn.Linear(3, 1)
        _set_weights(L, model)
        opt = L.optim.SGD(model.parameters(), lr=0.1)

        def step(out):
            opt.zero_grad()
            (out ** 2).mean().backward()
            opt.step()
        forward, update = compile_fn(model), compile_fn(step)
        for _ in range(3):
            update(forward(L.ones(4, 3)))
        return [v for p in model.parameters() for v in p.detach().numpy().ravel().tolist()]

    def tied_view_made_once(L, compile_fn):
        class Tied(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = L.nn.Linear(4, 2, bias=False)
                self.dec_w = self.enc.weight.t()         # a view with history, made once
        m = Tied()
        _set_weights(L, m)
        opt = L.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            ((x @ m.enc.weight.t() @ m.dec_w.t() - x) ** 2).mean().backward(retain_graph=True)
            opt.step()
        run = compile_fn(step)
        run(L.tensor([[1.0, 2.0, 3.0, 4.0]]))
        return m.enc.weight.detach().numpy().ravel().tolist()
    return {f.__name__: f for f in (clip, manual_update, compiled_model_then_step, tied_view_made_once)}


@pytest.mark.parametrize("case", list(_upstream_cases()))
def test_gradients_through_history_from_before_the_call_are_there_within_the_call(case):
    fn = _upstream_cases()[case]
    want = fn(torch, lambda f: f)
    np.testing.assert_allclose(fn(fg, lambda f: f), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fn(fg, fg.compile), want, rtol=1e-5, atol=1e-6)


def _hidden_state_carried(L, compile_fn, detach: bool):
    """A recurrent step whose hidden state carries history into the next call (not detached):
    the second backward raises before the optimizer changes anything, as torch's."""
    cell = L.nn.Linear(2, 2)
    _set_weights(L, cell)
    opt = L.optim.SGD(cell.parameters(), lr=0.1)

    def step(x, h):
        opt.zero_grad()
        h = L.tanh(cell(x) + h)
        h.sum().backward()
        opt.step()
        return h
    run, h, log = compile_fn(step), L.zeros(1, 2), []
    for _ in range(3):
        try:
            h = run(L.tensor([[1.0, -1.0]]), h)
        except RuntimeError as exc:
            log.append(str(exc))
            break
        h = h.detach() if detach else h
        log.append(cell.weight.detach().numpy().round(6).tolist())
    return log + [cell.weight.detach().numpy().round(6).tolist()]


@pytest.mark.parametrize("detach", [True, False])
def test_a_hidden_state_with_history_from_the_last_call(detach):
    want = _hidden_state_carried(torch, lambda f: f, detach)
    assert _hidden_state_carried(fg, fg.compile, detach) == want


def test_a_saved_tensor_written_in_the_call_before_the_backward_raises_torchs_error():
    """The backward into the history from before the call checks saved tensors against the
    version counters as the call's writes left them (w was saved by w * w, then written)."""
    def run(L, compile_fn):
        w = L.tensor([1.0, 2.0], requires_grad=True)
        v = w * 1
        h = v * v

        def step(h):
            with L.no_grad():
                v.add_(1)
            h.sum().backward()
        try:
            compile_fn(step)(h)
        except RuntimeError as exc:
            return str(exc)
        return w.grad.tolist()
    want = run(torch, lambda f: f)
    assert "modified by an inplace operation" in want
    assert run(fg, fg.compile) == want


def test_a_large_kernels_parallel_variant_counts_apart(monkeypatch):
    """Probe G F2: the background thread's parallel variant of a large kernel landed in
    kernels_compiled / disk_hits whenever it finished, during some later same-shape call."""
    monkeypatch.setenv("FUSEGRAD_PARALLEL", "always")       # (the variant on the first call, not a timing)
    f = fg.compile(fg.value_and_grad(lambda x: (fg.tanh(x) * fg.sigmoid(x) + fg.exp(-x * x * 0.25)).sum()))
    x = fg.randn(1 << 20)
    f(x)
    fg.wait_for_compiles()
    first = fg.cache_info()
    for _ in range(3):
        f(x)
    fg.wait_for_compiles()
    later = fg.cache_info()
    assert first.parallel_variants >= 1
    assert (later.kernels_compiled, later.disk_hits, later.compile_seconds, later.misses, later.parallel_variants) == \
        (first.kernels_compiled, first.disk_hits, first.compile_seconds, first.misses, first.parallel_variants)
    assert later.hits == first.hits + 3


def test_explain_of_a_call_whose_backward_reaches_earlier_history_frees_nothing():
    """explain()'s dry run takes the backward into the history from before the call too, but
    leaves it (and w.grad) as it was, for the real call."""
    def run(L):
        w = L.tensor([1.0, 2.0], requires_grad=True)
        h = w * w

        def step(h):
            (h * 3).sum().backward()
            return w.grad * 1
        if L is fg:
            compiled = fg.compile(step)
            assert "backward() goes on into history from before the call" in compiled.explain(h)
            assert w.grad is None
            step = compiled
        return step(h).tolist(), w.grad.tolist()
    assert run(fg) == run(torch)


@pytest.mark.parametrize("compiled", [False, True])
def test_data_assigned_another_tensors_memory_in_the_call_then_written(compiled):
    """`a.data = b` with both from outside the call gives a b's memory; the writes after it
    find that memory's readers (Trace.lifted_by_memory gives way to a scan)."""
    def run(L):
        a, b = L.tensor([1.0, 2.0]), L.tensor([10.0, 20.0])

        def f(a, b):
            s = a * 1
            a.data = b
            a.add_(1)
            b.mul_(2)
            return s + a
        out = (fg.compile(f) if compiled and L is fg else f)(a, b)
        return out.tolist(), a.tolist(), b.tolist()
    assert run(fg) == run(torch)


def _upstream_inputs(L, compile_fn, which: str):
    w = L.tensor([[0.0, 0.1, 0.2], [0.3, 0.4, 0.5]], requires_grad=True)
    x = L.ones(4, 3)
    h0 = x @ w.t()
    h = h0.tanh()

    def step(h, x):
        if which == "leaf behind only":
            (h * h).sum().backward(inputs=[w])
        elif which == "leaf in the call too":
            (h * (x @ w.t())).sum().backward(inputs=[w])
        else:                                   # a non-leaf from before the call
            (h * h).sum().backward(inputs=[h0])
    compile_fn(step)(h, x)
    grads = [w.grad, h0.grad if which == "non-leaf" else None]
    return [None if g is None else np.round(g.numpy(), 6).tolist() for g in grads]


@pytest.mark.parametrize("which", ["leaf behind only", "leaf in the call too", "non-leaf"])
def test_backward_with_inputs_goes_into_history_from_before_the_call(which):
    """backward(inputs=...) in fg.compile reaches inputs behind tensors from before the call (it
    stopped at the call's edge: w.grad None or only its in-call part; h0.grad None)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (reading a non-leaf's .grad)
        assert _upstream_inputs(fg, fg.compile, which) == _upstream_inputs(torch, lambda f: f, which)


def test_a_failing_backward_into_earlier_history_leaves_unfinished_leaves_alone():
    """The backward meets a freed node behind the call: a leaf that node also sends a gradient to
    gets none (torch's AccumulateGrad waits for all of them), as eagerly."""
    def run(L, compile_fn):
        Wh = L.tensor(np.eye(3, dtype=np.float32) * 0.5, requires_grad=True)
        Wx = L.tensor(np.ones((3, 3), np.float32) * 0.1, requires_grad=True)

        def step(h):
            h2 = (h @ Wh).tanh()
            h2.sum().backward()
            return h2
        f = compile_fn(step)
        h = (L.ones(2, 3) @ Wx).tanh()
        h2 = f(h)
        Wh.grad = Wx.grad = None
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            f(h2 + h)
        return Wh.grad, Wx.grad
    assert run(fg, fg.compile) == run(torch, lambda f: f) == (None, None)


def test_a_create_graph_backward_into_earlier_history_then_another_backward():
    """A gradient penalty in the call: backward(create_graph=True) reaches history from before
    the call (it goes on there when the call returns), then a backward of a function of a
    .grad reaches it again (it freed that history, and the deferred one raised)."""
    def run(L, compile_fn):
        w = L.tensor([[0.5, -1.0], [1.5, 0.25]], requires_grad=True)
        v = L.tensor([[1.0, 2.0]], requires_grad=True)

        def step(h):
            (h @ v.t()).pow(2).sum().backward(create_graph=True)
            penalty = v.grad.pow(2).sum()
            penalty.backward()
            return penalty.detach()
        h = (L.tensor([[1.0, 2.0], [-1.0, 0.5]]) @ w.t()).tanh()
        value = float(compile_fn(step)(h))
        return [value, *w.grad.detach().numpy().ravel(), *v.grad.detach().numpy().ravel()]
    # (a tolerance, not rounding: the 2-term dot products of the [1, 2] @ [2, 2] gradient round
    # differently with and without FMA, which the BLAS of each library picks by CPU: 1 ulp apart
    # on an AMD EPYC, so digits rounded to 5 places differed)
    np.testing.assert_allclose(run(fg, fg.compile), run(torch, lambda f: f), rtol=2e-6)


def test_explain_puts_back_an_lr_scheduler_and_the_optimizer_groups():
    w = fg.nn.Parameter(fg.ones(3))
    opt = fg.optim.SGD([w], lr=0.1, momentum=0.9)
    sched = fg.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    extra = fg.nn.Parameter(fg.zeros(2))

    def step(x):
        opt.zero_grad()
        (w * x).sum().backward()
        opt.step()
        sched.step()
        if len(opt.param_groups) == 1:
            opt.add_param_group({"params": [extra], "lr": 1.0})
    compiled = fg.compile(step)
    compiled.explain(fg.ones(3))
    assert (opt.param_groups[0]["lr"], len(opt.param_groups), sched.last_epoch, sched.get_last_lr()) == \
        (0.1, 1, 0, [0.1])
    assert w.tolist() == [1.0, 1.0, 1.0] and not opt.state
    compiled(fg.ones(3))
    assert (opt.param_groups[0]["lr"], len(opt.param_groups), sched.last_epoch) == (0.05, 2, 1)


def _detached_leaf_of_an_argument(L, compile_fn, make: str, order: str):
    w = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    t = w * 1.5                         # history from before the call
    given = t.detach().requires_grad_() if make == "passed in" else None

    def step(t, given):
        if make == "passed in":
            u = given
        elif make == ".data":
            u = t.data.requires_grad_()
        elif make == "Parameter":
            u = L.nn.Parameter(t.detach())
        else:
            u = t.detach().requires_grad_()
        loss = (u * 3 + t * 2).sum() if order == "leaf first" else (t * 2 + u * 3).sum()
        loss.backward()
        return u
    u = compile_fn(step)(t, given)
    return u.grad.tolist(), w.grad.tolist()


@pytest.mark.parametrize("order", ["leaf first", "argument first"])
@pytest.mark.parametrize("make", ["detach()", "passed in", ".data", "Parameter"])
def test_a_leaf_over_the_memory_of_an_argument_with_history_is_a_variable_of_its_own(make, order):
    """Probe H: u = t.detach().requires_grad_() of an argument t with history from before the
    call shared t's value in the trace, so u.grad and t's leaf w.grad were both the sum of
    the two gradients (5 and 5 where torch gives 3 and 2)."""
    want = _detached_leaf_of_an_argument(torch, lambda f: f, make, order)
    assert _detached_leaf_of_an_argument(fg, fg.compile, make, order) == want
