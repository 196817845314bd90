"""Process-wide settings torch programs set up front: the default device, deterministic
algorithms, float32 matmul precision, thread counts, and `compile`.

On the CPU most of them change nothing rustgrad computes (NumPy's kernels are deterministic and
have no TF32), but programs set and read them, so they exist with torch's types and defaults and
keep what was set."""

from __future__ import annotations

import builtins as _builtins
import os
import warnings
from typing import Any, Callable, Optional, Union

from . import _warn_once, cuda
from ._backends import device as _device

_state: dict = {
    "device": None,  # None: the cpu, as torch's unset default
    "deterministic": False,
    "warn_only": False,
    "matmul_precision": "highest",
    "num_threads": None,
    "interop_threads": None,
}


# ---- default device ---------------------------------------------------------------------------
def set_default_device(device: Any) -> None:
    """Sets the device new tensors are made on: the cpu, or cuda where CUDA is usable."""
    if device is None:
        _state["device"] = None
        return
    dev = device if isinstance(device, _device) else _device(device)
    if dev.type != "cpu":
        if dev.type != "cuda" or not cuda.is_available():
            raise RuntimeError(
                f"rustgrad.set_default_device: {dev.type!r} is not available here (rustgrad "
                "runs on the cpu, and on cuda only where CuPy sees a GPU)")
    _state["device"] = None if dev.type == "cpu" else dev


def get_default_device() -> _device:
    """The device new tensors are made on when no device is given."""
    dev = _state["device"]
    return _device("cpu") if dev is None else dev


def default_device() -> Optional[_device]:
    """The default device set by set_default_device, or None for the cpu (the fast path)."""
    return _state["device"]


# ---- determinism ------------------------------------------------------------------------------
def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Records torch's determinism flag (rustgrad's CPU kernels are deterministic anyway)."""
    if not isinstance(mode, bool):
        raise TypeError("_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    _state["deterministic"] = mode
    _state["warn_only"] = bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether use_deterministic_algorithms(True) is in force."""
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode only warns."""
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode: Union[str, int]) -> None:
    """torch's debug mode: 0/"default", 1/"warn", 2/"error"."""
    names = {"default": 0, "warn": 1, "error": 2}
    mode = names.get(debug_mode, debug_mode) if isinstance(debug_mode, str) else debug_mode
    if mode not in (0, 1, 2):
        raise RuntimeError(
            "invalid value of debug_mode, expected one of `default`, `warn`, `error` or 0, 1, 2, "
            f"but got {debug_mode}")
    use_deterministic_algorithms(mode != 0, warn_only=mode == 1)


def get_deterministic_debug_mode() -> int:
    """0 when determinism is off, 1 when it only warns, 2 when it errors."""
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


# ---- float32 matmul precision -----------------------------------------------------------------
_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision: str) -> None:
    """Records the float32 matmul precision ("highest", "high", "medium"); NumPy always
    computes in full float32, so it changes no result."""
    if not isinstance(precision, str):
        raise RuntimeError(
            f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", stacklevel=2)
        return
    _state["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision last set ("highest" by default)."""
    return _state["matmul_precision"]


# ---- threads ----------------------------------------------------------------------------------
def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def set_num_threads(int: int) -> None:  # noqa: A002  (torch's parameter name)
    """Records the intra-op thread count (NumPy's BLAS keeps its own; set OPENBLAS_NUM_THREADS or
    use threadpoolctl to change it)."""
    if not isinstance(int, _builtins.int) or int <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _state["num_threads"] = int


def get_num_threads() -> int:
    """The intra-op thread count: the value set, else the CPUs this process may use."""
    n = _state["num_threads"]
    return _cpus() if n is None else n


def set_num_interop_threads(int: int) -> None:  # noqa: A002  (torch's parameter name)
    """Records the inter-op thread count; as torch, it may be set only once."""
    if not isinstance(int, _builtins.int) or int <= 0:
        raise RuntimeError("Expected positive number of threads")
    if _state["interop_threads"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has "
                           "started or set_num_interop_threads called")
    _state["interop_threads"] = int


def get_num_interop_threads() -> int:
    """The inter-op thread count: the value set, else the CPUs this process may use."""
    n = _state["interop_threads"]
    return _cpus() if n is None else n


# ---- compile ----------------------------------------------------------------------------------
def compile(model: Optional[Callable[..., Any]] = None, *, fullgraph: bool = False,  # noqa: A001
            dynamic: Optional[bool] = None, backend: Union[str, Callable[..., Any]] = "inductor",
            mode: Optional[str] = None, options: Optional[dict] = None,
            disable: bool = False) -> Any:
    """Returns model itself: rustgrad has no compiler, so compiled code is the eager code (used
    as a decorator without a model, it returns a decorator that does the same)."""
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise RuntimeError("The torch.compile decorator must be called on a function or module")
    return model


# ---- warnings and denormals -------------------------------------------------------------------
def set_warn_always(b: bool) -> None:
    """Makes the warnings torch gives once per process (float() of a tensor that requires grad,
    backward(create_graph=True), ...) warn every time, or once again.

    Args:
        b (bool): True to warn every time.
    """
    _warn_once._always[0] = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether set_warn_always(True) holds."""
    return _warn_once._always[0]


def set_flush_denormal(mode: bool) -> bool:
    """Whether flushing denormal floats to zero could be set: always False here, since NumPy's
    and CuPy's kernels keep denormals (torch returns False too where the CPU lacks SSE3).

    Args:
        mode (bool): whether to flush denormals.
    """
    return False


def init_num_threads() -> None:
    """Initialises the intra-op thread pool: nothing to do here (OpenBLAS and rayon start their
    own threads on first use)."""
