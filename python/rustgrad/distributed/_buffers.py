"""Contiguous buffers over tensors' values for a backend's calls, and writing results back.

A collective writes into a tensor's storage in place, outside autograd (as torch's c10d ops
do), then bumps the tensor's version counter as any in-place write does, so that a value saved
for backward and overwritten by a collective is caught.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

__all__ = ["Staged", "stage", "write_into"]


class Staged:
    """``array``: a C-contiguous flat array with the tensor's values (the tensor's own memory
    when it can be, else a copy); ``writeback()`` puts the array's values into the tensor."""

    __slots__ = ("tensor", "array", "copied")

    def __init__(self, tensor: Any, array: Any, copied: bool) -> None:
        self.tensor, self.array, self.copied = tensor, array, copied

    def writeback(self) -> None:
        """Makes the tensor hold the array's values (after a collective wrote the array)."""
        t = self.tensor
        if self.copied:
            write_into(t, self.array)
        else:
            t._bump_version()


def stage(t: Any, host: bool) -> Staged:
    """The tensor's values as a flat contiguous array: a NumPy one when ``host``, else one on
    the tensor's device."""
    data = t._data
    if host and not isinstance(data, np.ndarray):
        return Staged(t, np.ascontiguousarray(t._backend.to_numpy(data)).reshape(-1), True)
    if data.flags.c_contiguous:
        return Staged(t, data.reshape(-1), False)
    return Staged(t, t._backend.ascontiguousarray(data).reshape(-1), True)


def write_into(t: Any, array: Any, version: Optional[bool] = True) -> None:
    """Writes a flat array of ``t.numel()`` values into ``t``'s storage (any device), in place."""
    data = t._data
    if isinstance(array, np.ndarray) and not isinstance(data, np.ndarray):
        array = t._backend.from_numpy(np.ascontiguousarray(array), t.device)
    data[...] = array.reshape(data.shape)
    if version:
        t._bump_version()
