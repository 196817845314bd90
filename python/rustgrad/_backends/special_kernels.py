"""The special functions torch.special's Bessel, Airy and zeta functions are computed with, by
device: scipy.special for NumPy's arrays (the CPU), cupyx.scipy.special for CuPy's (CUDA), each
imported on first use (`import scipy.special` costs ~100 ms, and most programs never call one).

The kernel table (_kernels.Kernels) lists the functions several ops share (lgamma ... log_ndtr);
these serve one op each (`_ops/special_functions.py`), and CuPy lacks some of them (its
cupyx.scipy.special has no `airy`): an op asks `function(name, array)` and computes with its
own array formulation where the answer is None."""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np


def _library(array: Any) -> Any:
    """scipy.special for a NumPy array, cupyx.scipy.special for any other (a CuPy array)."""
    if isinstance(array, np.ndarray):
        from scipy import special  # import-time cost (above)
    else:
        from cupyx.scipy import special  # optional dependency (CuPy's), import-time cost
    return special


def _in(out: Any, dtype: Any, cpu: bool) -> Any:
    """A result as an array of `dtype` (SciPy answers a 0-d input with a NumPy scalar)."""
    if cpu:
        out = np.asarray(out)
    return out if out.dtype == dtype else out.astype(dtype)


def function(name: str, array: Any) -> Optional[Callable[..., Any]]:
    """The special function `name` of the device `array` lives on (scipy.special.<name> or
    cupyx.scipy.special.<name>), or None where that library has none. It takes float32 or
    float64 arrays of one dtype and returns arrays (a tuple of them, for `airy`) of it."""
    fn = getattr(_library(array), name, None)
    if fn is None:
        return None
    cpu = isinstance(array, np.ndarray)

    def run(*args: Any) -> Any:
        dtype = args[0].dtype
        out = fn(*args)
        if isinstance(out, tuple):
            return tuple(_in(o, dtype, cpu) for o in out)
        return _in(out, dtype, cpu)

    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"special.{name} of float arrays, in their dtype."
    return run
