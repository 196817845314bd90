"""rustgrad.cuda: NVIDIA GPUs through CuPy, with torch.cuda's calls.

rustgrad runs on an NVIDIA GPU through CuPy, which is optional (``pip install
rustgrad[cuda12]`` or ``rustgrad[cuda13]``). Without CuPy, or when CuPy finds no driver or no
GPU, `is_available()` is False, `device_count()` is 0, and every other CUDA use raises one
RuntimeError naming the fix, whatever was called first. Memory figures come from rustgrad's own
storage accounting (`memory_allocated`) and from CuPy's memory pool (`memory_reserved`,
`empty_cache`). `rustgrad.cuda.amp` holds torch's deprecated ``torch.cuda.amp`` spellings.

Example::

    >>> print("CUDA:", torch.cuda.is_available())  # False without CuPy or a GPU
    CUDA: ...
    >>> device = "cuda" if torch.cuda.is_available() else "cpu"
    >>> torch.ones(2, device=device).sum().item()
    2.0
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from . import _core
from ._backends import device as _device

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "device", "device_of",
    "synchronize", "manual_seed", "manual_seed_all", "seed", "seed_all", "memory_allocated",
    "max_memory_allocated", "reset_peak_memory_stats", "memory_reserved", "empty_cache",
    "get_device_name", "get_device_capability", "get_device_properties", "Stream", "Event",
    "stream", "current_stream", "default_stream", "is_initialized", "init",
    "is_current_stream_capturing", "CUDAGraph", "graph", "graph_pool_handle",
    "make_graphed_callables",
]


def _backend() -> Any:
    """The CUDA backend, ready; or the one RuntimeError naming the fix."""
    try:
        from ._backends import cuda  # optional dependency: the CUDA backend imports CuPy
    except ImportError as e:  # pragma: no cover - the module itself imports without CuPy
        raise RuntimeError(str(e)) from e
    cuda.require()
    return cuda


def _cp() -> Any:
    return _backend()._cp


def _index(dev: Any = None, optional: bool = True) -> int:
    """A CUDA device index from an int, a string, a device or None (the current device)."""
    if dev is None:
        return current_device()
    if isinstance(dev, int) and not isinstance(dev, bool):
        return current_device() if dev < 0 and optional else dev
    d = dev if isinstance(dev, _device) else _device(dev)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return current_device() if d.index is None else d.index


# ---- availability -------------------------------------------------------------------------
def is_available() -> bool:
    """True when CuPy is installed and sees at least one GPU; never raises.

    Example::

        >>> print("CUDA:", torch.cuda.is_available())  # CUDA: False on a machine without one
        CUDA: ...
    """
    from ._backends import cuda  # optional dependency: the CUDA backend imports CuPy

    return cuda.is_available()


def device_count() -> int:
    """The number of GPUs CuPy sees (0 without CuPy, a driver or a GPU).

    Example::

        >>> torch.cuda.device_count() >= 0
        True
    """
    from ._backends import cuda  # optional dependency: the CUDA backend imports CuPy

    return cuda.device_count()


def is_initialized() -> bool:
    """Whether CUDA has been set up in this process (by a first CUDA use)."""
    from ._backends import cuda  # optional dependency: the CUDA backend imports CuPy

    return bool(cuda._state["ready"])


def init() -> None:
    """Sets CUDA up now (it is otherwise set up by the first CUDA use); raises if unusable."""
    _backend()


# ---- the current device -------------------------------------------------------------------
def current_device() -> int:
    """The index of the current CUDA device (where new CUDA tensors go by default)."""
    return _backend().current_index()


def set_device(device: Any) -> None:
    """Makes `device` (an index, ``"cuda:N"`` or a device) the current CUDA device; a negative
    index does nothing, as in torch."""
    if isinstance(device, int) and not isinstance(device, bool) and device < 0:
        return
    i = _index(device)
    _cp().cuda.Device(i).use()


class device:
    """A context in which `device` is the current CUDA device; the previous one is restored on
    exit. Accepts an index, ``"cuda:N"``, a rustgrad.device or None/-1 (then it does nothing).

    Args:
        device (int, str or rustgrad.device): the device to make current.
    """

    def __init__(self, device: Any) -> None:
        none = device is None or (isinstance(device, int) and device < 0)
        self.idx = -1 if none else _index(device)
        self.prev_idx = -1

    def __enter__(self) -> device:
        if self.idx >= 0:
            self.prev_idx = current_device()
            if self.prev_idx != self.idx:
                set_device(self.idx)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.idx >= 0 and self.prev_idx != self.idx:
            set_device(self.prev_idx)


class device_of(device):
    """The `device` context of a tensor's device (a no-op for a CPU tensor).

    Args:
        obj (Tensor): the tensor whose device becomes current.
    """

    def __init__(self, obj: Any) -> None:
        dev = obj.device
        super().__init__(dev.index if dev.type == "cuda" else -1)


def synchronize(device: Any = None) -> None:
    """Waits until every kernel queued on `device` (default: the current one) has finished."""
    cp = _cp()
    with cp.cuda.Device(_index(device)):
        cp.cuda.runtime.deviceSynchronize()


# ---- seeding: rustgrad draws every random number from its one host generator (then moves the
# values to the device), so there is no separate CUDA generator to seed; these keep torch's calls
# working and do nothing.
def manual_seed(seed: int) -> None:
    """No-op: rustgrad.manual_seed seeds the one generator cuda tensors draw from too."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    """No-op (see manual_seed)."""
    int(seed)


def seed() -> None:
    """No-op (see manual_seed)."""


def seed_all() -> None:
    """No-op (see manual_seed)."""


# ---- memory -------------------------------------------------------------------------------
# peak bytes per device since the last reset, sampled after every allocation of CuPy's pool
_PEAK: Dict[int, int] = {}


def _track_peaks() -> None:
    """Routes CuPy's allocations through the default pool plus a peak sample (once)."""
    if _PEAK.get(-1):
        return
    cp = _cp()
    pool = cp.get_default_memory_pool()

    def malloc(nbytes: int) -> Any:
        mem = pool.malloc(nbytes)
        i = mem.device_id
        used = pool.used_bytes()  # the current device's pool: the one just allocated from
        if used > _PEAK.get(i, 0):
            _PEAK[i] = used
        return mem

    cp.cuda.set_allocator(malloc)
    _PEAK[-1] = 1


def memory_allocated(device: Any = None) -> int:
    """Bytes held by live tensors on `device` (default: the current one), from rustgrad's
    storage accounting (views and detach() share their base's storage)."""
    _backend()
    return int(_core.live_storages(1 + _index(device))[1])


def max_memory_allocated(device: Any = None) -> int:
    """The peak of memory_allocated on `device` since CUDA started or the last
    reset_peak_memory_stats: the largest of the current figure and the peak bytes in use in
    CuPy's pool (which also holds an op's temporaries, in 512-byte blocks)."""
    _track_peaks()
    i = _index(device)
    return max(memory_allocated(i), _PEAK.get(i, 0))


def reset_peak_memory_stats(device: Any = None) -> None:
    """Starts max_memory_allocated afresh from the current figure."""
    _track_peaks()
    _PEAK[_index(device)] = 0


def memory_reserved(device: Any = None) -> int:
    """Bytes CuPy's memory pool holds on `device` (in use or cached for reuse)."""
    cp = _cp()
    with cp.cuda.Device(_index(device)):
        return int(cp.get_default_memory_pool().total_bytes())


def empty_cache() -> None:
    """Returns the blocks CuPy's pools cache but no tensor uses to the driver."""
    cp = _cp()
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


# ---- properties ---------------------------------------------------------------------------
class _CudaDeviceProperties:
    """What get_device_properties reports: name, total_memory (bytes), major, minor,
    multi_processor_count."""

    def __init__(self, props: Dict[str, Any]) -> None:
        name = props.get("name", b"")
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.total_memory = int(props.get("totalGlobalMem", 0))
        self.major = int(props.get("major", 0))
        self.minor = int(props.get("minor", 0))
        self.multi_processor_count = int(props.get("multiProcessorCount", 0))

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device: Any = None) -> _CudaDeviceProperties:
    """The name, memory, compute capability and multiprocessor count of `device`."""
    return _CudaDeviceProperties(_cp().cuda.runtime.getDeviceProperties(_index(device)))


def get_device_name(device: Any = None) -> str:
    """The GPU's name (e.g. ``"NVIDIA H200"``)."""
    return get_device_properties(device).name


def get_device_capability(device: Any = None) -> tuple:
    """The compute capability (major, minor)."""
    p = get_device_properties(device)
    return (p.major, p.minor)


# ---- errors -----------------------------------------------------------------------------------
class OutOfMemoryError(RuntimeError):
    """Device memory ran out (torch.OutOfMemoryError, also reached as torch.cuda's)."""


class AcceleratorError(RuntimeError):
    """An error the accelerator's runtime reported (torch.AcceleratorError)."""


# ---- streams and events -------------------------------------------------------------------
class Stream:
    """A CUDA stream (a CuPy stream): kernels queued on one run in order.

    Args:
        device (int, str or rustgrad.device, optional): its device. Default: the current one.
        priority (int, optional): lower is more urgent. Default: 0.
    """

    def __init__(self, device: Any = None, priority: int = 0, *, _stream: Any = None) -> None:
        cp = _cp()
        if _stream is not None:
            self._stream = _stream
        else:
            with cp.cuda.Device(_index(device)):
                self._stream = cp.cuda.Stream(non_blocking=False, priority=priority)

    @property
    def cuda_stream(self) -> int:
        """The raw cudaStream_t address."""
        return int(self._stream.ptr)

    def synchronize(self) -> None:
        """Waits until everything queued on this stream has finished."""
        self._stream.synchronize()

    def query(self) -> bool:
        """Whether everything queued on this stream has finished."""
        return bool(self._stream.done)

    def wait_event(self, event: Event) -> None:
        """Work queued on this stream after this call waits for `event`."""
        self._stream.wait_event(event._event)

    def wait_stream(self, stream: Stream) -> None:
        """Work queued on this stream after this call waits for what `stream` holds now."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Optional[Event] = None) -> Event:
        """Records `event` (a new one by default) on this stream and returns it."""
        event = Event() if event is None else event
        event._mark(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream

    def __hash__(self) -> int:
        return hash(self.cuda_stream)

    def __repr__(self) -> str:
        return f"<rustgrad.cuda.Stream cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event (a CuPy event): a mark in a stream, for waiting and timing.

    Args:
        enable_timing (bool, optional): whether elapsed_time works. Default: False.
        blocking (bool, optional): whether synchronize() blocks the thread. Default: False.
        interprocess (bool, optional): refused (no IPC events). Default: False.
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        if interprocess:
            raise RuntimeError("rustgrad.cuda.Event: interprocess events are not supported")
        self._event = _cp().cuda.Event(block=blocking, disable_timing=not enable_timing)

    # (named _mark here: the package keeps the name "record" for the op layer's graph recording)
    def _mark(self, stream: Optional[Stream] = None) -> None:
        """Marks the point of `stream` (default: the current stream) reached so far."""
        s = current_stream() if stream is None else stream
        mark = self._event.record  # CuPy's
        mark(s._stream)

    record = _mark

    def synchronize(self) -> None:
        """Waits until the work before this event has finished."""
        self._event.synchronize()

    def query(self) -> bool:
        """Whether the work before this event has finished."""
        return bool(self._event.done)

    def wait(self, stream: Optional[Stream] = None) -> None:
        """Makes `stream` (default: the current one) wait for this event."""
        (current_stream() if stream is None else stream).wait_event(self)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and `end_event` (both recorded, timing enabled)."""
        return float(_cp().cuda.get_elapsed_time(self._event, end_event._event))


def current_stream(device: Any = None) -> Stream:
    """The stream kernels are queued on now (for `device`, default the current one)."""
    cp = _cp()
    with cp.cuda.Device(_index(device)):
        return Stream(_stream=cp.cuda.get_current_stream())


def default_stream(device: Any = None) -> Stream:
    """The device's default (null) stream."""
    cp = _cp()
    with cp.cuda.Device(_index(device)):
        return Stream(_stream=cp.cuda.Stream.null)


class stream:
    """A context in which kernels are queued on `stream` (None: a no-op), as torch.cuda.stream.

    Args:
        stream (Stream or None): the stream to use inside.
    """

    def __init__(self, stream: Optional[Stream]) -> None:
        self.stream = stream

    def __enter__(self) -> Optional[Stream]:
        if self.stream is not None:
            self.stream._stream.__enter__()
        return self.stream

    def __exit__(self, *exc: Any) -> None:
        if self.stream is not None:
            self.stream._stream.__exit__(*exc)


# torch.cuda.amp's deprecated spellings, the submodule `rustgrad.cuda.amp` (this is a module, not
# a package): rustgrad.amp, which sits above this module, sets both when imported
amp: Any


# ---- CUDA graphs --------------------------------------------------------------------------
def is_current_stream_capturing() -> bool:
    """True when a CUDA graph capture is under way on the current CUDA stream; False otherwise
    (and False, without setting CUDA up, when CUDA has not been used yet)."""
    if not is_initialized():
        return False
    return bool(_cp().cuda.get_current_stream().is_capturing())


# CUDAGraph, graph, graph_pool_handle and make_graphed_callables live in rustgrad.cuda_graphs,
# which builds on autograd (a layer above this module): imported on first use, by name
_GRAPH_NAMES = ("CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables")
CUDAGraph: Any  # (bound by __getattr__; their types are rustgrad.cuda_graphs')
graph: Any
graph_pool_handle: Any
make_graphed_callables: Any


def __getattr__(name: str) -> Any:
    if name in _GRAPH_NAMES:
        import importlib

        value = getattr(importlib.import_module("rustgrad.cuda_graphs"), name)
        globals()[name] = value  # later uses find it directly
        return value
    raise AttributeError(f"module 'rustgrad.cuda' has no attribute {name!r}")
