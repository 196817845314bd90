"""assert_close: torch.testing.assert_close's pairing of inputs (tensors, numbers, sequences,
mappings), its per-dtype default tolerances and its AssertionError messages."""

from __future__ import annotations

import math
from collections import abc
from typing import Any, Callable, Optional, Tuple, Union

import numpy as np

from .. import _creation, _dtype
from .._tensor import Tensor

# torch's default (rtol, atol) per dtype; integers and bool compare exactly
_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}

Msg = Union[str, Callable[[str], str], None]


class _Skip(Exception):
    """This pair is not one assert_close knows (torch's UnsupportedInputs)."""


def _default_tolerances(*dtypes: _dtype.dtype) -> Tuple[float, float]:
    pairs = [_TOLERANCES.get(d.name, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _fail(default: str, msg: Msg, path: Tuple[Any, ...]) -> AssertionError:
    if callable(msg):
        text = msg(default)
    elif msg is not None:
        text = msg
    else:
        text = default
        if path:
            text += "\n\nThe failure occurred for item " + "".join(f"[{k!r}]" for k in path)
    return AssertionError(text)


def _attr_mismatch(name: str, a: Any, e: Any, msg: Msg, path: Tuple[Any, ...]) -> AssertionError:
    return _fail(f"The values for attribute '{name}' do not match: {a} != {e}.", msg, path)


def _as_tensor(x: Any) -> Optional[Tensor]:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return _creation.as_tensor(x)
    return None


def _tensor_values(t: Tensor) -> np.ndarray:
    return np.asarray(t._backend.to_numpy(t.detach()._data))


def _compare_tensors(actual: Tensor, expected: Tensor, rtol: Optional[float],
                     atol: Optional[float], equal_nan: bool, check_device: bool,
                     check_dtype: bool, msg: Msg, path: Tuple[Any, ...]) -> None:
    if actual.shape != expected.shape:
        raise _attr_mismatch("shape", actual.shape, expected.shape, msg, path)
    if check_device and actual.device != expected.device:
        raise _attr_mismatch("device", actual.device, expected.device, msg, path)
    if check_dtype and actual.dtype is not expected.dtype:
        raise _attr_mismatch("dtype", actual.dtype, expected.dtype, msg, path)
    if rtol is None:
        rtol, atol = _default_tolerances(actual.dtype, expected.dtype)
    a, e = _tensor_values(actual), _tensor_values(expected)
    if a.dtype != e.dtype:
        common = _dtype.promote_types(actual.dtype, expected.dtype).np
        a, e = a.astype(common), e.astype(common)
    exact = a.dtype.kind in "biu"
    if exact:
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        close = np.abs(a - e) <= atol + rtol * np.abs(e)
        close |= a == e  # infinities of the same sign
        if equal_nan:
            close |= np.isnan(a) & np.isnan(e)
    if close.all():
        return
    scalar = a.ndim == 0
    raise _fail(_mismatch_message(a, e, close, rtol, atol, exact, scalar), msg, path)


def _argmax_nan_first(x: np.ndarray) -> int:
    """torch.max's index: the first NaN if there is one, else the first maximum."""
    nan = np.isnan(x)
    return int(np.argmax(nan)) if nan.any() else int(np.argmax(x))


def _mismatch_message(a: np.ndarray, e: np.ndarray, close: np.ndarray, rtol: float,
                      atol: float, exact: bool, scalar: bool) -> str:
    kind = "equal" if exact else "close"
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - e)
        rel_diff = (abs_diff.astype(np.float32) / np.abs(e).astype(np.float32)) if exact \
            else abs_diff / np.abs(e)
    tol_abs = "" if exact else f" (up to {atol} allowed)"
    tol_rel = "" if exact else f" (up to {rtol} allowed)"
    if scalar:
        return (f"Scalars are not {kind}!\n\nExpected {e.item()} but got {a.item()}.\n"
                f"Absolute difference: {abs_diff.item()}{tol_abs}\n"
                f"Relative difference: {rel_diff.item()}{tol_rel}")
    flat_abs, flat_rel = abs_diff.reshape(-1), rel_diff.reshape(-1)
    ia, ir = _argmax_nan_first(flat_abs), _argmax_nan_first(flat_rel)
    shape = a.shape

    def index(i: int) -> Tuple[int, ...]:
        return tuple(int(k) for k in np.unravel_index(i, shape))

    total = a.size
    bad = int(total - close.sum())
    return (f"Tensor-likes are not {kind}!\n\n"
            f"Mismatched elements: {bad} / {total} ({bad / total * 100:.1f}%)\n"
            f"Greatest absolute difference: {flat_abs[ia].item()} at index {index(ia)}{tol_abs}\n"
            f"Greatest relative difference: {flat_rel[ir].item()} at index {index(ir)}{tol_rel}")


def _compare_numbers(actual: Any, expected: Any, rtol: Optional[float], atol: Optional[float],
                     equal_nan: bool, check_dtype: bool, msg: Msg, path: Tuple[Any, ...]) -> None:
    if check_dtype and type(actual) is not type(expected):
        raise _attr_mismatch("type", type(actual), type(expected), msg, path)
    exact = all(isinstance(x, (bool, int)) for x in (actual, expected))
    if rtol is None:
        rtol, atol = (0.0, 0.0) if exact else _TOLERANCES["float64"]
    if actual == expected or (equal_nan and _isnan(actual) and _isnan(expected)):
        return
    diff = abs(actual - expected)
    if diff <= atol + rtol * abs(expected):
        return
    rel = diff / abs(expected) if expected != 0 else math.inf
    kind = "equal" if exact else "close"
    tol_abs = "" if exact else f" (up to {atol} allowed)"
    tol_rel = "" if exact else f" (up to {rtol} allowed)"
    raise _fail(f"Scalars are not {kind}!\n\nExpected {expected} but got {actual}.\n"
                f"Absolute difference: {diff}{tol_abs}\nRelative difference: {rel}{tol_rel}",
                msg, path)


def _isnan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _is_number(x: Any) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.ndarray)


def _compare(actual: Any, expected: Any, path: Tuple[Any, ...], **kw: Any) -> None:
    ta, te = _as_tensor(actual), _as_tensor(expected)
    if ta is not None and te is not None:
        _compare_tensors(ta, te, kw["rtol"], kw["atol"], kw["equal_nan"], kw["check_device"],
                         kw["check_dtype"], kw["msg"], path)
        return
    if _is_number(actual) and _is_number(expected):
        _compare_numbers(actual, expected, kw["rtol"], kw["atol"], kw["equal_nan"],
                         kw["check_dtype"], kw["msg"], path)
        return
    strs = (str, bytes)
    if isinstance(actual, abc.Sequence) and isinstance(expected, abc.Sequence) and \
            not isinstance(actual, strs) and not isinstance(expected, strs):
        if len(actual) != len(expected):
            raise _fail(f"The length of the sequences mismatch: {len(actual)} != "
                        f"{len(expected)}", kw["msg"], path)
        for i, (x, y) in enumerate(zip(actual, expected)):
            _compare(x, y, path + (i,), **kw)
        return
    if isinstance(actual, abc.Mapping) and isinstance(expected, abc.Mapping):
        ka, ke = set(actual.keys()), set(expected.keys())
        if ka != ke:
            raise _fail(
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(map(repr, ke - ka))}\n"
                f"Additional keys in the actual mapping: {sorted(map(repr, ka - ke))}",
                kw["msg"], path)
        for k in expected:
            _compare(actual[k], expected[k], path + (k,), **kw)
        return
    if actual is None and expected is None:
        return
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                    f"{type(expected)}.")


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True,
                 rtol: Optional[float] = None, atol: Optional[float] = None,
                 equal_nan: bool = False, check_device: bool = True, check_dtype: bool = True,
                 check_layout: bool = True, check_stride: bool = False, msg: Msg = None) -> None:
    """Asserts actual and expected are close: |actual - expected| <= atol + rtol * |expected|
    elementwise, with torch's per-dtype defaults, recursing into sequences and mappings.

    Tensors (and NumPy arrays) are compared value by value after their shapes, and unless
    turned off their devices and dtypes, are checked to match; Python numbers are compared the
    same way; sequences and mappings are compared item by item (same length, same keys). Integer
    and bool tensors must be equal. When omitted, rtol and atol are torch's defaults for the less
    precise dtype of the pair (float32: ``1.3e-6`` and ``1e-5``; float64: ``1e-7`` and ``1e-7``;
    float16: ``1e-3`` and ``1e-5``). The AssertionError says how many elements mismatch and
    where the greatest absolute and relative differences are.

    Args:
        actual: the value computed.
        expected: the reference value.
        allow_subclasses (bool): accepted for torch compatibility. Default: ``True``.
        rtol (float, optional): relative tolerance; given together with atol.
        atol (float, optional): absolute tolerance; given together with rtol.
        equal_nan (bool): count two NaNs as equal. Default: ``False``.
        check_device (bool): require the same device. Default: ``True``.
        check_dtype (bool): require the same dtype (else both are compared in a common
            dtype). Default: ``True``.
        check_layout, check_stride (bool): accepted for torch compatibility (rustgrad tensors
            are strided).
        msg (str or Callable[[str], str], optional): replaces the failure message, or maps the
            default message to the one raised.

    Raises:
        AssertionError: if the values, shapes, devices or dtypes do not match.
        ValueError: if only one of rtol and atol is given.

    Example::

        >>> expected = torch.tensor([1.0, 2.0])
        >>> torch.testing.assert_close(torch.tensor([1.0, 2.0 + 1e-7]), expected)
        >>> torch.testing.assert_close(torch.tensor([1.0, 2.5]), expected)
        Traceback (most recent call last):
        ...
        AssertionError: Tensor-likes are not close!
        <BLANKLINE>
        Mismatched elements: 1 / 2 (50.0%)
        Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)
        Greatest relative difference: 0.25 at index (1,) (up to 1.3e-06 allowed)
        >>> torch.testing.assert_close([1.0, {"a": 2}], [1.0 + 1e-9, {"a": 2}])
    """
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'atol' if atol is None else 'rtol'}.")
    _compare(actual, expected, (), rtol=rtol, atol=atol, equal_nan=equal_nan,
             check_device=check_device, check_dtype=check_dtype, msg=msg)
