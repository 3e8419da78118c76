"""fg.accelerator: torch 2.13's device-generic queries (its quickstart picks a device with
`torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else
"cpu"`). fusegrad runs on the CPU only: no accelerator."""


def is_available() -> bool:
    """torch.accelerator.is_available: False."""
    return False


def current_accelerator(check_available: bool = False):
    """torch.accelerator.current_accelerator: None (no accelerator)."""
    return None


def device_count() -> int:
    """torch.accelerator.device_count: 0."""
    return 0
