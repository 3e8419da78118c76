"""F.affine_grid and F.grid_sample (fusegrad/nn/grid_sample.py) against torch: values and the
gradients of the input, the grid and theta, in every mode (bilinear, nearest), padding mode and
corner alignment; torch's checks, texts and warning."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is the oracle")

import fusegrad as fg  # noqa: E402

_RNG = np.random.default_rng(0)
X = _RNG.standard_normal((2, 3, 5, 6))
# (entries chosen so that no grid point falls exactly on a pixel, where the grid's gradient is
# one-sided and either side is right)
THETA = np.array([[[0.9137, 0.3071, 0.1013], [-0.2029, 1.1047, -0.1531]],
                  [[1.2093, -0.4117, 0.3029], [0.5071, 0.8113, 0.2047]]])
GRID = _RNG.uniform(-1.3, 1.3, (2, 4, 7, 2))
WEIGHTS = _RNG.standard_normal((2, 3, 4, 7))


def _run(T, mode, padding_mode, align_corners, affine):
    F = T.nn.functional
    x = T.tensor(X, requires_grad=True)
    if affine:
        leaf = T.tensor(THETA, requires_grad=True)
        grid = F.affine_grid(leaf, (2, 3, 4, 7), align_corners=align_corners)
    else:
        leaf = grid = T.tensor(GRID, requires_grad=True)
    out = F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    (out * T.tensor(WEIGHTS)).sum().backward()
    return out.detach().numpy(), x.grad.numpy(), leaf.grad.numpy()


@pytest.mark.parametrize("affine", [False, True], ids=["grid", "affine"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_values_and_gradients_as_torch(mode, padding_mode, align_corners, affine):
    ours, theirs = _run(fg, mode, padding_mode, align_corners, affine), _run(torch, mode, padding_mode,
                                                                             align_corners, affine)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


ERRORS = {
    "dtype": lambda T: T.nn.functional.grid_sample(T.ones(1, 1, 3, 4), T.zeros(1, 2, 3, 2, dtype=T.float64),
                                                   align_corners=False),
    "batch": lambda T: T.nn.functional.grid_sample(T.ones(1, 1, 3, 4), T.zeros(2, 2, 3, 2), align_corners=False),
    "last-dim": lambda T: T.nn.functional.grid_sample(T.ones(1, 1, 3, 4), T.zeros(1, 2, 3, 1), align_corners=False),
    "mode": lambda T: T.nn.functional.grid_sample(T.ones(1, 1, 3, 4), T.zeros(1, 2, 3, 2), mode="foo"),
    "padding": lambda T: T.nn.functional.grid_sample(T.ones(1, 1, 3, 4), T.zeros(1, 2, 3, 2), padding_mode="foo"),
    "affine-size": lambda T: T.nn.functional.affine_grid(T.zeros(1, 2, 3), (1, 1, 2), align_corners=False),
    "affine-theta": lambda T: T.nn.functional.affine_grid(T.zeros(1, 1, 3), (1, 1, 2, 3), align_corners=False),
    "affine-int": lambda T: T.nn.functional.affine_grid(T.zeros(1, 2, 3, dtype=T.int64), (1, 1, 2, 3),
                                                        align_corners=False),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_as_torch(case):
    def outcome(T):
        try:
            ERRORS[case](T)
        except Exception as error:       # noqa: BLE001
            return type(error).__name__, str(error).replace("torch.", "fg.")
        return "passed"
    assert outcome(fg) == outcome(torch)


def test_align_corners_default_warns_and_is_false():
    def run(T):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            grid = T.nn.functional.affine_grid(T.tensor(THETA), (2, 3, 4, 7))
            out = T.nn.functional.grid_sample(T.tensor(X), grid)
        return out.numpy(), [str(w.message) for w in caught]
    ours, theirs = run(fg), run(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-9, atol=1e-12)
    assert ours[1] == theirs[1] and len(ours[1]) == 2


def test_inside_compile_matches_eager():
    def f(x, grid):
        return fg.nn.functional.grid_sample(x, grid, align_corners=False).sum()
    x, grid = fg.tensor(X), fg.tensor(GRID)
    np.testing.assert_allclose(fg.compile(fg.grad(f, argnums=(0, 1)))(x, grid)[1].numpy(),
                               fg.grad(f, argnums=(0, 1))(x, grid)[1].numpy(), rtol=1e-10, atol=1e-12)
