"""A NumPy-backed fake device ("fake"), so device dispatch, transfers and cross-device errors
are exercised on every machine. Its arrays are an ndarray subclass, which NumPy's functions
preserve, so an op on fake tensors stays on the fake device exactly as CuPy ops stay on a GPU."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
from rustgrad._backends import cpu as _cpu
from rustgrad._backends import device, register

SLOT = 16  # storage accounting slot (the last one; see rust/core/src/storage.rs)


class FakeArray(np.ndarray):
    def nonzero(self) -> tuple:  # NumPy's method drops the subclass; CuPy's stays on the device
        return tuple(i.view(FakeArray) for i in super().nonzero())


def _on_device(out: Any) -> Any:
    # NumPy hands back scalars where CuPy keeps 0-d arrays on the device (nan_to_num, sum, ...)
    if isinstance(out, np.generic):
        return np.asarray(out).view(FakeArray)
    if isinstance(out, np.ndarray) and not isinstance(out, FakeArray):
        return out.view(FakeArray)
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
            if isinstance(out, tuple):
                return tuple(_on_device(o) for o in out)
            return _on_device(out)

        return wrapped


class _FakeBackend(_Namespace):
    DEVICE_TYPE = "fake"
    ndarray = FakeArray

    @staticmethod
    def device_of(array: Any) -> device:
        return device("fake", 0)

    @staticmethod
    def storage_slot(array: Any) -> int:
        return SLOT

    @staticmethod
    def to_numpy(array: Any) -> np.ndarray:
        return array.view(np.ndarray)

    @staticmethod
    def from_numpy(array: np.ndarray, dev: Any = None) -> FakeArray:
        return np.array(array, copy=True).view(FakeArray)

    @staticmethod
    def add_at(target: Any, index: Any, values: Any) -> None:
        np.add.at(target.view(np.ndarray), index, np.asarray(values))


# the CPU backend's namespace (NumPy plus data_ptr/as_strided), its arrays re-tagged as fake
backend = _FakeBackend(_cpu)
register(FakeArray, backend)
