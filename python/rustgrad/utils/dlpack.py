"""DLPack exchange, as torch.utils.dlpack: `from_dlpack(obj)` wraps another library's array or
tensor without a copy; `to_dlpack(t)` is t's memory as a DLPack capsule."""

from __future__ import annotations

from typing import Any

from .. import _backends
from .._tensor import Tensor

__all__ = ["from_dlpack", "to_dlpack"]


class _Capsule:
    """A bare capsule from `to_dlpack`, given the protocol that array libraries consume. A capsule
    does not say its device; it is read as host memory, as the legacy protocol's CPU case."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> Any:
        return (1, 0)


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A tensor sharing memory with ext_tensor (an object with `__dlpack__`, or a capsule)."""
    from .._creation import _wrap

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
