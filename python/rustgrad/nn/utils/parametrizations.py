"""rustgrad.nn.utils.parametrizations: weight_norm, spectral_norm and orthogonal as
parametrizations (torch.nn.utils.parametrizations), built on :mod:`.parametrize`.

rustgrad has no linear-algebra module yet, so the maps that need one are composed here from
matmul, gather and elementwise ops, and are differentiated through them: the matrix exponential
(a Taylor polynomial with scaling and squaring), the linear solve of the Cayley map (Gauss-Jordan
elimination with partial pivoting), the Householder product, and the Householder QR (LAPACK's
geqrf conventions) that initialises an orthogonal parametrization.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from enum import Enum, auto
from typing import Any, Dict, List, Optional, Tuple

from ... import _creation, _dtype
from ..._ops.compare import where
from ..._ops.joins import cat
from ..._ops.linalg import dot, mv
from ..._tensor import Tensor
from ...autograd import no_grad
from .. import functional as F
from ..modules import conv as _conv
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ---- linear algebra composed from existing ops ------------------------------------------------
def _eye(like: Tensor, n: int, m: Optional[int] = None) -> Tensor:
    return _creation.eye(n, n if m is None else m, dtype=like.dtype, device=like.device)


def _matrix_exp(a: Tensor) -> Tensor:
    """exp(a) for square matrices (..., n, n): a degree-18 Taylor polynomial of a / 2**s, where
    ||a / 2**s||_1 <= 1/2 puts the remainder below float64's resolution, squared s times."""
    n = a.shape[-1]
    with no_grad():
        norm = float(a.abs().sum(-2).amax()) if a.numel() else 0.0
    s = math.ceil(math.log2(norm / 0.5)) if norm > 0.5 else 0
    b = a / float(2 ** s) if s else a
    eye = _eye(a, n)
    e = eye
    for k in range(18, 0, -1):  # Horner: I + b(I + b/2(I + ... (I + b/18)))
        e = eye + (b @ e) / float(k)
    for _ in range(s):
        e = e @ e
    return e


def _solve(a: Tensor, b: Tensor) -> Tensor:
    """x with a @ x = b, for square a (..., n, n) and b (..., n, r): Gauss-Jordan elimination of
    [a | b] with partial pivoting (the pivot choice is a constant of the derivative, as in LU)."""
    n = a.shape[-1]
    batch = tuple(a.shape[:-2]) if a.dim() >= b.dim() else tuple(b.shape[:-2])
    m = cat([a.expand(*batch, n, n), b.expand(*batch, n, b.shape[-1])], dim=-1)
    rows = _creation.arange(n, device=a.device)
    for k in range(n):
        with no_grad():
            p = m[..., k:, k].abs().argmax(dim=-1).unsqueeze(-1) + k
            # swap rows k and p (a no-op where p == k)
            perm = where(rows == k, p, where(rows == p, k, rows))
        m = m.gather(-2, perm.unsqueeze(-1).expand(*m.shape))
        pivot_row = m[..., k:k + 1, :] / m[..., k:k + 1, k:k + 1]
        m = where((rows == k).unsqueeze(-1), pivot_row, m - m[..., :, k:k + 1] * pivot_row)
    return m[..., :, n:]


def _householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """The first k columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T, where v_i is column i of a
    (..., n, k) below the diagonal with a 1 on it (torch.linalg.householder_product)."""
    n, k = a.shape[-2], a.shape[-1]
    v = a.tril(-1) + _eye(a, n, k)
    q = _eye(a, n, k).expand(*a.shape)
    for i in range(k - 1, -1, -1):
        vi = v[..., :, i:i + 1]
        q = q - tau[..., i:i + 1].unsqueeze(-1) * (vi @ (vi.mT @ q))
    return q


def _geqrf(a: Tensor) -> Tuple[Tensor, Tensor]:
    """Householder QR of (..., m, n) in LAPACK's geqrf form: R on and above the diagonal, the
    reflectors' tails below it, and their scales tau (beta = -sign(alpha) * norm, tau = 0 where
    a column is already reduced). Not differentiable (used under no_grad)."""
    with no_grad():
        r = a.clone()
        rows, cols = a.shape[-2], a.shape[-1]
        taus = []
        for j in range(min(rows, cols)):
            x = r[..., j:, j]
            alpha = x[..., 0]
            xnorm = x[..., 1:].norm(dim=-1) if rows - j > 1 else _creation.zeros_like(alpha)
            reflect = xnorm != 0
            size = (alpha * alpha + xnorm * xnorm).sqrt()
            beta = where(reflect, where(alpha >= 0, -size, size), alpha)
            safe_beta = where(reflect, beta, _creation.ones_like(beta))
            tau = where(reflect, (beta - alpha) / safe_beta, _creation.zeros_like(beta))
            denom = where(reflect, alpha - beta, _creation.ones_like(beta))
            tail = x[..., 1:] / denom.unsqueeze(-1)
            if j + 1 < cols:
                w = cat([_creation.ones_like(alpha).unsqueeze(-1), tail], dim=-1).unsqueeze(-1)
                sub = r[..., j:, j + 1:]
                r[..., j:, j + 1:] = sub - tau[..., None, None] * (w @ (w.mT @ sub))
            r[..., j, j] = beta
            r[..., j + 1:, j] = tail
            taus.append(tau)
        return r, _stack_last(taus, a)


def _stack_last(ts: List[Tensor], like: Tensor) -> Tensor:
    if not ts:
        return _creation.zeros(*like.shape[:-2], 0, dtype=like.dtype, device=like.device)
    return cat([t.unsqueeze(-1) for t in ts], dim=-1)


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * _dtype.finfo(q.dtype).eps
    return bool((q.mT @ q).allclose(_eye(q, k), atol=eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a's QR decomposition with R's diagonal made non-negative (unique for full rank)."""
    x, tau = _geqrf(a)
    q = _householder_product(x, tau)
    return q * x.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


# ---- orthogonal -------------------------------------------------------------------------------
class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps an unconstrained matrix to an orthogonal one (or one with orthonormal columns or
    rows), through `orthogonal_map`, then multiplies by `base` when trivialised."""

    base: Tensor

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        """The orthogonal matrix parametrized by ``X``."""
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                pad = X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)
                X = cat([X, pad], dim=-1)
            A = X - X.mT  # skew-symmetric
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _matrix_exp(A)
            else:
                eye = _eye(A, n)
                Q = _solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            # the diagonal holds the reflections' signs (+-1; trained values truncate, as torch)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        """An ``X`` that this parametrization maps to ``Q`` (orthogonalised first if it is not
        orthogonal); with trivialisation it sets ``base`` and returns the map's preimage of I."""
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                # householder: the reflectors of Q's QR, with R's diagonal signs on the diagonal
                A, tau = _geqrf(Q)
                signs = A.diagonal(dim1=-2, dim2=-1).sign()
                signs = where(tau == 0.0, -signs, signs)
                diag = _eye(A, n, k)
                A = A * (1 - diag) + signs.unsqueeze(-2) * diag
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                # complete the columns to a square matrix at random, then orthogonalise
                N = _creation.randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(cat([Q, N], dim=-1))
            self.base = Q
            # every map sends this to the identity, so the weight starts as base's columns
            neg_id = _creation.zeros_like(q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: Optional[str] = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrains a matrix (or batch of matrices) of ``module`` to be orthogonal.

    ``module.<name>`` becomes Q = map(X) for an unconstrained ``X`` (a registered
    parametrization, see :mod:`.parametrize`): a square Q is orthogonal, a tall one has
    orthonormal columns and a wide one orthonormal rows. The maps: ``"matrix_exp"`` (exp of
    the skew-symmetric part of X's lower triangle), ``"cayley"`` ((I - A/2)^-1 (I + A/2)) and
    ``"householder"`` (a product of Householder reflectors). With ``use_trivialization`` (the
    default) Q is ``base @ map(X)`` with ``base`` a buffer, and the current weight,
    orthogonalised, becomes the starting point.

    Args:
        module (Module): the module.
        name (str): the matrix to constrain. Default: ``"weight"``.
        orthogonal_map (str, optional): ``"matrix_exp"``, ``"cayley"`` or ``"householder"``.
            Default: ``"matrix_exp"`` for a square matrix, ``"householder"`` otherwise.

    Keyword args:
        use_trivialization (bool): parametrize around ``base``. Default: ``True``.

    Returns:
        the module.

    Raises:
        ValueError: if ``module`` has no such tensor, it has fewer than 2 dimensions, or the map
            is unknown.

    Example::

        >>> from rustgrad.nn.utils.parametrizations import orthogonal
        >>> m = orthogonal(nn.Linear(4, 4))
        >>> bool(((m.weight.T @ m.weight - torch.eye(4)).abs() < 1e-5).all())
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ---- weight_norm ------------------------------------------------------------------------------
def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of v over every dimension but `dim`, shaped to broadcast against v (over all
    of v, as a scalar, for dim=-1): torch.norm_except_dim(v, 2, dim)."""
    if dim == -1:
        return v.norm(2)
    d = dim % v.dim()
    moved = v.transpose(0, d) if d else v
    norms = moved.reshape(moved.shape[0], -1).norm(2, dim=1)
    shape = [1] * v.dim()
    shape[d] = v.shape[d]
    return norms.reshape(shape)


def _weight_norm_fn(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """v * g / ||v||, the norm taken over every dimension but `dim` (torch._weight_norm)."""
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    """weight = g * v / ||v||: `original0` is the magnitude g, `original1` the direction v."""

    def __init__(self, dim: Optional[int] = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        """The weight from its magnitude and direction."""
        return _weight_norm_fn(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> Tuple[Tensor, Tensor]:
        """The magnitude and direction of ``weight``."""
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: Optional[int] = 0) -> Module:
    """Reparametrizes ``module.<name>`` as its magnitude times its direction, w = g v / ||v||.

    ``g`` and ``v`` are registered as ``module.parametrizations.<name>.original0`` (the norm
    over every dimension but ``dim``) and ``original1`` (the weight itself), and the weight is
    recomputed from them on every access. A state_dict saved with the legacy
    :func:`rustgrad.nn.utils.weight_norm` (``<name>_g``, ``<name>_v``) still loads.

    Args:
        module (Module): the module.
        name (str): the parameter. Default: ``"weight"``.
        dim (int, optional): the dimension that keeps one norm per slice; ``None`` takes one
            norm over the whole tensor. Default: ``0``.

    Returns:
        the module.

    Example::

        >>> from rustgrad.nn.utils.parametrizations import weight_norm
        >>> m = weight_norm(nn.Linear(20, 40))
        >>> m.parametrizations.weight.original0.shape, m.parametrizations.weight.original1.shape
        (torch.Size([40, 1]), torch.Size([40, 20]))
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict: Dict[str, Any], prefix: str,
                                 local_metadata: Dict[str, Any], strict: bool,
                                 missing_keys: List[str], unexpected_keys: List[str],
                                 error_msgs: List[str]) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    hooks = module.__dict__.setdefault("_rg_load_pre_hooks", OrderedDict())
    hooks[f"weight_norm.{name}"] = _weight_norm_compat_hook
    return module


# the transposed convolutions, whose output channels are weight dimension 1
_CONV_TRANSPOSE = tuple(getattr(_conv, n) for n in ("ConvTranspose1d", "ConvTranspose2d",
                                                    "ConvTranspose3d") if hasattr(_conv, n))


# ---- spectral_norm ----------------------------------------------------------------------------
class _SpectralNorm(Module):
    """weight / sigma, sigma the largest singular value estimated by power iteration over the
    buffers `_u` and `_v` (one step per forward in training mode)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
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
            # a good estimate from the start
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # the buffers are updated in place (torch writes them with out=)
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mv(weight_mat.mT, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        """``weight`` divided by its estimated spectral norm (normalised, if 1-D)."""
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # clones: the buffers change in place at the next forward, after this graph saved them
        u = self._u.clone()
        v = self._v.clone()
        sigma = dot(u, mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        """``value`` itself: any weight is a valid starting point (it is rescaled on access)."""
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: Optional[int] = None) -> Module:
    """Divides ``module.<name>`` by its spectral norm (largest singular value) on every access.

    The norm is estimated by power iteration: the vectors ``_u`` and ``_v`` are buffers of
    ``module.parametrizations.<name>[0]``, initialised at random and iterated 15 times at
    registration, then ``n_power_iterations`` times per access in training mode (and not at
    all in eval mode). The weight is viewed as a matrix with ``dim`` as its rows.

    Args:
        module (Module): the module.
        name (str): the parameter. Default: ``"weight"``.
        n_power_iterations (int): power iterations per access in training. Default: ``1``.
        eps (float): added to norms when normalising. Default: ``1e-12``.
        dim (int, optional): the output dimension. Default: ``1`` for transposed
            convolutions, else ``0``.

    Returns:
        the module.

    Example::

        >>> from rustgrad.nn.utils.parametrizations import spectral_norm
        >>> m = spectral_norm(nn.Linear(20, 40))
        >>> m.parametrizations.weight[0]._u.shape
        torch.Size([40])
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, _CONV_TRANSPOSE) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
