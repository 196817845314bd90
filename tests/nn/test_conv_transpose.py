"""F.conv_transpose1d/2d and nn.ConvTranspose1d/2d against torch: values and every gradient over
a grid of stride / padding / output_padding / groups / dilation, double backward, gradcheck,
torch's errors, module init, repr, state_dict and forward(output_size=)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import rustgrad
import torch

from ..models import assert_close, twin
from ..parity import F, check, check_double_backward, check_error, grad_ok, same_error

# (stride, padding, output_padding, groups, dilation): output_padding < stride or dilation
GRID = [
    (s, p, o, g, d)
    for s, p, o, g, d in itertools.product([1, 2, 3], [0, 1, 2], [0, 1, 2], [1, 2], [1, 2])
    if o < s or o < d
]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("args", GRID, ids=[str(a) for a in GRID])
def test_conv_transpose2d_grid(args: Any, bias: bool) -> None:
    s, p, o, g, d = args
    specs = [(2, 4, 4, 4), (4, 6 // g, 3, 2)] + ([(6,)] if bias else [])
    check(lambda lib, x, w, *b: F(lib).conv_transpose2d(
        x, w, b[0] if b else None, stride=s, padding=p, output_padding=o, groups=g,
        dilation=d), *specs)


@pytest.mark.parametrize("args", GRID, ids=[str(a) for a in GRID])
def test_conv_transpose1d_grid(args: Any) -> None:
    s, p, o, g, d = args
    check(lambda lib, x, w, b: F(lib).conv_transpose1d(
        x, w, b, stride=s, padding=p, output_padding=o, groups=g, dilation=d),
        (2, 4, 5), (4, 6 // g, 3), (6,))


def test_mixed_pairs_and_unbatched() -> None:
    check(lambda lib, x, w: F(lib).conv_transpose2d(
        x, w, stride=(2, 1), padding=(0, 1), output_padding=(1, 0), dilation=(1, 2)),
        (3, 4, 5), (3, 2, 2, 3))
    check(lambda lib, x, w: F(lib).conv_transpose1d(x, w, stride=[2], padding=[1]),
          (3, 6), (3, 2, 4))
    # a 1x1 kernel and a one-element input
    check(lambda lib, x, w: F(lib).conv_transpose2d(x, w, stride=3), (1, 2, 1, 1), (2, 3, 1, 1))


def test_grad_fn_name_and_no_grad_outputs(lib: Any) -> None:
    x = lib.ones(1, 2, 3, 3, requires_grad=True)
    w = lib.ones(2, 3, 2, 2)
    assert F(lib).conv_transpose2d(x, w).grad_fn.name() == "ConvolutionBackward0"
    assert F(lib).conv_transpose1d(x[:, :, 0], w[:, :, 0]).grad_fn.name() == \
        "ConvolutionBackward0"
    with lib.no_grad():
        assert F(lib).conv_transpose2d(x, w).grad_fn is None
    # also torch.conv_transpose1d/2d
    out = lib.conv_transpose2d(x, w, None, 2, 1, 1)
    assert tuple(out.shape) == (1, 3, 5, 5)
    assert tuple(lib.conv_transpose1d(x[0, :, 0], w[:, :, 0], None, 2).shape) == (3, 6)


def test_only_some_inputs_require_grad() -> None:
    x = np.random.default_rng(3).standard_normal((2, 2, 3, 3))
    check(lambda lib, x, w: F(lib).conv_transpose2d(x.detach(), w, stride=2), x, (2, 2, 3, 3))
    check(lambda lib, x, w: F(lib).conv_transpose2d(x, w.detach(), padding=1), x, (2, 2, 3, 3))


def test_double_backward() -> None:
    # the weights' second derivatives and the mixed ones, output_padding >= stride included
    check_double_backward(lambda lib, x, w: F(lib).conv_transpose2d(
        x, w, stride=2, padding=1, output_padding=1, groups=2), (2, 4, 3, 3), (4, 2, 3, 3))
    check_double_backward(lambda lib, x, w: F(lib).conv_transpose2d(
        x, w, stride=1, output_padding=1, dilation=2), (1, 2, 3, 4), (2, 3, 2, 2))
    check_double_backward(lambda lib, x, w: F(lib).conv_transpose1d(
        x, w, stride=3, padding=2, dilation=2), (2, 3, 5), (3, 2, 3))


def test_gradcheck() -> None:
    assert grad_ok(lambda lib, x, w, b: F(lib).conv_transpose2d(
        x, w, b, stride=2, padding=1, output_padding=1, groups=2), (2, 4, 3, 3), (4, 1, 3, 2),
        (2,))
    assert grad_ok(lambda lib, x, w, b: F(lib).conv_transpose1d(
        x, w, b, stride=2, output_padding=1, dilation=2), (1, 2, 4), (2, 3, 3), (3,))
    # gradgradcheck: the backward is itself differentiable
    x = rustgrad.randn(1, 2, 3, 3, dtype=rustgrad.float64, requires_grad=True)
    w = rustgrad.randn(2, 2, 2, 2, dtype=rustgrad.float64, requires_grad=True)
    assert rustgrad.autograd.gradgradcheck(
        lambda x, w: F(rustgrad).conv_transpose2d(x, w, stride=2, padding=1), (x, w))


def test_device(device: str) -> None:
    check(lambda lib, x, w, b: F(lib).conv_transpose2d(x, w, b, stride=2, padding=1,
                                                       output_padding=1),
          (2, 3, 4, 4), (3, 2, 3, 3), (2,), device=device)


ERRORS = [
    ("ndim", lambda lib, x, w: F(lib).conv_transpose2d(x[0, 0], w),
     "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d"),
    ("ndim1d", lambda lib, x, w: F(lib).conv_transpose1d(x, w[:, :, 0]),
     "Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d"),
    ("channels", lambda lib, x, w: F(lib).conv_transpose2d(x[:, :3], w),
     "Given transposed=1, weight of size [4, 3, 3, 3], expected input[2, 3, 5, 5] to have 4 "
     "channels, but got 3 channels instead"),
    ("channels1d", lambda lib, x, w: F(lib).conv_transpose1d(x[:, :3, 0], w[:, :, 0]),
     "Given transposed=1, weight of size [4, 3, 3], expected input[2, 3, 5] to have 4 channels"),
    ("groups", lambda lib, x, w: F(lib).conv_transpose2d(x, w, groups=3),
     "Given groups=3, expected weight to be divisible by 3 at dimension 0"),
    ("output_padding", lambda lib, x, w: F(lib).conv_transpose2d(x, w, output_padding=1),
     "output padding must be smaller than either stride or dilation, but got "
     "output_padding_height: 1 output_padding_width: 1 stride_height: 1 stride_width: 1 "
     "dilation_height: 1 dilation_width: 1"),
    ("output_padding1d", lambda lib, x, w: F(lib).conv_transpose1d(x[:, :, 0], w[:, :, 0],
                                                                   stride=2, output_padding=2),
     "output padding must be smaller than either stride or dilation, but got "
     "output_padding_height: 0 output_padding_width: 2"),
    ("negative_padding", lambda lib, x, w: F(lib).conv_transpose2d(x, w, padding=-1),
     "negative padding is not supported"),
    ("stride", lambda lib, x, w: F(lib).conv_transpose2d(x, w, stride=0),
     "non-positive stride is not supported"),
    ("groups0", lambda lib, x, w: F(lib).conv_transpose2d(x, w, groups=0),
     "non-positive groups is not supported"),
    ("too_small", lambda lib, x, w: F(lib).conv_transpose2d(x[:, :, :1, :1], w, padding=3),
     "Given input size per channel: (1 x 1). Calculated output size per channel: (-3 x -3). "
     "Output size is too small"),
    ("dtype", lambda lib, x, w: F(lib).conv_transpose2d(x, w.float()),
     "expected scalar type Double but found Float"),
    ("bias", lambda lib, x, w: F(lib).conv_transpose2d(x, w, lib.ones(5, dtype=x.dtype)),
     "expected bias to be 1-dimensional with 3 elements, but got bias of size [5] instead"),
    ("stride_len", lambda lib, x, w: F(lib).conv_transpose2d(x, w, stride=(1, 1, 1)),
     "expected stride to be a single integer value or a list of 2 values to match the "
     "convolution dimensions, but got stride=[1, 1, 1]"),
    ("padding_str", lambda lib, x, w: F(lib).conv_transpose2d(x, w, padding="same"),
     "argument 'padding' must be tuple of ints, not str"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors(case: Any) -> None:
    _, fn, phrase = case
    check_error(fn, (2, 4, 5, 5), (4, 3, 3, 3), phrase=phrase)


# ---- modules ----------------------------------------------------------------------------------
MODULES = [
    ("2d", lambda L: L.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1,
                                          groups=2, dilation=2), (2, 4, 5, 5)),
    ("2d_no_bias", lambda L: L.nn.ConvTranspose2d(3, 2, (2, 3), stride=(1, 2), bias=False),
     (2, 3, 4, 4)),
    ("2d_unbatched", lambda L: L.nn.ConvTranspose2d(3, 2, 2), (3, 4, 4)),
    ("1d", lambda L: L.nn.ConvTranspose1d(4, 2, 3, stride=3, padding=1, output_padding=2),
     (2, 4, 6)),
    ("1d_unbatched", lambda L: L.nn.ConvTranspose1d(2, 4, 1, groups=2), (2, 6)),
]


@pytest.mark.parametrize("case", MODULES, ids=[c[0] for c in MODULES])
def test_module_matches_torch(case: Any) -> None:
    _, build, shape = case
    tm, rm = twin(build)
    assert repr(rm) == repr(tm)
    assert list(rm.state_dict()) == list(tm.state_dict())
    for k, v in tm.state_dict().items():
        assert tuple(rm.state_dict()[k].shape) == tuple(v.shape), k
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    tx, rx = torch.tensor(x, requires_grad=True), rustgrad.tensor(x, requires_grad=True)
    to, ro = tm(tx), rm(rx)
    assert_close(ro, to)
    up = np.random.default_rng(1).standard_normal(tuple(to.shape)).astype(np.float32)
    (to * torch.tensor(up)).sum().backward()
    (ro * rustgrad.tensor(up)).sum().backward()
    assert_close(rx.grad, tx.grad, what="input grad")
    for (name, tp), (_, rp) in zip(tm.named_parameters(), rm.named_parameters()):
        assert_close(rp.grad, tp.grad, what=name)


def test_module_attributes_and_init(lib: Any) -> None:
    m = lib.nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1, groups=2)
    assert m.transposed is True
    assert m.output_padding == (1, 1)
    assert tuple(m.weight.shape) == (4, 3, 3, 3)
    assert tuple(m.bias.shape) == (6,)
    # kaiming_uniform_(a=sqrt(5)) over fan_in = weight.size(1) * k*k: bound 1/sqrt(27)
    bound = 1 / np.sqrt(27)
    assert float(m.weight.detach().abs().max()) <= bound
    assert float(m.weight.detach().abs().max()) > bound / 2
    assert float(m.bias.detach().abs().max()) <= bound


def test_module_reprs() -> None:
    for build in (lambda L: L.nn.ConvTranspose1d(2, 3, 4),
                  lambda L: L.nn.ConvTranspose2d(2, 4, 3, padding=(1, 2), dilation=3, bias=False),
                  lambda L: L.nn.ConvTranspose2d(2, 4, 3, output_padding=(0, 1), stride=2)):
        assert repr(build(rustgrad)) == repr(build(torch))


@pytest.mark.parametrize("size", [[10, 9], [2, 6, 9, 10], [9, 10], [10, 10]])
def test_forward_output_size(size: Any) -> None:
    tm, rm = twin(lambda L: L.nn.ConvTranspose2d(6, 2, 3, stride=2, padding=1))
    x = np.random.default_rng(0).standard_normal((2, 6, 5, 5)).astype(np.float32)
    to = tm(torch.tensor(x), output_size=size)
    ro = rm(rustgrad.tensor(x), output_size=size)
    assert_close(ro, to)


def test_forward_output_size_1d_unbatched() -> None:
    tm, rm = twin(lambda L: L.nn.ConvTranspose1d(3, 2, 3, stride=3))
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    for size in ([12], [2, 14], [13]):
        assert_close(rm(rustgrad.tensor(x), output_size=size),
                     tm(torch.tensor(x), output_size=size))


def test_module_errors() -> None:
    same_error(lambda L: L.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"),
               'Only "zeros" padding mode is supported for ConvTranspose2d')
    same_error(lambda L: L.nn.ConvTranspose1d(3, 2, 3, groups=2),
               "in_channels must be divisible by groups")
    same_error(lambda L: L.nn.ConvTranspose2d(2, 3, 3, groups=2),
               "out_channels must be divisible by groups")

    def bad_size(size: Any) -> Any:
        return lambda L: L.nn.ConvTranspose2d(2, 2, 3, stride=2)(L.ones(1, 2, 4, 4),
                                                                 output_size=size)

    same_error(bad_size([20, 9]), "requested an output size of [20, 9], but valid sizes range "
               "from [9, 9] to [10, 10]")
    same_error(bad_size([9]), "ConvTranspose2D: for 4D input, output_size must have 2 or 4 "
               "elements (got 1)")
