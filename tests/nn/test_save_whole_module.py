"""rustgrad.save(model) of a whole module (or any Python object) pickles it in torch's zip layout;
rustgrad.load gives it back only with weights_only=False (Python's unpickler), and the default
weights_only=True refuses it with torch's message, as torch 2.6+ does for torch.save(model)."""

from __future__ import annotations

import io
import pickle
import pickletools
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
import torch


class Holder:
    """A user's object holding tensors (module level: picklable)."""

    def __init__(self, lib: Any) -> None:
        self.a = lib.arange(6.0).reshape(2, 3)
        self.same = self.a
        self.p = lib.nn.Parameter(lib.ones(2))
        self.meta = {"dtype": lib.float64, "size": lib.Size([2, 3]), "raw": b"\x00\x01"}


def model(lib: Any) -> Any:
    return lib.nn.Sequential(lib.nn.Conv2d(1, 2, 3), lib.nn.BatchNorm2d(2), lib.nn.ReLU(),
                             lib.nn.Flatten(), lib.nn.Linear(8, 3))


def saved(obj: Any, **kw: Any) -> io.BytesIO:
    buf = io.BytesIO()
    rustgrad.save(obj, buf, **kw)
    buf.seek(0)
    return buf


def test_whole_module_round_trips_with_weights_only_false(device, tmp_path):
    m = model(rustgrad).to(device)
    m(rustgrad.randn(4, 1, 4, 4, device=device)).sum().backward()  # running stats, grads
    m.eval()
    rustgrad.save(m, tmp_path / "m.pt")

    back = rustgrad.load(tmp_path / "m.pt", weights_only=False)

    assert type(back) is rustgrad.nn.Sequential and repr(back) == repr(m)
    assert not back.training
    x = rustgrad.randn(2, 1, 4, 4, device=device)
    np.testing.assert_array_equal(back(x).detach().cpu().numpy(), m(x).detach().cpu().numpy())
    for (name, p), (_, q) in zip(m.named_parameters(), back.named_parameters()):
        assert type(q) is rustgrad.nn.Parameter and q.requires_grad, name
        assert q.device == p.device and q.grad is None, name  # as torch: grads are not saved
    for (name, b), (_, c) in zip(m.named_buffers(), back.named_buffers()):
        assert c.dtype == b.dtype and c.device == b.device, name
        np.testing.assert_array_equal(c.cpu().numpy(), b.cpu().numpy(), err_msg=name)
    back(x).sum().backward()  # it trains
    assert back[4].weight.grad is not None


def test_map_location_applies_to_a_pickled_module(device):
    m = rustgrad.nn.Linear(2, 2).to(device)
    back = rustgrad.load(saved(m), map_location="cpu", weights_only=False)
    assert back.weight.device.type == "cpu"
    np.testing.assert_array_equal(back.weight.detach().numpy(), m.weight.detach().cpu().numpy())


def test_tied_weights_and_shared_tensors_stay_shared():
    enc, dec = rustgrad.nn.Embedding(5, 3), rustgrad.nn.Linear(3, 5, bias=False)
    dec.weight = enc.weight
    h = Holder(rustgrad)

    back_model, back_h = rustgrad.load(saved((rustgrad.nn.ModuleList([enc, dec]), h)),
                                       weights_only=False)

    assert back_model[0].weight is back_model[1].weight
    assert back_h.same is back_h.a and type(back_h.p) is rustgrad.nn.Parameter
    assert back_h.meta == {"dtype": rustgrad.float64, "size": rustgrad.Size([2, 3]),
                           "raw": b"\x00\x01"}


def test_default_load_refuses_with_torchs_message():
    with pytest.raises(pickle.UnpicklingError) as ours:
        rustgrad.load(saved(model(rustgrad)))
    buf = io.BytesIO()
    torch.save(model(torch), buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError) as theirs:
        torch.load(buf)

    for msg, lib in ((str(ours.value), "rustgrad"), (str(theirs.value), "torch")):
        assert "Weights only load failed" in msg
        assert "`weights_only` set to `False` will likely succeed" in msg
        assert "arbitrary code execution" in msg
        assert f"Unsupported global: GLOBAL {lib}.nn.modules.container.Sequential" in msg


def test_file_has_torchs_layout_and_tensor_globals():
    ours = zipfile.ZipFile(saved(model(rustgrad)))
    buf = io.BytesIO()
    torch.save(model(torch), buf)
    theirs = zipfile.ZipFile(buf)

    skip = {"archive/.data/serialization_id"}
    assert set(ours.namelist()) == set(theirs.namelist()) - skip

    def globals_of(z: zipfile.ZipFile) -> set:
        return {arg.replace("rustgrad.", "torch.", 1) for op, arg, _ in
                pickletools.genops(z.read("archive/data.pkl")) if op.name == "GLOBAL"}
    assert globals_of(ours) == globals_of(theirs)


def test_torch_loads_rustgrad_pickles_of_plain_data():
    # bytes are not in rustgrad's safe format: the dict is pickled, with torch's tensor globals
    obj = {"w": rustgrad.tensor([[1.0, 2.0]]), "raw": b"xy", "n": rustgrad.arange(3),
           "flag": rustgrad.tensor([True, False]), "d": rustgrad.int16, "s": rustgrad.Size([1])}
    buf = saved(obj)
    assert "archive/data.pkl" in zipfile.ZipFile(buf).namelist()

    buf.seek(0)
    t = torch.load(buf)  # weights_only=True in torch: only tensor globals are used
    buf.seek(0)
    r = rustgrad.load(buf)  # and in rustgrad: no weights_only=False needed either
    for k in ("w", "n", "flag"):
        np.testing.assert_array_equal(r[k].numpy(), t[k].numpy())
        assert str(r[k].dtype) == str(t[k].dtype)
    assert (r["raw"], t["raw"]) == (b"xy", b"xy")
    assert str(r["d"]) == str(t["d"]) == "torch.int16" and tuple(r["s"]) == tuple(t["s"]) == (1,)


def test_torch_saved_whole_model_is_refused_clearly(tmp_path):
    torch.save(torch.nn.Linear(2, 3), tmp_path / "t.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"torch\.nn\.modules\.linear\.Linear.*"
                       r"state_dict"):
        rustgrad.load(tmp_path / "t.pt", weights_only=False)


def test_torch_saved_state_dict_loads_with_weights_only_false(tmp_path):
    tm = torch.nn.Linear(2, 3)
    torch.save({"sd": tm.state_dict(), "step": 4}, tmp_path / "t.pt")
    ck = rustgrad.load(tmp_path / "t.pt", weights_only=False)
    assert ck["step"] == 4 and list(ck["sd"]) == ["weight", "bias"]
    np.testing.assert_array_equal(ck["sd"]["weight"].numpy(), tm.weight.detach().numpy())
    assert ck["sd"]._metadata == tm.state_dict()._metadata


def test_pickle_module_argument_as_torch(lib):
    buf = io.BytesIO()
    lib.save(lib.nn.Linear(1, 1), buf)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit "
                       "pickle_module is specified"):
        lib.load(buf, pickle_module=pickle, weights_only=True)
    buf.seek(0)
    assert type(lib.load(buf, pickle_module=pickle)).__name__ == "Linear"  # default: False


@pytest.mark.parametrize("var,weights_only,loads", [
    ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", False, False),
    ("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None, True),
])
def test_environment_overrides_as_torch(lib, monkeypatch, var, weights_only, loads):
    buf = io.BytesIO()
    lib.save(lib.nn.Linear(1, 1), buf)
    monkeypatch.setenv(var, "1")
    buf.seek(0)
    if loads:
        assert type(lib.load(buf, weights_only=weights_only)).__name__ == "Linear"
    else:
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            lib.load(buf, weights_only=weights_only)


def test_unpicklable_object_is_refused_before_writing(tmp_path: Path):
    path = tmp_path / "ck.pt"
    rustgrad.save({"w": rustgrad.ones(1)}, path)
    old = path.read_bytes()
    with pytest.raises(TypeError, match="cannot save an object of type .*pickling it failed"):
        rustgrad.save({"f": lambda: 1}, path)
    assert path.read_bytes() == old and sorted(p.name for p in tmp_path.iterdir()) == ["ck.pt"]


def test_state_dicts_still_use_the_safe_format():
    names = zipfile.ZipFile(saved(model(rustgrad).state_dict())).namelist()
    assert "structure.json" in names and not any(n.endswith("data.pkl") for n in names)


def test_whole_optimizer_round_trips():
    m = rustgrad.nn.Linear(2, 1)
    opt = rustgrad.optim.SGD(m.parameters(), lr=0.5, momentum=0.9)
    m(rustgrad.ones(1, 2)).sum().backward()
    opt.step()
    m2, opt2 = rustgrad.load(saved((m, opt)), weights_only=False)
    assert opt2.param_groups[0]["params"][0] is m2.weight  # the references are kept
    np.testing.assert_array_equal(opt2.state[m2.weight]["momentum_buffer"].numpy(),
                                  opt.state[m.weight]["momentum_buffer"].numpy())
