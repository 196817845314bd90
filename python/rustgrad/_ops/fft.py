"""The real-valued part of torch.fft: fftfreq and rfftfreq (the sample frequencies of a
transform) and fftshift / ifftshift (rolls that move the zero frequency to the centre and
back). The transforms need complex tensors, which rustgrad does not have."""

from __future__ import annotations

import math
from typing import Any, Tuple

from .. import _creation, _dtype
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._util import quiet_fp
from .copies import roll


def _frequencies(n: int, d: float, dtype: Any, device: Any, requires_grad: bool, name: str,
                 half: bool) -> Tensor:
    dt = dtype or _dtype.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    # C++'s integer division (toward zero), as torch computes the count
    count = (n // 2 if n >= 0 else -(-n // 2)) + 1 if half else n
    if count < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {count}: [{count}]")
    out = _creation.arange(count, dtype=dt, device=device)
    a = out._data
    if not half:
        a[(n + 1) // 2:] -= n
    span = n * float(d)
    with quiet_fp(out._backend):
        a *= math.copysign(math.inf, span) if span == 0 else 1.0 / span
    if requires_grad:
        out.requires_grad_()
    return out


@op(fft="fftfreq")
def fftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an n-point transform with spacing d: [0, 1, ..., (n - 1) // 2,
    -(n // 2), ..., -1] / (n d), as torch.fft.fftfreq.

    Example::

        >>> rustgrad.fft.fftfreq(5)
        tensor([ 0.0000,  0.2000,  0.4000, -0.4000, -0.2000])
    """
    return _frequencies(n, d, dtype, device, requires_grad, "fftfreq", False)


@op(fft="rfftfreq")
def rfftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """The non-negative sample frequencies of an n-point real transform: [0, 1, ..., n // 2]
    / (n d), as torch.fft.rfftfreq.

    Example::

        >>> rustgrad.fft.rfftfreq(5)
        tensor([0.0000, 0.2000, 0.4000])
    """
    return _frequencies(n, d, dtype, device, requires_grad, "rfftfreq", True)


def _shifts(input: Tensor, dim: Any, inverse: bool) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    shape = input._data.shape
    nd = len(shape)
    if dim is None:
        dims: Tuple[int, ...] = tuple(range(nd))
    elif isinstance(dim, int):
        dims = (dim,)
    else:
        dims = tuple(dim)
    if not dims:  # a 0-d input, or dim=(): torch's roll refuses empty shifts
        raise RuntimeError("`shifts` required")
    wrapped = tuple(_wrap_dim(x, nd) for x in dims)
    sizes = tuple(shape[x] if nd else 1 for x in wrapped)
    return tuple((s + 1) // 2 if inverse else s // 2 for s in sizes), wrapped


@op(fft="fftshift", grad_fn="RollBackward0")
def fftshift(input: Tensor, dim: Any = None) -> Tensor:
    """input rolled by half its size along dim (all dims by default), so that the zero
    frequency of a transform's output comes to the centre.

    Example::

        >>> rustgrad.fft.fftshift(rustgrad.fft.fftfreq(4))
        tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """
    shifts, dims = _shifts(input, dim, False)
    return roll(input, shifts, dims)


@op(fft="ifftshift", grad_fn="RollBackward0")
def ifftshift(input: Tensor, dim: Any = None) -> Tensor:
    """The inverse of fftshift: input rolled back by half its size (rounded up) along dim.

    Example::

        >>> rustgrad.fft.ifftshift(rustgrad.fft.fftshift(rustgrad.arange(5)))
        tensor([0, 1, 2, 3, 4])
    """
    shifts, dims = _shifts(input, dim, True)
    return roll(input, shifts, dims)
