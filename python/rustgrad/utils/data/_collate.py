"""Collation, as torch.utils.data._utils.collate: `default_collate` merges a list of samples into
a batch (tensors stacked on a new first dim; Python floats to float64 tensors, ints to int64,
NumPy arrays and scalars to tensors of their own dtype; strings left as lists; mappings,
namedtuples and sequences collated field by field), `default_convert` turns NumPy data in one
sample into tensors (the DataLoader's conversion when automatic batching is off)."""

from __future__ import annotations

import collections.abc
import copy
import re
from typing import Any, Callable, Dict, Optional, Tuple, Type, Union

import numpy as np

import rustgrad

# NumPy dtypes that have no tensor counterpart: byte and unicode strings, objects
_np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, "
    "dicts or lists; found {}"
)

CollateFnMap = Dict[Union[Type[Any], Tuple[Type[Any], ...]], Callable[..., Any]]


def _is_numpy_value(t: type) -> bool:
    """Arrays and scalars of NumPy, but not its string scalars (those stay as they are)."""
    return t.__module__ == "numpy" and t.__name__ not in ("str_", "string_", "bytes_")


def _mapping_like(elem: Any, values: Dict[Any, Any]) -> Any:
    """`values` in a mapping of elem's type where that type allows it, else a plain dict."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            # a copy keeps whatever else the mapping type carries
            clone = copy.copy(elem)
            clone.update(values)
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def _sequence_like(elem: Any, values: list) -> Any:
    """`values` in a sequence of elem's type where that type allows it, else a list."""
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, v in enumerate(values):
                clone[i] = v
            return clone
        return type(elem)(values)
    except TypeError:
        # e.g. range: no item assignment and no constructor from a list
        return values


def default_convert(data: Any) -> Any:
    """Converts the NumPy arrays and scalars inside one sample to tensors, keeping its structure."""
    elem_type = type(data)
    if isinstance(data, rustgrad.Tensor):
        return data
    if _is_numpy_value(elem_type):
        if isinstance(data, np.ndarray) and _np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return rustgrad.as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return _mapping_like(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _sequence_like(data, [default_convert(d) for d in data])
    return data


def collate(batch: Any, *, collate_fn_map: Optional[CollateFnMap] = None) -> Any:
    """Collates `batch` by the type of its first element: a function of `collate_fn_map` (exact
    type first, then the first key it is an instance of), else field by field for mappings,
    namedtuples and sequences."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _mapping_like(elem, {
            key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem
        })
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        # each column stays the tuple zip makes: strings inside come back as tuples, as torch's
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return columns  # torch turns tuples into lists here
        return _sequence_like(elem, columns)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch: Any, *, collate_fn_map: Optional[CollateFnMap] = None) -> Any:
    """Tensors: stacked along a new first dim."""
    return rustgrad.stack(list(batch), 0)


def collate_numpy_array_fn(batch: Any, *, collate_fn_map: Optional[CollateFnMap] = None) -> Any:
    """NumPy arrays: tensors of the same dtype, then collated as tensors."""
    elem = batch[0]
    if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([rustgrad.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: Any, *, collate_fn_map: Optional[CollateFnMap] = None) -> Any:
    """NumPy scalars: one tensor with NumPy's promoted dtype."""
    # through an array, so the scalars' own dtype (float32, int16, ...) is kept
    return rustgrad.as_tensor(np.asarray(list(batch)))


def collate_float_fn(batch: Any, *, collate_fn_map: Optional[CollateFnMap] = None) -> Any:
    """Python floats: a float64 tensor."""
    return rustgrad.tensor(list(batch), dtype=rustgrad.float64)


def collate_int_fn(batch: Any, *, collate_fn_map: Optional[CollateFnMap] = None) -> Any:
    """Python ints (and bools): an int64 (bool) tensor."""
    return rustgrad.tensor(list(batch))


def collate_str_fn(batch: Any, *, collate_fn_map: Optional[CollateFnMap] = None) -> Any:
    """Strings and bytes: left as they are."""
    return batch


# the map user code may copy and extend, as torch's
default_collate_fn_map: CollateFnMap = {
    rustgrad.Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch: Any) -> Any:
    """Merges a list of samples into a batch, as torch's default_collate."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
