"""fg.autograd's anomaly mode (torch.autograd.anomaly_mode): `detect_anomaly()` and
`set_detect_anomaly(mode)`; with it on (and check_nan), a backward raises torch's
"Function 'DivBackward0' returned nan values in its 1th output." where a node's gradient
for one of its inputs holds a NaN (the eager engine checks each: tracer/engine.py). torch also
records each forward op's traceback to show with that error; fusegrad records none.
"""
from __future__ import annotations

import warnings

from fusegrad.tracer.node import ANOMALY, SHAPES_CHANGED

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]


def _set(mode: bool, check_nan: bool) -> None:
    ANOMALY["enabled"], ANOMALY["check_nan"] = bool(mode), bool(check_nan)
    if mode:
        SHAPES_CHANGED[0] = True     # (the engine checks every gradient from now on: see tracer/node.py)


def is_anomaly_enabled() -> bool:
    """torch.is_anomaly_enabled: whether anomaly mode is on."""
    return ANOMALY["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    """torch.is_anomaly_check_nan_enabled: whether anomaly mode looks for NaN gradients."""
    return ANOMALY["check_nan"]


class detect_anomaly:  # noqa: N801 (torch's name)
    """Context manager turning anomaly mode on inside it (torch.autograd.detect_anomaly), with
    torch's warning that it slows things down."""

    def __init__(self, check_nan: bool = True) -> None:
        self.previous = (ANOMALY["enabled"], ANOMALY["check_nan"])
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        _set(True, self.check_nan)

    def __exit__(self, *exc) -> None:
        _set(*self.previous)


class set_detect_anomaly:  # noqa: N801 (torch's name)
    """Turn anomaly mode on or off now (torch.autograd.set_detect_anomaly); as a context
    manager, the previous mode is restored on leaving it."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.previous = (ANOMALY["enabled"], ANOMALY["check_nan"])
        _set(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _set(*self.previous)
