"""rustgrad.load reads checkpoints written by torch.save (zip and legacy formats) without importing
torch and without running code from the file: only an allow-list of tensor-rebuilding globals
unpickles, anything else is refused with pickle.UnpicklingError, as torch's weights_only=True."""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import textwrap
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np
import pytest
import rustgrad
import torch

from ..models import cnn, state_arrays, twin


def _save(obj: Any, path: Path, fmt: str) -> Path:
    torch.save(obj, path, _use_new_zipfile_serialization=(fmt == "zip"))
    return path


FORMATS = ["zip", "legacy"]


def _assert_tensor_same(r: Any, t: Any, what: str) -> None:
    assert isinstance(r, rustgrad.Tensor), what
    assert str(r.dtype) == str(t.dtype), what
    assert tuple(r.shape) == tuple(t.shape), what
    assert r.requires_grad == t.requires_grad, what
    assert isinstance(r, rustgrad.nn.Parameter) == isinstance(t, torch.nn.Parameter), what
    assert r.is_contiguous(), what
    np.testing.assert_array_equal(r.detach().numpy(), t.detach().numpy(), err_msg=what)


def _tensors() -> Dict[str, Any]:
    gen = torch.Generator().manual_seed(0)
    base = torch.randn(5, 6, generator=gen, dtype=torch.float64)
    return {
        "f32": torch.randn(3, 4, generator=gen),
        "f16": torch.randn(4, generator=gen).half(),
        "f64": torch.randn(2, 2, generator=gen, dtype=torch.float64),
        "i64": torch.arange(-3, 3),
        "i32": torch.arange(5, dtype=torch.int32),
        "i16": torch.arange(4, dtype=torch.int16),
        "i8": torch.tensor([-128, 0, 127], dtype=torch.int8),
        "u8": torch.tensor([0, 200, 255], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "scalar": torch.tensor(7),
        "empty": torch.zeros(0, 3),
        "view": base[1:4, 2:5].t(),  # non-contiguous, with an offset into a shared storage
        "strided": base[::2, 1::3],
        "base": base,
        "param": torch.nn.Parameter(torch.ones(2, 3)),
        "frozen": torch.nn.Parameter(torch.zeros(2), requires_grad=False),
        "grad": torch.ones(3, requires_grad=True),
    }


@pytest.mark.parametrize("fmt", FORMATS)
def test_tensors_of_every_stored_dtype_view_and_flag_load_as_torch_loads_them(tmp_path, fmt):
    path = _save(_tensors(), tmp_path / "t.pt", fmt)

    r, t = rustgrad.load(path), torch.load(path)

    assert list(r) == list(t)
    for k in t:
        _assert_tensor_same(r[k], t[k], k)


def test_stream_checkpoint_loads(tmp_path):
    buf = io.BytesIO()
    torch.save({"w": torch.arange(4.0)}, buf)
    buf.seek(0)

    assert rustgrad.load(buf)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_torch_sequential_state_dict_loads_into_rustgrad_model(tmp_path):
    tm, _ = twin(cnn)
    tm(torch.randn(4, 1, 8, 8)).sum().backward()  # moves BatchNorm's running stats
    tm[0].weight.data = tm[0].weight.data.double().float()  # a fresh storage for one weight
    path = tmp_path / "model.pt"
    torch.save(tm.state_dict(), path)
    rm = cnn(rustgrad)

    state = rustgrad.load(path)
    rm.load_state_dict(state)

    assert state["1.num_batches_tracked"].dtype == rustgrad.int64
    assert state["1.num_batches_tracked"].item() == 1
    assert state._metadata == torch.load(path)._metadata
    for k, v in state_arrays(tm).items():
        np.testing.assert_array_equal(state_arrays(rm)[k], v, err_msg=k)
    x = np.random.default_rng(1).normal(size=(2, 1, 8, 8)).astype(np.float32)
    tm.eval()
    rm.eval()
    np.testing.assert_allclose(rm(rustgrad.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_nested_checkpoint_of_numbers_strings_and_containers(tmp_path):
    obj = {"epoch": 3, "lr": 0.1, "name": "run", "none": None, "inf": float("inf"),
           "flags": [True, False], "pair": (1, "a"), "set": {1, 2}, "bytes": b"\x00\xff",
           "size": torch.Size([2, 3]), "dtype": torch.float16, "device": torch.device("cpu"),
           "nested": OrderedDict(w=[torch.ones(2), {"b": torch.zeros(1, dtype=torch.int64)}])}
    path = _save(obj, tmp_path / "ckpt.pt", "zip")

    r = rustgrad.load(path)

    assert {k: r[k] for k in ("epoch", "lr", "name", "none", "inf", "flags", "pair", "set",
                              "bytes")} == {k: obj[k] for k in ("epoch", "lr", "name", "none",
                                                                 "inf", "flags", "pair", "set",
                                                                 "bytes")}
    assert isinstance(r["size"], rustgrad.Size) and r["size"] == (2, 3)
    assert r["dtype"] is rustgrad.float16 and r["device"] == rustgrad.device("cpu")
    assert isinstance(r["nested"], OrderedDict)
    assert r["nested"]["w"][0].tolist() == [1.0, 1.0]
    assert r["nested"]["w"][1]["b"].dtype == rustgrad.int64


def test_one_tensor_referenced_twice_loads_as_one_tensor(tmp_path):
    t = torch.ones(3)
    a, b = rustgrad.load(_save([t, t], tmp_path / "twice.pt", "zip"))

    assert a is b


def test_parameter_with_python_attributes_loads_as_parameter(tmp_path):
    p = torch.nn.Parameter(torch.ones(2))
    p.note = "tagged"  # torch pickles it with _rebuild_parameter_with_state

    r = rustgrad.load(_save({"p": p}, tmp_path / "p.pt", "zip"))["p"]

    assert isinstance(r, rustgrad.nn.Parameter) and r.requires_grad and r.tolist() == [1.0, 1.0]


def test_map_location_forms(tmp_path):
    path = _save({"w": torch.ones(2)}, tmp_path / "w.pt", "zip")

    assert str(rustgrad.load(path, map_location="cpu")["w"].device) == "cpu"
    assert str(rustgrad.load(path, map_location=rustgrad.device("cpu"))["w"].device) == "cpu"
    assert str(rustgrad.load(path, map_location={"cuda:0": "cpu"})["w"].device) == "cpu"
    seen = []
    rustgrad.load(path, map_location=lambda t, loc: seen.append(loc) or t)
    assert seen == ["cpu"]


def test_bfloat16_loads_as_float32_exactly_with_a_warning(tmp_path):
    t = torch.randn(6, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    path = _save({"w": t}, tmp_path / "bf.pt", "zip")

    with pytest.warns(UserWarning, match="bfloat16 tensors were loaded as float32"):
        w = rustgrad.load(path)["w"]

    assert w.dtype == rustgrad.float32
    np.testing.assert_array_equal(w.numpy(), t.float().numpy())


def test_tensor_of_a_type_rustgrad_does_not_store_is_refused(tmp_path):
    path = _save({"w": torch.ones(2, dtype=torch.uint16)}, tmp_path / "u16.pt", "zip")

    with pytest.raises(RuntimeError, match=r"u16\.pt: .*torch\.uint16, which rustgrad does not"):
        rustgrad.load(path)


# ---- refusing code ---------------------------------------------------------------------------
class _System:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (os.system, (f"touch {self.marker}",))


# weights_only=False unpickles what the file says, as torch's (tested in
# tests/nn/test_save_whole_module.py); the legacy format always loads weights only
@pytest.mark.parametrize("fmt,weights_only", [(fmt, w) for fmt in FORMATS for w in (None, True)]
                         + [("legacy", False)] * ("legacy" in FORMATS))
def test_os_system_global_is_refused_without_running(tmp_path, fmt, weights_only):
    marker = tmp_path / "pwned"
    path = _save({"w": torch.ones(2), "evil": _System(marker)}, tmp_path / "evil.pt", fmt)

    with pytest.raises(pickle.UnpicklingError) as info:
        rustgrad.load(path, weights_only=weights_only)

    msg = str(info.value)
    assert "evil.pt" in msg and "Weights only load failed" in msg, msg
    assert f"Unsupported global: GLOBAL {os.system.__module__}.system" in msg, msg
    assert "never unpickles arbitrary objects" in msg, msg
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(path, weights_only=True)  # the oracle refuses it too
    assert not marker.exists()


def _torch_zip(path: Path, pkl: bytes, members: Optional[Dict[str, bytes]] = None) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", b"little")
        for name, data in (members or {}).items():
            z.writestr(f"archive/data/{name}", data)
        z.writestr("archive/version", b"3\n")
    return path


def test_builtins_eval_global_is_refused(tmp_path):
    pkl = b"\x80\x02cbuiltins\neval\nX\x0c\x00\x00\x00print('hi')\x85R."
    path = _torch_zip(tmp_path / "eval.pt", pkl)

    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL builtins.eval"):
        rustgrad.load(path)


def test_build_opcode_cannot_change_rustgrad_dtypes(tmp_path):
    # torch.float32, then BUILD with slot state {"name": "hacked"}: a pickle that would rename
    # the dtype if the unpickler handed out rustgrad's own dtype object
    pkl = (b"\x80\x02ctorch\nfloat32\nN}X\x04\x00\x00\x00name"
           b"X\x06\x00\x00\x00hackeds\x86b.")
    path = _torch_zip(tmp_path / "build.pt", pkl)

    # BUILD acts only on tensors and OrderedDict/Counter state, never on a global (as torch)
    with pytest.raises(pickle.UnpicklingError, match="Can only build Tensor, Parameter, "
                       "OrderedDict.* but got the global torch.float32 .BUILD at byte 41"):
        rustgrad.load(path)
    with pytest.raises(pickle.UnpicklingError, match="Can only build Tensor, Parameter, "
                       "OrderedDict.* but got <class 'torch.dtype'>"):
        torch.load(path, weights_only=True)

    assert rustgrad.float32.name == "float32" and repr(rustgrad.float32) == "torch.float32"


def test_plain_pickle_file_is_not_unpickled(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "plain.pkl"
    path.write_bytes(pickle.dumps(_System(marker)))

    with pytest.raises(RuntimeError, match="not a rustgrad checkpoint"):
        rustgrad.load(path)
    assert not marker.exists()


# ---- malformed torch checkpoints ---------------------------------------------------------------
class _Rec:
    """A tensor record pickled with torch's own globals, storage and geometry chosen freely."""

    def __init__(self, numel: int, offset: int, size: tuple, stride: tuple) -> None:
        self.numel, self.offset, self.size, self.stride = numel, offset, size, stride


class _Storage:
    def __init__(self, numel: int) -> None:
        self.numel = numel


class _RecPickler(pickle.Pickler):
    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _Storage):
            return ("storage", torch.FloatStorage, "0", "cpu", obj.numel)
        return None

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, _Rec):
            return (torch._utils._rebuild_tensor_v2,
                    (_Storage(obj.numel), obj.offset, obj.size, obj.stride, False, OrderedDict()))
        return NotImplemented


class _LegacyRecPickler(_RecPickler):
    def persistent_id(self, obj: Any) -> Any:
        pid = super().persistent_id(obj)
        return None if pid is None else (*pid, None)  # no storage view, as torch writes


def _rec_zip(path: Path, rec: _Rec, storage: bytes) -> Path:
    buf = io.BytesIO()
    _RecPickler(buf, protocol=2).dump({"w": rec})
    return _torch_zip(path, buf.getvalue(), {"0": storage})


def test_hand_made_record_loads_like_torch(tmp_path):
    path = _rec_zip(tmp_path / "ok.pt", _Rec(6, 1, (2, 2), (1, 2)),
                    np.arange(6, dtype="<f4").tobytes())

    _assert_tensor_same(rustgrad.load(path)["w"], torch.load(path)["w"], "w")


@pytest.mark.parametrize("rec,phrase,torch_phrase", [
    (_Rec(6, 3, (2, 2), (2, 1)), r"setStorage: sizes \[2, 2\], strides \[2, 1\], storage offset 3, "
     r"and itemsize 4 requiring a storage size of 28 are out of bounds for storage of size 24 "
     r"\(storage '0', 6 elements: the tensor reaches past its storage\)", "not resizable"),
    (_Rec(6, 0, (7,), (1,)), "requiring a storage size of 28 are out of bounds for storage of "
     "size 24", "not resizable"),
    (_Rec(6, 0, (2,), (-1,)), r"negative strides .*sizes=\[2\] and strides=\[-1\]",
     r"Storage size calculation overflowed with sizes=\[2\] and strides=\[-1\]"),
    (_Rec(6, 0, (2, 2), (1,)), r"unequal size length \(2\) and stride length \(1\)",
     r"unequal size length \(2\) and stride length \(1\)"),
    (_Rec(6, -1, (2,), (1,)), r"Tensor: invalid storage offset -1 \(storage '0' holds 6",
     "invalid storage offset -1"),
    (_Rec(6, 0, (-2,), (1,)), r"negative dimension -2: \[-2\]", "overflow"),
], ids=["offset", "size", "negative", "rank", "negative-offset", "negative-size"])
def test_geometry_outside_the_storage_is_refused(tmp_path, rec, phrase, torch_phrase):
    path = _rec_zip(tmp_path / "bad.pt", rec, np.arange(6, dtype="<f4").tobytes())

    with pytest.raises(RuntimeError, match=f"bad.pt: malformed torch checkpoint: .*{phrase}"):
        rustgrad.load(path)
    with pytest.raises(RuntimeError, match=torch_phrase):
        torch.load(path, weights_only=True)


def test_storage_shorter_than_declared_is_refused(tmp_path):
    path = _rec_zip(tmp_path / "short.pt", _Rec(6, 0, (6,), (1,)), b"\0" * 8)

    with pytest.raises(RuntimeError, match="member 'archive/data/0' holds 8 bytes"):
        rustgrad.load(path)


def test_missing_storage_member_is_refused(tmp_path):
    buf = io.BytesIO()
    _RecPickler(buf, protocol=2).dump({"w": _Rec(6, 0, (6,), (1,))})
    path = _torch_zip(tmp_path / "missing.pt", buf.getvalue())

    with pytest.raises(RuntimeError, match="member 'archive/data/0' is missing"):
        rustgrad.load(path)


def test_truncated_data_pkl_is_reported_as_malformed(tmp_path):
    good = _save({"w": torch.ones(2)}, tmp_path / "good.pt", "zip")
    with zipfile.ZipFile(good) as z:
        pkl = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    path = _torch_zip(tmp_path / "trunc.pt", pkl[: len(pkl) // 2])

    with pytest.raises(RuntimeError, match="trunc.pt: malformed torch checkpoint: the pickle"):
        rustgrad.load(path)


def test_truncated_legacy_file_is_reported_as_malformed(tmp_path):
    good = _save({"w": torch.ones(64)}, tmp_path / "good.pt", "legacy")
    path = tmp_path / "trunc.pt"
    path.write_bytes(good.read_bytes()[:-10])

    with pytest.raises(RuntimeError, match="trunc.pt: malformed torch checkpoint: .*truncated"):
        rustgrad.load(path)


# ---- torch is never imported --------------------------------------------------------------------
def test_loading_never_imports_torch(tmp_path):
    import safetensors.torch

    _save(_tensors(), tmp_path / "z.pt", "zip")
    _save(_tensors(), tmp_path / "l.pt", "legacy")
    safetensors.torch.save_file({"w": torch.arange(3.0)}, tmp_path / "w.safetensors")
    code = textwrap.dedent(f"""
        import sys
        sys.modules["torch"] = None  # any attempt to import torch raises ImportError
        import rustgrad
        z = rustgrad.load({str(tmp_path / "z.pt")!r})
        l = rustgrad.load({str(tmp_path / "l.pt")!r})
        w = rustgrad.load({str(tmp_path / "w.safetensors")!r})
        assert z["view"].tolist() == l["view"].tolist()
        assert w["w"].tolist() == [0.0, 1.0, 2.0]
        assert sys.modules["torch"] is None
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)

    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_shared_containers_resolve_once_and_cycles_survive(tmp_path):
    shared: Any = [torch.ones(1)]
    for _ in range(60):  # 2**60 paths, one object per level
        shared = [shared, shared]
    loop: Any = [1]
    loop.append(loop)
    path = _save({"dag": shared, "loop": loop}, tmp_path / "dag.pt", "zip")

    r = rustgrad.load(path)

    assert r["dag"][0] is r["dag"][1] and r["loop"][1] is r["loop"]


def test_map_location_moves_tensors_to_another_device(tmp_path, sim_cuda):
    path = _save({"w": torch.ones(2)}, tmp_path / "w.pt", "zip")

    w = rustgrad.load(path, map_location="cuda")["w"]

    assert w.device.type == "cuda" and w.cpu().tolist() == [1.0, 1.0]


def _legacy(path: Path, rec: _Rec, count: int, payload: bytes) -> Path:
    buf = io.BytesIO()
    for head in (0x1950A86A20F9469CFC6C, 1001, {"protocol_version": 1001, "little_endian": True}):
        pickle.dump(head, buf, protocol=2)
    _LegacyRecPickler(buf, protocol=2).dump({"w": rec})
    pickle.dump(["0"], buf, protocol=2)
    path.write_bytes(buf.getvalue() + count.to_bytes(8, "little") + payload)
    return path


def test_hand_made_legacy_record_loads_like_torch(tmp_path):
    path = _legacy(tmp_path / "ok.pt", _Rec(4, 1, (3,), (1,)), 4,
                   np.arange(4, dtype="<f4").tobytes())

    _assert_tensor_same(rustgrad.load(path)["w"], torch.load(path)["w"], "w")


def test_legacy_storage_declaring_more_than_the_file_holds_is_refused(tmp_path):
    huge = 1 << 60
    path = _legacy(tmp_path / "huge.pt", _Rec(huge, 0, (2,), (1,)), huge, b"\0" * 8)

    with pytest.raises(RuntimeError, match="huge.pt: malformed torch checkpoint: storage '0' is"
                                           " truncated"):
        rustgrad.load(path)


def test_training_checkpoint_with_optimizer_state_resumes_in_rustgrad(tmp_path):
    tm, rm = twin(lambda lib: lib.nn.Linear(3, 2))
    opt = torch.optim.Adam(tm.parameters(), lr=0.1)
    tm(torch.randn(4, 3)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    torch.save({"model": tm.state_dict(), "optim": opt.state_dict(), "epoch": 1}, path)

    ckpt = rustgrad.load(path, weights_only=False)  # a torch checkpoint of plain data
    rm.load_state_dict(ckpt["model"])
    ropt = rustgrad.optim.Adam(rm.parameters(), lr=0.1)
    ropt.load_state_dict(ckpt["optim"])

    assert ckpt["epoch"] == 1
    assert ckpt["optim"]["param_groups"] == torch.load(path)["optim"]["param_groups"]
    x = np.ones((1, 3), dtype=np.float32)
    opt.zero_grad()
    tm(torch.tensor(x)).sum().backward()
    rm(rustgrad.tensor(x)).sum().backward()
    opt.step()
    ropt.step()
    for k, v in state_arrays(tm).items():
        np.testing.assert_allclose(state_arrays(rm)[k], v, rtol=1e-6, atol=1e-7, err_msg=k)
