"""rustgrad.fft: torch.fft's transforms (fft, ifft, rfft, irfft, hfft, ihfft and their 2-d and
n-d forms, differentiable) and helpers (fftfreq, rfftfreq, fftshift, ifftshift), declared beside
their ops in `_ops/fft.py` and bound here.

Example::

    >>> torch.fft.fftfreq(4)
    tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    >>> torch.fft.fftshift(torch.arange(5))
    tensor([3, 4, 0, 1, 2])
    >>> torch.fft.rfft(torch.tensor([1., 0., 0., 0.]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j])
"""

from __future__ import annotations

from . import _bind

# every op declared with an fft name, bound once; see rustgrad/_bind.py
__all__ = _bind.bind_namespace(globals(), "rustgrad.fft", "fft")
