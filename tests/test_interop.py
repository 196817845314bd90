"""Interop with NumPy and DLPack, and copy.deepcopy: NumPy scalars on the left of an operator,
np.asarray's copy contract, zero-copy exchange through DLPack (NumPy, torch, and CuPy through the
backend), deepcopy of leaves, non-leaves, Parameters and Modules. torch is the oracle."""

from __future__ import annotations

import copy
import operator
from typing import Any

import numpy as np
import pytest
import rustgrad
import torch

from tests.parity import parity, same_error

# ---- NumPy scalars on the left ------------------------------------------------------------
# np.bool_ is left out: torch reads it as a float scalar (np.bool_(1) * int64 tensor is float32)
SCALARS = ["float64", "float32", "float16", "int64", "int32"]
TENSOR_DTYPES = ["float32", "float64", "int64", "int32", "bool"]


@pytest.mark.parametrize("scalar", SCALARS)
@pytest.mark.parametrize("dtype", TENSOR_DTYPES)
@pytest.mark.parametrize("op", ["mul", "add", "sub", "truediv"])
def test_numpy_scalar_on_the_left_gives_a_tensor_of_torchs_dtype(scalar: str, dtype: str,
                                                                   op: str) -> None:
    def run(lib: Any) -> Any:
        s, t = getattr(np, scalar)(3), lib.arange(1, 4).to(getattr(lib, dtype))
        try:
            out = getattr(operator, op)(s, t)
        except RuntimeError as e:  # bool subtraction: the same refusal in both
            return "RuntimeError", str(e).split(",")[0]
        return type(out).__name__, out

    parity(run, rtol=1e-6)


def test_numpy_scalar_times_a_tensor_requiring_grad_records_a_node() -> None:
    def run(lib: Any) -> Any:
        x = lib.ones(3, requires_grad=True)
        y = np.float64(2.0) * x + np.float32(1.0)
        y.sum().backward()
        return y.dtype == lib.float32, y.grad_fn.name(), x.grad

    parity(run)


def test_ndarray_on_the_left_is_a_type_error_as_torchs() -> None:
    same_error(lambda lib: np.ones(3) * lib.ones(3), "unsupported operand type(s) for *")


# ---- np.asarray ---------------------------------------------------------------------------
def test_asarray_shares_memory(lib: Any) -> None:
    t = lib.ones(3)
    a = np.asarray(t)
    a[0] = 7.0
    assert t[0].item() == 7.0


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's __array__ has no copy=
def test_asarray_without_copy_raises_when_a_copy_is_needed(lib: Any) -> None:
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.asarray(lib.ones(3), dtype=np.float64, copy=False)


def test_asarray_copy_false_shares_memory_when_it_can() -> None:
    t = rustgrad.ones(3)
    a = np.asarray(t, copy=False)
    a[1] = 3.0
    assert t[1].item() == 3.0
    b = np.array(t, copy=True)
    b[2] = 4.0
    assert t[2].item() == 1.0
    assert np.asarray(t, dtype=np.float64).dtype == np.float64


def test_asarray_of_a_tensor_requiring_grad_is_torchs_error() -> None:
    same_error(lambda lib: np.asarray(lib.ones(2, requires_grad=True)),
               "Can't call numpy() on Tensor that requires grad")


# ---- DLPack -------------------------------------------------------------------------------
def test_numpy_from_dlpack_shares_memory(lib: Any) -> None:
    t = lib.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(t)
    assert a.shape == (2, 3) and a.dtype == np.float32
    t[0, 0] = 9.0
    assert a[0, 0] == 9.0
    assert tuple(int(v) for v in t.__dlpack_device__()) == (1, 0)


def test_from_dlpack_of_numpy_shares_memory(lib: Any) -> None:
    a = np.arange(4.0)
    for make in (lib.from_dlpack, lib.utils.dlpack.from_dlpack):
        t = make(a)
        assert t.dtype == lib.float64 and t.tolist() == [0.0, 1.0, 2.0, 3.0]
        a[1] = 5.0
        assert t[1].item() == 5.0
        a[1] = 1.0


def test_dlpack_of_a_strided_view() -> None:
    parity(lambda lib: np.from_dlpack(lib.arange(12.0).reshape(3, 4).t()[1:]).copy())


def test_export_of_a_tensor_requiring_grad_is_refused() -> None:
    same_error(lambda lib: np.from_dlpack(lib.ones(2, requires_grad=True)),
               "Can't export tensors that require gradient, use tensor.detach()")



def test_to_dlpack_takes_a_tensor_requiring_grad_as_torchs(lib: Any) -> None:
    x = lib.ones(2, requires_grad=True)
    back = lib.utils.dlpack.from_dlpack(lib.utils.dlpack.to_dlpack(x))
    assert not back.requires_grad and back.data_ptr() == x.data_ptr()


def test_to_dlpack_capsule_round_trip(lib: Any) -> None:
    t = lib.arange(3.0)
    back = lib.utils.dlpack.from_dlpack(lib.utils.dlpack.to_dlpack(t))
    back[0] = 8.0
    assert t[0].item() == 8.0


def test_capsules_cross_between_torch_and_rustgrad() -> None:
    r = rustgrad.arange(3.0)
    t = torch.utils.dlpack.from_dlpack(rustgrad.utils.dlpack.to_dlpack(r))
    t[0] = 4.0
    assert r[0].item() == 4.0
    back = rustgrad.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    assert back.tolist() == [4.0, 1.0, 2.0] and back.data_ptr() == r.data_ptr()


def test_torch_and_rustgrad_exchange_without_a_copy() -> None:
    r = rustgrad.arange(4.0)
    t = torch.from_dlpack(r)
    t[0] = 11.0
    assert r[0].item() == 11.0 and t.dtype == torch.float32
    src = torch.arange(3, dtype=torch.int64)
    back = rustgrad.from_dlpack(src)
    src[2] = 7
    assert back.dtype == rustgrad.int64 and back.tolist() == [0, 1, 7]
    assert back.data_ptr() == src.data_ptr()
    same_error(lambda lib: lib.from_dlpack(torch.ones(2, requires_grad=True)),
               "Can't export tensors that require gradient")


def test_from_dlpack_of_a_tensor_is_an_alias(lib: Any) -> None:
    a = lib.ones(2)
    b = lib.from_dlpack(a)
    b[0] = 3.0
    assert a[0].item() == 3.0


@pytest.mark.cuda
def test_cupy_exchange_through_the_backend() -> None:
    cp = pytest.importorskip("cupy")
    if not rustgrad.cuda.is_available():
        pytest.skip("CuPy sees no GPU")
    c = cp.arange(4, dtype=cp.float32)
    t = rustgrad.from_dlpack(c)
    assert t.device.type == "cuda"
    c[0] = 5.0
    assert t[0].item() == 5.0
    back = cp.from_dlpack(t)
    back[1] = 6.0
    assert t[1].item() == 6.0
    tt = torch.from_dlpack(t)
    assert tt.is_cuda and tt[1].item() == 6.0


# ---- deepcopy -----------------------------------------------------------------------------
def test_deepcopy_of_a_leaf_keeps_requires_grad_and_a_copied_grad() -> None:
    def run(lib: Any) -> Any:
        x = lib.ones(2, 3, requires_grad=True)
        x.grad = lib.full((2, 3), 2.0)
        y = copy.deepcopy(x)
        return (y, y.requires_grad, y.is_leaf, y.grad, y.grad is x.grad,
                y.data_ptr() == x.data_ptr(), y.grad.data_ptr() == x.grad.data_ptr())

    parity(run)


def test_deepcopy_of_a_non_leaf_is_torchs_error() -> None:
    same_error(lambda lib: copy.deepcopy(lib.ones(2, requires_grad=True) * 2),
               "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
               "protocol at the moment")


def test_deepcopy_keeps_tensors_sharing_memory_sharing() -> None:
    def run(lib: Any) -> Any:
        base = lib.arange(6.0).reshape(2, 3)
        view = base[1]
        d = copy.deepcopy({"a": base, "b": view, "c": base})
        d["a"][1, 0] = 50.0
        return (d["b"], d["a"] is d["c"], base, d["b"].data_ptr() == d["a"].data_ptr() + 12,
                d["a"].data_ptr() == base.data_ptr())

    parity(run)


def test_deepcopy_keeps_attributes(lib: Any) -> None:
    x = lib.ones(2)
    x.tag = {"k": [1]}
    y = copy.deepcopy(x)
    assert y.tag == {"k": [1]} and y.tag is not x.tag


def test_deepcopy_of_a_parameter_and_a_module() -> None:
    def run(lib: Any) -> Any:
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.ReLU())
        m[0].weight.data.fill_(0.5)
        shared = lib.nn.Linear(2, 2, bias=False)
        both = lib.nn.Sequential(shared, shared)
        p = lib.nn.Parameter(lib.ones(2))
        q = copy.deepcopy(p)
        m2, both2 = copy.deepcopy(m), copy.deepcopy(both)
        m2[0].weight.data.fill_(1.0)
        return (type(q).__name__, q.requires_grad, q.is_leaf, type(m2[0].weight).__name__,
                m[0].weight, m2[0].weight, both2[0].weight is both2[1].weight,
                both2[0].weight is both[0].weight)

    parity(run)
