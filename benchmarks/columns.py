"""The table's columns: fusegrad eager and compiled, and the peers it is measured against.

Framework modules are imported only when a column builds its first workload,
so a probe subprocess for one column loads one framework.
"""
import importlib
import importlib.util
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Column:
    """One framework configuration; build(workload_key, data) returns run(), or None where the
    column has no version of that workload (shown as "-")."""
    key: str        # command-line name, e.g. "torch-compile"
    label: str      # table heading, e.g. "torch.compile"
    requires: str   # top-level module that must be importable
    is_peer: bool   # peers set the "fastest peer" bar; fusegrad's own columns do not
    build: Callable
    disk_cache: bool = False  # compiles into an on-disk cache: first call measured cold and warm

    def installed(self):
        return importlib.util.find_spec(self.requires) is not None


def _torchlike(framework_name, compiled):
    def build(workload_key, data):
        torchlike = importlib.import_module("impls.torchlike")
        framework = getattr(torchlike, framework_name)(compiled)
        return getattr(torchlike, workload_key.lower())(framework, data)
    return build


def _module(module_name):
    def build(workload_key, data):
        workload_fn = getattr(importlib.import_module(module_name), workload_key.lower(), None)
        return None if workload_fn is None else workload_fn(data)
    return build


COLUMNS = [
    Column("fg-eager", "fg eager", "fusegrad", False, _torchlike("Fusegrad", compiled=False)),
    Column("fg-compiled", "fg compiled", "fusegrad", False, _torchlike("Fusegrad", compiled=True), True),
    Column("numpy", "NumPy", "numpy", True, _module("impls.np_impl")),
    Column("numba", "Numba", "numba", True, _module("impls.numba_impl")),
    Column("torch-eager", "torch eager", "torch", True, _torchlike("Torch", compiled=False)),
    Column("torch-compile", "torch.compile", "torch", True, _torchlike("Torch", compiled=True), True),
    Column("jax-jit", "jax.jit", "jax", True, _module("impls.jax_impl")),
]
BY_KEY = {column.key: column for column in COLUMNS}
FG_COMPILED = "fg-compiled"   # the column the issues' targets are about
REFERENCE = "numpy"   # the column whose outputs every other column is checked against
BASELINE = "torch-eager"   # speed-ups are over this column
