"""rustgrad.cuda: whether CUDA (through CuPy) is usable here."""

from __future__ import annotations


def is_available() -> bool:
    """True when CuPy is installed and sees at least one GPU."""
    try:
        from ._backends import cuda
    except (RuntimeError, ImportError):
        return False
    return cuda.is_available()


def device_count() -> int:
    try:
        from ._backends import cuda
    except (RuntimeError, ImportError):
        return 0
    return cuda.device_count()
