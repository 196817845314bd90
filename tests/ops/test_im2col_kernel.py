"""im2col / col2im's Rust kernels (the CPU backend's) against `_ops/conv.py`'s NumPy
formulation, bit for bit, on strides, dilations, asymmetric padding and fill values, both layouts
and both float dtypes, and on the threaded split (large arrays); what they decline; and conv2d
(which runs through them) against torch, values and gradients."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import numpy as np
import pytest
import rustgrad
from rustgrad._backends import cpu
from rustgrad._backends._kernels import Kernels
from rustgrad._ops import conv

torch = pytest.importorskip("torch")


class _NumPyOnly:
    """The CPU backend with an empty kernel table: conv.py's im2col/col2im then run their NumPy
    formulation."""

    kernels = Kernels()

    def __getattr__(self, name: str) -> Any:
        return getattr(cpu, name)


NUMPY = _NumPyOnly()

# (shape (N, C, H, W), kernel, dilation, pads (top, bottom, left, right), stride)
Geometry = Tuple[Tuple[int, int, int, int], Tuple[int, int], Tuple[int, int],
                 Tuple[int, int, int, int], Tuple[int, int]]
GEOMETRIES = [
    ((2, 1, 28, 28), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),  # the CNN benchmark's conv1
    ((2, 16, 14, 14), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),  # and conv2
    ((3, 2, 5, 7), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    ((2, 3, 9, 11), (3, 2), (1, 1), (1, 1, 0, 2), (2, 3)),  # strides, asymmetric padding
    ((1, 2, 10, 9), (3, 3), (2, 3), (2, 2, 3, 3), (1, 1)),  # dilation
    ((2, 2, 8, 13), (2, 3), (3, 2), (0, 3, 4, 1), (3, 2)),  # all of them
    ((1, 1, 3, 4), (2, 2), (1, 1), (4, 3, 5, 2), (1, 1)),  # all-padding rows and columns
    ((2, 2, 11, 10), (2, 2), (1, 1), (1, 0, 0, 1), (4, 3)),  # stride beyond the kernel
    ((2, 2, 1, 1), (1, 1), (1, 1), (1, 1, 1, 1), (3, 3)),
    ((3, 4, 1, 17), (1, 5), (1, 2), (0, 0, 3, 3), (1, 2)),  # a conv1d's (N, C, 1, L)
    ((0, 3, 5, 5), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),  # empty batch
    ((32, 16, 14, 14), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),  # above the threading threshold
    ((5, 3, 31, 29), (4, 3), (2, 1), (3, 0, 1, 2), (2, 1)),
]


def _input(shape: Tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    if x.size > 10:
        x.flat[3] = np.nan
        x.flat[7] = -np.inf
        x.flat[9] = -0.0
    return x


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.flags.c_contiguous
    assert a.tobytes() == b.tobytes()  # bit for bit, NaN payloads and signed zeros included


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels_first", [False, True])
@pytest.mark.parametrize("geo", GEOMETRIES, ids=str)
def test_im2col_matches_the_numpy_formulation(geo: Geometry, channels_first: bool,
                                              dtype: Any) -> None:
    shape, k, d, pads, s = geo
    x = _input(shape, dtype)
    for fill in (0.0, -np.inf, np.nan, 2.5):
        want = conv.im2col(NUMPY, x, k, d, pads, s, fill, channels_first)
        got = cpu.kernels.im2col(x, k, d, pads, s, fill, channels_first)
        _same(got, want)
        _same(conv.im2col(cpu, x, k, d, pads, s, fill, channels_first), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("channels_first", [False, True])
@pytest.mark.parametrize("geo", GEOMETRIES, ids=str)
def test_col2im_matches_the_numpy_formulation(geo: Geometry, channels_first: bool,
                                              dtype: Any) -> None:
    shape, k, d, pads, s = geo
    blocks = conv.im2col(NUMPY, np.zeros(shape, dtype), k, d, pads, s, 0.0, channels_first)
    cols = _input(blocks.shape, dtype, seed=1)
    want = conv.col2im(NUMPY, cols, shape[2:], d, pads, s, channels_first)
    got = cpu.kernels.col2im(cols, shape[2:], d, pads, s, channels_first)
    _same(got, want)


def test_col2im_with_a_transposed_convolutions_output_padding() -> None:
    # an image larger than the blocks cover (conv_transpose2d's output_padding)
    cols = _input((3, 3, 3, 2, 9, 8), np.float32)
    args = ((19, 18), (1, 1), (1, 1, 1, 1), (2, 2), True)
    _same(cpu.kernels.col2im(cols, *args), conv.col2im(NUMPY, cols, *args))


def test_a_strided_input_is_copied_first() -> None:
    x = _input((2, 3, 12, 10), np.float32).transpose(0, 1, 3, 2)[:, :, ::2]
    args = ((3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 0.0, True)
    _same(cpu.kernels.im2col(x, *args), conv.im2col(NUMPY, x, *args))


def test_kernels_decline_what_they_do_not_take() -> None:
    from rustgrad import _core

    args = ((2, 2), (1, 1), (0, 0, 0, 0), (1, 1), 0.0, False)
    assert cpu.kernels.im2col(np.ones((1, 1, 4, 4), np.float16), *args) is None
    assert cpu.kernels.im2col(np.ones((1, 1, 4, 4), np.int64), *args) is None
    assert _core._im2col(np.ones((1, 4, 4), np.float32), *args) is None  # not 4-D
    strided = np.ones((1, 1, 4, 8), np.float32)[:, :, :, ::2]
    assert _core._im2col(strided, *args) is None  # the binding takes C-contiguous arrays only
    # a kernel larger than the padded image, a negative padding, a zero stride
    assert _core._im2col(np.ones((1, 1, 2, 2), np.float32), (3, 3), (1, 1), (0, 0, 0, 0),
                         (1, 1), 0.0, False) is None
    assert _core._im2col(np.ones((1, 1, 4, 4), np.float32), (2, 2), (1, 1), (-1, 0, 0, 0),
                         (1, 1), 0.0, False) is None
    assert _core._im2col(np.ones((1, 1, 4, 4), np.float32), (2, 2), (1, 1), (0, 0, 0, 0),
                         (0, 1), 0.0, False) is None
    cols = np.ones((1, 1, 2, 2, 3, 3), np.float32)
    assert cpu.kernels.col2im(cols.astype(np.float16), (4, 4), (1, 1), (0, 0, 0, 0), (1, 1),
                              False) is None
    assert cpu.kernels.col2im(np.broadcast_to(cols, (2, 1, 2, 2, 3, 3)), (4, 4), (1, 1),
                              (0, 0, 0, 0), (1, 1), False) is None  # not C-contiguous
    # more positions than fit in the (padded) image
    assert cpu.kernels.col2im(cols, (3, 4), (1, 1), (0, 0, 0, 0), (1, 1), False) is None
    assert cpu.kernels.col2im(cols[0], (4, 4), (1, 1), (0, 0, 0, 0), (1, 1), False) is None


CONVS = [
    ((4, 3, 12, 12), (5, 3, 3, 3), {"padding": 1}),
    ((2, 4, 11, 9), (6, 2, 3, 2), {"stride": (2, 1), "padding": (2, 1), "dilation": (1, 2),
                                   "groups": 2}),
    ((32, 16, 14, 14), (32, 16, 3, 3), {"padding": 1}),  # the CNN's conv2: threaded split
    ((3, 2, 10, 10), (4, 2, 3, 3), {"padding": "same", "dilation": 2}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONVS, ids=str)
def test_conv2d_matches_torch(case: Tuple[Any, Any, Dict[str, Any]], dtype: Any) -> None:
    xshape, wshape, kw = case
    rng = np.random.default_rng(5)
    x, w = (rng.standard_normal(s).astype(dtype) for s in (xshape, wshape))
    b = rng.standard_normal(wshape[0]).astype(dtype)
    r = [rustgrad.tensor(a, requires_grad=True) for a in (x, w, b)]
    t = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    ro = rustgrad.nn.functional.conv2d(*r, **kw)
    to = torch.nn.functional.conv2d(*t, **kw)
    g = rng.standard_normal(tuple(to.shape)).astype(dtype)
    ro.backward(rustgrad.tensor(g))
    to.backward(torch.tensor(g))
    # sums of up to 6272 products (the weight gradient): an absolute tolerance relative to the
    # array's scale (a wrong layout is off by that scale)
    eps = 1e-4 if dtype == np.float32 else 1e-11
    pairs = [(ro.detach().numpy(), to.detach().numpy())]
    pairs += [(ra.grad.numpy(), ta.grad.numpy()) for ra, ta in zip(r, t)]
    for got, want in pairs:
        np.testing.assert_allclose(got, want, rtol=eps, atol=eps * np.abs(want).max())


def test_conv2d_is_the_same_without_the_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4, 9, 10))
    w = rng.standard_normal((5, 4, 3, 2))

    def run() -> Tuple[np.ndarray, ...]:
        xr, wr = rustgrad.tensor(x, requires_grad=True), rustgrad.tensor(w, requires_grad=True)
        out = rustgrad.nn.functional.conv2d(xr, wr, stride=(1, 2), padding=(1, 2))
        out.pow(2).sum().backward()
        return out.detach().numpy(), xr.grad.numpy(), wr.grad.numpy()

    with_kernels = run()
    monkeypatch.setattr(cpu.kernels, "im2col", None)
    monkeypatch.setattr(cpu.kernels, "col2im", None)
    for a, b in zip(with_kernels, run()):
        _same(a, b)


def test_gradcheck_through_the_kernels() -> None:
    x = rustgrad.tensor(np.random.default_rng(7).standard_normal((2, 2, 5, 6)),
                        requires_grad=True)
    w = rustgrad.tensor(np.random.default_rng(8).standard_normal((3, 2, 2, 3)),
                        requires_grad=True)
    f = rustgrad.nn.functional
    assert rustgrad.autograd.gradcheck(lambda a, b: f.conv2d(a, b, padding=1, stride=2), (x, w))
    assert rustgrad.autograd.gradcheck(
        lambda a: f.fold(f.unfold(a, 2, padding=1), (5, 6), 2, padding=1), (x,))
