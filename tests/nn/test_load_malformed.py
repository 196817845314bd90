"""rustgrad.load on malformed files: one RuntimeError naming the file and what is wrong, never a
KeyError, UnicodeDecodeError, JSONDecodeError or AttributeError from inside, and no member is
inflated past the size its header declares or past the stated bound."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any, Dict

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
