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
