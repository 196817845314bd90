"""autocast: torch's mixed-precision region, as far as rustgrad can honour it.

rustgrad runs every op in its inputs' dtype and has no bfloat16, so it cannot autocast. What
torch itself disables (cuda without CUDA, an unsupported cpu dtype such as float32) is disabled
here with torch's warning; `enabled=False` is a no-op; a region torch would really autocast
raises a RuntimeError on entry rather than silently computing in float32."""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Optional

from .. import _dtype

_DEFAULT_DTYPES = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast could be used on this device type: always False, since rustgrad
    never autocasts (torch says True for ``"cpu"`` and ``"cuda"``).

    Args:
        device_type (str): the device type, such as ``"cpu"``.
    """
    return False


def is_autocast_enabled(device_type: Optional[str] = None) -> bool:
    """False: rustgrad never runs ops under autocast."""
    return False


def get_autocast_dtype(device_type: str) -> _dtype.dtype:
    """The dtype torch's autocast would use on device_type (bfloat16 on cpu, float16 on cuda).

    Args:
        device_type (str): the device type.
    """
    return _DEFAULT_DTYPES.get(device_type, _dtype.float16)


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a context
    manager and decorator; see the module docstring for what rustgrad does with it.

    Args:
        device_type (str): ``"cuda"`` or ``"cpu"``.
        dtype (rustgrad.dtype, optional): the lower precision dtype. Default: bfloat16 on the
            cpu, float16 on cuda.
        enabled (bool): whether the region autocasts; False makes it a no-op.
            Default: ``True``.
        cache_enabled (bool, optional): accepted for torch compatibility.

    Raises:
        RuntimeError: on entering a region that torch would really autocast.

    Example::

        >>> with torch.autocast("cpu", enabled=False):
        ...     y = torch.ones(2) * 2
        >>> y.dtype
        torch.float32
        >>> torch.amp.get_autocast_dtype("cpu")
        torch.bfloat16
    """

    def __init__(self, device_type: str, dtype: Optional[_dtype.dtype] = None,
                 enabled: bool = True, cache_enabled: Optional[bool] = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(
                f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._enabled = bool(enabled)
        self._cache_enabled = cache_enabled
        if not self._enabled:
            return
        if device_type == "cuda":
            from .. import cuda

            if not cuda.is_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                              stacklevel=2)
                self._enabled = False
        elif device_type == "cpu" and self.fast_dtype not in (_dtype.bfloat16, _dtype.float16):
            warnings.warn(
                "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.",
                stacklevel=2)
            self._enabled = False

    def __enter__(self) -> autocast:
        if self._enabled:
            raise RuntimeError(
                f"rustgrad cannot autocast to {self.fast_dtype!r} on {self.device!r}: it runs "
                "every op in its inputs' dtype (and has no bfloat16). Pass enabled=False (or "
                "dtype=torch.float32 on the cpu), or cast the model and inputs explicitly.")
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def decorate_autocast(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def custom_fwd(fwd: Optional[Callable[..., Any]] = None, *, device_type: str,
               cast_inputs: Optional[_dtype.dtype] = None) -> Any:
    """torch.amp.custom_fwd for an autograd.Function's forward: returns it unchanged (rustgrad
    never autocasts, so there is no region to leave or inputs to cast).

    Args:
        fwd (Callable, optional): the forward; without it, a decorator is returned.
        device_type (str): the device type, as torch requires it.
        cast_inputs (rustgrad.dtype, optional): accepted for torch compatibility.
    """
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    return fwd


def custom_bwd(bwd: Optional[Callable[..., Any]] = None, *, device_type: str) -> Any:
    """torch.amp.custom_bwd for an autograd.Function's backward: returns it unchanged.

    Args:
        bwd (Callable, optional): the backward; without it, a decorator is returned.
        device_type (str): the device type, as torch requires it.
    """
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd
