"""Random numbers: the in-place fills normal_, uniform_, bernoulli_, and bernoulli, randperm and
multinomial, drawn from a rustgrad Generator (`generator=`, else the default one: NumPy's PCG64
on the host, the values then moved to the tensor's device)."""

from __future__ import annotations

from typing import Any

from .. import _creation, _dtype
from .._backends import CPU, namespace
from .._tensor import Tensor
from ._declare import op
from ._util import (
    check_inplace,
    check_internal_overlap,
    quiet_fp,
)

# the generator draws on the host (NumPy), then the values move to the tensor's device
host = namespace(CPU)


# ---- in-place random fills -----------------------------------------------------------------
def _fill_random(self: Tensor, draw: Any, generator: Any = None) -> Tensor:
    check_inplace(self)
    check_internal_overlap(self)
    arr = draw(_creation.rng_of(generator), tuple(self._data.shape))
    arr = arr.astype(self._data.dtype)
    self._data[...] = _creation._target(self.device).from_numpy(arr, self.device)
    self._bump_version()
    return self


@op(method="normal_")
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills self in place with normal samples N(mean, std**2)."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill_random(self, lambda rng, shape: rng.normal(mean, std, shape), generator)


@op(method="uniform_")
def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills self in place with uniform samples from [from, to)."""
    if a > b:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    return _fill_random(self, lambda rng, shape: rng.uniform(a, b, shape), generator)


@op(method="bernoulli_")
def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fills self in place with 0/1 samples that are 1 with probability p."""
    if isinstance(p, Tensor):
        pa = p._backend.to_numpy(p._data)
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        pa = p
    return _fill_random(self, lambda rng, shape: rng.random(shape) < pa, generator)


# ---- randperm --------------------------------------------------------------------------------
@op(function="randperm")
def randperm(n: int, *, generator: Any = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1."""
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    rng = _creation.rng_of(generator)
    arr = rng.permutation(n).astype((dtype or _dtype.int64).np)
    if device is None:
        device = _creation._config.default_device()
    if device is not None:
        arr = _creation._target(device).from_numpy(arr, device)
    return _creation._wrap(arr, requires_grad)


# ---- bernoulli, multinomial ----------------------------------------------------------------
@op(method="bernoulli", function="bernoulli")
def bernoulli(input: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    """0/1 samples, 1 with the probability input holds (or p), in input's dtype."""
    if p is None:
        probs = input._backend.to_numpy(input._data).astype("float64")
        if not _dtype.is_floating_np(input._data.dtype):
            raise NotImplementedError(
                f'"bernoulli_tensor_cpu_self_" not implemented for '
                f"'{_dtype.scalar_type_name(input.dtype)}'")
        if ((probs < 0) | (probs > 1)).any() or (probs != probs).any():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  "
                               "(Could this error message be improved?  If so, please report "
                               "an enhancement request to PyTorch.)")
        out = _creation.empty_like(input)
        return _fill_random(out, lambda rng, shape: rng.random(shape) < probs, generator)
    return bernoulli_(_creation.empty_like(input), p, generator=generator)


def _check_multinomial(input: Tensor, num_samples: int, replacement: bool, probs: Any) -> None:
    if not input.dtype.is_floating_point:
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{_dtype.scalar_type_name(input.dtype)}")
    if probs.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > probs.shape[-1]:
        raise RuntimeError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if replacement and num_samples > 1:  # torch's sampler checks each entry: NaN fails ">= 0"
        if (~(probs >= 0)).any():
            raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
        if (probs == float("inf")).any():
            raise RuntimeError(
                "invalid multinomial distribution (encountering probability entry = infinity or NaN)")
    elif ((probs < 0) | ~(abs(probs) < float("inf"))).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (probs.sum(-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


@op(method="multinomial", function="multinomial")
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Any = None) -> Tensor:
    """Indices drawn from each row of input, with probabilities proportional to its entries
    (with or without replacement)."""
    probs = input._backend.to_numpy(input._data).astype("float64")
    _check_multinomial(input, num_samples, replacement, probs)
    rows = probs.reshape(-1, probs.shape[-1])
    rng = _creation.rng_of(generator)
    n = rows.shape[1]
    if replacement:
        # inverse CDF: a zero-probability index owns an empty interval and is never drawn
        cdf = rows.cumsum(1)
        u = rng.random((rows.shape[0], num_samples)) * cdf[:, -1:]
        idx = host.stack([c.searchsorted(v, side="right") for c, v in zip(cdf, u)]).clip(0, n - 1)
    else:
        # exponential race: the largest p / E (E ~ Exp(1)) are a weighted draw without
        # replacement; zero-probability entries come last
        e = rng.exponential(size=rows.shape)
        with quiet_fp(host):
            keys = rows / e
        idx = (-keys).argsort(1, kind="stable")[:, :num_samples]
    out = idx.reshape(probs.shape[:-1] + (num_samples,)).astype(_dtype.int64.np)
    return _creation._wrap(_creation._target(input.device).from_numpy(out, input.device))
