"""Random numbers: the in-place fills normal_, uniform_, bernoulli_, random_, exponential_,
geometric_, log_normal_, cauchy_, and bernoulli, poisson, randperm, multinomial, normal and the
in-place dropout functions (alpha_dropout_, feature_alpha_dropout_, feature_dropout_), drawn from a
rustgrad Generator (`generator=`, else the default one: NumPy's PCG64 on the host, the values
then moved to the tensor's device).

A fill on a tensor that requires grad records torch's node for it (NormalBackward0, ...): the
values no longer depend on the old ones, so the gradient sent back is zeros."""

from __future__ import annotations

import math
from typing import Any

from .. import _creation, _dtype
from .._backends import CPU, namespace, resolve
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import (
    check_broadcastable,
    check_inplace,
    check_internal_overlap,
    is_grad_enabled,
    quiet_fp,
    same_device,
)
from .arith import _broadcast_shape
from .copies import _overwrite, _overwrite_bw, write_out

# the generator draws on the host (NumPy), then the values move to the tensor's device
host = namespace(CPU)

_FILL_NODES = {name: node(name, _overwrite_bw) for name in (
    "NormalBackward0", "UniformBackward0", "BernoulliBackward1", "BernoulliBackward2",
    "RandomBackward0", "RandomBackward1", "RandomBackward2", "ExponentialBackward0",
    "GeometricBackward0", "LogNormalBackward0", "CauchyBackward0")}


# ---- in-place random fills -----------------------------------------------------------------
def _fill_random(self: Tensor, draw: Any, generator: Any = None, grad_fn: str = "") -> Tensor:
    check_inplace(self)
    check_internal_overlap(self)
    arr = draw(_creation.rng_of(generator), tuple(self._data.shape))
    arr = arr.astype(self._data.dtype)
    data = _creation._target(self.device).from_numpy(arr, self.device)
    if grad_fn and is_grad_enabled() and self.requires_grad:
        # the values no longer depend on the old ones: the node sends zeros back
        return _overwrite(self, data, (self,), _FILL_NODES[grad_fn])
    self._data[...] = data
    self._bump_version()
    return self


@op(method="normal_", grad_fn="NormalBackward0")
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills self in place with normal samples N(mean, std**2)."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill_random(self, lambda rng, shape: rng.normal(mean, std, shape), generator,
                        "NormalBackward0")


@op(method="uniform_", grad_fn="UniformBackward0")
def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills self in place with uniform samples from [from, to)."""
    if a > b:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    return _fill_random(self, lambda rng, shape: rng.uniform(a, b, shape), generator,
                        "UniformBackward0")


@op(method="bernoulli_", grad_fn=("BernoulliBackward1", "BernoulliBackward2"))
def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fills self in place with 0/1 samples that are 1 with probability p."""
    if isinstance(p, Tensor):
        pa = p._backend.to_numpy(p._data)
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        pa = p
    return _fill_random(self, lambda rng, shape: rng.random(shape) < pa, generator,
                        "BernoulliBackward1" if isinstance(p, Tensor) else "BernoulliBackward2")


# ---- random_, exponential_, geometric_, log_normal_, cauchy_ -------------------------------------
# the largest integer each floating dtype holds with all the integers below it (2 ** digits)
_FLOAT_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}
_UNSET: Any = object()


def _int_range(dt: _dtype.dtype) -> Any:
    """(lowest, highest) integer random_ may draw for dtype dt."""
    if dt.is_floating_point:
        top = 2 ** _FLOAT_DIGITS[dt.name]
        return -top, top
    if dt is _dtype.bool_:
        return 0, 1
    info = host.iinfo(dt.np)
    return int(info.min), int(info.max)


@op(method="random_", grad_fn=("RandomBackward0", "RandomBackward1", "RandomBackward2"))
def random_(self: Tensor, from_: Any = None, to: Any = _UNSET, *, generator: Any = None) -> Tensor:
    """Fills self in place with integers drawn uniformly (as self's dtype).

    Args:
        self (Tensor): the tensor filled.
        from_ (int, optional): with `to`, the lowest value; alone (``random_(to)``), the
            exclusive upper bound from 0.
        to (int, optional): the exclusive upper bound; None draws up to the dtype's largest
            value.

    With no bounds the values run from 0 to the dtype's largest integer (2**mantissa digits
    for floating types, inclusive).

    Example::

        >>> g = rustgrad.Generator().manual_seed(0)
        >>> x = rustgrad.empty(1000, dtype=rustgrad.int64).random_(3, 7, generator=g)
        >>> (int(x.min()), int(x.max()))
        (3, 6)
    """
    dt = self.dtype
    low_ok, high_ok = _int_range(dt)
    if from_ is None and to is _UNSET:
        low, high, grad_fn = 0, high_ok, "RandomBackward2"
    elif to is _UNSET:
        low, high, grad_fn = 0, int(from_) - 1, "RandomBackward1"
    else:
        low, grad_fn = int(from_ or 0), "RandomBackward0"
        high = high_ok if to is None else int(to) - 1
        if to is not None and low >= int(to):
            raise RuntimeError(
                f"random_ expects 'from' to be less than 'to', but got from={low} >= to={to}")
    if not dt.is_floating_point:
        if not low_ok <= low <= high_ok:
            raise RuntimeError(f"from is out of bounds for {_dtype.cpp_name(dt)}")
        if not low_ok <= high <= high_ok:
            raise RuntimeError(f"to - 1 is out of bounds for {_dtype.cpp_name(dt)}")
    if high < low:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high + 1}")

    def draw(rng: Any, shape: Any) -> Any:
        return rng.integers(low, high, size=shape, dtype=host.int64, endpoint=True)

    return _fill_random(self, draw, generator, grad_fn)


def _number(v: Any) -> str:
    """A parameter as torch's messages print it (a C++ double: 0, -1, 0.5)."""
    return f"{float(v):g}"


def _need_float(self: Tensor, name: str) -> None:
    if not self.dtype.is_floating_point:
        raise RuntimeError(
            f"{name} distribution is a continuous probability distribution. dtype must be a "
            f"floating point but you specified "
            f"{_dtype.scalar_type_name(self.dtype) if name == 'Exponential' else _dtype.cpp_name(self.dtype)}")


@op(method="exponential_", grad_fn="ExponentialBackward0")
def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fills self in place with samples of the exponential distribution of rate lambd.

    Args:
        self (Tensor): a floating point tensor.
        lambd (float, optional): the rate (> 0); the mean is 1 / lambd. Default: 1.

    Example::

        >>> x = rustgrad.empty(3).exponential_(2.0)
        >>> bool((x >= 0).all())
        True
    """
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_number(lambd)}")
    _need_float(self, "Exponential")
    return _fill_random(self, lambda rng, shape: rng.exponential(1.0 / lambd, shape), generator,
                        "ExponentialBackward0")


@op(method="geometric_", grad_fn="GeometricBackward0")
def geometric_(self: Tensor, p: float, *, generator: Any = None) -> Tensor:
    """Fills self in place with samples of the geometric distribution: the number of Bernoulli(p)
    trials up to and including the first success (1, 2, ...).

    Args:
        self (Tensor): the tensor filled (any numeric dtype but bool).
        p (float): the probability of success of each trial, in (0, 1).

    Example::

        >>> x = rustgrad.empty(3, dtype=rustgrad.int64).geometric_(0.5)
        >>> bool((x >= 1).all())
        True
    """
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_number(p)}")
    if self.dtype is _dtype.bool_:
        raise NotImplementedError('"geometric_cpu" not implemented for \'Bool\'')
    return _fill_random(self, lambda rng, shape: rng.geometric(p, shape), generator,
                        "GeometricBackward0")


@op(method="log_normal_", grad_fn="LogNormalBackward0")
def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *,
                generator: Any = None) -> Tensor:
    """Fills self in place with samples exp(N(mean, std**2)) of the log-normal distribution.

    Args:
        self (Tensor): a floating point tensor.
        mean (float, optional): the mean of the underlying normal. Default: 1.
        std (float, optional): the standard deviation of the underlying normal (> 0). Default: 2.

    Example::

        >>> x = rustgrad.empty(3).log_normal_(0.0, 0.5)
        >>> bool((x > 0).all())
        True
    """
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_number(std)}")
    if not self.dtype.is_floating_point:
        raise NotImplementedError(
            f'"log_normal_cpu" not implemented for \'{_dtype.scalar_type_name(self.dtype)}\'')
    return _fill_random(self, lambda rng, shape: rng.lognormal(mean, std, shape), generator,
                        "LogNormalBackward0")


@op(method="cauchy_", grad_fn="CauchyBackward0")
def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *,
            generator: Any = None) -> Tensor:
    """Fills self in place with samples of the Cauchy distribution median + sigma * tan(pi * (U - 1/2)).

    Args:
        self (Tensor): a floating point tensor.
        median (float, optional): the location. Default: 0.
        sigma (float, optional): the scale (> 0). Default: 1.

    Example::

        >>> rustgrad.empty(2, 3).cauchy_(median=1.0).shape
        torch.Size([2, 3])
    """
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_number(sigma)}")
    _need_float(self, "Cauchy")
    return _fill_random(
        self, lambda rng, shape: median + sigma * rng.standard_cauchy(shape), generator,
        "CauchyBackward0")


# ---- poisson -------------------------------------------------------------------------------------
def _poisson_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.new_zeros(g.shape)


POISSON = node("PoissonBackward0", _poisson_bw)


@op(function="poisson", grad_fn="PoissonBackward0")
def poisson(input: Tensor, generator: Any = None) -> Tensor:
    """Samples of the Poisson distribution, one per entry of input, which holds the rates.

    Args:
        input (Tensor): the rates (>= 0), a floating point tensor.
        generator (Generator, optional): the generator drawn from.

    The result has input's dtype; its gradient is zero.

    Example::

        >>> rustgrad.poisson(rustgrad.tensor([0., 0.]))
        tensor([0., 0.])
    """
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f'"poisson_cpu" not implemented for \'{_dtype.scalar_type_name(input.dtype)}\'')
    rates = input._backend.to_numpy(input._data).astype("float64")
    if (rates < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    arr = _creation.rng_of(generator).poisson(rates).astype(input._data.dtype)
    out = _creation._target(input.device).from_numpy(arr, input.device)
    return POISSON.record(out, (input,))


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


# ---- normal: samples of N(mean, std**2), tensors or numbers ---------------------------------------
def _zeros_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    """The samples do not depend on mean and std as autograd sees them: torch sends zeros."""
    z = g.new_zeros(g.shape)
    return z if ctx == 1 else (z, z)


NORMAL_MEAN = node("NormalBackward1", _zeros_bw)  # normal(Tensor mean, float std)
NORMAL_STD = node("NormalBackward2", _zeros_bw)  # normal(float mean, Tensor std)
NORMAL_BOTH = node("NormalBackward3", _zeros_bw)  # normal(Tensor mean, Tensor std)


def _normal_dtype_check(dt: _dtype.dtype, device: Any) -> None:
    if not dt.is_floating_point:
        kind = "cuda" if getattr(device, "type", device) == "cuda" else "cpu"
        raise NotImplementedError(f'"normal_kernel_{kind}" not implemented for '
                                  f"'{_dtype.scalar_type_name(dt)}'")


def _device_or_default(device: Any) -> Any:
    if device is None:
        device = _creation._config.default_device()
    return CPU if device is None else resolve(device)


def _standard_normal(shape: Any, dt: Any, device: Any, generator: Any) -> Any:
    """Standard normal samples of shape, in array dtype dt on device."""
    arr = _creation.rng_of(generator).standard_normal(tuple(shape)).astype(dt)
    return _creation._target(device).from_numpy(arr, device)


@op(function="normal", grad_fn=("NormalBackward1", "NormalBackward2", "NormalBackward3"))
def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Any = None,
           out: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
           pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """Samples of normal distributions N(mean, std**2): one per entry of the broadcast mean
    and std when either is a tensor, else a tensor of the given size.

    Args:
        mean (Tensor or float): the means.
        std (Tensor or float, optional): the standard deviations (>= 0). Default: 1.
        size (tuple of ints, optional): the shape, when mean and std are both numbers.
        generator (Generator, optional): keyword-only; the generator drawn from.
        out (Tensor, optional): keyword-only; the tensor written.
        dtype (rustgrad.dtype, optional): keyword-only; the element type of the numbers' form.
            Default: the default dtype.
        layout: keyword-only; accepted for torch's signature (strided).
        device (optional): keyword-only; the device of the numbers' form.
        pin_memory (bool, optional): keyword-only; accepted for torch's signature.
        requires_grad (bool, optional): keyword-only; whether the numbers' form requires grad.
            Default: False.

    The result has mean's dtype (std's when mean is a number); its gradient with respect to
    mean and std is zero, as torch's (the samples are not reparameterised).

    Example::

        >>> rustgrad.normal(rustgrad.zeros(3), 0.).tolist()
        [0.0, 0.0, 0.0]
        >>> rustgrad.normal(2., 3., (2, 4)).shape
        torch.Size([2, 4])
    """
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not (mean_t or std_t):
        if size is None:
            raise TypeError(
                "normal() received an invalid combination of arguments - got "
                f"({type(mean).__name__}, {type(std).__name__}), but expected one of:\n"
                " * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
                " * (Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor out = None)\n"
                " * (float mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
                " * (float mean, float std, tuple of ints size, *, torch.Generator generator = None, "
                "Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
                "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n")
        if not std >= 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_number(std)}")
        if out is not None:
            dtype, device = dtype or out.dtype, device or out.device
        shape = _creation._size(tuple(size) if isinstance(size, (list, tuple)) else (size,))
        dt = dtype or _dtype.get_default_dtype()
        dev = _device_or_default(device)
        _normal_dtype_check(dt, dev)
        z = _standard_normal(shape, dt.np, dev, generator)
        result = _creation._wrap(z * dt.np.type(std) + dt.np.type(mean), requires_grad)
        return result if out is None else write_out(out, result, "normal")
    if size is not None:
        raise TypeError("normal(): 'size' is given only with a number mean and std")
    first = mean if mean_t else std
    dt = first.dtype
    if std_t:
        if mean_t:
            same_device(mean._data, std._data)
        if not bool((std._data >= 0).all()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif not std >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_number(std)}")
    _normal_dtype_check(dt, first.device)
    std_a = std._data.astype(dt.np) if std_t else dt.np.type(std)
    mean_a = mean._data if mean_t else dt.np.type(mean)
    shape = _broadcast_shape(mean_a.shape, std_a.shape)
    if out is not None and out.numel():
        check_broadcastable(shape, tuple(out.shape))
        shape = _broadcast_shape(shape, tuple(out.shape))
    z = _standard_normal(shape, dt.np, first.device, generator)
    values = (z * std_a + mean_a).astype(dt.np)
    if mean_t and std_t:
        result = NORMAL_BOTH.record(values, (mean, std), 2)
    elif mean_t:
        result = NORMAL_MEAN.record(values, (mean,), 1)
    else:
        result = NORMAL_STD.record(values, (std,), 1)
    return result if out is None else write_out(out, result, "normal")


# ---- in-place dropout functions: torch.alpha_dropout_, feature_alpha_dropout_, feature_dropout_ ----
_ALPHA = 1.7580993408473766  # SELU's negative saturation value, -scale * alpha


def _dropout_(input: Tensor, p: float, train: bool, feature: bool, alpha: bool) -> Tensor:
    """torch's in-place dropout kernels: input multiplied in place by a 0/1 mask (scaled by
    1 / (1 - p)), per entry or per (sample, channel) of (N, C, *) input; alpha dropout then
    adds the shift that keeps SELU's mean and variance."""
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not train or input.numel() == 0:
        return input
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1:
        return input.mul_(_creation.zeros((), dtype=input.dtype, device=input.device))
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else tuple(input.shape)
    keep = _creation.rng_of(None).random(shape) < 1 - p
    noise = _creation._target(input.device).from_numpy(keep.astype(input._data.dtype),
                                                       input.device)
    if not alpha:
        return input.mul_(_creation._wrap(noise / input._data.dtype.type(1 - p)))
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    shift = (noise - 1) * (_ALPHA * a) + _ALPHA * a * p
    return input.mul_(_creation._wrap((noise * a).astype(noise.dtype))).add_(
        _creation._wrap(shift.astype(noise.dtype)))


@op(function="alpha_dropout_", grad_fn=("MulBackward0", "AddBackward0"))
def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """Alpha dropout written into input: dropped entries take SELU's negative saturation
    value, and an affine map keeps the mean and variance; input itself when not training.

    Args:
        input (Tensor): the tensor written.
        p (float): the probability of dropping an entry, in [0, 1].
        train (bool): apply dropout (else return input unchanged).

    Example::

        >>> rustgrad.alpha_dropout_(rustgrad.ones(3), 0.5, False)
        tensor([1., 1., 1.])
    """
    return _dropout_(input, p, train, False, True)


@op(function="feature_alpha_dropout_", grad_fn=("MulBackward0", "AddBackward0"))
def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """alpha_dropout_ of whole channels of (N, C, *) input (at least 2-D), in place.

    Args:
        input (Tensor): the tensor written, (N, C, *).
        p (float): the probability of dropping a channel, in [0, 1].
        train (bool): apply dropout (else return input unchanged).

    Example::

        >>> rustgrad.feature_alpha_dropout_(rustgrad.ones(1, 2), 0.5, False)
        tensor([[1., 1.]])
    """
    return _dropout_(input, p, train, True, True)


@op(function="feature_dropout_", grad_fn="MulBackward0")
def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout of whole channels of (N, C, *) input (at least 2-D), in place: each (sample,
    channel) is zeroed with probability p, the others scaled by 1 / (1 - p).

    Args:
        input (Tensor): the tensor written, (N, C, *).
        p (float): the probability of dropping a channel, in [0, 1].
        train (bool): apply dropout (else return input unchanged).

    Example::

        >>> rustgrad.feature_dropout_(rustgrad.ones(1, 2), 0.5, False)
        tensor([[1., 1.]])
    """
    return _dropout_(input, p, train, True, False)
