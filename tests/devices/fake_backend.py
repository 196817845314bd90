"""A NumPy-backed fake device ("fake"), so device dispatch, transfers and cross-device errors
are exercised on every machine. Its arrays are an ndarray subclass, which NumPy's functions
preserve, so an op on fake tensors stays on the fake device exactly as CuPy ops stay on a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
from rustgrad._backends import device, register

SLOT = 16  # storage accounting slot (the last one; see rust/core/src/storage.rs)


class FakeArray(np.ndarray):
    pass


class _FakeBackend:
    DEVICE_TYPE = "fake"
    ndarray = FakeArray

    def __getattr__(self, name: str) -> Any:
        attr = getattr(np, name)
        if not callable(attr) or isinstance(attr, type):
            return attr

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            if isinstance(out, np.ndarray) and not isinstance(out, FakeArray):
                return out.view(FakeArray)
            if isinstance(out, tuple):
                return tuple(
                    o.view(FakeArray) if isinstance(o, np.ndarray) else o for o in out
                )
            return out

        return wrapped

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


backend = _FakeBackend()
register(FakeArray, backend)
