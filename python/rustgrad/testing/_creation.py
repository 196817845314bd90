"""make_tensor: torch.testing.make_tensor's random test inputs (uniform in [low, high), with
torch's defaults -9 and 9 (10 for integers), clamped to the dtype's range)."""

from __future__ import annotations

import math
from typing import Any, Optional, Tuple

from .. import _creation, _dtype
from .._tensor import Tensor


def _low_high(low: Optional[float], high: Optional[float], lo_inclusive: float,
              hi_exclusive: float, default_low: float,
              default_high: float) -> Tuple[float, float]:
    for name, v in (("low", low), ("high", high)):
        if v is not None and isinstance(v, float) and math.isnan(v):
            raise ValueError(f"`low` and `high` cannot be NaN, but got {name}={v}")
    low = default_low if low is None else low
    high = default_high if high is None else high
    low = max(low, lo_inclusive)
    high = min(high, hi_exclusive)
    if low > high:
        raise ValueError(f"`low` must be less than or equal to `high`, but got {low} > {high}")
    return low, high


def make_tensor(*shape: Any, dtype: _dtype.dtype, device: Any, low: Optional[float] = None,
                high: Optional[float] = None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Tensor:
    """A tensor of the given shape, dtype and device filled with random values in
    [low, high).

    The values are drawn from rustgrad's generator (so ``rustgrad.manual_seed`` makes them
    repeatable). Floating point values are uniform in [low, high), by default [-9, 9); integers
    are uniform in [low, high), by default [-9, 10), both clamped to the dtype's range; bools
    are random True/False.

    Args:
        *shape: the sizes, as separate ints or one sequence.
        dtype (rustgrad.dtype): the dtype.
        device (str or rustgrad.device): the device.
        low (float, optional): the inclusive lower bound.
        high (float, optional): the exclusive upper bound.
        requires_grad (bool): record operations on the result (floating point only).
            Default: ``False``.
        noncontiguous (bool): return a non-contiguous view of a larger tensor (when it has more
            than one element). Default: ``False``.
        exclude_zero (bool): replace zeros by 1 (by the dtype's smallest normal number for
            floats). Default: ``False``.
        memory_format (rustgrad.memory_format, optional): the memory format of the result.

    Example::

        >>> t = torch.testing.make_tensor(2, 3, dtype=torch.float32, device="cpu", low=0, high=1)
        >>> t.shape, t.dtype
        (torch.Size([2, 3]), torch.float32)
        >>> bool(((t >= 0) & (t < 1)).all())
        True
    """
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    _ = dtype.np  # an unsupported dtype (bfloat16, complex) raises its TypeError here
    if dtype is _dtype.bool_:
        out = _creation.randint(0, 2, shape, dtype=dtype, device=device)
    elif dtype._cat == 1:
        info = _dtype.iinfo(dtype)
        lo, hi = _low_high(low, high, info.min, info.max, -9, 10)
        lo, hi = math.ceil(lo), math.ceil(hi)
        out = _creation.randint(lo, max(hi, lo + 1), shape, dtype=dtype, device=device)
    else:
        finfo = _dtype.finfo(dtype)
        lo, hi = _low_high(low, high, finfo.min, finfo.max, -9, 9)
        out = _creation.empty(shape, dtype=_dtype.float64, device=device)
        out.uniform_(lo, hi)
        out = out.to(dtype)
    if noncontiguous and out.numel() > 1:
        out = out.repeat_interleave(2, dim=-1)[..., ::2]
    elif memory_format is not None:
        out = out.clone(memory_format=memory_format)
    if exclude_zero:
        fill = 1 if dtype._cat != 2 else _dtype.finfo(dtype).tiny
        out = out.masked_fill(out == 0, fill)
    if dtype.is_floating_point:
        out.requires_grad_(requires_grad)
    return out
