"""Device dispatch: a device maps to one array namespace (NumPy on the CPU, CuPy on CUDA).

Ops never import numpy themselves; they ask for the namespace of their inputs' arrays
(`namespace_of(array)`) or of a device (`namespace(device)`). CuPy is optional: importing
rustgrad never requires it.
"""

from __future__ import annotations

import contextlib
from typing import Any, Tuple, Union

# device types `device()` accepts: torch's two, plus those of backends registered later (tests)
_DEVICE_TYPES = {"cpu", "cuda"}


class device:
    """`rustgrad.device('cpu')`, `device('cuda:1')`, printed as torch prints it.

    A device names where a tensor's values live: a type (``"cpu"`` or ``"cuda"``) and, for a
    particular GPU, an index. Constructing one never needs the device to exist, so
    ``device("cuda")`` works on a machine without a GPU; placing a tensor there does not.
    Devices compare equal to each other and to their strings when type and index match, and
    hash by (type, index).

    Args:
        type (str, int or rustgrad.device): ``"cpu"``, ``"cuda"``, or with an index ``"cuda:1"``;
            a device is copied; an int N is ``"cuda:N"``, as in torch.
        index (int, optional): the device's index, when the string has none.

    Example::

        >>> d = torch.device("cuda:1")
        >>> d
        device(type='cuda', index=1)
        >>> d.type, d.index, str(d)
        ('cuda', 1, 'cuda:1')
        >>> torch.device("cuda", 1) == "cuda:1"
        True
        >>> torch.tensor([1.0]).device
        device(type='cpu')
    """

    # a dict of slots gives each attribute a docstring (inspect.getdoc and help() read it)
    __slots__ = {
        "type": "The device type: ``'cpu'`` or ``'cuda'``.",
        "index": "The device's index (``1`` for ``'cuda:1'``), or None when none was given.",
    }

    def __init__(self, type: Union[str, int, device], index: Union[int, None] = None) -> None:
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool):  # torch: an int is a GPU
            if type < 0:
                raise RuntimeError("Device index must not be negative")
            self.type, self.index = "cuda", type
            return
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string, got {type.__class__.__name__}")
        if ":" in type:
            if index is not None:
                raise RuntimeError(
                    f"type (string) must not include an index because index was passed explicitly: {type}"
                )
            type, idx = type.split(":", 1)
            index = int(idx)
        if type not in _DEVICE_TYPES:
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type}"
            )
        self.type = type
        self.index = index

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


CPU = device("cpu")

# the cpu backend names CPU as its arrays' device: imported once CPU exists
from . import cpu  # noqa: E402

_BY_ARRAY_TYPE: dict = {cpu.ndarray: cpu}
_NDARRAY = cpu.ndarray


def namespace_of(array: Any) -> Any:
    """The backend module for an array (cpu, cuda or a registered test backend)."""
    try:
        return _BY_ARRAY_TYPE[type(array)]
    except KeyError:
        raise TypeError(f"no rustgrad backend holds arrays of type {type(array).__name__}") from None


def as_array(x: Any) -> Any:
    """A backend array for an op's result: NumPy turns 0-d results into scalars."""
    if type(x) in _BY_ARRAY_TYPE:
        return x
    if isinstance(x, cpu.generic):
        return cpu.asarray(x)
    for t in _BY_ARRAY_TYPE:
        if isinstance(x, t):
            return x
    raise TypeError(f"no rustgrad backend holds arrays of type {type(x).__name__}")


def register(array_type: type, backend: Any) -> None:
    """Registers a backend module for arrays of `array_type` (used by the CUDA and fake backends)."""
    _BY_ARRAY_TYPE[array_type] = backend
    _DEVICE_TYPES.add(backend.DEVICE_TYPE)


class _OnDevice:
    """A backend namespace whose functions run with `index` as the backend's current device, so
    that ``zeros(3, device="cuda:1")`` allocates on the second GPU (CuPy allocates on its
    current device). Used by creation and transfers only: ops take their inputs' namespace."""

    def __init__(self, backend: Any, index: int) -> None:
        self._backend = backend
        self._index = index

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._backend, name)
        if not callable(attr) or isinstance(attr, type):
            return attr
        backend, index = self._backend, self._index

        def on_device(*args: Any, **kwargs: Any) -> Any:
            with backend.device_context(index):
                return attr(*args, **kwargs)

        return on_device


_BOUND: dict = {}


def _backend_for_type(kind: str) -> Any:
    if kind == "cpu":
        return cpu
    if kind == "cuda":
        # every CUDA use passes here first: one clear error when CuPy or the driver is missing
        from . import cuda  # optional dependency: the CUDA backend imports CuPy

        cuda.require()
        return cuda
    for backend in _BY_ARRAY_TYPE.values():
        if backend.DEVICE_TYPE == kind:
            return backend
    raise RuntimeError(f"no backend for device {kind}")


def namespace(dev: Any) -> Any:
    """The backend module for a device (None means the cpu): NumPy's for ``"cpu"``, CuPy's
    for ``"cuda"`` (a RuntimeError naming the fix when CuPy or a GPU is missing), or a
    registered backend's. With an index (``"cuda:1"``) its functions allocate on that device."""
    d = dev if isinstance(dev, device) else device(dev) if dev is not None else CPU
    backend = _backend_for_type(d.type)
    if d.index is None or backend is cpu:
        return backend
    key = (d.type, d.index)
    bound = _BOUND.get(key)
    if bound is None:  # checked once per device
        if not 0 <= d.index < backend.device_count():
            raise RuntimeError(
                f"{d.type} device index {d.index} is out of range: there are "
                f"{backend.device_count()} {d.type} devices (CUDA error: invalid device ordinal)"
            )
        bound = _BOUND[key] = _OnDevice(backend, d.index)
    return bound


def resolve(dev: Any) -> device:
    """dev with its index: ``"cuda"`` is the current CUDA device (``cuda:0`` unless another
    was selected), as torch reads it when comparing a tensor's device with a target."""
    d = dev if isinstance(dev, device) else device(dev)
    if d.index is not None or d.type == "cpu":
        return d
    return device(d.type, _backend_for_type(d.type).current_index())


def device_guard(dev: Any) -> Any:
    """A context in which `dev` is its backend's current device (CuPy's ``cuda.Device(i)``);
    a no-op for the cpu and for a device without an index."""
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cpu" or d.index is None:
        return contextlib.nullcontext()
    return _backend_for_type(d.type).device_context(d.index)


def host_errstate(**kwargs: Any) -> Any:
    """A context with the host backend's floating-point error handling set as in
    ``numpy.errstate(**kwargs)`` (CuPy raises no such warnings)."""
    return cpu.errstate(**kwargs)


def _mismatch(a: Any, b: Any) -> RuntimeError:
    da = namespace_of(a).device_of(a)
    db = namespace_of(b).device_of(b)
    return RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{da} and {db}!"
    )


def check_same_device(a: Any, b: Any) -> None:
    """torch's "Expected all tensors to be on the same device" unless arrays a and b live on
    one device: the same array type and, for device arrays (all of one type, as CuPy's), the
    same index. Two NumPy arrays pass on the type check alone."""
    ta = type(a)
    if ta is not type(b):
        raise _mismatch(a, b)
    if ta is not _NDARRAY:
        backend = _BY_ARRAY_TYPE.get(ta)
        if backend is not None and backend.device_index(a) != backend.device_index(b):
            raise _mismatch(a, b)


def cpu_scalar_beside(a: Any, b: Any) -> Tuple[Any, Any]:
    """(a, b) with a 0-d CPU array moved to the other's device: torch takes a 0-d CPU tensor
    beside a device tensor as a scalar. Anything else is returned as it is."""
    ta, tb = type(a), type(b)
    if ta is _NDARRAY and tb is not _NDARRAY and a.ndim == 0 and tb in _BY_ARRAY_TYPE:
        backend = _BY_ARRAY_TYPE[tb]
        return backend.from_numpy(a, backend.device_of(b)), b
    if tb is _NDARRAY and ta is not _NDARRAY and b.ndim == 0 and ta in _BY_ARRAY_TYPE:
        backend = _BY_ARRAY_TYPE[ta]
        return a, backend.from_numpy(b, backend.device_of(a))
    return a, b


def check_all_same_device(arrays: Any) -> None:
    """check_same_device over a sequence of arrays (cat, stack, a loss and its weight...)."""
    it = iter(arrays)
    first = next(it, None)
    for a in it:
        if type(a) is not _NDARRAY or type(first) is not _NDARRAY:
            check_same_device(first, a)


# DLPack device types (dlpack.h's DLDeviceType) -> rustgrad device type
_DLPACK_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda", 13: "cuda"}  # CPU, CUDA, CUDAHost, CUDAManaged


def from_dlpack(obj: Any) -> Any:
    """An array of the backend for obj's device, sharing obj's memory through DLPack. obj is
    anything with `__dlpack__`/`__dlpack_device__` (an ndarray, a CuPy array, a torch tensor)."""
    dev_type, index = obj.__dlpack_device__()
    kind = _DLPACK_DEVICES.get(int(dev_type))
    if kind is None:
        raise BufferError(f"rustgrad.from_dlpack: unsupported DLPack device type {int(dev_type)}")
    backend = namespace(device(kind, int(index)) if kind == "cuda" else CPU)
    return backend.from_dlpack(obj)
