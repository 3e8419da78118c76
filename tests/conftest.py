"""Shared test setup: one fusegrad disk cache for the whole session, so
kernels compiled by one test are reused by the others (and by a re-run)."""
import os
import tempfile

import pytest
from hypothesis import settings

# Bounded, deterministic hypothesis runs: CI time is part of the budget.
settings.register_profile("fusegrad", max_examples=20, deadline=None, derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fusegrad"))


def pytest_configure(config):
    # Synchronous compiles (the default) keep cache counters deterministic;
    # tests of the tiered (background) policy turn it on themselves.
    os.environ.setdefault("FUSEGRAD_ASYNC_COMPILE", "0")
    if "FUSEGRAD_CACHE_DIR" not in os.environ:
        # One cache directory per checkout, kept between runs (CI starts clean anyway).
        root = os.path.join(tempfile.gettempdir(), "fusegrad-test-cache")
        os.makedirs(root, exist_ok=True)
        os.environ["FUSEGRAD_CACHE_DIR"] = root


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state."""
    import numpy as np
    import fusegrad as fg
    fg.manual_seed(0)
    np.random.seed(0)
    yield


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty disk cache (a temporary FUSEGRAD_CACHE_DIR) and empty in-memory caches."""
    from fusegrad.runtime.stats import clear_caches
    monkeypatch.setenv("FUSEGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FUSEGRAD_DISK_CACHE", raising=False)
    clear_caches()
    yield tmp_path
    clear_caches()
