"""A strict CuPy double, built from the installed `cupy` package's real surface.

CuPy imports without a GPU (`cupy.is_available()` is False), so the names of its namespace, the
attributes of `cupy.ndarray` and of its `flags`, and the type loops of its ufuncs can be read on
any machine. This module reads them once (`surface()`) and builds from them a CuPy whose arrays
are NumPy's underneath but which shows only what real CuPy shows:

- `ndarray` is not an `np.ndarray` subclass and has exactly real CuPy's public attributes and
  operators: no `__array_interface__`, `ctypes`, `__index__`, `flags.writeable`, `__imatmul__`;
  `np.asarray(x)` raises TypeError as CuPy's `__array__` does; reductions give 0-d arrays.
- The namespace has exactly real CuPy's names: a name CuPy lacks raises AttributeError (as it would
  on a GPU), one CuPy has but this double does not compute raises `NotSimulated`.
- Ufunc results take CuPy's type loops (`cupyx.scipy.special.erf` of float16 is float64).
- Integer-array indices (and `take`/`put`) wrap around where NumPy raises, as CuPy's kernels do.
- Arrays live on one of two devices; new arrays go to the current device; an op on an array of
  another device raises CuPy's ValueError (no peer access is assumed).

CUDA C kernels (ElementwiseKernel, RawKernel) cannot run here: the harness replaces the CUDA
backend's kernel table entries by recorders (`KERNEL_CALLS`) that return None, so the ops take
their array formulations. `tests/devices/test_strict_cupy.py` checks this double against the
installed CuPy."""

from __future__ import annotations

import collections
import contextlib
import copy
import dataclasses
import functools
import importlib
import sys
import types
import warnings
import weakref
from typing import Any, Callable, Dict, FrozenSet, Iterator, List, Optional, Tuple

import numpy as np

from . import fake_cupy

CUPY_PIN = "cupy-cuda13x==14.2.0"  # the GPU machine's CuPy; `make test` installs it


class NotSimulated(NotImplementedError):
    """A name real CuPy has that this double does not compute."""


@dataclasses.dataclass(frozen=True)
class Surface:
    """What the installed CuPy shows, read without a GPU."""

    version: str
    namespace: Dict[str, str]  # name -> "numpy" (the very NumPy object), "ufunc", "function",
    #                            "class", "module", "value"
    values: Dict[str, Any]  # the "value" entries (pi, inf, newaxis, ...)
    ndarray_attrs: FrozenSet[str]
    flags_attrs: FrozenSet[str]
    ufunc_attrs: FrozenSet[str]
    ufunc_types: Dict[str, Tuple[str, ...]]
    submodules: Dict[str, FrozenSet[str]]  # "random", "linalg", "fft", "lib.stride_tricks", ...
    cupyx: FrozenSet[str]
    special_types: Dict[str, Tuple[str, ...]]  # cupyx.scipy.special's ufuncs
    stream_attrs: FrozenSet[str]  # cupy.cuda.Stream's public names (capture included)
    graph_attrs: FrozenSet[str]  # cupy.cuda.graph.Graph's
    capture_modes: Dict[str, int]  # cupy.cuda.runtime.streamCaptureMode*


_OBJECT = frozenset(dir(object)) | {"__module__", "__slots__", "__pyx_vtable__", "__weakref__",
                                    "__dict__", "__annotations__", "__firstlineno__",
                                    "__static_attributes__"}


def public_attrs(cls: type) -> FrozenSet[str]:
    """A class's attributes that code may touch: not private, not object's own."""
    return frozenset(n for n in dir(cls)
                     if n not in _OBJECT and not (n.startswith("_") and not n.startswith("__")))


@functools.cache
def surface() -> Surface:
    """Reads the installed CuPy (ImportError naming the pin when it is missing)."""
    saved = {k: sys.modules[k] for k in list(sys.modules) if k.split(".")[0] in ("cupy", "cupyx")}
    for k in saved:  # a double may be installed: read the real package
        del sys.modules[k]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                import cupy as cp
                import cupyx
                import cupyx.scipy.special as special
            except ImportError as e:
                raise ImportError(f"the strict CuPy double reads the installed CuPy: pip install "
                                  f"{CUPY_PIN} (make test does) ({e})") from e
            namespace: Dict[str, str] = {}
            values: Dict[str, Any] = {}
            for name in dir(cp):
                if name.startswith("_"):
                    continue
                try:
                    obj = getattr(cp, name)
                except Exception:  # noqa: BLE001,S112 - a name CuPy lists but cannot give
                    continue
                if obj is getattr(np, name, object()):
                    namespace[name] = "numpy"
                elif isinstance(obj, cp.ufunc):
                    namespace[name] = "ufunc"
                elif isinstance(obj, types.ModuleType):
                    namespace[name] = "module"
                elif isinstance(obj, type):
                    namespace[name] = "class"
                elif callable(obj):
                    namespace[name] = "function"
                else:
                    namespace[name] = "value"
                    values[name] = obj
            subs = {}
            for sub in ("random", "linalg", "fft", "lib.stride_tricks", "cuda", "cuda.runtime"):
                mod = cp
                for part in sub.split("."):
                    mod = getattr(mod, part)
                subs[sub] = frozenset(n for n in dir(mod) if not n.startswith("_"))
            return Surface(
                version=cp.__version__,
                namespace=namespace,
                values=values,
                ndarray_attrs=public_attrs(cp.ndarray),
                flags_attrs=frozenset(n for n in dir(importlib.import_module("cupy._core.flags").Flags)
                                      if not n.startswith("_")),
                ufunc_attrs=frozenset(n for n in dir(cp.add) if not n.startswith("_")),
                ufunc_types={n: tuple(getattr(cp, n).types) for n, k in namespace.items()
                             if k == "ufunc"},
                submodules=subs,
                cupyx=frozenset(n for n in dir(cupyx) if not n.startswith("_")),
                special_types={n: tuple(getattr(special, n).types) for n in dir(special)
                               if isinstance(getattr(special, n, None), cp.ufunc)},
                stream_attrs=frozenset(n for n in dir(cp.cuda.Stream) if not n.startswith("_")),
                graph_attrs=frozenset(n for n in dir(importlib.import_module("cupy.cuda.graph")
                                                     .Graph) if not n.startswith("_")),
                capture_modes={n: int(getattr(cp.cuda.runtime, n)) for n in
                               dir(cp.cuda.runtime) if n.startswith("streamCaptureMode")},
            )
    finally:
        for k in [k for k in sys.modules if k.split(".")[0] in ("cupy", "cupyx")]:
            del sys.modules[k]
        sys.modules.update(saved)


# ---- devices --------------------------------------------------------------------------------
_State = fake_cupy._State  # the current device (shared with the runtime objects of fake_cupy)
LAUNCHES: collections.Counter = collections.Counter()  # calls of CuPy's API by name
# Kernel launches by name, as a GPU would count them: a call launches a kernel when it writes
# device memory (a fresh result sharing no memory with its arguments, or an in-place write);
# views, reshapes and host reads launch none. CUDA C kernels count one each (KERNEL_CALLS).
KERNELS: collections.Counter = collections.Counter()
_NO_KERNEL = frozenset({"empty", "empty_like", "ndarray"})
# calls whose result's size depends on the data: CuPy reads a count back to the host
_SYNCING = frozenset({"nonzero", "flatnonzero", "argwhere", "unique", "extract", "compress"})
KERNEL_CALLS: List[Tuple[str, Tuple[Tuple[int, ...], ...]]] = []  # CUDA C kernels asked for


def _other_device(dev: int) -> ValueError:
    return ValueError(f"The device where the array resides ({dev}) is different from the current "
                      f"device ({_State.current}). Peer access is unavailable between these "
                      f"devices.")


# ---- stream capture (CUDA graphs) -------------------------------------------------------------
# cupy.cuda.Stream.begin_capture/end_capture as CUDA runs them: between the two, a launch on the
# capturing stream is recorded into the graph, not run. Here a launch that writes fresh buffers
# is computed (its shape and dtype are needed) and its buffers then filled with garbage (NaN, -1,
# the unsigned maximum): they hold nothing valid until a replay. An in-place launch is recorded
# and not run: its target keeps what it held. A recorded launch is a closure over the very
# buffers it read and wrote; Graph.launch() re-runs them in order (one launch in KERNELS,
# "graph_launch"), reading the current contents of its inputs (index arrays included) and
# writing into the same outputs. A host read (get, item, bool, asnumpy, printing), a host-to-
# device copy, a data-dependent shape (a boolean mask), a synchronize or a launch on the legacy
# stream during a capture raises CuPy's CUDARuntimeError, as on a GPU, and invalidates the capture
# (end_capture then raises cudaErrorStreamCaptureInvalidated). The closures keep every buffer of
# the graph alive: CuPy's memory pool must not hand them out again while the graph lives, which
# is what a private pool gives on a GPU.
CAPTURED: collections.Counter = collections.Counter()  # kernels recorded into graphs, by name
_CAPTURES: List[_Capture] = []  # the captures under way
CAPTURE_MODES = {"streamCaptureModeGlobal": 0, "streamCaptureModeThreadLocal": 1,
                 "streamCaptureModeRelaxed": 2}  # cudaStreamCaptureMode (CuPy's runtime names)
_UNSUPPORTED = (900, "cudaErrorStreamCaptureUnsupported: operation not permitted when stream "
                     "is capturing")
_INVALIDATED = (901, "cudaErrorStreamCaptureInvalidated: operation failed due to a previous "
                     "error during capture")
_IMPLICIT = (906, "cudaErrorStreamCaptureImplicit: operation would make the legacy stream "
                  "depend on a capturing blocking stream")
_ILLEGAL_STATE = (401, "cudaErrorIllegalState: the operation cannot be performed in the present "
                       "state")


class _Capture:
    """A capture under way on one stream: the launches recorded so far."""

    def __init__(self, stream: Any, mode: int) -> None:
        self.stream, self.mode = stream, mode
        self.nodes: List[Callable[[], None]] = []
        self.error: Optional[BaseException] = None


def _fail(cap: Optional[_Capture], code: Tuple[int, str]) -> BaseException:
    """CuPy's error for `code`; it invalidates the capture, as CUDA does."""
    err = fake_cupy.CUDARuntimeError(*code)
    for c in [cap] if cap is not None else list(_CAPTURES):
        if c.error is None:
            c.error = err
    return err


def _capture_on(stream: Any = None) -> Optional[_Capture]:
    """The capture a launch on `stream` (default: the current one) joins, or None. A launch on
    the legacy (null) stream while a blocking stream captures is refused, as by CUDA."""
    if not _CAPTURES:
        return None
    s = stream if stream is not None else (fake_cupy.Stream._current or fake_cupy.Stream.null)
    for cap in _CAPTURES:
        if cap.stream is s:
            return cap
    if getattr(s, "ptr", None) == 0 and any(not getattr(c.stream, "non_blocking", False)
                                            for c in _CAPTURES):
        raise _fail(None, _IMPLICIT)
    return None


def _no_host_transfer(what: str) -> None:
    """A copy between host and device (a device sync) during a capture: CUDA refuses it."""
    cap = _capture_on()
    if cap is not None:
        raise _fail(cap, _UNSUPPORTED)


def _flat(x: Any) -> List[np.ndarray]:
    """The arrays of a result (device or host; a NumPy scalar as a 0-d array), in order."""
    if isinstance(x, ndarray):
        return [x._a]
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, np.generic):
        return [np.asarray(x)]
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in _flat(v)]
    return []


def _poison(a: np.ndarray) -> None:
    """Garbage in a buffer written by a captured launch (not valid until a replay)."""
    k = a.dtype.kind
    with _quiet():
        a[...] = (np.nan if k in "fc" else True if k == "b" else np.iinfo(a.dtype).max
                  if k == "u" else -1)


def _record(cap: _Capture, name: str, run: Callable[[], Any]) -> None:
    """An in-place launch during a capture: recorded, not run."""
    def node() -> None:
        run()

    cap.nodes.append(node)
    CAPTURED[name] += 1


def _record_fresh(cap: _Capture, name: str, run: Callable[[], Any], result: Any,
                  inputs: Any, always: bool = False) -> None:
    """A launch that wrote `result`, during a capture: the buffers of `result` that share no
    memory with `inputs` (the fresh ones) are filled with garbage, and a replay re-runs `run`
    and writes its results into them. Nothing is recorded when every output is a view (unless
    `always`: a kernel that also writes in place)."""
    ins = _arrays_in(inputs, [])
    outs: List[Optional[np.ndarray]] = [
        None if (not o.size or any(np.may_share_memory(o, i) for i in ins)) else o
        for o in _flat(result)]
    if all(o is None for o in outs) and not always:
        return

    def node() -> None:
        for dst, src in zip(outs, _flat(run())):
            if dst is not None:
                dst[...] = src

    cap.nodes.append(node)
    CAPTURED[name] += 1
    for o in outs:
        if o is not None:
            _poison(o)


def _frozen(x: Any) -> Any:
    """A kernel argument as the launch bakes it in: arrays by reference, other values copied."""
    if isinstance(x, (ndarray, np.ndarray)) or x is None:
        return x
    if isinstance(x, list):
        return [_frozen(v) for v in x]
    if isinstance(x, tuple):
        return tuple(_frozen(v) for v in x)
    return copy.copy(x)


class Stream(fake_cupy.Stream):
    """cupy.cuda.Stream with CUDA stream capture: begin_capture(mode), end_capture() (a Graph)
    and is_capturing(); synchronize() of a capturing stream raises, as on a GPU."""

    null: Stream

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False,
                 priority: Any = None, device_id: int = -1) -> None:
        super().__init__(non_blocking=non_blocking, priority=priority or 0, null=null)
        self.non_blocking = bool(non_blocking)

    def begin_capture(self, mode: Any = None) -> None:
        if self.ptr == 0:  # the legacy stream cannot be captured
            raise fake_cupy.CUDARuntimeError(*_UNSUPPORTED)
        if any(c.stream is self for c in _CAPTURES):
            raise fake_cupy.CUDARuntimeError(*_ILLEGAL_STATE)
        mode = CAPTURE_MODES["streamCaptureModeRelaxed"] if mode is None else int(mode)
        if mode not in CAPTURE_MODES.values():
            raise fake_cupy.CUDARuntimeError(1, "cudaErrorInvalidValue: invalid argument")
        _CAPTURES.append(_Capture(self, mode))

    def end_capture(self) -> Graph:
        cap = next((c for c in _CAPTURES if c.stream is self), None)
        if cap is None:
            raise fake_cupy.CUDARuntimeError(*_ILLEGAL_STATE)
        _CAPTURES.remove(cap)
        if cap.error is not None:
            raise fake_cupy.CUDARuntimeError(*_INVALIDATED)
        return Graph(cap.nodes)

    def is_capturing(self) -> bool:
        if any(c.stream is self for c in _CAPTURES):
            return True
        if self.ptr == 0 and any(not c.stream.non_blocking for c in _CAPTURES):
            raise _fail(None, _IMPLICIT)
        return False

    def synchronize(self) -> None:
        if self.is_capturing():
            raise _fail(_capture_on(self), _UNSUPPORTED)
        super().synchronize()


Stream.null = Stream(null=True)


class Graph:
    """cupy.cuda.graph.Graph: the launches one capture recorded. launch() runs them on the
    current (or given) stream as one launch; launched on a capturing stream, it is recorded into
    that capture as one node."""

    def __init__(self, nodes: List[Callable[[], None]]) -> None:
        self._nodes = list(nodes)

    def launch(self, stream: Any = None) -> None:
        cap = _capture_on(stream)
        if cap is not None:
            _record(cap, "graph_launch", self._replay)
            return
        LAUNCHES["graph_launch"] += 1
        KERNELS["graph_launch"] += 1
        self._replay()

    def upload(self, stream: Any = None) -> None:
        _capture_on(stream)  # nothing to do: the double's launches need no upload

    def _replay(self) -> None:
        with _quiet():
            for node in self._nodes:
                node()

    def debug_dot_str(self, flags: int = 0) -> str:
        return "digraph G {\n" + "".join(f"  n{i};\n" for i in range(len(self._nodes))) + "}\n"


class _PrivatePool(fake_cupy.Pool):
    """cupy.cuda.MemoryPool: a pool of its own (the double's arrays do not allocate from it)."""

    def __init__(self, allocator: Any = None) -> None:
        super().__init__()


_ALLOCATORS: List[Any] = []


@contextlib.contextmanager
def _using_allocator(allocator: Any = None) -> Iterator[None]:
    """cupy.cuda.using_allocator: the allocator of this thread inside."""
    _ALLOCATORS.append(allocator)
    try:
        yield
    finally:
        _ALLOCATORS.pop()


# ---- arrays ---------------------------------------------------------------------------------
class _Flags:
    __slots__ = ("_f", "_owndata")

    def __init__(self, a: np.ndarray) -> None:
        self._f = a.flags
        self._owndata = a.base is None

    c_contiguous = property(lambda self: bool(self._f.c_contiguous))
    f_contiguous = property(lambda self: bool(self._f.f_contiguous))
    owndata = property(lambda self: self._owndata)
    fnc = property(lambda self: bool(self._f.fnc))
    forc = property(lambda self: bool(self._f.forc))

    def __getitem__(self, name: str) -> bool:
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[name]


class _FlatIter:
    """cupy.flatiter: element access through the flattened array, on the device."""

    __slots__ = ("_x",)

    def __init__(self, x: Any) -> None:
        self._x = x

    def __getitem__(self, key: Any) -> Any:
        return _wrap(np.asarray(self._x._a.flat[_unwrap(key)]), self._x._dev)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._x._a.flat[_unwrap(key)] = _unwrap(value)

    def __len__(self) -> int:
        return self._x._a.size


class _Pointer:
    """cupy.cuda.MemoryPointer's face: the address (.ptr) and the device."""

    __slots__ = ("ptr", "device_id")

    def __init__(self, ptr: int, device_id: int) -> None:
        self.ptr, self.device_id = ptr, device_id


class ndarray:  # noqa: N801 - CuPy's name
    """A device array: a NumPy array and the index of the device it lives on."""

    __slots__ = ("_a", "_dev", "__weakref__")
    __array_priority__ = 100

    def __init__(self, shape: Any, dtype: Any = float, memptr: Any = None, strides: Any = None,
                 order: str = "C") -> None:
        if memptr is not None or strides is not None:
            raise NotSimulated("cupy.ndarray(memptr=..., strides=...)")
        self._a = np.empty(shape, dtype=dtype, order=order)
        self._dev = _State.current

    # device-side facts
    device = property(lambda self: fake_cupy.Device(self._dev))
    data = property(lambda self: _Pointer(int(self._a.__array_interface__["data"][0]), self._dev))
    flags = property(lambda self: _Flags(self._a))
    shape = property(lambda self: self._a.shape, lambda self, s: setattr(self._a, "shape", s))
    strides = property(lambda self: self._a.strides)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    base = property(lambda self: None if self._a.base is None else _wrap(self._a.base, self._dev))
    T = property(lambda self: _wrap(self._a.T, self._dev))
    mT = property(lambda self: _wrap(self._a.mT, self._dev))
    real = property(lambda self: _wrap(self._a.real, self._dev),
                    lambda self, v: setattr(self._a, "real", _host(v)))
    imag = property(lambda self: _wrap(self._a.imag, self._dev),
                    lambda self, v: setattr(self._a, "imag", _host(v)))
    flat = property(lambda self: _FlatIter(self))
    cstruct = property(lambda self: _not_simulated("ndarray.cstruct"))

    @property
    def __cuda_array_interface__(self) -> dict:
        cai = dict(self._a.__array_interface__)
        cai["version"] = 3
        cai["stream"] = 1
        return cai

    # host conversions: explicit only
    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` "
                        "to construct a NumPy array explicitly.")

    def get(self, stream: Any = None, order: str = "C", out: Any = None,
            blocking: bool = True) -> np.ndarray:
        _no_host_transfer("get")
        return np.array(self._a, order=order, copy=True)

    def set(self, arr: Any, stream: Any = None) -> None:
        if isinstance(arr, ndarray):
            raise TypeError("Only numpy.ndarray can be set to cupy.ndarray")
        _no_host_transfer("set")
        self._a[...] = arr

    def tolist(self) -> Any:
        _no_host_transfer('tolist')
        return self._a.tolist()

    def item(self) -> Any:
        _no_host_transfer('item')
        return self._a.item()

    def __bool__(self) -> bool:
        _no_host_transfer('__bool__')
        return bool(self._a)

    def __int__(self) -> int:
        _no_host_transfer('__int__')
        return int(self._a)

    def __float__(self) -> float:
        _no_host_transfer('__float__')
        return float(self._a)

    def __complex__(self) -> complex:
        _no_host_transfer('__complex__')
        return complex(self._a)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Any:
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._a.shape[0]))

    def __repr__(self) -> str:
        _no_host_transfer('__repr__')
        return repr(self._a)

    def __str__(self) -> str:
        _no_host_transfer('__str__')
        return str(self._a)

    def __format__(self, spec: str) -> str:
        _no_host_transfer("__format__")
        return format(self._a, spec) if self._a.ndim == 0 else str(self)

    __hash__ = None  # type: ignore[assignment]

    def __copy__(self) -> ndarray:
        return self._copied(self._dev)

    def __deepcopy__(self, memo: Any) -> ndarray:
        return self._copied(self._dev)

    def _copied(self, dev: int, order: str = "C") -> ndarray:
        a = self._a
        out = _wrap(a.copy(order=order), dev)
        cap = _capture_on()
        if cap is not None:
            _record_fresh(cap, "copy", lambda: a.copy(order=order), out, ())
        return out

    def __reduce__(self) -> Any:
        _no_host_transfer("__reduce__")
        return (_rebuild, (self._a.copy(), self._dev))

    # indexing: CuPy's kernels wrap out-of-range integer-array indices around
    def __getitem__(self, key: Any) -> Any:
        _check_device(self)
        cap = _capture_on()
        if cap is not None and _has_mask(key):  # CuPy reads the mask's count back to the host
            raise _fail(cap, _UNSUPPORTED)
        a, shape = self._a, self._a.shape
        k = _cupy_index(key, shape)
        out = a[k]
        if isinstance(out, np.generic):  # CuPy: a 0-d view, where NumPy gives a scalar
            out = a[k + (Ellipsis,)]
        res = _wrap(out, _State.current)
        if cap is not None:  # a gather (integer-array indices) writes a fresh array
            _record_fresh(cap, "__getitem__", lambda: a[_cupy_index(key, shape)], res, (a,))
        return res

    def __setitem__(self, key: Any, value: Any) -> None:
        _check_device(self)
        a, shape = self._a, self._a.shape
        cap = _capture_on()
        if cap is not None:
            if isinstance(value, np.ndarray) and value.ndim:  # host data: a host-to-device copy
                raise _fail(cap, _UNSUPPORTED)
            _record(cap, "__setitem__",
                    lambda: a.__setitem__(_cupy_index(key, shape), _unwrap(value)))
            return
        a[_cupy_index(key, shape)] = _unwrap(value)
        KERNELS["__setitem__"] += 1

    # the NumPy protocols route to this double (np.sum(x) is cupy.sum(x), as on CuPy)
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        mine = _MODULE.get("cupy")
        f = getattr(mine, ufunc.__name__, None) if mine is not None else None
        if f is None:
            return NotImplemented
        return f(*inputs, **kwargs) if method == "__call__" else getattr(f, method)(*inputs,
                                                                                     **kwargs)

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
        mine = _MODULE.get("cupy")
        path = func.__module__.split(".")[1:] if func.__module__ else []
        for part in path:
            if mine is None or part not in ("linalg", "fft", "random"):
                break
            mine = getattr(mine, part, None)
        f = getattr(mine, func.__name__, None) if mine is not None else None
        return NotImplemented if f is None else f(*args, **kwargs)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (2, self._dev)  # kDLCUDA

    def __dlpack__(self, **kwargs: Any) -> Any:
        _not_simulated("ndarray.__dlpack__ (a capsule of device memory)")

    toDlpack = __dlpack__  # noqa: N815 - CuPy's name

    def copy(self, order: str = "C") -> ndarray:
        """A copy on the current device, from any device (CuPy's documented behaviour)."""
        LAUNCHES["copy"] += 1
        if _capture_on() is None:
            KERNELS["copy"] += 1
        return self._copied(_State.current, order)

    def scatter_add(self, slices: Any, value: Any) -> None:
        _scatter(np.add, self, slices, value)

    def scatter_max(self, slices: Any, value: Any) -> None:
        _scatter(np.maximum, self, slices, value)

    def scatter_min(self, slices: Any, value: Any) -> None:
        _scatter(np.minimum, self, slices, value)


def _quiet() -> Any:
    """CuPy's kernels never warn (no floating-point error state on a GPU): NumPy's are silenced."""
    return np.errstate(all="ignore")


def _not_simulated(what: str) -> Any:
    raise NotSimulated(f"the strict CuPy double does not simulate {what}")


def _rebuild(a: np.ndarray, dev: int) -> ndarray:
    return _wrap(a, dev)


_WRAPPERS: Dict[int, Any] = {}  # id(NumPy array) -> weakref to its device array


def _wrap(a: Any, dev: int) -> Any:
    """A NumPy result as CuPy gives it: arrays and scalars become device arrays."""
    if isinstance(a, np.ndarray):
        if a.dtype.kind in "OUSVMm":
            raise TypeError(f"Unsupported dtype {a.dtype}")
        ref = _WRAPPERS.get(id(a))
        known = None if ref is None else ref()
        if known is not None and known._a is a:  # `view.base is x`, as on CuPy
            return known
        if not a.flags.writeable:  # CuPy's arrays are all writable (diagonals, broadcasts)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    a.flags.writeable = True
                except ValueError:
                    a = a.copy()
        out = ndarray.__new__(ndarray)
        out._a, out._dev = a, dev
        key = id(a)
        _WRAPPERS[key] = weakref.ref(out, lambda _, k=key: _WRAPPERS.pop(k, None))
        return out
    if isinstance(a, np.generic):
        return _wrap(np.asarray(a), dev)
    if isinstance(a, tuple):
        return tuple(_wrap(x, dev) for x in a)
    if isinstance(a, list):
        return [_wrap(x, dev) for x in a]
    return a


def _host(x: Any) -> Any:
    return x._a if isinstance(x, ndarray) else x


def _unwrap(x: Any) -> Any:
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, (list, tuple)) and any(isinstance(v, (ndarray, list, tuple)) for v in x):
        return type(x)(_unwrap(v) for v in x)
    return x


def _devices(x: Any, found: set) -> None:
    if isinstance(x, ndarray):
        found.add(x._dev)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _devices(v, found)


def _check_device(*args: Any, **kwargs: Any) -> None:
    found: set = set()
    _devices(args, found)
    _devices(tuple(kwargs.values()), found)
    for dev in found:
        if dev != _State.current:
            raise _other_device(dev)


def _cupy_index(key: Any, shape: Tuple[int, ...]) -> Any:
    """key for NumPy, with CuPy's semantics: integer arrays (device arrays, host arrays and
    lists) wrap around modulo their dimension's size; Python ints stay checked."""
    key = key if isinstance(key, tuple) else (key,)
    key = tuple(_unwrap(k) for k in key)
    key = tuple(np.asarray(k) if isinstance(k, list) else k for k in key)
    consumed = sum(k.ndim if isinstance(k, np.ndarray) and k.dtype == bool else
                   0 if k is None or k is Ellipsis else 1 for k in key)
    out, dim = [], 0
    for k in key:
        if k is Ellipsis:
            dim += len(shape) - consumed
            out.append(k)
            continue
        if k is None:
            out.append(k)
            continue
        if isinstance(k, np.ndarray) and k.dtype == bool:
            dim += k.ndim
        elif isinstance(k, np.ndarray) and k.dtype.kind in "iu":
            n = shape[dim] if dim < len(shape) else 0
            out.append(np.mod(k, n) if n > 0 else k)
            dim += 1
            continue
        else:
            if isinstance(k, int) and dim < len(shape) and not -shape[dim] <= k < shape[dim]:
                raise IndexError(f"Index {k} is out of bounds for axis {dim} with size "
                                 f"{shape[dim]}")  # CuPy's wording, not NumPy's
            dim += 1
        out.append(k)
    return tuple(out)


def _scatter(ufunc: Any, target: ndarray, slices: Any, value: Any) -> None:
    _check_device(target, value)
    a, shape = target._a, target._a.shape
    cap = _capture_on()
    if cap is not None:
        _record(cap, f"scatter_{ufunc.__name__}",
                lambda: ufunc.at(a, _cupy_index(slices, shape), _unwrap(value)))
        return
    KERNELS[f"scatter_{ufunc.__name__}"] += 1
    ufunc.at(a, _cupy_index(slices, shape), _unwrap(value))


def _has_mask(key: Any) -> bool:
    """Whether an index holds a boolean array (its result's shape depends on the data)."""
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (ndarray, np.ndarray)) and _unwrap(k).dtype == bool and
               _unwrap(k).ndim for k in keys)


def _arrays_in(x: Any, found: list) -> list:
    if isinstance(x, np.ndarray):
        found.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _arrays_in(v, found)
    elif isinstance(x, dict):
        _arrays_in(tuple(x.values()), found)
    return found


def _count(name: str, out: Any, args: Any, in_place: bool = False) -> None:
    """Counts a kernel launch when the call wrote device memory (see KERNELS)."""
    if in_place:
        KERNELS[name] += 1
        return
    if name in _NO_KERNEL:
        return
    inputs = _arrays_in(args, [])
    for o in _arrays_in(out, []):
        if o.size and not any(np.may_share_memory(o, i) for i in inputs):
            KERNELS[name] += 1
            return


def _method(name: str) -> Callable[..., Any]:
    def method(self: ndarray, *args: Any, **kwargs: Any) -> Any:
        _check_device(self, *args, **kwargs)
        LAUNCHES[name] += 1
        raw, kw = _unwrap(args), {k: _unwrap(v) for k, v in kwargs.items()}
        a, in_place = self._a, name.startswith("__i") or name == "fill"
        cap = _capture_on()
        if cap is not None:
            if name in _SYNCING:
                raise _fail(cap, _UNSUPPORTED)
            if in_place:  # recorded, not run
                _record(cap, name, lambda: getattr(a, name)(*raw, **kw))
                return None if name == "fill" else self
        with _quiet():
            out = getattr(a, name)(*raw, **kw)
        if cap is None:
            _count(name, out, (a, raw, kw), in_place=in_place)
        if name.startswith("__i") and out is a:  # in place: the same device array
            return self
        res = _wrap(out, _State.current)
        if cap is not None and name not in _NO_KERNEL:
            _record_fresh(cap, name, lambda: getattr(a, name)(*raw, **kw), res, (a, raw, kw))
        return res

    method.__name__ = name
    return method


def _finish_ndarray(s: Surface) -> None:
    """Gives ndarray every other attribute real CuPy's has: NumPy's method where NumPy has
    one, else a NotSimulated stub; and removes nothing real CuPy has."""
    have = public_attrs(ndarray)
    for name in sorted(s.ndarray_attrs - have):
        if hasattr(np.ndarray, name) and callable(getattr(np.ndarray, name)):
            setattr(ndarray, name, _method(name))
        else:
            setattr(ndarray, name, _stub(f"ndarray.{name}"))
    for name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):  # object has them
        setattr(ndarray, name, _method(name))
    extra = public_attrs(ndarray) - s.ndarray_attrs
    if extra:
        raise AssertionError(f"the double's ndarray has names real CuPy's lacks: {sorted(extra)}")


def _stub(what: str) -> Callable[..., Any]:
    def stub(*args: Any, **kwargs: Any) -> Any:
        _not_simulated(what)

    return stub


# ---- functions and ufuncs -------------------------------------------------------------------
def _function(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    def function(*args: Any, **kwargs: Any) -> Any:
        _check_device(*args, **kwargs)
        LAUNCHES[name] += 1
        raw, kw = _unwrap(args), {k: _unwrap(v) for k, v in kwargs.items()}
        cap = _capture_on()
        if cap is not None:
            if name in _SYNCING:
                raise _fail(cap, _UNSUPPORTED)
            if kw.get("out") is not None:  # in place: recorded, not run
                _record(cap, name, lambda: f(*raw, **kw))
                return kwargs["out"]
        with _quiet():
            out = f(*raw, **kw)
        res = _wrap(out, _State.current)
        if cap is None:
            _count(name, out, (raw, kw), in_place="out" in kw)
        elif name not in _NO_KERNEL:
            _record_fresh(cap, name, lambda: f(*raw, **kw), res, (raw, kw))
        return res

    function.__name__ = name
    function.__qualname__ = name
    return function


_NP_CHARS = frozenset("?bBhHiIlLqQefdgFDG")


def _loop_out(types_: Tuple[str, ...], dtypes: List[np.dtype]) -> Any:
    """The output dtypes of CuPy's first loop whose inputs take these dtypes exactly, else the
    first that takes them safely; None when no loop does."""
    for exact in (True, False):
        for t in types_:
            ins, outs = t.split("->")
            if len(ins) != len(dtypes) or not all(c in _NP_CHARS for c in ins + outs):
                continue  # CuPy's complex32 ('E') has no NumPy dtype
            if all((np.dtype(c) == d) if exact else np.can_cast(d, np.dtype(c), "safe")
                   for c, d in zip(ins, dtypes)):
                return [np.dtype(c) for c in outs]
    return None


class ufunc:  # noqa: N801 - CuPy's name
    """A CuPy ufunc: NumPy's (or SciPy's) loop, with CuPy's type loops deciding the result's
    dtype where the arguments are arrays of one dtype."""

    def __init__(self, name: str, impl: Any, types_: Tuple[str, ...]) -> None:
        self.name, self._impl, self.types = name, impl, list(types_)
        ins, outs = types_[0].split("->") if types_ else ("?", "?")
        self.nin, self.nout = len(ins), len(outs)
        self.nargs = self.nin + self.nout

    def __repr__(self) -> str:
        return f"<ufunc '{self.name}'>"

    def __call__(self, *args: Any, out: Any = None, dtype: Any = None, **kwargs: Any) -> Any:
        _check_device(*args, out)
        LAUNCHES[self.name] += 1
        raw = [_unwrap(a) for a in args]
        arrays = [a for a in raw[: self.nin] if isinstance(a, np.ndarray)]
        target = None
        if dtype is None and arrays and len({a.dtype for a in arrays}) == 1:
            outs = _loop_out(tuple(self.types), [arrays[0].dtype] * self.nin)
            if outs is None:
                raise TypeError(f"Wrong type ({arrays[0].dtype},) of arguments for "
                                f"cupy_{self.name}")
            target = outs[0]
        cap = _capture_on()
        impl = self._impl
        if out is not None:
            o = _unwrap(out)
            if cap is not None:  # recorded, not run
                _record(cap, self.name, lambda: impl(*raw, out=o, dtype=dtype, **kwargs))
                return out
            with _quiet():
                impl(*raw, out=o, dtype=dtype, **kwargs)
            KERNELS[self.name] += 1
            return out

        def run() -> Any:
            res = impl(*raw, dtype=dtype, **kwargs) if dtype is not None else \
                impl(*raw, **kwargs)
            if target is not None and self.nout == 1:
                res = np.asarray(res)
                if res.dtype != target:
                    res = res.astype(target)
            return res

        with _quiet():
            res = _wrap(run(), _State.current)
        if cap is None:
            KERNELS[self.name] += 1
        else:
            _record_fresh(cap, self.name, run, res, raw)
        return res

    def _method(self, name: str, *args: Any, **kwargs: Any) -> Any:
        _check_device(*args)
        LAUNCHES[f"{self.name}.{name}"] += 1
        raw, kw = _unwrap(args), {k: _unwrap(v) for k, v in kwargs.items()}
        f = getattr(self._impl, name)
        cap = _capture_on()
        if cap is not None and kw.get("out") is not None:
            _record(cap, f"{self.name}.{name}", lambda: f(*raw, **kw))
            return kwargs["out"]
        with _quiet():
            res = _wrap(f(*raw, **kw), _State.current)
        if cap is None:
            KERNELS[f"{self.name}.{name}"] += 1
        else:
            _record_fresh(cap, f"{self.name}.{name}", lambda: f(*raw, **kw), res, (raw, kw))
        return res

    def reduce(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("reduce", *args, **kwargs)

    def accumulate(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("accumulate", *args, **kwargs)

    def outer(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("outer", *args, **kwargs)

    def reduceat(self, *args: Any, **kwargs: Any) -> Any:
        return self._method("reduceat", *args, **kwargs)

    def at(self, a: Any, indices: Any, b: Any = None) -> None:
        _check_device(a, b)
        LAUNCHES[f"{self.name}.at"] += 1
        arr, shape, impl = a._a, a._a.shape, self._impl

        def run() -> None:
            idx = _cupy_index(indices, shape)
            if b is None:
                impl.at(arr, idx)
            else:
                impl.at(arr, idx, _unwrap(b))

        cap = _capture_on()
        if cap is not None:
            _record(cap, f"{self.name}.at", run)
            return
        KERNELS[f"{self.name}.at"] += 1
        run()


def _on_device(name: str, run: Callable[[], np.ndarray], src: np.ndarray, dev: int) -> ndarray:
    """A device array computed from device array `src` (a copy, a cast, or `src` itself)."""
    out = _wrap(run(), dev)
    cap = _capture_on()
    if cap is not None:
        _record_fresh(cap, name, run, out, (src,))
    return out


def _asarray(a: Any, dtype: Any = None, order: Any = None, *, blocking: bool = False) -> ndarray:
    if isinstance(a, ndarray):
        src = a._a
        if a._dev != _State.current:  # CuPy copies to the current device
            return _on_device("asarray", lambda: np.array(src, dtype=dtype, order=order or "K",
                                                          copy=True), src, _State.current)
        return _on_device("asarray", lambda: np.asarray(src, dtype=dtype, order=order), src,
                          a._dev)
    return _from_host(np.array(a, dtype=dtype, order=order or "K", copy=True))


def _array(obj: Any, dtype: Any = None, copy: bool = True, order: str = "K", subok: bool = False,
           ndmin: int = 0, *, blocking: bool = False) -> ndarray:
    if isinstance(obj, ndarray):
        _check_device(obj)
        src = obj._a
        return _on_device("array", lambda: np.array(src, dtype=dtype, copy=copy, order=order,
                                                    ndmin=ndmin), src, _State.current)
    return _from_host(np.array(obj, dtype=dtype, copy=True, order=order, ndmin=ndmin))


def _from_host(host: np.ndarray) -> ndarray:
    """A device array of host data: CuPy fills a 0-d one with a kernel (during a capture, the
    value is baked into the graph) and copies any other from the host (refused in a capture)."""
    cap = _capture_on()
    if cap is None:
        return _wrap(host, _State.current)
    if host.ndim:
        raise _fail(cap, _UNSUPPORTED)
    out = _wrap(host.copy(), _State.current)
    _record_fresh(cap, "fill", lambda: host, out, ())
    return out


def _asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None,
             blocking: bool = True) -> np.ndarray:
    LAUNCHES["asnumpy"] += 1  # a device-to-host copy
    _no_host_transfer("asnumpy")
    if isinstance(a, ndarray):
        host = np.array(a._a, order=order, copy=True)
    else:
        host = np.asarray(a, order=order)
    if out is not None:
        out[...] = host
        return out
    return host


def _from_dlpack(obj: Any, *, device: Any = None, copy: Any = None) -> ndarray:
    if isinstance(obj, ndarray):
        return _wrap(obj._a, obj._dev)
    kind = int(obj.__dlpack_device__()[0]) if hasattr(obj, "__dlpack_device__") else None
    raise RuntimeError(f"Unsupported device in DLTensor (device type {kind}): CuPy imports "
                       "device memory only")


def _get_array_module(*args: Any) -> Any:
    found: set = set()
    _devices(args, found)
    return _MODULE["cupy"] if found or any(isinstance(a, ndarray) for a in args) else np


def _kernel_class(name: str) -> type:
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        self.args = args

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        _not_simulated(f"{name} (CUDA C compiles only on a GPU)")

    return type(name, (), {"__init__": init, "__call__": call})


def _submodule(path: str, names: FrozenSet[str], source: Any) -> types.ModuleType:
    m = types.ModuleType(f"cupy.{path}")
    for name in names:
        impl = getattr(source, name, None)
        if isinstance(impl, type) or impl is None or not callable(impl):
            setattr(m, name, impl if impl is not None else _stub(f"cupy.{path}.{name}"))
        else:
            setattr(m, name, _function(f"{path}.{name}", impl))
    return m


_MODULE: Dict[str, types.ModuleType] = {}
_SPECIAL: Dict[str, Any] = {
    "asarray": _asarray, "array": _array, "asnumpy": _asnumpy, "from_dlpack": _from_dlpack,
    "fromDlpack": _from_dlpack, "get_array_module": _get_array_module,
    "is_available": lambda: True,
}


def _take(a: Any, indices: Any, axis: Any = None, out: Any = None) -> ndarray:
    """cupy.take: out-of-range indices wrap around (CuPy has no 'raise' mode)."""
    _check_device(a, indices, out)
    return _gathered("take", lambda: np.take(_unwrap(a), _unwrap(indices), axis=axis,
                                             mode="wrap"), (a, indices))


def _gathered(name: str, run: Callable[[], Any], inputs: Any) -> ndarray:
    """A fresh array gathered from device arrays (recorded during a capture)."""
    res = _wrap(run(), _State.current)
    cap = _capture_on()
    if cap is not None:
        _record_fresh(cap, name, run, res, _unwrap(inputs))
    return res


def _take_along_axis(a: Any, indices: Any, axis: Any) -> ndarray:
    _check_device(a, indices)

    def run() -> np.ndarray:
        x, i = _unwrap(a), _unwrap(indices)
        n = x.shape[axis if axis is not None else 0] if x.ndim else 1
        return np.take_along_axis(x, np.mod(i, n) if n else i, axis)

    return _gathered("take_along_axis", run, (a, indices))


def _put(a: Any, ind: Any, v: Any, mode: str = "wrap") -> None:
    _check_device(a, ind, v)
    cap = _capture_on()
    if cap is not None:
        _record(cap, "put", lambda: np.put(a._a, _unwrap(ind), _unwrap(v), mode=mode))
        return
    np.put(a._a, _unwrap(ind), _unwrap(v), mode=mode)


_SPECIAL.update(take=_take, take_along_axis=_take_along_axis, put=_put)


def _special_module(s: Surface) -> types.ModuleType:
    import scipy.special as sp  # scikit-learn's dependency, in the test environment

    m = types.ModuleType("cupyx.scipy.special")
    for name, loops in s.special_types.items():
        impl = getattr(sp, name, None)
        setattr(m, name, ufunc(name, impl, loops) if impl is not None
                else _stub(f"cupyx.scipy.special.{name}"))
    return m


@functools.cache
def build() -> Tuple[types.ModuleType, types.ModuleType]:
    """(cupy, cupyx) doubles, built once from `surface()`."""
    s = surface()
    _finish_ndarray(s)
    cp = types.ModuleType("cupy")
    cp.__version__ = s.version  # type: ignore[attr-defined]
    for name, kind in s.namespace.items():
        if name in _SPECIAL:
            obj: Any = _SPECIAL[name]
        elif kind == "numpy":
            obj = getattr(np, name)
        elif kind == "value":
            obj = s.values[name]
        elif kind == "ufunc":
            impl = getattr(np, name, None)
            obj = ufunc(name, impl, s.ufunc_types[name]) if isinstance(impl, np.ufunc) \
                else _stub(f"cupy.{name}")
        elif kind == "class":
            obj = {"ndarray": ndarray, "ufunc": ufunc}.get(name) or (
                _kernel_class(name) if name.endswith(("Kernel", "Module")) else
                getattr(np, name, None) or _kernel_class(name))
        elif kind == "module":  # the ones ops use are built below; others stay empty
            obj = types.ModuleType(f"cupy.{name}")
        else:
            impl = getattr(np, name, None)
            obj = _function(name, impl) if callable(impl) else _stub(f"cupy.{name}")
        setattr(cp, name, obj)
    cp.random = _submodule("random", s.submodules["random"], np.random)  # type: ignore[attr-defined]
    cp.linalg = _submodule("linalg", s.submodules["linalg"], np.linalg)  # type: ignore[attr-defined]
    cp.fft = _submodule("fft", s.submodules["fft"], np.fft)  # type: ignore[attr-defined]
    strides = _submodule("lib.stride_tricks", s.submodules["lib.stride_tricks"],
                         np.lib.stride_tricks)
    cp.lib = types.SimpleNamespace(stride_tricks=strides)  # type: ignore[attr-defined]
    cupyx = types.ModuleType("cupyx")
    for name in s.cupyx:
        setattr(cupyx, name, _stub(f"cupyx.{name}"))
    cupyx.scatter_add = lambda a, slices, value: _scatter(np.add, a, slices, value)
    cupyx.scatter_max = lambda a, slices, value: _scatter(np.maximum, a, slices, value)
    cupyx.scatter_min = lambda a, slices, value: _scatter(np.minimum, a, slices, value)
    cupyx.scipy = types.ModuleType("cupyx.scipy")  # type: ignore[attr-defined]
    cupyx.scipy.special = _special_module(s)  # type: ignore[attr-defined]
    _MODULE["cupy"] = cp
    return cp, cupyx


def install(monkeypatch: Any) -> Any:
    """The strict double as `cupy` (two devices) and a fresh CUDA backend over it, its CUDA C
    kernels replaced by recorders; undone when the test ends. Returns the backend module."""
    cp, cupyx = build()
    runtime = fake_cupy.working_cupy()  # fresh device state, streams, events, pools
    for name in ("cuda", "get_default_memory_pool", "get_default_pinned_memory_pool"):
        monkeypatch.setattr(cp, name, getattr(runtime, name), raising=False)
    capture_runtime(runtime)
    LAUNCHES.clear()
    KERNELS.clear()
    KERNEL_CALLS.clear()
    CAPTURED.clear()
    _CAPTURES.clear()
    fresh = fake_cupy.install(monkeypatch, cp)
    for name, mod in (("cupyx", cupyx), ("cupyx.scipy", cupyx.scipy),
                      ("cupyx.scipy.special", cupyx.scipy.special)):
        monkeypatch.setitem(sys.modules, name, mod)
    record_cuda_c_kernels(monkeypatch, fresh)
    return fresh


def capture_runtime(runtime: types.ModuleType) -> None:
    """Gives the double's runtime (fake_cupy.working_cupy) CUDA stream capture: capturing
    streams, cupy.cuda.graph.Graph, the capture modes, private memory pools and a
    deviceSynchronize that refuses to run during a capture."""
    cuda = runtime.cuda  # type: ignore[attr-defined]
    fake_cupy.Stream._current = None
    cuda.Stream = Stream
    cuda.get_current_stream = lambda: fake_cupy.Stream._current or Stream.null
    cuda.graph = types.ModuleType("cupy.cuda.graph")
    cuda.graph.Graph = cuda.Graph = Graph
    cuda.MemoryPool = _PrivatePool
    cuda.using_allocator = _using_allocator
    for name, value in CAPTURE_MODES.items():
        setattr(cuda.runtime, name, value)
    sync = cuda.runtime.deviceSynchronize

    def device_synchronize() -> None:
        if _CAPTURES:
            raise _fail(None, _UNSUPPORTED)
        sync()

    cuda.runtime.deviceSynchronize = device_synchronize


def _gelu_reference(x: ndarray) -> ndarray:
    import scipy.special as sp

    a = x._a.astype(np.float64)
    return _wrap((a * 0.5 * (1 + sp.erf(a / np.sqrt(2)))).astype(x._a.dtype), x._dev)


def _gelu_backward_reference(g: ndarray, x: ndarray) -> ndarray:
    import scipy.special as sp

    a = x._a.astype(np.float64)
    d = 0.5 * (1 + sp.erf(a / np.sqrt(2))) + a * np.exp(-0.5 * a * a) / np.sqrt(2 * np.pi)
    return _wrap((g._a * d).astype(x._a.dtype), x._dev)


def _adam_reference(p: ndarray, g: ndarray, m: ndarray, v: ndarray, vmax: Any, a: Any) -> bool:
    """optim/adam.py's formulation on the arrays, in place (what the CUDA kernel computes)."""
    pa, ma, va = p._a, m._a, v._a
    gg = -g._a if a.maximize else g._a
    if a.weight_decay != 0:
        if a.decoupled:
            pa *= 1 - a.lr * a.weight_decay
        else:
            gg = a.weight_decay * pa + gg
    w = 1 - a.beta1
    ma[...] = w * (gg - ma) + ma if w < 0.5 else -a.beta1 * (gg - ma) + gg
    va[...] = (1 - a.beta2) * gg * gg + va * a.beta2
    top = va
    if vmax is not None:
        np.maximum(vmax._a, va, out=vmax._a)
        top = vmax._a
    pa += (-a.step_size * ma) / (np.sqrt(top) / a.bias_correction2_sqrt + a.eps)
    return True


def _adam_multi_reference(params: Any, grads: Any, ms: Any, vs: Any, vmaxs: Any,
                          a: Any) -> bool:
    """cuda_kernels.adam_step_multi: _adam_reference over each parameter (one launch)."""
    dt = params[0]._a.dtype
    cols = [params, grads, ms, vs] + ([vmaxs] if vmaxs is not None else [])
    if dt.kind != "f" or dt.itemsize < 4 or any(
            x._a.dtype != dt or not x._a.flags.c_contiguous for col in cols for x in col):
        return False
    for i, p in enumerate(params):
        _adam_reference(p, grads[i], ms[i], vs[i], None if vmaxs is None else vmaxs[i], a)
    return True


def _sgd_reference(p: ndarray, g: ndarray, buf: Any, a: Any) -> bool:
    """optim/sgd.py's formulation on the arrays, in place (what the CUDA kernel computes)."""
    gg = -g._a if a.maximize else g._a
    if a.weight_decay != 0:
        gg = a.weight_decay * p._a + gg
    if buf is not None:
        b = buf._a
        b[...] = gg if a.init_buffer else (1 - a.dampening) * gg + b * a.momentum
        gg = a.momentum * b + gg if a.nesterov else b
    p._a[...] = -a.lr * gg + p._a
    return True


def _ln_takes(*arrays: Any) -> bool:
    dt = arrays[0]._a.dtype
    return dt.kind == "f" and dt.itemsize >= 4 and all(
        a is None or (a._a.dtype == dt and a._a.flags.c_contiguous) for a in arrays)


def _layer_norm_reference(x: ndarray, w: Any, b: Any, eps: float) -> Any:
    """cuda_kernels.layer_norm over the last dim of (N, D) x, in float64, rounded once."""
    if not _ln_takes(x, w, b):
        return None
    a = x._a.astype(np.float64)
    mean = a.mean(axis=1, keepdims=True)
    y = (a - mean) / np.sqrt(((a - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    if w is not None:
        y = y * w._a
    if b is not None:
        y = y + b._a
    return _wrap(y.astype(x._a.dtype), x._dev)


def _layer_norm_backward_reference(g: ndarray, x: ndarray, w: Any, eps: float,
                                   want_xhat: bool) -> Any:
    """cuda_kernels.layer_norm_backward: (dx, xhat or None), norm.py's raw formula in float64."""
    if not _ln_takes(g, x, w):
        return None
    a, gg = x._a.astype(np.float64), g._a.astype(np.float64)
    d = a.shape[1]
    mean = a.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(((a - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    gw = gg * w._a if w is not None else gg
    ds, db = (gw * a).sum(axis=1, keepdims=True), gw.sum(axis=1, keepdims=True)
    bb = (db * mean - ds) * rstd ** 3 / d
    cc = -bb * mean - db * rstd / d
    dx = _wrap((rstd * gw + bb * a + cc).astype(x._a.dtype), x._dev)
    xhat = _wrap(((a - mean) * rstd).astype(x._a.dtype), x._dev) if want_xhat else None
    return dx, xhat


def _softmax_reference(x: ndarray, log: bool) -> Any:
    """cuda_kernels.softmax over the last dim, in float64, rounded once."""
    if not _ln_takes(x) or x._a.ndim == 0 or x._a.size == 0:
        return None
    a = x._a.astype(np.float64)
    e = a - a.max(axis=-1, keepdims=True)
    s = np.exp(e).sum(axis=-1, keepdims=True)
    return _wrap((e - np.log(s) if log else np.exp(e) / s).astype(x._a.dtype), x._dev)


def _softmax_backward_reference(g: ndarray, y: ndarray, log: bool) -> Any:
    if not _ln_takes(g, y) or y._a.ndim == 0 or y._a.size == 0 or g._a.shape != y._a.shape:
        return None
    gg, yy = g._a.astype(np.float64), y._a.astype(np.float64)
    if log:
        dx = gg - np.exp(yy) * gg.sum(axis=-1, keepdims=True)
    else:
        dx = (gg - (gg * yy).sum(axis=-1, keepdims=True)) * yy
    return _wrap(dx.astype(y._a.dtype), y._dev)


def _threshold_backward_reference(g: ndarray, y: ndarray) -> Any:
    if g._a.dtype != y._a.dtype or g._a.shape != y._a.shape or g._a.dtype.kind != "f":
        return None
    return _wrap(np.where(y._a <= 0, g._a.dtype.type(0), g._a), g._dev)


# what a CUDA C kernel computes, in NumPy (not counted: the kernel is one launch); kernels
# without one here answer None and the op computes with its array formulation
_REFERENCES: Dict[str, Callable[..., Any]] = {
    "gelu": _gelu_reference, "gelu_backward": _gelu_backward_reference,
    "adam_step": _adam_reference, "adam_step_multi": _adam_multi_reference,
    "sgd_step": _sgd_reference,
    "layer_norm": _layer_norm_reference, "layer_norm_backward": _layer_norm_backward_reference,
    "softmax": _softmax_reference, "softmax_backward": _softmax_backward_reference,
    "threshold_backward": _threshold_backward_reference,
}


def record_cuda_c_kernels(monkeypatch: Any, backend: Any) -> None:
    """The backend's CUDA C kernels need a GPU: each becomes a recorder that logs its name and
    argument shapes, counts one launch, and computes the kernel's result with a NumPy reference
    where there is one (else answers None: the op's array formulation runs)."""
    table = backend.kernels
    for name in backend.CUDA_C_KERNELS:
        def recorder(*args: Any, _name: str = name, **kwargs: Any) -> Any:
            shapes = [a.shape for a in args if isinstance(a, ndarray)] or [
                a.shape for a in (args[0] if args and isinstance(args[0], list) else ())]
            KERNEL_CALLS.append((_name, tuple(tuple(s) for s in shapes)))
            ref = _REFERENCES.get(_name)
            if ref is None:
                return None
            cap = _capture_on()
            if cap is not None:
                return _captured_kernel(cap, _name, ref, args, kwargs)
            with _quiet():
                out = ref(*args, **kwargs)
            if out is not None:  # None: arrays the kernel does not take, nothing launched
                KERNELS[_name] += 1
            return out

        monkeypatch.setattr(table, name, recorder)


def _captured_kernel(cap: _Capture, name: str, ref: Callable[..., Any], args: Any,
                     kwargs: Any) -> Any:
    """A CUDA C kernel launched during a capture: recorded with its arguments as the launch
    bakes them in (arrays by reference, scalars and argument structs by value), not run: the
    arrays it writes in place keep what they held, its fresh results hold garbage."""
    fa, fk = _frozen(tuple(args)), {k: _frozen(v) for k, v in kwargs.items()}
    ins = _flat(fa) + _flat(tuple(fk.values()))
    saved = [(a, a.copy()) for a in ins]
    with _quiet():
        out = ref(*fa, **fk)
    for a, before in saved:
        a[...] = before
    if out is not None:  # None: arrays the kernel does not take, nothing launched
        _record_fresh(cap, name, lambda: ref(*fa, **fk), out, ins, always=True)
    return out
