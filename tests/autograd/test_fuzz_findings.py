"""Differences from torch the differential fuzzer found (tests/programs/test_fuzz_programs.py),
each fixed and kept here as a parity test: in-place ops that save their output on a view, what
such a node reads after a write through `.data`, leaves that stop requiring grad, saved tensors
detached in place, no_grad views as `autograd.grad` inputs, and reading a stale view's `.grad`."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace"
SAVES_OUTPUT = ["sigmoid_", "exp_", "tanh_", "sqrt_", "rsqrt_", "pow_tensor"]
VIEWS = {"slice": lambda a: a[:2], "t": lambda a: a.t(), "whole": lambda a: a}


def _apply(lib, v, name):
    if name == "pow_tensor":
        return v.pow_(lib.full(tuple(v.shape), 2.0, dtype=lib.float64, requires_grad=True))
    return getattr(v, name)()


def _x(lib):
    return lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("name", SAVES_OUTPUT)
def test_a_write_after_an_inplace_op_that_saved_its_output_fails_backward(lib, name, view):
    x = _x(lib)
    a = x * 1.0
    v = VIEWS[view](a)
    _apply(lib, v, name)
    v.mul_(1.5)
    with pytest.raises(RuntimeError, match=MODIFIED):
        a.sum().backward()


@pytest.mark.parametrize("name", ["exp_", "sigmoid_"])
def test_a_node_that_saved_its_output_reads_the_tensors_memory(lib, name):
    x = _x(lib)
    y = getattr(x * 1.0, name)()
    y.data.mul_(2)  # not a version bump: the node sees the new values, as torch's
    y.sum().backward()
    out = 2 * {"exp_": np.exp, "sigmoid_": lambda v: 1 / (1 + np.exp(-v))}[name](
        np.array([1.0, 2.0, 3.0]))
    expected = out if name == "exp_" else out * (1 - out)  # each formula on the saved output
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("how", ["requires_grad_", "detach_"])
def test_a_leaf_that_stopped_requiring_grad_receives_nothing(lib, how):
    x = _x(lib)
    y = x.exp()
    if how == "requires_grad_":
        x.requires_grad_(False)
    else:
        x.detach_()
    y.sum().backward()
    assert x.grad is None


def test_a_saved_tensor_detached_in_place_is_refused(lib):
    x = _x(lib)
    y = x.exp()
    z = y.abs()  # saves y
    y.detach_()
    with pytest.raises(RuntimeError, match="Trying to use a saved tensor that has been detached "
                                           "in-place, i.e. with .detach_()"):
        z.sum().backward()
    w = x.exp()
    u = w * 2.0  # saves nothing of w: fine
    w.detach_()
    u.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0, 3.0]))


def test_a_no_grad_view_of_a_leaf_is_an_unused_input_of_grad(lib):
    x = _x(lib)
    with lib.no_grad():
        v = x.unsqueeze(0)
    assert v.requires_grad
    (g,) = lib.autograd.grad((v * 2.0).sum() + x.sum(), [v], allow_unused=True)
    assert g is None
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        lib.autograd.grad((v * 2.0).sum() + x.sum(), [v])


def test_stale_views_answer_grad_and_retain_grad_as_torch(lib):
    x = _x(lib)
    y = x.exp()
    with lib.no_grad():
        v = y.unsqueeze(0)
    y.mul_(1.5)
    v.retain_grad()  # a leaf as it stands: nothing to do
    p = (x * 1.0).unbind(0)[0]
    p.retain_grad()
    p._base.mul_(1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert p.grad is None
    with pytest.raises(RuntimeError, match="its base or another view of its base has been"):
        _ = p.is_leaf


@pytest.mark.parametrize("base", ["leaf", "non_leaf"])
def test_a_no_grad_view_stops_requiring_grad_when_its_base_is_detached_in_place(lib, base):
    x = _x(lib)
    b = x if base == "leaf" else x * 2.0
    with lib.no_grad():
        v = b.unsqueeze(0)
    assert v.requires_grad and (v * 2).requires_grad
    v.register_hook(lambda g: g)  # allowed while it requires grad
    b.detach_()
    assert not v.requires_grad and not (v * 2).requires_grad
