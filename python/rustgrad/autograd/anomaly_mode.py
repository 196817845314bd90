"""Anomaly detection, as torch.autograd.anomaly_mode.

While it is on (a thread-local flag in Rust, rust/core/src/grad_mode.rs):
- every node recorded keeps the traceback of its forward call; when a backward fails, a
  UserWarning shows the traceback of the node whose backward failed;
- with `check_nan` (the default), a node whose backward returns NaN raises RuntimeError
  "Function 'XBackward0' returned nan values in its 0th output.".
Off, recording pays one thread-local read per op.

`cheap=True` is rustgrad's lighter mode: no traceback per node, only the line of each node's
forward op (a frame walk, as `set_provenance(True)`), and every gradient a node returns is
checked for NaN and Inf in Rust (a scan of the NumPy buffer); the first node producing one
fails backward with "Function 'XBackward0' returned nan values in its 0th output, whose forward
ran at file:line (in f)."
"""

from __future__ import annotations

import warnings

from .. import _core

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on in this thread (see `detect_anomaly`)."""
    return _core.is_anomaly_enabled()


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks each backward node's outputs for NaN."""
    return _core.is_anomaly_check_nan_enabled()


class detect_anomaly:
    """Context manager that turns anomaly detection on (and its NaN check, unless told not to);
    with `cheap=True`, rustgrad's cheap mode instead (see the module docstring).

    Args:
        check_nan (bool): raise when a backward node returns NaN. Default: ``True``.
        cheap (bool): rustgrad's lighter mode: no traceback per node, only the line of each
            node's forward op, and every gradient checked for NaN and Inf. Default: ``False``.

    Example::

        >>> import rustgrad as torch
        >>> x = torch.zeros(1, requires_grad=True)
        >>> with torch.autograd.detect_anomaly(cheap=True):
        ...     y = x.log() * 0
        ...     y.sum().backward()
        Traceback (most recent call last):
        ...
        RuntimeError: Function 'LogBackward0' returned nan values in its 0th output, whose forward ran at ...
    """

    def __init__(self, check_nan: bool = True, cheap: bool = False) -> None:
        self.prev = _core.is_anomaly_enabled()
        self.check_nan = check_nan
        self.cheap = cheap
        self.prev_check_nan = _core.is_anomaly_check_nan_enabled()
        self.prev_cheap = _core._is_cheap_anomaly_enabled()
        if not cheap:
            warnings.warn(
                "Anomaly Detection has been enabled. This mode will increase the runtime and "
                "should only be enabled for debugging.",
                stacklevel=2,
            )

    def __enter__(self) -> None:
        if self.cheap:
            _core._set_cheap_anomaly(True)
        else:
            _core.set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args: object) -> None:
        _core.set_anomaly_enabled(self.prev, self.prev_check_nan)
        _core._set_cheap_anomaly(self.prev_cheap)


class set_detect_anomaly:
    """Sets anomaly detection on or off now; as a context manager, restores it on exit.

    Args:
        mode (bool): turn anomaly detection on (``True``) or off.
        check_nan (bool): while on, raise when a backward node returns NaN. Default: ``True``.

    Example::

        >>> with torch.autograd.set_detect_anomaly(False):
        ...     torch.is_anomaly_enabled()
        False
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev, self.prev_check_nan = _core.set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: object) -> None:
        _core.set_anomaly_enabled(self.prev, self.prev_check_nan)
