"""fusegrad's version (pyproject.toml's), in the lowest layer so that every layer may read it:
the kernel cache writes it into each generated module's header (runtime/kernel_cache.py)."""
VERSION = "0.1.0"
