"""The persistent kernel cache: generated kernels as importable .py modules.

Numba can store a function's machine code (`cache=True`) only when the
function comes from a real source file, never from `exec`'d text. So each
kernel's module is written to `<cache dir>/kernels/<name>.py`, named by the
hash of its text (content-addressed: the same text always has the same name,
and any change to the code, versions or switches makes a new name), and
imported from there; Numba keeps its machine code beside it in __pycache__.
A second process running the same program imports the same files and Numba
loads the machine code instead of compiling.

Location: $FUSEGRAD_CACHE_DIR, else $XDG_CACHE_HOME/fusegrad, else
~/.cache/fusegrad. FUSEGRAD_DISK_CACHE=0 turns the disk cache off (kernels
are then compiled from memory in every process). Both are read at each call.

Writes are atomic (a temporary file in the same folder, then os.replace), so
two processes can fill the cache at once; a file that exists is never
rewritten unless its content is wrong. An entry that cannot be read back is
deleted and rebuilt with a warning, never an error.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import sys
import tempfile
import types
import warnings

SUBDIR = "kernels"


def cache_dir() -> str | None:
    """The disk cache folder, or None when the disk cache is off."""
    if os.environ.get("FUSEGRAD_DISK_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    root = os.environ.get("FUSEGRAD_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "fusegrad")
    return root


def kernel_path(root: str, name: str) -> str:
    """Where kernel module `name` lives in the disk cache under `root`: root/kernels/name.py."""
    return os.path.join(root, SUBDIR, name + ".py")


def atomic_write(path: str, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the whole new one."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".py", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def import_kernel_module(root: str, name: str, text: str) -> types.ModuleType:
    """Import kernel module `name` with content `text` from the cache at `root`,
    writing (or repairing) the file first. Raises OSError if the cache folder
    cannot be written and the file is missing."""
    path = kernel_path(root, name)
    try:
        with open(path, encoding="utf-8") as f:
            current = f.read()
    except (OSError, UnicodeDecodeError):
        current = None
    if current != text:
        if current is not None:
            warnings.warn(f"fusegrad: disk cache entry {path} was corrupt; rewriting it", RuntimeWarning,
                          stacklevel=3)
            purge(root, name)
        atomic_write(path, text)
    return _import_file(name, path)


def _import_file(name: str, path: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # Numba rebuilds a cached function's environment by importing its module
    # by name, so the module must be findable in sys.modules.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def memory_module(name: str, text: str) -> types.ModuleType:
    """Build a kernel module from text without touching the disk."""
    module = types.ModuleType(name)
    module.__file__ = f"<fusegrad kernel {name}>"
    sys.modules[name] = module
    exec(compile(text, module.__file__, "exec"), module.__dict__)
    return module


# The program index: an empty file per program (its full cache key, hashed, under a folder
# named by the versions and switches) whose kernels were all compiled into this cache. A new
# process that finds it loads the kernels synchronously instead of compiling in the background.
PROGRAMS = "programs"


def _program_marker(root: str, header: str, digest: str) -> str:
    return os.path.join(root, PROGRAMS, header, digest)


def has_program(root: str, header: str, digest: str) -> bool:
    """Were all kernels of program `digest` compiled into the cache at `root` before?"""
    return os.path.exists(_program_marker(root, header, digest))


def mark_program(root: str, header: str, digest: str) -> None:
    """Record that program `digest` has all its kernels in the cache (best effort)."""
    path = _program_marker(root, header, digest)
    if os.path.exists(path):
        return
    try:
        atomic_write(path, "")
    except OSError:
        pass


def purge(root: str, name: str) -> None:
    """Delete a kernel's module and everything cached for it (Numba index and data, pyc)."""
    folder = os.path.join(root, SUBDIR)
    for path in [os.path.join(folder, name + ".py")] + glob.glob(os.path.join(folder, "__pycache__", name + ".*")):
        try:
            os.unlink(path)
        except OSError:
            pass
