"""fusegrad: PyTorch's autograd semantics and JAX's grad/jit ergonomics,
compiled to fused Numba loops.  `import fusegrad as fg`."""
import os as _os

# In a source checkout the layers ir/, tracer/, codegen/ and runtime/ sit beside
# this folder (pyproject's package-dir maps them into `fusegrad`); make
# `python -m pytest` from the repo root find them the same way an install does.
_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(__path__[0], "ir")) and _os.path.isfile(_os.path.join(_root, "ir", "__init__.py")):
    __path__.append(_root)

__version__ = "0.1.0"
