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


_NAN = float("nan")


@pytest.mark.parametrize("case", [
    # addmm, addmv and addbmm skip the product when alpha is 0 (a NaN in it does not reach the
    # result, as BLAS reads neither matrix); addr computes it
    lambda L: L.addmm(L.ones(2, 2), L.tensor([[_NAN, 1.0], [1.0, 1.0]]), L.ones(2, 2), alpha=0),
    lambda L: L.addmv(L.ones(2), L.tensor([[_NAN, 1.0], [1.0, 1.0]]), L.ones(2), alpha=0, beta=2),
    lambda L: L.addbmm(L.ones(2, 2), L.tensor([[[_NAN, 1.0], [1.0, 1.0]]]), L.ones(1, 2, 2), alpha=0),
    lambda L: L.addr(L.ones(2, 2), L.tensor([_NAN, 1.0]), L.ones(2), alpha=0),
    lambda L: L.histogram(L.zeros(0), 3).bin_edges,                      # an empty input: range [0, 1]
    lambda L: L.cummax(L.zeros(0), 0).values,
    lambda L: L.cummin(L.zeros(3, 0), 1).indices,
    lambda L: L.dist(L.tensor([1.0, 2.0]), L.tensor([2.0, 4.0], dtype=L.float64)),     # promoted as sub
    lambda L: L.dist(L.tensor([1, 2]), L.tensor([2.0, 4.0])),
    lambda L: L.dist(L.tensor([1, 2]), L.tensor([2, 4])),
    lambda L: L.nextafter(L.tensor([1]), L.tensor([2])),
    lambda L: L.cumprod(L.tensor([1.0, 2.0, 3.0]), 0, out=L.zeros(5)),                  # out= resized
    lambda L: L.median(L.tensor([[3.0, 1.0, 2.0]]), 1, out=(L.zeros(1), L.zeros(1, dtype=L.int64)))[0],
    lambda L: L.masked_select(L.tensor([1.0, 2.0]), L.tensor([True, False]), out=L.zeros(1)),
    lambda L: L.cat([L.ones(2), L.zeros(1)], out=L.zeros(3)),
    lambda L: L.cumprod(L.tensor([1.0, 2.0], requires_grad=True), 0, out=L.zeros(2)),
    lambda L: L.trapezoid(L.tensor(1.0)),                                   # errors, not NumPy's
    lambda L: L.cumulative_trapezoid(L.tensor(1.0)),
    lambda L: L.unique(L.tensor(1.0), dim=0),
    lambda L: L.cross(L.tensor([[True, False, True]]), L.tensor([[True, False, True]]), dim=1),
    lambda L: L.cov(L.tensor([True, False])),
    lambda L: L.corrcoef(L.tensor([True, False])),
    lambda L: L.histc(L.tensor([1.0, float("inf")]), 3),
    lambda L: L.histc(L.tensor([1.0, _NAN]), 3),
    lambda L: L.histc(L.tensor([1.0, float("inf")]), 3, min=0, max=2),
], ids=lambda case: "")
def test_probe_findings_follow_torch(case):
    """Findings of a fuzz of the functions added in this round against torch 2.13."""
    assert_same_outcome(lib_outcome(fg, case), lib_outcome(torch, case), rtol=1e-6)


@pytest.mark.parametrize("value", [0.0, _NAN, float("inf"), 3.0])
def test_det_of_a_one_by_one_matrix_has_gradient_one(value):
    grads = []
    for lib in (fg, torch):
        x = lib.tensor([[value]], requires_grad=True)
        lib.det(x).backward()
        grads.append(float(x.grad))
    assert grads[0] == grads[1] == 1.0


def test_nextafter_passes_the_gradient_to_self():
    for lib in (fg, torch):
        a, b = lib.tensor([1.0, 2.0], requires_grad=True), lib.tensor([3.0, 0.0], requires_grad=True)
        lib.nextafter(a, b).sum().backward()
        assert a.grad.tolist() == [1.0, 1.0] and b.grad.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("make", [
    lambda L: L.unique(L.tensor([1.0, 2.0], requires_grad=True)),
    lambda L: L.unique_consecutive(L.tensor([1.0, 2.0], requires_grad=True)),
    lambda L: L.unique(L.tensor([[1.0, 2.0]], requires_grad=True), dim=0),
])
def test_unique_has_no_derivative_with_torchs_class_and_text(make):
    errors = []
    for lib in (fg, torch):
        with pytest.raises(NotImplementedError) as caught:
            make(lib).sum().backward()
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    compiled = fg.compile(lambda x: fg.unique(x * 2).sum())
    with pytest.raises(NotImplementedError, match=r"^the derivative for '_unique2' is not implemented\.$"):
        compiled(fg.tensor([1.0, 2.0], requires_grad=True)).backward()


@pytest.mark.parametrize("make_loader", [
    lambda L, data: L.utils.data.DataLoader(data, batch_size=3, shuffle=True,
                                            generator=L.Generator().manual_seed(5)),
    lambda L, data: L.utils.data.DataLoader(L.utils.data.ConcatDataset([data, data]), batch_size=4, shuffle=True),
    lambda L, data: L.utils.data.DataLoader(data, batch_size=3),
])
def test_dataloader_draws_torchs_base_seed_before_shuffling(make_loader):
    """torch's DataLoader iterator draws one int64 base seed from the loader's generator (for
    its workers) before the sampler draws its permutation: the batches and the generator's
    state afterwards are torch's after the same seed."""
    import torch.utils.data  # noqa: F401  (torch.utils.data is a submodule)
    results = []
    for lib in (fg, torch):
        lib.manual_seed(3)
        loader = make_loader(lib, list(range(7)))
        results.append(([batch.tolist() for _ in range(2) for batch in loader], lib.rand(2).tolist()))
    assert results[0] == results[1]


@pytest.mark.parametrize("output", [
    lambda a: (a * a).sum().reshape(1),          # one element but 1-d: torch.func wants a scalar
    lambda a: a * a,
    lambda a: 3.0,
])
def test_func_grad_takes_only_a_scalar_output(output):
    from torch.func import grad as torch_grad
    errors = []
    for grad, lib in ((fg.func.grad, fg), (torch_grad, torch)):
        with pytest.raises(RuntimeError) as caught:
            grad(output)(lib.ones(3))
        errors.append(str(caught.value))
    assert errors[0] == errors[1]


def test_rnn_of_an_empty_sequence_has_torchs_error():
    for lib in (fg, torch):
        with pytest.raises(RuntimeError, match="^Expected sequence length to be larger than 0 in RNN$"):
            lib.nn.LSTM(4, 6)(lib.zeros(0, 3, 4))
