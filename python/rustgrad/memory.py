"""rustgrad.memory: what the Rust storage accounting sees (live storages and bytes per device).

Every tensor's values live in a storage counted by the Rust core when it is created and when it
is freed; views and ``detach()`` share their base's storage. These counters are what tests and
users read to check that nothing leaks (a graph kept alive by a reference cycle, a cache).
rustgrad has no caching allocator, so there is nothing like torch.cuda's reserved memory.

Example::

    >>> sorted(torch.memory.stats())
    ['live_bytes', 'live_storages']
"""

from __future__ import annotations

from typing import Any, Dict

from . import _core
from ._backends import device as _device


def _slot(device: Any) -> int:
    d = _device(device) if not isinstance(device, _device) else device
    if d.type == "cpu":
        return 0
    return 1 + (d.index or 0)


def live_storages(device: Any = "cpu") -> int:
    """How many storages are alive on `device` (views and detach()es share one).

    Args:
        device (str or rustgrad.device): the device whose storages are counted
            (``"cuda:1"`` counts the second GPU's). Default: ``"cpu"``.
    """
    return _core.live_storages(_slot(device))[0]


def live_bytes(device: Any = "cpu") -> int:
    """Bytes held by the live storages on `device`.

    Args:
        device (str or rustgrad.device): the device. Default: ``"cpu"``.
    """
    return _core.live_storages(_slot(device))[1]


def stats(device: Any = "cpu") -> Dict[str, int]:
    """Both counters of `device` in one dict: ``{"live_storages": n, "live_bytes": b}``.

    Args:
        device (str or rustgrad.device): the device. Default: ``"cpu"``.
    """
    n, b = _core.live_storages(_slot(device))
    return {"live_storages": n, "live_bytes": b}
