"""Stand-ins for CuPy in sys.modules, so that rustgrad.cuda's paths run without a GPU: a CuPy
whose driver is missing (getDeviceCount raises as cudaErrorInsufficientDriver does); a
"working" CuPy with two devices that has streams, events, pools and device properties but no
arrays; and that CuPy plus arrays that are NumPy's underneath (numpy_cupy), on which rustgrad's
own CUDA backend runs ops, transfers and backward. CuPy's kernels themselves need the real
thing: tests/cuda."""

from __future__ import annotations

import math
import sys
import time
import types
from typing import Any, Optional, Tuple

import numpy as np
import pytest
import rustgrad
import rustgrad._backends as backends
import rustgrad._backends.cuda  # noqa: F401  (imported first, so each test can restore it)


class CUDARuntimeError(RuntimeError):
    """cupy_backends.cuda.api.runtime.CUDARuntimeError's shape: a status code and a name."""

    def __init__(self, status: int, name: str) -> None:
        self.status = status
        super().__init__(name)


def _module(name: str, **attrs: Any) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    return m


def no_driver_cupy() -> types.ModuleType:
    def get_device_count() -> int:
        raise CUDARuntimeError(35, "cudaErrorInsufficientDriver: CUDA driver version is "
                                   "insufficient for CUDA runtime version")

    runtime = _module("cupy.cuda.runtime", getDeviceCount=get_device_count,
                      CUDARuntimeError=CUDARuntimeError)
    cuda = _module("cupy.cuda", runtime=runtime)
    return _module("cupy", cuda=cuda, ndarray=type("ndarray", (), {}))


class _State:
    current = 0
    synced: list = []


class Device:
    def __init__(self, index: int = 0) -> None:
        self.id = int(index)
        self._prev: list = []

    def use(self) -> None:
        _State.current = self.id

    def __enter__(self) -> Device:
        self._prev.append(_State.current)
        _State.current = self.id
        return self

    def __exit__(self, *exc: Any) -> None:
        _State.current = self._prev.pop()


class Stream:
    null: Stream
    _current: Optional[Stream] = None
    _next = 0x1000

    def __init__(self, non_blocking: bool = False, priority: int = 0, null: bool = False) -> None:
        Stream._next += 0x10
        self.ptr = 0 if null else Stream._next
        self.device_id = _State.current
        self.done = True
        self._prev: list = []

    def synchronize(self) -> None:
        _State.synced.append(("stream", self.ptr))

    def wait_event(self, event: Event) -> None:
        _State.synced.append(("wait", self.ptr, event))

    def __enter__(self) -> Stream:
        self._prev.append(Stream._current)
        Stream._current = self
        return self

    def __exit__(self, *exc: Any) -> None:
        Stream._current = self._prev.pop()


Stream.null = Stream(null=True)


class Event:
    def __init__(self, block: bool = False, disable_timing: bool = False) -> None:
        self.timing = not disable_timing
        self.t: Optional[float] = None
        self.stream: Optional[Stream] = None
        self.done = True

    def record(self, stream: Stream) -> None:
        self.t, self.stream = time.perf_counter(), stream

    def synchronize(self) -> None:
        _State.synced.append(("event", self))


def get_elapsed_time(start: Event, end: Event) -> float:
    if not (start.timing and end.timing):
        raise CUDARuntimeError(6, "cudaErrorInvalidResourceHandle")
    return (end.t - start.t) * 1000.0


class Pool:
    def __init__(self) -> None:
        self.used = {0: 0, 1: 0}
        self.cached = {0: 0, 1: 0}

    def malloc(self, n: int) -> Any:
        self.used[_State.current] += n
        return types.SimpleNamespace(device_id=_State.current, size=n)

    def used_bytes(self) -> int:
        return self.used[_State.current]

    def total_bytes(self) -> int:
        return self.used[_State.current] + self.cached[_State.current]

    def free_all_blocks(self) -> None:
        self.cached = {0: 0, 1: 0}


def working_cupy() -> types.ModuleType:
    pool, pinned = Pool(), Pool()
    _State.current, _State.synced = 0, []
    props = {0: {"name": b"Fake GPU 0", "totalGlobalMem": 80 << 30, "major": 9, "minor": 0,
                 "multiProcessorCount": 132},
             1: {"name": b"Fake GPU 1", "totalGlobalMem": 40 << 30, "major": 8, "minor": 0,
                 "multiProcessorCount": 108}}
    runtime = _module(
        "cupy.cuda.runtime", getDeviceCount=lambda: 2, getDevice=lambda: _State.current,
        getDeviceProperties=lambda i: props[i],
        deviceSynchronize=lambda: _State.synced.append(("device", _State.current)),
        CUDARuntimeError=CUDARuntimeError)
    allocator: list = []
    cuda = _module(
        "cupy.cuda", runtime=runtime, Device=Device, Stream=Stream, Event=Event,
        get_elapsed_time=get_elapsed_time,
        get_current_stream=lambda: Stream._current or Stream.null,
        set_allocator=allocator.append, allocator=allocator)
    return _module("cupy", cuda=cuda, ndarray=type("ndarray", (), {}),
                   get_default_memory_pool=lambda: pool,
                   get_default_pinned_memory_pool=lambda: pinned)


def install(monkeypatch: pytest.MonkeyPatch, cupy: Optional[types.ModuleType]) -> Any:
    """Puts `cupy` (None: CuPy missing) in sys.modules and a fresh CUDA backend over it; all
    undone when the test ends. Returns the fresh backend module."""
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupyx", None)
    monkeypatch.delitem(sys.modules, "rustgrad._backends.cuda", raising=False)
    monkeypatch.delattr(backends, "cuda", raising=False)
    monkeypatch.setattr(backends, "_BY_ARRAY_TYPE", dict(backends._BY_ARRAY_TYPE))
    monkeypatch.setattr(backends, "_BOUND", {})
    monkeypatch.setattr(rustgrad.cuda, "_PEAK", {})
    import rustgrad._backends.cuda as fresh

    return fresh


class SimArray(np.ndarray):
    """A CuPy-like array over NumPy: all arrays one type, each knowing its device (.device.id),
    its address (.data.ptr) and exporting __cuda_array_interface__. Unlike CuPy, it computes on
    arrays of any device whatever the current device is (CuPy raises ValueError: see
    tests/cuda/test_gpu.py's two-GPU tests)."""

    _sim_device: int

    def __array_finalize__(self, obj: Any) -> None:
        self._sim_device = getattr(obj, "_sim_device", _State.current)

    @property
    def device(self) -> Any:  # noqa: D102
        return Device(self._sim_device)

    @property
    def data(self) -> Any:  # noqa: D102
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])

    @property
    def __cuda_array_interface__(self) -> dict:
        cai = dict(self.__array_interface__)
        cai["version"] = 3
        return cai

    def nonzero(self) -> tuple:
        return tuple(_sim(i, self._sim_device) for i in super().nonzero())


def _sim(a: Any, index: int) -> SimArray:
    out = np.asarray(a).view(SimArray)
    out._sim_device = index
    return out


def _sim_index(args: Any) -> int:
    for a in args:
        if isinstance(a, SimArray):
            return a._sim_device
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, SimArray):
                    return b._sim_device
    return _State.current


def _sim_wrap(fn: Any) -> Any:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        index = _sim_index(args)
        if isinstance(out, tuple):
            return tuple(_sim(o, index) if isinstance(o, (np.ndarray, np.generic)) else o
                         for o in out)
        if isinstance(out, (np.ndarray, np.generic)) and not isinstance(out, SimArray):
            return _sim(out, index)
        return out

    return wrapped


def numpy_cupy() -> Tuple[types.ModuleType, types.ModuleType]:
    """A CuPy of two devices whose arrays are NumPy's (SimArray), and its cupyx: enough for
    rustgrad's CUDA backend to run ops, transfers and backward without a GPU."""
    cp = working_cupy()
    for name in np.__all__:
        attr = getattr(np, name, None)
        if callable(attr) and not isinstance(attr, type) and not hasattr(cp, name):
            setattr(cp, name, _sim_wrap(attr))
        elif attr is not None and not hasattr(cp, name):
            setattr(cp, name, attr)
    cp.ndarray = SimArray
    cp.asarray = _sim_wrap(lambda a, dtype=None: np.array(a, dtype=dtype, copy=True)
                           if not isinstance(a, SimArray) else np.asarray(a, dtype=dtype))
    cp.asnumpy = lambda a: np.array(a, copy=True).view(np.ndarray)
    cp.lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(
        as_strided=_sim_wrap(np.lib.stride_tricks.as_strided)))
    erf = np.vectorize(math.erf, otypes=[float])
    special = _module("cupyx.scipy.special",
                      erf=_sim_wrap(lambda a: erf(a).astype(np.asarray(a).dtype)))
    cupyx = _module("cupyx", scatter_add=lambda t, i, v: np.add.at(t, i, v),
                    scipy=_module("cupyx.scipy", special=special))
    return cp, cupyx


def install_numpy_cupy(monkeypatch: pytest.MonkeyPatch) -> Any:
    """install() with numpy_cupy(), its cupyx included."""
    cp, cupyx = numpy_cupy()
    fresh = install(monkeypatch, cp)
    for name, mod in (("cupyx", cupyx), ("cupyx.scipy", cupyx.scipy),
                      ("cupyx.scipy.special", cupyx.scipy.special)):
        monkeypatch.setitem(sys.modules, name, mod)
    # the CUDA C kernels compile only on a GPU: the ops take their array formulations instead
    for name in CUDA_C_KERNELS:
        monkeypatch.delattr(fresh, name, raising=False)
    return fresh


CUDA_C_KERNELS = ("im2col", "gelu", "gelu_backward", "max_pool2d")
