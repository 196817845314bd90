"""tensor() and as_tensor() refuse Python data torch refuses, with torch's exception type and
message: strings and bytes, ragged nesting, objects without a dtype, lists holding tensors of
several elements; data without elements is accepted even when ragged, as torch's."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import parity


def _error(fn):
    with pytest.raises(Exception) as info:  # noqa: PT011 - the type is compared below
        fn()
    return type(info.value).__name__, str(info.value)


def _same_error(make, data, **kwargs):
    """make(lib)(data) raises the same exception type with the same message in both."""
    expected = _error(lambda: make(torch)(data, **kwargs))
    got = _error(lambda: make(rustgrad)(data, **kwargs))
    assert got == expected


DATA = {
    "str": "abc",
    "bytes": b"ab",
    "list_of_str": ["a", "b"],
    "number_and_str": [1, "a"],
    "row_and_str": [[1, 2], "ab"],
    "ragged": [[1, 2], [3]],
    "ragged_longer": [[1.0], [2.0, 3.0]],
    "ragged_last_row": [[1, 2], [3, 4], [5]],
    "ragged_inner": [[[1, 2], [3, 4]], [[5, 6], [7]]],
    "ragged_tuples": ((1, 2), (3,)),
    "number_then_list": [1, [2]],
    "list_then_number": [[1], 2],
    "none": None,
    "list_with_none": [1, None],
    "dict": {1: 2},
    "set": {1, 2},
    "object": [object()],
    "tensors_of_two_elements": "tensors",
    "tensor_in_ragged": "tensor_in_ragged",
}


def _data(name, lib):
    if name == "tensors_of_two_elements":
        return [lib.ones(2), lib.ones(2)]
    if name == "tensor_in_ragged":
        return [1, lib.ones(2)]
    return DATA[name]


@pytest.mark.parametrize("name", sorted(DATA))
@pytest.mark.parametrize("factory", ["tensor", "as_tensor"])
def test_refused_data_raises_torchs_error(name, factory):
    expected = _error(lambda: getattr(torch, factory)(_data(name, torch)))
    got = _error(lambda: getattr(rustgrad, factory)(_data(name, rustgrad)))
    assert got == expected


@pytest.mark.parametrize("name", ["number_and_str", "ragged", "number_then_list",
                                  "list_with_none", "object", "tensor_in_ragged"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool"])
def test_refused_data_with_explicit_dtype(name, dtype):
    expected = _error(lambda: torch.tensor(_data(name, torch), dtype=getattr(torch, dtype)))
    got = _error(lambda: rustgrad.tensor(_data(name, rustgrad), dtype=getattr(rustgrad, dtype)))
    assert got == expected


def test_deep_nesting_limit():
    data = 1
    for _ in range(129):
        data = [data]
    _same_error(lambda lib: lib.tensor, data)


@pytest.mark.parametrize("data", [[[], [1]], [[], [True]], [[], [1.5, 2.5]]])
@pytest.mark.parametrize("dtype", [None, "int64", "float64"])
def test_ragged_data_without_elements_is_empty_tensor(data, dtype):
    def prog(lib):
        return lib.tensor(data, dtype=None if dtype is None else getattr(lib, dtype))

    parity(prog)


def test_accepted_data_unchanged():
    def prog(lib):
        return (lib.tensor([[1, 2], [3, 4]]), lib.tensor([lib.tensor(1.0), 2]),
                lib.tensor([[np.float32(1)], [2]]), lib.tensor(((1, 2), [3, 4])))

    parity(prog)


@pytest.mark.parametrize("data", [np.float64(2.0), [np.int32(1)], [np.int16(3), np.int16(4)],
                                  [np.float32(1.0), 2.0], np.bool_(True), np.float16(1.5),
                                  [[np.float64(1.0)]]],
                         ids=repr)
def test_numpy_scalars_keep_their_dtypes(data):
    from ..parity import parity

    for make in ("tensor", "as_tensor"):
        assert str(getattr(rustgrad, make)(data).dtype) == str(getattr(torch, make)(data).dtype)
        parity(lambda lib, make=make: getattr(lib, make)(data))


def test_randint_takes_high_and_size_by_keyword():
    assert rustgrad.randint(high=5, size=(3,)).dtype == rustgrad.int64
    assert tuple(rustgrad.randint(5, (2,)).shape) == (2,)
    assert tuple(rustgrad.randint(5, size=(2, 2)).shape) == (2, 2)
    x = rustgrad.randint(low=3, high=5, size=(100,))
    assert int(x.min()) >= 3 and int(x.max()) <= 4


# ---- Python ints beyond int64 ----------------------------------------------------------------
# NumPy reads 2**63 as uint64 (and wraps it into int64's -2**63) and larger ints as objects;
# torch refuses an int it would store as int64 (ValueError), converts it exactly into a float
# dtype (OverflowError past double) and by truth into bool
BIG_INTS = {
    "2**63": [2**63],
    "2**63_scalar": 2**63,
    "2**64": [2**64],
    "below_int64": [-(2**63) - 1],
    "2**100": [[1], [2**100]],
    "mixed_with_int": [1, 2**63],
    "mixed_with_bool": [True, 2**63],
    "nested": [[1, 2], [3, 2**63]],
    "past_double": [2**1100],
}


@pytest.mark.parametrize("name", sorted(BIG_INTS))
@pytest.mark.parametrize("dtype", [None, "int64", "int32", "uint8", "float64", "float32", "bool"])
@pytest.mark.parametrize("factory", ["tensor", "as_tensor"])
def test_ints_beyond_int64_as_torch(name, dtype, factory):
    data = BIG_INTS[name]

    def make(lib):
        return getattr(lib, factory)(data, dtype=None if dtype is None else getattr(lib, dtype))

    try:
        make(torch)
    except Exception:  # noqa: BLE001 - compared with rustgrad's below
        _same_error(lambda lib: lambda d: make(lib), data)
    else:
        parity(make)


def test_int64_bounds_themselves_are_accepted():
    parity(lambda lib: lib.tensor([-(2**63), 2**63 - 1]))
    parity(lambda lib: lib.tensor([2**63, 1.5]))  # a float among them: float32, as torch's
    parity(lambda lib: lib.tensor([2**200, 1.0], dtype=lib.float64))


@pytest.mark.parametrize("value", [2**63, 2**64, -(2**63) - 1, 2**63 - 1, 300])
@pytest.mark.parametrize("dtype", [None, "int64", "int32", "uint8", "float32", "bool"])
def test_full_of_a_big_int_as_torch(value, dtype):
    def make(lib):
        return lib.full((2,), value, dtype=None if dtype is None else getattr(lib, dtype))

    try:
        make(torch)
    except Exception:  # noqa: BLE001 - compared with rustgrad's below
        _same_error(lambda lib: lambda d: make(lib), None)
    else:
        parity(make)


# ---- arange's bounds -------------------------------------------------------------------------
ARANGE_REFUSED = {
    "wrong_sign": (0, 10, -1),
    "wrong_sign_down": (10, 0, 1),
    "end_below_zero": (-1,),
    "float_wrong_sign": (0.0, 1.0, -0.1),
    "zero_step": (0, 10, 0),
    "nan_end": (float("nan"),),
    "inf_end": (float("inf"),),
    "inf_start": (float("inf"), 0, -1),
    "fraction_inf": (0.5, float("inf")),
    "nan_step": (0, 1, float("nan")),
    "inf_step": (0, 1, float("inf")),
    "beyond_int64": (2**63,),
    "beyond_uint64": (0, 2**64),
    "below_int64": (-(2**63) - 1, 0),
    "too_large": (0, 2**62),
}


@pytest.mark.parametrize("name", sorted(ARANGE_REFUSED))
def test_arange_refuses_what_torch_refuses(name):
    args = ARANGE_REFUSED[name]
    _same_error(lambda lib: lambda a: lib.arange(*a), args)


@pytest.mark.parametrize("args", [(5, 5), (5, 5, -1), (10, 0, -3), (10, 0, -3.0), (0, 1, 2),
                                  (10, 0, -100), (0.0, 1.0, 0.25), (0, 10, 2**62)], ids=repr)
def test_arange_empty_and_single_ranges_as_torch(args):
    parity(lambda lib: lib.arange(*args))


def test_arange_past_int64_is_refused_only_for_an_integer_result():
    # float bounds, or a float dtype, take numbers past int64 as torch does
    parity(lambda lib: lib.arange(0, 2**63, 2**62, dtype=lib.float64))
    parity(lambda lib: lib.arange(0.0, 2**63, 2.0**61))
    _same_error(lambda lib: lambda a: lib.arange(*a), (0, 2**63, 2**62))
