"""`.grad` is laid out as its leaf (torch's AccumulateGrad layout contract), eagerly and in
compiled calls: a dense leaf's gradient has the leaf's strides, any other leaf's is contiguous."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle for gradient strides")

# (name, make the leaf's values from a base array, the loss) -- the loss reads the leaf
# through a transpose, so its gradient comes out of a transposed product or view.
CASES = {
    "weight used as w.t()": (lambda a: a, lambda lib, w, x: (x @ w.t()).sum()),
    "transposed leaf": (lambda a: a.t(), lambda lib, w, x: (w * x.t()[:w.shape[0], :w.shape[1]]).sum()),
    "permuted 3-d leaf": (lambda a: a.reshape(2, 3, 4).permute(2, 0, 1),
                          lambda lib, w, x: (w.permute(1, 2, 0) * 3).sum()),
    "strided slice leaf": (lambda a: a[:, ::2], lambda lib, w, x: (w.t() * 2).sum()),
}


def _leaf(lib, name):
    base = (fg if lib is fg else torch).from_numpy(np.arange(24, dtype=np.float32).reshape(4, 6) / 10)
    return CASES[name][0](base).detach().requires_grad_()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", list(CASES))
def test_grad_strides_are_torchs(name, compiled):
    x_np = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    results = {}
    for lib in (fg, torch):
        w = _leaf(lib, name)
        x = lib.from_numpy(x_np.copy())
        loss_fn = CASES[name][1]

        def step(w, x):
            loss_fn(lib, w, x).backward()
        if lib is fg and compiled:
            step = fg.compile(step)
        step(w, x)
        first = w.grad.stride()
        step(w, x)                     # accumulates in place: the layout stays
        results[lib] = (w.stride(), first, w.grad.stride(), w.grad.detach().numpy().copy())
    assert results[fg][:3] == results[torch][:3]
    np.testing.assert_allclose(results[fg][3], results[torch][3], rtol=1e-6)


def test_a_linear_weight_gradient_is_contiguous():
    m = fg.nn.Linear(4, 3)
    m(fg.randn(5, 4)).sum().backward()
    assert m.weight.grad.is_contiguous() and m.weight.grad.stride() == (4, 1)
