"""Call forms real programs use: torch's keyword names and the NumPy aliases its parser takes
(axis, keepdims), the legacy constructors, f-string formatting, NumPy subclasses in from_numpy,
memory_format, dtype predicates. Each runs under torch and rustgrad (the `lib` fixture)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.parity import parity, same_error, to_np

A = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0

# (name, call) with the NumPy aliases; each compared with the same call under torch
ALIAS_CALLS = [
    ("sum axis keepdims", lambda lib, a: a.sum(axis=1, keepdims=True)),
    ("sum dim keepdim", lambda lib, a: a.sum(dim=1, keepdim=True)),
    ("torch.sum axis", lambda lib, a: lib.sum(a, axis=0)),
    ("mean axis", lambda lib, a: a.mean(axis=0)),
    ("torch.mean axis keepdims", lambda lib, a: lib.mean(a, axis=1, keepdims=True)),
    ("max axis", lambda lib, a: tuple(a.max(axis=1))),
    ("min axis keepdims", lambda lib, a: tuple(a.min(axis=0, keepdims=True))),
    ("amax axis", lambda lib, a: a.amax(axis=1, keepdims=True)),
    ("amin axis", lambda lib, a: lib.amin(a, axis=0)),
    ("argmax axis", lambda lib, a: a.argmax(axis=1)),
    ("argmin axis keepdims", lambda lib, a: a.argmin(axis=0, keepdims=True)),
    ("std axis", lambda lib, a: a.std(axis=1)),
    ("var axis keepdims", lambda lib, a: a.var(axis=0, keepdims=True)),
    ("prod axis", lambda lib, a: a.prod(axis=1)),
    ("cumsum axis", lambda lib, a: a.cumsum(axis=1)),
    ("torch.cumprod axis", lambda lib, a: lib.cumprod(a, axis=0)),
    ("logsumexp axis", lambda lib, a: a.logsumexp(axis=1)),
    ("softmax axis", lambda lib, a: a.softmax(axis=1)),
    ("unsqueeze axis", lambda lib, a: a.unsqueeze(axis=0)),
    ("narrow axis", lambda lib, a: a.narrow(axis=1, start=1, length=2)),
    ("cat tensors dim", lambda lib, a: lib.cat(tensors=[a, a], dim=1)),
    ("cat axis", lambda lib, a: lib.cat([a, a], axis=0)),
    ("stack axis", lambda lib, a: lib.stack([a, a], axis=1)),
    ("matmul input other", lambda lib, a: lib.matmul(input=a, other=a.T)),
    ("all axis", lambda lib, a: (a > 0).all(axis=1)),
    ("any axis keepdims", lambda lib, a: (a > 0).any(axis=0, keepdims=True)),
]


@pytest.mark.parametrize("name,call", ALIAS_CALLS, ids=[c[0] for c in ALIAS_CALLS])
def test_numpy_keyword_aliases_match_torch(name: str, call: Any) -> None:
    parity(lambda lib: call(lib, lib.tensor(A)), rtol=1e-6, atol=1e-6)


def test_aliases_are_differentiable() -> None:
    def run(lib: Any) -> Any:
        a = lib.tensor(A, requires_grad=True)
        out = a.sum(axis=1, keepdims=True) * a.mean(axis=0)
        out.sum().backward()
        return out.grad_fn.name(), a.grad

    parity(run)


def test_alias_and_its_name_together_is_a_type_error() -> None:
    same_error(lambda lib: lib.ones(2, 3).sum(1, axis=1), "got an unexpected keyword argument 'axis'")
    same_error(lambda lib: lib.ones(2, 3).sum(dim=1, axis=1),
               "got an unexpected keyword argument 'axis'")


def test_required_dim_left_out_is_still_a_type_error(lib: Any) -> None:
    with pytest.raises(TypeError):
        lib.ones(2, 3).cumsum()
    with pytest.raises(TypeError):
        lib.ones(2, 3).unsqueeze()


# ---- legacy constructors ------------------------------------------------------------------
LEGACY = [
    ("Tensor(list)", lambda lib: lib.Tensor([1.0, 2.0])),
    ("Tensor(int list)", lambda lib: lib.Tensor([[1, 2], [3, 4]])),
    ("Tensor(bool list)", lambda lib: lib.Tensor([True, False])),
    ("Tensor(tuple)", lambda lib: lib.Tensor((2, 3))),
    ("Tensor(ndarray)", lambda lib: lib.Tensor(np.ones(2))),
    ("Tensor()", lambda lib: lib.Tensor()),
    ("Tensor(0)", lambda lib: lib.Tensor(0)),
    ("Tensor(data=)", lambda lib: lib.Tensor(data=[1.0])),
    ("Tensor(device=)", lambda lib: lib.Tensor([1, 2], device="cpu")),
    ("FloatTensor(list)", lambda lib: lib.FloatTensor([1, 2])),
    ("FloatTensor()", lambda lib: lib.FloatTensor()),
    ("LongTensor(list)", lambda lib: lib.LongTensor([1.7, 2])),
    ("DoubleTensor(list)", lambda lib: lib.DoubleTensor([1, 2])),
]


@pytest.mark.parametrize("name,call", LEGACY, ids=[c[0] for c in LEGACY])
def test_legacy_constructor_values(name: str, call: Any) -> None:
    parity(lambda lib: (call(lib), call(lib).requires_grad, call(lib).is_leaf))


@pytest.mark.parametrize("sizes", [(2, 3), (4,), (0, 2)])
def test_legacy_sizes_are_uninitialised_tensors_of_that_shape(lib: Any, sizes: tuple) -> None:
    for t in (lib.Tensor(*sizes), lib.Tensor(lib.Size(sizes)), lib.FloatTensor(*sizes)):
        assert tuple(t.shape) == sizes and t.dtype == lib.float32
    assert lib.LongTensor(*sizes).dtype == lib.int64
    assert isinstance(lib.Tensor(*sizes), lib.Tensor)


def test_legacy_constructor_of_a_tensor_aliases_it(lib: Any) -> None:
    a = lib.ones(3)
    b = lib.Tensor(a)
    b[0] = 5.0
    assert a[0].item() == 5.0 and b.data_ptr() == a.data_ptr()


def test_legacy_constructor_follows_the_default_dtype(lib: Any) -> None:
    lib.set_default_dtype(lib.float64)
    try:
        assert lib.Tensor([1]).dtype == lib.float64
    finally:
        lib.set_default_dtype(lib.float32)


def test_legacy_constructor_errors() -> None:
    same_error(lambda lib: lib.Tensor(2.5), "data must be a sequence")
    same_error(lambda lib: lib.Tensor(-1), "negative dimension")


def test_tensor_subclass_constructor(lib: Any) -> None:
    class MyTensor(lib.Tensor):
        pass

    t = MyTensor([1.0, 2.0])
    assert type(t) is MyTensor and t.tolist() == [1.0, 2.0]
    assert type(t * 2) in (MyTensor, lib.Tensor)


def test_ops_still_make_plain_tensors_after_legacy_calls(lib: Any) -> None:
    lib.Tensor([1.0])
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    assert y.grad_fn is not None and y.tolist() == [2.0, 2.0]


# ---- formatting ---------------------------------------------------------------------------
@pytest.mark.parametrize("spec", [".4f", "", ">10.2e", "g"])
def test_format_of_a_0d_tensor_is_its_items(spec: str) -> None:
    parity(lambda lib: format(lib.tensor(1.234567), spec))


@pytest.mark.parametrize("spec", ["d", "", ">5", "04d"])
def test_format_of_a_0d_int_tensor(spec: str) -> None:
    parity(lambda lib: format(lib.tensor(3, dtype=lib.int64), spec))
    same_error(lambda lib: format(lib.tensor(3), ".4d"), "Precision not allowed")


def test_fstring_of_a_loss_requiring_grad() -> None:
    parity(lambda lib: f"{(lib.ones(3, requires_grad=True) * 0.5).sum():.4f}")


def test_format_of_an_nd_tensor_with_a_spec_is_a_type_error() -> None:
    same_error(lambda lib: format(lib.ones(2), ".2f"), "unsupported format string")
    same_error(lambda lib: format(lib.ones(1), ".2f"), "unsupported format string")
    same_error(lambda lib: format(lib.nn.Parameter(lib.tensor(1.5)), ".2f"),
               "unsupported format string")


def test_format_of_an_nd_tensor_without_a_spec_is_str(lib: Any) -> None:
    t = lib.ones(2)
    assert f"{t}" == str(t)


# ---- from_numpy of NumPy subclasses ---------------------------------------------------------
def test_from_numpy_of_a_memmap_and_its_slices_shares_memory(lib: Any, tmp_path: Any) -> None:
    mm = np.memmap(tmp_path / "m.bin", dtype=np.float32, mode="w+", shape=(6,))
    mm[:] = np.arange(6)
    whole, part = lib.from_numpy(mm), lib.from_numpy(mm[2:])
    assert type(whole) is lib.Tensor and whole.tolist() == list(range(6))
    part[0] = 42.0
    assert mm[2] == 42.0 and whole[2].item() == 42.0


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_from_numpy_of_a_matrix() -> None:
    parity(lambda lib: lib.from_numpy(np.matrix([[1.0, 2.0], [3.0, 4.0]])))


# ---- memory_format ------------------------------------------------------------------------
FORMATS = ["contiguous_format", "preserve_format"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_memory_format_keyword_is_accepted(fmt: str) -> None:
    def run(lib: Any) -> Any:
        a, mf = lib.tensor(A), getattr(lib, fmt)
        return (a.clone(memory_format=mf), a.contiguous(memory_format=mf),
                a.to(lib.float64, memory_format=mf), lib.zeros_like(a, memory_format=mf),
                lib.ones_like(a, memory_format=mf), lib.empty_like(a, memory_format=mf).shape,
                lib.full_like(a, 2.0, memory_format=mf), lib.randn_like(a, memory_format=mf).shape)

    parity(run)


def test_channels_last_needs_rank_4() -> None:
    same_error(lambda lib: lib.ones(2, 3).clone(memory_format=lib.channels_last),
               "required rank 4 tensor to use channels_last format")
    same_error(lambda lib: lib.zeros_like(lib.ones(2, 3), memory_format=lib.channels_last),
               "required rank 4 tensor to use channels_last format")
    same_error(lambda lib: lib.ones(2, 3).clone(memory_format=lib.channels_last_3d),
               "required rank 5 tensor to use channels_last_3d format")
    parity(lambda lib: lib.ones(1, 2, 3, 4).clone(memory_format=lib.channels_last))


def test_memory_format_of_the_wrong_type_is_a_type_error() -> None:
    same_error(lambda lib: lib.ones(2).clone(memory_format=1), "must be torch.memory_format")


def test_memory_format_objects(lib: Any) -> None:
    for name in ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d"):
        mf = getattr(lib, name)
        assert isinstance(mf, lib.memory_format) and repr(mf) == f"torch.{name}"
    assert lib.channels_last is not lib.contiguous_format


# ---- dtype predicates ---------------------------------------------------------------------
DTYPES = ["float32", "float64", "float16", "int64", "int32", "int8", "uint8", "bool"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_predicates(dtype: str) -> None:
    parity(lambda lib: (lambda t: (t.is_complex(), t.is_sparse, t.is_floating_point(),
                                   t.is_signed(), lib.is_complex(t),
                                   lib.is_floating_point(t)))(lib.zeros(2, dtype=getattr(lib, dtype))))


def test_to_np_helper_is_used() -> None:
    # the parity helper compares arrays of both libraries (guards the tests above)
    assert to_np((np.ones(1),))[0].tolist() == [1.0]


def test_ops_taking_aliases_still_pickle_by_reference(lib: Any) -> None:
    import pickle

    for fn in (lib.sum, lib.cat, lib.Tensor.mean, lib.mul):
        assert pickle.loads(pickle.dumps(fn)) is fn
