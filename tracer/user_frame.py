"""Where a warning points: torch's warnings name the user's line, so fusegrad's name the first
frame outside the package, however many of its own functions and wrappers are in between."""
from __future__ import annotations

import os
import sys

# The package's source folders (tracer/, runtime/... beside this one, and the public fusegrad/;
# installed, the public package's own files sit directly in their parent)
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE_DIRS = tuple(os.path.join(_PACKAGE_ROOT, d) + os.sep for d in ("fusegrad", "tracer", "runtime", "codegen", "ir"))


def user_stacklevel() -> int:
    """The `stacklevel` that makes a warnings.warn in the calling function name the first
    frame outside fusegrad, as torch's warnings point at the user's line (a fixed level
    would name a wrapper of the function, such as the NumPy-keyword one)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE_DIRS)
                                 or os.path.dirname(frame.f_code.co_filename) == _PACKAGE_ROOT):
        frame, level = frame.f_back, level + 1
    return level
