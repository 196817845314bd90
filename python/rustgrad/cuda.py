"""rustgrad.cuda: whether CUDA (through CuPy) is usable here.

rustgrad runs on an NVIDIA GPU through CuPy, which is optional: without CuPy, or when CuPy sees
no GPU, `is_available()` is False, `device_count()` is 0 and a tensor asked for on ``"cuda"``
raises a RuntimeError. The seeding calls exist so that torch programs run unchanged, and
`rustgrad.cuda.amp` holds torch's deprecated ``torch.cuda.amp`` spellings.

Example::

    >>> print("CUDA:", torch.cuda.is_available())  # False without CuPy or a GPU
    CUDA: ...
    >>> device = "cuda" if torch.cuda.is_available() else "cpu"
    >>> torch.ones(2, device=device).sum().item()
    2.0
"""

from __future__ import annotations


def is_available() -> bool:
    """True when CuPy is installed and sees at least one GPU.

    Example::

        >>> print("CUDA:", torch.cuda.is_available())  # CUDA: False on a machine without one
        CUDA: ...
    """
    try:
        from ._backends import cuda
    except (RuntimeError, ImportError):
        return False
    return cuda.is_available()


def device_count() -> int:
    """The number of GPUs CuPy sees (0 without CuPy or a GPU).

    Example::

        >>> torch.cuda.device_count() >= 0
        True
    """
    try:
        from ._backends import cuda
    except (RuntimeError, ImportError):
        return 0
    return cuda.device_count()


# ---- seeding: rustgrad draws every random number from its one host generator (then moves the
# values to the device), so there is no separate CUDA generator to seed; these keep torch's calls
# working and do nothing.
def manual_seed(seed: int) -> None:
    """No-op: rustgrad.manual_seed seeds the one generator cuda tensors draw from too."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    """No-op (see manual_seed)."""
    int(seed)


def seed() -> None:
    """No-op (see manual_seed)."""


def seed_all() -> None:
    """No-op (see manual_seed)."""


def _amp() -> object:
    # registered as the submodule `rustgrad.cuda.amp` (this is a module, not a package)
    import sys

    from .amp import _cuda_amp

    sys.modules[__name__ + ".amp"] = _cuda_amp
    return _cuda_amp


amp = _amp()
