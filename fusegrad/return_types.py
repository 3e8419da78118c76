"""torch.return_types: the named results of `max(dim)`, `min(dim)`, `sort` and `topk` (`.values`, `.indices`),
importable so that they pickle and copy as torch's do."""
from fusegrad.tracer.functional import RETURN_TYPES

max = RETURN_TYPES["max"]  # noqa: A001  (torch's names)
min = RETURN_TYPES["min"]  # noqa: A001
sort = RETURN_TYPES["sort"]
topk = RETURN_TYPES["topk"]

__all__ = ["max", "min", "sort", "topk"]
