"""conv1d, conv2d and unfold refuse the arguments torch refuses, with torch's exception type and
message, in torch's order (a kernel larger than the padded input, non-positive strides,
dilations and groups, negative padding, an empty weight), and accept the empty batches torch
accepts."""

from __future__ import annotations

import pytest

from ..parity import F, check, check_error

CONV_REFUSED = {
    "kernel_larger_2d": (lambda lib, x, w: F(lib).conv2d(x, w), (1, 1, 2, 2), (1, 1, 3, 3),
                         "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). "
                         "Kernel size can't be greater than actual input size"),
    "kernel_larger_one_dim": (lambda lib, x, w: F(lib).conv2d(x, w), (1, 1, 2, 5), (1, 1, 3, 1),
                              "Calculated padded input size per channel: (2 x 5). Kernel size: "
                              "(3 x 1)."),
    "kernel_larger_padded": (lambda lib, x, w: F(lib).conv2d(x, w, padding=(0, 1)),
                             (1, 1, 1, 1), (1, 1, 3, 3),
                             "Calculated padded input size per channel: (1 x 3). Kernel size: "
                             "(3 x 3)."),
    "dilated_kernel_larger": (lambda lib, x, w: F(lib).conv2d(x, w, dilation=3), (1, 1, 3, 3),
                              (1, 1, 2, 2), "Kernel size: (4 x 4). Kernel size can't be greater"),
    "kernel_larger_unbatched": (lambda lib, x, w: F(lib).conv2d(x, w), (1, 2, 2), (1, 1, 3, 3),
                                "Kernel size can't be greater than actual input size"),
    "empty_height": (lambda lib, x, w: F(lib).conv2d(x, w), (1, 1, 0, 4), (1, 1, 1, 1),
                     "Calculated padded input size per channel: (0 x 4). Kernel size: (1 x 1)."),
    "kernel_larger_1d": (lambda lib, x, w: F(lib).conv1d(x, w), (1, 1, 2), (1, 1, 3),
                         "Calculated padded input size per channel: (2). Kernel size: (3). "
                         "Kernel size can't be greater than actual input size"),
    "kernel_larger_1d_dilated": (lambda lib, x, w: F(lib).conv1d(x, w, dilation=3), (1, 1, 3),
                                 (1, 1, 2), "Kernel size: (4)."),
    "module": (lambda lib, x, w: lib.nn.Conv2d(1, 1, 3, dtype=x.dtype)(x), (1, 1, 2, 2), (1,),
               "Kernel size can't be greater than actual input size"),
    "zero_stride": (lambda lib, x, w: F(lib).conv2d(x, w, stride=0), (1, 1, 4, 4), (1, 1, 3, 3),
                    "non-positive stride is not supported"),
    "negative_padding": (lambda lib, x, w: F(lib).conv2d(x, w, padding=-1), (1, 1, 4, 4),
                         (1, 1, 3, 3), "negative padding is not supported"),
    "zero_groups": (lambda lib, x, w: F(lib).conv2d(x, w, groups=0), (1, 1, 4, 4), (1, 1, 3, 3),
                    "non-positive groups is not supported"),
    "zero_dilation": (lambda lib, x, w: F(lib).conv2d(x, w, dilation=0), (1, 1, 4, 4),
                      (1, 1, 3, 3), "dilation should be greater than zero, but got [0, 0]"),
    "zero_dilation_1d": (lambda lib, x, w: F(lib).conv1d(x, w, dilation=0), (1, 1, 4),
                         (1, 1, 3), "dilation should be greater than zero, but got [1, 0]"),
    "empty_kernel": (lambda lib, x, w: F(lib).conv2d(x, w), (1, 1, 4, 4), (1, 1, 0, 3),
                     "kernel size should be greater than zero, but got kernel_height: 0 "
                     "kernel_width: 3"),
    "no_out_channels": (lambda lib, x, w: F(lib).conv2d(x, w), (1, 1, 4, 4), (0, 1, 3, 3),
                        "Given groups=1, expected weight to be at least 1 at dimension 0, but got "
                        "weight of size [0, 1, 3, 3] instead"),
    "out_channels_not_divisible": (lambda lib, x, w: F(lib).conv2d(x, w, groups=2),
                                   (1, 4, 5, 5), (3, 2, 3, 3),
                                   "Given groups=2, expected weight to be divisible by 2 at "
                                   "dimension 0, but got weight of size [[3, 2, 3, 3]] instead"),
    # torch checks the sizes before the dtypes
    "kernel_larger_before_dtype": (lambda lib, x, w: F(lib).conv2d(x, w.float()),
                                   (1, 1, 2, 2), (1, 1, 3, 3),
                                   "Kernel size can't be greater than actual input size"),
    "stride_before_groups_weight": (lambda lib, x, w: F(lib).conv2d(x, w, stride=0),
                                    (1, 1, 4, 4), (0, 1, 3, 3),
                                    "non-positive stride is not supported"),
}


@pytest.mark.parametrize("case", sorted(CONV_REFUSED))
def test_conv_refuses_as_torch(case, device):
    fn, xs, ws, phrase = CONV_REFUSED[case]
    check_error(fn, xs, ws, phrase=phrase, device=device)


UNFOLD_REFUSED = {
    "blocks": (lambda lib, x: F(lib).unfold(x, 3), (1, 1, 2, 2),
               "Given input with spatial size (2, 2), kernel_size=(3, 3), dilation=(1, 1), "
               "padding=(0, 0), calculated shape of the array of sliding blocks as (0, 0), but "
               "its components must be at least one."),
    "blocks_padded_dilated": (lambda lib, x: F(lib).unfold(x, 3, dilation=(2, 1),
                                                           padding=(1, 0)), (1, 1, 2, 4),
                              "calculated shape of the array of sliding blocks as (0, 2)"),
    "kernel": (lambda lib, x: F(lib).unfold(x, (2, 0)), (1, 1, 4, 4),
               "kernel size should be greater than zero, but got kernel_height: 2 "
               "kernel_width: 0"),
    "stride": (lambda lib, x: F(lib).unfold(x, 3, stride=(1, 0)), (1, 1, 4, 4),
               "stride should be greater than zero, but got stride_height: 1 stride_width: 0"),
    "dilation": (lambda lib, x: F(lib).unfold(x, 3, dilation=0), (1, 1, 4, 4),
                 "dilation should be greater than zero, but got dilation_height: 0 "
                 "dilation_width: 0"),
    "padding": (lambda lib, x: F(lib).unfold(x, 3, padding=-1, stride=0), (1, 1, 4, 4),
                "padding should be non-negative, but got pad_height: -1 pad_width: -1"),
    "empty_plane": (lambda lib, x: F(lib).unfold(x, 1), (1, 1, 0, 4),
                    "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
                    "non-zero dimensions for input, but got: [1, 1, 0, 4]"),
}


@pytest.mark.parametrize("case", sorted(UNFOLD_REFUSED))
def test_unfold_refuses_as_torch(case, device):
    fn, xs, phrase = UNFOLD_REFUSED[case]
    check_error(fn, xs, phrase=phrase, device=device)


@pytest.mark.parametrize("case", ["conv2d", "conv1d", "unfold", "padded"])
def test_empty_batches_and_exact_fits_as_torch(case, device):
    if case == "conv2d":
        check(lambda lib, x, w: F(lib).conv2d(x, w), (0, 1, 4, 4), (2, 1, 3, 3), device=device)
        check(lambda lib, x, w: F(lib).conv2d(x, w), (1, 1, 3, 3), (2, 1, 3, 3), device=device)
    elif case == "conv1d":
        check(lambda lib, x, w: F(lib).conv1d(x, w), (0, 1, 3), (1, 1, 2), device=device)
        check(lambda lib, x, w: F(lib).conv1d(x, w, dilation=2), (1, 1, 3), (1, 1, 2),
              device=device)
    elif case == "unfold":
        check(lambda lib, x: F(lib).unfold(x, 1), (0, 1, 2, 4), device=device)
    else:
        check(lambda lib, x, w: F(lib).conv2d(x, w, padding=1), (1, 1, 2, 2), (1, 1, 3, 3),
              device=device)
