"""torch.return_types: the named results of `max(dim)` and `min(dim)` (`.values`, `.indices`),
importable so that they pickle and copy as torch's do."""
from fusegrad.tracer.functional import RETURN_TYPES

max = RETURN_TYPES["max"]  # noqa: A001  (torch's names)
min = RETURN_TYPES["min"]  # noqa: A001

__all__ = ["max", "min"]
