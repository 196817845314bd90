"""rustgrad.memory: what the Rust storage accounting sees (live storages and bytes per device)."""

from __future__ import annotations

from typing import Any, Dict

from . import _core


def _slot(device: Any) -> int:
    from ._backends import device as _device

    d = _device(device) if not isinstance(device, _device) else device
    if d.type == "cpu":
        return 0
    return 1 + (d.index or 0)


def live_storages(device: Any = "cpu") -> int:
    """How many storages are alive on `device` (views and detach()es share one)."""
    return _core.live_storages(_slot(device))[0]


def live_bytes(device: Any = "cpu") -> int:
    """Bytes held by the live storages on `device`."""
    return _core.live_storages(_slot(device))[1]


def stats(device: Any = "cpu") -> Dict[str, int]:
    n, b = _core.live_storages(_slot(device))
    return {"live_storages": n, "live_bytes": b}
