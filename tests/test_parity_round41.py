"""Round 41 of torch parity: the top-level forms of nn.functional ops (torch.conv2d,
torch.selu, ...) and the return types of the functions added in this round."""
import pickle

import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch 2.13 is the oracle of these cases")

from parity_support import assert_same_outcome, lib_outcome  # noqa: E402

_X = np.linspace(-2, 2, 2 * 3 * 6 * 6).astype(np.float32).reshape(2, 3, 6, 6)
_W = np.linspace(-1, 1, 4 * 3 * 3 * 3).astype(np.float32).reshape(4, 3, 3, 3)


def _t(lib, a, grad=False):
    return lib.tensor(a, requires_grad=grad)


@pytest.mark.parametrize("case", [
    lambda L: L.conv2d(_t(L, _X, True), _t(L, _W), padding=1, stride=2),
    lambda L: L.conv1d(_t(L, _X[0], True), _t(L, _W[:, :, 0])),
    lambda L: L.conv_transpose2d(_t(L, _X, True), _t(L, _W.transpose(1, 0, 2, 3).copy()), stride=2),
    lambda L: L.max_pool2d(_t(L, _X, True), 2),
    lambda L: L.max_pool1d(_t(L, _X[0], True), 3),
    lambda L: L.avg_pool1d(_t(L, _X[0], True), 2),
    lambda L: L.adaptive_avg_pool1d(_t(L, _X[0], True), 4),
    lambda L: L.pixel_shuffle(_t(L, _X[:, :2].reshape(1, 4, 6, 6), True), 2),
    lambda L: L.pixel_unshuffle(_t(L, _X, True), 2),
    lambda L: L.cosine_similarity(_t(L, _X, True), _t(L, _X[::-1].copy()), 1),
    lambda L: L.pairwise_distance(_t(L, _X[0, 0], True), _t(L, _X[1, 0])),
    lambda L: L.selu(_t(L, _X, True)),
    lambda L: L.celu(_t(L, _X, True), 0.5),
    lambda L: L.prelu(_t(L, _X, True), _t(L, np.float32([0.1, 0.2, 0.3]))),
    lambda L: L.rrelu(_t(L, _X, True), 0.1, 0.3),
    lambda L: L.hardshrink(_t(L, _X, True), 0.7),
    lambda L: L.threshold(_t(L, _X, True), 0.5, -1.0),
    lambda L: L.layer_norm(_t(L, _X, True), (6, 6)),
    lambda L: L.group_norm(_t(L, _X, True), 3),
    lambda L: L.conv2d(_t(L, _X), _t(L, _W[:, :2])),            # channel mismatch: torch's text
], ids=lambda case: "")
def test_top_level_forms_of_functional_ops(case):
    """torch.conv2d, torch.selu, ... are torch.nn.functional's functions under the top-level
    name: the same values, dtypes, grad_fn names and errors."""
    assert_same_outcome(lib_outcome(fg, case), lib_outcome(torch, case), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make, fields", [
    (lambda L: L.histogram(L.tensor([1.0, 2.0, 2.5]), 3), ("hist", "bin_edges")),
    (lambda L: L.frexp(L.tensor([8.0, 0.3])), ("mantissa", "exponent")),
    (lambda L: L.aminmax(L.tensor([3.0, -1.0])), ("min", "max")),
    (lambda L: L.slogdet(L.tensor([[2.0, 1.0], [1.0, 3.0]])), ("sign", "logabsdet")),
    (lambda L: L.median(L.tensor([[3.0, 1.0, 2.0]]), 1), ("values", "indices")),
    (lambda L: L.cummax(L.tensor([1.0, 3.0, 2.0]), 0), ("values", "indices")),
])
def test_named_results_have_torchs_type_name_fields_and_pickle(make, fields):
    ours, theirs = make(fg), make(torch)
    assert type(ours).__name__ == type(theirs).__name__
    for field in fields:
        np.testing.assert_allclose(getattr(ours, field).numpy(), getattr(theirs, field).numpy(), rtol=1e-6)
    again = pickle.loads(pickle.dumps(ours))
    assert type(again) is type(ours) and all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(again, ours))
    assert repr(ours).startswith(f"fg.return_types.{type(theirs).__name__}(\n{fields[0]}=")
