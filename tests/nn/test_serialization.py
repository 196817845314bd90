"""rustgrad.save / rustgrad.load: round trips of tensors, modules and optimizer state; the
format never unpickles and refuses what it cannot store safely."""

from __future__ import annotations

import io
import os
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import rustgrad

from ..models import cnn, state_arrays


def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    rustgrad.save(obj, buf)
    buf.seek(0)
    return rustgrad.load(buf, **kw)


def test_save_load_tensor_keeps_values_dtype_and_flags():
    t = rustgrad.tensor([[1.5, -2.0]], dtype=rustgrad.float64, requires_grad=True)

    r = _roundtrip(t)

    assert r.dtype == rustgrad.float64 and r.requires_grad and r.is_leaf
    assert r.tolist() == [[1.5, -2.0]]


def test_save_load_nested_containers_and_scalars():
    obj = {"a": [1, 2.5, None, True, "s", float("inf")], "b": (rustgrad.int64, rustgrad.float32),
           3: OrderedDict(x=rustgrad.arange(3)), "size": rustgrad.zeros(2, 3).shape,
           "nan": float("nan")}

    r = _roundtrip(obj)

    assert r["a"][:5] == [1, 2.5, None, True, "s"] and r["a"][5] == float("inf")
    assert r["b"] == (rustgrad.int64, rustgrad.float32) and isinstance(r[3], OrderedDict)
    assert r[3]["x"].tolist() == [0, 1, 2] and r[3]["x"].dtype == rustgrad.int64
    assert r["size"] == (2, 3) and repr(r["size"]) == "torch.Size([2, 3])"
    assert np.isnan(r["nan"])


def test_save_load_shared_tensor_stays_shared():
    t = rustgrad.ones(3)

    a, b = _roundtrip([t, t])

    assert a is b


def test_save_load_parameter_type_is_kept():
    p = rustgrad.nn.Parameter(rustgrad.ones(2))

    r = _roundtrip({"p": p})["p"]

    assert isinstance(r, rustgrad.nn.Parameter) and r.requires_grad


def test_state_dict_roundtrip_through_file_restores_identical_model(tmp_path):
    rustgrad.manual_seed(0)
    a = cnn(rustgrad)
    a(rustgrad.randn(4, 1, 8, 8)).sum().backward()  # moves BatchNorm's running stats
    path = tmp_path / "model.rgt"

    rustgrad.save(a.state_dict(), path)
    b = cnn(rustgrad)
    b.load_state_dict(rustgrad.load(path))

    for (k, va), vb in zip(state_arrays(a).items(), state_arrays(b).values()):
        np.testing.assert_array_equal(va, vb, err_msg=k)
    x = rustgrad.randn(2, 1, 8, 8)
    a.eval()
    b.eval()
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    assert os.path.getsize(path) > 0


def test_save_refuses_arbitrary_objects():
    class Thing:
        pass

    with pytest.raises(TypeError, match="cannot save an object of type"):
        rustgrad.save({"x": Thing()}, io.BytesIO())


def test_load_never_unpickles_a_pickle_file(tmp_path):
    path = tmp_path / "evil.pt"
    marker = tmp_path / "pwned"
    with open(path, "wb") as f:
        pickle.dump(_Evil(str(marker)), f)

    with pytest.raises(RuntimeError, match="not a rustgrad checkpoint"):
        rustgrad.load(path)
    assert not marker.exists()


class _Evil:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_load_rejects_zip_with_object_arrays(tmp_path):
    import json
    import zipfile

    path = tmp_path / "obj.rgt"
    buf = io.BytesIO()
    np.save(buf, np.array([object()], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("structure.json", json.dumps(
            {"format": "rustgrad-checkpoint/1", "root": {"$": "tensor", "ref": 0}}))
        z.writestr("data/0.npy", buf.getvalue())

    with pytest.raises(RuntimeError, match="obj.rgt.*allow_pickle"):
        rustgrad.load(path)


def test_load_map_location_cpu_keeps_tensors_on_cpu():
    r = _roundtrip(rustgrad.ones(2), map_location="cpu")

    assert str(r.device) == "cpu"
