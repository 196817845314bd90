"""Random numbers: the in-place fills normal_, uniform_, bernoulli_ and randperm, drawn from
rustgrad's generator (NumPy's PCG64 on the host, then moved to the tensor's device)."""

from __future__ import annotations

from typing import Any

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._util import (
    check_inplace,
    check_internal_overlap,
)


# ---- in-place random fills -----------------------------------------------------------------
def _fill_random(self: Tensor, draw: Any) -> Tensor:
    from .. import _creation

    check_inplace(self)
    check_internal_overlap(self)
    arr = draw(_creation.default_generator._rng, tuple(self._data.shape))
    arr = arr.astype(self._data.dtype)
    self._data[...] = _creation._target(self.device).from_numpy(arr, self.device)
    self._bump_version()
    return self


@op(method="normal_")
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills self in place with normal samples N(mean, std**2)."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill_random(self, lambda rng, shape: rng.normal(mean, std, shape))


@op(method="uniform_")
def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills self in place with uniform samples from [from, to)."""
    if a > b:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    return _fill_random(self, lambda rng, shape: rng.uniform(a, b, shape))


@op(method="bernoulli_")
def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fills self in place with 0/1 samples that are 1 with probability p."""
    if isinstance(p, Tensor):
        pa = p._backend.to_numpy(p._data)
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        pa = p
    return _fill_random(self, lambda rng, shape: rng.random(shape) < pa)


# ---- randperm --------------------------------------------------------------------------------
@op(function="randperm")
def randperm(n: int, *, generator: Any = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1."""
    from .. import _creation

    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    rng = (generator or _creation.default_generator)._rng
    arr = rng.permutation(n).astype((dtype or _dtype.int64).np)
    if device is not None:
        arr = _creation._target(device).from_numpy(arr, device)
    return _creation._wrap(arr, requires_grad)
