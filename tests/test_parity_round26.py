"""Round 26 of torch parity (probe B's findings): cross_entropy with label smoothing over zero
classes; the strides torch gives *_like of non-dense tensors, elementwise results over permuted
size-1 dims, advanced indexing of permuted tensors and batched products, each compared with
torch eagerly and inside fg.compile (a stride decides whether `.view(-1)` works)."""
import numpy as np
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch")
from parity_support import outcome  # noqa: E402  (after the skip)


def _both_modes(run):
    """run(L, wrap) for torch, fusegrad eager and fg.compile: all three must agree."""
    expected = run(torch, lambda fn: fn)
    assert run(fg, lambda fn: fn) == expected
    assert run(fg, fg.compile) == expected
    return expected


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("shape", [(3, 0), (0,), (0, 0)])
def test_cross_entropy_with_label_smoothing_over_no_classes(shape, reduction):
    """Probability targets, label_smoothing > 0 and zero classes: torch divides the smoothing by
    the number of classes in C++ (inf, which meets only empty tensors); Python's division raised
    ZeroDivisionError."""
    def run(L, wrap):
        F = L.nn.functional
        x = L.zeros(shape, requires_grad=True)
        dim = 0 if len(shape) == 1 else 1

        def call():
            loss = wrap(lambda x: F.cross_entropy(x, x.detach().softmax(dim), label_smoothing=0.1,
                                                  reduction=reduction))(x)
            loss.sum().backward()
            return [repr(v) for v in np.asarray(loss.tolist(), dtype=np.float64).ravel()], tuple(x.grad.shape)
        return outcome(call)
    _both_modes(run)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_cross_entropy_with_label_smoothing_and_class_targets_over_no_samples(reduction):
    def run(L, wrap):
        F = L.nn.functional
        x = L.zeros(0, 4, requires_grad=True)
        loss = wrap(lambda x: F.cross_entropy(x, L.zeros(0, dtype=L.int64), label_smoothing=0.2,
                                              reduction=reduction))(x)
        return outcome(lambda: [repr(v) for v in np.asarray(loss.tolist(), dtype=np.float64).ravel()])
    _both_modes(run)
