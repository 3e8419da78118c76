"""The op table: every op declared once (see registry.OpDef)."""
from .registry import (COMPOSITE, EAGER_FORMS, EAGER_INTO_FORMS, ELEMENTWISE, MATMUL, MOVEMENT, OPAQUE, OPS, REDUCE,
                       SOURCE, OpDef, broadcast_shapes, eager_form, eager_into_form, expands_to, infer_types,
                       normalize_dim, register, shape_str, unbroadcast_axes)
from . import elementwise, reduce, movement, linalg, loss, custom  # noqa: F401  (registers the ops)
from . import advanced_index  # noqa: F401  (registers index_take and index_put_at)
from . import optim_update  # noqa: F401  (registers sgd_update and adam_update)
from . import division  # noqa: F401  (registers div_floor, div_trunc and remainder)
from . import moments  # noqa: F401  (registers var and std)
from . import activations  # noqa: F401  (registers expm1, log1p, silu, softplus, leaky_relu, elu and their backward ops)
from . import nn_activations  # noqa: F401  (registers hardtanh, mish, glu, prelu, rrelu, smooth_l1_loss... of torch.nn)
from . import embedding  # noqa: F401  (registers embedding)
from . import normalization  # noqa: F401  (registers layer_norm)
from . import erf_gelu  # noqa: F401  (registers erf, gelu and gelu_backward)
from . import more_math  # noqa: F401  (registers rounding, rsqrt, log2, trigonometric ops, atan2, logsumexp)
from . import extra_math  # noqa: F401  (registers lerp, addcmul, hypot, xlogy, logit, erfc, fmod, repeat...)
from . import gather  # noqa: F401  (registers gather, scatter_add and flip)
from . import sort  # noqa: F401  (registers sort, which topk shares)
from . import scatter  # noqa: F401  (registers scatter, scatter_reduce, masked_scatter, masked_select, take)
from . import linalg_extra  # noqa: F401  (registers add_product, cross, det, inverse, slogdet, sinc, ldexp, gcd, lcm)
from . import linalg_decomp  # noqa: F401  (registers linalg_solve, cholesky, qr, eigh, linalg_svd, pinv, lstsq...)
from . import linalg_lu  # noqa: F401  (registers lu_factor, lu_unpack, linalg_lu, lu_solve, cholesky_solve/inverse...)
from . import householder  # noqa: F401  (registers geqrf, householder_product, ormqr)
from . import diagonal  # noqa: F401  (registers diagonal, unfold, diag_embed, trace, roll, rot90, block_diag)
from . import strided  # noqa: F401  (registers as_strided, strided_transfer, as_strided_scatter, as_strided_put)
from . import statistics  # noqa: F401  (registers cumprod, cummax/cummin, median, nansum, fmax... )
from . import conv, pool  # noqa: F401  (registers convolution, im2col/col2im, pooling, pad, upsample, pixel_shuffle)
from . import batch_norm  # noqa: F401  (registers batch_norm and group_norm)
from . import special  # noqa: F401  (registers lgamma, digamma, polygamma, erfinv, mvlgamma, i0, i1, ndtri, entr...)
from . import misc_ops  # noqa: F401  (registers frexp, nextafter, renorm)
from . import ctc  # noqa: F401  (registers ctc_loss and ctc_loss_backward)
from . import special_extra  # noqa: F401  (registers the Bessel functions, airy_ai, erfcx, igamma, zeta, the polynomials)

__all__ = ["OPS", "OpDef", "register", "EAGER_FORMS", "EAGER_INTO_FORMS", "eager_form", "eager_into_form",
           "broadcast_shapes", "expands_to", "unbroadcast_axes", "infer_types",
           "normalize_dim", "shape_str",
           "ELEMENTWISE", "REDUCE", "MOVEMENT", "SOURCE", "MATMUL", "COMPOSITE", "OPAQUE"]
