"""safetensors files: rustgrad.utils.safetensors mirrors safetensors.torch, files interchange both
ways with equal values and dtypes, and rustgrad.save/rustgrad.load use the format for paths
ending in .safetensors (load tells it by its first bytes)."""

from __future__ import annotations

import warnings
from typing import Any, Dict

import numpy as np
import pytest
import rustgrad
import safetensors
import safetensors.torch
import torch
from rustgrad.utils import safetensors as rg_safetensors

from ..models import cnn, state_arrays, twin
from ..parity import same_error

DTYPES = ["float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool"]


def _st(lib: Any) -> Any:
    return safetensors.torch if lib is torch else rg_safetensors


def _tensors(lib: Any) -> Dict[str, Any]:
    rng = np.random.default_rng(0)
    out = {}
    for name in DTYPES:
        arr = rng.normal(size=(3, 4)) * 50
        out[name] = lib.tensor(arr.astype(np.bool_ if name == "bool" else name))
    out["scalar"] = lib.tensor(2.5)
    out["empty"] = lib.zeros(0, 3)
    return out


def _assert_same(r: Dict[str, Any], t: Dict[str, Any]) -> None:
    assert sorted(r) == sorted(t)
    for k in t:
        assert str(r[k].dtype) == str(t[k].dtype), k
        assert tuple(r[k].shape) == tuple(t[k].shape), k
        np.testing.assert_array_equal(r[k].numpy(), t[k].numpy(), err_msg=k)


def test_file_written_by_rustgrad_loads_in_safetensors_torch(tmp_path):
    path = tmp_path / "rg.safetensors"
    rg_safetensors.save_file(_tensors(rustgrad), path)

    _assert_same(_tensors(torch), safetensors.torch.load_file(path))


def test_file_written_by_safetensors_torch_loads_in_rustgrad(tmp_path):
    path = tmp_path / "pt.safetensors"
    safetensors.torch.save_file(_tensors(torch), path)

    loaded = rg_safetensors.load_file(path)

    _assert_same(loaded, _tensors(torch))
    assert all(isinstance(v, rustgrad.Tensor) for v in loaded.values())
    assert list(loaded) == list(safetensors.torch.load_file(path))


def test_bytes_round_trip_both_ways():
    _assert_same(safetensors.torch.load(rg_safetensors.save(_tensors(rustgrad))), _tensors(torch))
    _assert_same(rg_safetensors.load(safetensors.torch.save(_tensors(torch))), _tensors(torch))


def test_loaded_tensors_are_writable_and_own_their_memory(tmp_path):
    path = tmp_path / "w.safetensors"
    safetensors.torch.save_file({"w": torch.ones(3)}, path)
    w = rg_safetensors.load_file(path)["w"]

    w.add_(1.0)

    assert w.tolist() == [2.0, 2.0, 2.0]


def test_metadata_is_written(tmp_path):
    path = tmp_path / "m.safetensors"
    rg_safetensors.save_file({"w": rustgrad.ones(2)}, path, metadata={"format": "pt", "k": "v"})

    with safetensors.safe_open(path, framework="np") as f:
        assert f.metadata() == {"format": "pt", "k": "v"}


def test_tied_tensors_are_refused_as_safetensors_torch_does():
    def tied(lib: Any) -> Any:
        w = lib.ones(4)
        return _st(lib).save({"a": w, "b": w})

    same_error(tied, "Some tensors share memory")


def test_overlapping_views_are_refused_as_safetensors_torch_does():
    def overlapping(lib: Any) -> Any:
        w = lib.arange(6.0)
        return _st(lib).save({"a": w[:4], "b": w[2:]})

    same_error(overlapping, "Some tensors share memory")


def test_disjoint_views_of_one_storage_save_as_safetensors_torch_does():
    r, t = rustgrad.arange(6.0), torch.arange(6.0)

    rb = rg_safetensors.save({"a": r[:2], "b": r[3:]})
    tb = safetensors.torch.save({"a": t[:2], "b": t[3:]})

    _assert_same(rg_safetensors.load(rb), safetensors.torch.load(tb))


def test_non_contiguous_tensor_is_refused():
    same_error(lambda lib: _st(lib).save({"t": lib.ones(3, 4).t()}), "non contiguous tensor")


def test_non_dict_and_non_tensor_values_are_refused():
    same_error(lambda lib: _st(lib).save([lib.ones(2)]), "Expected a dict of [str, torch.Tensor]")
    same_error(lambda lib: _st(lib).save({"x": 1.0}), "Key `x` is invalid")


def test_bfloat16_loads_as_float32_exactly_with_a_warning(tmp_path):
    path = tmp_path / "bf.safetensors"
    t = torch.randn(5, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    safetensors.torch.save_file({"w": t}, path)

    with pytest.warns(UserWarning, match="bfloat16 tensors were loaded as float32"):
        w = rg_safetensors.load_file(path)["w"]

    assert w.dtype == rustgrad.float32
    np.testing.assert_array_equal(w.numpy(), t.float().numpy())


def test_unsupported_element_type_is_refused(tmp_path):
    path = tmp_path / "u16.safetensors"
    safetensors.torch.save_file({"w": torch.ones(2, dtype=torch.uint16)}, path)

    with pytest.raises(TypeError, match="'w' has element type U16"):
        rg_safetensors.load_file(path)


def test_rustgrad_save_and_load_use_safetensors_for_the_extension(tmp_path):
    path = tmp_path / "x.safetensors"
    rustgrad.save(_tensors(rustgrad), path)

    _assert_same(safetensors.torch.load_file(path), _tensors(torch))
    _assert_same(rustgrad.load(path), _tensors(torch))


def test_rustgrad_load_tells_safetensors_by_content_not_name(tmp_path):
    path = tmp_path / "weights.bin"
    safetensors.torch.save_file(_tensors(torch), path)

    _assert_same(rustgrad.load(path, map_location="cpu"), _tensors(torch))


def test_rustgrad_save_safetensors_refuses_what_the_format_cannot_hold(tmp_path):
    with pytest.raises(ValueError, match="Expected a dict"):
        rustgrad.save([rustgrad.ones(2)], tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="Key `n` is invalid"):
        rustgrad.save({"n": 3}, tmp_path / "x.safetensors")


def test_malformed_safetensors_file_raises_one_error_naming_the_file(tmp_path):
    path = tmp_path / "bad.safetensors"
    header = b'{"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 99]}}'
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 16)

    with pytest.raises(RuntimeError, match="bad.safetensors: not a valid safetensors file"):
        rustgrad.load(path)


def test_torch_model_weights_through_safetensors_load_into_rustgrad_model(tmp_path):
    tm, rm = twin(cnn)
    tm(torch.randn(4, 1, 8, 8)).sum().backward()  # BatchNorm's running stats move
    path = tmp_path / "model.safetensors"
    safetensors.torch.save_file(tm.state_dict(), path)
    rm2 = cnn(rustgrad)

    rm2.load_state_dict(rustgrad.load(path))

    for k, v in state_arrays(tm).items():
        np.testing.assert_array_equal(state_arrays(rm2)[k], v, err_msg=k)
    x = np.random.default_rng(1).normal(size=(2, 1, 8, 8)).astype(np.float32)
    tm.eval()
    rm2.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = rm2(rustgrad.tensor(x)).detach().numpy()
    np.testing.assert_allclose(out, tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_rustgrad_model_state_dict_through_safetensors_loads_into_torch_model(tmp_path):
    tm, rm = twin(cnn)
    path = tmp_path / "model.safetensors"
    rustgrad.save(rm.state_dict(), path)
    tm2 = cnn(torch)

    tm2.load_state_dict(safetensors.torch.load_file(path))

    for k, v in state_arrays(rm).items():
        np.testing.assert_array_equal(state_arrays(tm2)[k], v, err_msg=k)
