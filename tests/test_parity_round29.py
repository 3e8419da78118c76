"""Round 29 of torch parity (findings of probe J): an `alpha` that overflows the result's dtype
raises torch's error (add, sub, rsub, their in-place forms and the optimizer's fast path) instead
of scaling to inf."""
import pytest

import fusegrad as fg

torch = pytest.importorskip("torch", reason="torch is the oracle")

ALPHA_CASES = {
    "add": lambda L: L.tensor([1.]).add(L.tensor([1.]), alpha=1e300),
    "sub": lambda L: L.sub(L.tensor([1.]), L.tensor([1.]), alpha=-1e300),
    "rsub": lambda L: L.rsub(L.tensor([1.]), L.tensor([1.]), alpha=1e300),
    "add scalar": lambda L: L.tensor([1.]).add(2.0, alpha=1e300),
    "add_": lambda L: L.tensor([1.]).add_(L.tensor([1.]), alpha=1e300),
    "sub_": lambda L: L.tensor([1.]).sub_(L.tensor([1.]), alpha=-1e39),
    "int64": lambda L: L.tensor([1]).add(L.tensor([1]), alpha=2 ** 63),
    # what fits: infinity and NaN are values; float64 results take 1e300
    "add inf": lambda L: L.tensor([1.]).add(L.tensor([1.]), alpha=float("inf")),
    "sub_ -inf": lambda L: L.tensor([1.]).sub_(L.tensor([1.]), alpha=float("-inf")),
    "add_ nan": lambda L: L.tensor([1.]).add_(L.tensor([1.]), alpha=float("nan")),
    "float64": lambda L: L.tensor([1.]).double().add_(L.tensor([1.]).double(), alpha=1e300),
    "float32 max": lambda L: L.tensor([0.]).add(L.tensor([1.]), alpha=3.4e38),
}


def _outcome(L, case):
    try:
        return ("value", repr(case(L)).replace("torch.", "fg."))
    except Exception as exc:      # noqa: BLE001 - the error is the outcome compared
        return ("error", type(exc).__name__, str(exc))


@pytest.mark.parametrize("name", list(ALPHA_CASES))
def test_alpha_overflow_matches_torch(name):
    assert _outcome(fg, ALPHA_CASES[name]) == _outcome(torch, ALPHA_CASES[name])
