"""Reading checkpoints written by `torch.save`, without torch and without running pickled code.

torch's zip format holds `<name>/data.pkl` (a pickle of the containers, whose tensors name their
storages by persistent id) and one raw member `<name>/data/<key>` per storage; the legacy format
(`_use_new_zipfile_serialization=False`) is a run of pickles followed by the raw storages.

`data.pkl` is read by `_WeightsUnpickler`, whose `find_class` hands out only an allow-list of
tensor-rebuilding globals, as torch's `weights_only=True` unpickler does, and refuses every other
global with `pickle.UnpicklingError` before anything is called. What it hands out are bound
methods and fresh marker objects, never module-level objects, so a BUILD opcode in a hostile file
cannot change state that outlives the load. Tensors come back as `_PendingTensor`s; `resolve`
then copies each out of its storage's bytes, after checking that offset, size and stride stay
inside the storage.
"""

from __future__ import annotations

import io
import pickle
import struct
from collections import Counter, OrderedDict
from typing import Any, Callable, Dict, List, Tuple

import numpy as _np

from . import _dtype

__all__ = ["LEGACY_MAGIC", "RefusedGlobal", "TorchFormatError", "load_zip", "load_legacy"]

# The first pickle of a legacy torch file: protocol 2, the magic number 0x1950a86a20f9469cfc6c.
LEGACY_MAGIC = b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little") + b"."
_LEGACY_PROTOCOL = 1001


class TorchFormatError(Exception):
    """What is wrong with a torch checkpoint (the caller names the file)."""


# torch's typed storage classes and the element type each holds.
_STORAGE_DTYPES = {
    "DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
}
# Element types rustgrad cannot store, by what they become on loading.
_WIDENED = {"bfloat16": "float32"}
_NP_ITEM = {"float64": "<f8", "float32": "<f4", "float16": "<f2", "int64": "<i8", "int32": "<i4",
            "int16": "<i2", "int8": "i1", "uint8": "u1", "bool": "?", "bfloat16": "<u2",
            "uint16": "<u2", "uint32": "<u4", "uint64": "<u8", "complex64": "<c8",
            "complex128": "<c16"}
_TORCH_DTYPE_NAMES = set(_NP_ITEM) | {"half", "float", "double", "long", "int", "short"}
_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "long": "int64",
            "int": "int32", "short": "int16"}


class _StorageType:
    """What `torch.<X>Storage` / `torch.storage.UntypedStorage` unpickles to here."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


class _DtypeRef:
    """What a pickled `torch.<dtype>` global unpickles to; `resolve` swaps in rustgrad's dtype."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _Storage:
    __slots__ = ("key", "dtype", "numel", "location")

    def __init__(self, key: str, dtype: str, numel: int, location: str) -> None:
        self.key, self.dtype, self.numel, self.location = key, dtype, numel, location


class _PendingTensor:
    __slots__ = ("storage", "offset", "size", "stride", "requires_grad", "dtype", "parameter")

    def __init__(self, storage: _Storage, offset: int, size: Tuple[int, ...],
                 stride: Tuple[int, ...], requires_grad: bool, dtype: str) -> None:
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride
        self.requires_grad, self.dtype, self.parameter = requires_grad, dtype, False


class RefusedGlobal(pickle.UnpicklingError):
    """A global outside the allow-list: the load stops before anything is called."""


def _refusal(module: str, name: str) -> RefusedGlobal:
    return RefusedGlobal(
        f"Weights only load failed. Unsupported global: GLOBAL {module}.{name} is not one of "
        "the tensor-rebuilding globals rustgrad allows. rustgrad never unpickles arbitrary "
        "objects, whatever weights_only says: only tensors, parameters, numbers, strings and "
        "plain containers load from torch checkpoints (for a pickled nn.Module or other "
        "Python object, save and load its state_dict instead)."
    )


def _ints(x: Any, what: str) -> Tuple[int, ...]:
    if not isinstance(x, (tuple, list)) or not all(type(v) is int for v in x):
        raise TorchFormatError(f"{what} is not a tuple of ints: {x!r}")
    return tuple(x)


class _WeightsUnpickler(pickle.Unpickler):
    """An unpickler that builds tensors from an allow-list of globals and refuses the rest."""

    def __init__(self, file: Any, storages: Dict[str, _Storage]) -> None:
        super().__init__(file, encoding="utf-8")
        self.storages = storages
        self.allowed: Dict[Tuple[str, str], Any] = {
            ("collections", "OrderedDict"): self._ordered_dict,
            ("collections", "Counter"): self._counter,
            ("builtins", "set"): self._set,
            ("builtins", "frozenset"): self._frozenset,
            ("builtins", "bytearray"): self._bytearray,
            ("builtins", "complex"): self._complex,
            ("_codecs", "encode"): self._encode,
            ("torch", "Size"): self._size,
            ("torch", "device"): self._device,
            ("torch._utils", "_rebuild_tensor_v2"): self._rebuild_tensor_v2,
            ("torch._utils", "_rebuild_tensor_v3"): self._rebuild_tensor_v3,
            ("torch._utils", "_rebuild_parameter"): self._rebuild_parameter,
            ("torch._utils", "_rebuild_parameter_with_state"): self._rebuild_parameter,
        }

    # ---- the allow-list --------------------------------------------------------------------
    def find_class(self, module: str, name: str) -> Any:
        if module == "__builtin__":  # protocol 2 names builtins by their Python 2 module
            module = "builtins"
        fn = self.allowed.get((module, name))
        if fn is not None:
            return fn
        if module in ("torch", "torch.storage") and name == "UntypedStorage":
            return _StorageType("uint8")
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(_STORAGE_DTYPES[name])
        if module == "torch" and name in _TORCH_DTYPE_NAMES:
            return _DtypeRef(_ALIASES.get(name, name))
        raise _refusal(module, name)

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage"):
            raise TorchFormatError(f"unknown persistent id {pid!r}")
        kind, key, location, numel = pid[1:5]
        if len(pid) == 6 and pid[5] is not None:
            raise TorchFormatError("legacy storage views are not supported")
        if not isinstance(kind, _StorageType) or not isinstance(kind.dtype, str):
            raise TorchFormatError(f"persistent id {pid!r} names no storage type")
        if not isinstance(key, str) or type(numel) is not int or numel < 0:
            raise TorchFormatError(f"malformed persistent id {pid!r}")
        if key not in self.storages:
            self.storages[key] = _Storage(key, kind.dtype, numel, str(location))
        return self.storages[key]

    def _rebuild_tensor_v2(self, storage: Any, storage_offset: Any, size: Any, stride: Any,
                           requires_grad: Any = False, backward_hooks: Any = None,
                           metadata: Any = None) -> _PendingTensor:
        if not isinstance(storage, _Storage):
            raise TorchFormatError("_rebuild_tensor_v2 got no storage")
        return self._pending(storage, storage_offset, size, stride, requires_grad, storage.dtype)

    def _rebuild_tensor_v3(self, storage: Any, storage_offset: Any, size: Any, stride: Any,
                           requires_grad: Any, backward_hooks: Any, dtype: Any,
                           metadata: Any = None) -> _PendingTensor:
        if not isinstance(storage, _Storage) or not isinstance(dtype, _DtypeRef):
            raise TorchFormatError("_rebuild_tensor_v3 got no storage or no dtype")
        return self._pending(storage, storage_offset, size, stride, requires_grad, dtype.name)

    def _pending(self, storage: _Storage, offset: Any, size: Any, stride: Any,
                 requires_grad: Any, dtype: str) -> _PendingTensor:
        if type(offset) is not int or offset < 0:
            raise TorchFormatError(f"storage offset {offset!r} is not a non-negative int")
        size, stride = _ints(size, "size"), _ints(stride, "stride")
        if len(size) != len(stride):
            raise TorchFormatError(f"size {size} and stride {stride} differ in length")
        return _PendingTensor(storage, offset, size, stride, bool(requires_grad), dtype)

    def _rebuild_parameter(self, data: Any, requires_grad: Any, backward_hooks: Any = None,
                           state: Any = None) -> _PendingTensor:
        # Python attributes a parameter carried (state) are dropped: they are not weights.
        if not isinstance(data, _PendingTensor):
            raise TorchFormatError("_rebuild_parameter got no tensor")
        p = _PendingTensor(data.storage, data.offset, data.size, data.stride,
                           bool(requires_grad), data.dtype)
        p.parameter = True
        return p

    @staticmethod
    def _ordered_dict(*args: Any) -> Any:
        return OrderedDict(*args)

    @staticmethod
    def _counter(*args: Any) -> Any:
        return Counter(*args)

    @staticmethod
    def _set(*args: Any) -> Any:
        return set(*args)

    @staticmethod
    def _frozenset(*args: Any) -> Any:
        return frozenset(*args)

    @staticmethod
    def _bytearray(*args: Any) -> Any:
        return bytearray(*args)

    @staticmethod
    def _complex(*args: Any) -> Any:
        return complex(*args)

    @staticmethod
    def _encode(text: Any, encoding: Any = "utf-8") -> bytes:
        # how protocol 2 pickles bytes: _codecs.encode(str, "latin1")
        if not isinstance(text, str) or encoding not in ("latin1", "latin-1", "utf-8"):
            raise TorchFormatError("_codecs.encode is allowed only on text to latin1/utf-8")
        return text.encode(encoding)

    @staticmethod
    def _size(*args: Any) -> Any:
        from ._size import Size

        return Size(_ints(args[0] if args else (), "torch.Size"))

    @staticmethod
    def _device(*args: Any) -> Any:
        from ._backends import device

        return device(*args)


def _unpickle(data: bytes, storages: Dict[str, _Storage]) -> Any:
    try:
        return _WeightsUnpickler(io.BytesIO(data), storages).load()
    except (RefusedGlobal, TorchFormatError):
        raise
    except RecursionError:
        raise TorchFormatError("the pickle nests too deeply") from None
    except Exception as e:  # a malformed pickle raises whatever its opcodes run into
        raise TorchFormatError(f"the pickle is malformed ({type(e).__name__}: {e})") from None


# ---- turning pending tensors into rustgrad tensors -----------------------------------------
Place = Callable[[Any, str], Any]


class _Resolver:
    def __init__(self, storage_bytes: Callable[[_Storage], bytes], big_endian: bool,
                 place: Place) -> None:
        self.storage_bytes = storage_bytes
        self.big_endian = big_endian
        self.place = place
        self.arrays: Dict[str, Any] = {}
        self.tensors: Dict[int, Any] = {}
        self.widened: List[str] = []
        self.memo: Dict[int, Any] = {}
        self.keep: List[Any] = []

    def storage_array(self, s: _Storage, dtype: str) -> Any:
        if s.key not in self.arrays:
            raw = self.storage_bytes(s)
            self.arrays[s.key] = raw
        raw = self.arrays[s.key]
        item = _np.dtype(_NP_ITEM[dtype])
        if self.big_endian:
            item = item.newbyteorder(">")
        if len(raw) % item.itemsize:
            raise TorchFormatError(f"storage {s.key!r} holds {len(raw)} bytes, not a whole "
                                   f"number of {dtype} elements")
        return _np.frombuffer(raw, dtype=item)

    def tensor(self, p: _PendingTensor) -> Any:
        from ._creation import from_numpy
        from .nn.parameter import Parameter

        if id(p) in self.tensors:
            return self.tensors[id(p)]
        if p.dtype not in _NP_ITEM:
            raise TorchFormatError(f"unknown element type {p.dtype!r}")
        stored = p.dtype
        target = _WIDENED.get(stored, stored)
        if getattr(_dtype, "bool_" if target == "bool" else target, None) not in (
                _dtype.float16, _dtype.float32, _dtype.float64, _dtype.uint8, _dtype.int8,
                _dtype.int16, _dtype.int32, _dtype.int64, _dtype.bool_):
            raise TorchFormatError(f"a tensor of type torch.{stored}, which rustgrad does not "
                                   "store")
        flat = self.storage_array(p.storage, stored)
        n = 1
        for s in p.size:
            n *= s
        if n and any(st < 0 for st in p.stride):
            raise TorchFormatError(f"negative stride {p.stride}")
        last = p.offset + sum((sz - 1) * st for sz, st in zip(p.size, p.stride)) if n else 0
        if n and last >= flat.size or p.offset > flat.size:
            raise TorchFormatError(
                f"a tensor of size {list(p.size)}, stride {list(p.stride)} and offset "
                f"{p.offset} reaches past its storage {p.storage.key!r} of {flat.size} elements")
        if n:
            view = _np.lib.stride_tricks.as_strided(
                flat[p.offset:], p.size, tuple(st * flat.itemsize for st in p.stride),
                writeable=False)
        else:
            view = _np.empty(p.size, dtype=flat.dtype)
        if stored == "bfloat16":  # bfloat16 is float32's top half: widening is exact
            arr = (view.astype("<u4") << 16).view("<f4").astype(_np.float32)
        elif stored == "bool":  # any nonzero byte is True, as torch reads it
            arr = view.view(_np.uint8) != 0
        else:
            arr = _np.array(view, dtype=view.dtype.newbyteorder("="), order="C", copy=True)
        if stored != target:
            self.widened.append(stored)
        t = from_numpy(arr)
        if p.requires_grad and not (t.is_floating_point() or t.is_complex()):
            raise TorchFormatError(f"a tensor of type torch.{stored} is marked as requiring "
                                   "grad (only floating point and complex tensors can)")
        t = self.place(t, p.storage.location)
        if p.parameter:
            t = Parameter(t, p.requires_grad)
        elif p.requires_grad:
            t.requires_grad_(True)
        self.tensors[id(p)] = t
        return t

    def resolve(self, obj: Any) -> Any:
        # Containers are resolved once each, however often the pickle refers to them (memo):
        # a pickle of lists nested two-by-two would otherwise cost 2**depth steps.
        key = id(obj)
        if key in self.memo:
            return self.memo[key]
        self.keep.append(obj)  # ids stay unique while the load runs
        if isinstance(obj, _PendingTensor):
            out: Any = self.tensor(obj)
        elif isinstance(obj, _DtypeRef):
            name = obj.name if isinstance(obj.name, str) else ""
            out = getattr(_dtype, "bool_" if name == "bool" else name, None)
            if not isinstance(out, _dtype.dtype):
                raise TorchFormatError(f"unknown dtype torch.{obj.name}")
        elif isinstance(obj, (_Storage, _StorageType)):
            raise TorchFormatError("bare storages (not inside a tensor) are not supported")
        elif isinstance(obj, dict):
            self.memo[key] = obj
            pairs = [(self.resolve(k), self.resolve(v)) for k, v in obj.items()]
            obj.clear()
            obj.update(pairs)
            extra: Dict[str, Any] = getattr(obj, "__dict__", None) or {}  # e.g. _metadata
            for k, v in list(extra.items()):
                extra[k] = self.resolve(v)
            out = obj
        elif isinstance(obj, list):
            self.memo[key] = obj
            obj[:] = [self.resolve(v) for v in obj]
            out = obj
        elif type(obj) is tuple:  # a torch.Size holds ints only and stays as it is
            out = tuple(self.resolve(v) for v in obj)
        elif isinstance(obj, (set, frozenset)):
            out = type(obj)(self.resolve(v) for v in obj)
        else:
            out = obj
        self.memo[key] = out
        return out


def _finish(root: Any, storage_bytes: Callable[[_Storage], bytes], big_endian: bool,
            place: Place) -> Any:
    import warnings

    r = _Resolver(storage_bytes, big_endian, place)
    try:
        out = r.resolve(root)
    except RecursionError:
        raise TorchFormatError("the checkpoint nests too deeply") from None
    except (TypeError, ValueError, AttributeError, KeyError) as e:  # e.g. an unhashable key
        raise TorchFormatError(f"{type(e).__name__}: {e}") from None
    if r.widened:
        warnings.warn("rustgrad has no bfloat16: bfloat16 tensors were loaded as float32 "
                      "(exactly, every bfloat16 value is a float32 value)", stacklevel=3)
    return out


def load_zip(names: List[str], read: Callable[[str], bytes], place: Place) -> Any:
    """Loads a torch zip checkpoint; `read(name)` returns a member's bytes."""
    pkl = next((n for n in names if n.endswith("/data.pkl") and n.count("/") == 1), None)
    if pkl is None:
        raise TorchFormatError("no <name>/data.pkl member")
    prefix = pkl[: -len("data.pkl")]
    order = b"little"
    if prefix + "byteorder" in names:
        order = read(prefix + "byteorder").strip()
        if order not in (b"little", b"big"):
            raise TorchFormatError(f"unknown byteorder {order!r}")
    storages: Dict[str, _Storage] = {}
    root = _unpickle(read(pkl), storages)

    def storage_bytes(s: _Storage) -> bytes:
        name = f"{prefix}data/{s.key}"
        if name not in names:
            raise TorchFormatError(f"member {name!r} is missing")
        raw = read(name)
        want = s.numel * _np.dtype(_NP_ITEM[s.dtype]).itemsize
        if len(raw) < want:
            raise TorchFormatError(f"member {name!r} holds {len(raw)} bytes, its storage needs "
                                   f"{want}")
        return raw[:want]

    return _finish(root, storage_bytes, order == b"big", place)


def load_legacy(fh: Any, place: Place) -> Any:
    """Loads a checkpoint of torch's legacy (pre-1.6, non-zip) format from an open stream."""
    storages: Dict[str, _Storage] = {}

    def next_pickle() -> Any:
        try:
            return _WeightsUnpickler(fh, storages).load()
        except (RefusedGlobal, TorchFormatError):
            raise
        except Exception as e:
            raise TorchFormatError(f"the pickle is malformed ({type(e).__name__}: {e})") from None

    next_pickle()  # the magic number, checked by the caller
    if next_pickle() != _LEGACY_PROTOCOL:
        raise TorchFormatError("unsupported legacy protocol version")
    info = next_pickle()
    if not isinstance(info, dict) or info.get("little_endian", True) is not True:
        raise TorchFormatError("only little-endian legacy checkpoints are supported")
    root = next_pickle()
    keys = next_pickle()
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise TorchFormatError("the storage key list is malformed")
    data: Dict[str, bytes] = {}
    for key in keys:
        s = storages.get(key)
        head = fh.read(8)
        if s is None or len(head) != 8:
            raise TorchFormatError(f"storage {key!r} is missing or truncated")
        (numel,) = struct.unpack("<q", head)
        want = numel * _np.dtype(_NP_ITEM[s.dtype]).itemsize
        if numel < 0 or numel != s.numel:
            raise TorchFormatError(f"storage {key!r} declares {numel} elements, expected "
                                   f"{s.numel}")
        here = fh.tell()
        if want > fh.seek(0, io.SEEK_END) - here:  # never allocate what the file cannot hold
            raise TorchFormatError(f"storage {key!r} is truncated")
        fh.seek(here)
        raw = fh.read(want)
        if len(raw) != want:
            raise TorchFormatError(f"storage {key!r} is truncated")
        data[key] = raw

    def storage_bytes(s: _Storage) -> bytes:
        if s.key not in data:
            raise TorchFormatError(f"storage {s.key!r} is missing")
        return data[s.key]

    return _finish(root, storage_bytes, False, place)

