"""rustgrad.save / rustgrad.load: a safe format for weights, torch's pickles for whole objects.

A checkpoint of tensors, numbers, strings and containers (a state_dict, an optimizer's state)
is a zip archive holding `structure.json` (the nested containers, numbers, strings, dtypes,
devices and tensor references) and one `.npy` file per distinct tensor, written and read by
NumPy with `allow_pickle=False`: loading it never runs code from the file. Two references to
one tensor load as one tensor; views are saved as copies.

Anything else (a whole nn.Module, any Python object) is pickled as torch.save pickles it, in
torch's zip layout (`_torch_pickle.dump_objects`). As in torch 2.6+, loading such a file needs
`weights_only=False`, which unpickles it with Python's pickle and so can run any code the file
names; the default, weights_only=True, refuses it with torch's message naming the global.

`load` also reads, told apart by their first bytes:
- safetensors files (a flat dict of tensors; `save` writes one when the path ends in
  `.safetensors`), through `rustgrad.utils.safetensors`;
- checkpoints written by `torch.save` (its zip format, and the legacy pre-1.6 format), through
  `_torch_pickle`: with weights_only=True, a restricted unpickler that builds tensors from an
  allow-list of torch's rebuild functions and refuses any other global, so no code in the file
  runs; with weights_only=False (zip format only), Python's unpickler. torch is never imported.
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import pickle
import stat
import tokenize
import zipfile
import zlib
from collections import Counter, OrderedDict
from typing import IO, Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as _np

from . import _dtype, _torch_pickle
from ._backends import device as _device
from ._creation import from_numpy
from ._size import Size
from ._tensor import Tensor
from .nn.parameter import Parameter

# `import rustgrad` does not import this module (rustgrad.save and rustgrad.load import it on
# first use), so it pays nothing for zipfile (pathlib, shutil, urllib: ~6 ms) and json

__all__ = ["save", "load"]

FileLike = Union[str, "os.PathLike[str]", IO[bytes]]
_FORMAT = "rustgrad-checkpoint/1"
_STRUCTURE = "structure.json"


class _NotEncodable(TypeError):
    """An object the safe format cannot hold: `save` pickles the whole object instead."""


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
            if obj.dtype.hasobject:  # refused here, before any byte is written
                raise _NotEncodable(
                    f"rustgrad.save: cannot save a NumPy array of dtype {obj.dtype} (it holds "
                    "Python objects, which rustgrad's safe format does not hold)")
            return {"$": "ndarray", "ref": self._array(obj)}
        if isinstance(obj, _np.generic):
            return self.encode(obj.item())
        raise _NotEncodable(
            f"rustgrad.save: cannot save an object of type {type(obj).__module__}."
            f"{type(obj).__qualname__} (only tensors, numbers, strings, None, dtypes, devices "
            "and dict/list/tuple/set containers of them are saved in rustgrad's safe format)"
        )

    def _array(self, arr: Any) -> int:
        self.arrays.append(arr)
        return len(self.arrays) - 1

    def _tensor(self, t: Tensor) -> Dict[str, Any]:
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
    """Saves tensors, state_dicts and nested containers of them, or any picklable object (a
    whole model), to a path or binary file.

    Tensors, dicts (OrderedDict and Counter kept), lists, tuples, sets, Sizes, numbers,
    strings, None, dtypes, devices and NumPy arrays, nested freely, are written in rustgrad's
    safe format: a zip archive of a JSON structure and one ``.npy`` array per distinct tensor
    (see the module docstring), which loading reads without unpickling anything. Two
    references to one tensor are stored once and load as one tensor; a view is stored as a copy
    of its values. A path ending in ``.safetensors`` is written as a safetensors file instead
    (a flat dict of tensors only).

    Anything else (``rustgrad.save(model)``, an object of your own class) is pickled as
    ``torch.save`` pickles it, in torch's zip layout, its tensors as torch's rebuild calls and
    raw storages. Such a file loads only with ``load(f, weights_only=False)``, which unpickles
    it (running whatever code the file names: load only files you trust), and the classes it
    names must be importable then. An object that cannot be pickled raises a TypeError.

    Saving to a path never destroys what was there: the object is checked (and refused) before
    any byte is written, the file is written to a temporary file in the same directory, fsynced
    and renamed over the path; an exception, a full disk or a killed process leaves either the
    old file or the complete new one (torch writes the path in place).

    Args:
        obj: what to save.
        f (str, os.PathLike or binary file): where to write it; a file object is written from
            its current position and left open.
        pickle_module: the module whose ``Pickler`` pickles whole objects (default: Python's
            ``pickle``); the safe format never uses it.
        pickle_protocol (int): the pickle protocol of whole objects: 2 (torch's default) or 3
            (a higher one is written as 3).
        _use_new_zipfile_serialization: accepted for torch compatibility and ignored.

    Example::

        >>> import io
        >>> buf = io.BytesIO()
        >>> torch.save({"w": torch.tensor([1.0, 2.0]), "step": 3}, buf)
        >>> _ = buf.seek(0)
        >>> torch.load(buf)
        {'w': tensor([1., 2.]), 'step': 3}
        >>> buf = io.BytesIO()
        >>> torch.save(nn.Linear(2, 1), buf)  # a whole module: pickled
        >>> _ = buf.seek(0)
        >>> torch.load(buf, weights_only=False)
        Linear(in_features=2, out_features=1, bias=True)
    """
    if isinstance(f, (str, os.PathLike)) and os.fspath(f).endswith(".safetensors"):
        from .utils import safetensors  # cycle: utils.safetensors writes through _write_atomically

        safetensors.save_file(obj, f)
        return

    # Everything that can refuse the object is done before any byte is written: the structure
    # is encoded (or the object pickled) in memory.
    writer = _Writer()
    try:
        text: Optional[str] = json.dumps({"format": _FORMAT, "root": writer.encode(obj)})
    except _NotEncodable as refused:
        text = None
        try:
            pkl, storages = _torch_pickle.dump_objects(obj, pickle_module, pickle_protocol)
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            raise TypeError(f"{refused} and pickling it failed: {type(e).__name__}: {e}") from e

    def write(fh: IO[bytes]) -> None:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as z:
            if text is None:  # torch's layout
                z.writestr("archive/data.pkl", pkl)
                z.writestr("archive/.format_version", b"1")
                z.writestr("archive/.storage_alignment", b"64")
                z.writestr("archive/byteorder", b"little")
                for i, raw in enumerate(storages):
                    z.writestr(f"archive/data/{i}", raw)
                z.writestr("archive/version", b"3\n")
                return
            z.writestr(_STRUCTURE, text)
            for i, arr in enumerate(writer.arrays):
                buf = io.BytesIO()
                _np.lib.format.write_array(buf, _np.asarray(arr), allow_pickle=False)
                z.writestr(f"data/{i}.npy", buf.getvalue())

    if isinstance(f, (str, os.PathLike)):
        _write_atomically(f, write)
    else:
        write(f)


# ---- saving: all or nothing -----------------------------------------------------------------
def _open_temp(directory: str, base: str) -> Tuple[IO[bytes], str]:
    """Creates a new file next to the target, with the mode a new file gets (umask applied)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) \
        | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(directory, f".{base[:200]}.{os.urandom(6).hex()}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        return os.fdopen(fd, "wb"), tmp
    raise FileExistsError(errno.EEXIST, "no free temporary name", directory)


def _fsync_directory(directory: str) -> None:
    """Makes a rename in `directory` durable (POSIX; a no-op where directories cannot be
    opened or synced)."""
    if os.name != "posix":
        return
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some filesystems refuse fsync on a directory
        pass
    finally:
        os.close(fd)


def _write_atomically(path: Union[str, os.PathLike[str]],
                      write: Callable[[IO[bytes]], None]) -> None:
    """Writes a file so that `path` holds either its old content or the complete new one, never
    a part: `write(fh)` fills a temporary file in the same directory, which is flushed, fsynced
    and renamed over `path` (then the directory is fsynced); on any exception, KeyboardInterrupt
    included, the temporary file is removed and `path` is untouched.

    A path that names a device or a FIFO (e.g. /dev/null) has no file to replace: what `write`
    makes in memory is written into it. A symlink is followed: the file it points to is
    replaced.
    """
    target = os.path.realpath(os.fspath(path))
    try:
        old: Optional[os.stat_result] = os.stat(target)
    except FileNotFoundError:
        old = None
    if old is not None and not stat.S_ISREG(old.st_mode):
        buf = io.BytesIO()  # a device's position means nothing (zipfile needs one)
        write(buf)
        with open(target, "wb") as out:
            out.write(buf.getbuffer())
        return
    directory, base = os.path.split(target)
    try:
        fh, tmp = _open_temp(directory, base)
    except PermissionError:
        if old is None or not os.access(target, os.W_OK):
            raise
        # a writable file in a directory that is not: it can only be overwritten in place
        with open(target, "wb") as out:
            write(out)
        return
    try:
        with fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        if old is not None:  # the replaced file's permissions (and owner, where allowed)
            os.chmod(tmp, stat.S_IMODE(old.st_mode))
            if hasattr(os, "chown") and (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
                try:
                    os.chown(tmp, old.st_uid, old.st_gid)
                except OSError:
                    pass
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_directory(directory)


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

    The format is told from the file's first bytes. With ``weights_only=True`` (the default,
    as in torch 2.6+) loading never runs code from the file: torch checkpoints are read by an
    unpickler that allows only the globals that rebuild tensors and raises
    ``pickle.UnpicklingError`` naming any other (torch's message: a whole pickled model needs
    ``weights_only=False``). With ``weights_only=False`` a torch-format checkpoint (what
    ``save`` writes for a whole model or any Python object, or ``torch.save``'s zip files) is
    unpickled by Python's pickle: **this can run arbitrary code; use it only on files you
    trust.** Even then torch's own classes cannot be rebuilt (a whole torch model saved by
    torch): that raises ``pickle.UnpicklingError`` saying to save its state_dict instead.
    rustgrad's safe format, safetensors files and torch's legacy (pre-1.6) files always load
    weights-only.

    A file that is not a well-formed checkpoint (truncated, corrupt, a member whose size does
    not match its header, a zip bomb, a tensor reaching past its storage) raises one
    RuntimeError naming the file and what is wrong with it; a path that is not a regular file
    (a device, a FIFO, a symlink to one) is refused the same way without being read (a
    directory raises IsADirectoryError), and no read goes past the file's size. Where torch
    raises a TypeError (a tensor's geometry given as other types), so does rustgrad.

    Args:
        f (str, os.PathLike or binary file): what to read; a file object is read from its
            current position and left open.
        map_location: where the tensors go: a device (a string or ``rustgrad.device``), a dict
            from the saved device's string to the wanted one, or a callable
            ``(tensor, saved_device) -> tensor``. Default: the device each was saved on.
        pickle_module: the module whose ``Unpickler`` reads with ``weights_only=False``
            (default: Python's ``pickle``). Passing one makes the default ``weights_only``
            False, as in torch; with ``weights_only=True`` it is an error.
        weights_only (bool, optional): whether to refuse anything but tensors, numbers,
            strings and containers. Default: True (the environment variable
            ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` makes it False, and
            ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` forces True, as in torch).
        mmap: accepted for torch compatibility and ignored.
        pickle_load_args: passed to the unpickler with ``weights_only=False`` (e.g.
            ``encoding``).

    Returns:
        The saved object.

    Example::

        >>> import io
        >>> buf = io.BytesIO()
        >>> torch.save([torch.arange(3), "tag"], buf)
        >>> _ = buf.seek(0)
        >>> torch.load(buf, map_location="cpu")
        [tensor([0, 1, 2]), 'tag']
    """
    weights_only = _weights_only(weights_only, pickle_module)
    own = isinstance(f, (str, os.PathLike))
    try:
        fh: Any = _open_regular(f) if isinstance(f, (str, os.PathLike)) else _not_a_device(f)
    except _NotRegular as e:
        if e.kind == "a directory":
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), e.name) from None
        raise RuntimeError(f"rustgrad.load: {e}") from None
    try:
        return _load(fh, map_location, weights_only, pickle_module, pickle_load_args)
    except _Malformed as e:
        raise RuntimeError(f"rustgrad.load: {_file_name(f)}: {e}") from None
    except _torch_pickle.TorchTypeError as e:
        raise TypeError(f"rustgrad.load: {_file_name(f)}: malformed torch checkpoint: "
                        f"{e}") from None
    except _torch_pickle.TorchFormatError as e:
        raise RuntimeError(f"rustgrad.load: {_file_name(f)}: malformed torch checkpoint: "
                           f"{e}") from None
    except (_torch_pickle.Refused, _torch_pickle.TorchObject) as e:
        raise pickle.UnpicklingError(f"rustgrad.load: {_file_name(f)}: {e}") from None
    finally:
        if own:
            fh.close()


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "0").strip().lower() in ("1", "y", "yes", "true")


def _weights_only(weights_only: Optional[bool], pickle_module: Any) -> bool:
    """torch.load's rule: True by default (False when a pickle_module is given or
    TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD is set); TORCH_FORCE_WEIGHTS_ONLY_LOAD forces True."""
    if _env_flag("TORCH_FORCE_WEIGHTS_ONLY_LOAD"):
        weights_only = True
    elif weights_only is None:
        weights_only = pickle_module is None
        if weights_only and _env_flag("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"):
            import warnings  # rarely: not at import time

            warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since "
                          "the `weights_only` argument was not explicitly passed to "
                          "`rustgrad.load`, forcing weights_only=False.", stacklevel=3)
            weights_only = False
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    return bool(weights_only)


# ---- loading only regular files, never past their end -----------------------------------------
class _NotRegular(Exception):
    def __init__(self, name: str, kind: str) -> None:
        super().__init__(f"{name}: not a regular file ({kind}): only regular files are read "
                         "(a device or a FIFO could block or never end)")
        self.name, self.kind = name, kind


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def _open_regular(path: Union[str, os.PathLike[str]]) -> IO[bytes]:
    """Opens `path` for reading if, symlinks followed, it is a regular file; anything else
    raises _NotRegular. The check is made on the opened descriptor (no race with a rename), and
    opening never blocks (O_NONBLOCK: a FIFO without a writer would)."""
    name = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) \
        | getattr(os, "O_BINARY", 0)
    fd = os.open(name, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            shown = name
            if os.path.islink(name):
                shown = f"{name} (a symlink to {os.path.realpath(name)})"
            raise _NotRegular(shown, _kind(mode))
        if flags & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _not_a_device(fh: Any) -> Any:
    """A file object open on a device (/dev/zero, a terminal) is refused: it has no end. Pipes
    and sockets are read to their end, as the stream they are."""
    try:
        mode = os.fstat(fh.fileno()).st_mode
    except (AttributeError, OSError, ValueError, TypeError, io.UnsupportedOperation):
        return fh
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise _NotRegular(_file_name(fh), _kind(mode))
    return fh


class _Window:
    """The bytes of a seekable stream from `start` to `end` (measured when loading starts), as
    a file of their own: no read goes past `end`, whatever the stream does meanwhile."""

    def __init__(self, raw: Any, start: int, end: int) -> None:
        self.raw, self.start, self.end = raw, start, end
        self.name = getattr(raw, "name", "<stream>")

    def _left(self, n: Optional[int]) -> int:
        left = max(0, self.end - self.raw.tell())
        return left if n is None or n < 0 else min(n, left)

    def read(self, n: Optional[int] = -1) -> bytes:
        return self.raw.read(self._left(n))

    def readline(self, n: Optional[int] = -1) -> bytes:
        return self.raw.readline(self._left(n))

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: self.start, io.SEEK_CUR: self.raw.tell(), io.SEEK_END: self.end}
        where = base[whence] + offset
        if where < self.start:  # as a file says it (BytesIO would raise ValueError)
            raise OSError(errno.EINVAL, f"negative seek position {where - self.start}")
        return self.raw.seek(where) - self.start

    def tell(self) -> int:
        return self.raw.tell() - self.start

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True


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


def _load(fh: Any, map_location: Any, weights_only: bool = True, pickle_module: Any = None,
          pickle_load_args: Optional[Dict[str, Any]] = None) -> Any:
    if not (hasattr(fh, "seekable") and fh.seekable()):
        fh = io.BytesIO(fh.read())
    start = fh.tell()
    end = fh.seek(0, io.SEEK_END)
    fh.seek(start)
    fh = _Window(fh, start, end)
    size = end - start
    head = fh.read(len(_torch_pickle.LEGACY_MAGIC))
    fh.seek(0)
    if head == _torch_pickle.LEGACY_MAGIC:
        try:
            return _torch_pickle.load_legacy(fh, _placer(map_location))
        except _torch_pickle.Refused as e:
            if weights_only:
                raise
            raise _torch_pickle.Refused(f"{e}\n(rustgrad reads torch's legacy, pre-1.6 format "
                                        "weights-only, whatever weights_only says)") from None
    if _is_safetensors(head, size):
        from .utils import safetensors  # cycle: utils.safetensors writes through _write_atomically

        try:
            tensors = safetensors._from_bytes(fh.read(size))
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
                if not weights_only:  # Python's unpickler: the caller trusts the file
                    return _torch_pickle.load_zip_objects(
                        names, lambda n: _checked_read(z, n), _placer(map_location),
                        pickle_module, **(pickle_load_args or {}))
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


def from_file(filename: Union[str, os.PathLike[str]], shared: Optional[bool] = None,
              size: int = 0, *, dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: bool = False) -> Tensor:
    """A CPU tensor of `size` elements whose memory is the file, mapped (as torch.from_file).

    With ``shared=True`` writes to the tensor go to the file (created, or grown, to the size
    needed); otherwise the mapping is private: the tensor's writes stay in this process.

    Args:
        filename (str): the file to map.
        shared (bool): whether writes reach the file. Default: False.
        size (int): the number of elements.
        dtype (rustgrad.dtype, optional): the element type. Default: the default dtype.
        layout, device, pin_memory: accepted for torch's signature (strided CPU memory only).

    Example::

        >>> import numpy as np, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "values.bin")
        >>> np.arange(4, dtype=np.float32).tofile(path)
        >>> torch.from_file(path, size=4, dtype=torch.float32)
        tensor([0., 1., 2., 3.])
    """
    if device is not None and _device(device).type != "cpu":
        raise RuntimeError("from_file: only CPU tensors can be mapped to files")
    if pin_memory:
        raise RuntimeError("from_file: tensors mapped to files cannot be created in pinned memory")
    np_dtype = _dtype.to_np(dtype if dtype is not None else _dtype.get_default_dtype())
    need = int(size) * _np.dtype(np_dtype).itemsize
    path = os.fspath(filename)
    if shared:
        with open(path, "ab") as fh:  # creates it; grows it to the mapping's size
            if fh.tell() < need:
                fh.truncate(need)
    have = os.path.getsize(path)
    if have < need:
        raise RuntimeError(f"file <{path}> size <{have}> is smaller than the required mapping "
                           f"size <{need}>")
    if size == 0:
        return from_numpy(_np.empty(0, dtype=np_dtype))
    mapped = _np.memmap(path, dtype=np_dtype, mode="r+" if shared else "c", shape=(int(size),))
    return from_numpy(mapped)
