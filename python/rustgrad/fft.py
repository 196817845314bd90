"""rustgrad.fft: torch.fft's real-valued helpers, fftfreq, rfftfreq, fftshift and ifftshift,
declared beside their ops in `_ops/fft.py` and bound here.

The transforms themselves (fft, ifft, rfft, irfft, fftn, fft2, ...) take or return complex
tensors, which rustgrad does not have: reaching one raises an AttributeError that says so.

Example::

    >>> torch.fft.fftfreq(4)
    tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    >>> torch.fft.fftshift(torch.arange(5))
    tensor([3, 4, 0, 1, 2])
"""

from __future__ import annotations

from typing import Any

from . import _bind

# torch.fft's transforms: each needs complex tensors (its input or its result)
_TRANSFORMS = frozenset({
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
    "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn",
})

# every op declared with an fft name, bound once; see rustgrad/_bind.py
__all__ = _bind.bind_namespace(globals(), "rustgrad.fft", "fft")


def __getattr__(name: str) -> Any:
    """The transforms torch.fft has and rustgrad cannot: an AttributeError naming the reason."""
    if name in _TRANSFORMS:
        raise AttributeError(
            f"rustgrad.fft.{name} is not available: it works on complex tensors, and rustgrad "
            "has no complex dtypes (complex64/complex128)")
    raise AttributeError(f"module 'rustgrad.fft' has no attribute {name!r}")
