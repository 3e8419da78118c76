"""fusegrad.utils: torch.utils's pieces that training scripts use (`fg.utils.data`: datasets,
samplers and the DataLoader)."""
from fusegrad.utils import data  # noqa: F401

__all__ = ["data"]
