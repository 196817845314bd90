"""F.max_pool3d (+ indices), avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d and their
modules against torch: values, indices, grad_fn names and gradients (float32 and float64) on
every device, double backward, gradcheck, torch's errors and reprs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import F, check, check_double_backward, check_error, grad_ok, parity

POOLS = {
    "max": lambda L, x: F(L).max_pool3d(x, 2),
    "max_indices_padded": lambda L, x: F(L).max_pool3d(x, 3, 2, 1, return_indices=True),
    "max_dilated_ceil": lambda L, x: F(L).max_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 0, 1),
                                                     (2, 1, 1), True, True),
    "max_overlap_torch": lambda L, x: L.max_pool3d(x, 2, 1),
    "max_stride_list": lambda L, x: F(L).max_pool3d(x, [2], stride=[], padding=[1]),
    "max_with_indices": lambda L, x: F(L).max_pool3d_with_indices(x, (1, 2, 3)),
    "max_unbatched": lambda L, x: F(L).max_pool3d(x[0], 2, return_indices=True),
    "avg": lambda L, x: F(L).avg_pool3d(x, 2),
    "avg_padded": lambda L, x: F(L).avg_pool3d(x, 3, 2, 1),
    "avg_no_pad_count_ceil": lambda L, x: F(L).avg_pool3d(x, 3, 2, 1, True, False),
    "avg_divisor": lambda L, x: F(L).avg_pool3d(x, (2, 3, 2), (1, 2, 3), 0, True,
                                                divisor_override=5),
    "avg_unbatched": lambda L, x: F(L).avg_pool3d(x[1], (1, 2, 2), 1, (0, 1, 1)),
    "adaptive_avg": lambda L, x: F(L).adaptive_avg_pool3d(x, (2, 3, 4)),
    "adaptive_avg_none": lambda L, x: F(L).adaptive_avg_pool3d(x, (None, 1, 3)),
    "adaptive_avg_one": lambda L, x: F(L).adaptive_avg_pool3d(x, 1),
    "adaptive_avg_larger": lambda L, x: F(L).adaptive_avg_pool3d(x[0], 6),
    "adaptive_max": lambda L, x: F(L).adaptive_max_pool3d(x, (2, 3, 4), return_indices=True),
    "adaptive_max_none": lambda L, x: F(L).adaptive_max_pool3d(x, (3, None, 1)),
    "adaptive_max_with_indices": lambda L, x: F(L).adaptive_max_pool3d_with_indices(x[0], 2),
}


@pytest.mark.parametrize("op", sorted(POOLS))
def test_pooling_matches_torch(op: str, device: str) -> None:
    check(POOLS[op], (2, 3, 4, 5, 6), device=device)


def test_ties_nan_and_infinities_pick_torchs_index(device: str) -> None:
    x = np.zeros((1, 1, 2, 2, 4))
    x[0, 0, 0, 0, 1] = x[0, 0, 1, 1, 2] = math.nan
    x[0, 0, 1, 0, 3] = -math.inf
    for fn in (lambda L, t: F(L).max_pool3d(t, 2, return_indices=True),
               lambda L, t: F(L).adaptive_max_pool3d(t, (1, 1, 2), return_indices=True),
               lambda L, t: F(L).max_pool3d(t.abs(), (1, 2, 2), 1, return_indices=True)):
        check(fn, x, device=device, backward=False)


@pytest.mark.parametrize("op", ["max_indices_padded", "avg_padded", "avg_divisor",
                                "adaptive_avg", "adaptive_max"])
def test_double_backward(op: str, device: str) -> None:
    check_double_backward(lambda L, x: POOLS[op](L, x), (1, 2, 4, 5, 5), device=device)


@pytest.mark.parametrize("op", ["max_dilated_ceil", "avg_no_pad_count_ceil", "avg_divisor",
                                "adaptive_avg", "adaptive_max_none"])
def test_gradcheck(op: str) -> None:
    assert grad_ok(lambda L, x: POOLS[op](L, x)[0] if isinstance(POOLS[op](L, x), tuple) else
                   POOLS[op](L, x), (1, 2, 4, 5, 5))


def test_grad_fn_names_and_saved_arguments(lib: Any) -> None:
    x = lib.ones(1, 2, 4, 4, 4, requires_grad=True)
    assert F(lib).max_pool3d(x, 2).grad_fn.name() == "MaxPool3DWithIndicesBackward0"
    assert F(lib).avg_pool3d(x, 2).grad_fn.name() == "AvgPool3DBackward0"
    assert F(lib).adaptive_avg_pool3d(x, 2).grad_fn.name() == "AdaptiveAvgPool3DBackward0"
    assert F(lib).adaptive_avg_pool3d(x, 1).grad_fn.name() == "MeanBackward1"
    assert F(lib).adaptive_max_pool3d(x, 2).grad_fn.name() == "AdaptiveMaxPool3DBackward0"
    node = F(lib).max_pool3d(x, (2, 1, 2), padding=(1, 0, 1), ceil_mode=True).grad_fn
    assert (node._saved_kernel_size, node._saved_stride, node._saved_padding,
            node._saved_dilation, node._saved_ceil_mode) == ((2, 1, 2), (), (1, 0, 1),
                                                            (1, 1, 1), True)
    assert node._saved_self is x
    node = F(lib).avg_pool3d(x, 2, 1, divisor_override=3).grad_fn
    assert (node._saved_kernel_size, node._saved_stride, node._saved_count_include_pad,
            node._saved_divisor_override) == ((2, 2, 2), (1, 1, 1), True, 3)


def test_integer_inputs() -> None:
    def run(L: Any) -> Any:
        x = L.arange(-30, 30).view(1, 1, 3, 4, 5)
        return (F(L).max_pool3d(x, 2, padding=1), F(L).avg_pool3d(x, 2),
                F(L).avg_pool3d(-x, (1, 2, 3)))
    parity(run)


ERRORS = {
    "max_3d_input": lambda L, x: F(L).max_pool3d(x[0, 0], 2),
    "max_6d_input": lambda L, x: F(L).max_pool3d(x[..., None], 2),
    "max_pad_too_big": lambda L, x: F(L).max_pool3d(x, 2, padding=2),
    "max_kernel_zero": lambda L, x: F(L).max_pool3d(x, 0),
    "max_kernel_zero_stride": lambda L, x: F(L).max_pool3d(x, 0, 1),
    "max_stride_zero": lambda L, x: F(L).max_pool3d(x, 2, stride=0),
    "max_dilation_zero": lambda L, x: F(L).max_pool3d(x, 2, dilation=0),
    "max_too_small": lambda L, x: F(L).max_pool3d(x, 6),
    "max_kernel_pair": lambda L, x: F(L).max_pool3d(x, (2, 2)),
    "max_stride_pair": lambda L, x: F(L).max_pool3d(x, 2, (1, 2)),
    "max_padding_pair": lambda L, x: F(L).max_pool3d(x, 2, 1, (1, 1)),
    "max_dilation_pair": lambda L, x: F(L).max_pool3d(x, 2, 1, 0, (1, 1)),
    "max_negative_pad": lambda L, x: F(L).max_pool3d(x, 2, 1, -1),
    "max_empty_channels": lambda L, x: F(L).max_pool3d(x[:, :0], 2),
    "avg_3d_input": lambda L, x: F(L).avg_pool3d(x[0, 0], 2),
    "avg_pad_too_big": lambda L, x: F(L).avg_pool3d(x, 2, padding=2),
    "avg_kernel_too_big": lambda L, x: F(L).avg_pool3d(x, (6, 1, 1), 1, (1, 0, 0)),
    "avg_kernel_zero": lambda L, x: F(L).avg_pool3d(x, 0, 1),
    "avg_stride_zero": lambda L, x: F(L).avg_pool3d(x, 2, stride=0),
    "avg_divisor_zero": lambda L, x: F(L).avg_pool3d(x, 2, divisor_override=0),
    "avg_kernel_pair": lambda L, x: F(L).avg_pool3d(x, (2, 2)),
    "avg_stride_pair": lambda L, x: F(L).avg_pool3d(x, 2, (1, 2)),
    "avg_padding_pair": lambda L, x: F(L).avg_pool3d(x, 2, 1, (1, 1)),
    "avg_empty_channels": lambda L, x: F(L).avg_pool3d(x[:, :0], 2),
    "adaptive_avg_2d_input": lambda L, x: F(L).adaptive_avg_pool3d(x[0, 0, 0], 2),
    "adaptive_avg_pair": lambda L, x: F(L).adaptive_avg_pool3d(x, (2, 2)),
    "adaptive_avg_empty": lambda L, x: F(L).adaptive_avg_pool3d(x[:, :0], 2),
    "adaptive_avg_negative": lambda L, x: F(L).adaptive_avg_pool3d(x, -1),
    "adaptive_avg_long": lambda L, x: F(L).adaptive_avg_pool3d(x.long(), 2),
    "adaptive_avg_few_dims": lambda L, x: F(L).adaptive_avg_pool3d(x[0, 0, 0], (1, 2, 2)),
    "adaptive_max_2d_input": lambda L, x: F(L).adaptive_max_pool3d(x[0, 0, 0], 2),
    "adaptive_max_pair": lambda L, x: F(L).adaptive_max_pool3d(x, (2, 2)),
    "adaptive_max_empty": lambda L, x: F(L).adaptive_max_pool3d(x[:, :0], 2),
    "adaptive_max_long": lambda L, x: F(L).adaptive_max_pool3d(x.long(), 2),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_torch(case: str, device: str) -> None:
    check_error(ERRORS[case], (1, 4, 5, 5, 5), device=device)


def test_empty_batch_and_empty_output(device: str) -> None:
    check(lambda L, x: (F(L).max_pool3d(x, 2), F(L).avg_pool3d(x, 2)), (0, 2, 4, 4, 4),
          device=device, backward=False)
    check(lambda L, x: (F(L).adaptive_avg_pool3d(x, 0), F(L).adaptive_max_pool3d(x, (0, 1, 2))),
          (1, 2, 4, 4, 4), device=device, backward=False)


MODULES = [
    lambda L: L.nn.MaxPool3d(2),
    lambda L: L.nn.MaxPool3d((2, 1, 2), stride=1, padding=(1, 0, 1), dilation=1,
                             return_indices=True, ceil_mode=True),
    lambda L: L.nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=False),
    lambda L: L.nn.AvgPool3d((1, 2, 2), divisor_override=2, ceil_mode=True),
    lambda L: L.nn.AdaptiveAvgPool3d((2, None, 3)),
    lambda L: L.nn.AdaptiveMaxPool3d(2, return_indices=True),
]


@pytest.mark.parametrize("build", MODULES)
def test_modules_match_torch(build: Any, device: str) -> None:
    assert repr(build(rustgrad)) == repr(build(torch))
    check(lambda L, x: build(L)(x), (2, 3, 4, 5, 5), device=device)
