"""Backward at points where the gradient is infinite gives torch's inf/nan and no NumPy warning
(forward ops such as log(0) still let NumPy warn: see the README's differences)."""

import warnings

import rustgrad
import torch


def _grads(lib, program):
    x = lib.tensor([0.0, 1.0, 4.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eval(program, {"x": x}).sum().backward()
    return x.grad.tolist()


def test_float_warnings_backward_at_infinite_gradient_is_silent_like_torch():
    for program in ("x.sqrt()", "(x * 0).sqrt()", "x.pow(0.5)", "x.sqrt().sqrt()"):
        got, want = _grads(rustgrad, program), _grads(torch, program)
        assert str(got) == str(want), program  # str: nan == nan
