"""The CPU backend: NumPy. Exposes NumPy's array namespace to the ops plus device bookkeeping.

Only NumPy's main namespace is re-exported: `from numpy import *` would also load f2py, testing,
ma, polynomial and friends (most of `import rustgrad`'s time), which no op uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import as_strided as _as_strided

from .. import _core  # the Rust kernels below (the extension imports nothing from here)
from . import CPU  # the package imports this module once CPU is defined
from ._kernels import Kernels

# numpy's lazily imported submodules that ops never touch
_SKIP = frozenset({
    "char", "core", "ctypeslib", "dtypes", "emath", "exceptions", "f2py", "fft", "lib", "linalg",
    "ma", "matlib", "matrixlib", "polynomial", "random", "rec", "strings", "testing", "typing",
    "version",
})
globals().update({name: getattr(np, name) for name in np.__all__ if name not in _SKIP})
if TYPE_CHECKING:  # the namespace is NumPy's, as type checkers should see it
    from numpy import *  # noqa: F403

DEVICE_TYPE = "cpu"
DEVICE_INDEX = 0  # storage accounting slot (see rust/core/src/storage.rs)
ndarray = np.ndarray
generic = np.generic


def device_of(array: Any) -> Any:
    return CPU


def storage_slot(array: Any) -> int:
    return 0


def to_numpy(array: Any) -> np.ndarray:
    return array


def from_numpy(array: np.ndarray, index: Any = None) -> np.ndarray:
    return array


def add_at(target: Any, index: Any, values: Any) -> None:
    np.add.at(target, index, values)


def data_ptr(array: Any) -> int:
    """The address of the array's first element."""
    return int(array.__array_interface__["data"][0])


def _erf(array: Any) -> Any:
    """The error function, elementwise (NumPy has none): a Rust kernel for float32 (vectorized)
    and float64 (libm); float16 is computed in float32."""
    array = np.asarray(array)  # a 0-d result of arithmetic is a NumPy scalar
    if not array.flags.aligned:  # Rust reads elements only at aligned addresses
        array = array.copy()
    if array.dtype == np.float16:
        return _core._erf(array.astype(np.float32)).astype(np.float16)
    return _core._erf(array)


def as_strided(array: Any, shape: Any, strides: Any) -> Any:
    """A view of array's memory with these shape and byte strides (writable)."""
    return _as_strided(array, shape=shape, strides=strides)


def _select(mask: Any, a: Any, other: Any) -> Any:
    """where(mask, a, other) for a bool mask and a float array of one shape (other a number or
    such an array): a branch-free Rust loop where the arrays are float32/float64 and
    contiguous (NumPy's `where` costs ~5 ns per element on a random mask), else NumPy's."""
    out = _core._where(mask, a, other)
    return np.where(mask, a, other) if out is None else out


def _sgd_step(param: Any, grad: Any, buf: Any, args: Any) -> bool:
    """One fused SGD step in place (see optim/sgd.py); False when the arrays do not qualify
    (the optimizer then runs its NumPy formulation)."""
    return _core._sgd_step(param, grad, buf, args)


def _adam_step(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, max_exp_avg_sq: Any,
              args: Any) -> bool:
    """One fused Adam step in place (see optim/adam.py); False when the arrays do not qualify."""
    return _core._adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args)


def _max_pool2d(x: Any, kernel: Any, stride: Any, padding: Any, dilation: Any,
               out: Any) -> Any:
    """(maxima, flat indices in each plane) of a contiguous float32/float64 (N, C, H, W) array
    by torch's CPU rules, in one Rust pass; None when the array does not qualify."""
    return _core._max_pool2d(x, kernel, stride, padding, dilation, out)


def _max_pool2d_backward(grad: Any, indices: Any, shape: Any) -> Any:
    """zeros(shape) with grad added at max_pool2d's flat indices (Rust); None when the arrays
    do not qualify."""
    return _core._max_pool2d_backward(grad, indices, list(shape))


def _gelu(x: Any) -> Any:
    """Exact GELU of a contiguous float32/float64 array in one Rust pass; None otherwise."""
    return _core._gelu(x)


def _gelu_backward(grad: Any, x: Any) -> Any:
    """grad times exact GELU's derivative at x in one Rust pass; None when the arrays do not
    qualify."""
    return _core._gelu_backward(grad, x)


def _softmax(x: Any, log: bool) -> Any:
    """softmax (log: log_softmax) over the last dim of a contiguous float32/float64 array in
    one Rust pass per row; None otherwise."""
    return _core._softmax(x, log)


def _softmax_backward(grad: Any, out: Any, log: bool) -> Any:
    """The gradient of `softmax` over the last dim from its output; None when the arrays do
    not qualify."""
    return _core._softmax_backward(grad, out, log)


def _powi(x: Any, exponent: int) -> Any:
    """x ** 3 or x ** -2 of a contiguous float32/float64 array as torch's products, in one Rust
    pass; None for other arrays or exponents."""
    return _core._powi(x, exponent)


def writable_view(view: Any) -> Any:
    """view, writable like torch's views: NumPy hands out read-only diagonals (not possible for a
    view of a read-only array, e.g. an expanded one, which stays as it is)."""
    if not view.flags.writeable:
        try:
            view.flags.writeable = True
        except ValueError:
            pass
    return view


kernels = Kernels(
    erf=_erf, gelu=_gelu, gelu_backward=_gelu_backward, softmax=_softmax,
    softmax_backward=_softmax_backward, powi=_powi, where=_select, max_pool2d=_max_pool2d,
    max_pool2d_backward=_max_pool2d_backward, sgd_step=_sgd_step, adam_step=_adam_step,
)
