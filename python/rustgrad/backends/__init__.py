"""rustgrad.backends: torch's switches for its native backends (cuDNN, cuBLAS TF32, MPS,
opt_einsum). rustgrad computes with NumPy/CuPy, so the switches change nothing; they exist with
torch's names, types and defaults, and keep what a program sets.

Example::

    >>> torch.backends.cudnn.is_available(), torch.backends.mps.is_available()
    (False, False)
    >>> with torch.backends.cudnn.flags(enabled=False, deterministic=True):
    ...     print(torch.backends.cudnn.deterministic)
    True
    >>> torch.backends.cudnn.deterministic  # restored
    False
"""

from __future__ import annotations

from . import cuda, cudnn, mkldnn, mps, opt_einsum

__all__ = ["cuda", "cudnn", "mkldnn", "mps", "opt_einsum"]
