"""torch.fft: the transforms (fft, ifft, rfft, irfft, hfft, ihfft and their 2-d and n-d forms),
fftfreq and rfftfreq (the sample frequencies of a transform) and fftshift / ifftshift (rolls
that move the zero frequency to the centre and back).

Every transform is built, as torch's, from three differentiable kernels over a list of dims:
complex to complex (FftC2CBackward0), real to complex (FftR2CBackward0, the one-sided or full
spectrum) and one-sided complex to real (FftC2RBackward0), after the input is cut or
zero-padded to the sizes asked for (SliceBackward0, ConstantPadNdBackward0). The values come
from the backend's FFT (NumPy's pocketfft, cupy.fft). A kernel scales its result by nothing,
1/n or 1/sqrt(n) (n the product of the signal sizes); the gradient of each kernel is its
adjoint under torch's convention for complex gradients (conjugate Wirtinger): the opposite
transform with the same scale, with the one-sided spectra padded or folded as torch's."""

from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence, Tuple

from .. import _creation, _dtype
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import const, floating, quiet_fp, real_part
from .complex_views import conj, conj_physical
from .conv import pad
from .copies import roll
from .views import narrow


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


# ---- the three kernels ------------------------------------------------------------------
# a kernel's scale: _NONE, _BY_N (1/n) or _BY_SQRT_N (1/sqrt(n)); NumPy's norm names it by the
# direction of the transform
_NONE, _BY_N, _BY_SQRT_N = range(3)
_NP_NORM = {True: ("backward", "forward", "ortho"), False: ("forward", "backward", "ortho")}


def _scale(norm: Optional[str], forward: bool) -> int:
    """The scale torch's norm gives a transform in the direction `forward`."""
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_SQRT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _complex_np(d: Any) -> Any:
    """The complex dtype for the values of array d (complex64 for float32)."""
    return _dtype.from_np(d.dtype).to_real().to_complex().np


def _as_complex(x: Tensor) -> Tensor:
    return x if x._data.dtype.kind == "c" else x.to(_dtype.from_np(_complex_np(x._data)))


def _c2c_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dims, scale, forward = ctx
    return _c2c(g, dims, scale, not forward)


def _r2c_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dims, scale, onesided, size = ctx
    if onesided:  # the spectrum's dropped half has gradient 0
        last = dims[-1]
        missing = size - g._data.shape[last]
        if missing > 0:
            g = pad(_as_complex(g), [0, 0] * (g._data.ndim - 1 - last) + [0, missing])
    return real_part(_c2c(g, dims, scale, False))  # a new tensor, not a view


def _c2r_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dims, scale, size = ctx
    gi = _r2c(g, dims, scale, True)
    half = gi._data.shape[dims[-1]]
    doubled = size - half  # the entries the output's Hermitian half reads twice
    if doubled > 0:
        xp = gi._backend
        w = xp.ones(half, dtype=gi._data.real.dtype)
        w[1:1 + doubled] = 2
        w = w.reshape((half,) + (1,) * (gi._data.ndim - 1 - dims[-1]))
        gi = gi * const(w)
    return gi


FFT_C2C = node("FftC2CBackward0", _c2c_bw)
FFT_R2C = node("FftR2CBackward0", _r2c_bw)
FFT_C2R = node("FftC2RBackward0", _c2r_bw)


def _c2c(x: Tensor, dims: Tuple[int, ...], scale: int, forward: bool) -> Tensor:
    """The complex transform of x over dims (forward: e^{-2 pi i k n / N})."""
    x = _as_complex(x)
    d = x._data
    xp = x._backend
    fn = xp.fft.fftn if forward else xp.fft.ifftn
    with quiet_fp(xp):
        out = fn(d, axes=dims, norm=_NP_NORM[forward][scale]).astype(d.dtype, copy=False)
    return FFT_C2C.record(out, (x,), (dims, scale, forward))


def _r2c(x: Tensor, dims: Tuple[int, ...], scale: int, onesided: bool) -> Tensor:
    """The forward transform of real x over dims: the last dim's first half (n // 2 + 1
    entries) when onesided, else the full spectrum."""
    d = x._data
    xp = x._backend
    fn = xp.fft.rfftn if onesided else xp.fft.fftn
    with quiet_fp(xp):
        out = fn(d, axes=dims, norm=_NP_NORM[True][scale]).astype(_complex_np(d), copy=False)
    return FFT_R2C.record(out, (x,), (dims, scale, onesided, d.shape[dims[-1]]))


def _c2r(x: Tensor, dims: Tuple[int, ...], scale: int, size: int) -> Tensor:
    """The inverse transform over dims of the one-sided spectrum x whose full last dim has
    `size` entries: a real result."""
    x = _as_complex(x)
    d = x._data
    xp = x._backend
    sizes = [d.shape[k] for k in dims[:-1]] + [size]
    with quiet_fp(xp):
        out = xp.fft.irfftn(d, s=sizes, axes=dims, norm=_NP_NORM[False][scale])
    return FFT_C2R.record(out.astype(d.real.dtype, copy=False), (x,), (dims, scale, size))


# ---- the arguments -----------------------------------------------------------------------
def _floating_input(name: str, x: Any, real_only: bool) -> Tensor:
    kind = x._data.dtype.kind
    if kind == "c":
        if real_only:
            raise TypeError(f"{name} expects a real input tensor, but got "
                            f"{_dtype.scalar_type_name(x.dtype)}")
        return x
    if kind in "biu":
        return x.to(_dtype.from_np(floating(x).dtype))
    if x._data.dtype.itemsize < 4:
        raise NotImplementedError(f"Unsupported dtype {_dtype.scalar_type_name(x.dtype)}")
    return x


def _points(n: Any) -> int:
    n = int(n)
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def _tensor_input(name: str, x: Any) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"fft_{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _dims_1d(name: str, x: Tensor, n: Any, dim: int
             ) -> Tuple[Tuple[int, ...], Optional[List[int]]]:
    _tensor_input(name, x)
    nd = x._data.ndim
    if nd == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = _wrap_dim(dim, nd)
    return (d,), None if n is None else [_points(n)]


def _dims_nd(name: str, x: Tensor, s: Any, dim: Any
             ) -> Tuple[Tuple[int, ...], Optional[List[int]]]:
    """torch's canonicalization of (s, dim): the dims transformed and the sizes asked for
    (None: the input's), with torch's errors."""
    _tensor_input(name, x)
    nd = x._data.ndim
    if isinstance(dim, int):
        dim = (dim,)
    if s is not None:
        s = [int(v) for v in s]
    if dim is not None:
        if nd == 0 and len(dim):
            raise IndexError(f"Dimension specified as {dim[0]} but tensor has no dimensions")
        dims = tuple(_wrap_dim(int(k), nd) for k in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} "
                               "dimensions.")
        dims = tuple(range(nd - len(s), nd))
    else:
        dims = tuple(range(nd))
    if s is not None:
        s = [x._data.shape[k] if v == -1 else _points(v) for k, v in zip(dims, s)]
    return dims, s


def _resize(x: Tensor, dims: Sequence[int], sizes: Optional[Sequence[int]]) -> Tensor:
    """x cut (SliceBackward0) or zero-padded at the end (ConstantPadNdBackward0) to sizes
    (None: as it is, each size at least 1)."""
    shape = x._data.shape
    if sizes is None:
        for k in dims:
            _points(shape[k])
        return x
    for k, n in zip(dims, sizes):
        if n < shape[k]:
            x = narrow(x, k, 0, n)
    grow = {k: n - shape[k] for k, n in zip(dims, sizes) if n > shape[k]}
    if grow:
        nd = len(shape)
        amounts: List[int] = []
        for k in range(nd - 1, min(grow) - 1, -1):
            amounts += [0, grow.get(k, 0)]
        x = pad(x, amounts)
    return x


def _half(n: int) -> int:
    return n // 2 + 1


# ---- the transforms ------------------------------------------------------------------------
def _fft_c(name: str, x: Any, dims: Tuple[int, ...], sizes: Optional[List[int]],
           norm: Optional[str], forward: bool, nd: bool = False) -> Tensor:
    x = _floating_input(name, x, False)
    if nd:  # torch's n-d transforms take a real input as complex (ToCopyBackward0)
        x = _as_complex(x)
    scale = _scale(norm, forward)
    x = _resize(x, dims, sizes)
    if not dims:
        return x.clone()
    if x._data.dtype.kind == "c":
        return _c2c(x, dims, scale, forward)
    out = _r2c(x, dims, scale, False)
    return out if forward else conj(out)  # ifft of real x is conj(fft(x)), scaled


def _fft_r2c(name: str, x: Any, dims: Tuple[int, ...], sizes: Optional[List[int]],
             norm: Optional[str], forward: bool) -> Tensor:
    x = _floating_input(name, x, True)
    x = _resize(x, dims, sizes)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    out = _r2c(x, dims, _scale(norm, forward), True)
    return out if forward else conj(out)


def _fft_c2r(name: str, x: Any, dims: Tuple[int, ...], sizes: Optional[List[int]],
             norm: Optional[str], forward: bool) -> Tensor:
    x = _floating_input(name, x, False)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    last = dims[-1]
    if sizes is None:
        sizes = [x._data.shape[k] for k in dims]
        sizes[-1] = _points(2 * (x._data.shape[last] - 1))
    x = _resize(x, dims, list(sizes[:-1]) + [_half(sizes[-1])])
    scale = _scale(norm, forward)
    if forward:  # hfft: the Hermitian input's transform, conj(x) inverted over the last dim
        if len(dims) > 1:
            x = _c2c(x, dims[:-1], scale, True)
        return _c2r(conj(x), (last,), scale, sizes[-1])
    return _c2r(x, dims, scale, sizes[-1])


def _ihfft(name: str, x: Any, dims: Tuple[int, ...], sizes: Optional[List[int]],
           norm: Optional[str]) -> Tensor:
    x = _floating_input(name, x, True)
    x = _resize(x, dims, sizes)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    scale = _scale(norm, False)
    out = _r2c(x, dims[-1:], scale, True)
    if len(dims) == 1:
        return conj(out)
    return _c2c(conj_physical(out), dims[:-1], scale, False)




@op(fft="fft", grad_fn=("FftC2CBackward0", "FftR2CBackward0"))
def fft(input: Tensor, n: Optional[int] = None, dim: int = -1,
        norm: Optional[str] = None) -> Tensor:
    """The discrete Fourier transform of input along dim (a complex result).

    Args:
        input (Tensor): the signal (integers and bools are transformed as the default dtype).
        n (int, optional): the signal's length: input is cut or zero-padded to it along dim.
            Default: its size (for irfft and hfft, the length of the real output: 2 (m - 1)
            for m inputs).
        dim (int, optional): the dim transformed. Default: ``-1``.
        norm (str, optional): ``"backward"`` (the default: the inverse transform divides by
            n), ``"forward"`` (the forward one does) or ``"ortho"`` (both divide by sqrt(n)).

    Example::

        >>> rustgrad.fft.fft(rustgrad.tensor([1., 2., 3., 4.]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
    """
    dims, sizes = _dims_1d("fft", input, n, dim)
    return _fft_c("fft", input, dims, sizes, norm, True)


@op(fft="ifft", grad_fn=("FftC2CBackward0", "ConjBackward0"), args_like=fft)
def ifft(input: Tensor, n: Optional[int] = None, dim: int = -1,
         norm: Optional[str] = None) -> Tensor:
    """The inverse discrete Fourier transform of input along dim.

    Example::

        >>> rustgrad.fft.ifft(rustgrad.fft.fft(rustgrad.tensor([1., 2., 3., 4.]))).real
        tensor([1., 2., 3., 4.])
    """
    dims, sizes = _dims_1d("ifft", input, n, dim)
    return _fft_c("ifft", input, dims, sizes, norm, False)


@op(fft="rfft", grad_fn="FftR2CBackward0", args_like=fft)
def rfft(input: Tensor, n: Optional[int] = None, dim: int = -1,
         norm: Optional[str] = None) -> Tensor:
    """The transform of real input along dim, its non-negative frequencies only (n // 2 + 1).

    Example::

        >>> rustgrad.fft.rfft(rustgrad.tensor([1., 2., 3., 4.]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j])
    """
    dims, sizes = _dims_1d("rfft", input, n, dim)
    return _fft_r2c("rfft", input, dims, sizes, norm, True)


@op(fft="irfft", grad_fn="FftC2RBackward0", args_like=fft)
def irfft(input: Tensor, n: Optional[int] = None, dim: int = -1,
          norm: Optional[str] = None) -> Tensor:
    """The inverse of rfft: the real signal of length n (default 2 (m - 1)) whose one-sided
    spectrum input is.

    Example::

        >>> rustgrad.fft.irfft(rustgrad.fft.rfft(rustgrad.tensor([1., 2., 3., 4.])))
        tensor([1., 2., 3., 4.])
    """
    dims, sizes = _dims_1d("irfft", input, n, dim)
    return _fft_c2r("irfft", input, dims, sizes, norm, False)


@op(fft="hfft", grad_fn="FftC2RBackward0", args_like=fft)
def hfft(input: Tensor, n: Optional[int] = None, dim: int = -1,
         norm: Optional[str] = None) -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half: a real result
    of length n (default 2 (m - 1)).

    Example::

        >>> rustgrad.fft.hfft(rustgrad.tensor([1., 2., 3.]))
        tensor([ 8., -2.,  0., -2.])
    """
    dims, sizes = _dims_1d("hfft", input, n, dim)
    return _fft_c2r("hfft", input, dims, sizes, norm, True)


@op(fft="ihfft", grad_fn="ConjBackward0", args_like=fft)
def ihfft(input: Tensor, n: Optional[int] = None, dim: int = -1,
          norm: Optional[str] = None) -> Tensor:
    """The inverse of hfft: the first half (n // 2 + 1) of real input's inverse transform.

    Example::

        >>> rustgrad.fft.ihfft(rustgrad.tensor([8., -2., 0., -2.]))
        tensor([1.-0.j, 2.-0.j, 3.-0.j])
    """
    dims, sizes = _dims_1d("ihfft", input, n, dim)
    return _ihfft("ihfft", input, dims, sizes, norm)


_ND_ARGS = """
    Args:
        input (Tensor): the signal (integers and bools are transformed as the default dtype).
        s (sequence of int, optional): the signal's size along each dim transformed: input is
            cut or zero-padded to it (-1 keeps a size). Default: input's sizes (for the
            transforms with a real result, 2 (m - 1) along the last dim for m inputs).
        dim (sequence of int, optional): the dims transformed. Default: {dims}, or the last
            len(s) dims when s is given.
        norm (str, optional): ``"backward"`` (the default: the inverse transform divides by
            the signal's size), ``"forward"`` (the forward one does) or ``"ortho"`` (both
            divide by its square root).
"""


def _nd(name: str, kind: str, default_dim: Any, summary: str, grad_fn: Any, example: str) -> Any:
    def transform(input: Tensor, s: Optional[Sequence[int]] = None, dim: Any = default_dim,
                  norm: Optional[str] = None) -> Tensor:
        dims, sizes = _dims_nd(name, input, s, dim)
        if kind == "c2c":
            return _fft_c(name, input, dims, sizes, norm, not name.startswith("i"), True)
        if kind == "r2c":
            return _fft_r2c(name, input, dims, sizes, norm, True)
        if kind == "c2r":
            return _fft_c2r(name, input, dims, sizes, norm, name.startswith("h"))
        return _ihfft(name, input, dims, sizes, norm)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"{summary}\n{_ND_ARGS.format(dims=default_dim or 'every dim')}" \
        f"\n    Example::\n\n{example}"
    return op(fft=name, grad_fn=grad_fn)(transform)


_C = "FftC2CBackward0"
_X = "        >>> x = rustgrad.tensor([[1., 2.], [3., 4.]])\n"
fft2 = _nd("fft2", "c2c", (-2, -1), "The 2-d discrete Fourier transform over dim (the last two).", _C,
           _X + "        >>> rustgrad.fft.fft2(x)\n        tensor([[10.+0.j, -2.+0.j],\n"
           "                [-4.+0.j,  0.+0.j]])\n")
ifft2 = _nd("ifft2", "c2c", (-2, -1), "The inverse of fft2 over dim (the last two).", _C,
            _X + "        >>> rustgrad.fft.ifft2(rustgrad.fft.fft2(x)).real\n"
            "        tensor([[1., 2.],\n                [3., 4.]])\n")
fftn = _nd("fftn", "c2c", None, "The n-d discrete Fourier transform over dim (every dim).", _C,
           _X + "        >>> rustgrad.fft.fftn(x)[0, 0]\n        tensor(10.+0.j)\n")
ifftn = _nd("ifftn", "c2c", None, "The inverse of fftn over dim (every dim).", _C,
            _X + "        >>> rustgrad.fft.ifftn(x)[0, 0]\n        tensor(2.5000+0.j)\n")
rfft2 = _nd("rfft2", "r2c", (-2, -1), "The 2-d transform of real input over dim (the last two), "
            "the last dim's non-negative frequencies only.", "FftR2CBackward0",
            _X + "        >>> rustgrad.fft.rfft2(x)\n        tensor([[10.+0.j, -2.+0.j],\n"
            "                [-4.+0.j,  0.+0.j]])\n")
irfft2 = _nd("irfft2", "c2r", (-2, -1), "The inverse of rfft2: a real result.", "FftC2RBackward0",
             _X + "        >>> rustgrad.fft.irfft2(rustgrad.fft.rfft2(x), s=(2, 2))\n"
             "        tensor([[1., 2.],\n                [3., 4.]])\n")
rfftn = _nd("rfftn", "r2c", None, "The n-d transform of real input over dim (every dim), the "
            "last dim's non-negative frequencies only.", "FftR2CBackward0",
            _X + "        >>> rustgrad.fft.rfftn(x).shape\n        torch.Size([2, 2])\n")
irfftn = _nd("irfftn", "c2r", None, "The inverse of rfftn: a real result.", "FftC2RBackward0",
             _X + "        >>> rustgrad.fft.irfftn(rustgrad.fft.rfftn(x), s=(2, 2))\n"
             "        tensor([[1., 2.],\n                [3., 4.]])\n")
hfft2 = _nd("hfft2", "c2r", (-2, -1), "The 2-d transform of a Hermitian-symmetric signal given "
            "by its last dim's first half: a real result.", "FftC2RBackward0",
            _X + "        >>> rustgrad.fft.hfft2(x)\n        tensor([[10., -2.],\n"
            "                [-4.,  0.]])\n")
ihfft2 = _nd("ihfft2", "ihfft", (-2, -1), "The inverse of hfft2 on real input.",
             ("FftC2CBackward0", "ConjBackward0"),
             _X + "        >>> rustgrad.fft.ihfft2(x)\n        tensor([[ 2.5000-0.j, -0.5000-0.j],\n"
             "                [-1.0000+0.j,  0.0000+0.j]])\n")
hfftn = _nd("hfftn", "c2r", None, "The n-d transform of a Hermitian-symmetric signal given by "
            "its last dim's first half: a real result.", "FftC2RBackward0",
            _X + "        >>> rustgrad.fft.hfftn(x).shape\n        torch.Size([2, 2])\n")
ihfftn = _nd("ihfftn", "ihfft", None, "The inverse of hfftn on real input.",
             ("FftC2CBackward0", "ConjBackward0"),
             _X + "        >>> rustgrad.fft.ihfftn(x).shape\n        torch.Size([2, 2])\n")
