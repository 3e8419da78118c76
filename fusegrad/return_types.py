"""torch.return_types: the named results of `max(dim)`, `min(dim)`, `sort`, `topk`, `cummax`,
`median`, `mode`, `kthvalue`... (`.values`, `.indices`), `aminmax` (`.min`, `.max`) and `slogdet`
(`.sign`, `.logabsdet`), importable so that they pickle and copy as torch's do."""
from fusegrad.tracer.functional import RETURN_TYPES

max = RETURN_TYPES["max"]  # noqa: A001  (torch's names)
min = RETURN_TYPES["min"]  # noqa: A001
sort = RETURN_TYPES["sort"]
topk = RETURN_TYPES["topk"]
cummax, cummin = RETURN_TYPES["cummax"], RETURN_TYPES["cummin"]     # (tracer/statistics.py's)
median, nanmedian, mode, kthvalue = (RETURN_TYPES[k] for k in ("median", "nanmedian", "mode", "kthvalue"))
aminmax = RETURN_TYPES["aminmax"]
slogdet = RETURN_TYPES["slogdet"]
histogram, frexp = RETURN_TYPES["histogram"], RETURN_TYPES["frexp"]

__all__ = ["max", "min", "sort", "topk", "cummax", "cummin", "median", "nanmedian", "mode", "kthvalue", "aminmax", "slogdet",
           "histogram", "frexp"]
