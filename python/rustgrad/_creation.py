"""Tensor creation: tensor, as_tensor, from_numpy, factories, random numbers with manual_seed."""

from __future__ import annotations

import math as _math
import warnings
from typing import Any, Optional, Sequence

import numpy as _np

from . import _config, _dtype, cuda
from ._backends import CPU, device, namespace
from ._tensor import Tensor, _wrap
from ._tensor import _rebuild as _rebuild  # noqa: F401  (the name pickles made before name)

_Device = device  # the class, under a name the `device` parameters do not shadow


def _target(dev: Any) -> Any:
    return namespace(device(dev) if isinstance(dev, str) else dev)


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _wide_ints(data: Any, arr: Any) -> bool:
    """Whether NumPy read Python ints outside int64 (as uint64, objects, or floats where no
    element is a float): their exact values are kept for `_resolve_wide_ints`."""
    kind = arr.dtype.kind
    leaves = data if isinstance(data, (list, tuple)) else [data]
    if kind == "u":
        return not isinstance(_first_leaf(data), _np.generic)
    if kind == "O":
        return all(isinstance(v, (int, float, _np.generic)) for v in leaves) and \
            any(type(v) is int for v in leaves)
    if kind == "f":
        return not any(isinstance(v, (float, _np.floating)) for v in leaves)
    return False


def _resolve_wide_ints(arr: Any, data: Any, dtype: Optional[_dtype.dtype]) -> Any:
    """An object array of exact Python numbers as torch stores them: into a float dtype
    through double (Python's OverflowError past it), into an integer one only within int64
    (torch's ValueError otherwise), into bool by truth."""
    dt = dtype if dtype is not None else _data_dtype(data)
    flat = arr.reshape(-1)
    if dt.is_floating_point:
        out = _np.array([float(v) for v in flat], dtype=_np.float64)
        with _np.errstate(over="ignore"):
            return out.astype(dt.np).reshape(arr.shape)
    if dt.np.kind == "b":
        return _np.array([bool(v) for v in flat], dtype=_np.bool_).reshape(arr.shape)
    if any(isinstance(v, int) and not _INT64_MIN <= v <= _INT64_MAX for v in flat):
        raise ValueError("Overflow when unpacking long long")
    return _np.array([int(v) for v in flat], dtype=_np.int64).reshape(arr.shape)


def _infer_np_dtype(data: Any, exact: bool = False) -> Any:
    """torch's dtype inference for Python data: bools, ints -> int64, floats -> default; NumPy
    scalars keep their dtypes (np.float64(2.0) is float64, [np.int32(1)] int32). Python ints
    NumPy cannot hold as int64 come back as an object array of the exact values."""
    arr = _np.asarray(data)
    if arr.dtype.kind in "uOf" and _wide_ints(data, arr):
        return _np.array(data, dtype=object)
    kind = arr.dtype.kind
    if not exact and kind in "biuf" and isinstance(_first_leaf(data), _np.generic):
        return arr.astype(_data_dtype(data).np)
    if kind == "b":
        return arr.astype(_np.bool_)
    if kind in "iu":
        return arr.astype(_np.int64)
    if kind == "f":
        # with an explicit dtype the values keep float64 precision until the final cast
        return arr.astype(_np.float64 if exact else _dtype.get_default_dtype().np)
    if kind == "c":
        return arr.astype(_np.complex128 if exact else _dtype.default_complex_dtype().np)
    if kind == "O":
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    raise TypeError(f"can't convert data of type {arr.dtype} to a tensor")


def _first_leaf(data: Any) -> Any:
    while isinstance(data, (list, tuple)) and data:
        data = data[0]
    return data


_MAX_DIMS = 128  # torch's limit on the nesting of Python data


def _is_sequence(x: Any) -> bool:
    """What torch walks into when it reads Python data (a tensor inside is one scalar)."""
    return isinstance(x, (list, tuple, str, bytes, _np.ndarray))


def _data_sizes(data: Any) -> list:
    """torch's compute_sizes: the lengths along the first element of each level."""
    sizes: list = []
    seq = data
    while _is_sequence(seq):
        sizes.append(len(seq))
        if len(sizes) > _MAX_DIMS:
            raise ValueError(f"too many dimensions '{type(seq).__name__}'")
        if not len(seq):
            break
        seq = seq[0]
    return sizes


def _data_dtype(x: Any) -> _dtype.dtype:
    """torch's infer_scalar_type of Python data (used only to word errors)."""
    if isinstance(x, bool):
        return _dtype.bool_
    if isinstance(x, _np.generic) and x.dtype.kind in "biuf":  # before float: np.float64 is one
        return _dtype.from_np(x.dtype)
    if isinstance(x, (int, _np.integer)):
        return _dtype.int64 if isinstance(x, int) else _dtype.from_np(x.dtype)
    if isinstance(x, (float, _np.floating)):
        return _dtype.get_default_dtype() if isinstance(x, float) else _dtype.from_np(x.dtype)
    if isinstance(x, complex):
        return _dtype.default_complex_dtype()
    if isinstance(x, Tensor):
        return x.dtype
    if isinstance(x, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
    if isinstance(x, _np.ndarray):
        return _dtype.from_np(x.dtype)
    if isinstance(x, (list, tuple)):
        if not x:
            return _dtype.get_default_dtype()
        out = None
        for e in x:
            d = _data_dtype(e)
            out = d if out is None else _dtype.promote_types(out, d)
        return out
    raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


def _check_scalar(x: Any, dt: _dtype.dtype) -> None:
    """torch's store_scalar refusals for one element of the data."""
    integral = dt.np.kind in "biu"
    if isinstance(x, Tensor):
        if x.numel() != 1:
            if integral:
                raise TypeError("only integer tensors of a single element can be converted to "
                                "an index")
            raise ValueError("only one element tensors can be converted to Python scalars")
        return
    if isinstance(x, complex) and not dt.is_complex:
        if integral:
            raise TypeError("'complex' object cannot be interpreted as an integer")
        raise TypeError("must be real number, not complex")
    if isinstance(x, (bool, int, float, complex, _np.generic)):
        return
    if integral:
        raise TypeError(f"'{type(x).__name__}' object cannot be interpreted as an integer")
    raise TypeError(f"must be real number, not {type(x).__name__}")


def _check_data(data: Any, dtype: Optional[_dtype.dtype]) -> Optional[Any]:
    """Raises torch's error for Python data NumPy could not turn into a tensor (a string,
    ragged lists, objects); returns the empty array torch makes of data without elements."""
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    sizes = _data_sizes(data)
    dt = _data_dtype(data) if dtype is None else dtype
    if 0 in sizes:
        return _np.empty(tuple(sizes), dtype=dt.np)  # torch reads no element of it

    def store(x: Any, dim: int) -> None:
        if dim == len(sizes):
            _check_scalar(x, dt)
            return
        if not _is_sequence(x):
            raise TypeError("not a sequence")
        if len(x) != sizes[dim]:
            raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(x)})")
        for e in x:
            store(e, dim + 1)

    store(data, 0)
    return None




def _check_int_range(values: Any, np_dt: Any, name: str) -> None:
    """torch's refusal of Python numbers a narrow integer dtype cannot hold (NumPy would wrap
    them); an unsigned dtype takes negatives down to -max, as torch's checked conversion."""
    bounds = _dtype.checked_int_bounds(_np.dtype(np_dt))
    if bounds is None:
        return
    arr = _np.asarray(values)
    if arr.size == 0 or arr.dtype.kind not in "iuf":
        return
    lo, hi = bounds
    if arr.min() < lo or arr.max() > hi:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def _from_data(data: Any, exact: bool = False) -> Any:
    if isinstance(data, Tensor):
        return data._backend.to_numpy(data._data)
    if isinstance(data, (list, tuple)):
        if any(isinstance(x, Tensor) and x._data.size != 1 for x in data):
            raise ValueError("a tensor of several elements inside a list")  # worded by _check_data
        flat = [(_from_data(x, exact) if isinstance(x, (Tensor, list, tuple)) else x) for x in data]
        if any(isinstance(x, _np.ndarray) for x in flat):
            return _np.stack([_np.asarray(x) for x in flat]) if flat else _np.asarray(flat)
        return _infer_np_dtype(flat, exact)
    if isinstance(data, _np.ndarray):
        return data
    if isinstance(data, _np.generic):
        return _np.asarray(data)
    if isinstance(data, (bool, int, float, complex)):
        return _infer_np_dtype(data, exact)
    if hasattr(data, "__array__") or hasattr(data, "__cuda_array_interface__"):
        return data
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def tensor(
    data: Any,
    *,
    dtype: Optional[_dtype.dtype] = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """A new leaf holding a copy of `data` (a number, nested lists, an array or a tensor).

    The dtype is inferred from the data when not given: bools give ``bool``, Python ints
    ``int64``, Python floats the default dtype; NumPy arrays and scalars keep theirs. The result
    never shares memory with `data` (see `as_tensor` and `from_numpy` for that).

    Args:
        data: the values: a Python number, (nested) lists or tuples, a NumPy array or a tensor.
        dtype (rustgrad.dtype, optional): the element type. Default: inferred from `data`.
        device (rustgrad.device or str, optional): where to allocate. Default: the default device.
        requires_grad (bool): whether autograd records operations on the result. Default:
            ``False``.
        pin_memory (bool): accepted for torch compatibility; ignored.

    Example::

        >>> torch.tensor([[1, 2], [3, 4]])
        tensor([[1, 2],
                [3, 4]])
        >>> torch.tensor([1.0, 2.0], requires_grad=True)
        tensor([1., 2.], requires_grad=True)
        >>> torch.tensor(3.0, dtype=torch.float64).dtype
        torch.float64
    """
    if device is None:
        device = _config.default_device()
    try:
        arr = _from_data(data, dtype is not None)
    except (ValueError, TypeError, IndexError):  # IndexError: NumPy's 64-dimension limit
        arr = _check_data(data, dtype)
        if arr is None:
            raise
    if dtype is not None and not dtype.is_complex and getattr(arr, "dtype", None) is not None \
            and arr.dtype.kind == "c" and not isinstance(data, (_np.ndarray, Tensor)):
        _check_data(data, dtype)  # torch refuses Python complex numbers for a real dtype
    if isinstance(arr, _np.ndarray) and arr.dtype == object and \
            not isinstance(data, _np.ndarray):
        arr = _resolve_wide_ints(arr, data, dtype)
    if isinstance(arr, _np.ndarray):
        _dtype.from_np(arr.dtype)  # refuses dtypes torch has no tensor for
        if dtype is None and not isinstance(data, (_np.ndarray, Tensor)):
            if isinstance(_first_leaf(data), _np.generic):  # NumPy scalars keep their dtypes
                arr = arr.astype(_data_dtype(data).np, copy=False)
            elif arr.dtype == _np.float64:
                arr = arr.astype(_dtype.get_default_dtype().np)
    np_dt = _dtype.to_np(dtype)
    if np_dt is not None and isinstance(arr, _np.ndarray) and \
            not isinstance(data, (_np.ndarray, Tensor)):
        _check_int_range(arr, np_dt, np_dt.name)
    target = _target(device) if device is not None else (
        data._backend if isinstance(data, Tensor) else
        namespace("cuda") if not isinstance(arr, _np.ndarray)
        and hasattr(arr, "__cuda_array_interface__") else namespace(CPU))
    out = target.from_numpy(_np.array(arr, dtype=np_dt, copy=True), device) \
        if isinstance(arr, _np.ndarray) else target.asarray(arr, dtype=np_dt).copy()
    return _wrap(out, requires_grad)


def as_tensor(data: Any, dtype: Optional[_dtype.dtype] = None, device: Any = None) -> Tensor:
    """Like tensor(), but shares memory with a NumPy array or tensor when it can."""
    if isinstance(data, Tensor):
        out = data
        if dtype is not None:
            out = out.to(dtype)
        if device is not None:
            out = out.to(device)
        return out
    if isinstance(data, _np.ndarray) and device is None:
        arr = data if dtype is None else data.astype(dtype.np, copy=False)
        _dtype.from_np(arr.dtype)
        return _wrap(arr)
    if device is None and dtype is None and hasattr(data, "__cuda_array_interface__"):
        return _wrap(namespace("cuda").asarray(data))  # GPU memory, shared as torch shares it
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: Any) -> Tensor:
    """A tensor sharing memory with `array` (writes through either show in the other)."""
    if not isinstance(array, _np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    if type(array) is not _np.ndarray:
        array = array.view(_np.ndarray)  # np.memmap, np.matrix: the same memory, as torch's
    _dtype.from_np(array.dtype)
    return _wrap(array)


def _size(size: Sequence[Any]) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (int, _np.integer)):
            raise TypeError(
                f"empty(): argument 'size' must be tuple of ints, but found element of type "
                f"{type(s).__name__}"
            )
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(int(s) for s in size)


def _factory(fill: str, size: Sequence[Any], dtype: Any, device: Any, requires_grad: bool,
             value: Any = None) -> Tensor:
    if device is None:
        device = _config.default_device()
    xp = _target(device) if device is not None else namespace(CPU)
    dt = _dtype.to_np(dtype) if dtype is not None else _dtype.get_default_dtype().np
    shape = _size(size)
    numel = 1
    for n in shape:
        numel *= n
    if numel * _np.dtype(dt).itemsize >= 1 << 63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    if fill == "zeros":
        arr = xp.zeros(shape, dtype=dt)
    elif fill == "ones":
        arr = xp.ones(shape, dtype=dt)
    elif fill == "empty":
        arr = xp.empty(shape, dtype=dt)
    else:
        arr = xp.full(shape, value, dtype=dt)
    return _wrap(arr, requires_grad)


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of the given shape filled with 0.

    Args:
        *size (int...): the shape, as separate ints or one list/tuple.
        dtype (rustgrad.dtype, optional): the element type. Default: the default dtype
            (see `set_default_dtype`), float32 unless changed.
        device (rustgrad.device or str, optional): where to allocate. Default: the default device.
        requires_grad (bool): whether autograd records operations on the result (a leaf).
            Default: ``False``.

    Example::

        >>> torch.zeros(2, 3)
        tensor([[0., 0., 0.],
                [0., 0., 0.]])
        >>> torch.zeros((2,), dtype=torch.int64)
        tensor([0, 0])
    """
    return _factory("zeros", size, dtype, device, requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of the given shape filled with 1.

    Args:
        *size (int...): the shape, as separate ints or one list/tuple.
        dtype (rustgrad.dtype, optional): the element type. Default: the default dtype
            (see `set_default_dtype`), float32 unless changed.
        device (rustgrad.device or str, optional): where to allocate. Default: the default device.
        requires_grad (bool): whether autograd records operations on the result (a leaf).
            Default: ``False``.

    Example::

        >>> torch.ones(3)
        tensor([1., 1., 1.])
    """
    return _factory("ones", size, dtype, device, requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of the given shape whose values are not initialized (whatever the memory held).

    Args:
        *size (int...): the shape, as separate ints or one list/tuple.
        dtype (rustgrad.dtype, optional): the element type. Default: the default dtype
            (see `set_default_dtype`), float32 unless changed.
        device (rustgrad.device or str, optional): where to allocate. Default: the default device.
        requires_grad (bool): whether autograd records operations on the result (a leaf).
            Default: ``False``.
    """
    return _factory("empty", size, dtype, device, requires_grad)


def _scalar_str(v: Any) -> str:
    """A number as torch's messages print a Scalar (C++'s stream: 0, 0.5, 1e+20, inf)."""
    return str(v) if isinstance(v, int) else f"{v:g}"


def _check_int_scalar(v: Any, name: Optional[str]) -> None:
    """torch's refusals of a Python int it cannot read as a Scalar (past uint64 or below
    int64), or, stored into the integer type C++ calls `name`, past int64's max."""
    if type(v) is not int:
        return
    if v >= 1 << 64:
        raise OverflowError("int too big to convert")
    if v < _INT64_MIN:
        raise OverflowError("can't convert negative int to unsigned")
    if name is not None and v > _INT64_MAX:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def full(size: Sequence[int], fill_value: Any, *, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of the given shape filled with `fill_value`.

    Args:
        size (sequence of int): the shape.
        fill_value (Number): the value of every element.
        dtype (rustgrad.dtype, optional): the element type. Default: the default dtype
            (see `set_default_dtype`), float32 unless changed.
        device (rustgrad.device or str, optional): where to allocate. Default: the default device.
        requires_grad (bool): whether autograd records operations on the result (a leaf).
            Default: ``False``.

    Example::

        >>> torch.full((2, 2), 7.0)
        tensor([[7., 7.],
                [7., 7.]])
    """
    if type(fill_value) is int:
        integral = dtype is None or dtype.np.kind in "iu"
        _check_int_scalar(fill_value, _dtype.C_INT_NAMES.get(
            (dtype or _dtype.int64).name, "int64_t") if integral else None)
        if dtype is not None and dtype.np.kind == "b":
            fill_value = bool(fill_value)
    if dtype is None:
        dtype = _dtype.scalar_dtype(fill_value)
    elif isinstance(fill_value, (int, float)) and not isinstance(fill_value, bool):
        _check_int_range(fill_value, dtype.np, _dtype.C_INT_NAMES.get(dtype.name, dtype.name))
        if type(fill_value) is int and fill_value < 0 and dtype.np.kind == "u":
            fill_value &= (1 << (dtype.np.itemsize * 8)) - 1  # -1 fills uint8 with 255
    return _factory("full", (tuple(size),), dtype, device, requires_grad, fill_value)


def _like(fn: Any, t: Tensor, dtype: Any, device: Any, requires_grad: bool, *args: Any) -> Tensor:
    return fn(*args, t.shape, dtype=dtype or t.dtype, device=device or t.device,
              requires_grad=requires_grad) if args else \
        fn(t.shape, dtype=dtype or t.dtype, device=device or t.device, requires_grad=requires_grad)


def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """A tensor of 0s with the shape of `input` (and its dtype unless `dtype` is given).

    Args:
        input (Tensor): the tensor whose shape (and, by default, dtype) the result takes.
        dtype (rustgrad.dtype, optional): the element type. Default: ``input.dtype``.
        device (rustgrad.device or str, optional): where to allocate.
        requires_grad (bool): whether autograd records operations on the result. Default: ``False``.
    """
    return zeros(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad)


def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """A tensor of 1s with the shape of `input` (and its dtype unless `dtype` is given).

    Args:
        input (Tensor): the tensor whose shape (and, by default, dtype) the result takes.
        dtype (rustgrad.dtype, optional): the element type. Default: ``input.dtype``.
        device (rustgrad.device or str, optional): where to allocate.
        requires_grad (bool): whether autograd records operations on the result. Default: ``False``.
    """
    return ones(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """An uninitialized tensor with the shape of `input` (and its dtype unless `dtype` is given).

    Args:
        input (Tensor): the tensor whose shape (and, by default, dtype) the result takes.
        dtype (rustgrad.dtype, optional): the element type. Default: ``input.dtype``.
        device (rustgrad.device or str, optional): where to allocate.
        requires_grad (bool): whether autograd records operations on the result. Default: ``False``.
    """
    return empty(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad)


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """A tensor filled with `fill_value`, with the shape of `input` (and its dtype by default).

    Args:
        input (Tensor): the tensor whose shape (and, by default, dtype) the result takes.
        dtype (rustgrad.dtype, optional): the element type. Default: ``input.dtype``.
        device (rustgrad.device or str, optional): where to allocate.
        requires_grad (bool): whether autograd records operations on the result. Default: ``False``.
        fill_value (Number): the value of every element.
    """
    return full(input.shape, fill_value, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def full_like_scalar(t: Tensor, value: Any) -> Tensor:
    """A 0-dim tensor holding a Python scalar, on t's device (torch's wrapped number)."""
    xp = t._backend
    return _wrap(xp.asarray(value, dtype=_dtype.scalar_dtype(value).np)
                 if not isinstance(value, float) or not _dtype.is_floating_np(t._data.dtype)
                 else xp.asarray(value, dtype=t._data.dtype))


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """A 1-D tensor of the values from `start` (inclusive) to `end` (exclusive) by `step`.

    With one positional argument it is the end and the start is 0. The dtype is int64 when all
    of start, end and step are ints, else the default dtype.

    Args:
        start (Number): the first value (or the end, when `end` is omitted). Default: 0.
        end (Number): the bound, not included.
        step (Number): the gap between consecutive values, not zero. Default: 1.
        dtype (rustgrad.dtype, optional): the element type. Default: the default dtype
            (see `set_default_dtype`), float32 unless changed.
        device (rustgrad.device or str, optional): where to allocate. Default: the default device.
        requires_grad (bool): whether autograd records operations on the result (a leaf).
            Default: ``False``.

    Example::

        >>> torch.arange(5)
        tensor([0, 1, 2, 3, 4])
        >>> torch.arange(1, 2.5, 0.5)
        tensor([1.0000, 1.5000, 2.0000])
    """
    if device is None:
        device = _config.default_device()
    if end is None:
        start, end = 0, start
    if dtype is not None and dtype.is_complex and dtype.np.kind == "c":  # complex32: TypeError
        raise NotImplementedError(f'"arange_cpu" not implemented for '
                                  f"'{_dtype.scalar_type_name(dtype)}'")
    integral = dtype is None and not any(isinstance(x, float) for x in (start, end, step)) \
        or dtype is not None and not dtype.is_floating_point
    for v in (start, end, step):  # past int64 only an integer result overflows, as in torch
        _check_int_scalar(v, "int64_t" if integral else None)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not _math.isfinite(step):
        raise RuntimeError(f"step must be finite but got {_scalar_str(step)}")
    if not (_math.isfinite(start) and _math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {_scalar_str(start)} -> {_scalar_str(end)}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        is_float = any(isinstance(x, float) for x in (start, end, step))
        dtype = _dtype.get_default_dtype() if is_float else _dtype.int64
    xp = _target(device) if device is not None else namespace(CPU)
    n = max(0, int(_np.ceil((end - start) / step)))
    if n * _np.dtype(dtype.np).itemsize >= 1 << 63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes=[{n}]")
    arr = (start + xp.arange(n, dtype=_np.float64) * step).astype(dtype.np) \
        if dtype.is_floating_point else xp.arange(start, end, step, dtype=dtype.np)
    return _wrap(arr, requires_grad)


def linspace(start: float, end: float, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """A 1-D tensor of `steps` evenly spaced values from `start` to `end`, both included.

    Args:
        start (float): the first value.
        end (float): the last value.
        steps (int): how many values.
        dtype (rustgrad.dtype, optional): the element type. Default: the default dtype
            (see `set_default_dtype`), float32 unless changed.
        device (rustgrad.device or str, optional): where to allocate. Default: the default device.
        requires_grad (bool): whether autograd records operations on the result (a leaf).
            Default: ``False``.

    Example::

        >>> torch.linspace(0, 1, 5)
        tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    """
    if device is None:
        device = _config.default_device()
    xp = _target(device) if device is not None else namespace(CPU)
    dt = (dtype or _dtype.get_default_dtype()).np
    return _wrap(xp.linspace(start, end, steps, dtype=_np.float64).astype(dt), requires_grad)


def _number_of(v: Any) -> Any:
    """A Python number of a number or a one-element tensor (torch's Scalar arguments)."""
    if isinstance(v, Tensor):
        return v.item()
    return v


def inclusive_range(start: Any, end: Any, step: Any = 1, *, dtype: Any = None,
                    device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.range: the values start, start + step, ... up to end included, in the default
    dtype unless given (for an integer dtype, start, end and step are truncated to ints first).
    """
    start, end, step = (_number_of(v) for v in (start, end, step))
    dt = dtype or _dtype.get_default_dtype()
    integral = not dt.is_floating_point
    if integral:
        start, end, step = int(start), int(end), int(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (_math.isfinite(start) and _math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {_scalar_str(float(start))} -> "
                           f"{_scalar_str(float(end))}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int((end - start) / step) + 1
    if device is None:
        device = _config.default_device()
    xp = _target(device) if device is not None else namespace(CPU)
    if integral:
        arr = start + xp.arange(n, dtype=_np.int64) * step
    else:
        arr = start + xp.arange(n, dtype=_np.float64) * step
    return _wrap(arr.astype(dt.np), requires_grad)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """`steps` values base ** x, x evenly spaced from start to end (both included)."""
    start, end, base = (_number_of(v) for v in (start, end, base))
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = (dtype or _dtype.get_default_dtype()).np
    exps = _linspace_points(float(start), float(end), steps)
    with _np.errstate(all="ignore"):
        host = _np.power(float(base), exps).astype(dt)
    return _on_device(host, device, requires_grad)


def _linspace_points(start: float, end: float, steps: int) -> Any:
    """torch's linspace in float64: the first half counted up from start, the second half
    down from end, so that both ends are exact."""
    if steps == 1:
        return _np.array([start], dtype=_np.float64)
    i = _np.arange(steps, dtype=_np.float64)
    step = (end - start) / max(steps - 1, 1)
    half = steps // 2
    return _np.where(i < half, start + step * i, end - step * (steps - 1 - i))


def empty_permuted(size: Sequence[int], physical_layout: Sequence[int], *, dtype: Any = None,
                   device: Any = None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of shape size whose memory holds its dims in the order
    physical_layout (outermost first)."""
    shape = tuple(int(n) for n in size)
    order = tuple(int(p) for p in physical_layout)
    if len(shape) != len(order):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(shape)} is not equal to "
                           f"len(physical_layout) = {len(order)}")
    seen = set()
    for i, p in enumerate(order):
        if not 0 <= p < len(shape):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and "
                               f"{len(shape) - 1}, but got {p} at index {i}).  NB: negative dims "
                               f"not currently supported; file an issue if you want it.")
        if p in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(p)
    physical = empty(tuple(shape[p] for p in order), dtype=dtype, device=device)
    inverse = [0] * len(order)
    for i, p in enumerate(order):
        inverse[p] = i
    arr = physical._data.transpose(inverse) if order else physical._data
    return _wrap(arr, requires_grad)


def _numpy_of(obj: Any) -> Any:
    """obj's memory as a NumPy array when obj is one or offers Python's buffer protocol; None
    otherwise."""
    if isinstance(obj, _np.ndarray):
        return obj
    if isinstance(obj, _np.generic):
        return _np.asarray(obj)
    if isinstance(obj, (list, tuple, str, bool, int, float, complex, dict)):
        return None
    try:
        view = memoryview(obj)
    except TypeError:
        return None
    return _np.asarray(view)


_WARNED_ASARRAY: list = []  # torch warns once per process
_ASARRAY_DEFAULT = (
    "torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of "
    "False. Pass requires_grad=False explicitly to get the old behavior and silence this "
    "warning.")


def _asarray_tensor(obj: Tensor, dtype: Any, device: Any, copy: Optional[bool],
                    requires_grad: Optional[bool]) -> Tensor:
    if requires_grad is None and obj.requires_grad and not _WARNED_ASARRAY:
        _WARNED_ASARRAY.append(True)
        warnings.warn(_ASARRAY_DEFAULT, UserWarning, stacklevel=4)
    out = obj
    if dtype is not None and dtype != out.dtype:
        if copy is False:
            raise ValueError(f"can't alias tensor with dtype '{_dtype.scalar_type_name(out.dtype)}' "
                             f"into dtype '{_dtype.scalar_type_name(dtype)}'.")
        out = out.to(dtype)
    if device is not None and _Device(device) != out.device:
        if copy is False:
            raise ValueError(f"can't alias tensor from device '{out.device}' to "
                             f"'{_Device(device)}'.")
        out = out.to(device)
    if copy and out is obj:
        out = obj.clone()
    if requires_grad is False and out.requires_grad:
        # a leaf stops requiring grad (obj itself, when it is returned); else a detached alias
        return out.requires_grad_(False) if out.is_leaf else out.detach()
    if requires_grad and not out.requires_grad:
        out.requires_grad_(True)
    return out


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: Optional[bool] = None,
            requires_grad: Optional[bool] = None) -> Tensor:
    """obj as a tensor, sharing memory with a tensor, NumPy array or buffer when dtype and
    device allow it and copy is not True (copy=False refuses to copy). requires_grad None
    keeps a tensor's (with torch's one-time warning when it requires grad); True or False
    sets it on the result (on obj itself when obj is returned, a leaf)."""
    if isinstance(obj, Tensor):
        return _asarray_tensor(obj, dtype, device, copy, requires_grad)
    requires_grad = bool(requires_grad)
    arr = _numpy_of(obj)
    if arr is None and hasattr(obj, "__cuda_array_interface__"):
        return _asarray_tensor(as_tensor(obj), dtype, device, copy, requires_grad)
    if arr is not None:
        if any(s < 0 for s in arr.strides):
            raise ValueError(
                "At least one stride in the given numpy array is negative, and tensors with "
                "negative strides are not currently supported. (You can probably work around "
                "this by making a copy of your array  with array.copy().)")
        if type(arr) is not _np.ndarray:
            arr = arr.view(_np.ndarray)
        _dtype.from_np(arr.dtype)  # refuses dtypes torch has no tensor for
        if requires_grad and not _dtype.is_floating_np(
                arr.dtype if dtype is None else dtype.np):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        return _asarray_tensor(_wrap(arr), dtype, device, copy, requires_grad)
    if copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)


def eye(n: int, m: Optional[int] = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """A 2-D tensor with ones on the diagonal and zeros elsewhere.

    Args:
        n (int): the number of rows.
        m (int, optional): the number of columns. Default: `n`.
        dtype (rustgrad.dtype, optional): the element type. Default: the default dtype
            (see `set_default_dtype`), float32 unless changed.
        device (rustgrad.device or str, optional): where to allocate. Default: the default device.
        requires_grad (bool): whether autograd records operations on the result (a leaf).
            Default: ``False``.

    Example::

        >>> torch.eye(2)
        tensor([[1., 0.],
                [0., 1.]])
    """
    if device is None:
        device = _config.default_device()
    xp = _target(device) if device is not None else namespace(CPU)
    dt = (dtype or _dtype.get_default_dtype()).np
    return _wrap(xp.eye(n, m, dtype=dt), requires_grad)


# ---- empty_strided, frombuffer, window functions ------------------------------------------------
def _on_device(host: Any, device: Any, requires_grad: bool) -> Tensor:
    """A leaf tensor of a host (NumPy) array, moved to `device` (the default device if None)."""
    if device is None:
        device = _config.default_device()
    if device is not None:
        host = _target(device).from_numpy(host, device)
    return _wrap(host, requires_grad)


def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: Any = None,
                  device: Any = None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of shape size whose elements sit stride elements apart (a leaf
    over memory of its own, just large enough)."""
    shape = tuple(int(n) for n in size)
    steps = tuple(int(n) for n in stride)
    if len(shape) != len(steps):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of "
                           f"strides ({len(steps)})")
    for n in shape:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(shape)}")
    if any(s < 0 for s in steps):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(steps)}")
    if device is None:
        device = _config.default_device()
    xp = _target(device) if device is not None else namespace(CPU)
    dt = _np.dtype(_dtype.to_np(dtype) if dtype is not None else _dtype.get_default_dtype().np)
    span = 0 if any(n == 0 for n in shape) else 1 + sum((n - 1) * s for n, s in zip(shape, steps))
    flat = xp.empty(max(span, 1), dtype=dt)
    arr = xp.as_strided(flat, shape, tuple(s * dt.itemsize for s in steps))
    return _wrap(arr, requires_grad)


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D CPU tensor over the memory of an object of Python's buffer protocol (shared, not
    copied)."""
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    length = view.nbytes
    item = _np.dtype(_dtype.to_np(dtype)).itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({item})")
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    arr = _np.frombuffer(view.cast("B"), dtype=_dtype.to_np(dtype), count=count, offset=offset)
    return _wrap(arr, requires_grad)


def _window_points(name: str, window_length: int, periodic: bool, dtype: Any) -> Any:
    """The positions n / (N - 1) of a window's samples (N one more for a periodic window), as
    float64 host values; checks torch's arguments."""
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    dt = dtype or _dtype.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: "
                           f"TensorOptions(dtype={_dtype.cpp_name(dt)})")
    if window_length <= 1:
        return None
    n = window_length + 1 if periodic else window_length
    return _np.arange(window_length, dtype=_np.float64) / (n - 1)


def window(name: str, window_length: int, periodic: bool, dtype: Any, device: Any,
           requires_grad: bool, params: Sequence[float] = ()) -> Tensor:
    """torch's window `name` ("hann", "hamming", "blackman", "bartlett", "kaiser") of
    window_length samples; params are hamming's (alpha, beta) or kaiser's (beta,)."""
    x = _window_points(f"{name}_window", window_length, periodic, dtype)
    dt = (dtype or _dtype.get_default_dtype()).np
    if x is None:  # a window of 0 or 1 samples
        w = _np.ones(window_length, dtype=_np.float64)
    elif name == "hann":
        w = 0.5 - 0.5 * _np.cos(2 * _math.pi * x)
    elif name == "hamming":
        alpha, beta = params
        w = alpha - beta * _np.cos(2 * _math.pi * x)
    elif name == "blackman":
        w = 0.42 - 0.5 * _np.cos(2 * _math.pi * x) + 0.08 * _np.cos(4 * _math.pi * x)
    elif name == "bartlett":
        w = 1 - _np.abs(2 * x - 1)
    else:  # kaiser
        (beta,) = params
        w = _np.i0(beta * _np.sqrt(_np.clip(1 - (2 * x - 1) ** 2, 0, None))) / _np.i0(beta)
    return _on_device(w.astype(dt), device, requires_grad)


# ---- random numbers: generators seeded by manual_seed --------------------------------------
_DEFAULT_SEED = 67280421310721  # torch's default_rng_seed_val: a fresh generator's initial_seed()
_STATE_BYTES = 56  # PCG64 state and increment (16 bytes each), the spare 32-bit draw, the seed


class Generator:
    """A random number generator (NumPy's PCG64), as torch.Generator: seeded with manual_seed,
    its state saved and restored as a uint8 tensor, passed as `generator=` to the random ops."""

    def __init__(self, device: Any = "cpu") -> None:
        dev = device if isinstance(device, _Device) else _Device(device)
        if dev.type != "cpu":
            if dev.type != "cuda" or not cuda.is_available():
                raise RuntimeError(f"rustgrad.Generator: device {str(dev)!r} is not available")
        self.device = dev
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed: int) -> Generator:
        """Reseeds this generator; returns it."""
        seed = int(seed)
        if seed < -(1 << 63) or seed >= 1 << 64:
            raise RuntimeError("Overflow when unpacking long long")
        self._seed = seed & ((1 << 64) - 1)  # torch reads a negative seed as its uint64 bits
        self._rng_made: Any = None  # made on first draw: numpy.random costs `import rustgrad` ~15 ms
        return self

    @property
    def _rng(self) -> Any:
        """The NumPy generator behind this one, seeded from `_seed` on first use."""
        if self._rng_made is None:
            self._rng_made = _np.random.default_rng(self._seed)
        return self._rng_made

    @_rng.setter
    def _rng(self, rng: Any) -> None:
        self._rng_made = rng

    def seed(self) -> int:
        """Reseeds from the OS's entropy; returns the new seed."""
        s = int(_np.random.SeedSequence().entropy % (1 << 63))
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def get_state(self) -> Tensor:
        """The generator's state as a uint8 tensor (for set_state)."""
        st = self._rng.bit_generator.state
        raw = (st["state"]["state"].to_bytes(16, "little")
               + st["state"]["inc"].to_bytes(16, "little")
               + int(st["has_uint32"]).to_bytes(8, "little")
               + int(st["uinteger"]).to_bytes(8, "little")
               + self._seed.to_bytes(8, "little"))
        return _wrap(_np.frombuffer(raw, dtype=_np.uint8).copy())

    def set_state(self, new_state: Tensor) -> Generator:
        """Restores a state from get_state(); returns the generator."""
        if not isinstance(new_state, Tensor) or new_state.dtype is not _dtype.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = bytes(new_state._backend.to_numpy(new_state._data).reshape(-1).tolist())
        if len(raw) != _STATE_BYTES:
            raise RuntimeError(f"Expected a rustgrad generator state of size {_STATE_BYTES} but "
                               f"found the input RNG state size to be {len(raw)}")
        rng = _np.random.default_rng(0)
        rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": int.from_bytes(raw[0:16], "little"),
                      "inc": int.from_bytes(raw[16:32], "little")},
            "has_uint32": int.from_bytes(raw[32:40], "little"),
            "uinteger": int.from_bytes(raw[40:48], "little"),
        }
        self._rng = rng
        self._seed = int.from_bytes(raw[48:56], "little")
        return self

    def __repr__(self) -> str:
        return f"<rustgrad.Generator object on {self.device}>"


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seeds the default generator (and so every random op without generator=).

    Returns the default generator. The same seed gives the same numbers in rustgrad, but not
    the numbers torch gives for it.

    Args:
        seed (int): the seed.
    """
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seeds the default generator from the OS's entropy; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restores the default generator's state from get_rng_state()."""
    default_generator.set_state(new_state)


def rng_of(generator: Optional[Generator]) -> Any:
    """The NumPy generator behind `generator=` (the default generator when None)."""
    if generator is None:
        return default_generator._rng
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a rustgrad.Generator, not {type(generator).__name__}")
    return generator._rng


def _random(kind: str, size: Sequence[Any], dtype: Any, device: Any, requires_grad: bool,
            generator: Optional[Generator] = None, **kw: Any) -> Tensor:
    rng = rng_of(generator)
    if device is None:
        device = _config.default_device()
    shape = _size(size)
    dt = (dtype or _dtype.get_default_dtype()).np
    if dt.kind == "c" and kind != "randint":  # torch's: each part uniform, or N(0, 1/2)
        parts = rng.random(shape + (2,)) if kind == "rand" else \
            rng.standard_normal(shape + (2,)) * _np.sqrt(0.5)
        arr = (parts[..., 0] + 1j * parts[..., 1]).astype(dt)
    elif kind == "rand":
        arr = rng.random(shape, dtype=_np.float64).astype(dt)
    elif kind == "randn":
        arr = rng.standard_normal(shape, dtype=_np.float64).astype(dt)
    else:
        arr = rng.integers(kw["low"], kw["high"], size=shape, dtype=_np.int64).astype(dt)
    if device is not None:
        arr = _target(device).from_numpy(arr, device)
    return _wrap(arr, requires_grad)


def rand(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
         generator: Optional[Generator] = None) -> Tensor:
    """A tensor of random numbers drawn uniformly from [0, 1).

    Reproducible after `manual_seed` (the streams are NumPy's PCG64, not torch's: the same
    seed gives other numbers than torch).

    Args:
        *size (int...): the shape, as separate ints or one list/tuple.
        dtype (rustgrad.dtype, optional): the element type. Default: the default dtype
            (see `set_default_dtype`), float32 unless changed.
        device (rustgrad.device or str, optional): where to allocate. Default: the default device.
        requires_grad (bool): whether autograd records operations on the result (a leaf).
            Default: ``False``.
        generator (Generator, optional): the generator to draw from. Default: the default one.

    Example::

        >>> _ = torch.manual_seed(0)
        >>> a = torch.rand(3)
        >>> _ = torch.manual_seed(0)
        >>> torch.equal(a, torch.rand(3))
        True
    """
    return _random("rand", size, dtype, device, requires_grad, generator)


def randn(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          generator: Optional[Generator] = None) -> Tensor:
    """A tensor of random numbers from the standard normal distribution (mean 0, variance 1).

    Reproducible after `manual_seed`, with NumPy's PCG64 streams (not torch's numbers).

    Args:
        *size (int...): the shape, as separate ints or one list/tuple.
        dtype (rustgrad.dtype, optional): the element type. Default: the default dtype
            (see `set_default_dtype`), float32 unless changed.
        device (rustgrad.device or str, optional): where to allocate. Default: the default device.
        requires_grad (bool): whether autograd records operations on the result (a leaf).
            Default: ``False``.
        generator (Generator, optional): the generator to draw from. Default: the default one.

    Example::

        >>> torch.randn(2, 3).shape
        torch.Size([2, 3])
    """
    return _random("randn", size, dtype, device, requires_grad, generator)


def randint(low: Any = 0, high: Any = None, size: Any = None, *, dtype: Any = None,
            device: Any = None, requires_grad: bool = False,
            generator: Optional[Generator] = None) -> Tensor:
    """A tensor of random integers drawn uniformly from [low, high).

    Called as ``randint(high, size)`` the low bound is 0. The dtype is int64 unless given.

    Args:
        low (int): the lowest value. Default: 0.
        high (int): one above the highest value.
        size (tuple of int): the shape.
        dtype (rustgrad.dtype, optional): the element type. Default: ``int64``.
        device (rustgrad.device or str, optional): where to allocate.
        requires_grad (bool): whether autograd records operations on the result. Default:
            ``False``.
        generator (Generator, optional): the generator to draw from. Default: the default one.

    Example::

        >>> x = torch.randint(0, 10, (4,))
        >>> x.dtype, bool(((x >= 0) & (x < 10)).all())
        (torch.int64, True)
    """
    if size is None:
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    return _random("randint", (tuple(size),), dtype or _dtype.int64, device, requires_grad,
                   generator, low=low, high=high)


def rand_like(input: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """Uniform random numbers in [0, 1) with the shape of `input` (and its dtype by default).

    Args:
        input (Tensor): the tensor whose shape (and, by default, dtype) the result takes.
        dtype (rustgrad.dtype, optional): the element type. Default: ``input.dtype``.
        device (rustgrad.device or str, optional): where to allocate.
        requires_grad (bool): whether autograd records operations on the result. Default: ``False``.
    """
    return rand(input.shape, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def randn_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """Standard normal random numbers with the shape of `input` (and its dtype by default).

    Args:
        input (Tensor): the tensor whose shape (and, by default, dtype) the result takes.
        dtype (rustgrad.dtype, optional): the element type. Default: ``input.dtype``.
        device (rustgrad.device or str, optional): where to allocate.
        requires_grad (bool): whether autograd records operations on the result. Default: ``False``.
    """
    return randn(input.shape, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def randint_like(input: Tensor, low: int, high: Any = None, *, dtype: Any = None,
                 device: Any = None, requires_grad: bool = False) -> Tensor:
    """Random integers from [low, high) with the shape of `input` (and its dtype by default).

    With one bound given it is `high` and `low` is 0.

    Args:
        input (Tensor): the tensor whose shape (and, by default, dtype) the result takes.
        dtype (rustgrad.dtype, optional): the element type. Default: ``input.dtype``.
        device (rustgrad.device or str, optional): where to allocate.
        requires_grad (bool): whether autograd records operations on the result. Default: ``False``.
        low (int): the lowest value (or `high`, when `high` is omitted).
        high (int, optional): one above the highest value.
    """
    return randint(low, high, input.shape, dtype=dtype or input.dtype, device=device or input.device,
                   requires_grad=requires_grad)
