"""The parity helpers themselves: each comparison they promise can fail."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check, check_error, oracle_for


def _per_lib(torch_fn, rustgrad_fn):
    # the oracle's side is torch, or rustgrad on the CPU where the GPU machine's torch is another
    # release (parity.oracle_for); the side under test is rustgrad on the device
    oracle = oracle_for("cuda")
    return lambda lib, *ts: (torch_fn if lib is torch or lib is oracle else rustgrad_fn)(lib, *ts)


def test_check_same_program_passes_and_returns_none(device):
    assert check(lambda lib, a, b: (a * b).sum(1), (2, 3), (3,), device=device) is None


@pytest.mark.parametrize("case,phrase", [
    ("values", "Not equal to tolerance"),
    ("grad_fn", "grad_fn"),
    ("dtype", "dtype"),
    ("shape", "shape"),
    ("grad", "grad of input 0"),
    ("grad_none", "rustgrad None, torch a tensor"),
    ("version", "_version"),
    ("requires_grad", "requires_grad"),
    ("output_count", "outputs"),
])
def test_check_each_kind_of_difference_fails(case, phrase, device):
    same = lambda lib, a, b: a * b  # noqa: E731
    variants = {
        "values": lambda lib, a, b: a * b + 1e-3,
        "grad_fn": lambda lib, a, b: a * b + 0,
        "dtype": lambda lib, a, b: (a * b).float() if a.dtype == rustgrad.float64 else
        (a * b).double(),
        "shape": lambda lib, a, b: (a * b).unsqueeze(0),
        "grad": lambda lib, a, b: a * b + (a * 1e-3 - (a * 1e-3).detach()),
        "grad_none": lambda lib, a, b: a.detach() * b,
        "version": lambda lib, a, b: (a * b).add_(0),
        "requires_grad": lambda lib, a, b: (a * b).detach(),
        "output_count": lambda lib, a, b: (a * b, a),
    }
    with pytest.raises(AssertionError, match=phrase):
        check(_per_lib(same, variants[case]), (2, 3), (2, 3), dtypes=(np.float64,),
              grad_fn=case == "grad_fn", device=device)


def test_check_inputs_modified_differently_fails(device):
    def torch_fn(lib, a):
        with lib.no_grad():
            a.mul_(2)
        return a * 1

    def rustgrad_fn(lib, a):
        return a * 2

    with pytest.raises(AssertionError):
        check(_per_lib(torch_fn, rustgrad_fn), (3,), grad_fn=False, versions=False, device=device)


def test_check_error_no_exception_under_rustgrad_fails(device):
    with pytest.raises(AssertionError, match="rustgrad: no exception raised"):
        check_error(_per_lib(lambda lib, a: a + lib.ones(4), lambda lib, a: a + 1), (3,),
                    device=device)


def test_check_error_different_type_fails(device):
    def rg_fn(lib, a):
        raise ValueError("The size of tensor a")

    with pytest.raises(AssertionError, match="rustgrad raised ValueError"):
        check_error(_per_lib(lambda lib, a: a + lib.ones(4), rg_fn), (3,), device=device)


def test_check_error_missing_phrase_fails(device):
    def rg_fn(lib, a):
        raise RuntimeError("shapes differ")

    with pytest.raises(AssertionError, match="not in rustgrad's message"):
        check_error(_per_lib(lambda lib, a: a + lib.ones(4), rg_fn), (3,), device=device)


def test_check_error_input_changed_before_raising_fails(device):
    def rg_fn(lib, a):
        a.add_(1)
        raise RuntimeError("The size of tensor a (3) must match")

    with pytest.raises(AssertionError, match="rustgrad input 0 changed"):
        check_error(_per_lib(lambda lib, a: a + lib.ones(4), rg_fn), (3,),
                    phrase="The size of tensor a", device=device)
