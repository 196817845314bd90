"""Parity of in-place ops on non-leaf tensors in a graph: values, grad_fn after the rebase,
version counter bumps, and gradients through the rebased history."""

from __future__ import annotations

import pytest

from .helpers import check

INPLACE = {
    "add_tensor": lambda y, b: y.add_(b),
    "add_alpha": lambda y, b: y.add_(b, alpha=-2),
    "add_scalar": lambda y, b: y.add_(1.5),
    "sub_tensor": lambda y, b: y.sub_(b),
    "sub_scalar": lambda y, b: y.sub_(3),
    "mul_tensor": lambda y, b: y.mul_(b),
    "mul_scalar": lambda y, b: y.mul_(-0.5),
    "div_tensor": lambda y, b: y.div_(b),
    "div_scalar": lambda y, b: y.div_(4),
    "zero_": lambda y, b: y.zero_(),
    "fill_scalar": lambda y, b: y.fill_(2.5),
    "fill_0d_tensor": lambda y, b: y.fill_(b.sum()),
    "copy_": lambda y, b: y.copy_(b),
    "clamp_both": lambda y, b: y.clamp_(-0.5, 0.5),
    "clamp_min": lambda y, b: y.clamp_(min=0.2),
    "clamp_max": lambda y, b: y.clamp_(max=-0.2),
    "iadd": lambda y, b: y.__iadd__(b),
    "isub": lambda y, b: y.__isub__(b),
    "imul": lambda y, b: y.__imul__(b),
    "itruediv": lambda y, b: y.__itruediv__(b),
    "iadd_scalar": lambda y, b: y.__iadd__(2),
    "imul_scalar": lambda y, b: y.__imul__(3.0),
}


def _inplace_program(op):
    def fn(lib, a, b):
        y = a * 2  # non-leaf in the graph
        out = INPLACE[op](y, b)
        assert out is y
        return y, y * a  # uses the rebased history and the leaf again

    return fn


@pytest.mark.parametrize("other_shape", [(3, 4), (4,), ()], ids=str)
@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace_on_nonleaf_grads_and_versions_match_torch(op, other_shape):
    if op == "fill_0d_tensor":
        other_shape = ()
    check(_inplace_program(op), (3, 4), other_shape, low=0.5, high=2.0)


def test_inplace_operators_rebind_same_object_like_torch():
    def fn(lib, a, b):
        y = a * 1.5
        z = y
        y += b
        y *= b
        y -= 1
        y /= b + 2
        assert y is z
        return y

    check(fn, (2, 3), (2, 3), low=0.5)


def test_inplace_chain_bumps_version_each_time_like_torch():
    def fn(lib, a, b):
        y = a + 0
        y.add_(b).mul_(b).sub_(1.0).div_(2.0).clamp_(-1, 1)
        return y

    check(fn, (4,), (4,))


def test_inplace_on_tensor_not_requiring_grad_with_grad_other_like_torch():
    def fn(lib, a, b):
        y = b.detach().clone()  # no grad
        y.mul_(a)  # now in the graph
        y.add_(a)
        return y

    check(fn, (3,), (3,))


def test_inplace_without_grad_bumps_versions_like_torch():
    def fn(lib, a, b):
        y = a.clone()
        y.add_(b)
        y.mul_(2)
        y.zero_()
        y.fill_(1.0)
        y.copy_(b)
        y.clamp_(0, 1)
        y += 1
        return y

    check(fn, (3, 2), (2,), requires_grad=False)


def test_inplace_under_no_grad_on_leaf_allowed_like_torch():
    def fn(lib, a, b):
        with lib.no_grad():
            a.mul_(2)
            a.add_(b)
        return a * 1

    check(fn, (3,), (3,))


def test_inplace_copy_broadcast_and_cast_like_torch():
    def fn(lib, a, b):
        y = a * 1
        y.copy_(b.float())  # cast on copy, gradient cast back
        return y, y * a

    check(fn, (2, 3), (3,))


OVERWRITES = {
    "copy_": lambda y, b: y.copy_(b),
    "fill_tensor": lambda y, b: y.fill_(b.sum()),
}


@pytest.mark.parametrize("op", sorted(OVERWRITES))
def test_inplace_overwrite_sends_zero_grad_to_old_history_like_torch(op):
    def fn(lib, a, b):
        y = a * 1
        OVERWRITES[op](y, b)
        return y

    check(fn, (2, 3), (3,))


def test_inplace_clamp_tensor_bounds_match_torch():
    def fn(lib, a, lo, hi):
        y = a * 1
        y.clamp_(lo, hi)
        return y

    check(fn, (3, 4), (4,), (3, 1), seed=5)
    check(fn, (3, 4), (4,), (3, 1), seed=5, requires_grad=False)
