"""Tensor attributes and small methods against torch: the legacy `new` and `type` (with the
legacy tensor types), storage_offset, nbytes, itemsize, is_cpu, get_device, ndimension,
nelement, is_same_size, is_nonzero, resize_ / resize_as_, untyped_storage; and the factories
empty_strided, frombuffer and the window functions."""

from __future__ import annotations

import array

import numpy as np
import pytest
import rustgrad
import torch

from .parity import parity, same_error

pytestmark = pytest.mark.filterwarnings("ignore:The given buffer is not writable")


# ---- metadata --------------------------------------------------------------------------------
VIEWS = {
    "base": lambda x: x,
    "slice": lambda x: x[1:, 2:],
    "select": lambda x: x[1],
    "transpose": lambda x: x.t(),
    "narrow": lambda x: x.narrow(1, 1, 2),
    "expand": lambda x: x[:1].expand(5, 4),
    "flip_copy": lambda x: x.flip(0),
    "unsqueeze": lambda x: x[2:].unsqueeze(0),
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_storage_metadata_matches_torch(view, device):
    def meta(lib, dev="cpu"):
        x = lib.arange(12.0, device=dev).reshape(3, 4)
        v = VIEWS[view](x)
        s = v.untyped_storage()
        return (v.storage_offset(), v.nbytes, v.itemsize, v.ndimension(), v.nelement(), v.is_cpu,
                s.nbytes(), s.size(), len(s), s.data_ptr() == x.untyped_storage().data_ptr())

    expected = meta(torch)
    assert meta(rustgrad, device)[:5] == expected[:5]
    got = meta(rustgrad, device)
    assert got[5] == (device == "cpu")
    assert got[6:] == expected[6:]


def test_dtype_sizes_and_devices_match_torch(device):
    for name in ("float16", "bfloat16", "float32", "float64", "int8", "int64", "bool", "uint8"):
        t = torch.zeros(2, 3, dtype=getattr(torch, name))
        r = rustgrad.zeros(2, 3, dtype=getattr(rustgrad, name))
        assert (r.itemsize, r.nbytes) == (t.itemsize, t.nbytes), name
    assert rustgrad.zeros(2).get_device() == torch.zeros(2).get_device() == -1
    if device == "cuda":
        assert rustgrad.zeros(2, device="cuda:1").get_device() == 1
        assert rustgrad.zeros(2, device="cuda").get_device() == 0
        assert not rustgrad.zeros(2, device="cuda").is_cpu


def test_is_same_size_and_is_nonzero_match_torch():
    parity(lambda L: (L.zeros(2, 3).is_same_size(L.ones(2, 3)),
                      L.zeros(2, 3).is_same_size(L.ones(3, 2)),
                      L.tensor(3).is_nonzero(), L.tensor([0.0]).is_nonzero(),
                      L.tensor([[True]]).is_nonzero(), L.tensor([float("nan")]).is_nonzero()))
    same_error(lambda L: L.zeros(2).is_nonzero(),
               "Boolean value of Tensor with more than one value is ambiguous")
    same_error(lambda L: L.zeros(0).is_nonzero(), "Boolean value of Tensor with no values is ambiguous")


# ---- new, type --------------------------------------------------------------------------------
NEW = {
    "empty": lambda x, L: x.new(),
    "sizes": lambda x, L: x.new(2, 3).shape,
    "size_object": lambda x, L: x.new(L.Size([4])).shape,
    "data": lambda x, L: x.new([1.5, 2.5]),
    "tuple_data": lambda x, L: x.new((1, 2)),
    "device": lambda x, L: x.new(2, device="cpu").shape,
}


@pytest.mark.parametrize("case", sorted(NEW))
def test_new_matches_torch(case):
    def prog(L):
        x = L.arange(3, dtype=L.int32)
        out = NEW[case](x, L)
        return out if not isinstance(out, (L.Size, tuple)) else tuple(out)
    parity(prog)
    t = NEW[case](torch.arange(3, dtype=torch.int32), torch)
    r = NEW[case](rustgrad.arange(3, dtype=rustgrad.int32), rustgrad)
    if isinstance(t, torch.Tensor):
        assert str(r.dtype) == str(t.dtype)


def test_new_of_a_tensor_aliases_it_like_torch():
    for lib in (torch, rustgrad):
        y = lib.ones(2, requires_grad=True)
        n = y.new(y)
        assert n is not y and n.data_ptr() == y.data_ptr() and n.requires_grad
        assert n.grad_fn.name() == "AliasBackward0"
    same_error(lambda L: L.zeros(2, dtype=L.int32).new(5.0), "new(): data must be a sequence")
    for lib in (torch, rustgrad):
        with pytest.raises(TypeError, match="expected"):
            lib.zeros(2, dtype=lib.int32).new(lib.tensor([1.0]))


TYPES = {
    "FloatTensor": lambda L, x: x.type(L.FloatTensor),
    "DoubleTensor": lambda L, x: x.type(L.DoubleTensor),
    "LongTensor": lambda L, x: x.type(L.LongTensor),
    "name": lambda L, x: x.type("torch.DoubleTensor"),
    "dtype": lambda L, x: x.type(L.float16),
    "Tensor": lambda L, x: x.type(L.Tensor),
}


@pytest.mark.parametrize("case", sorted(TYPES))
def test_type_casts_match_torch(case):
    parity(lambda L: TYPES[case](L, L.arange(3)))
    t = TYPES[case](torch, torch.arange(3))
    r = TYPES[case](rustgrad, rustgrad.arange(3))
    assert str(r.dtype) == str(t.dtype)


def test_type_returns_self_or_records_a_cast_like_torch():
    for lib in (torch, rustgrad):
        x = lib.arange(3, dtype=lib.int32)
        assert x.type("torch.IntTensor") is x and x.type(lib.IntTensor) is x
        assert x.type() == "torch.IntTensor"
        y = lib.ones(2, requires_grad=True)
        assert y.type(lib.DoubleTensor).grad_fn.name() == "ToCopyBackward0"
    same_error(lambda L: L.zeros(2).type("float"), "invalid type: 'float'")


def test_type_to_a_cuda_name_moves_the_tensor(sim_cuda):
    x = rustgrad.arange(3)
    y = x.type("torch.cuda.FloatTensor")
    assert y.device.type == "cuda" and y.dtype == rustgrad.float32
    assert y.type() == "torch.cuda.FloatTensor"
    assert y.tolist() == [0.0, 1.0, 2.0]


# ---- resize_ ---------------------------------------------------------------------------------
RESIZES = {
    "shrink": lambda L, x: x.resize_(2, 2),
    "same_numel": lambda L, x: x.resize_(3, 2),
    "size_object": lambda L, x: x.resize_(L.Size([3])),
    "list": lambda L, x: x.resize_([4]),
    "grow_keeps_prefix": lambda L, x: x.resize_(2, 4)[0, :3] * 1,
    "view_shrinks": lambda L, x: (x[2:].resize_(2), x),
    "as_template": lambda L, x: x.resize_as_(L.zeros(2, 3)),
    "memory_format": lambda L, x: x.resize_(2, 3, memory_format=L.contiguous_format),
}


@pytest.mark.parametrize("case", sorted(RESIZES))
def test_resize_matches_torch(case, device):
    def prog(L):
        x = L.arange(6.0)
        out = RESIZES[case](L, x)
        return out, x.shape if case != "view_shrinks" else None, x._version
    parity(prog)


def test_resize_keeps_sharing_memory_with_views_when_it_shrinks(device):
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        x = lib.arange(6.0, device=dev)
        v = x.view(2, 3)
        assert x.resize_(3) is x
        x.fill_(1.0)
        assert v.tolist() == [[1.0, 1.0, 1.0], [3.0, 4.0, 5.0]], lib.__name__


def test_resize_of_tensor_requiring_grad_is_refused_like_torch():
    phrase = "cannot resize variables that require grad"
    same_error(lambda L: L.arange(6.0).requires_grad_().resize_(3), phrase)
    same_error(lambda L: (L.arange(6.0).requires_grad_() * 1).resize_(6), phrase)
    same_error(lambda L: L.ones(2, requires_grad=True).resize_as_(L.zeros(2)), phrase)


# ---- factories --------------------------------------------------------------------------------
def test_empty_strided_matches_torch(device):
    for lib, dev in ((torch, "cpu"), (rustgrad, device)):
        x = lib.empty_strided((2, 3), (1, 2), device=dev)
        assert x.stride() == (1, 2) and tuple(x.shape) == (2, 3) and x._base is None
        assert x.untyped_storage().nbytes() == 24 and x.dtype == lib.float32
        y = lib.empty_strided((2, 3), (0, 0), dtype=lib.float64, requires_grad=True, device=dev)
        assert y.stride() == (0, 0) and y.requires_grad and y.is_leaf
        assert lib.empty_strided((0, 3), (1, 2), device=dev).untyped_storage().nbytes() == 0
    same_error(lambda L: L.empty_strided((2, 3), (1,)),
               "dimensionality of sizes (2) must match dimensionality of strides (1)")
    same_error(lambda L: L.empty_strided((2, -3), (1, 2)), "negative dimension -3")
    same_error(lambda L: L.empty_strided((2, 3), (-1, 2)), "Storage size calculation overflowed")


def test_frombuffer_shares_memory_like_torch():
    for lib in (torch, rustgrad):
        a = array.array("f", [1, 2, 3, 4])
        t = lib.frombuffer(a, dtype=lib.float32)
        t[0] = 9.0
        assert a[0] == 9.0 and t.tolist() == [9.0, 2.0, 3.0, 4.0]
        assert lib.frombuffer(a, dtype=lib.float32, count=2, offset=4).tolist() == [2.0, 3.0]
        assert lib.frombuffer(bytearray(b"abcd"), dtype=lib.int16).tolist() == [25185, 25699]
        assert lib.frombuffer(a, dtype=lib.float32, requires_grad=True).requires_grad


FROMBUFFER_ERRORS = {
    "count": (lambda L: L.frombuffer(array.array("f", [1, 2]), dtype=L.float32, count=5),
              "requested buffer length (5 * 4 bytes) after offset (0 bytes) must not be greater "
              "than actual buffer length (8 bytes)"),
    "offset": (lambda L: L.frombuffer(array.array("f", [1, 2]), dtype=L.float32, offset=8),
               "offset (8 bytes) must be non-negative and no greater than buffer length (8 bytes)"),
    "empty": (lambda L: L.frombuffer(b"", dtype=L.float32),
              "both buffer length (0) and count (-1) must not be 0"),
    "multiple": (lambda L: L.frombuffer(b"abc", dtype=L.float32),
                 "buffer length (3 bytes) after offset (0 bytes) must be a multiple of element "
                 "size (4)"),
    "no_buffer": (lambda L: L.frombuffer([1, 2], dtype=L.int16),
                  "object does not implement Python buffer protocol."),
}


@pytest.mark.parametrize("case", sorted(FROMBUFFER_ERRORS))
def test_frombuffer_errors_match_torch(case):
    fn, phrase = FROMBUFFER_ERRORS[case]
    same_error(fn, phrase)


WINDOWS = {
    "hann": lambda L, n, p, dt: L.hann_window(n, p, dtype=dt),
    "hamming": lambda L, n, p, dt: L.hamming_window(n, p, dtype=dt),
    "hamming_params": lambda L, n, p, dt: L.hamming_window(n, p, 0.6, 0.3, dtype=dt),
    "blackman": lambda L, n, p, dt: L.blackman_window(n, p, dtype=dt),
    "bartlett": lambda L, n, p, dt: L.bartlett_window(n, p, dtype=dt),
    "kaiser": lambda L, n, p, dt: L.kaiser_window(n, p, dtype=dt),
    "kaiser_beta": lambda L, n, p, dt: L.kaiser_window(n, p, 3.5, dtype=dt),
}


@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_windows_match_torch(name, periodic, device):
    fn = WINDOWS[name]
    for n in (0, 1, 2, 5, 16):
        for dt in ("float32", "float64"):
            t = fn(torch, n, periodic, getattr(torch, dt))
            r = fn(rustgrad, n, periodic, getattr(rustgrad, dt))
            assert str(r.dtype) == str(t.dtype) and tuple(r.shape) == tuple(t.shape)
            np.testing.assert_allclose(r.numpy(), t.numpy(), atol=1e-6, err_msg=f"{name} {n} {dt}")
    w = getattr(rustgrad, name.split("_")[0] + "_window")(4, device=device, requires_grad=True)
    assert w.device.type == device and w.requires_grad and w.dtype == rustgrad.float32


@pytest.mark.parametrize("name", ["hann", "hamming", "blackman", "bartlett", "kaiser"])
def test_window_errors_match_torch(name):
    same_error(lambda L: getattr(L, f"{name}_window")(-1),
               f"{name}_window requires non-negative window_length, got window_length=-1")
    same_error(lambda L: getattr(L, f"{name}_window")(3, dtype=L.int64),
               f"{name}_window expects floating point dtypes, got: TensorOptions(dtype=long int")
