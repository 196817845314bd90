"""rustgrad.save / rustgrad.load: a safe format, never pickle.

A checkpoint is a zip archive holding `structure.json` (the nested containers, numbers,
strings, dtypes, devices and tensor references) and one `.npy` file per distinct tensor,
written and read by NumPy with `allow_pickle=False`. Loading therefore never runs code from
the file; objects of other types are refused when saving. Two references to one tensor load
as one tensor; views are saved as copies.

`load` also reads, told apart by their first bytes:
- safetensors files (a flat dict of tensors; `save` writes one when the path ends in
  `.safetensors`), through `rustgrad.utils.safetensors`;
- checkpoints written by `torch.save` (its zip format, and the legacy pre-1.6 format), through
  `_torch_pickle`: a restricted unpickler that builds tensors from an allow-list of torch's
  rebuild functions and refuses any other global, so no code in the file runs and torch is
  never imported.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import tokenize
import zlib
from collections import Counter, OrderedDict
from typing import IO, TYPE_CHECKING, Any, Callable, Dict, List, Optional, Union

import numpy as _np

from . import _dtype, _torch_pickle
from ._backends import device as _device
from ._size import Size
from ._tensor import Tensor

if TYPE_CHECKING:
    import zipfile

# zipfile and json are imported where save/load use them: `import rustgrad` pays nothing for
# them (zipfile brings pathlib, shutil and urllib, ~6 ms)

__all__ = ["save", "load"]

FileLike = Union[str, "os.PathLike[str]", IO[bytes]]
_FORMAT = "rustgrad-checkpoint/1"
_STRUCTURE = "structure.json"


class _Writer:
    def __init__(self) -> None:
        self.arrays: List[Any] = []
        self.memo: Dict[int, int] = {}

    def encode(self, obj: Any) -> Any:
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return obj
        if isinstance(obj, float):
            if math.isfinite(obj):
                return obj
            return {"$": "float", "v": repr(obj)}
        if isinstance(obj, Tensor):
            return self._tensor(obj)
        if isinstance(obj, _dtype.dtype):
            return {"$": "dtype", "name": obj.name}
        if isinstance(obj, _device):
            return {"$": "device", "v": str(obj)}
        if isinstance(obj, Size):
            return {"$": "size", "items": list(obj)}
        if isinstance(obj, Counter):
            return {"$": "counter", "items": [[self.encode(k), v] for k, v in obj.items()]}
        if isinstance(obj, OrderedDict):
            return {"$": "odict",
                    "items": [[self.encode(k), self.encode(v)] for k, v in obj.items()]}
        if isinstance(obj, dict):
            return {"$": "dict",
                    "items": [[self.encode(k), self.encode(v)] for k, v in obj.items()]}
        if isinstance(obj, list):
            return {"$": "list", "items": [self.encode(v) for v in obj]}
        if isinstance(obj, tuple):
            return {"$": "tuple", "items": [self.encode(v) for v in obj]}
        if isinstance(obj, (set, frozenset)):
            return {"$": "set", "items": [self.encode(v) for v in obj]}
        if isinstance(obj, _np.ndarray):
            return {"$": "ndarray", "ref": self._array(obj)}
        if isinstance(obj, _np.generic):
            return self.encode(obj.item())
        raise TypeError(
            f"rustgrad.save: cannot save an object of type {type(obj).__module__}."
            f"{type(obj).__qualname__} (only tensors, numbers, strings, None, dtypes, devices "
            "and dict/list/tuple/set containers of them are saved; the format never pickles)"
        )

    def _array(self, arr: Any) -> int:
        self.arrays.append(arr)
        return len(self.arrays) - 1

    def _tensor(self, t: Tensor) -> Dict[str, Any]:
        from .nn.parameter import Parameter

        key = id(t)
        if key not in self.memo:
            self.memo[key] = self._array(t._backend.to_numpy(t._data))
        return {"$": "tensor", "ref": self.memo[key], "requires_grad": bool(t.requires_grad),
                "parameter": isinstance(t, Parameter), "device": str(t.device)}


class _Reader:
    def __init__(self, arrays: Callable[[int], Any], map_location: Any) -> None:
        self.arrays = arrays
        self.map_location = map_location
        self.tensors: Dict[int, Tensor] = {}

    def decode(self, node: Any) -> Any:
        if not isinstance(node, dict):
            if isinstance(node, list):
                raise ValueError("rustgrad.load: malformed checkpoint (bare list)")
            return node
        kind = node.get("$")
        if kind == "float":
            return float(node["v"])
        if kind == "tensor":
            return self._tensor(node)
        if kind == "ndarray":
            return self.arrays(int(node["ref"]))
        if kind == "dtype":
            name = node["name"]
            d = _dtype.bool_ if name == "bool" else getattr(_dtype, name, None)
            if not isinstance(d, _dtype.dtype):
                raise ValueError(f"rustgrad.load: unknown dtype {name!r}")
            return d
        if kind == "device":
            return _parsed_device(node["v"])
        if kind == "size":
            return Size(int(s) for s in node["items"])
        items = node.get("items")
        if kind == "counter":
            return Counter({self._key(k): v for k, v in items})
        if kind == "odict":
            return OrderedDict((self._key(k), self.decode(v)) for k, v in items)
        if kind == "dict":
            return {self._key(k): self.decode(v) for k, v in items}
        if kind == "list":
            return [self.decode(v) for v in items]
        if kind == "tuple":
            return tuple(self.decode(v) for v in items)
        if kind == "set":
            return {self._key(v) for v in items}
        raise ValueError(f"rustgrad.load: malformed checkpoint (unknown node {kind!r})")

    def _key(self, node: Any) -> Any:
        key = self.decode(node)
        if isinstance(key, (list, dict, set)):
            raise ValueError("rustgrad.load: malformed checkpoint (unhashable key)")
        return key

    def _tensor(self, node: Dict[str, Any]) -> Tensor:
        from ._creation import from_numpy
        from .nn.parameter import Parameter

        ref = int(node["ref"])
        if ref in self.tensors:
            return self.tensors[ref]
        saved = node.get("device")
        t = from_numpy(self.arrays(ref))
        parameter = bool(node.get("parameter"))
        requires_grad = bool(node.get("requires_grad", parameter))
        if requires_grad and not (t.is_floating_point() or t.is_complex()):
            raise _Malformed(f"a tensor of dtype {t.dtype} is marked as requiring grad (only "
                             "floating point and complex tensors can)")
        t = _placer(self.map_location)(t, saved)
        if parameter:
            t = Parameter(t, requires_grad)
        elif requires_grad:
            t.requires_grad_(True)
        self.tensors[ref] = t
        return t


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True) -> None:
    """Saves tensors, state_dicts and nested containers of them to a path or binary file.

    The file is a zip archive of a JSON structure and one ``.npy`` array per distinct tensor
    (see the module docstring); nothing is pickled, so loading it can never run code. What can
    be saved: tensors (Parameters stay Parameters), dicts (OrderedDict and Counter kept),
    lists, tuples, sets, Sizes, numbers, strings, None, dtypes, devices and NumPy arrays,
    nested freely; any other object raises a TypeError. Two references to one
    tensor are stored once and load as one tensor; a view is stored as a copy of its values.
    A path ending in ``.safetensors`` is written as a safetensors file instead (a flat dict of
    tensors only).

    Args:
        obj: what to save.
        f (str, os.PathLike or binary file): where to write it; a file object is written from
            its current position and left open.
        pickle_module: must be None: rustgrad never pickles (a ValueError otherwise).
        pickle_protocol, _use_new_zipfile_serialization: accepted for torch compatibility and
            ignored.

    Example::

        >>> import io
        >>> buf = io.BytesIO()
        >>> torch.save({"w": torch.tensor([1.0, 2.0]), "step": 3}, buf)
        >>> _ = buf.seek(0)
        >>> torch.load(buf)
        {'w': tensor([1., 2.]), 'step': 3}
    """
    if pickle_module is not None:
        raise ValueError("rustgrad.save never pickles; pickle_module is not accepted")
    if isinstance(f, (str, os.PathLike)) and os.fspath(f).endswith(".safetensors"):
        from .utils import safetensors

        safetensors.save_file(obj, f)
        return
    import json
    import zipfile

    writer = _Writer()
    structure = {"format": _FORMAT, "root": writer.encode(obj)}
    own = isinstance(f, (str, os.PathLike))
    fh: Any = open(f, "wb") if own else f
    try:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as z:
            z.writestr(_STRUCTURE, json.dumps(structure))
            for i, arr in enumerate(writer.arrays):
                buf = io.BytesIO()
                _np.lib.format.write_array(buf, _np.asarray(arr), allow_pickle=False)
                z.writestr(f"data/{i}.npy", buf.getvalue())
    finally:
        if own:
            fh.close()


# A member may be stored or deflated; a deflated one may not claim to inflate by more than this
# factor (zip bombs), nor may any member exceed MAX_MEMBER_BYTES, checked before inflating.
MAX_INFLATION_RATIO = 1000
MAX_MEMBER_BYTES = 1 << 40


class _Malformed(Exception):
    """What is wrong with a checkpoint, before the file's name is added."""


def _parsed_device(spec: Any) -> _device:
    try:
        return _device(spec)
    except (RuntimeError, TypeError, ValueError) as e:
        raise _Malformed(f"bad device {spec!r} in the file ({e})") from None


# NumPy's header parser raises these (tokenize and ast included) for a malformed header
_NPY_HEADER_ERRORS = (ValueError, TypeError, EOFError, OSError, SyntaxError,
                      tokenize.TokenError, RecursionError, MemoryError, OverflowError)


def _read_npy(name: str, raw: bytes) -> Any:
    """Reads a `.npy` member, after checking that its header's shape and dtype fit the bytes it
    holds: a header may declare any shape, and NumPy allocates it before reading."""
    fmt = _np.lib.format
    stream = io.BytesIO(raw)
    try:
        version = fmt.read_magic(stream)
        if version == (1, 0):
            shape, _, dtype = fmt.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, _, dtype = fmt.read_array_header_2_0(stream)
        elif version == (3, 0) and hasattr(_np.lib, "_format_impl"):
            # written for dtypes with non-latin1 field names; NumPy has no public reader
            shape, _, dtype = _np.lib._format_impl._read_array_header(stream, version)
        else:
            raise _Malformed(f"member {name!r} has unsupported .npy format version {version}")
    except _NPY_HEADER_ERRORS as e:
        raise _Malformed(f"member {name!r} is not a valid .npy array (bad header: "
                         f"{type(e).__name__}: {e})") from None
    if dtype.hasobject:
        raise _Malformed(f"member {name!r} holds Python objects, which are never loaded "
                         "(it would need unpickling: allow_pickle=False)")
    need = dtype.itemsize
    for n in shape:
        need *= n
    have = len(raw) - stream.tell()
    if need != have:
        raise _Malformed(f"member {name!r} declares shape {tuple(shape)} of {dtype} "
                         f"({need} bytes) but holds {have} bytes of data")
    try:
        return fmt.read_array(io.BytesIO(raw), allow_pickle=False)
    except _NPY_HEADER_ERRORS as e:
        raise _Malformed(f"member {name!r} is not a valid .npy array ({e})") from None


def _file_name(f: Any) -> str:
    if isinstance(f, (str, os.PathLike)):
        return os.fspath(f)
    return str(getattr(f, "name", "<stream>"))


def _checked_read(z: zipfile.ZipFile, name: str) -> bytes:
    import zipfile

    try:
        info = z.getinfo(name)
    except KeyError:
        raise _Malformed(f"member {name!r} is missing") from None
    if info.file_size > MAX_MEMBER_BYTES:
        raise _Malformed(f"member {name!r} declares {info.file_size} bytes, more than the bound "
                         f"of {MAX_MEMBER_BYTES}")
    if (info.compress_type != zipfile.ZIP_STORED
            and info.file_size > MAX_INFLATION_RATIO * max(info.compress_size, 1)):
        raise _Malformed(f"member {name!r} would inflate {info.compress_size} bytes to "
                         f"{info.file_size} (more than {MAX_INFLATION_RATIO}x): refused")
    try:
        with z.open(info) as member:
            data = member.read(info.file_size + 1)  # never past the size the header declares
    except zipfile.BadZipFile as e:
        raise _Malformed(f"member {name!r} is corrupt ({e})") from None
    except (zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError, OSError) as e:
        # e.g. a central directory pointing before the archive's start: a negative seek
        raise _Malformed(f"member {name!r} cannot be read ({e})") from None
    if len(data) != info.file_size:
        raise _Malformed(f"member {name!r} holds {len(data)} bytes, its header says "
                         f"{info.file_size}")
    return data


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: Optional[bool] = None, mmap: Any = None, **pickle_load_args: Any) -> Any:
    """Loads a rustgrad checkpoint, a safetensors file or a `torch.save` checkpoint.

    The format is told from the file's first bytes. Loading never runs code from the file,
    whatever ``weights_only`` says: torch checkpoints are read by an unpickler that allows only
    the globals that rebuild tensors and raises ``pickle.UnpicklingError`` naming any other.
    A file that is not a well-formed checkpoint (truncated, corrupt, a member whose size does
    not match its header, a zip bomb) raises one RuntimeError naming the file and what is wrong
    with it.

    Args:
        f (str, os.PathLike or binary file): what to read; a file object is read from its
            current position and left open.
        map_location: where the tensors go: a device (a string or ``rustgrad.device``), a dict
            from the saved device's string to the wanted one, or a callable
            ``(tensor, saved_device) -> tensor``. Default: the device each was saved on.
        pickle_module, weights_only, mmap, pickle_load_args: accepted for torch compatibility
            and ignored (loading is always weights-only).

    Returns:
        The saved object, with its containers, numbers and strings as they were saved.

    Example::

        >>> import io
        >>> buf = io.BytesIO()
        >>> torch.save([torch.arange(3), "tag"], buf)
        >>> _ = buf.seek(0)
        >>> torch.load(buf, map_location="cpu")
        [tensor([0, 1, 2]), 'tag']
    """
    own = isinstance(f, (str, os.PathLike))
    fh: Any = open(f, "rb") if own else f
    try:
        return _load(fh, map_location)
    except _Malformed as e:
        raise RuntimeError(f"rustgrad.load: {_file_name(f)}: {e}") from None
    except _torch_pickle.TorchFormatError as e:
        raise RuntimeError(f"rustgrad.load: {_file_name(f)}: malformed torch checkpoint: "
                           f"{e}") from None
    except _torch_pickle.RefusedGlobal as e:
        raise pickle.UnpicklingError(f"rustgrad.load: {_file_name(f)}: {e}") from None
    finally:
        if own:
            fh.close()


def _placer(map_location: Any) -> Callable[[Tensor, Any], Tensor]:
    """How a loaded cpu tensor saved on `saved` is moved, as map_location asks."""
    def place(t: Tensor, saved: Any) -> Tensor:
        target: Any = map_location
        if isinstance(target, dict):
            target = target.get(saved, saved)
        if target is None:
            target = saved
        if target is saved and saved is not None:
            # the file's own device string: a bad one is the file's fault, not a failed move
            target = _parsed_device(saved)
        if callable(target):
            return target(t, saved)
        if target is not None and str(target) != "cpu":
            t = t.to(target)
        return t
    return place


def _is_safetensors(head: bytes, size: int) -> bool:
    # an 8-byte little-endian header length, then the JSON header itself
    return (len(head) >= 10 and head[8:9] == b"{"
            and int.from_bytes(head[:8], "little") <= size - 8)


def _load(fh: Any, map_location: Any) -> Any:
    import json
    import zipfile

    if not (hasattr(fh, "seekable") and fh.seekable()):
        fh = io.BytesIO(fh.read())
    start = fh.tell()
    head = fh.read(len(_torch_pickle.LEGACY_MAGIC))
    size = fh.seek(0, io.SEEK_END) - start
    fh.seek(start)
    if head == _torch_pickle.LEGACY_MAGIC:
        return _torch_pickle.load_legacy(fh, _placer(map_location))
    if _is_safetensors(head, size):
        from .utils import safetensors

        try:
            tensors = safetensors._from_bytes(fh.read())
        except TypeError as e:
            raise _Malformed(str(e)) from None
        except Exception as e:  # safetensors' own SafetensorError for a malformed header
            raise _Malformed(f"not a valid safetensors file ({e})") from None
        place = _placer(map_location)
        return {k: place(v, "cpu") for k, v in tensors.items()}
    try:
        z = zipfile.ZipFile(fh, "r")
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError) as e:
        raise _Malformed(f"not a rustgrad checkpoint (not a zip archive: {e}), nor a torch or "
                         "safetensors file") from None
    with z:
        names = z.namelist()
        if _STRUCTURE not in names:
            if any(n.endswith("/data.pkl") and n.count("/") == 1 for n in names):
                return _torch_pickle.load_zip(names, lambda n: _checked_read(z, n),
                                              _placer(map_location))
            raise _Malformed("not a rustgrad checkpoint (no structure.json), nor a torch "
                             "checkpoint (no data.pkl)")
        try:
            structure = json.loads(_checked_read(z, _STRUCTURE).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise _Malformed(f"structure.json is not valid JSON text ({e})") from None
        if not isinstance(structure, dict) or "root" not in structure:
            raise _Malformed("structure.json has no root object")
        if structure.get("format") != _FORMAT:
            raise _Malformed(f"unsupported checkpoint format {structure.get('format')!r}")
        cache: Dict[int, Any] = {}

        def array(i: int) -> Any:
            if i not in cache:
                name = f"data/{i}.npy"
                cache[i] = _read_npy(name, _checked_read(z, name))
            return cache[i]

        try:
            return _Reader(array, map_location).decode(structure["root"])
        except _Malformed:
            raise
        except (KeyError, TypeError, AttributeError, ValueError, RecursionError) as e:
            what = f"missing field {e}" if isinstance(e, KeyError) else str(e)
            raise _Malformed(f"malformed structure.json ({type(e).__name__}: {what})") from None
