"""rustgrad.backends.mps: Apple's Metal backend, which rustgrad does not have."""

from __future__ import annotations


def is_available() -> bool:
    """False: rustgrad has no MPS backend."""
    return False


def is_built() -> bool:
    """False: rustgrad has no MPS backend."""
    return False
