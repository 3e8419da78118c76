"""torch.nn.utils.parametrizations: weight_norm and spectral_norm as parametrizations
(parametrize.py): the module keeps the unconstrained tensors under
`parametrizations.<name>` and computes `<name>` from them on each read.

- weight_norm: original0 = g (the norm of each slice along `dim`), original1 = v (the
  direction); `<name>` is torch._weight_norm(v, g, dim) (one WeightNormInterfaceBackward0
  node where dim is the first or last).
- spectral_norm: `<name>` is the weight divided by its largest singular value, estimated by
  power iteration on buffers `_u` and `_v` (drawn from the global generator as torch draws
  them, then 15 iterations at registration and `n_power_iterations` at each read in training).
- orthogonal: `<name>` is an orthogonal matrix, matrix_exp or cayley of a skew-symmetric
  matrix, or a product of Householder reflectors, of the original (times the `base` buffer
  with the dynamic trivialization).
"""
from __future__ import annotations

from fusegrad.settings import finfo
from fusegrad.tracer.creation import eye as _eye, randn as _randn, zeros_like as _zeros_like
from fusegrad.tracer.functional import cat as _cat
from fusegrad.tracer.grad_mode import no_grad
from fusegrad.tracer.linalg_lu import geqrf, householder_product
from fusegrad.tracer.linalg_functions import vdot
from fusegrad.tracer.products import mv
from fusegrad.tracer.tensor import Tensor
from fusegrad.tracer.weight_norm import _weight_norm as weight_norm_fn, norm_except_dim

from .. import functional as F
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm"]


class _WeightNorm(Module):
    """weight = g * v / ||v|| (norm over every dim but `dim`; dim None or -1: the whole tensor)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_norm_fn(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int = 0) -> Module:
    """Weight-normalise module.<name> (Salimans and Kingma): it becomes g * v / ||v||, with
    g = parametrizations.<name>.original0 and v = original1 as the parameters trained."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs) -> None:
        # (torch's: a checkpoint of nn.utils.weight_norm's hook form, <name>_g and <name>_v,
        # loads into the parametrization's original0 and original1)
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    """weight / sigma, sigma the largest singular value of the weight seen as a matrix (rows
    along `dim`), estimated by power iteration on the buffers `_u` and `_v`."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # (u and v are updated in place, as torch's out= normalize: a weight read earlier in a
        # step and its node keep the versions they saved)
        with no_grad():
            for _ in range(n_power_iterations):
                self._u = F.normalize(mv(weight_mat, self._v), dim=0, eps=self.eps, out=self._u)
                self._v = F.normalize(mv(weight_mat.H, self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = vdot(u, mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Spectrally normalise module.<name> (Miyato et al.): it reads as the weight divided by its
    largest singular value; `dim` defaults to 1 for transposed convolutions, else 0."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ------------------------------------------------------------------ orthogonal
# torch's _Orthogonal (torch/nn/utils/parametrizations.py), written over fusegrad's ops in the same
# order, so that the nodes, the values and the random draws are torch's.
class _OrthMaps:
    """The maps from unconstrained matrices to orthogonal ones (torch's _OrthMaps enum)."""

    matrix_exp = "matrix_exp"
    cayley = "cayley"
    householder = "householder"


_MAPS = (_OrthMaps.matrix_exp, _OrthMaps.cayley, _OrthMaps.householder)


class _Orthogonal(Module):
    """Q orthogonal (orthonormal columns when tall, rows when wide) from an unconstrained X:
    matrix_exp or cayley of the skew-symmetric matrix of X's lower triangle, or the product of
    the Householder reflectors below X's diagonal (its diagonal the signs of the columns); with
    use_trivialization, Q is then `base @ Q`, base a buffer that right_inverse sets."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # (X is tall from here on)
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:          # (embedded in a square matrix: n x k - k(k-1)/2 parameters)
                X = _cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _linalg().matrix_exp(A)
            else:               # the Cayley retraction (I + A/2)(I - A/2)^-1
                Id = _eye(n, dtype=A.dtype)
                Q = _linalg().solve(Id.add(A, alpha=-0.5), Id.add(A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = householder_product(A, tau)
            # (X's diagonal holds the columns' signs, neither differentiated nor updated: torch
            # casts it to int32, fusegrad to int64, the only integer dtype it has: the same values
            # and the same MulBackward0 node)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).long().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        """The unconstrained tensor giving Q: the QR reflectors of Q (householder without
        trivialization), or -I with `base` set to Q (completed to a square orthogonal matrix by
        random columns where Q is not square, orthogonalised where Q is not orthogonal)."""
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape torch.Size({list(self.shape)}). "
                             f"Got a tensor of shape torch.Size({list(Q.shape)}).")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            # the QR reflectors, with diag(R) > 0: the diagonal keeps R's signs, flipped where LAPACK
            # chose no reflection (tau exactly 0)
            A, tau = geqrf(Q)
            A.diagonal(dim1=-2, dim2=-1).sign_()
            A.diagonal(dim1=-2, dim2=-1)[tau == 0.0] *= -1
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:                   # completed into a full n x n orthogonal matrix
            N = _randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype)
            Q = _make_orthogonal(_cat([Q, N], dim=-1))
        self.base = Q
        # -I: the Householder map of zeros with this diagonal is eye(m, n)
        neg_Id = _zeros_like(Q_init)
        neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_Id


def _linalg():
    # (fusegrad.linalg imported at the first call: fusegrad's package is still loading when nn is)
    from fusegrad import linalg
    return linalg


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.size(-2), Q.size(-1)
    Id = _eye(k, dtype=Q.dtype)
    eps = 10.0 * n * finfo(Q.dtype).eps        # (a reasonable eps, not too large: torch's)
    return bool((Q.mH @ Q).allclose(Id, atol=eps))


def _make_orthogonal(A: Tensor) -> Tensor:
    """Q of A = QR (A tall) with diag(R) >= 0."""
    X, tau = geqrf(A)
    Q = householder_product(X, tau)
    Q *= X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)
    return Q


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Make module.<name> (a matrix or a batch of matrices) orthogonal: orthonormal columns when
    tall, rows when wide, through `orthogonal_map` ("matrix_exp", "cayley" or "householder"; by
    default matrix_exp for square matrices, householder otherwise), with `base` kept under
    module.parametrizations.<name>[0].base where use_trivialization. The initial value is the
    tensor itself where it is orthogonal, else the Q of its QR decomposition."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    # (1-dim tensors could map onto the sphere, which torch refuses)
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)      # (a name not a str: getattr's TypeError, as torch's)
    if orth_enum not in _MAPS:
        orth_enum = None
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


__all__.append("orthogonal")
