"""adaptive_max_pool1d/2d, max_unpool1d/2d, lp_pool1d/2d, max_pool*_with_indices,
channel_shuffle, local_response_norm, and their modules (with Fold/Unfold) against torch:
values, indices, grad_fn names, gradients, double backward, errors and reprs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import F, check, check_double_backward, check_error, grad_ok, ints, parity

POOLS = {
    "adaptive_max2d": lambda L, x: F(L).adaptive_max_pool2d(x, (3, 4), return_indices=True),
    "adaptive_max2d_int": lambda L, x: F(L).adaptive_max_pool2d(x, 2),
    "adaptive_max2d_none": lambda L, x: F(L).adaptive_max_pool2d(x, (None, 3)),
    "adaptive_max2d_with_indices": lambda L, x: F(L).adaptive_max_pool2d_with_indices(x, (4, 2)),
    "adaptive_max2d_unbatched": lambda L, x: F(L).adaptive_max_pool2d(x[0], (2, 3), True),
    "adaptive_max1d": lambda L, x: F(L).adaptive_max_pool1d(x[0], 3, return_indices=True),
    "adaptive_max1d_torch": lambda L, x: L.adaptive_max_pool1d(x[0], 4),
    "adaptive_max1d_with_indices": lambda L, x: F(L).adaptive_max_pool1d_with_indices(x[:, 0], 2),
    "lp2d": lambda L, x: F(L).lp_pool2d(x, 2, 2),
    "lp2d_p3_stride": lambda L, x: F(L).lp_pool2d(x.abs() + 0.1, 3.0, (2, 3), stride=1),
    "lp2d_ceil": lambda L, x: F(L).lp_pool2d(x, 2.0, 2, ceil_mode=True),
    "lp2d_inf": lambda L, x: F(L).lp_pool2d(x, math.inf, 2),
    "lp1d": lambda L, x: F(L).lp_pool1d(x[0], 2, 3),
    "lp1d_stride": lambda L, x: F(L).lp_pool1d(x[0].abs() + 0.1, 1.5, 2, stride=1),
    "max_pool2d_with_indices": lambda L, x: F(L).max_pool2d_with_indices(x, 2, 1, 1),
    "max_pool1d_with_indices": lambda L, x: F(L).max_pool1d_with_indices(x[0], 2),
    "max_pool1d_with_indices_torch": lambda L, x: L.max_pool1d_with_indices(x[0], 3, 2, 1),
    "channel_shuffle": lambda L, x: F(L).channel_shuffle(x, 2),
    "channel_shuffle_torch": lambda L, x: L.channel_shuffle(x.transpose(1, 2), 5),
    "native_channel_shuffle": lambda L, x: L.native_channel_shuffle(x, 2).detach(),
    "local_response_norm": lambda L, x: F(L).local_response_norm(x, 3),
    "local_response_norm_args": lambda L, x: F(L).local_response_norm(x, 2, 0.5, 0.6, 2.0),
    "local_response_norm_3d": lambda L, x: F(L).local_response_norm(x[0], 4, 1.0),
    "local_response_norm_5d": lambda L, x: F(L).local_response_norm(x.unsqueeze(-1), 2, 0.3),
}


@pytest.mark.parametrize("op", sorted(POOLS))
def test_pooling_values_indices_and_gradients_match_torch(op, device):
    check(POOLS[op], (2, 4, 5, 7), device=device)


@pytest.mark.parametrize("op", ["adaptive_max2d", "lp2d", "lp1d", "channel_shuffle",
                                "local_response_norm_args"])
def test_double_backward_matches_torch(op, device):
    check_double_backward(lambda L, x: POOLS[op](L, x), (1, 2, 5, 6), low=0.2, device=device)


@pytest.mark.parametrize("op", ["adaptive_max2d_int", "lp2d_p3_stride", "local_response_norm",
                                "adaptive_max1d"])
def test_gradcheck(op):
    assert grad_ok(lambda L, x: POOLS[op](L, x)[0] if op == "adaptive_max1d" else
                   POOLS[op](L, x), (1, 2, 5, 6))


def test_adaptive_max_ties_and_nan_match_torch(device):
    x = np.array([[[[1.0, 1.0, 0.0], [1.0, np.nan, 2.0], [3.0, 3.0, 3.0]]]])
    check(lambda L, a: F(L).adaptive_max_pool2d(a, 2, True), x, device=device)


UNPOOL = {
    "unpool2d": lambda L, x: F(L).max_unpool2d(*F(L).max_pool2d(x, 2, return_indices=True), 2),
    "unpool2d_size": lambda L, x: F(L).max_unpool2d(*F(L).max_pool2d(x, 2, return_indices=True),
                                                    2, output_size=(5, 7)),
    "unpool2d_long_size": lambda L, x: F(L).max_unpool2d(
        *F(L).max_pool2d(x, 2, return_indices=True), 2, output_size=[2, 4, 5, 7]),
    "unpool2d_stride_pad": lambda L, x: F(L).max_unpool2d(
        *F(L).max_pool2d(x, 3, 2, 1, return_indices=True), 3, 2, 1),
    "unpool2d_unbatched": lambda L, x: F(L).max_unpool2d(
        *F(L).max_pool2d(x[0], 2, return_indices=True), (2, 2)),
    "unpool1d": lambda L, x: F(L).max_unpool1d(*F(L).max_pool1d(x[0], 2, return_indices=True),
                                               2),
    "unpool1d_size": lambda L, x: F(L).max_unpool1d(
        *F(L).max_pool1d(x[0], 2, return_indices=True), 2, output_size=[7]),
    "unpool_modules": lambda L, x: L.nn.MaxUnpool2d(2)(*L.nn.MaxPool2d(2, return_indices=True)(x)),
}


@pytest.mark.parametrize("op", sorted(UNPOOL))
def test_max_unpool_matches_torch(op, device):
    # windows that tile the input: each index is within the unpooled size (torch does not
    # always check one that is not)
    check(UNPOOL[op], (2, 4, 5, 7) if "size" in op or "stride" in op else (2, 4, 4, 6),
          device=device)


def test_max_unpool_double_backward_and_gradcheck(device):
    # (indices as given: max_pool2d's own double backward node is not this test's subject)
    check_double_backward(lambda L, x, i: F(L).max_unpool2d(x, i, 2), (1, 2, 2, 2),
                          ints([[[[0, 3], [13, 15]], [[4, 6], [9, 10]]]]), device=device)
    assert grad_ok(UNPOOL["unpool1d"], (1, 2, 4, 6))


def test_errors_match_torch(device):
    pooled = lambda L, x: F(L).max_pool2d(x, 2, return_indices=True)  # noqa: E731
    check_error(lambda L, x: F(L).max_unpool2d(*pooled(L, x), 2, output_size=(3, 3)),
                (1, 1, 4, 4), device=device, phrase="Found an invalid max index: ")
    check_error(lambda L, x: F(L).max_unpool2d(*pooled(L, x), 2, output_size=(6, 6)),
                (1, 1, 4, 4), device=device,
                phrase='invalid output_size "(6, 6)" (dim 0 must be between 2 and 6)')
    check_error(lambda L, x: F(L).max_unpool2d(*pooled(L, x), 2, output_size=(4, 4, 4)),
                (1, 1, 4, 4), device=device, phrase="output_size should be a sequence "
                                                    "containing 2 or 4 elements, but it has a "
                                                    "length of '3'")
    check_error(lambda L, x: F(L).max_unpool2d(pooled(L, x)[0], pooled(L, x)[1].to(x.dtype), 2),
                (1, 1, 4, 4), device=device,
                phrase="elements in indices should be type int64 but got: Double")
    check_error(lambda L, x: F(L).max_unpool2d(pooled(L, x)[0], pooled(L, x)[1][..., :1], 2),
                (1, 1, 4, 4), device=device,
                phrase="Expected shape of indices to be same as that of the input tensor")
    check_error(lambda L, x: F(L).adaptive_max_pool2d(x, (2, 2)), (2, 3), device=device,
                phrase="Input dimension should be at least 3")
    check_error(lambda L, x: F(L).adaptive_max_pool2d(x, 2), (2, 3), device=device,
                phrase="adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [2, 3]")
    check_error(lambda L, x: F(L).adaptive_max_pool2d(x, 2), (1, 2, 0, 3), device=device,
                phrase="adaptive_max_pool2d(): Expected input to have non-zero size for "
                       "non-batch dimensions, but input has sizes [1, 2, 0, 3] with dimension 2 "
                       "being empty")
    check_error(lambda L, x: F(L).channel_shuffle(x, 2), (2, 5, 3), device=device,
                phrase="Number of channels must be divisible by groups. Got 5 channels and 2 "
                       "groups.")
    check_error(lambda L, x: F(L).channel_shuffle(x, 0), (2, 4, 3), device=device,
                phrase="Number of groups to divide channels in must be positive. Value of "
                       "groups:0")
    check_error(lambda L, x: F(L).channel_shuffle(x, 2), (2, 4), device=device,
                phrase="channel_shuffle expects input with > 2 dims, but got input with sizes "
                       "[2, 4]")
    check_error(lambda L, x: F(L).local_response_norm(x, 2), (3, 5), device=device,
                phrase="Expected 3D or higher dimensionality")


MODULES = {
    "AdaptiveMaxPool2d": lambda nn: nn.AdaptiveMaxPool2d((2, None), True),
    "AdaptiveMaxPool2d_int": lambda nn: nn.AdaptiveMaxPool2d(3),
    "AdaptiveMaxPool1d": lambda nn: nn.AdaptiveMaxPool1d(3),
    "LPPool2d": lambda nn: nn.LPPool2d(2, 3, stride=1),
    "LPPool1d": lambda nn: nn.LPPool1d(3, 2),
    "ChannelShuffle": lambda nn: nn.ChannelShuffle(2),
    "LocalResponseNorm": lambda nn: nn.LocalResponseNorm(2, beta=0.5),
    "Unfold": lambda nn: nn.Unfold(2, padding=1),
    "Fold": lambda nn: nn.Sequential(nn.Unfold(2, stride=2), nn.Fold((4, 6), 2, stride=2)),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_match_torch(name):
    def program(lib):
        m = MODULES[name](lib.nn)
        x = lib.tensor(np.linspace(-2, 3, 48).reshape(1, 2, 4, 6), requires_grad=True)
        if name == "AdaptiveMaxPool1d" or name == "LPPool1d":
            y = m(x[0])
        else:
            y = m(x)
        y0 = y[0] if isinstance(y, tuple) else y
        y0.sum().backward()
        return repr(m), list(m.state_dict()), y, x.grad

    parity(program)


def test_max_unpool_module_reprs_match_torch():
    parity(lambda lib: (repr(lib.nn.MaxUnpool1d(2)), repr(lib.nn.MaxUnpool2d(2, stride=1,
                                                                            padding=1)),
                        repr(lib.nn.MaxUnpool2d((2, 3)))))


def test_adaptive_max_indices_feed_max_unpool():
    x = rustgrad.tensor(np.arange(24.0).reshape(1, 1, 4, 6))
    v, i = rustgrad.nn.functional.adaptive_max_pool2d(x, (2, 3), return_indices=True)
    assert i.dtype == rustgrad.int64
    back = rustgrad.nn.functional.max_unpool2d(v, i, (2, 2), output_size=(4, 6))
    # each max goes back to its own place (the indices are distinct here)
    assert back.flatten().nonzero().flatten().tolist() == sorted(i.flatten().tolist())
    assert back.flatten()[i.flatten()].tolist() == v.flatten().tolist()
    t = torch.nn.functional.adaptive_max_pool2d(torch.tensor(np.arange(24.0).reshape(1, 1, 4, 6)),
                                                (2, 3), return_indices=True)[1]
    assert i.tolist() == t.tolist()


def test_native_channel_shuffle_has_no_derivative(device):
    check_error(lambda L, x: L.native_channel_shuffle(x, 2).sum().backward(), (1, 4, 3),
                device=device, requires_grad=True,
                phrase="derivative for aten::native_channel_shuffle is not implemented")


def test_channel_shuffle_saved_groups_and_module_errors():
    def program(lib):
        x = lib.ones(1, 4, 2, requires_grad=True)
        return F(lib).channel_shuffle(x, 2).grad_fn._saved_groups

    parity(program)
    check_error(lambda L, x: L.nn.ChannelShuffle(3)(x), (1, 4, 2),
                phrase="Number of channels must be divisible by groups")


def test_lp_pool_of_integer_kernel_tuple_matches_torch(device):
    check(lambda L, x: F(L).lp_pool2d(x, 2, (1, 2)), (1, 1, 3, 4), device=device)
    check(lambda L, x: L.nn.LPPool2d(1, (2, 1))(x.abs()), (1, 1, 4, 3), device=device)


def test_unpool_indices_stay_integral(device):
    check(lambda L, x: F(L).max_pool1d_with_indices(x, 2)[1], (1, 2, 4), device=device,
          backward=False)
    check(lambda L, x, i: F(L).max_unpool1d(x, i, 2), (1, 1, 2), ints([[[1, 2]]]),
          device=device)
