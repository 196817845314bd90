"""rustgrad.accelerator: torch's device-agnostic accelerator queries. rustgrad's only
accelerator is CUDA through CuPy; on a machine without it there is none.

Example::

    >>> acc = torch.accelerator.current_accelerator()  # None without a GPU
    >>> device = acc if acc is not None else torch.device("cpu")
    >>> print("accelerator:", torch.accelerator.is_available())
    accelerator: ...
"""

from __future__ import annotations

from typing import Optional

from . import cuda
from ._backends import device as _device


def is_available() -> bool:
    """Whether an accelerator (CUDA through CuPy) is usable."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> Optional[_device]:
    """device('cuda') where CUDA is usable, else None (torch names the accelerator it was built
    for even without a GPU; rustgrad names one only when it can run on it).

    Args:
        check_available (bool): accepted for torch compatibility (rustgrad always checks).
    """
    return _device("cuda") if is_available() else None


def device_count() -> int:
    """The number of accelerator devices (0 without CUDA)."""
    return cuda.device_count()


def current_device_index() -> int:
    """The index of the current accelerator device (0); a RuntimeError when there is none."""
    if not is_available():
        raise RuntimeError("rustgrad.accelerator: no accelerator is available")
    return 0


def synchronize(device: object = None) -> None:
    """Waits for the accelerator's queued work (nothing to wait for on the cpu).

    Args:
        device (optional): accepted for torch compatibility; all queued work is waited for.
    """
    if is_available():
        sync = getattr(cuda, "synchronize", None)
        if sync is not None:
            sync()


def _accelerator_device(device: object, what: str) -> Optional[int]:
    """The CUDA index a device-generic stream or event is made on (torch.Stream(device))."""
    dev = current_accelerator() if device is None else _device(device)  # type: ignore[arg-type]
    if dev is None or dev.type != "cuda":
        raise RuntimeError(f"torch.{what}: rustgrad's only accelerator is CUDA through CuPy; got "
                           f"device {'none available' if dev is None else str(dev)}")
    return dev.index


class Stream(cuda.Stream):
    """torch.Stream: a stream of the current accelerator (a CUDA stream here).

    Args:
        device (optional): the accelerator device. Default: the current accelerator.
        priority (int, optional): lower is more urgent. Default: 0.
    """

    def __init__(self, device: object = None, *, priority: int = 0) -> None:
        super().__init__(_accelerator_device(device, "Stream"), priority)


class Event(cuda.Event):
    """torch.Event: an event of the current accelerator (a CUDA event here).

    Args:
        device (optional): the accelerator device. Default: the current accelerator.
        enable_timing (bool, optional): whether elapsed_time works. Default: False.
        blocking (bool, optional): whether synchronize() blocks the thread. Default: False.
        interprocess (bool, optional): refused, as by rustgrad.cuda.Event. Default: False.
    """

    def __init__(self, device: object = None, *, enable_timing: bool = False,
                 blocking: bool = False, interprocess: bool = False) -> None:
        _accelerator_device(device, "Event")
        super().__init__(enable_timing, blocking, interprocess)
