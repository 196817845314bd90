"""Stand-ins for CuPy's runtime in sys.modules, so that rustgrad.cuda's paths run without a GPU: a
CuPy whose driver is missing (getDeviceCount raises as cudaErrorInsufficientDriver does), and a
"working" CuPy with two devices that has streams, events, pools and device properties but no
arrays. The arrays and the namespace are the strict double's (strict_cupy.py), built from the
installed CuPy; CuPy's kernels themselves need the real thing: tests/cuda."""

from __future__ import annotations

import sys
import time
import types
from typing import Any, Optional

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
