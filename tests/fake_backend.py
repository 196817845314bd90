"""A NumPy-backed fake device ("fake"), kept only for the NCCL-over-MPI worker
(distributed/fake_nccl.py); every other test runs on the strict CuPy double's simulated GPU
(devices/strict_cupy.py). Its arrays are an ndarray subclass, which NumPy's functions
preserve, so an op on fake tensors stays on the fake device exactly as CuPy ops stay on a GPU.

There are two fake devices, ``fake:0`` and ``fake:1``, as a machine has ``cuda:0`` and
``cuda:1``: like a CuPy array, a FakeArray carries its device index (all arrays share one type),
and new arrays go to the current fake device (`device_context`, CuPy's ``cuda.Device(i)``)."""

from __future__ import annotations

import contextlib
import types
from typing import Any, Iterator

import numpy as np
from rustgrad._backends import cpu as _cpu
from rustgrad._backends import device, register

SLOT = 16  # storage accounting slot of fake:0 (the last ones; see rust/core/src/storage.rs)
COUNT = 2  # fake:0 and fake:1
_current = [0]  # the current fake device's index (CuPy's current device)


class FakeArray(np.ndarray):
    _fake_index: int

    def __array_finalize__(self, obj: Any) -> None:
        # views and NumPy results inherit their source's device; new arrays take the current one
        self._fake_index = getattr(obj, "_fake_index", _current[0])

    def nonzero(self) -> tuple:  # NumPy's method drops the subclass; CuPy's stays on the device
        return tuple(_tag(i, self._fake_index) for i in super().nonzero())


def _tag(a: np.ndarray, index: int) -> FakeArray:
    out = a.view(FakeArray)
    out._fake_index = index
    return out


def _index_in(args: Any) -> int:
    # the device of the first fake array among a call's arguments (lists included, as cat's)
    for a in args:
        if isinstance(a, FakeArray):
            return a._fake_index
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, FakeArray):
                    return b._fake_index
    return _current[0]


def _on_device(out: Any, index: int) -> Any:
    # NumPy hands back scalars where CuPy keeps 0-d arrays on the device (nan_to_num, sum, ...)
    if isinstance(out, np.generic):
        return _tag(np.asarray(out), index)
    if isinstance(out, np.ndarray) and not isinstance(out, FakeArray):
        return _tag(out, index)
    return out


class _Namespace:
    """NumPy, or one of its submodules (as `xp.lib.stride_tricks`), whose functions return
    FakeArrays, as CuPy's return device arrays."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._module, name)
        if isinstance(attr, types.ModuleType):
            return _Namespace(attr)
        if not callable(attr) or isinstance(attr, type):
            return attr

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            index = _index_in(args)
            if isinstance(out, tuple):
                return tuple(_on_device(o, index) for o in out)
            return _on_device(out, index)

        return wrapped


class _FakeBackend(_Namespace):
    DEVICE_TYPE = "fake"
    ndarray = FakeArray

    @staticmethod
    def device_of(array: Any) -> device:
        return device("fake", array._fake_index)

    @staticmethod
    def device_index(array: Any) -> int:
        return array._fake_index

    @staticmethod
    def storage_slot(array: Any) -> int:
        return SLOT - array._fake_index

    @staticmethod
    def to_numpy(array: Any) -> np.ndarray:
        return array.view(np.ndarray)

    @staticmethod
    def from_numpy(array: np.ndarray, dev: Any = None) -> FakeArray:
        index = None if dev is None else device(dev).index  # dev may be a string
        return _tag(np.array(array, copy=True), _current[0] if index is None else index)

    @staticmethod
    def add_at(target: Any, index: Any, values: Any) -> None:
        np.add.at(target.view(np.ndarray), index, np.asarray(values))

    @staticmethod
    def current_index() -> int:
        return _current[0]

    @staticmethod
    def device_count() -> int:
        return COUNT

    @staticmethod
    @contextlib.contextmanager
    def device_context(index: int) -> Iterator[None]:
        """New arrays go to fake:index inside (CuPy's ``with cupy.cuda.Device(index)``)."""
        if not 0 <= index < COUNT:
            raise RuntimeError(f"fake device index {index} out of range (there are {COUNT})")
        before, _current[0] = _current[0], index
        try:
            yield
        finally:
            _current[0] = before


# the CPU backend's namespace (NumPy plus data_ptr/as_strided), its arrays re-tagged as fake
backend = _FakeBackend(_cpu)
register(FakeArray, backend)
