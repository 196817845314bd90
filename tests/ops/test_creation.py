"""tensor() from Python data: dtype inference and values as torch's, including explicit dtypes
(a float64 tensor from a list keeps float64 precision)."""

import pytest
import rustgrad
import torch

DATA = [[0.3], [[0.1, 0.2], [0.3, 0.4]], 0.3, [1, 2], [True, False], 7, [[1, 2.5]]]
DTYPES = [None, "float64", "float32", "float16", "int64", "int32", "bool"]


@pytest.mark.parametrize("data", DATA, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_creation_tensor_from_python_data_matches_torch(data, dtype, device):
    want = torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None)
    got = rustgrad.tensor(data, dtype=getattr(rustgrad, dtype) if dtype else None, device=device)
    assert got.device.type == device
    assert str(got.dtype) == str(want.dtype)
    assert got.tolist() == want.tolist()
    assert tuple(got.shape) == tuple(want.shape)


def test_creation_bfloat16_method_casts_as_torch_and_leaves_the_tensor_unchanged():
    t = rustgrad.tensor([1.0, 2.3])
    b = t.bfloat16()
    assert repr(b.dtype) == repr(torch.tensor([1.0]).bfloat16().dtype)
    assert b.tolist() == torch.tensor([1.0, 2.3]).bfloat16().tolist()
    assert t.dtype == rustgrad.float32 and t.tolist() == [1.0, 2.299999952316284]
