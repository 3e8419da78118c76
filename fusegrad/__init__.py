"""fusegrad: PyTorch's autograd semantics and JAX's grad/jit ergonomics,
compiled to fused Numba loops.  `import fusegrad as fg`."""
import os as _os

# In a source checkout the layers ir/, tracer/, codegen/ and runtime/ sit beside
# this folder (pyproject's package-dir maps them into `fusegrad`); make
# `python -m pytest` from the repo root find them the same way an install does.
_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(__path__[0], "ir")) and _os.path.isfile(_os.path.join(_root, "ir", "__init__.py")):
    __path__.append(_root)

from fusegrad.ir.version import VERSION as __version__
from fusegrad.ir.types import bool_ as bool, float32, float64, int64, DType as dtype  # noqa: A001
from fusegrad.tracer import (Size, Tensor, enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                             no_grad, set_grad_enabled)
from fusegrad.tracer.creation import (arange, empty, empty_like, eye, from_numpy, full, full_like, initial_seed,
                                      linspace, manual_seed, ones, ones_like, rand, rand_like, randint, randint_like, randn,
                                      randn_like, scalar_tensor, tensor, zeros, zeros_like)
from fusegrad.tracer.creation import range_ as range  # noqa: A004  (torch.range, deprecated)
from fusegrad.tracer.inplace import fill
from fusegrad.tracer.functional import (abs, add, all, amax, amin, any, argmax, argmin, bernoulli, broadcast_shapes,
                                        broadcast_tensors, broadcast_to, cat, clamp,
                                        clamp_max, clamp_min, clip, clone, cos, detach, div, eq, erf, exp, expand,
                                        expm1, flatten, unflatten, floor_divide, ge, gt, le, log, log1p, log_softmax,
                                        logical_and, logical_not, logical_or, logical_xor, lt, masked_fill, matmul,
                                        max, maximum, mean, min, minimum, moveaxis, movedim, mul, ne, neg, nonzero,
                                        norm, pow, ravel, reciprocal, relu, remainder, sigmoid, sign, sin, softmax,
                                        sqrt, square, squeeze, stack, sub, sum, swapaxes, swapdims, t, tanh,
                                        transpose, unsqueeze, where)
from fusegrad.tracer import inplace_views as _inplace_views  # noqa: F401  (Tensor.unsqueeze_, t_, ...)
from fusegrad.tracer.random_extra import (get_rng_state, is_floating_point, normal, promote_types, randperm,
                                          result_type, seed, set_rng_state)
from fusegrad.tracer.predicates import allclose, equal, isclose, isfinite, isinf, isnan
from fusegrad.tracer.products import bmm, dot, ger, mm, mv, outer
from fusegrad.tracer.moments import std, var
from fusegrad.tracer.splitting import chunk, narrow, select, split, split_with_sizes, unbind
from fusegrad.tracer.sorting import argsort, sort, topk
from fusegrad.tracer.statistics import (aminmax, bincount, bucketize, cummax, cummin, cumprod, fmax, fmin, histc,
                                        kthvalue, logcumsumexp, logspace, median, mode, msort, nanmean, nanmedian,
                                        nanquantile, nansum, quantile, searchsorted, std_mean, unique,
                                        unique_consecutive, var_mean)
from fusegrad.tracer.stacking import (atleast_1d, atleast_2d, atleast_3d, column_stack, dstack, hstack, row_stack,
                                      vstack)
from fusegrad.tracer.gathering import flip, fliplr, flipud, gather, index_select
from fusegrad.tracer.einsum import einsum
from fusegrad.tracer.misc_functions import (combinations, conj, corrcoef, cov, cumulative_trapezoid, diagonal_scatter,
                                            frexp, histogram, index_put, index_put_, index_reduce, is_conj, is_neg, isin,
                                            narrow_copy, nextafter, nonzero_static, put, renorm, resolve_conj,
                                            resolve_neg, select_scatter, slice_scatter, trapezoid, trapz, unravel_index,
                                            vander)
from fusegrad.tracer.linalg_functions import (addbmm, addmm, addmv, addr, baddbmm, cdist, chain_matmul, cross, det, dist,
                                              gcd, gcd_, inner, inverse, is_nonzero, is_same_size, lcm, lcm_, ldexp,
                                              ldexp_, logdet, matrix_power, pdist, sinc, sinc_, slogdet, tensordot,
                                              vdot)
from fusegrad.tracer.scattering import (argwhere, count_nonzero, index_add, index_copy, index_fill, masked_scatter,
                                        masked_select, scatter, scatter_add, scatter_reduce, take, take_along_dim)
from fusegrad.tracer.shape_functions import (block_diag, cartesian_prod, diag, diag_embed, diagflat, diagonal, diff,
                                             dsplit, hsplit, kron, meshgrid, repeat_interleave, roll, rot90,
                                             tensor_split, trace, tril_indices, triu_indices, vsplit)
from fusegrad.tracer.math_functions import (acos, arccos, arcsin, arctan, arctan2, asin, atan, atan2, ceil, cosh, cumsum,
                                            exp2, fix, floor, frac, log10, log2, logsumexp, prod, round, rsqrt, sinh,
                                            tan, tril, triu, trunc)
from fusegrad.tracer.extra_functions import (absolute, acosh, addcdiv, addcmul, arccosh, arcsinh, arctanh, asinh,
                                             atanh, concat, concatenate, copysign, deg2rad, divide, erfc,
                                             float_power, fmod, greater, greater_equal, heaviside, hypot, isneginf,
                                             isposinf, lerp, less, less_equal, logaddexp, logaddexp2, logit,
                                             multiply, nan_to_num, negative, not_equal, rad2deg, sgn, signbit,
                                             rsub, subtract, tile, true_divide, xlogy)
from fusegrad.tracer.extra_functions import as_tensor_ as as_tensor
from fusegrad.tracer.complex_functions import angle, imag, isreal, real
# torch's window functions, asarray / can_cast, the *_copy functions, adjoint and the unsafe splits
from fusegrad.tracer.windows import bartlett_window, blackman_window, hamming_window, hann_window, kaiser_window
from fusegrad.tracer.asarray import asarray, can_cast
from fusegrad.tracer import copy_functions as _copy_functions
globals().update(_copy_functions.PUBLIC)    # fg.view_copy ... fg.unfold_copy, fg.adjoint, fg.unsafe_chunk ...
_copy_functions.install_methods()           # Tensor.adjoint, unsafe_chunk/split..., is_mps ... is_nested, is_pinned()
from fusegrad.tracer import strided as _strided
globals().update(_strided.PUBLIC)           # fg.as_strided, as_strided_copy, as_strided_scatter, empty_strided
_strided.install_methods()                  # Tensor.as_strided, Tensor.as_strided_scatter
import math as _math  # noqa: E402
pi, e, inf, nan = _math.pi, _math.e, _math.inf, _math.nan     # torch.pi, torch.e, torch.inf, torch.nan
newaxis = None                                                  # torch.newaxis
from fusegrad.tracer.numeric_gradient import gradient  # noqa: E402  (torch.gradient)
from fusegrad import testing  # noqa: E402  (torch.testing: assert_close)
from fusegrad.tracer.inplace_views import resize_as_  # noqa: E402  (torch.resize_as_)
from fusegrad.nn.rnn import gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell  # noqa: E402  (torch's cell functions)
from fusegrad.nn.conv import convolution  # noqa: E402  (torch.convolution, the aten form)
from fusegrad.tracer.legacy_types import BoolTensor, DoubleTensor, FloatTensor, LongTensor  # noqa: E402


def get_device(input) -> int:
    """torch.get_device: -1, the CPU's index (fusegrad runs on the CPU only)."""
    return input.get_device()
from fusegrad.tracer import element_callables as _element_callables
_element_callables.install()               # Tensor.apply_, map_, share_memory_, _is_view
from fusegrad.tracer.sampling import multinomial
from fusegrad.tracer.special_functions import digamma, erfinv, i0, i0_, lgamma, mvlgamma, polygamma
from fusegrad.tracer.methods import (bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift,
                                     bitwise_xor, positive)
from fusegrad.tracer import functional as _functional
from fusegrad.tracer import parser_errors as _parser_errors
from fusegrad.tracer import methods as _methods
from fusegrad.tracer.parser_errors import type_name as _type_name
from fusegrad.tracer.device import device
from fusegrad.tracer.memory_format import contiguous_format, layout, memory_format, preserve_format, strided
from fusegrad.tracer.generator import Generator
from fusegrad.tracer.formatting import set_printoptions
from fusegrad.tracer.trace_state import is_compiling
from fusegrad.runtime import (CacheInfo, CompiledFunction, cache_info, clear_caches,
                              grad, value_and_grad)
from fusegrad.runtime.background import wait_for_compiles
from fusegrad import autograd, nn, optim
from fusegrad.autograd_anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: E402
from fusegrad import func  # noqa: E402  (torch.func)
from fusegrad.func import hessian, jacfwd, jacrev, jvp, vjp, vmap  # noqa: E402  (JAX-style names: torch.func's)
from fusegrad import serialization, utils  # noqa: E402  (torch.serialization; torch.utils.data)
from fusegrad.serialization import load, save  # noqa: E402
# torch's top-level forms of these nn.functional ops (same signatures as torch.nn.functional's)
from fusegrad.nn.functional import (adaptive_avg_pool1d, avg_pool1d, bilinear, celu, celu_,  # noqa: E402
                                    conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d,
                                    cosine_similarity, group_norm, hardshrink, layer_norm, max_pool1d, max_pool2d,
                                    max_pool3d, pairwise_distance,
                                    pixel_shuffle, pixel_unshuffle, prelu, rrelu, rrelu_, selu, selu_, threshold,
                                    threshold_)
from fusegrad import random  # noqa: A004  (torch.random: the generator's functions)
from fusegrad.settings import (are_deterministic_algorithms_enabled, finfo, get_default_device,  # noqa: E402
                               get_deterministic_debug_mode, get_float32_matmul_precision, get_num_interop_threads,
                               get_num_threads, iinfo, is_deterministic_algorithms_warn_only_enabled, is_storage,
                               is_warn_always_enabled, set_default_device, set_deterministic_debug_mode,
                               set_float32_matmul_precision, set_num_interop_threads, set_num_threads,
                               set_warn_always, use_deterministic_algorithms)
from fusegrad.nn.module import typename  # noqa: E402  (torch.typename: torch's names of types)
from fusegrad import return_types  # noqa: E402  (torch.return_types: max(dim) / min(dim) results)
from fusegrad import special  # noqa: E402  (torch.special: gammaln, erfinv, i0e, ndtri, xlog1py...)
# torch.igamma / torch.igammac (torch.special.gammainc / gammaincc; fusegrad/special.py)
from fusegrad.special import igamma, igammac  # noqa: E402
from fusegrad import distributions  # noqa: E402  (torch.distributions: Normal, Categorical, kl_divergence...)
from fusegrad import linalg  # noqa: E402  (torch.linalg: norms, solvers, decompositions)
from fusegrad.tracer.weight_norm import _weight_norm, norm_except_dim  # noqa: E402,F401  (torch's weight normalisation functions)
# torch's top-level aten forms of nn.functional ops (aten signatures: torch.dropout(x, p, train),
# torch.kl_div(a, b, 1), torch.embedding(weight, indices)...) and Tensor.hardshrink/prelu/pinverse/matrix_exp
from fusegrad.aten_forms import (adaptive_max_pool1d, alpha_dropout, alpha_dropout_, batch_norm,  # noqa: E402
                                 binary_cross_entropy_with_logits, channel_shuffle, constant_pad_nd,
                                 cosine_embedding_loss, dropout, dropout_, embedding, feature_alpha_dropout,
                                 feature_alpha_dropout_, feature_dropout, feature_dropout_, hinge_embedding_loss,
                                 instance_norm, kl_div, margin_ranking_loss, matrix_exp, max_pool1d_with_indices,
                                 native_channel_shuffle, pinverse, poisson_nll_loss, rms_norm, triplet_margin_loss)
from fusegrad.nn.losses import aten_ctc_loss as ctc_loss  # noqa: E402  (torch.ctc_loss: its reduction an int)
# torch's legacy linear algebra (svd, qr, cholesky*, lu*, triangular_solve...: tracer/linalg_lu.py) and its
# Tensor methods
from fusegrad.tracer.linalg_lu import (cholesky, cholesky_inverse, cholesky_solve, eig, frobenius_norm,  # noqa: E402
                                       lstsq, lu, lu_solve, lu_unpack, matrix_rank, nuclear_norm, qr, svd,
                                       symeig, triangular_solve)
from fusegrad.tracer.linalg_lu import bind_methods as _bind_linalg_lu_methods  # noqa: E402
_bind_linalg_lu_methods()
# torch's compact Householder QR: geqrf, orgqr (linalg.householder_product) and ormqr (tracer/linalg_lu.py,
# ir/ops/householder.py)
from fusegrad.tracer.linalg_lu import geqrf, orgqr, ormqr  # noqa: E402,F401
relu_ = nn.functional.relu_
from fusegrad.runtime import compile as _compile_callable
from fusegrad.nn.compiled import OptimizedModule as _OptimizedModule


def compile(fn=None, **options):  # noqa: A001
    """`@fg.compile` / `fg.compile(fn)`: trace every call into one program and run it compiled
    (fusegrad.runtime.compile). torch.compile's keyword arguments are accepted. A module
    compiles into an nn.Module wrapping it, as torch.compile's OptimizedModule: its
    parameters are the module's, named `_orig_mod.<name>`, and other attributes are the
    module's own."""
    if fn is None:
        return lambda f: compile(f, **options)
    compiled = _compile_callable(fn, **options)
    if isinstance(fn, nn.Module) and compiled is not fn:
        return _OptimizedModule(fn, compiled)
    return compiled


def reshape(input, shape):
    """fg.reshape(input, shape): torch.reshape's function form takes the shape as one
    argument (the method also takes sizes: t.reshape(2, 3))."""
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"reshape(): argument 'shape' (position 2) must be tuple of ints, not {_type_name(shape)}")
    try:
        return _functional.reshape(input, shape)
    except TypeError as exc:
        # the method's parser counts the shape as argument 1, the function's as argument 2
        raise TypeError(str(exc).replace("argument 'shape' (position 1)", "argument 'shape' (position 2)")) from None


def permute(*args, **kwargs):
    """fg.permute(input, dims): torch.permute's function form takes the dims as one
    argument (the method also takes them spread: t.permute(1, 0))."""
    if len(args) > 2:
        raise TypeError(f"permute() takes 2 positional arguments but {len(args)} were given")
    named = dict(zip(("input", "dims"), args))
    for key, value in kwargs.items():
        if key not in ("input", "dims") or key in named:
            raise TypeError(f"permute() got an unexpected keyword argument '{key}'")
        named[key] = value
    if "dims" not in named:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    dims = named["dims"]
    if not isinstance(dims, (tuple, list)):
        raise TypeError(f"permute(): argument 'dims' (position 2) must be tuple of ints, not {_type_name(dims)}")
    return _functional.permute(named.get("input"), dims)


def is_tensor(obj) -> bool:
    """torch.is_tensor: is `obj` a fusegrad Tensor (a Parameter included)?"""
    return isinstance(obj, Tensor)


def _tensor_predicate(name: str, method: str):
    """torch.<name>(input): the tensor's own `method()`, with torch's TypeError for a non-tensor."""
    def predicate(input) -> bool:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {_type_name(input)}")
        return getattr(input, method)()
    predicate.__name__ = predicate.__qualname__ = name
    predicate.__doc__ = f"torch.{name}: input.{method}() (always False for is_complex: fusegrad has no complex dtypes)."
    return predicate


is_complex = _tensor_predicate("is_complex", "is_complex")
is_signed = _tensor_predicate("is_signed", "is_signed")
is_inference = _tensor_predicate("is_inference", "is_inference")


def numel(input) -> int:
    """torch.numel: the number of elements of a tensor."""
    if not isinstance(input, Tensor):
        raise TypeError(f"numel(): argument 'input' (position 1) must be Tensor, not {_type_name(input)}")
    return input.numel()


def get_default_dtype():
    """torch.get_default_dtype: the dtype of floating tensors made without one (always float32)."""
    return float32


def set_default_dtype(d) -> None:
    """torch.set_default_dtype. fusegrad's default float dtype is float32 and stays so:
    float32 is accepted (scripts set it explicitly), float64 raises NotImplementedError (pass
    `dtype=fg.float64` where it is wanted), any other value torch's TypeError."""
    if d is float32:
        return
    if d is float64:
        raise NotImplementedError("fusegrad: the default float dtype is always float32; set_default_dtype(fg.float64) "
                                  "is not supported (pass dtype=fg.float64 to the creation functions instead)")
    if isinstance(d, dtype):
        raise TypeError("only floating-point types are supported as the default type")
    raise TypeError("invalid dtype object: only floating-point types are supported as the default type")


def set_default_tensor_type(t) -> None:
    """torch.set_default_tensor_type (deprecated, as torch's: a UserWarning): set_default_dtype of
    a legacy type (fg.FloatTensor) or its name ("torch.FloatTensor")."""
    import warnings as _warnings
    from fusegrad.tracer.legacy_types import TYPES, _LegacyTensorType
    if isinstance(t, str):
        module, _, name = t.rpartition(".")
        if name not in TYPES or module not in ("torch", "fg", "fusegrad"):
            raise AttributeError(f"module '{module or 'torch'}' has no attribute '{name}'")
        t = TYPES[name]
    if not isinstance(t, _LegacyTensorType):
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    if not _DEFAULT_TYPE_WARNED:
        # (torch's C++ warning, once per process, before its check of the type)
        _DEFAULT_TYPE_WARNED.append(True)
        _warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                       "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                       stacklevel=2)
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    set_default_dtype(t.dtype)


_DEFAULT_TYPE_WARNED: list = []


def _takes_no_arguments(fn):
    """`fn()` as torch's C functions of no argument refuse arguments (its texts name them
    torch.<name>); fusegrad's own calls keep the bare function."""
    def public(*args, **kwargs):
        if kwargs:
            raise TypeError(f"torch.{fn.__name__}() takes no keyword arguments")
        if args:
            raise TypeError(f"torch.{fn.__name__}() takes no arguments ({len(args)} given)")
        return fn()
    public.__name__, public.__qualname__, public.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return public


from fusegrad import accelerator, cuda  # noqa: E402  (no device but the CPU: scripts ask)
from fusegrad import module_paths as _module_paths  # noqa: E402
_module_paths.register()     # torch's import paths: fusegrad.autograd.functional, fusegrad.nn.modules.module ...
from fusegrad.tracer.inplace_functions import FUNCTIONS as _INPLACE_FUNCTIONS  # noqa: E402

globals().update(_INPLACE_FUNCTIONS)        # torch.sin_(t) and kin: the tensor's in-place methods

is_grad_enabled = _takes_no_arguments(is_grad_enabled)
is_inference_mode_enabled = _takes_no_arguments(is_inference_mode_enabled)

float = float32  # noqa: A001  (torch's aliases)
double = float64
long = int64

__all__ = [name for name in dir() if not name.startswith("_")]

# fg.add('a') and kin raise torch's parser texts; fusegrad's own calls keep the bare functions
_parser_errors.public_functions(globals())

# and so does a call missing its arguments (fg.cat(): `cat() missing 1 required positional
# arguments: "tensors"`, where Python says `... argument: 'tensors'`)
for _name in ("amax", "amin", "argmax", "argmin", "as_tensor", "cat", "clone", "detach", "flatten", "unflatten", "fliplr",
              "flipud", "is_floating_point", "nonzero", "numel", "promote_types", "ravel", "relu_", "stack", "t",
              *_INPLACE_FUNCTIONS):
    globals()[_name] = _functional.missing_argument_texts(globals()[_name])


# torch's dtype names that fusegrad does not have: an AttributeError (hasattr stays False)
# that says so, where Python's would only say the name is missing
_MISSING_DTYPE_NAMES = {"int32": "int32", "int": "int32", "int16": "int16", "short": "int16", "int8": "int8",
                        "uint8": "uint8", "float16": "float16", "half": "float16", "bfloat16": "bfloat16",
                        "complex64": "complex64", "cfloat": "complex64", "complex128": "complex128",
                        "cdouble": "complex128", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64"}


def __getattr__(name: str):
    """A module attribute that does not exist (PEP 562): for torch's dtype names fusegrad
    does not have, the error names its four dtypes."""
    if name in _MISSING_DTYPE_NAMES:
        raise AttributeError(f"module 'fusegrad' has no attribute '{name}': fusegrad has no "
                             f"{_MISSING_DTYPE_NAMES[name]} dtype; its dtypes are {_methods.FOUR_DTYPES}")
    raise AttributeError(f"module 'fusegrad' has no attribute '{name}'")
