"""torch.return_types: the named results of `max(dim)`, `min(dim)`, `sort` and `topk` (`.values`, `.indices`),
importable so that they pickle and copy as torch's do."""
from fusegrad.tracer.functional import RETURN_TYPES

max = RETURN_TYPES["max"]  # noqa: A001  (torch's names)
min = RETURN_TYPES["min"]  # noqa: A001
sort = RETURN_TYPES["sort"]
topk = RETURN_TYPES["topk"]
cummax, cummin = RETURN_TYPES["cummax"], RETURN_TYPES["cummin"]     # (tracer/statistics.py's)
median, nanmedian, mode, kthvalue = (RETURN_TYPES[k] for k in ("median", "nanmedian", "mode", "kthvalue"))
aminmax = RETURN_TYPES["aminmax"]
from fusegrad.tracer.linalg_functions import SlogdetResult as slogdet  # noqa: E402  (torch.slogdet's)

__all__ = ["max", "min", "sort", "topk", "cummax", "cummin", "median", "nanmedian", "mode", "kthvalue", "aminmax", "slogdet"]
