"""fg.random: torch.random's functions on fusegrad's generator (tracer/generator.py,
tracer/random_extra.py): `manual_seed`, `seed`, `initial_seed`, `get_rng_state`,
`set_rng_state` and `fork_rng`."""
from __future__ import annotations

import contextlib

from fusegrad.tracer.creation import initial_seed, manual_seed
from fusegrad.tracer.random_extra import get_rng_state, seed, set_rng_state

__all__ = ["fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str = "cpu"):
    """torch.random.fork_rng: the generator's state is restored when the block exits (fusegrad
    has the CPU generator only; `devices` and `device_type` are accepted and ignored)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
