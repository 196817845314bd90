"""DLPack exchange, as torch.utils.dlpack: `from_dlpack(obj)` wraps another library's array or
tensor without a copy; `to_dlpack(t)` is t's memory as a DLPack capsule."""

from __future__ import annotations

import ctypes
from typing import Any, Tuple

from .. import _backends
from .._tensor import Tensor, _wrap

__all__ = ["from_dlpack", "to_dlpack"]


def capsule_device(capsule: Any) -> Tuple[int, int]:
    """(DLPack device type, device index) read from a bare capsule's DLTensor: a legacy
    ``dltensor`` capsule points at DLManagedTensor (the DLTensor first), a versioned
    ``dltensor_versioned`` one at DLManagedTensorVersioned (version, manager_ctx, deleter and
    flags before the DLTensor). In both, the DLTensor is (data pointer, device type, index)."""
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    name = api.PyCapsule_GetName(capsule)
    if name not in (b"dltensor", b"dltensor_versioned"):
        raise BufferError(f"from_dlpack: a capsule named {name!r} is not an unconsumed DLPack "
                          "capsule (each capsule can be consumed once)")
    ptr = api.PyCapsule_GetPointer(capsule, name)
    if name == b"dltensor_versioned":
        ptr += 8 + 3 * ctypes.sizeof(ctypes.c_void_p)  # version; manager_ctx, deleter; flags
        ptr += 8 - ctypes.sizeof(ctypes.c_void_p)  # flags is a uint64 on 32-bit hosts too
    dev = (ctypes.c_int32 * 2).from_address(ptr + ctypes.sizeof(ctypes.c_void_p))
    return int(dev[0]), int(dev[1])


class _Capsule:
    """A bare capsule from `to_dlpack`, given the protocol that array libraries consume; its
    device is read from the DLTensor it holds."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> Any:
        return capsule_device(self._capsule)


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A tensor sharing memory with ext_tensor (an object with `__dlpack__`, or a capsule)."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor.detach()
    if not hasattr(ext_tensor, "__dlpack__"):
        if type(ext_tensor).__name__ != "PyCapsule":
            raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, "
                            f"got {type(ext_tensor).__name__}")
        ext_tensor = _Capsule(ext_tensor)
    return _wrap(_backends.from_dlpack(ext_tensor))


def to_dlpack(tensor: Tensor) -> Any:
    """tensor's memory as a DLPack capsule (as torch's, also of a tensor that requires grad).
    The capsule is versioned where the array library can make one: a legacy capsule carries no
    read-only flag, so NumPy would import it read-only."""
    t = tensor.detach()
    try:
        return t.__dlpack__(max_version=(1, 0))
    except TypeError:  # an array library without versioned capsules
        return t.__dlpack__()
