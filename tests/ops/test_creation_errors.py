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
