"""Reading checkpoints written by `torch.save`, without torch and without running pickled code.

torch's zip format holds `<name>/data.pkl` (a pickle of the containers, whose tensors name their
storages by persistent id) and one raw member `<name>/data/<key>` per storage; the legacy format
(`_use_new_zipfile_serialization=False`) is a run of pickles followed by the raw storages.

`data.pkl` is read by `_WeightsUnpickler`, an interpreter of the pickle opcodes torch.save writes
(its own code, not Python's unpickler), restricted as torch's `weights_only=True` unpickler is:
`find_class` hands out only an allow-list of tensor-rebuilding globals and refuses every other
global with `pickle.UnpicklingError` before anything is called; REDUCE calls only those; BUILD
acts only on a rebuilt tensor (torch's `set_`) or sets plain attributes on an OrderedDict/Counter,
never on what `find_class` handed out, so a file cannot change state that outlives the load;
SETITEM(S), APPEND(S) and ADDITEMS act only on dicts, lists and sets; any other opcode is refused.
Every read is bounded by the stream's size, and tuples that would take too deep or too long a hash
are refused. Tensors come back as `_PendingTensor`s; `_Resolver.tensor` then checks each one's
offset, sizes and strides against its storage (`_geometry`, the one place, after unpickling)
and copies its elements out.

Whole objects (the end of this module): `dump_objects` pickles what rustgrad's safe format
cannot hold (a Module, any Python object) in torch's layout, and `load_zip_objects` reads such
a file, or any torch zip checkpoint, with Python's own unpickler: only for
`load(..., weights_only=False)`, which trusts the file.
"""

from __future__ import annotations

import io
import pickle
import pickletools
import reprlib
import struct
import warnings
from collections import Counter, OrderedDict
from typing import Any, Callable, Dict, List, Tuple

import numpy as _np

from . import _dtype
from ._backends import device
from ._creation import from_numpy
from ._size import Size
from ._tensor import Tensor
from .nn.parameter import Parameter

__all__ = ["LEGACY_MAGIC", "Refused", "RefusedGlobal", "TorchFormatError", "TorchObject",
           "TorchTypeError", "dump_objects", "load_zip", "load_zip_objects", "load_legacy"]

# The first pickle of a legacy torch file: protocol 2, the magic number 0x1950a86a20f9469cfc6c.
LEGACY_MAGIC = b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little") + b"."
_LEGACY_PROTOCOL = 1001


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


class TorchFormatError(Exception):
    """What is wrong with a torch checkpoint (the caller names the file)."""


class TorchTypeError(TorchFormatError):
    """Arguments that torch's own call would refuse with a TypeError (the caller raises one)."""


class Refused(pickle.UnpicklingError):
    """Something the weights-only unpickler does not do: a global, an opcode or its target."""


class RefusedGlobal(Refused):
    """A global outside the allow-list: the load stops before anything is called."""


_NOT_ARBITRARY = ("With weights_only=True (the default) rustgrad never unpickles arbitrary objects: "
                  "only tensors, parameters, numbers, strings and plain containers load")


def _refusal(module: str, name: str) -> RefusedGlobal:
    # torch's message, with its two ways out (rustgrad has no add_safe_globals: the second is
    # saving the state_dict)
    return RefusedGlobal(
        "Weights only load failed. This file can still be loaded, to do so you have two "
        "options, do those steps only if you trust the source of the checkpoint.\n"
        "\t(1) Re-running `rustgrad.load` with `weights_only` set to `False` will likely "
        "succeed, but it can result in arbitrary code execution. Do it only if you got the file "
        "from a trusted source.\n"
        "\t(2) Alternatively, save and load the object's state_dict() instead. "
        f"{_NOT_ARBITRARY}.\n"
        f"\tWeightsUnpickler error: Unsupported global: GLOBAL {module}.{name} was not an "
        "allowed global by default."
    )


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 120


def _short(x: Any) -> str:
    """A bounded repr (of a str: the text itself, cut) for messages about hostile data."""
    if isinstance(x, str):
        return x if len(x) <= 300 else x[:300] + "..."
    return _REPR.repr(x)


def _ints(x: Any, what: str) -> Tuple[int, ...]:
    if not isinstance(x, (tuple, list)) or not all(type(v) is int for v in x):
        raise TorchTypeError(f"{what} is not a tuple of ints: {_short(x)}")
    return tuple(x)


# The opcodes of pickle protocols 2 to 5 that carry data, build containers or name tensors;
# all others (INST, OBJ, NEWOBJ_EX, EXT*, PERSID, the text STRING/UNICODE, DUP, the out-of-band
# buffers) are refused, as torch's weights-only unpickler refuses them.
_OPNAMES = {v[0]: k for k, v in vars(pickle).items()
            if k.isupper() and isinstance(v, bytes) and len(v) == 1}
_MAX_LINE = 4096          # a text argument (GLOBAL's names, INT, LONG, FLOAT, GET, PUT)
_MAX_TUPLE_DEPTH = 1000   # hashing a tuple recurses in C, without a depth check
_MAX_TUPLE_WORK = 1 << 26  # elements a hash visits, counting shared sub-tuples each time
_MAX_DIMS = 64
_STRUCTS = {fmt: struct.Struct(fmt) for fmt in ("<i", "<H", "<I", "<Q", ">d")}
_INT64 = 1 << 63


class _Stop(Exception):
    pass


class _WeightsUnpickler:
    """Reads one pickle, opcode by opcode, allowing only what a torch checkpoint needs.

    Globals come from an allow-list of tensor-rebuilding functions (find_class); REDUCE calls
    only those; BUILD sets state only on a rebuilt tensor (torch's `set_`) or attributes on an
    OrderedDict/Counter; SETITEM(S) only on dicts, APPEND(S) only on lists, ADDITEMS only on
    sets. Every read is bounded by `end`, the stream's last byte.
    """

    def __init__(self, source: Any, storages: Dict[str, _Storage], end: int) -> None:
        # `source`: the pickle's bytes (read by index), or a stream positioned at its start
        self.buf = source if isinstance(source, bytes) else None
        self.file = source
        self.pos = 0 if self.buf is not None else source.tell()
        self.end = end
        self.op_code = -1
        self.op_pos = self.pos
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
        self.callables = {id(fn) for fn in self.allowed.values()}
        # NEWOBJ on an allowed class: `cls.__new__(cls, *args)`, which for these ignores the
        # arguments of all but the immutable ones
        self.new_objects: Dict[int, Callable[..., Any]] = {
            id(self._ordered_dict): lambda *a: OrderedDict(),
            id(self._counter): lambda *a: Counter(),
            id(self._set): lambda *a: set(),
            id(self._bytearray): lambda *a: bytearray(),
            id(self._frozenset): self._frozenset,
            id(self._complex): self._complex,
            id(self._size): self._size,
        }
        # what each handed-out global is called, for messages (kept alive by `handed`)
        self.names: Dict[int, str] = {}
        self.handed: List[Any] = []
        self.memo: Dict[int, Any] = {}
        self.stack: List[Any] = []
        self.metastack: List[List[Any]] = []
        self.tuples: Dict[int, Tuple[Any, int, int]] = {}  # id -> (tuple, depth, hash work)

    # ---- reading ---------------------------------------------------------------------------
    def _read(self, n: int) -> bytes:
        if n > self.end - self.pos:
            raise TorchFormatError(
                f"the pickle is truncated: {self._op()} at byte {self.op_pos} needs {n} bytes, "
                f"{self.end - self.pos} remain")
        if self.buf is not None:
            self.pos += n
            return self.buf[self.pos - n:self.pos]
        data = self.file.read(n)
        if len(data) != n:
            raise TorchFormatError(f"the pickle is truncated at byte {self.pos + len(data)}")
        self.pos += n
        return data

    def _line(self) -> bytes:
        limit = max(0, min(_MAX_LINE, self.end - self.pos))
        if self.buf is not None:
            cut = self.buf.find(b"\n", self.pos, self.pos + limit)
            data = self.buf[self.pos:self.pos + limit if cut < 0 else cut + 1]
        else:
            data = self.file.readline(limit)
        self.pos += len(data)
        if not data.endswith(b"\n"):
            raise TorchFormatError(f"the pickle is malformed: the text argument of {self._op()} "
                                   f"at byte {self.op_pos} has no end of line")
        return data[:-1]

    def _unpack(self, fmt: str) -> Any:
        s = _STRUCTS[fmt]
        return s.unpack(self._read(s.size))[0]

    def _op(self) -> str:
        if self.op_code < 0:
            return "an opcode"
        return _OPNAMES.get(self.op_code, str(self.op_code))

    # ---- the stack -------------------------------------------------------------------------
    def _pop(self) -> Any:
        if not self.stack:
            raise TorchFormatError(f"the pickle is malformed: {self._op()} at byte "
                                   f"{self.op_pos} finds an empty stack")
        return self.stack.pop()

    def _top(self) -> Any:
        if not self.stack:
            raise TorchFormatError(f"the pickle is malformed: {self._op()} at byte "
                                   f"{self.op_pos} finds an empty stack")
        return self.stack[-1]

    def _pop_mark(self) -> List[Any]:
        if not self.metastack:
            raise TorchFormatError(f"the pickle is malformed: {self._op()} at byte "
                                   f"{self.op_pos} finds no MARK")
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def _refuse(self, what: str) -> Refused:
        return Refused(f"Weights only load failed. {what} ({self._op()} at byte {self.op_pos} of "
                       f"the pickle). {_NOT_ARBITRARY}.")

    def _what(self, obj: Any) -> str:
        if id(obj) in self.names:
            return f"the global {self.names[id(obj)]}"
        if isinstance(obj, _PendingTensor):
            return "a Parameter" if obj.parameter else "a Tensor"
        if isinstance(obj, _Storage):
            return "a storage"
        return str(type(obj))

    def _tuple(self, items: Any) -> Tuple[Any, ...]:
        """A tuple of `items`, refused if hashing it would recurse too deeply or visit too many
        elements (a tuple of shared sub-tuples, n levels deep, hashes 2**n of them)."""
        depth, work = 1, 1
        for x in items:
            if isinstance(x, tuple):
                known = self.tuples.get(id(x))
                d, w = (known[1], known[2]) if known else (1, len(x) + 1)
                depth, work = max(depth, d + 1), work + w
            else:
                work += 1
        if depth > _MAX_TUPLE_DEPTH:
            raise TorchFormatError(f"the pickle nests tuples more than {_MAX_TUPLE_DEPTH} deep")
        if work > _MAX_TUPLE_WORK:
            raise TorchFormatError(f"the pickle builds a tuple of more than {_MAX_TUPLE_WORK} "
                                   "elements, counting shared sub-tuples each time")
        t = tuple(items)
        if depth > 1 or work > len(t) + 1:
            self.tuples[id(t)] = (t, depth, work)
        return t

    # ---- the interpreter ---------------------------------------------------------------------
    def load(self) -> Any:
        ops, buf, end = _DISPATCH, self.buf, self.end
        while True:
            self.op_pos = self.pos
            if buf is not None and self.pos < end:
                self.op_code = buf[self.pos]
                self.pos += 1
            else:
                self.op_code = -1
                self.op_code = self._read(1)[0]
            op = ops.get(self.op_code)
            if op is None:
                name = _OPNAMES.get(self.op_code)
                raise self._refuse(f"Unsupported operand {self.op_code}"
                                   + (f" ({name}): rustgrad reads only the opcodes torch.save "
                                      "writes" if name else ": not a pickle opcode"))
            try:
                op(self)
            except _Stop:
                return self.stack.pop()
            except (TorchFormatError, Refused):
                raise
            except RecursionError:
                raise TorchFormatError("the pickle nests too deeply") from None
            except Exception as e:  # what an allowed call or a bad key runs into
                raise TorchFormatError(
                    f"the pickle is malformed ({self._op()} at byte {self.op_pos}: "
                    f"{type(e).__name__}: {_short(str(e))})") from None

    # protocol, framing, marks
    def op_proto(self) -> None:
        if self._read(1)[0] > pickle.HIGHEST_PROTOCOL:
            raise TorchFormatError("the pickle's protocol is newer than this Python's")

    def op_frame(self) -> None:
        if self._unpack("<Q") > self.end - self.pos:
            raise TorchFormatError(f"the pickle is truncated: a FRAME at byte {self.op_pos} is "
                                   "longer than what remains")

    def op_stop(self) -> None:
        self._top()
        raise _Stop

    def op_mark(self) -> None:
        self.metastack.append(self.stack)
        self.stack = []

    def op_pop(self) -> None:
        if self.stack:
            self.stack.pop()
        else:
            self._pop_mark()

    def op_pop_mark(self) -> None:
        self._pop_mark()

    # numbers and text
    def op_none(self) -> None:
        self.stack.append(None)

    def op_newtrue(self) -> None:
        self.stack.append(True)

    def op_newfalse(self) -> None:
        self.stack.append(False)

    def op_int(self) -> None:
        line = self._line()
        self.stack.append(False if line == b"00" else True if line == b"01" else int(line))

    def op_binint(self) -> None:
        self.stack.append(self._unpack("<i"))

    def op_binint1(self) -> None:
        self.stack.append(self._read(1)[0])

    def op_binint2(self) -> None:
        self.stack.append(self._unpack("<H"))

    def op_long(self) -> None:
        line = self._line()
        self.stack.append(int(line[:-1] if line.endswith(b"L") else line))

    def op_long1(self) -> None:
        self.stack.append(int.from_bytes(self._read(self._read(1)[0]), "little", signed=True))

    def op_long4(self) -> None:
        n = self._unpack("<i")
        if n < 0:
            raise TorchFormatError(f"the pickle is malformed: LONG4 of negative length {n}")
        self.stack.append(int.from_bytes(self._read(n), "little", signed=True))

    def op_float(self) -> None:
        self.stack.append(float(self._line()))

    def op_binfloat(self) -> None:
        self.stack.append(self._unpack(">d"))

    def op_binstring(self) -> None:
        n = self._unpack("<i")
        if n < 0:
            raise TorchFormatError(f"the pickle is malformed: BINSTRING of negative length {n}")
        self.stack.append(self._read(n).decode("utf-8"))

    def op_short_binstring(self) -> None:
        self.stack.append(self._read(self._read(1)[0]).decode("utf-8"))

    def op_binunicode(self) -> None:
        self.stack.append(self._read(self._unpack("<I")).decode("utf-8", "surrogatepass"))

    def op_short_binunicode(self) -> None:
        self.stack.append(self._read(self._read(1)[0]).decode("utf-8", "surrogatepass"))

    def op_binunicode8(self) -> None:
        self.stack.append(self._read(self._unpack("<Q")).decode("utf-8", "surrogatepass"))

    def op_binbytes(self) -> None:
        self.stack.append(self._read(self._unpack("<I")))

    def op_short_binbytes(self) -> None:
        self.stack.append(self._read(self._read(1)[0]))

    def op_binbytes8(self) -> None:
        self.stack.append(self._read(self._unpack("<Q")))

    def op_bytearray8(self) -> None:
        self.stack.append(bytearray(self._read(self._unpack("<Q"))))

    # containers
    def op_empty_tuple(self) -> None:
        self.stack.append(())

    def op_tuple(self) -> None:
        items = self._pop_mark()  # first: it replaces self.stack
        self.stack.append(self._tuple(items))

    def op_tuple1(self) -> None:
        self.stack.append(self._tuple([self._pop()]))

    def op_tuple2(self) -> None:
        b, a = self._pop(), self._pop()
        self.stack.append(self._tuple([a, b]))

    def op_tuple3(self) -> None:
        c, b, a = self._pop(), self._pop(), self._pop()
        self.stack.append(self._tuple([a, b, c]))

    def op_empty_list(self) -> None:
        self.stack.append([])

    def op_list(self) -> None:
        items = self._pop_mark()
        self.stack.append(items)

    def op_append(self) -> None:
        item = self._pop()
        target = self._top()
        if type(target) is not list:
            raise self._refuse(f"Can only append to lists, but got {self._what(target)}")
        target.append(item)

    def op_appends(self) -> None:
        items = self._pop_mark()
        target = self._top()
        if type(target) is not list:
            raise self._refuse(f"Can only extend lists, but got {self._what(target)}")
        target.extend(items)

    def op_empty_dict(self) -> None:
        self.stack.append({})

    def op_dict(self) -> None:
        items = self._pop_mark()
        if len(items) % 2:
            raise TorchFormatError(f"the pickle is malformed: DICT at byte {self.op_pos} has "
                                   "an odd number of items")
        self.stack.append({items[i]: items[i + 1] for i in range(0, len(items), 2)})

    def _dict_target(self) -> Any:
        target = self._top()
        if type(target) not in (dict, OrderedDict, Counter):
            raise self._refuse(f"Can only {self._op()} for dict, collections.OrderedDict, "
                               f"collections.Counter, but got {self._what(target)}")
        return target

    def op_setitem(self) -> None:
        value, key = self._pop(), self._pop()
        self._dict_target()[key] = value

    def op_setitems(self) -> None:
        items = self._pop_mark()
        target = self._dict_target()
        if len(items) % 2:
            raise TorchFormatError(f"the pickle is malformed: SETITEMS at byte {self.op_pos} "
                                   "has an odd number of items")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def op_empty_set(self) -> None:
        self.stack.append(set())

    def op_additems(self) -> None:
        items = self._pop_mark()
        target = self._top()
        if type(target) is not set:
            raise self._refuse(f"Can only add items to sets, but got {self._what(target)}")
        target.update(items)

    def op_frozenset(self) -> None:
        items = self._pop_mark()
        self.stack.append(frozenset(items))

    # the memo
    def _get(self, key: int) -> None:
        if key not in self.memo:
            raise TorchFormatError(f"the pickle is malformed: {self._op()} at byte "
                                   f"{self.op_pos} reads memo entry {key}, which was never set")
        self.stack.append(self.memo[key])

    def _put(self, key: int) -> None:
        if key < 0:
            raise TorchFormatError(f"the pickle is malformed: negative memo key {key}")
        self.memo[key] = self._top()

    def op_get(self) -> None:
        self._get(int(self._line()))

    def op_binget(self) -> None:
        self._get(self._read(1)[0])

    def op_long_binget(self) -> None:
        self._get(self._unpack("<I"))

    def op_put(self) -> None:
        self._put(int(self._line()))

    def op_binput(self) -> None:
        self._put(self._read(1)[0])

    def op_long_binput(self) -> None:
        self._put(self._unpack("<I"))

    def op_memoize(self) -> None:
        self._put(len(self.memo))

    # globals, calls, persistent ids, state
    def op_global(self) -> None:
        module = self._line().decode("utf-8")
        name = self._line().decode("utf-8")
        self.stack.append(self.find_class(module, name))

    def op_stack_global(self) -> None:
        name, module = self._pop(), self._pop()
        if type(name) is not str or type(module) is not str:
            raise TorchFormatError(f"the pickle is malformed: STACK_GLOBAL at byte "
                                   f"{self.op_pos} needs two strings")
        self.stack.append(self.find_class(module, name))

    def op_reduce(self) -> None:
        args = self._pop()
        fn = self._top()
        if id(fn) not in self.callables:
            raise self._refuse(f"Trying to call reduce for unrecognized function "
                               f"{self._what(fn)}")
        if type(args) is not tuple:
            raise TorchFormatError(f"the pickle is malformed: REDUCE at byte {self.op_pos} "
                                   f"calls {self._what(fn)} with {type(args).__name__} "
                                   "arguments, not a tuple")
        out = fn(*args)
        self.stack[-1] = self._tuple(out) if type(out) is tuple else out

    def op_newobj(self) -> None:
        args = self._pop()
        cls = self._pop()
        make = self.new_objects.get(id(cls))
        if make is None:
            raise self._refuse("Can only create new object for nn.Parameter or classes "
                               f"allowlisted, but got {self._what(cls)}")
        if type(args) is not tuple:
            raise TorchFormatError(f"the pickle is malformed: NEWOBJ at byte {self.op_pos} "
                                   f"with {type(args).__name__} arguments, not a tuple")
        self.stack.append(make(*args))

    def op_binpersid(self) -> None:
        self.stack.append(self.persistent_load(self._pop()))

    def op_build(self) -> None:
        state = self._pop()
        target = self._top()
        if isinstance(target, _PendingTensor):
            self._set_(target, state)
        elif type(target) in (OrderedDict, Counter):
            self._set_attributes(target, state)
        else:
            raise self._refuse("Can only build Tensor, Parameter, OrderedDict or Counter "
                               f"objects, but got {self._what(target)}")

    def _set_(self, p: _PendingTensor, state: Any) -> None:
        """BUILD on a tensor is torch's `tensor.set_(*state)`: a new storage and geometry,
        checked with every other tensor's once the storages are read."""
        args = tuple(state) if isinstance(state, (tuple, list)) else (state,)
        usage = TorchTypeError(
            "set_() received an invalid combination of arguments - got ("
            + ", ".join(type(a).__name__ for a in args) + "), but expected one of: (), "
            "(Storage source), (Storage source, int storage_offset, tuple of ints size, tuple "
            "of ints stride = None), (Tensor source), (Tensor source, int storage_offset, "
            "tuple of ints size, tuple of ints stride = None)")
        if p.parameter and len(args) != 4:  # a Parameter's __setstate__ takes only this form
            raise usage
        if p.requires_grad:  # torch's set_ refuses it (an in-place change of a leaf)
            raise TorchFormatError("a leaf Variable that requires grad is being used in an "
                                   "in-place operation (BUILD, which is set_, on a tensor that "
                                   "requires grad)")
        if not args:
            p.offset, p.size, p.stride = 0, (0,), (1,)
            return
        src = args[0]
        if not isinstance(src, (_Storage, _PendingTensor)) or len(args) not in (1, 3, 4):
            raise usage
        if isinstance(src, _PendingTensor) and src.dtype != p.dtype:
            raise TorchFormatError(f"set_: a tensor of type {p.dtype} cannot take the storage "
                                   f"of a tensor of type {src.dtype}")
        storage = src if isinstance(src, _Storage) else src.storage
        if len(args) == 1:
            if isinstance(src, _PendingTensor):
                p.storage, p.offset, p.size, p.stride = (
                    src.storage, src.offset, src.size, src.stride)
            else:
                n = storage.numel * _itemsize(storage.dtype) // _itemsize(p.dtype)
                p.storage, p.offset, p.size, p.stride = storage, 0, (n,), (1,)
            return
        offset, size = args[1], args[2]
        stride = args[3] if len(args) == 4 else None
        if type(offset) is not int or not isinstance(size, (tuple, list)) or not (
                stride is None or isinstance(stride, (tuple, list))):
            raise usage
        size = _ints(size, "set_'s size")
        if stride is None:
            stride = _contiguous(size)
        p.storage, p.offset, p.size, p.stride = (storage, offset, size,
                                                 _ints(stride, "set_'s stride"))

    def _set_attributes(self, target: Any, state: Any) -> None:
        kind = type(target).__name__
        if not isinstance(state, dict):
            raise TorchTypeError(f"the BUILD state of an {kind} must be a dict of its "
                                 f"attributes, not {type(state).__name__}")
        for key in state:
            if type(key) is not str or key.startswith("__") or hasattr(type(target), key):
                raise self._refuse(f"An {kind} may carry plain attributes (such as a "
                                   f"state_dict's _metadata), but not {_short(key)}, which "
                                   f"would shadow or replace {kind}'s own")
        target.__dict__.update(state)

    # ---- the allow-list --------------------------------------------------------------------
    def find_class(self, module: str, name: str) -> Any:
        if module == "__builtin__":  # protocol 2 names builtins by their Python 2 module
            module = "builtins"
        out = self.allowed.get((module, name))
        if out is None:
            if module in ("torch", "torch.storage") and name == "UntypedStorage":
                out = _StorageType("uint8")
            elif module == "torch" and name in _STORAGE_DTYPES:
                out = _StorageType(_STORAGE_DTYPES[name])
            elif module == "torch" and name in _TORCH_DTYPE_NAMES:
                out = _DtypeRef(_ALIASES.get(name, name))
            else:
                raise _refusal(module, name)
            self.handed.append(out)
        self.names[id(out)] = f"{module}.{name}"
        return out

    def persistent_load(self, pid: Any) -> Any:
        return _storage_of(pid, self.storages)

    def _rebuild_tensor_v2(self, storage: Any, storage_offset: Any, size: Any, stride: Any,
                           requires_grad: Any = False, backward_hooks: Any = None,
                           metadata: Any = None) -> _PendingTensor:
        if not isinstance(storage, _Storage):
            raise TorchTypeError("_rebuild_tensor_v2 got no storage")
        return self._pending(storage, storage_offset, size, stride, requires_grad, storage.dtype)

    def _rebuild_tensor_v3(self, storage: Any, storage_offset: Any, size: Any, stride: Any,
                           requires_grad: Any, backward_hooks: Any, dtype: Any,
                           metadata: Any = None) -> _PendingTensor:
        if not isinstance(storage, _Storage) or not isinstance(dtype, _DtypeRef):
            raise TorchTypeError("_rebuild_tensor_v3 got no storage or no dtype")
        return self._pending(storage, storage_offset, size, stride, requires_grad, dtype.name)

    def _pending(self, storage: _Storage, offset: Any, size: Any, stride: Any,
                 requires_grad: Any, dtype: str) -> _PendingTensor:
        # types only: the values are checked against the storage once it is read (_geometry)
        if type(offset) is not int:
            raise TorchTypeError(f"storage offset {_short(offset)} is not an int")
        size, stride = _ints(size, "size"), _ints(stride, "stride")
        return _PendingTensor(storage, offset, size, stride, bool(requires_grad), dtype)

    def _rebuild_parameter(self, data: Any, requires_grad: Any, backward_hooks: Any = None,
                           state: Any = None) -> _PendingTensor:
        # Python attributes a parameter carried (state) are dropped: they are not weights.
        if not isinstance(data, _PendingTensor):
            raise TorchTypeError("_rebuild_parameter got no tensor")
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
        # how pickle writes one: bytearray(bytes) or, in protocol 2, bytearray(str, "latin-1");
        # never bytearray(n), which would allocate n bytes the file does not hold
        if not (args == () or (len(args) == 1 and type(args[0]) is bytes)
                or (len(args) == 2 and type(args[0]) is str and type(args[1]) is str)):
            raise TorchTypeError("bytearray is allowed only on bytes, or on text and its "
                                 "encoding")
        return bytearray(*args)

    @staticmethod
    def _complex(*args: Any) -> Any:
        return complex(*args)

    @staticmethod
    def _encode(text: Any, encoding: Any = "utf-8") -> bytes:
        # how protocol 2 pickles bytes: _codecs.encode(str, "latin1")
        if not isinstance(text, str) or encoding not in ("latin1", "latin-1", "utf-8"):
            raise TorchTypeError("_codecs.encode is allowed only on text to latin1/utf-8")
        return text.encode(encoding)

    @staticmethod
    def _size(*args: Any) -> Any:
        return Size(_ints(args[0] if args else (), "torch.Size"))

    @staticmethod
    def _device(*args: Any) -> Any:
        return device(*args)


_DISPATCH: Dict[int, Callable[[_WeightsUnpickler], None]] = {
    getattr(pickle, name[3:].upper())[0]: fn
    for name, fn in vars(_WeightsUnpickler).items() if name.startswith("op_")
}


def _itemsize(dtype: str) -> int:
    return _np.dtype(_NP_ITEM[dtype]).itemsize


def _contiguous(size: Tuple[int, ...]) -> Tuple[int, ...]:
    stride, acc = [], 1
    for n in reversed(size):
        stride.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(stride))


def _geometry(p: _PendingTensor, numel: int, itemsize: int) -> int:
    """Checks a tensor's offset, sizes and strides against its storage of `numel` elements
    (the one place this is done, after unpickling, whatever BUILD did before); returns the
    tensor's element count. Errors carry torch's phrases."""
    offset, size, stride = p.offset, p.size, p.stride
    if type(offset) is not int or not isinstance(size, tuple) or not isinstance(stride, tuple) \
            or not all(type(v) is int for v in size + stride):
        raise TorchTypeError(f"a tensor's geometry is not ints: storage offset "
                             f"{_short(offset)}, size {_short(size)}, stride {_short(stride)}")
    if len(size) != len(stride):
        raise TorchFormatError(f"unequal size length ({len(size)}) and stride length "
                               f"({len(stride)}): size {list(size)}, stride {list(stride)}")
    if len(size) > _MAX_DIMS:
        raise TorchFormatError(f"a tensor of {len(size)} dimensions (at most {_MAX_DIMS})")
    if not 0 <= offset < _INT64:
        raise TorchFormatError(f"Tensor: invalid storage offset {offset} (storage "
                               f"{p.storage.key!r} holds {numel} elements)")
    for n in size:
        if n < 0:
            raise TorchFormatError(f"Trying to create tensor with negative dimension {n}: "
                                   f"{list(size)}")
    if any(st < 0 for st in stride):
        raise TorchFormatError(f"negative strides are not supported: Storage size calculation "
                               f"overflowed with sizes={list(size)} and strides={list(stride)}")
    count = 1
    for n in size:
        count *= n
        if count >= _INT64 or n >= _INT64:
            raise TorchFormatError(f"numel: integer multiplication overflow (size "
                                   f"{_short(list(size))})")
    if count == 0:  # reads nothing, wherever it starts (as torch: no storage needed)
        return 0
    if any(st >= _INT64 for st in stride):
        raise TorchFormatError(f"stride {_short(list(stride))} overflows int64")
    need = offset + 1 + sum((n - 1) * st for n, st in zip(size, stride))
    if need > numel:
        raise TorchFormatError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {itemsize} requiring a storage size of {need * itemsize} are out of "
            f"bounds for storage of size {numel * itemsize} (storage {p.storage.key!r}, "
            f"{numel} elements: the tensor reaches past its storage)")
    return count


def _unpickle(data: bytes, storages: Dict[str, _Storage]) -> Any:
    return _WeightsUnpickler(bytes(data), storages, len(data)).load()


def _storage_of(pid: Any, storages: Dict[str, _Storage]) -> _Storage:
    """The storage a persistent id `('storage', type, key, location, numel)` names, checked."""
    if not (type(pid) is tuple and len(pid) in (5, 6) and pid[0] == "storage"):
        raise TorchFormatError(f"unknown persistent id {_short(pid)}")
    kind, key, location, numel = pid[1:5]
    if len(pid) == 6 and pid[5] is not None:
        raise TorchFormatError("legacy storage views are not supported")
    if not isinstance(kind, _StorageType):
        raise TorchFormatError(f"persistent id {_short(pid)} names no storage type")
    if type(key) is not str or type(numel) is not int or not 0 <= numel < _INT64:
        raise TorchFormatError(f"malformed persistent id {_short(pid)}")
    if type(location) is not str:
        raise TorchFormatError(f"persistent id {_short(pid)} names no device")
    if key not in storages:
        storages[key] = _Storage(key, kind.dtype, numel, location)
    return storages[key]


# ---- turning pending tensors into rustgrad tensors -----------------------------------------
Place = Callable[[Any, str], Any]


# A tensor is copied out of its storage; a view with stride 0 (torch's `expand`) may name far
# more elements than its storage holds. All tensors of a file together may copy at most this
# many times the bytes of its pickle and storages, as a zip member may inflate at most
# serialization.MAX_INFLATION_RATIO times.
MAX_COPY_RATIO = 1000


class _Resolver:
    def __init__(self, storage_bytes: Callable[[_Storage], bytes], big_endian: bool,
                 place: Place, source_bytes: int) -> None:
        self.storage_bytes = storage_bytes
        self.big_endian = big_endian
        self.place = place
        self.source_bytes = source_bytes  # what the file holds, grown by each storage read
        self.copied = 0
        self.arrays: Dict[str, Any] = {}
        self.tensors: Dict[int, Any] = {}
        self.widened: List[str] = []
        self.memo: Dict[int, Any] = {}
        self.keep: List[Any] = []

    def storage_array(self, s: _Storage, dtype: str) -> Any:
        if s.key not in self.arrays:
            raw = self.storage_bytes(s)
            self.source_bytes += len(raw)
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
        if id(p) in self.tensors:
            return self.tensors[id(p)]
        if p.dtype not in _NP_ITEM:
            raise TorchFormatError(f"unknown element type {p.dtype!r}")
        stored = p.dtype
        target = _WIDENED.get(stored, stored)
        if getattr(_dtype, "bool_" if target == "bool" else target, None) not in (
                _dtype.float16, _dtype.float32, _dtype.float64, _dtype.uint8, _dtype.int8,
                _dtype.int16, _dtype.int32, _dtype.int64, _dtype.bool_, _dtype.complex64,
                _dtype.complex128):
            raise TorchFormatError(f"a tensor of type torch.{stored}, which rustgrad does not "
                                   "store")
        flat = self.storage_array(p.storage, stored)
        n = _geometry(p, flat.size, flat.itemsize)
        self.copied += n * _itemsize(target)
        if self.copied > MAX_COPY_RATIO * self.source_bytes:
            raise TorchFormatError(
                f"a tensor of size {list(p.size)} and stride {list(p.stride)} over a storage of "
                f"{flat.size} elements: copying the file's tensors would take {self.copied} "
                f"bytes, more than {MAX_COPY_RATIO}x the {self.source_bytes} bytes the file "
                "holds: refused")
        if n:
            view = _np.lib.stride_tricks.as_strided(
                flat[p.offset:], p.size, tuple(st * flat.itemsize for st in p.stride),
                writeable=False)
        else:
            view = _np.empty(p.size, dtype=flat.dtype)
        try:
            # (asarray: on a 0-d view, these operators return NumPy scalars, not arrays)
            if stored == "bfloat16":  # bfloat16 is float32's top half: widening is exact
                arr = _np.asarray((view.astype("<u4") << 16).view("<f4"), dtype=_np.float32)
            elif stored == "bool":  # any nonzero byte is True, as torch reads it
                arr = _np.asarray(view.view(_np.uint8) != 0)
            else:
                arr = _np.array(view, dtype=view.dtype.newbyteorder("="), order="C", copy=True)
        except MemoryError:
            raise TorchFormatError(f"not enough memory to load a tensor of size {list(p.size)} "
                                   f"({n * _itemsize(target)} bytes)") from None
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
            for k, v in pairs:  # not update(): a Counter's would count the pairs
                obj[k] = v
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
            place: Place, source_bytes: int) -> Any:
    r = _Resolver(storage_bytes, big_endian, place, source_bytes)
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


def _zip_parts(names: List[str], read: Callable[[str], bytes]
               ) -> Tuple[bytes, Callable[[_Storage], bytes], bool]:
    """A torch zip checkpoint's pickle, a reader of its storages' bytes, and whether they are
    big-endian."""
    pkl = next((n for n in names if n.endswith("/data.pkl") and n.count("/") == 1), None)
    if pkl is None:
        raise TorchFormatError("no <name>/data.pkl member")
    prefix = pkl[: -len("data.pkl")]
    order = b"little"
    if prefix + "byteorder" in names:
        order = read(prefix + "byteorder").strip()
        if order not in (b"little", b"big"):
            raise TorchFormatError(f"unknown byteorder {order!r}")

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

    return read(pkl), storage_bytes, order == b"big"


def load_zip(names: List[str], read: Callable[[str], bytes], place: Place) -> Any:
    """Loads a torch zip checkpoint weights-only; `read(name)` returns a member's bytes."""
    pkl_bytes, storage_bytes, big_endian = _zip_parts(names, read)
    storages: Dict[str, _Storage] = {}
    root = _unpickle(pkl_bytes, storages)
    return _finish(root, storage_bytes, big_endian, place, len(pkl_bytes))


def load_legacy(fh: Any, place: Place) -> Any:
    """Loads a checkpoint of torch's legacy (pre-1.6, non-zip) format from an open stream."""
    storages: Dict[str, _Storage] = {}
    here = fh.tell()
    end = fh.seek(0, io.SEEK_END)  # no read goes past the stream's last byte
    fh.seek(here)

    def next_pickle() -> Any:
        return _WeightsUnpickler(fh, storages, end).load()

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
        if want > end - fh.tell():  # never allocate what the file cannot hold
            raise TorchFormatError(f"storage {key!r} is truncated")
        raw = fh.read(want)
        if len(raw) != want:
            raise TorchFormatError(f"storage {key!r} is truncated")
        data[key] = raw

    def storage_bytes(s: _Storage) -> bytes:
        if s.key not in data:
            raise TorchFormatError(f"storage {s.key!r} is missing")
        return data[s.key]

    return _finish(root, storage_bytes, False, place, fh.tell())



# ---- whole objects: torch.save(model) and torch.load(..., weights_only=False) ---------------------
# rustgrad.save pickles what its own format cannot hold (a Module, any Python object) as torch
# does: `data.pkl` names tensors by torch's rebuild functions and storages by persistent id, one
# raw member per storage. The pickler writes rustgrad stand-ins for torch's globals (pickle can
# only name objects it can import, and torch is never imported), and `_torch_globals` renames
# them in the finished pickle. Loading it back needs Python's own unpickler, which runs whatever
# the file names: only with weights_only=False, as torch.


class TorchObject(pickle.UnpicklingError):
    """A pickled object of torch's own classes (a whole torch model): rustgrad cannot build it."""


class _TorchName:
    """A stand-in pickled as a global of torch (`_TORCH_NAMES` says which)."""

    __slots__ = ("attr",)

    def __init__(self, attr: str) -> None:
        self.attr = attr

    def __reduce__(self) -> str:
        return self.attr  # this module's attribute of that name: pickle checks it is this object

    def __call__(self, *args: Any) -> Any:  # a dtype's stand-in is REDUCEd (then the call dropped)
        raise TypeError(f"{self.attr} is a pickling stand-in")


# attribute of this module -> (torch's module, torch's name, whether the pickle's REDUCE of the
# stand-in with no arguments is dropped: a dtype is pickled as the bare global torch.<name>)
_TORCH_NAMES: Dict[Tuple[str, str], Tuple[str, str, bool]] = {
    (__name__, "_rebuild_tensor_v2"): ("torch._utils", "_rebuild_tensor_v2", False),
    (__name__, "_rebuild_parameter"): ("torch._utils", "_rebuild_parameter", False),
    ("rustgrad._size", "Size"): ("torch", "Size", False),
    ("rustgrad._backends", "device"): ("torch", "device", False),
}
_STORAGE_NAMES = {v: k for k, v in _STORAGE_DTYPES.items()}  # element type -> torch.<X>Storage
for _storage in _STORAGE_DTYPES:
    globals()[f"_storage_{_storage}"] = _TorchName(f"_storage_{_storage}")
    _TORCH_NAMES[(__name__, f"_storage_{_storage}")] = ("torch", _storage, False)
for _name in _NP_ITEM:
    globals()[f"_dtype_{_name}"] = _TorchName(f"_dtype_{_name}")
    _TORCH_NAMES[(__name__, f"_dtype_{_name}")] = ("torch", _name, True)


class _StorageOut:
    """A tensor's storage while pickling (its persistent id)."""

    __slots__ = ("pid",)

    def __init__(self, pid: Tuple[Any, ...]) -> None:
        self.pid = pid


class _AsTensor:
    """A Parameter's data, pickled as a plain tensor inside `_rebuild_parameter`."""

    __slots__ = ("t",)

    def __init__(self, t: Any) -> None:
        self.t = t


def _pickler(base: Any) -> Any:
    class Pickler(base):  # type: ignore[misc, valid-type]
        def __init__(self, file: Any, protocol: int) -> None:
            super().__init__(file, protocol)
            self.storages: List[bytes] = []
            self.keys: Dict[int, _StorageOut] = {}
            self.keep: List[Any] = []  # ids stay unique while pickling

        def persistent_id(self, obj: Any) -> Any:
            return obj.pid if type(obj) is _StorageOut else None

        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, Parameter):
                return _rebuild_parameter, (_AsTensor(obj), bool(obj.requires_grad),
                                            OrderedDict())
            if isinstance(obj, (Tensor, _AsTensor)):
                t = obj.t if isinstance(obj, _AsTensor) else obj
                return _rebuild_tensor_v2, (self._storage(t), 0, tuple(t.shape),
                                            _contiguous(tuple(t.shape)),
                                            bool(t.requires_grad), OrderedDict())
            if isinstance(obj, _dtype.dtype):
                stand_in = globals().get(f"_dtype_{obj.name}")
                if stand_in is None:
                    raise pickle.PicklingError(f"cannot pickle the dtype {obj}")
                return stand_in, ()
            if isinstance(obj, Size):
                return Size, (tuple(obj),)
            if isinstance(obj, device):
                return device, (str(obj),)
            return NotImplemented

        def _storage(self, t: Any) -> _StorageOut:
            if id(t) not in self.keys:
                self.keep.append(t)
                name = _STORAGE_NAMES.get(t.dtype.name)
                if name is None:
                    raise pickle.PicklingError(f"cannot pickle a tensor of dtype {t.dtype}")
                arr = _np.ascontiguousarray(t._backend.to_numpy(t._data))
                arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
                key = str(len(self.storages))
                self.storages.append(arr.tobytes())
                self.keys[id(t)] = _StorageOut(("storage", globals()[f"_storage_{name}"], key,
                                                str(t.device), int(arr.size)))
            return self.keys[id(t)]
    return Pickler


def _torch_globals(data: bytes) -> bytes:
    """The pickle with each stand-in's GLOBAL replaced by torch's name (a dtype's following
    empty-argument REDUCE dropped). Protocols 2 and 3 only: their GLOBAL opcode names the
    global in its text and nothing refers to byte offsets (no frames)."""
    ops: List[Tuple[Any, Any, int]] = [(op, arg, int(pos or 0))
                                       for op, arg, pos in pickletools.genops(data)]
    out = bytearray()
    prev = drop = 0
    for i, (op, arg, pos) in enumerate(ops):
        end = ops[i + 1][2] if i + 1 < len(ops) else len(data)
        if op.name == "GLOBAL":
            module, name = str(arg).split(" ", 1)
            target = _TORCH_NAMES.get((module, name))
            if target is not None:
                out += data[prev:pos] + f"c{target[0]}\n{target[1]}\n".encode("ascii")
                prev, drop = end, (2 if target[2] else 0)
        elif drop and op.name in ("EMPTY_TUPLE", "REDUCE"):
            out += data[prev:pos]
            prev, drop = end, drop - 1
    out += data[prev:]
    return bytes(out)


def dump_objects(obj: Any, pickle_module: Any = None, protocol: int = 2
                 ) -> Tuple[bytes, List[bytes]]:
    """Pickles `obj` as torch.save does: `data.pkl`'s bytes and each storage's bytes (member
    `data/<i>`). Protocol 2 (torch's default) or 3; a higher one is written as 3."""
    base = (pickle_module or pickle).Pickler
    buf = io.BytesIO()
    p = _pickler(base)(buf, 2 if protocol <= 2 else 3)
    p.dump(obj)
    return _torch_globals(buf.getvalue()), p.storages


def _rebuild_tensor_v2(storage: Any, storage_offset: Any, size: Any, stride: Any,
                       requires_grad: Any = False, backward_hooks: Any = None,
                       metadata: Any = None) -> Any:
    """torch._utils._rebuild_tensor_v2 when loading with weights_only=False."""
    if not isinstance(storage, _LiveStorage):
        raise TorchTypeError("_rebuild_tensor_v2 got no storage")
    return storage.tensor(storage_offset, size, stride, requires_grad, storage.storage.dtype)


def _rebuild_tensor_v3(storage: Any, storage_offset: Any, size: Any, stride: Any,
                       requires_grad: Any, backward_hooks: Any, dtype: Any,
                       metadata: Any = None) -> Any:
    if not isinstance(storage, _LiveStorage) or not isinstance(dtype, _dtype.dtype):
        raise TorchTypeError("_rebuild_tensor_v3 got no storage or no dtype")
    return storage.tensor(storage_offset, size, stride, requires_grad, dtype.name)


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any = None) -> Any:
    """torch._utils._rebuild_parameter when loading with weights_only=False."""
    if not isinstance(data, Tensor):
        raise TorchTypeError("_rebuild_parameter got no tensor")
    return Parameter(data, bool(requires_grad))


def _rebuild_parameter_with_state(data: Any, requires_grad: Any, backward_hooks: Any,
                                  state: Any) -> Any:
    p = _rebuild_parameter(data, requires_grad)
    if isinstance(state, dict):
        for k, v in state.items():
            setattr(p, k, v)
    return p


class _LiveStorage:
    """A storage while unpickling with weights_only=False: tensors are built at once."""

    __slots__ = ("storage", "resolver")

    def __init__(self, storage: _Storage, resolver: _Resolver) -> None:
        self.storage, self.resolver = storage, resolver

    def tensor(self, offset: Any, size: Any, stride: Any, requires_grad: Any, dtype: str) -> Any:
        if type(offset) is not int:
            raise TorchTypeError(f"storage offset {_short(offset)} is not an int")
        p = _PendingTensor(self.storage, offset, _ints(size, "size"), _ints(stride, "stride"),
                           bool(requires_grad), dtype)
        self.resolver.keep.append(p)  # the resolver caches by id: p must outlive the load
        return self.resolver.tensor(p)


_LIVE_GLOBALS: Dict[Tuple[str, str], Any] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
    ("torch", "Size"): Size,
    ("torch", "device"): device,
}


def _live_global(module: str, name: str) -> Any:
    """What a global of torch's becomes with weights_only=False; None for any other module's."""
    found = _LIVE_GLOBALS.get((module, name))
    if found is not None:
        return found
    if module in ("torch", "torch.storage") and name == "UntypedStorage":
        return _StorageType("uint8")
    if module == "torch" and name in _STORAGE_DTYPES:
        return _StorageType(_STORAGE_DTYPES[name])
    if module == "torch" and name in _TORCH_DTYPE_NAMES:
        alias = _ALIASES.get(name, name)
        found = getattr(_dtype, "bool_" if alias == "bool" else alias, None)
        if isinstance(found, _dtype.dtype):
            return found
    if module == "torch" or module.startswith("torch."):
        raise TorchObject(
            f"the checkpoint pickles {module}.{name}, one of torch's own classes or functions "
            "(a whole torch model saved with torch.save(model)?): rustgrad cannot rebuild "
            "torch's objects. In torch, save model.state_dict() instead, and load it into the "
            "rustgrad model with load_state_dict().")
    return None


def load_zip_objects(names: List[str], read: Callable[[str], bytes], place: Place,
                     pickle_module: Any = None, **pickle_load_args: Any) -> Any:
    """Loads a torch zip checkpoint with Python's unpickler (`pickle_module`'s): any object it
    names is built, so a hostile file can run any code. torch's tensor globals become rustgrad
    tensors; other torch objects raise TorchObject."""
    pkl_bytes, storage_bytes, big_endian = _zip_parts(names, read)
    resolver = _Resolver(storage_bytes, big_endian, place, len(pkl_bytes))
    storages: Dict[str, _Storage] = {}
    base = (pickle_module or pickle).Unpickler

    class Unpickler(base):  # type: ignore[misc, valid-type]
        def find_class(self, module: str, name: str) -> Any:
            found = _live_global(module, name)
            return found if found is not None else super().find_class(module, name)

        def persistent_load(self, pid: Any) -> Any:
            return _LiveStorage(_storage_of(pid, storages), resolver)

    pickle_load_args.setdefault("encoding", "utf-8")
    out = Unpickler(io.BytesIO(pkl_bytes), **pickle_load_args).load()
    if resolver.widened:
        warnings.warn("rustgrad has no bfloat16: bfloat16 tensors were loaded as float32 "
                      "(exactly, every bfloat16 value is a float32 value)", stacklevel=3)
    return out
