"""Writes into a tensor whose elements share memory (an expanded view): torch refuses the ops
whose result would depend on the order of the writes, with one RuntimeError, and allows fills
and writes into non-overlapping parts; the base is left unchanged on refusal."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ..parity import check_error, parity

OVERLAP = "more than one element of the written-to tensor refers to a single memory location"


def _e(x):
    return x.expand(3, 4)


REFUSED = {
    "add_": lambda lib, x: _e(x).add_(1),
    "add_tensor": lambda lib, x: _e(x).add_(lib.ones(3, 4, dtype=x.dtype)),
    "iadd": lambda lib, x: _e(x).__iadd__(1),
    "sub_": lambda lib, x: _e(x).sub_(lib.ones(4, dtype=x.dtype)),
    "mul_": lambda lib, x: _e(x).mul_(2),
    "div_": lambda lib, x: _e(x).div_(2),
    "pow_": lambda lib, x: _e(x).pow_(2),
    "exp_": lambda lib, x: _e(x).exp_(),
    "neg_": lambda lib, x: _e(x).neg_(),
    "abs_": lambda lib, x: _e(x).abs_(),
    "relu_": lambda lib, x: _e(x).relu_(),
    "sigmoid_": lambda lib, x: _e(x).sigmoid_(),
    "clamp_": lambda lib, x: _e(x).clamp_(0, 0.5),
    "copy_": lambda lib, x: _e(x).copy_(lib.zeros(3, 4, dtype=x.dtype)),
    "uniform_": lambda lib, x: _e(x).uniform_(),
    "normal_": lambda lib, x: _e(x).normal_(),
    "relu_inplace_F": lambda lib, x: lib.nn.functional.relu(_e(x), inplace=True),
    "dropout_inplace": lambda lib, x: lib.nn.functional.dropout(_e(x), 0.5, True, True),
    "scatter_": lambda lib, x: _e(x).scatter_(0, lib.tensor([[0]]), 2.0),
    "index_add_": lambda lib, x: _e(x).index_add_(0, lib.tensor([0]), lib.ones(1, 4,
                                                                                dtype=x.dtype)),
    "setitem_column_tensor": lambda lib, x: _e(x).__setitem__((slice(None), 0),
                                                              lib.arange(3.0, dtype=x.dtype)),
    "setitem_all_tensor": lambda lib, x: _e(x).__setitem__(Ellipsis, lib.ones(4, dtype=x.dtype)),
    "setitem_slice_tensor": lambda lib, x: _e(x).__setitem__(slice(0, 2),
                                                             lib.ones(4, dtype=x.dtype)),
    "slice_of_expand": lambda lib, x: _e(x)[1:].add_(1),
    "transposed": lambda lib, x: _e(x).t().mul_(1),
    "unsqueezed": lambda lib, x: _e(x).unsqueeze(0).mul_(1),
    "scalar_expanded": lambda lib, x: x[0].expand(3).add_(1),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_write_into_expanded_view_raises_torch_error(name):
    check_error(REFUSED[name], (4,), phrase=OVERLAP)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_refused_for_every_dtype(dtype):
    check_error(lambda lib, x: _e(x).add_(1), np.arange(4).astype(dtype), dtype=dtype,
                phrase=OVERLAP)


def test_refused_on_a_view_of_a_tensor_with_history():
    # grad mode on, the expanded tensor is a non-leaf requiring grad
    check_error(lambda lib, x: _e(x * 1).add_(1), (4,), requires_grad=True, phrase=OVERLAP)
    check_error(lambda lib, x: _e(x * 1).exp_(), (4,), requires_grad=True, phrase=OVERLAP)


def test_refused_under_no_grad():
    def prog(lib, x):
        with lib.no_grad():
            _e(x).mul_(3)

    check_error(prog, (4,), requires_grad=True, phrase=OVERLAP)


ALLOWED = {
    "fill_": lambda lib, x: _e(x).fill_(2.0),
    "zero_": lambda lib, x: _e(x).zero_(),
    "masked_fill_": lambda lib, x: _e(x).masked_fill_(lib.tensor([True, False, True, False]),
                                                      7.0),
    "setitem_row": lambda lib, x: _e(x).__setitem__(0, 5.0),
    "setitem_row_tensor": lambda lib, x: _e(x).__setitem__(0, lib.arange(4.0)),
    "setitem_element": lambda lib, x: _e(x).__setitem__((1, 2), 9.0),
    "setitem_advanced": lambda lib, x: _e(x).__setitem__(lib.tensor([0, 1]), 3.0),
    # a number is filled into the view (torch >= 2.15), whatever the overlap
    "setitem_column": lambda lib, x: _e(x).__setitem__((slice(None), 0), 5.0),
    "setitem_all": lambda lib, x: _e(x).__setitem__(Ellipsis, 5.0),
    "setitem_rows": lambda lib, x: _e(x).__setitem__(slice(0, 2), 5.0),
    "expand_same_shape": lambda lib, x: x.view(1, 4).expand(1, 4).add_(1),
    "expand_empty": lambda lib, x: x[:0].expand(3, 0).add_(1),
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_writes_torch_allows_reach_the_base(name):
    def prog(lib):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch: masked_fill_ on expanded is deprecated
            ALLOWED[name](lib, x)
        return x, x._version

    parity(prog)
