"""The CPU backend: NumPy. Exposes NumPy's array namespace to the ops plus device bookkeeping.

Only NumPy's main namespace is re-exported: `from numpy import *` would also load f2py, testing,
ma, polynomial and friends (most of `import rustgrad`'s time), which no op uses."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import as_strided as _as_strided

from .. import _core  # the Rust kernels below (the extension imports nothing from here)
from . import CPU  # the package imports this module once CPU is defined
from ._kernels import Kernels

# numpy's lazily imported submodules that ops never touch
_SKIP = frozenset({
    "char", "core", "ctypeslib", "dtypes", "emath", "exceptions", "f2py", "fft", "lib",
    "ma", "matlib", "matrixlib", "polynomial", "random", "rec", "strings", "testing", "typing",
    "version",
})
globals().update({name: getattr(np, name) for name in np.__all__ if name not in _SKIP})
if TYPE_CHECKING:  # the namespace is NumPy's, as type checkers should see it
    from numpy import *  # noqa: F403


def __getattr__(name: str) -> Any:
    """numpy.fft on first use (the transforms': skipped above for import time)."""
    if name == "fft":
        globals()["fft"] = np.fft
        return np.fft
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    """np.add.at; rows at a 1-D int64 index of the first axis (embedding's gradient) through
    a Rust loop with add.at's order and bits (~90x faster than its per-element dispatch)."""
    first = index[0] if isinstance(index, tuple) and len(index) == 1 else index
    if (isinstance(first, np.ndarray) and first.ndim == 1 and first.dtype == np.int64
            and isinstance(values, np.ndarray)
            and _core._index_add_rows(target, first, np.ascontiguousarray(values))):
        return
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


def _threshold_backward(grad: Any, out: Any) -> Any:
    """ReLU's gradient from its output, grad where out > 0 (a NaN passes) else +0, in one Rust
    pass over contiguous float32/float64 arrays of one shape and dtype; None otherwise."""
    return _core._threshold_backward(grad, out)


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


def _im2col(x: Any, k: Any, d: Any, pads: Any, s: Any, fill: float = 0.0,
            channels_first: bool = False) -> Any:
    """_ops/conv.py's im2col of a float32/float64 (N, C, H, W) array in one Rust pass, bit for
    bit (a strided array copied first), with the GIL released and split over Rayon's threads
    above a size threshold; None for other arrays."""
    if x.dtype not in _FLOATS:
        return None
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    return _core._im2col(x, tuple(k), tuple(d), tuple(pads), tuple(s), fill, channels_first)


def _col2im(cols: Any, size: Any, d: Any, pads: Any, s: Any,
            channels_first: bool = False) -> Any:
    """_ops/conv.py's col2im (im2col's adjoint) of C-contiguous float32/float64 blocks in one
    Rust pass, bit for bit (the same order of sums), with the GIL released and split over
    Rayon's threads above a size threshold; None for other arrays."""
    return _core._col2im(cols, tuple(size), tuple(d), tuple(pads), tuple(s), channels_first)


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _gelu(x: Any) -> Any:
    """Exact GELU of a contiguous float32/float64 array in one Rust pass; None otherwise."""
    return _core._gelu(x)


def _sigmoid(x: Any) -> Any:
    """The logistic sigmoid of a contiguous float32/float64 array in one Rust pass; None
    otherwise."""
    return _core._sigmoid(x)


def _relu(x: Any) -> Any:
    """ReLU with torch's signed zero of a contiguous float32/float64 array in one Rust pass;
    None otherwise."""
    return _core._relu(x)


_UNARY = {"sqrt": 0, "reciprocal": 1, "log": 2}


def _unary(x: Any, name: str) -> Any:
    """sqrt, reciprocal or log of a contiguous float32/float64 array in one Rust pass, without
    NumPy's floating-point warnings; None otherwise."""
    return _core._unary(x, _UNARY[name])


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


def _layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    """layer_norm of (N, D) x over its last dim, times weight (D,) plus bias (D,) (either may be
    None), in one Rust pass per row with float64 statistics (the CUDA kernel's formulas); None
    for arrays it does not take (float16, strided, mixed dtypes)."""
    return _core._layer_norm(x, weight, bias, eps)


def _layer_norm_backward(g: Any, x: Any, weight: Any, eps: float, want_xhat: bool) -> Any:
    """(dx, xhat or None) of layer_norm over the last dim of (N, D) x for the upstream gradient
    g, in one Rust pass per row; None for arrays it does not take."""
    return _core._layer_norm_backward(g, x, weight, eps, want_xhat)


def _layer_norm_stats(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    """`_layer_norm`'s y and each row's float64 (mean, rstd) as an (N, 2) array, for
    `_layer_norm_backward_stats`; None for arrays it does not take."""
    return _core._layer_norm(x, weight, bias, eps, True)


def _layer_norm_backward_stats(g: Any, x: Any, weight: Any, eps: float, want_xhat: bool,
                               stats: Any) -> Any:
    """`_layer_norm_backward` with the rows' statistics read from `stats` (what
    `_layer_norm_stats` gave for this x and eps): two passes over each row fewer, the same
    bits."""
    return _core._layer_norm_backward(g, x, weight, eps, want_xhat, stats)


def _powi(x: Any, exponent: int) -> Any:
    """x ** 3 or x ** -2 of a contiguous float32/float64 array as torch's products, in one Rust
    pass; None for other arrays or exponents."""
    return _core._powi(x, exponent)


# ---- special functions: scipy.special ---------------------------------------------------
_SCIPY: dict = {}  # scipy.special, once imported


def _scipy_special() -> Any:
    """scipy.special, imported on first use (`import scipy.special` costs `import rustgrad`
    ~100 ms, and most programs never call a special function)."""
    mod = _SCIPY.get("special")
    if mod is None:
        from scipy import special as mod  # import-time cost (above)

        _SCIPY["special"] = mod
    return mod


def _in_own_dtype(fn: Any, x: Any) -> Any:
    """fn(x) as an array of x's dtype: float16 and bfloat16 computed in float32 and rounded once
    (torch's CPU kernels compute them so; SciPy has no bfloat16 loops), a 0-d result an array."""
    x = np.asarray(x)
    if x.dtype.itemsize < 4:
        return np.asarray(fn(x.astype(np.float32))).astype(x.dtype)
    return np.asarray(fn(x)).astype(x.dtype, copy=False)


def _scipy_kernel(name: str) -> Any:
    def kernel(x: Any) -> Any:
        return _in_own_dtype(getattr(_scipy_special(), name), x)

    kernel.__name__ = kernel.__qualname__ = f"_{name}"
    kernel.__doc__ = f"scipy.special.{name} of a float array, in its dtype."
    return kernel


def _polygamma(n: int, x: Any) -> Any:
    """digamma's n-th derivative (n >= 1) of a float array, in its dtype, as SciPy's polygamma
    computes it: (-1)^(n+1) n! zeta(n + 1, x)."""
    sp = _scipy_special()
    coef = (-1.0) ** (n + 1) * math.factorial(n)
    return _in_own_dtype(lambda a: sp.zeta(float(n + 1), a) * a.dtype.type(coef), x)


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
    erf=_erf, gelu=_gelu, gelu_backward=_gelu_backward, sigmoid=_sigmoid, relu=_relu, unary=_unary, softmax=_softmax,
    softmax_backward=_softmax_backward, layer_norm=_layer_norm,
    layer_norm_backward=_layer_norm_backward, layer_norm_stats=_layer_norm_stats,
    layer_norm_backward_stats=_layer_norm_backward_stats, powi=_powi, where=_select,
    threshold_backward=_threshold_backward, max_pool2d=_max_pool2d,
    max_pool2d_backward=_max_pool2d_backward, im2col=_im2col, col2im=_col2im,
    sgd_step=_sgd_step, adam_step=_adam_step,
    lgamma=_scipy_kernel("gammaln"), digamma=_scipy_kernel("psi"), polygamma=_polygamma,
    erfinv=_scipy_kernel("erfinv"), erfc=_scipy_kernel("erfc"), erfcx=_scipy_kernel("erfcx"),
    i0=_scipy_kernel("i0"), i0e=_scipy_kernel("i0e"), i1=_scipy_kernel("i1"),
    i1e=_scipy_kernel("i1e"), ndtri=_scipy_kernel("ndtri"), log_ndtr=_scipy_kernel("log_ndtr"),
)
