"""safetensors files for rustgrad tensors: the API of `safetensors.torch`, on rustgrad tensors.

`save_file`/`save` write a flat dict of tensors, `load_file`/`load` read one back; the bytes
are written and parsed by the `safetensors` package, so files interchange with
`safetensors.torch` both ways. As `safetensors.torch` does, saving refuses tensors that share
memory (tied weights: save one of them) and non-contiguous tensors. rustgrad has no bfloat16, so
bfloat16 tensors load as float32 (exactly) with a warning; other types rustgrad does not store
(uint16/32/64, complex, float8) are refused.

Unlike `safetensors.torch`, `save_file` never leaves a broken file: it writes a temporary file in
the same directory and renames it over the target (see `rustgrad.save`); `load_file` reads only
regular files (a device or a FIFO raises OSError instead of blocking or reading for ever), and no
more bytes than the file's size.
"""

from __future__ import annotations

import errno
import json
import os
import warnings
from collections import defaultdict
from typing import IO, Any, Dict, List, Optional, Set, Tuple, Union

import numpy as _np

from .._creation import from_numpy
from .._tensor import Tensor
from ..serialization import _NotRegular, _open_regular, _write_atomically

__all__ = ["save_file", "load_file", "save", "load"]

# safetensors' element type codes, and the little-endian NumPy type each is read as.
_READ = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
         "I8": "i1", "U8": "u1", "BOOL": "u1", "BF16": "<u2"}


def _check_and_flatten(tensors: Any) -> Dict[str, Any]:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    for k, v in tensors.items():
        if not isinstance(v, Tensor):
            raise ValueError(f"Key `{k}` is invalid, expected torch.Tensor but received "
                             f"{type(v)}")
    shared = [names for names in _shared_groups(tensors) if len(names) > 1]
    if shared:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and "
            f"potential differences when loading them again: {shared}. Save only one of the "
            "tensors that share memory (for tied weights, one name) and tie them again after "
            "loading.")
    arrays = {}
    for k, v in tensors.items():
        if not v.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{k}` which is not allowed. "
                "Call `.contiguous()` on it before saving (or, if it is a view of another "
                "tensor you save, slice it again after loading).")
        arrays[k] = _np.asarray(v._backend.to_numpy(v._data))  # keeps 0-d arrays 0-d
    return arrays


def _extent(t: Any) -> Tuple[int, int]:
    start = t.data_ptr()
    if t.numel() == 0:
        return start, start
    last = sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return start, start + (last + 1) * t.element_size()


def _shared_groups(tensors: Dict[str, Any]) -> List[Set[str]]:
    # As safetensors.torch: tensors of one storage form a group only where their bytes overlap.
    by_storage: Dict[Any, Set[str]] = defaultdict(set)
    for k, v in tensors.items():
        if v.numel() > 0:
            by_storage[(str(v.device), v._storage_id())].add(k)
    groups: List[Set[str]] = []
    for names in by_storage.values():
        spans = sorted((*_extent(tensors[n]), n) for n in names)
        _, stop, first = spans[0]
        groups.append({first})
        for start, end, name in spans[1:]:
            if start >= stop:
                groups.append({name})
            else:
                groups[-1].add(name)
            stop = max(stop, end)
    return groups


def save(tensors: Dict[str, Any], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """Returns the safetensors bytes of a dict of tensors (and optional text metadata)."""
    import safetensors.numpy  # import-time cost: the safetensors package, on first use

    return safetensors.numpy.save(_check_and_flatten(tensors), metadata=metadata)


def save_file(tensors: Dict[str, Any], filename: Union[str, os.PathLike[str]],
              metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes a dict of tensors (and optional text metadata) to a safetensors file.

    The tensors are checked before any byte is written, and the file is replaced at once: an
    exception, a full disk or a killed process leaves the old file or the complete new one.
    """
    import safetensors.numpy  # import-time cost: the safetensors package, on first use


    data = safetensors.numpy.save(_check_and_flatten(tensors), metadata=metadata)

    def write(fh: IO[bytes]) -> None:
        fh.write(data)

    _write_atomically(filename, write)


def _from_bytes(data: bytes, device: Any = "cpu") -> Dict[str, Any]:
    import safetensors  # import-time cost: the safetensors package, on first use


    views = safetensors.deserialize(data)  # checks the header and the offsets first
    # in file order, as safetensors.torch.load_file returns them
    header = json.loads(data[8:8 + int.from_bytes(data[:8], "little")])
    views.sort(key=lambda kv: tuple(header[kv[0]]["data_offsets"]))
    out: Dict[str, Any] = {}
    widened = False
    for name, view in views:
        code = view["dtype"]
        if code not in _READ:
            raise TypeError(f"safetensors: tensor {name!r} has element type {code}, which "
                            "rustgrad does not store")
        flat = _np.frombuffer(view["data"], dtype=_READ[code])
        if code == "BF16":  # bfloat16 is float32's top half: widening is exact
            arr = (flat.astype("<u4") << 16).view("<f4").astype(_np.float32)
            widened = True
        elif code == "BOOL":
            arr = flat != 0
        else:
            arr = flat.astype(flat.dtype.newbyteorder("="), copy=True)
        t = from_numpy(arr.reshape(view["shape"]))
        if str(device) != "cpu":
            t = t.to(device)
        out[name] = t
    if widened:
        warnings.warn("rustgrad has no bfloat16: bfloat16 tensors were loaded as float32 "
                      "(exactly, every bfloat16 value is a float32 value)", stacklevel=3)
    return out


def load(data: bytes) -> Dict[str, Any]:
    """Reads tensors (on the cpu) from the bytes of a safetensors file."""
    return _from_bytes(bytes(data))


def load_file(filename: Union[str, os.PathLike[str]], device: Union[str, int, Any] = "cpu", *,
              backend: str = "mmap") -> Dict[str, Any]:
    """Reads the tensors of a safetensors file onto `device` (`backend` is accepted, unused).

    Only a regular file is read (symlinks followed): anything else raises OSError (ENODEV)
    without blocking, and no more than the file's size is read.
    """
    if isinstance(device, int):
        device = f"cuda:{device}"
    try:
        f = _open_regular(filename)
    except _NotRegular as e:
        raise OSError(errno.ENODEV, f"not a regular file ({e.kind}): safetensors files are "
                      "read only from regular files", e.name) from None
    with f:
        data = f.read(os.fstat(f.fileno()).st_size)
    return _from_bytes(data, device)
