"""rustgrad.cuda.amp: torch's deprecated `torch.cuda.amp` spellings, GradScaler("cuda"),
autocast("cuda") and custom_fwd/custom_bwd with the device fixed (and torch's FutureWarning)."""

from __future__ import annotations

import functools
import sys
import warnings
from typing import Any, Callable, Optional

from .. import _dtype
from .. import cuda as _cuda
from . import autocast_mode as _autocast_mode
from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler


class autocast(_autocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True):
    ``rustgrad.autocast("cuda", ...)``, with torch's FutureWarning about the spelling."""

    def __init__(self, enabled: bool = True, dtype: _dtype.dtype = _dtype.float16,
                 cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """torch.cuda.amp.GradScaler: ``rustgrad.amp.GradScaler("cuda", ...)`` with the same
    arguments, and torch's FutureWarning about the spelling."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd: Optional[Callable[..., Any]] = None, *,
               cast_inputs: Optional[_dtype.dtype] = None) -> Any:
    """torch.cuda.amp.custom_fwd: ``torch.amp.custom_fwd(..., device_type="cuda")``, with
    torch's FutureWarning about the spelling.

    Args:
        fwd (Callable, optional): the forward; without it, a decorator is returned.
        cast_inputs (rustgrad.dtype, optional): the dtype forward's inputs are cast to.
    """
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return functools.partial(_autocast_mode.custom_fwd, device_type="cuda",
                             cast_inputs=cast_inputs)(fwd)


def custom_bwd(bwd: Callable[..., Any]) -> Any:
    """torch.cuda.amp.custom_bwd: ``torch.amp.custom_bwd(bwd, device_type="cuda")``, with
    torch's FutureWarning about the spelling.

    Args:
        bwd (Callable): the backward.
    """
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return _autocast_mode.custom_bwd(bwd, device_type="cuda")


# `rustgrad.cuda.amp`, as torch.cuda.amp (cuda.py is a module, not a package): set from here, as
# rustgrad.cuda sits below amp
_cuda.amp = sys.modules[_cuda.__name__ + ".amp"] = sys.modules[__name__]
