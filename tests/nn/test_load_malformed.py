"""rustgrad.load on malformed files: one RuntimeError naming the file and what is wrong, never a
KeyError, UnicodeDecodeError, JSONDecodeError or AttributeError from inside, and no member is
inflated past the size its header declares or past the stated bound."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path
from typing import Any, Callable, Dict

import numpy as np
import pytest
import rustgrad
from rustgrad import serialization

_FORMAT = "rustgrad-checkpoint/1"


def _npy(arr: Any) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _zip(path: Path, members: Dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _structure(root: Any, fmt: str = _FORMAT) -> bytes:
    return json.dumps({"format": fmt, "root": root}).encode()


_TENSOR = {"$": "tensor", "ref": 0}

CASES = {
    "not_a_zip": (lambda p: p.write_bytes(b"plain text, not a checkpoint"), "not a zip archive"),
    "empty_file": (lambda p: p.write_bytes(b""), "not a zip archive"),
    "no_structure": (lambda p: _zip(p, {"data/0.npy": _npy(np.ones(2))}), "no structure.json"),
    "structure_not_utf8": (lambda p: _zip(p, {"structure.json": b"\xff\xfe\x00"}),
                           "not valid JSON text"),
    "structure_not_json": (lambda p: _zip(p, {"structure.json": b"{root: "}), "not valid JSON text"),
    "structure_a_list": (lambda p: _zip(p, {"structure.json": b"[1, 2]"}), "no root object"),
    "wrong_format": (lambda p: _zip(p, {"structure.json": _structure(1, "other/9")}),
                     "unsupported checkpoint format"),
    "missing_array": (lambda p: _zip(p, {"structure.json": _structure(_TENSOR)}),
                      "'data/0.npy' is missing"),
    "array_not_npy": (lambda p: _zip(p, {"structure.json": _structure(_TENSOR),
                                          "data/0.npy": b"garbage"}), "not a valid .npy array"),
    "node_missing_field": (lambda p: _zip(p, {"structure.json": _structure({"$": "dtype"})}),
                           "malformed structure.json"),
    "node_wrong_type": (lambda p: _zip(p, {"structure.json": _structure({"$": "list", "items": 3})}),
                        "malformed structure.json"),
    "items_not_pairs": (lambda p: _zip(p, {"structure.json": _structure({"$": "dict", "items": [1]})}),
                        "malformed structure.json"),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_load_malformed_file_raises_one_error_naming_file_and_problem(case, tmp_path):
    make, phrase = CASES[case]
    path = tmp_path / f"{case}.rgt"
    make(path)
    with pytest.raises(RuntimeError) as info:
        rustgrad.load(path)
    msg = str(info.value)
    assert str(path) in msg and phrase in msg, msg


def test_load_bad_crc_is_reported_as_a_corrupt_member_not_a_non_zip(tmp_path):
    path = tmp_path / "crc.rgt"
    rustgrad.save({"w": rustgrad.arange(64.0)}, path)
    raw = bytearray(path.read_bytes())
    start = raw.index(b"\x93NUMPY")  # the stored .npy payload: flip a data byte
    raw[start + 200] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(RuntimeError, match=r"crc\.rgt: member 'data/0\.npy' is corrupt \(Bad CRC-32"):
        rustgrad.load(path)


def test_load_refuses_member_inflating_past_the_stated_ratio_before_inflating(tmp_path):
    big = _npy(np.zeros(4_000_000, dtype=np.uint8))  # deflates about 4000x
    path = _zip(tmp_path / "bomb.rgt", {"structure.json": _structure(_TENSOR), "data/0.npy": big},
                compression=zipfile.ZIP_DEFLATED)
    with pytest.raises(RuntimeError, match="would inflate .* refused"):
        rustgrad.load(path)


def test_load_refuses_member_declaring_more_than_the_bound(tmp_path, monkeypatch):
    path = tmp_path / "big.rgt"
    rustgrad.save(rustgrad.ones(1000), path)
    monkeypatch.setattr(serialization, "MAX_MEMBER_BYTES", 100)
    with pytest.raises(RuntimeError, match="more than the bound of 100"):
        rustgrad.load(path)


def test_load_member_longer_than_its_header_declares_is_refused(tmp_path):
    path = tmp_path / "short.rgt"
    rustgrad.save(rustgrad.ones(8), path)
    raw = bytearray(path.read_bytes())
    # shrink the size the central directory declares for data/0.npy by 16 bytes
    name = b"data/0.npy"
    cd = raw.rindex(b"PK\x01\x02" + b"", 0, raw.rindex(name))
    size_at = cd + 24  # uncompressed size field in the central directory header
    size = int.from_bytes(raw[size_at:size_at + 4], "little")
    raw[size_at:size_at + 4] = (size - 16).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(RuntimeError, match=r"short\.rgt: member 'data/0\.npy'"):
        rustgrad.load(path)


def test_load_stream_without_name_is_named_stream():
    with pytest.raises(RuntimeError, match="rustgrad.load: <stream>: not a rustgrad checkpoint \\(not a zip archive"):
        rustgrad.load(io.BytesIO(b"nope"))


def test_load_well_formed_file_still_round_trips(tmp_path):
    path = tmp_path / "ok.rgt"
    rustgrad.save({"w": rustgrad.arange(3.0), "n": 2}, path)
    out = rustgrad.load(path)
    assert out["n"] == 2 and out["w"].tolist() == [0.0, 1.0, 2.0]


# ---- malformed files found by tests/programs/fuzz_load.py, made from valid files by byte surgery


def _saved(obj: Any) -> bytes:
    buf = io.BytesIO()
    rustgrad.save(obj, buf)
    return buf.getvalue()


def _rezipped(raw: bytes, edit: Callable[[str, bytes], bytes]) -> bytes:
    """The archive again with each member's bytes passed through edit (so CRCs stay right)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, edit(name, src.read(name)))
    return out.getvalue()


def _npy_header_edited(npy: bytes, old: bytes, new: bytes) -> bytes:
    """A version 1.0 .npy with `old` replaced by `new` in its header, its padding adjusted so
    that the header keeps its length and the data stays where it was."""
    header_len = int.from_bytes(npy[8:10], "little")
    header, data = npy[10:10 + header_len], npy[10 + header_len:]
    assert npy[6:8] == b"\x01\x00" and old in header
    edited = header.replace(old, new, 1).rstrip(b" \n")
    assert len(edited) < header_len
    return npy[:10] + edited + b" " * (header_len - 1 - len(edited)) + b"\n" + data


def _load_error(tmp_path: Path, raw: bytes) -> str:
    path = tmp_path / "bad.rgt"
    path.write_bytes(raw)
    with pytest.raises(RuntimeError) as info:
        rustgrad.load(path)
    msg = str(info.value)
    assert msg.startswith(f"rustgrad.load: {path}: "), msg
    return msg


def test_load_zip_version_needed_too_high_is_malformed_not_notimplemented(tmp_path):
    raw = bytearray(_saved({"w": rustgrad.ones(2)}))
    cd = raw.index(b"PK\x01\x02")
    struct.pack_into("<H", raw, cd + 6, 231)  # "version needed to extract": 23.1
    assert "zip file version 23.1" in _load_error(tmp_path, bytes(raw))


def test_load_central_directory_offset_past_its_place_is_malformed_not_valueerror(tmp_path):
    raw = bytearray(_saved({"w": rustgrad.ones(2)}))
    eocd = raw.rindex(b"PK\x05\x06")
    offset = struct.unpack_from("<I", raw, eocd + 16)[0]
    struct.pack_into("<I", raw, eocd + 16, offset + 10000)
    assert "cannot be read" in _load_error(tmp_path, bytes(raw))


@pytest.mark.parametrize("old,new,kind", [
    (b"{'descr'", b"{('descr'", "TokenError"),  # a bracket never closed
    (b"'descr': '<f8'", b"'descr': '(,)f8'", "SyntaxError"),  # a dtype string NumPy cannot parse
], ids=["unclosed_bracket", "bad_dtype_string"])
def test_load_malformed_npy_header_is_malformed_not_a_parser_error(tmp_path, old, new, kind):
    raw = _saved(rustgrad.ones(2, dtype=rustgrad.float64))
    bad = _rezipped(raw, lambda n, b: _npy_header_edited(b, old, new) if n.endswith(".npy") else b)
    msg = _load_error(tmp_path, bad)
    assert "'data/0.npy' is not a valid .npy array (bad header" in msg and kind in msg, msg


def test_load_npy_header_declaring_more_than_it_holds_is_refused_before_allocating(tmp_path):
    raw = _saved(rustgrad.ones(2, dtype=rustgrad.float64))
    bad = _rezipped(raw, lambda n, b: (_npy_header_edited(b, b"(2,)", b"(100000000000,)")
                                       if n.endswith(".npy") else b))
    msg = _load_error(tmp_path, bad)  # 800 GB: a MemoryError if it were allocated first
    assert "declares shape (100000000000,) of float64 (800000000000 bytes) but holds 16" in msg


def test_load_npy_header_declaring_fewer_elements_than_it_holds_is_refused(tmp_path):
    raw = _saved(rustgrad.ones(4, dtype=rustgrad.float32))
    bad = _rezipped(raw, lambda n, b: (_npy_header_edited(b, b"(4,)", b"(3,)")
                                       if n.endswith(".npy") else b))
    assert "(12 bytes) but holds 16 bytes" in _load_error(tmp_path, bad)


@pytest.mark.parametrize("obj", [rustgrad.ones(2), rustgrad.device("cpu")],
                         ids=["tensor_device", "device_node"])
def test_load_bad_device_string_is_malformed_with_the_file_name(tmp_path, obj):
    raw = _saved(obj)
    bad = _rezipped(raw, lambda n, b: b.replace(b'"cpu"', b'"~pu"') if n == "structure.json" else b)
    assert "bad device '~pu'" in _load_error(tmp_path, bad)


def test_load_bad_saved_device_is_ignored_when_map_location_says_where(tmp_path):
    # as in torch, a map_location that names the device does not consult the saved one
    raw = _saved(rustgrad.ones(2))
    bad = _rezipped(raw, lambda n, b: b.replace(b'"cpu"', b'"~pu"') if n == "structure.json" else b)
    path = tmp_path / "mapped.rgt"
    path.write_bytes(bad)
    assert rustgrad.load(path, map_location="cpu").tolist() == [1.0, 1.0]


@pytest.mark.parametrize("parameter", [False, True], ids=["tensor", "parameter"])
def test_load_integer_tensor_requiring_grad_is_malformed_with_the_file_name(tmp_path, parameter):
    t = rustgrad.arange(3)
    raw = _saved(rustgrad.nn.Parameter(t, requires_grad=False) if parameter else t)
    flag = b'"requires_grad": false'
    bad = _rezipped(raw, lambda n, b: b.replace(flag, b'"requires_grad": true')
                    if n == "structure.json" else b)
    assert bad != _rezipped(raw, lambda n, b: b)
    assert "torch.int64 is marked as requiring grad" in _load_error(tmp_path, bad)


def _torch_saved(obj: Any) -> bytes:
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _pickle_edited(raw: bytes, old: bytes, new: bytes) -> bytes:
    def edit(name: str, data: bytes) -> bytes:
        if name.endswith("/data.pkl"):
            assert old in data
            return data.replace(old, new)
        return data
    return _rezipped(raw, edit)


def test_load_torch_file_with_bad_storage_location_is_malformed(tmp_path):
    import torch

    bad = _pickle_edited(_torch_saved(torch.ones(2)), b"cpu", b"~pu")
    assert "bad device '~pu'" in _load_error(tmp_path, bad)


def test_load_torch_file_with_integer_tensor_requiring_grad_is_malformed(tmp_path):
    import torch

    raw = _torch_saved(torch.ones(2, requires_grad=True))
    bad = _pickle_edited(raw, b"FloatStorage", b"ShortStorage")  # same bytes, now int16
    assert "torch.int16 is marked as requiring grad" in _load_error(tmp_path, bad)
