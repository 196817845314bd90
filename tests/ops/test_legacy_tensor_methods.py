"""The legacy Tensor methods against torch, on every device: byte/char/short, the deprecated
out-of-place resize/resize_as (ResizeBackward, a view sharing the version counter), set_ and
is_set_to."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import same_error


def _on(lib: Any, device: str) -> str:
    return "cpu" if lib is torch else device


@pytest.mark.parametrize("name, dtype", [("byte", "uint8"), ("char", "int8"), ("short", "int16")])
def test_integer_casts(device: str, name: str, dtype: str) -> None:
    for lib in (torch, rustgrad):
        x = lib.tensor([1.7, -2.2, 3.0], device=_on(lib, device))
        y = getattr(x, name)()
        assert str(y.dtype) == f"torch.{dtype}"
        assert y.cpu().tolist() == getattr(torch.tensor([1.7, -2.2, 3.0]), name)().tolist()


def test_resize_is_a_view_with_resize_backward(device: str) -> None:
    got = {}
    for lib in (torch, rustgrad):
        x = lib.arange(6.0, device=_on(lib, device), requires_grad=True)
        with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
            y = x.resize(3, 2)
        with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
            z = x.resize_as(lib.zeros(2, 3))
        (y * lib.arange(6.0, device=_on(lib, device)).reshape(3, 2)).sum().backward()
        (z * 2).sum().backward()
        got[lib] = (y.grad_fn.name(), tuple(y.shape), tuple(z.shape), x.grad.cpu().tolist())
        plain = lib.arange(6.0, device=_on(lib, device))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = plain.resize(2, 3)
        plain.add_(1)
        assert v._version == 1 and v._base is plain
    assert got[rustgrad] == got[torch]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_error(lambda L: L.arange(6.0).resize(4), "autograd's resize can only change the shape")


def test_set_and_is_set_to(device: str) -> None:
    for lib in (torch, rustgrad):
        a = lib.zeros(2, device=_on(lib, device))
        b = lib.arange(3.0, device=_on(lib, device))
        assert a.set_(b) is a
        assert a._version == 1 and a.tolist() == [0.0, 1.0, 2.0]
        assert a.is_set_to(b) and b.is_set_to(a) and not a[:2].is_set_to(b)
        b[0] = 9.0
        assert a[0].item() == 9.0  # one memory
        assert not b.is_set_to(b.clone())
        e = lib.ones(2, device=_on(lib, device))
        e.set_()
        assert tuple(e.shape) == (0,)
    same_error(lambda L: L.zeros(2, requires_grad=True).set_(L.ones(3)),
               "a leaf Variable that requires grad is being used in an in-place operation")
    same_error(lambda L: L.zeros(2).set_(L.ones(3, dtype=L.float64)), "Could not set tensor of type")
    assert np.array_equal(rustgrad.zeros(1).set_(rustgrad.ones(2)).numpy(), np.ones(2))
