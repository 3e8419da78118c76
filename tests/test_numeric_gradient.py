"""fg.gradient (torch.gradient, tracer/numeric_gradient.py) against torch: values, dtypes, node
names, errors, and the gradient of a loss through it."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402

_X = [1., 2., 4., 8., 10.]
_COORDS = [0., 1., 1.5, 3.5, 4.]


def _m(T):
    return T.arange(12.).reshape(3, 4) ** 2


CASES = {
    "default": lambda T: T.gradient(T.tensor(_X)),
    "scalar-spacing": lambda T: T.gradient(T.tensor(_X), spacing=2.),
    "int-spacing": lambda T: T.gradient(T.tensor(_X), spacing=2),
    "listed-spacing": lambda T: T.gradient(T.tensor(_X), spacing=[2]),
    "edge-order-2": lambda T: T.gradient(T.tensor(_X), edge_order=2),
    "coordinates": lambda T: T.gradient(T.tensor(_X), spacing=(T.tensor(_COORDS),)),
    "coordinates-edge-order-2": lambda T: T.gradient(T.tensor(_X), spacing=(T.tensor(_COORDS),), edge_order=2),
    "2d": lambda T: T.gradient(_m(T)),
    "2d-dim": lambda T: T.gradient(_m(T), dim=1),
    "2d-dim-tuple": lambda T: T.gradient(_m(T), dim=(1,)),
    "2d-spacings": lambda T: T.gradient(_m(T), spacing=[2., 3.]),
    "2d-spacing-and-dim": lambda T: T.gradient(_m(T), spacing=[2.], dim=1),
    "2d-coordinates": lambda T: T.gradient(_m(T), spacing=(T.tensor([0., 1., 3.]), T.tensor([0., 1., 2., 4.]))),
    "2d-coordinates-edge-2": lambda T: T.gradient(_m(T), spacing=(T.tensor([0., 1., 3., 4.]),
                                                                  T.tensor([0., 1., 2., 4.])), edge_order=2),
    "coordinates-too-long": lambda T: T.gradient(_m(T), spacing=(T.tensor([0., 1., 3., 5.]),), dim=0),
    "0-d-spacing-tensor": lambda T: T.gradient(_m(T), spacing=T.tensor(2.)),
    "int-coordinates": lambda T: T.gradient(_m(T), spacing=(T.tensor([0, 1, 3]),), dim=0),
    "float64-input-float32-coordinates": lambda T: T.gradient(_m(T).double(), spacing=(T.tensor([0., 1., 3.]),), dim=0),
    "int-input": lambda T: T.gradient(T.tensor([1, 2, 4])),
    "int-input-spacing": lambda T: T.gradient(T.tensor([1, 2, 4]), spacing=2),
    "two-samples": lambda T: T.gradient(T.tensor([1., 2.])),
    "0-d": lambda T: T.gradient(T.tensor(3.)),
    "no-dims": lambda T: T.gradient(_m(T), dim=[]),
    "too-few-samples": lambda T: T.gradient(T.tensor([1., 2.]), edge_order=2),
    "one-sample": lambda T: T.gradient(T.tensor([1.])),
    "edge-order-3": lambda T: T.gradient(T.tensor(_X), edge_order=3),
    "spacing-length": lambda T: T.gradient(_m(T), spacing=[2., 3., 4.]),
    "spacing-and-dim-length": lambda T: T.gradient(_m(T), spacing=[2., 3.], dim=1),
    "2d-coordinates-element": lambda T: T.gradient(_m(T), spacing=(T.tensor([[0., 1., 3.]]),), dim=0),
    "mixed-spacing": lambda T: T.gradient(_m(T), spacing=(2, T.tensor([0., 1., 2., 4.]))),
    "dim-range": lambda T: T.gradient(_m(T), dim=2),
    "repeated-dim": lambda T: T.gradient(_m(T), dim=(0, 0)),
    "not-a-tensor": lambda T: T.gradient([1., 2.]),
}


def _outcome(T, make):
    try:
        results = make(T)
    except Exception as error:       # noqa: BLE001  (compared with torch's)
        return ("raised", type(error).__name__, str(error))
    return [(np.asarray(r.tolist()), str(r.dtype).split(".")[1]) for r in results]


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_as_torch(case):
    ours, theirs = _outcome(fg, CASES[case]), _outcome(torch, CASES[case])
    if theirs and theirs[0] == "raised":
        assert ours == theirs
        return
    assert len(ours) == len(theirs)
    for (a, dtype_a), (b, dtype_b) in zip(ours, theirs):
        assert dtype_a == dtype_b
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("coordinates", [False, True])
def test_differentiable_as_torch(edge_order, coordinates):
    values = np.linspace(-1, 2, 12).reshape(3, 4) ** 2

    def run(T):
        x = T.tensor(values, requires_grad=True)
        spacing = (T.tensor([0., 1., 3.], dtype=T.float64), T.tensor([0., .5, 2., 4.], dtype=T.float64)) \
            if coordinates else [1.5, 2.]
        parts = T.gradient(x.sin(), spacing=spacing, edge_order=edge_order)
        loss = (parts[0] * parts[1]).sum()
        loss.backward()
        return [type(p.grad_fn).__name__ for p in parts], loss.item(), x.grad.numpy()
    ours, theirs = run(fg), run(torch)
    assert ours[0] == theirs[0] == ["CatBackward0", "CatBackward0"]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-12, atol=1e-12)
