"""The CUDA backend: CuPy (optional: `pip install rustgrad[cuda12]`). Importing rustgrad never
imports this module; the first use of a CUDA device does."""

from __future__ import annotations

from typing import Any

try:
    import cupy as _cp
    import cupyx as _cpx
except ImportError as e:  # pragma: no cover - depends on the machine
    raise RuntimeError(
        "CUDA tensors need CuPy: install rustgrad[cuda12] (or [cuda13]) on a machine with an "
        "NVIDIA GPU"
    ) from e

from cupy import *  # noqa: F401,F403,E402  (the backend namespace is CuPy's)

ndarray = _cp.ndarray
DEVICE_TYPE = "cuda"


def device_of(array: Any) -> Any:
    from . import device

    return device("cuda", int(array.device.id))


def storage_slot(array: Any) -> int:
    return 1 + int(array.device.id)


def to_numpy(array: Any) -> Any:
    return _cp.asnumpy(array)


def from_numpy(array: Any, dev: Any = None) -> Any:
    index = getattr(dev, "index", None) or 0
    with _cp.cuda.Device(index):
        return _cp.asarray(array)


def add_at(target: Any, index: Any, values: Any) -> None:
    _cpx.scatter_add(target, index, values)


def data_ptr(array: Any) -> int:
    return int(array.data.ptr)


def is_available() -> bool:
    try:
        return _cp.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - any CUDA runtime failure means "not available"
        return False


def device_count() -> int:
    return _cp.cuda.runtime.getDeviceCount() if is_available() else 0


def _register() -> None:
    from . import register

    register(ndarray, __import__(__name__, fromlist=["*"]))


_register()


def erf(array: Any) -> Any:
    """The error function, elementwise (CuPy's special-function kernel)."""
    from cupyx.scipy.special import erf as _erf

    return _erf(array)


def as_strided(array: Any, shape: Any, strides: Any) -> Any:
    """A view of array's memory with these shape and byte strides (writable)."""
    return _cp.lib.stride_tricks.as_strided(array, shape=shape, strides=strides)


if not hasattr(_cp, "errstate"):

    def errstate(**kwargs: Any) -> Any:
        """CuPy kernels never warn on overflow or division by zero: nothing to silence."""
        import contextlib

        return contextlib.nullcontext()
