"""torch.nn.utils.weight_norm / spectral_norm (and their remove_ functions): the older forms
of weight and spectral normalisation, as forward pre-hooks.

weight_norm replaces parameter `<name>` by `<name>_g` and `<name>_v` and sets the plain
attribute `<name>` = torch._weight_norm(v, g, dim) before each forward. spectral_norm keeps
the parameter as `<name>_orig`, the power iteration's vectors as buffers `<name>_u` and
`<name>_v`, and sets `<name>` = weight / sigma before each forward (iterating in training).
torch also registers state-dict hooks for spectral_norm (a version number in the state
dict's metadata, used to load checkpoints of torch before 1.1); fusegrad's state dicts have
the same keys, without that metadata.
"""
from __future__ import annotations

import warnings

from fusegrad.tracer.grad_mode import no_grad
from fusegrad.tracer.products import dot, mv
from fusegrad.tracer.user_frame import user_stacklevel
from fusegrad.tracer.weight_norm import _weight_norm, norm_except_dim

from .. import functional as F
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..lazy import UninitializedParameter
from ..module import Module, Parameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "SpectralNorm", "spectral_norm",
           "remove_spectral_norm"]


def _pre_hooks(module: Module):
    return module._hook_dict("_forward_pre_hooks")


class WeightNorm:
    """The forward pre-hook of weight_norm: recomputes module.<name> from <name>_g and <name>_v."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module):
        """g * v / ||v|| from the module's <name>_g and <name>_v."""
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int) -> "WeightNorm":
        """Register the hook on `module` (torch's FutureWarning: the parametrization is preferred)."""
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=user_stacklevel())
        for hook in _pre_hooks(module).values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure to "
                             "run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        """Put <name> back as one parameter holding the current normalised weight."""
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int = 0) -> Module:
    """Weight-normalise module.<name> by a forward pre-hook (deprecated in torch for
    nn.utils.parametrizations.weight_norm): parameters <name>_g and <name>_v."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo weight_norm on module.<name>."""
    return _remove_hook(module, WeightNorm, name, "weight_norm")


class SpectralNorm:
    """The forward pre-hook of spectral_norm: module.<name> = <name>_orig / sigma."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        """The weight as a matrix whose rows run along `dim`."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool):
        """weight / sigma, after `n_power_iterations` steps on u and v (in place) if asked."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v = F.normalize(mv(weight_mat.t(), u), dim=0, eps=self.eps, out=v)
                    u = F.normalize(mv(weight_mat, v), dim=0, eps=self.eps, out=u)
                u, v = u.clone(), v.clone()     # (the buffers may change in place before backward)
        sigma = dot(u, mv(weight_mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        """Put <name> back as one parameter holding weight / sigma."""
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        """Register the hook on `module`: <name>_orig, and u, v drawn as torch draws them."""
        for hook in _pre_hooks(module).values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. Make sure "
                             "to run the dummy forward before applying spectral normalization")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Spectrally normalise module.<name> by a forward pre-hook; `dim` defaults to 1 for
    transposed convolutions, else 0."""
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo spectral_norm on module.<name>."""
    return _remove_hook(module, SpectralNorm, name, "spectral_norm")


def _remove_hook(module: Module, kind: type, name: str, label: str) -> Module:
    """Remove the `kind` pre-hook of module.<name>, undoing what it did (torch's ValueError,
    naming `label`, where there is none)."""
    hooks = _pre_hooks(module)
    for key, hook in hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            del hooks[key]
            return module
    raise ValueError(f"{label} of '{name}' not found in {module}")
