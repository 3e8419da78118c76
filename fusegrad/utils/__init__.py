"""fusegrad.utils: torch.utils's pieces that training scripts use (`fg.utils.data`: datasets,
samplers and the DataLoader; `fg.utils.checkpoint`: activation checkpointing)."""
from fusegrad.utils import checkpoint, data  # noqa: F401

__all__ = ["checkpoint", "data"]
