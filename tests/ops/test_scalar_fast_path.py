"""`tensor * number`, `tensor + number`, `number - tensor` and `+ - * /` of two tensors of one shape
and dtype, on contiguous float32/float64 NumPy arrays, are computed in Rust
(`NodeSpec.record_scalar`/`record_binary`, the per-op hot path): bit for bit NumPy's (and torch's)
values, the same node, and the NumPy path for every array the Rust one does not take."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import rustgrad
import torch
from rustgrad._ops.arith import ADD, MUL


def _values(dtype: Any) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(37).astype(dtype)
    # the edges: signed zeros, infinities, NaN, the largest finite value, a subnormal
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, np.finfo(dtype).max]
    x[6] = np.finfo(dtype).smallest_subnormal
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scalar", [1.0001, -3.5, 1e-30, 0.1, float("inf")])
def test_values_are_numpys_and_torchs_bit_for_bit(dtype: Any, scalar: float) -> None:
    x = _values(dtype)
    t = rustgrad.tensor(x)
    with np.errstate(all="ignore"):
        for got, want, ref in (((t * scalar)._data, x * scalar, torch.tensor(x) * scalar),
                               ((t + scalar)._data, x + scalar, torch.tensor(x) + scalar),
                               ((scalar - t)._data, scalar - x, scalar - torch.tensor(x))):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
            np.testing.assert_array_equal(got, ref.numpy())


def test_the_rust_path_takes_contiguous_float_arrays_only() -> None:
    t = rustgrad.tensor(np.arange(12.0).reshape(3, 4))
    assert MUL.record_scalar(t, 2.0, 1, 2.0) is not None
    assert ADD.record_scalar(t.float(), 2.0, 0) is not None
    assert ADD.record_scalar(rustgrad.tensor(1.5), 2.0, 0) is not None  # 0-d
    assert ADD.record_scalar(rustgrad.zeros(0, 3), 2.0, 0) is not None  # empty
    # a strided view, float16 and integers take the NumPy path (the op still answers)
    for other in (t.t(), t[:, ::2], t.half(), t.long()):
        assert MUL.record_scalar(other, 2.0, 1, 2.0) is None
        want = torch.tensor(other.numpy()) * 2.0
        got = other * 2.0
        assert str(got.dtype) == str(want.dtype)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_the_node_and_gradients_are_the_ops() -> None:
    x = rustgrad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x * 2.5 + 0.5
    assert y.grad_fn.name() == "AddBackward0"
    assert y.grad_fn.next_functions[1] == (None, 0)
    mul_node = y.grad_fn.next_functions[0][0]
    assert mul_node.name() == "MulBackward0"
    assert mul_node._saved_other.item() == 2.5
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.5, 2.5, 2.5])
    # the output is a new tensor with its own storage and version counter
    z = x.detach() * 1.0
    assert z._storage_id() != x._storage_id() and z._version == 0
    with rustgrad.no_grad():
        assert (x * 2.0).grad_fn is None and not (x * 2.0).requires_grad


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_two_tensors_bit_for_bit(dtype: Any) -> None:
    x, y = _values(dtype), _values(dtype)[::-1].copy()
    a, b = rustgrad.tensor(x), rustgrad.tensor(y)
    ta, tb = torch.tensor(x), torch.tensor(y)
    with np.errstate(all="ignore"):
        for got, want, ref in (((a + b)._data, x + y, ta + tb), ((a - b)._data, x - y, ta - tb),
                               ((a * b)._data, x * y, ta * tb), ((a / b)._data, x / y, ta / tb)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
            np.testing.assert_array_equal(got, ref.numpy())


def test_two_tensors_the_rust_path_does_not_take() -> None:
    a = rustgrad.tensor(np.arange(6.0).reshape(2, 3))
    # broadcasting, promotion, a strided operand and integers take the NumPy path
    for other in (a[:1], a.float(), a.t().contiguous().t(), a.long()):
        assert MUL.record_binary(a, other, 2) is None
        want = torch.tensor(a.numpy()) * torch.tensor(other.numpy())
        got = a * other
        assert str(got.dtype) == str(want.dtype)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_two_tensors_nodes_and_saved_values() -> None:
    a = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    b = rustgrad.tensor([3.0, 4.0])
    y = a * b
    assert y.grad_fn.name() == "MulBackward0"
    assert y.grad_fn._saved_self is None  # b needs no gradient: a is not saved, as torch's
    assert y.grad_fn._saved_other is b
    z = (a / b - a + b) * a
    z.sum().backward()
    ta = torch.tensor([1.0, 2.0], requires_grad=True)
    tb = torch.tensor([3.0, 4.0])
    ((ta / tb - ta + tb) * ta).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
