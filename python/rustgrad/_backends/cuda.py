"""The CUDA backend: CuPy (optional: `pip install rustgrad[cuda12]` or `[cuda13]`).

Importing rustgrad never imports this module, and importing it never touches the driver: the
first CUDA use calls `require()`, which checks CuPy, the driver and the GPU count once, then
exposes CuPy's namespace here and registers CuPy's array type. Every failure is one RuntimeError
naming the fix, whatever was called first (`is_available()` included: it only answers False)."""

from __future__ import annotations

import contextlib
import math
import warnings
from typing import Any, Iterator, Optional

# imported by the package on the first CUDA use, so the package is complete here
from . import device, register

try:
    import cupy as _cp
except ImportError as e:  # depends on the machine
    _cp = None
    _IMPORT_ERROR: Optional[BaseException] = e
else:
    _IMPORT_ERROR = None

DEVICE_TYPE = "cuda"
NOT_INSTALLED = (
    "Torch not compiled with CUDA enabled: rustgrad runs CUDA through CuPy, which is not "
    "installed here. Install it with rustgrad: pip install rustgrad[cuda12] (CUDA 12 driver) "
    "or pip install rustgrad[cuda13] (CUDA 13 driver)"
)
NO_DRIVER = (
    "no NVIDIA driver found: CuPy is installed but CUDA cannot start ({}). Check that this "
    "machine has an NVIDIA GPU and a driver new enough for CuPy's CUDA version (nvidia-smi), "
    "or install the rustgrad extra that matches the driver: rustgrad[cuda12] or rustgrad[cuda13]"
)
NO_GPU = "No CUDA GPUs are available: the NVIDIA driver is loaded but sees no GPU"

_state: dict = {"ready": False, "error": None}


def _probe() -> Optional[str]:
    """None when CUDA works, else the message of the one error every CUDA use raises."""
    if _cp is None:
        return NOT_INSTALLED
    try:
        n = int(_cp.cuda.runtime.getDeviceCount())
    except Exception as e:  # noqa: BLE001 - cudaErrorInsufficientDriver, NoDevice, a missing libcuda
        return NO_DRIVER.format(f"{type(e).__name__}: {e}")
    return None if n > 0 else NO_GPU


def is_available() -> bool:
    """True when CuPy imports and sees at least one GPU (never raises)."""
    if _state["ready"]:
        return True
    if _state["error"] is None:
        _state["error"] = _probe() or ""
    return _state["error"] == ""


def require() -> None:
    """Makes CUDA usable, or raises the one RuntimeError naming the fix."""
    if _state["ready"]:
        return
    if not is_available():
        raise RuntimeError(_state["error"])
    # the backend namespace is CuPy's, as cpu.py's is NumPy's; a name CuPy lacks is an
    # AttributeError here too (nothing is forwarded: kernels live in `kernels`, by their own names)
    g = globals()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in dir(_cp):
            if not name.startswith("_") and name not in g:
                try:
                    g[name] = getattr(_cp, name)
                except Exception:  # noqa: BLE001,S112 - a name CuPy lists but cannot give
                    continue
    register(_cp.ndarray, __import__(__name__, fromlist=["*"]))
    _state["ready"] = True


# ---- device bookkeeping used by the dispatch layer ----------------------------------------
def device_of(array: Any) -> Any:
    return device("cuda", int(array.device.id))


def device_index(array: Any) -> int:
    return int(array.device.id)


def storage_slot(array: Any) -> int:
    return 1 + int(array.device.id)


def device_count() -> int:
    """The number of GPUs CuPy sees (0 when CUDA is unusable)."""
    return int(_cp.cuda.runtime.getDeviceCount()) if is_available() else 0


def current_index() -> int:
    require()
    return int(_cp.cuda.runtime.getDevice())


@contextlib.contextmanager
def device_context(index: int) -> Iterator[None]:
    """CuPy's current device is `index` inside (new arrays and kernels go there)."""
    require()
    with _cp.cuda.Device(int(index)):
        yield


def to_numpy(array: Any) -> Any:
    return _cp.asnumpy(array)


def from_numpy(array: Any, dev: Any = None) -> Any:
    index = None if dev is None else device(dev).index  # dev may be a string
    if index is None:
        return _cp.asarray(array)
    with _cp.cuda.Device(index):
        return _cp.asarray(array)


def copy_to(array: Any, dev: Any) -> Any:
    """A copy of a device array on GPU `dev` (device to device: CuPy's copy() writes to the
    current device from whichever device the array is on)."""
    index = device(dev).index
    with _cp.cuda.Device(current_index() if index is None else index):
        return array.copy()


def add_at(target: Any, index: Any, values: Any) -> None:
    import cupyx  # optional dependency (CuPy's), imported on first use

    cupyx.scatter_add(target, index, values)


def data_ptr(array: Any) -> int:
    return int(array.data.ptr)


def _erf(array: Any) -> Any:
    """The error function, elementwise (CuPy's special-function kernel). It has no float16
    loop (float16 gives float64): float16 is computed in float32 and rounded, as on the CPU."""
    from cupyx.scipy.special import erf as _erf_kernel  # optional dependency, import-time cost

    if array.dtype == _cp.float16:
        return _erf_kernel(array.astype(_cp.float32)).astype(_cp.float16)
    return _erf_kernel(array)


def as_strided(array: Any, shape: Any, strides: Any) -> Any:
    """A view of array's memory with these shape and byte strides (writable)."""
    return _cp.lib.stride_tricks.as_strided(array, shape=shape, strides=strides)


# kernels CuPy lacks, written once for the GPU (see cuda_kernels.py)
from . import cuda_kernels as _ck  # noqa: E402
from ._kernels import Kernels  # noqa: E402


def writable_view(view: Any) -> Any:
    """view as it is: CuPy's views are always writable (its flags have no `writeable`)."""
    return view


def errstate(**kwargs: Any) -> Any:
    """CuPy kernels never warn on overflow or division by zero: nothing to silence."""
    return contextlib.nullcontext()


# ---- the kernel table (see _kernels.py) ------------------------------------------------
def _max_pool2d(x: Any, kernel: Any, stride: Any, padding: Any, dilation: Any, out: Any) -> Any:
    """(maxima, flat indices in each plane) of (N, C, H, W) x, one kernel (torch's rules)."""
    return _ck.max_pool2d_with_indices(x, kernel, stride, padding, dilation, out[0], out[1])


def _max_pool2d_backward(grad: Any, indices: Any, shape: Any) -> Any:
    """zeros(shape) with grad added at max_pool2d's flat indices (an atomic scatter-add)."""
    n, c, h, w = shape
    z = _cp.zeros((n * c, h * w), dtype=grad.dtype)
    rows = _cp.arange(n * c).reshape(n * c, 1)
    add_at(z, (rows, indices.reshape(n * c, -1)), grad.reshape(n * c, -1))
    return z.reshape(shape)


# ---- special functions: cupyx.scipy.special ----------------------------------------------
def _in_own_dtype(fn: Any, x: Any) -> Any:
    """fn(x) in x's dtype: float16 computed in float32 and rounded once, as torch's kernels
    compute it (CuPy's special-function loops give float16 float64)."""
    if x.dtype.itemsize < 4:
        return fn(x.astype(_cp.float32)).astype(x.dtype)
    out = fn(x)
    return out if out.dtype == x.dtype else out.astype(x.dtype)


def _cupyx_kernel(name: str) -> Any:
    def kernel(x: Any) -> Any:
        from cupyx.scipy import special  # optional dependency (CuPy's), import-time cost

        return _in_own_dtype(getattr(special, name), x)

    kernel.__name__ = kernel.__qualname__ = f"_{name}"
    kernel.__doc__ = f"cupyx.scipy.special.{name} of a float array, in its dtype."
    return kernel


def _polygamma(n: int, x: Any) -> Any:
    """digamma's n-th derivative (n >= 1) of a float array, in its dtype, as cupyx's polygamma
    computes it: (-1)^(n+1) n! zeta(n + 1, x) (its own function broadcasts n as an array)."""
    from cupyx.scipy.special import zeta  # optional dependency (CuPy's), import-time cost

    coef = (-1.0) ** (n + 1) * math.factorial(n)
    return _in_own_dtype(lambda a: zeta(float(n + 1), a) * a.dtype.type(coef), x)


# no where kernel: CuPy's where is one launch already
kernels = Kernels(
    erf=_erf, gelu=_ck.gelu, gelu_backward=_ck.gelu_backward, im2col=_ck.im2col,
    max_pool2d=_max_pool2d, max_pool2d_backward=_max_pool2d_backward,
    adam_step=_ck.adam_step, adam_step_multi=_ck.adam_step_multi, sgd_step=_ck.sgd_step,
    rmsprop_step=_ck.rmsprop_step, adagrad_step=_ck.adagrad_step,
    non_finite_check_and_unscale=_ck.non_finite_check_and_unscale,
    layer_norm=_ck.layer_norm,
    layer_norm_backward=_ck.layer_norm_backward, softmax=_ck.softmax,
    softmax_backward=_ck.softmax_backward, threshold_backward=_ck.threshold_backward,
    lgamma=_cupyx_kernel("gammaln"), digamma=_cupyx_kernel("digamma"), polygamma=_polygamma,
    erfinv=_cupyx_kernel("erfinv"), erfc=_cupyx_kernel("erfc"), erfcx=_cupyx_kernel("erfcx"),
    i0=_cupyx_kernel("i0"), i0e=_cupyx_kernel("i0e"), i1=_cupyx_kernel("i1"),
    i1e=_cupyx_kernel("i1e"), ndtri=_cupyx_kernel("ndtri"), log_ndtr=_cupyx_kernel("log_ndtr"),
)
# the entries that compile CUDA C (a test double without a GPU replaces them)
CUDA_C_KERNELS = ("gelu", "gelu_backward", "im2col", "max_pool2d", "adam_step",
                  "adam_step_multi", "sgd_step", "layer_norm", "layer_norm_backward", "softmax",
                  "softmax_backward", "threshold_backward", "rmsprop_step", "adagrad_step",
                  "non_finite_check_and_unscale")
