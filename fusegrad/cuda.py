"""fg.cuda: fusegrad runs on the CPU only, so no CUDA device is ever available.

Scripts written for torch pick their device with `"cuda" if torch.cuda.is_available()
else "cpu"`; these answers let them run unchanged on the CPU (moving a tensor to "cuda"
still raises, as torch without CUDA)."""


def is_available() -> bool:
    """torch.cuda.is_available: False (fusegrad has no CUDA backend)."""
    return False


def device_count() -> int:
    """torch.cuda.device_count: 0."""
    return 0


def is_initialized() -> bool:
    """torch.cuda.is_initialized: False."""
    return False
