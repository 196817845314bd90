"""Random torch checkpoints at the pickle-opcode level, for fuzzing rustgrad.load.

`random_pickle(draw)` writes a `data.pkl` around valid tensor records (torch's
`_rebuild_tensor_v2`/`_v3`/`_rebuild_parameter` calls on persistent storages), nested in lists,
dicts, OrderedDicts (with a state_dict's `_metadata`), tuples and the memo, and BUILD as torch's
`set_`. Up to three of its choices are hostile: geometry from the edges (negative, zero, past
the end, huge), BUILD slot state such as {"offset": -1}, BUILD/SETITEM/APPEND/ADDITEMS on the
wrong target, refused globals, unset memo entries, stray opcodes of every kind. A pickle written
without a hostile choice is "clean": a valid checkpoint in torch's own opcode subset, which must
load as torch loads it (`assert_same_as_torch`). `draw(n)` returns an int in [0, n): hypothesis
drives it in tests/nn/test_checkpoint_safety.py, libFuzzer's bytes in tests/programs/fuzz_load.py
(one generator for both). `torch_zip` wraps a pickle with the storages (`STORAGES`) into the zip
torch.save writes; `check_loaded` is the property both fuzzers assert of whatever loads.

Every storage byte pattern is chosen so that each element type reads it as finite values; an
element of a loaded tensor that is not one of its storage's values was read from outside it.
"""

from __future__ import annotations

import io
import struct
import zipfile
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

Draw = Callable[[int], int]

FLOAT_NUMEL = 64
# "f": a FloatStorage of distinct values; "u": an UntypedStorage whose bytes stay below 0x40,
# so that float16/float32/float64 read them as finite numbers (the top byte holds the exponent)
STORAGES: Dict[str, bytes] = {
    "f": (np.arange(FLOAT_NUMEL, dtype="<f4") + 0.5).tobytes(),
    "u": bytes((7 * i + 3) % 61 for i in range(256)),
}
_STORAGE_TYPE = {"f": ("torch", "FloatStorage"), "u": ("torch.storage", "UntypedStorage")}
_V3_DTYPES = ["float32", "float16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"]
_NP = {"float32": "<f4", "float16": "<f2", "float64": "<f8", "int64": "<i8", "int32": "<i4",
       "int16": "<i2", "int8": "i1", "uint8": "u1"}

_EDGE_INTS = [-(1 << 63), -2, -1, 0, 1, 2, 3, 4, 7, 8, 16, 63, 64, 65, 255, 256, (1 << 31) - 1,
              1 << 31, (1 << 62), (1 << 63) - 1, 1 << 63, 1 << 64]
_SIZES = [-1, 0, 1, 1, 2, 2, 3, 4, 8, 16, 64, 65, 1 << 40]
_STRIDES = [-1, 0, 1, 1, 1, 2, 3, 8, 16, 64, 1 << 40]
_GLOBALS = [
    ("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_tensor_v3"),
    ("torch._utils", "_rebuild_parameter"), ("torch._utils", "_rebuild_parameter_with_state"),
    ("collections", "OrderedDict"), ("collections", "Counter"), ("builtins", "set"),
    ("builtins", "frozenset"), ("builtins", "bytearray"), ("builtins", "complex"),
    ("__builtin__", "set"), ("_codecs", "encode"), ("torch", "Size"), ("torch", "device"),
    ("torch", "FloatStorage"), ("torch", "UntypedStorage"), ("torch", "float32"),
    ("torch", "bfloat16"), ("torch", "Tensor"), ("builtins", "eval"), ("os", "system"),
    ("builtins", "getattr"), ("rustgrad", "float32"), ("torch._tensor", "_rebuild_from_type_v2"),
]
_ATTRIBUTES = ["_metadata", "version", "items", "keys", "__class__", "__dict__", "clear",
               "offset", "storage", "__setstate__", "move_to_end"]
_OPCODES = [bytes([c]) for c in b"()0123FIJKLMNPQRSTUVXabcdeghijlopqrstu}]"] + [
    bytes([c]) for c in range(0x80, 0x99)]


def text(value: str) -> bytes:
    """BINUNICODE of `value`."""
    data = value.encode("utf-8", "surrogatepass")
    return b"X" + struct.pack("<I", len(data)) + data


def integer(n: int) -> bytes:
    """The shortest of BININT1, BININT and LONG1 that holds `n`."""
    if 0 <= n < 256:
        return b"K" + bytes([n])
    if -(1 << 31) <= n < (1 << 31):
        return b"J" + struct.pack("<i", n)
    data = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(data)]) + data


def global_op(module: str, name: str) -> bytes:
    """GLOBAL module.name."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _pick(draw: Draw, items: List[Any]) -> Any:
    return items[draw(len(items))]


class _Writer:
    """Writes one pickle. At most `budget` choices are hostile (`hostile()` says which); a pickle
    written without any (`clean`) is a valid torch checkpoint, in torch's own opcode subset."""

    def __init__(self, draw: Draw) -> None:
        self.draw = draw
        self.out = io.BytesIO()
        self.slots = 0
        self.budget = draw(4)
        self.clean = True

    def hostile(self, one_in: int) -> bool:
        if self.budget and self.draw(one_in) == 0:
            self.budget -= 1
            self.clean = False
            return True
        return False

    def emit(self, data: bytes) -> None:
        self.out.write(data)

    def put(self) -> None:
        if self.slots < 256 and self.draw(3) == 0:
            self.emit(b"q" + bytes([self.slots]))
            self.slots += 1

    def get(self) -> bytes:
        """A memo entry that was set (or, hostile, one that never was)."""
        if self.hostile(6) or not self.slots:
            return b"h" + bytes([min(self.slots + self.draw(3), 255)])
        return b"h" + bytes([self.draw(self.slots)])

    def ints(self, pool: List[int], most: int) -> None:
        n = self.draw(most + 1)
        self.emit(b"(" + b"".join(integer(_pick(self.draw, pool)) for _ in range(n)) + b"t")

    def storage(self, key: str) -> None:
        numel = FLOAT_NUMEL if key == "f" else len(STORAGES["u"])
        if self.hostile(6):
            numel = _pick(self.draw, [numel - 1, numel + 1, 0, -1, 1 << 62])
        location = "bogus:x" if self.hostile(12) else "cpu"
        self.emit(b"(" + text("storage") + global_op(*_STORAGE_TYPE[key]) + text(key)
                  + text(location) + integer(numel) + b"tQ")
        if self.hostile(8):  # a bare storage, reachable through the memo, is refused
            self.put()

    def geometry(self, room: int) -> None:
        """Offset, size and stride: inside `room` elements, or (hostile) from the edges."""
        ndim = self.draw(4)
        if not self.hostile(3):
            sizes = [1 + self.draw(3) for _ in range(ndim)]
            strides, need = [], 1
            for n in reversed(sizes):  # contiguous, or a broadcast (stride 0) dim now and then
                strides.insert(0, 0 if self.draw(5) == 0 else need)
                need *= n
            self.emit(integer(self.draw(room - need + 1)))
            self.emit(b"(" + b"".join(integer(s) for s in sizes) + b"t")
            self.emit(b"(" + b"".join(integer(s) for s in strides) + b"t")
            return
        self.emit(integer(_pick(self.draw, [0, 1, room - 1, room, room + 1, -1, 1 << 40,
                                            -(1 << 63)])))
        sizes = [_pick(self.draw, _SIZES) for _ in range(ndim)]
        self.emit(b"(" + b"".join(integer(s) for s in sizes) + b"t")
        if self.draw(4) == 0:
            self.ints(_STRIDES, 3)  # a stride of its own length
        else:
            self.emit(b"(" + b"".join(integer(_pick(self.draw, _STRIDES)) for _ in sizes) + b"t")

    def tensor(self) -> str:
        """A tensor record; returns its element type."""
        v3 = self.draw(3) == 0
        if v3:  # an untyped storage read as any element type
            dtype = _pick(self.draw, _V3_DTYPES)
            self.emit(global_op("torch._utils", "_rebuild_tensor_v3") + b"(")
            self.storage("f" if self.hostile(8) else "u")
            self.geometry(256 // (1 if dtype == "bool" else np.dtype(_NP[dtype]).itemsize))
        else:
            dtype = "float32"
            self.emit(global_op("torch._utils", "_rebuild_tensor_v2") + b"(")
            self.storage("u" if self.hostile(8) else "f")
            self.geometry(FLOAT_NUMEL)
        # torch writes v3 records only for types without a storage class of their own, which
        # never require grad (torch 2.15 cannot even load a v3 one that does)
        grad = not v3 and self.draw(6) == 0 or self.hostile(12)
        self.emit(b"\x88" if grad else b"\x89")
        self.emit(global_op("collections", "OrderedDict") + b")R")
        if v3:
            self.emit(global_op("torch", dtype))
        self.emit(b"tR")
        self.put()
        if self.draw(3) == 0 and ((not v3 and not grad) or self.hostile(2)):
            self.build_tensor()  # torch's set_, refused on a tensor that requires grad
        return dtype

    def build_tensor(self) -> None:
        """BUILD on the tensor on top of the stack: torch's `set_` forms, then hostile ones."""
        if not self.hostile(2):
            form = self.draw(3)
            if form == 0:  # (storage, offset, size, stride)
                self.emit(b"(")
                self.storage("f")
                self.geometry(FLOAT_NUMEL)
                self.emit(b"t")
            elif form == 1:  # (storage,)
                self.storage("f")
                self.emit(b"\x85")
            else:  # (): empty
                self.emit(b")")
        elif self.draw(3):  # slot state: {"offset": -1} and the like, on what a tensor holds
            key = _pick(self.draw, ["offset"] * 8 + ["size"] * 2 + ["stride"] * 2 + [
                "storage", "dtype", "requires_grad", "parameter"] + _ATTRIBUTES)
            self.emit(b"N}")
            for _ in range(1 + self.draw(2)):
                self.emit(text(key))
                if key in ("size", "stride"):
                    self.ints(_SIZES if key == "size" else _STRIDES, 3)
                else:
                    self.emit(integer(_pick(self.draw, [-1] * 6 + [1, FLOAT_NUMEL] + _EDGE_INTS)))
                self.emit(b"s")
                key = _pick(self.draw, ["offset", "size", "stride"])
            self.emit(b"\x86")
        elif self.draw(2):  # (a memo entry, maybe this very tensor,)
            self.emit(self.get() + b"\x85")
        else:
            self.emit(b"}" + text(_pick(self.draw, _ATTRIBUTES)) + integer(-1) + b"s")
        self.emit(b"b")

    def value(self, depth: int) -> None:
        if self.hostile(8):
            self.hostile_value(depth)
            return
        # tensors and containers of them most
        kind = _pick(self.draw, [0, 1, 2] + [3] * 6 + [4, 5, 5, 6, 7, 8, 9, 10] if depth < 3
                     else [0, 1, 2, 3, 3, 3, 3, 4])
        if kind == 0:
            self.emit(integer(_pick(self.draw, _EDGE_INTS)))
        elif kind == 1:
            self.emit(_pick(self.draw, [b"N", b"\x88", b"\x89", b"G" + struct.pack(">d", 1.5),
                                        b"G" + struct.pack(">d", float("inf")), b")", b"]", b"}"]))
        elif kind == 2:
            self.emit(text(_pick(self.draw, ["w", "", "\u00e9\u4e2d", "x" * 40])))
        elif kind == 3:
            self.tensor()
        elif kind == 4:
            if self.slots:
                self.emit(self.get())
            else:
                self.emit(b"N")
        elif kind == 5:  # a parameter around a tensor
            name = _pick(self.draw, ["_rebuild_parameter", "_rebuild_parameter_with_state"])
            self.emit(global_op("torch._utils", name) + b"(")
            dtype = self.tensor()
            self.emit(b"\x88" if dtype.startswith("float") and self.draw(4) else b"\x89")
            self.emit(global_op("collections", "OrderedDict") + b")R")
            if name.endswith("state"):
                self.emit(b"}")
            self.emit(b"tR")
            self.put()
        elif kind == 6:  # a list
            self.emit(b"](")
            for _ in range(self.draw(4)):
                self.value(depth + 1)
            self.emit(b"e")
        elif kind == 7:  # a dict, plain or ordered (with a state_dict's _metadata)
            ordered = self.draw(2)
            self.emit(global_op("collections", "OrderedDict") + b")R" if ordered else b"}")
            self.emit(b"(")
            for i in range(self.draw(4)):
                self.emit(text(f"k{i}"))
                self.value(depth + 1)
            self.emit(b"u")
            if ordered and self.draw(2) == 0:
                self.emit(b"}" + text("_metadata") + b"}" + text("") + b"}" + text("version")
                          + integer(1) + b"sssb")
            self.put()
        elif kind == 8:  # a tuple
            n = self.draw(5)
            if n < 4:
                for _ in range(n):
                    self.value(depth + 1)
                self.emit([b")", b"\x85", b"\x86", b"\x87"][n])
            else:
                self.emit(b"(")
                for _ in range(self.draw(5)):
                    self.value(depth + 1)
                self.emit(b"t")
            self.put()
        elif kind == 9:  # a set of numbers, as protocol 2 writes one
            self.emit(global_op("builtins", "set") + b"](" + b"".join(
                integer(self.draw(5)) for _ in range(self.draw(4))) + b"e\x85R")
        else:  # torch.Size, a device, bytes, a bytearray, a complex, a Counter
            self.emit(_pick(self.draw, [
                global_op("torch", "Size") + b"(" + integer(2) + integer(3) + b"t\x85R",
                global_op("torch", "device") + text("cpu") + b"\x85R",
                global_op("_codecs", "encode") + text("ab\u00ff") + text("latin1") + b"\x86R",
                global_op("builtins", "bytearray") + text("ab") + text("latin-1") + b"\x86R",
                global_op("builtins", "complex") + b"G" + struct.pack(">d", 1.5) + integer(-2)
                + b"\x86R",
                global_op("collections", "Counter") + b"}" + text("a") + integer(2) + b"s\x85R",
            ]))

    def hostile_value(self, depth: int) -> None:
        kind = self.draw(7)
        if kind == 0:
            self.stray()
        elif kind == 1:  # a global, called with anything or built on
            self.emit(global_op(*_pick(self.draw, _GLOBALS)))
            action = self.draw(4)
            if action == 0:
                self.emit(b"(")
                for _ in range(self.draw(3)):
                    self.value(depth + 1)
                self.emit(b"tR")
            elif action == 1:
                self.emit(b"}" + text(_pick(self.draw, _ATTRIBUTES)))
                self.value(depth + 1)
                self.emit(b"sb")
            elif action == 2:
                self.emit(b"N}" + text(_pick(self.draw, _ATTRIBUTES)) + integer(1) + b"s\x86b")
        elif kind == 2:  # items added to a set, a list or a dict, or a frozenset
            self.emit(_pick(self.draw, [b"\x8f", b"]", b"}"]) + b"(")
            for _ in range(self.draw(3)):
                self.value(depth + 1)
            self.emit(b"\x90" if self.draw(3) else b"\x91")
        elif kind == 3:  # SETITEM / APPEND onto whatever the last value was
            self.value(depth + 1)
            if self.draw(2):
                self.emit(text("k"))
                self.value(depth + 1)
                self.emit(b"s")
            else:
                self.value(depth + 1)
                self.emit(b"a")
        elif kind == 4:  # an OrderedDict attribute named like one of its methods
            self.emit(global_op("collections", "OrderedDict") + b")R}"
                      + text(_pick(self.draw, _ATTRIBUTES)) + integer(1) + b"sb")
        elif kind == 5:  # a parameter around something else
            self.emit(global_op("torch._utils", "_rebuild_parameter") + b"(")
            self.value(depth + 1)
            self.emit(b"\x88" + global_op("collections", "OrderedDict") + b")RtR")
        else:
            self.emit(_pick(self.draw, [
                global_op("builtins", "bytearray") + integer(1 << 40) + b"\x85R",
                global_op("torch", "Size") + b"(" + integer(-2) + b"t\x85R",
                global_op("torch", "device") + text("bogus:x") + b"\x85R",
                b"\x8a\x09" + b"\xff" * 9,
            ]))

    def stray(self) -> None:
        """Any opcode, with an argument of about the right length."""
        op = _pick(self.draw, _OPCODES)
        self.emit(op)
        argument = {b"K": 1, b"M": 2, b"J": 4, b"h": 1, b"q": 1, b"j": 4, b"r": 4, b"G": 8,
                    b"\x80": 1, b"\x95": 8, b"\x82": 1, b"\x83": 2, b"\x84": 4}.get(op)
        if argument:
            self.emit(bytes(self.draw(256) for _ in range(argument)))
        elif op in (b"X", b"B", b"T"):
            n = _pick(self.draw, [0, 1, 3, 1 << 31, (1 << 32) - 1])
            self.emit(struct.pack("<I", n) + b"abc"[: min(n, 3)])
        elif op in (b"U", b"C", b"\x8c", b"\x8a"):
            self.emit(bytes([_pick(self.draw, [0, 1, 2, 255])]) + b"\x01\x02")
        elif op in (b"\x8d", b"\x8e", b"\x96"):
            self.emit(struct.pack("<Q", _pick(self.draw, [0, 2, 1 << 63])) + b"ab")
        elif op in (b"c", b"i"):
            self.emit(b"%s\n%s\n" % tuple(m.encode() for m in _pick(self.draw, _GLOBALS)))
        elif op in (b"I", b"L", b"F", b"g", b"p", b"P", b"S", b"V"):
            self.emit(_pick(self.draw, [b"0", b"01", b"-1", b"1e999", b"x", b"'a'", b""]) + b"\n")


def random_pickle(draw: Draw) -> Tuple[bytes, bool]:
    """A `data.pkl` (a dict of random values around tensor records, ending with STOP) and
    whether it is clean: a valid torch checkpoint, which must load as torch loads it."""
    w = _Writer(draw)
    w.emit(b"\x80" + bytes([_pick(draw, [3, 4, 5, 6]) if w.hostile(6) else 2]))
    w.emit(b"}")
    w.put()
    w.emit(b"(")
    for i in range(draw(3) + 1):
        w.emit(text(f"t{i}"))
        w.value(0)
        if w.hostile(8):
            w.stray()
    w.emit(b"u")
    if w.hostile(8):
        w.stray()
    w.emit(b".")
    return w.out.getvalue(), w.clean


def torch_zip(pkl: bytes, storages: Optional[Dict[str, bytes]] = None) -> bytes:
    """The bytes of a torch zip checkpoint holding `pkl` and the storages."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", b"little")
        for key, data in (STORAGES if storages is None else storages).items():
            z.writestr(f"archive/data/{key}", data)
        z.writestr("archive/version", b"3\n")
    return buf.getvalue()


def _allowed_values(dtype: str) -> Optional[set]:
    """The values a tensor of `dtype` may hold: its storage's elements, read aligned."""
    if dtype == "bool":
        return None  # any byte reads as False or True: nothing to tell
    values: set = set()
    for raw in STORAGES.values():
        item = np.dtype(_NP[dtype])
        values.update(np.frombuffer(raw[: len(raw) // item.itemsize * item.itemsize],
                                    dtype=item).tolist())
    return values


def tensors_in(obj: Any, seen: Optional[set] = None) -> List[Any]:
    """Every tensor reachable through containers (and OrderedDict attributes)."""
    import rustgrad

    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, rustgrad.Tensor):
        return [obj]
    out: List[Any] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += tensors_in(k, seen) + tensors_in(v, seen)
        for v in getattr(obj, "__dict__", {}).values():
            out += tensors_in(v, seen)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            out += tensors_in(v, seen)
    return out


def check_loaded(obj: Any) -> int:
    """Asserts that every element of every loaded tensor is one of its storage's values (never
    memory from outside it); returns how many tensors were checked."""
    tensors = tensors_in(obj)
    for t in tensors:
        arr = t.detach().cpu().numpy()
        assert arr.size == int(np.prod(t.shape)), (t.shape, arr.shape)
        dtype = str(t.dtype).replace("torch.", "")
        allowed = _allowed_values(dtype)
        if allowed is not None:
            stray = [v for v in arr.ravel().tolist() if v not in allowed]
            assert not stray, f"a {dtype} tensor of shape {tuple(t.shape)} holds values from " \
                              f"outside its storage: {stray[:5]}"
    return len(tensors)


def assert_same_as_torch(mine: Any, theirs: Any, where: str = "root",
                         seen: Optional[set] = None) -> None:
    """Asserts that what rustgrad.load returned is what torch.load returned: the same
    containers (types, keys, order, OrderedDict attributes), numbers, strings, and tensors of
    the same type, shape, flags and values."""
    import rustgrad
    import torch

    seen = set() if seen is None else seen
    if (id(mine), id(theirs)) in seen:  # a container reached again (the memo makes cycles)
        return
    seen.add((id(mine), id(theirs)))

    if isinstance(theirs, torch.Tensor):
        assert isinstance(mine, rustgrad.Tensor), where
        assert str(mine.dtype) == str(theirs.dtype), (where, mine.dtype, theirs.dtype)
        assert tuple(mine.shape) == tuple(theirs.shape), (where, mine.shape, theirs.shape)
        assert mine.requires_grad == theirs.requires_grad, where
        assert isinstance(mine, rustgrad.nn.Parameter) == isinstance(
            theirs, torch.nn.Parameter), where
        a, b = mine.detach().numpy(), theirs.detach().numpy()
        if a.dtype == bool:  # torch keeps the stored byte; any nonzero one is True
            a, b = a.view(np.uint8) != 0, b.view(np.uint8) != 0
        np.testing.assert_array_equal(a, b, err_msg=where)
        return
    if isinstance(theirs, torch.Size):
        assert tuple(mine) == tuple(theirs) and type(mine).__name__ == "Size", where
        return
    if isinstance(theirs, torch.device):
        assert str(mine) == str(theirs), where
        return
    assert type(mine) is type(theirs), (where, type(mine), type(theirs))
    if isinstance(theirs, dict):
        assert list(mine) == list(theirs), (where, list(mine), list(theirs))
        for k in theirs:
            assert_same_as_torch(mine[k], theirs[k], f"{where}[{k!r}]", seen)
        assert sorted(vars(mine)) == sorted(vars(theirs)) if hasattr(theirs, "__dict__") \
            else True, where
        for k, v in getattr(theirs, "__dict__", {}).items():
            assert_same_as_torch(vars(mine)[k], v, f"{where}.{k}", seen)
    elif isinstance(theirs, (list, tuple)):
        assert len(mine) == len(theirs), where
        for i, (x, y) in enumerate(zip(mine, theirs)):
            assert_same_as_torch(x, y, f"{where}[{i}]", seen)
    else:
        assert mine == theirs, (where, mine, theirs)
