"""Helpers shared by the distributions: argument broadcasting, probs <-> logits, lazy properties."""

from __future__ import annotations

import functools
from numbers import Number
from typing import Any, Callable, Generic, Sequence, Tuple, TypeVar, Union, overload

from . import _rg as rg
from ._rg import Size, Tensor

__all__ = [
    "broadcast_all", "broadcast_shapes", "clamp_probs", "euler_constant", "lazy_property",
    "logits_to_probs", "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix",
]

# the Euler-Mascheroni constant (Gumbel's mean, the digamma function at 1)
euler_constant = 0.57721566490153286060

T = TypeVar("T")
R = TypeVar("R")


def broadcast_shapes(*shapes: Sequence[int]) -> Size:
    """The shape NumPy's broadcasting rules give these shapes (RuntimeError where they clash)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s, ndim - len(s)):
            if n == out[i] or n == 1:
                continue
            if out[i] != 1:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape.  "
                                   f"Mismatch is between {list(shapes[0])} and {list(s)}.")
            out[i] = n
    return Size(out)


def broadcast_tensors(*tensors: Tensor) -> Tuple[Tensor, ...]:
    """The tensors expanded (as views) to their common broadcast shape."""
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def broadcast_all(*values: Union[Tensor, Number, float, int, None]) -> Tuple[Tensor, ...]:
    """Tensors and numbers broadcast to one shape, numbers made tensors.

    Numbers take the dtype and device of the first tensor among the values (the default dtype
    when there is none), as torch's ``broadcast_all``.

    Args:
        *values (Tensor or Number): the parameters of a distribution.

    Example::

        >>> from rustgrad.distributions.utils import broadcast_all
        >>> loc, scale = broadcast_all(torch.zeros(2, 1), 1.0)
        >>> tuple(scale.shape), scale.dtype
        ((2, 1), torch.float32)
    """
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    like = next((v for v in values if isinstance(v, Tensor)), None)
    if like is None:
        options: dict = {"dtype": rg.get_default_dtype()}
    else:
        options = {"dtype": like.dtype, "device": like.device}
    tensors = [v if isinstance(v, Tensor) else rg.tensor(v, **options) for v in values]
    return broadcast_tensors(*tensors)


def _standard_normal(shape: Sequence[int], dtype: Any, device: Any) -> Tensor:
    """N(0, 1) samples of this shape, dtype and device."""
    return rg.randn(Size(shape), dtype=dtype, device=device)


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """value summed over its `dim` rightmost dimensions (reinterpreting them as event dims)."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """probs clamped into [eps, 1 - eps] of their dtype, away from log's singularities at 0 and 1.

    Args:
        probs (Tensor): probabilities.
    """
    eps = rg.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: sigmoid for a binary variable, else softmax over the last dim.

    Args:
        logits (Tensor): unnormalized log-probabilities (log-odds when binary).
        is_binary (bool): whether each entry is the log-odds of one Bernoulli variable.
    """
    if is_binary:
        return rg.sigmoid(logits)
    return rg.softmax(logits, dim=-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities (clamped first): log-odds when binary, else log-probabilities.

    Args:
        probs (Tensor): probabilities.
        is_binary (bool): whether each entry is the probability of one Bernoulli variable.
    """
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


class lazy_property(Generic[T, R]):
    """A property computed on first access and then stored on the instance (as a plain
    attribute), computed with gradients enabled so that it stays differentiable even when first
    read under ``no_grad``. Used for parameters derived from others (a Categorical's logits
    from its probs)."""

    def __init__(self, wrapped: Callable[[T], R]) -> None:
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)  # type: ignore[arg-type]

    @overload
    def __get__(self, instance: None, obj_type: Any = None) -> _lazy_property_and_property[T, R]: ...

    @overload
    def __get__(self, instance: T, obj_type: Any = None) -> R: ...

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with rg.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property[T, R], property):
    """What a lazy_property reads as on the class: a property too, for documentation tools."""

    def __init__(self, wrapped: Callable[[T], R]) -> None:
        property.__init__(self, wrapped)
        lazy_property.__init__(self, wrapped)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower triangle (from diagonal `diag` down) of the last two dims, row by row, as a vector.

    Args:
        mat (Tensor): ``(*, n, n)`` matrices.
        diag (int): the highest diagonal kept (0: the main one; -1: strictly lower).
    """
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows = rg.arange(n, device=mat.device)
    keep = (rows.reshape(-1, 1) - rows) >= -diag
    return mat[..., keep]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of `tril_matrix_to_vec`: a vector of a lower triangle back to ``(*, n, n)``.

    Args:
        vec (Tensor): ``(*, m)`` with m the size of such a triangle.
        diag (int): the highest diagonal the vector holds.
    """
    m = vec.shape[-1]
    # the triangle of an n x n matrix from diagonal `diag` down holds n(n+1)/2 + diag*n - (the
    # corner cut off when diag < 0) entries: solve that quadratic for n
    root = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = rg.finfo(vec.dtype).eps
    if not round(root) - eps <= root <= round(root) + eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = int(round(root))
    rows = rg.arange(n, device=vec.device)
    keep = (rows.reshape(-1, 1) - rows) >= -diag
    out = rg.zeros(tuple(vec.shape[:-1]) + (n, n), dtype=vec.dtype, device=vec.device)
    out[..., keep] = vec
    return out

