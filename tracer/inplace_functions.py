"""torch's module-level in-place functions (`torch.sin_(t)`, as PyTorch's autograd tutorial
calls it to show the leaf error): each is the tensor's in-place method, with torch's
argument error for a non-tensor first argument."""
from __future__ import annotations

from .parser_errors import type_name
from .tensor import Tensor

# torch's names (torch.<name> exists) whose Tensor method fusegrad has; relu_ is nn.functional's
NAMES = ("abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "asin_",
         "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_",
         "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_",
         "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_",
         "reciprocal_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
         "trunc_", "xlogy_", "zero_")


def _module_function(name: str):
    def fn(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type_name(input)}")
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}(t, ...): t.{name}(...), in place."
    return fn


FUNCTIONS = {name: _module_function(name) for name in NAMES}
