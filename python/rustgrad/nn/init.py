"""torch.nn.init: in-place initializers drawing from rustgrad's generator (`manual_seed`).

Each fills the tensor's array under no_grad, bumps its version counter and returns the tensor.
The random streams are NumPy's (rustgrad's generator), drawn on the host and copied to the
tensor's device, so the values differ from torch's for the same seed. Nothing here imports an
array library: the host arrays' own methods and rustgrad ops do the arithmetic.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Optional, Tuple

from .._creation import Generator, default_generator, from_numpy
from .._tensor import Tensor

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
    "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
    "kaiming_normal_", "orthogonal_",
]


def _rng(generator: Optional[Generator]) -> Any:
    return (generator or default_generator)._rng


def _fill(tensor: Tensor, host_values: Any) -> Tensor:
    """Writes host values (the generator's arrays) into the tensor's array on its device, in
    place."""
    d = tensor._data
    d[...] = tensor._backend.asarray(host_values.astype(d.dtype, copy=False))
    tensor._bump_version()
    return tensor


def calculate_gain(nonlinearity: str, param: Optional[float] = None) -> float:
    """Returns the recommended gain for an initialization followed by ``nonlinearity``.

    The gain scales the standard deviation of :func:`xavier_uniform_`,
    :func:`kaiming_normal_` and the like so that activations keep their variance through
    the layer: 1 for linear, conv and sigmoid, 5/3 for tanh, sqrt(2) for relu,
    sqrt(2 / (1 + negative_slope^2)) for leaky_relu and 3/4 for selu.

    Args:
        nonlinearity (str): the function's name, e.g. ``"relu"`` or ``"conv2d"``.
        param (float, optional): the negative slope for ``"leaky_relu"`` (default 0.01).

    Example::

        >>> nn.init.calculate_gain("tanh")
        1.666...
        >>> nn.init.calculate_gain("leaky_relu", 0.2)
        1.3867...
    """
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                  "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> Tuple[int, int]:
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Optional[Generator] = None) -> Tensor:
    """Fills ``tensor`` in place with values drawn from the uniform distribution U(a, b).

    Args:
        tensor (Tensor): the tensor to fill.
        a (float): the lower bound. Default: ``0.0``.
        b (float): the upper bound. Default: ``1.0``.
        generator (Generator, optional): the generator to draw from. Default: rustgrad's
            default generator (seeded by ``rustgrad.manual_seed``).

    Returns:
        ``tensor``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> w = nn.init.uniform_(torch.empty(3, 5), -0.1, 0.1)
        >>> bool((w.abs() <= 0.1).all())
        True
    """
    return _fill(tensor, _rng(generator).uniform(a, b, size=tuple(tensor.shape)))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Optional[Generator] = None) -> Tensor:
    """Fills ``tensor`` in place with values drawn from the normal distribution N(mean, std^2).

    Args:
        tensor (Tensor): the tensor to fill.
        mean (float): the mean. Default: ``0.0``.
        std (float): the standard deviation. Default: ``1.0``.
        generator (Generator, optional): the generator to draw from. Default: rustgrad's
            default generator (seeded by ``rustgrad.manual_seed``).

    Returns:
        ``tensor``.
    """
    return _fill(tensor, _rng(generator).normal(mean, std, size=tuple(tensor.shape)))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Optional[Generator] = None) -> Tensor:
    """Fills ``tensor`` in place with values drawn from N(mean, std^2) truncated to [a, b].

    Values are drawn by inverse-CDF sampling, so none fall outside the bounds.

    Args:
        tensor (Tensor): the tensor to fill.
        mean (float): the mean of the normal distribution. Default: ``0.0``.
        std (float): its standard deviation. Default: ``1.0``.
        a (float): the lower bound. Default: ``-2.0``.
        b (float): the upper bound. Default: ``2.0``.
        generator (Generator, optional): the generator to draw from. Default: rustgrad's
            default generator (seeded by ``rustgrad.manual_seed``).

    Returns:
        ``tensor``.
    """
    rng = _rng(generator)

    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo, hi = norm_cdf((a - mean) / std), norm_cdf((b - mean) / std)
    u = from_numpy(rng.uniform(2 * lo - 1, 2 * hi - 1, size=tuple(tensor.shape)))
    # erfinv(u) by Newton steps on erf, in rustgrad ops on the host (no erfinv op yet)
    y = u.clone()
    for _ in range(50):
        y = y - (y.erf() - u) / ((-(y * y)).exp() * (2 / math.sqrt(math.pi)))
    vals = (y * (std * math.sqrt(2.0)) + mean).clamp(a, b)
    return _fill(tensor, vals.numpy())


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills ``tensor`` in place with the value ``val``.

    Nothing is recorded by autograd, so this works on a Parameter that requires grad.

    Args:
        tensor (Tensor): the tensor to fill.
        val (float): the value.

    Returns:
        ``tensor``.

    Example::

        >>> nn.init.constant_(torch.empty(2, 3), 0.3)
        tensor([[0.3000, 0.3000, 0.3000],
                [0.3000, 0.3000, 0.3000]])
    """
    tensor._data[...] = val
    tensor._bump_version()
    return tensor


def ones_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` in place with ones.

    Args:
        tensor (Tensor): the tensor to fill.

    Returns:
        ``tensor``.

    Example::

        >>> nn.init.ones_(torch.empty(3))
        tensor([1., 1., 1.])
    """
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` in place with zeros.

    Args:
        tensor (Tensor): the tensor to fill.

    Returns:
        ``tensor``.

    Example::

        >>> lin = nn.Linear(3, 2)
        >>> nn.init.zeros_(lin.bias)
        Parameter containing:
        tensor([0., 0.], requires_grad=True)
    """
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fills a 2-D ``tensor`` in place with the identity matrix (ones on the diagonal, zeros
    elsewhere), which keeps the input's identity in a Linear layer.

    Args:
        tensor (Tensor): a 2-D tensor to fill.

    Returns:
        ``tensor``.

    Example::

        >>> nn.init.eye_(torch.empty(2, 3))
        tensor([[1., 0., 0.],
                [0., 1., 0.]])
    """
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    xp = tensor._backend
    tensor._data[...] = xp.eye(*tensor.shape, dtype=tensor._data.dtype)
    tensor._bump_version()
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fills a 3-, 4- or 5-D ``tensor`` in place with the Dirac delta, so that a convolution
    with it keeps as many input channels as possible unchanged.

    Args:
        tensor (Tensor): a conv weight ``(out_channels, in_channels, *kernel_size)``.
        groups (int): the number of groups of the convolution; each group of output
            channels gets its own delta. Default: ``1``.

    Returns:
        ``tensor``.
    """
    dims = tensor.ndim
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    d = tensor._data
    d[...] = 0
    for g in range(groups):
        for i in range(min_dim):
            centre = tuple(s // 2 for s in sizes[2:])
            d[(g * out_chans_per_grp + i, i) + centre] = 1
    tensor._bump_version()
    return tensor


def xavier_uniform_(tensor: Tensor, gain: float = 1.0,
                    generator: Optional[Generator] = None) -> Tensor:
    """Fills ``tensor`` in place with values drawn from U(-a, a), where
    ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot and Bengio, 2010).

    Args:
        tensor (Tensor): a tensor with at least 2 dimensions.
        gain (float): a scaling factor, e.g. from :func:`calculate_gain`. Default: ``1.0``.
        generator (Generator, optional): the generator to draw from. Default: rustgrad's
            default generator (seeded by ``rustgrad.manual_seed``).

    Returns:
        ``tensor``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> w = nn.init.xavier_uniform_(torch.empty(3, 5), gain=nn.init.calculate_gain("relu"))
        >>> w.shape
        torch.Size([3, 5])
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0,
                   generator: Optional[Generator] = None) -> Tensor:
    """Fills ``tensor`` in place with values drawn from N(0, std^2), where
    ``std = gain * sqrt(2 / (fan_in + fan_out))`` (Glorot and Bengio, 2010).

    Args:
        tensor (Tensor): a tensor with at least 2 dimensions.
        gain (float): a scaling factor, e.g. from :func:`calculate_gain`. Default: ``1.0``.
        generator (Generator, optional): the generator to draw from. Default: rustgrad's
            default generator (seeded by ``rustgrad.manual_seed``).

    Returns:
        ``tensor``.
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: Optional[Generator] = None) -> Tensor:
    """Fills ``tensor`` in place with values drawn from U(-bound, bound), where
    ``bound = gain * sqrt(3 / fan)`` (He et al., 2015).

    ``gain`` is ``calculate_gain(nonlinearity, a)``. Linear and the conv layers initialize
    their weight with ``a=sqrt(5)``.

    Args:
        tensor (Tensor): a tensor with at least 2 dimensions.
        a (float): the negative slope of the leaky_relu that follows. Default: ``0``.
        mode (str): ``"fan_in"`` keeps the variance of the forward pass, ``"fan_out"`` that
            of the backward pass. Default: ``"fan_in"``.
        nonlinearity (str): the function that follows, ``"relu"`` or ``"leaky_relu"``.
            Default: ``"leaky_relu"``.
        generator (Generator, optional): the generator to draw from. Default: rustgrad's
            default generator (seeded by ``rustgrad.manual_seed``).

    Returns:
        ``tensor``.
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu",
                    generator: Optional[Generator] = None) -> Tensor:
    """Fills ``tensor`` in place with values drawn from N(0, std^2), where
    ``std = gain / sqrt(fan)`` (He et al., 2015).

    Args:
        tensor (Tensor): a tensor with at least 2 dimensions.
        a (float): the negative slope of the leaky_relu that follows. Default: ``0``.
        mode (str): ``"fan_in"`` or ``"fan_out"``. Default: ``"fan_in"``.
        nonlinearity (str): the function that follows, ``"relu"`` or ``"leaky_relu"``.
            Default: ``"leaky_relu"``.
        generator (Generator, optional): the generator to draw from. Default: rustgrad's
            default generator (seeded by ``rustgrad.manual_seed``).

    Returns:
        ``tensor``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> conv = nn.Conv2d(3, 8, 3)
        >>> nn.init.kaiming_normal_(conv.weight, mode="fan_out", nonlinearity="relu").shape
        torch.Size([8, 3, 3, 3])
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def _orthonormal_columns(a: Any) -> Any:
    """Q of the QR decomposition of a host (m, n) array, m >= n, with the signs that make R's
    diagonal positive (so Q is unique). Block Gram-Schmidt run twice (CGS2, as accurate as
    Householder for a full-rank matrix), written with the array's own methods and matmuls:
    nothing here imports a linear-algebra module."""
    n = a.shape[1]
    qt = a.T.copy()  # Q's columns as contiguous rows
    for j in range(0, n, 32):
        block = qt[j:j + 32]  # a view: the updates below write into qt
        for _ in range(2):
            if j:
                block -= (block @ qt[:j].T) @ qt[:j]
            for i in range(block.shape[0]):
                row = block[i]
                if i:
                    row -= (block[:i] @ row) @ block[:i]
                norm = float(row @ row) ** 0.5
                if norm:
                    row /= norm
    return qt.T


def orthogonal_(tensor: Tensor, gain: float = 1.0,
                generator: Optional[Generator] = None) -> Tensor:
    """Fills ``tensor`` in place with a (semi-)orthogonal matrix times ``gain`` (Saxe et al.,
    2013).

    Dimensions after the first are flattened; the rows (or the columns, whichever are
    fewer) of the resulting matrix are orthonormal.

    Args:
        tensor (Tensor): a tensor with at least 2 dimensions.
        gain (float): a scaling factor. Default: ``1.0``.
        generator (Generator, optional): the generator to draw from. Default: rustgrad's
            default generator (seeded by ``rustgrad.manual_seed``).

    Returns:
        ``tensor``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> q = nn.init.orthogonal_(torch.empty(3, 5))
        >>> bool(torch.allclose(q @ q.T, torch.eye(3), atol=1e-5))
        True
    """
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _rng(generator).normal(0.0, 1.0, size=(rows, cols))
    if rows < cols:
        flat = flat.T
    q = _orthonormal_columns(flat)
    if rows < cols:
        q = q.T
    return _fill(tensor, (q * gain).reshape(tuple(tensor.shape)))


# torch's deprecated non-underscore aliases
uniform = uniform_
normal = normal_
constant = constant_
xavier_uniform = xavier_uniform_
xavier_normal = xavier_normal_
kaiming_uniform = kaiming_uniform_
kaiming_normal = kaiming_normal_
orthogonal = orthogonal_
