"""rustgrad.cpu: torch's cpu device module (always available; one device)."""

from __future__ import annotations

from . import amp


def is_available() -> bool:
    """True: the cpu is always there."""
    return True


def device_count() -> int:
    """1: the cpu counts as one device."""
    return 1


def current_device() -> str:
    """'cpu'."""
    return "cpu"


def synchronize(device: object = None) -> None:
    """Nothing to wait for: cpu work is synchronous."""
    return None


__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]
