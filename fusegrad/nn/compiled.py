"""`fg.compile(module)`: the compiled module, an nn.Module wrapping the original, as
torch.compile's OptimizedModule.

The wrapper registers the original under `_orig_mod` (so `named_parameters()` and
`state_dict()` keys start with `_orig_mod.`, as torch's do), its `forward` is the
compiled call of the original module, and every other attribute is read from and
written to the original: `compiled.weight`, `compiled.fc = Linear(...)`, and
`compiled.training` are the original's.
"""
from __future__ import annotations

from typing import Any

from .module import Module


class OptimizedModule(Module):
    """A module compiled by `fg.compile(module)` (torch's `OptimizedModule`)."""

    # Attributes kept on the wrapper itself; everything else goes to the original module.
    _own_attributes = frozenset({"_orig_mod", "forward", "_super_module_initialized", "__dict__"})

    def __init__(self, module: Module, compiled_call) -> None:
        # First, as torch: attribute reads and writes of self go through _orig_mod.
        object.__setattr__(self, "_orig_mod", module)
        object.__setattr__(self, "_super_module_initialized", False)
        super().__init__()
        object.__setattr__(self, "_super_module_initialized", True)
        del self.__dict__["_orig_mod"]
        self._modules["_orig_mod"] = module      # registered: parameters are named _orig_mod.*
        object.__setattr__(self, "forward", compiled_call)

    @property
    def training(self) -> bool:  # type: ignore[override]
        """The wrapped module's train/eval flag (one flag for both, as torch's OptimizedModule)."""
        return self._orig_mod.training

    @training.setter
    def training(self, value: bool) -> None:
        # Module.__init__ sets the default; the wrapper mirrors the original's flag instead.
        if self._super_module_initialized:
            self._orig_mod.training = value

    def explain(self, *args, **kwargs) -> str:
        """The compiled forward's programs, kernels and generated source for these arguments
        (see `fg.compile(fn).explain`)."""
        return self.forward.explain(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(type(self), name) or name in self._own_attributes:
            return super().__setattr__(name, value)
        setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if hasattr(type(self), name) or name in self._own_attributes:
            return super().__delattr__(name)
        delattr(self._orig_mod, name)

    def __len__(self) -> int:
        if hasattr(type(self._orig_mod), "__len__"):
            return len(self._orig_mod)
        raise TypeError(f"{type(self._orig_mod).__name__} does not support len()")

    def __dir__(self):
        own = self._orig_mod.__dir__()
        return own + [name for name in super().__dir__() if name not in own]
