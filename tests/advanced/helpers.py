"""Run one program under torch and rustgrad and compare what it returns."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import rustgrad
import torch


def to_np(x: Any) -> Any:
    """Nested structures of tensors -> the same structures of NumPy arrays (None kept)."""
    if isinstance(x, (torch.Tensor, rustgrad.Tensor)):
        return np.asarray(x.detach().numpy())
    if isinstance(x, (tuple, list)):
        return type(x)(to_np(v) for v in x)
    if isinstance(x, dict):
        return {k: to_np(v) for k, v in x.items()}
    return x


def assert_same(a: Any, b: Any, rtol: float = 1e-7, atol: float = 1e-9, path: str = "") -> None:
    """`a` (torch's) and `b` (rustgrad's), as NumPy structures, are equal within tolerance."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), f"{path}: {type(b).__name__} instead of an array"
        assert a.shape == b.shape, f"{path}: shape {b.shape} instead of {a.shape}"
        assert a.dtype == b.dtype, f"{path}: dtype {b.dtype} instead of {a.dtype}"
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=path)
    elif isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), f"{path}: {b!r} vs {a!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, rtol, atol, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{path}: keys {b.keys()} vs {a.keys()}"
        for k in a:
            assert_same(a[k], b[k], rtol, atol, f"{path}[{k!r}]")
    elif isinstance(a, float):
        assert np.isclose(b, a, rtol=rtol, atol=atol), f"{path}: {b} vs {a}"
    else:
        assert a == b, f"{path}: {b!r} vs {a!r}"


def parity(fn: Callable[[Any], Any], rtol: float = 1e-7, atol: float = 1e-9) -> Any:
    """Runs `fn(lib)` for torch and rustgrad; asserts the results match; returns torch's."""
    expected = to_np(fn(torch))
    got = to_np(fn(rustgrad))
    assert_same(expected, got, rtol, atol)
    return expected


def error_of(fn: Callable[[], Any]) -> BaseException:
    """The exception `fn()` raises (failing the test if it raises none)."""
    try:
        fn()
    except BaseException as e:  # noqa: B036  (the caller inspects it)
        return e
    raise AssertionError("no exception raised")


def same_error(fn: Callable[[Any], Any], phrase: str) -> None:
    """`fn(lib)` raises the same exception type under both libraries, with `phrase` in both."""
    et = error_of(lambda: fn(torch))
    er = error_of(lambda: fn(rustgrad))
    assert phrase in str(et), f"torch: {et}"
    assert type(er).__name__ == type(et).__name__, f"{type(er).__name__}: {er}"
    assert phrase in str(er), f"rustgrad: {er}"


def f64(lib: Any, array: Any, requires_grad: bool = False) -> Any:
    """A float64 tensor of `array`'s exact values."""
    return lib.tensor(np.asarray(array, dtype=np.float64), requires_grad=requires_grad)
