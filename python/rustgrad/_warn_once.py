"""torch's once-per-process warnings (TORCH_WARN_ONCE) and the switch that makes them warn
every time (`set_warn_always`). A leaf module: anything may import it."""

from __future__ import annotations

_seen: set = set()
_always = [False]


def due(key: str) -> bool:
    """Whether the once-per-process warning `key` is to be given now: its first time, or every
    time while `set_warn_always(True)` holds."""
    if _always[0]:
        return True
    if key in _seen:
        return False
    _seen.add(key)
    return True
