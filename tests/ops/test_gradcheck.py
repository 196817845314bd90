"""rustgrad.autograd.gradcheck (float64 central differences) on every differentiable op, at
inputs away from kinks, and a check that a wrong derivative is caught."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad as rg
from rustgrad._ops._node import node
from rustgrad.autograd import gradcheck
from rustgrad.autograd.gradcheck import GradcheckError


def _inputs(shapes, low, high, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rg.tensor(rng.uniform(low, high, size=s), requires_grad=True) for s in shapes)


def _away_from_zero(shape, seed=0):
    """Values in +-[0.5, 2]: no kink of abs/relu/clamp(0)/max ties nearby."""
    rng = np.random.default_rng(seed)
    mag = rng.uniform(0.5, 2.0, size=shape)
    sign = np.where(rng.uniform(size=shape) < 0.5, -1.0, 1.0)
    return rg.tensor(mag * sign, requires_grad=True)


def _distinct(shape, seed=0):
    """A permutation of well-separated values, so max/min have no ties."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return rg.tensor(rng.permutation(n).reshape(shape) * 0.5 - n / 4.0, requires_grad=True)


# name: (fn, input shapes, low, high)
OPS = {
    "add": (lambda a, b: a + b, [(2, 3), (3,)], -2, 2),
    "add_alpha": (lambda a, b: rg.add(a, b, alpha=-1.5), [(2, 3), (2, 1)], -2, 2),
    "add_scalar": (lambda a: 2.5 + a + 1, [(2, 3)], -2, 2),
    "sub": (lambda a, b: a - b, [(3, 1), (1, 2)], -2, 2),
    "rsub": (lambda a: 1.0 - a, [(3,)], -2, 2),
    "mul": (lambda a, b: a * b, [(2, 3), (2, 3)], -2, 2),
    "mul_broadcast": (lambda a, b: a * b, [(2, 1, 3), (4, 1)], -2, 2),
    "mul_scalar": (lambda a: a * -3.0, [(4,)], -2, 2),
    "div": (lambda a, b: a / b, [(2, 3), (3,)], 0.5, 2),
    "rdiv": (lambda a: 2.0 / a, [(3,)], 0.5, 2),
    "neg": (lambda a: -a, [(2, 2)], -2, 2),
    "pow_scalar": (lambda a: a**3, [(3,)], -2, 2),
    "pow_frac": (lambda a: a**0.5, [(3,)], 0.5, 2),
    "pow_neg": (lambda a: a**-2, [(3,)], 0.5, 2),
    "pow_tensor": (lambda a, b: a**b, [(2, 3), (3,)], 0.5, 2),
    "rpow": (lambda a: 2.0**a, [(3,)], -2, 2),
    "matmul_dot": (lambda a, b: a @ b, [(3,), (3,)], -1, 1),
    "matmul_mv": (lambda a, b: a @ b, [(2, 3), (3,)], -1, 1),
    "matmul_vm": (lambda a, b: a @ b, [(3,), (3, 2)], -1, 1),
    "matmul_mm": (lambda a, b: a @ b, [(2, 3), (3, 2)], -1, 1),
    "matmul_bmm": (lambda a, b: a @ b, [(2, 2, 3), (2, 3, 2)], -1, 1),
    "matmul_broadcast": (lambda a, b: a @ b, [(2, 1, 2, 3), (2, 3, 2)], -1, 1),
    "matmul_2d_3d": (lambda a, b: rg.matmul(a, b), [(2, 3), (2, 3, 2)], -1, 1),
    "sum": (lambda a: a.sum(), [(2, 3)], -2, 2),
    "sum_dim": (lambda a: a.sum(-1), [(2, 3)], -2, 2),
    "sum_dims_keepdim": (lambda a: a.sum((0, 2), keepdim=True), [(2, 3, 2)], -2, 2),
    "mean": (lambda a: a.mean(), [(2, 3)], -2, 2),
    "mean_dim": (lambda a: a.mean(0, keepdim=True), [(2, 3)], -2, 2),
    "mean_dims": (lambda a: a.mean((-1, 0)), [(2, 3, 2)], -2, 2),
    "exp": (lambda a: a.exp(), [(2, 3)], -2, 2),
    "log": (lambda a: a.log(), [(2, 3)], 0.5, 3),
    "sqrt": (lambda a: a.sqrt(), [(2, 3)], 0.5, 3),
    "sigmoid": (lambda a: a.sigmoid(), [(2, 3)], -3, 3),
    "tanh": (lambda a: a.tanh(), [(2, 3)], -2, 2),
    "reshape": (lambda a: a.reshape(3, 2) * 2, [(2, 3)], -2, 2),
    "view": (lambda a: a.view(-1), [(2, 3)], -2, 2),
    "reshape_noncontiguous": (lambda a: a.t().reshape(-1), [(2, 3)], -2, 2),
    "transpose": (lambda a: a.transpose(0, 2), [(2, 3, 2)], -2, 2),
    "t": (lambda a: a.t(), [(2, 3)], -2, 2),
    "permute": (lambda a: a.permute(2, 0, 1), [(2, 3, 2)], -2, 2),
    "unsqueeze": (lambda a: a.unsqueeze(1), [(2, 3)], -2, 2),
    "squeeze": (lambda a: a.squeeze(), [(2, 1, 3, 1)], -2, 2),
    "squeeze_dim": (lambda a: a.squeeze(1), [(2, 1, 3)], -2, 2),
    "expand": (lambda a: a.expand(2, 3, 4), [(3, 1)], -2, 2),
    "flatten": (lambda a: a.flatten(1), [(2, 2, 2)], -2, 2),
    "getitem_basic": (lambda a: a[1:, None, ::2, -1], [(3, 4, 2)], -2, 2),
    "getitem_int_ellipsis": (lambda a: a[0, ...], [(2, 3)], -2, 2),
    "getitem_list_repeats": (lambda a: a[[0, 0, 2, 0]], [(3, 2)], -2, 2),
    "getitem_two_lists": (lambda a: a[[0, 1, 1], [1, 1, 0]], [(2, 2)], -2, 2),
    "getitem_mask": (lambda a: a[rg.tensor([True, False, True])], [(3, 2)], -2, 2),
    "cat": (lambda a, b: rg.cat([a, b, a], 1), [(2, 1), (2, 3)], -2, 2),
    "stack": (lambda a, b: rg.stack([a, b], -1), [(2, 3), (2, 3)], -2, 2),
    "where": (lambda a, b: rg.where(rg.tensor([True, False, True]), a, b), [(2, 3), (3,)], -2, 2),
    "where_scalar": (lambda a: rg.where(rg.tensor([True, False]), a, 0.0), [(2,)], -2, 2),
    "clone": (lambda a: a.clone(), [(2, 3)], -2, 2),
    "contiguous": (lambda a: a.t().contiguous(), [(2, 3)], -2, 2),
    "to_float64": (lambda a: a.to(rg.float64) * 1, [(3,)], -2, 2),
    "inplace_chain": (lambda a, b: (a * 1).add_(b).mul_(b).sub_(0.5).div_(b), [(3,), (3,)], 0.5,
                      2),
    "inplace_operators": (lambda a, b: _inplace_operators(a, b), [(3,), (3,)], 0.5, 2),
}


def _inplace_operators(a, b):
    y = a * 2
    y += b
    y *= b
    y -= a
    y /= b
    return y


@pytest.mark.parametrize("op", sorted(OPS))
def test_gradcheck_op_analytical_matches_numerical(op):
    fn, shapes, low, high = OPS[op]
    assert gradcheck(fn, _inputs(shapes, low, high))


KINKED = {
    "abs": lambda a: a.abs(),
    "relu": lambda a: a.relu(),
    "clamp_both": lambda a: a.clamp(-1.0, 1.0),
    "clamp_min": lambda a: a.clamp(min=0.0),
    "clamp_max": lambda a: a.clamp(max=0.0),
    "clamp_inplace": lambda a: (a * 1).clamp_(-1.0, 1.0),
    "maximum_scalar_like": lambda a: rg.maximum(a, rg.zeros(a.shape, dtype=a.dtype)),
}


@pytest.mark.parametrize("op", sorted(KINKED))
def test_gradcheck_kinked_op_away_from_kink_matches_numerical(op):
    x = _away_from_zero((3, 4))
    # keep clamp's inputs away from its bounds +-1 as well
    with rg.no_grad():
        x.mul_(rg.where((x.abs() - 1).abs() < 0.2, 1.5, 1.0))
    assert gradcheck(KINKED[op], (x,))


def test_gradcheck_clamp_tensor_bounds_matches_numerical():
    x = _distinct((3, 4))
    lo = rg.tensor(np.full((4,), -1.1), requires_grad=True)
    hi = rg.tensor(np.full((3, 1), 0.9), requires_grad=True)
    assert gradcheck(lambda a, b, c: a.clamp(b, c), (x, lo, hi))


def test_gradcheck_maximum_minimum_distinct_values_matches_numerical():
    a = _distinct((3, 4), seed=1)
    b = rg.tensor(a.detach().numpy() + 0.25, requires_grad=True)
    b_shuffled = rg.tensor(np.random.default_rng(2).permutation(b.detach().numpy().ravel())
                           .reshape(3, 4), requires_grad=True)
    assert gradcheck(rg.maximum, (a, b_shuffled))
    assert gradcheck(rg.minimum, (a, b_shuffled))


@pytest.mark.parametrize("op", ["max", "min"])
def test_gradcheck_max_min_no_ties_matches_numerical(op):
    x = _distinct((3, 4))
    assert gradcheck(lambda a: getattr(a, op)(), (x,))
    assert gradcheck(lambda a: getattr(a, op)(1).values, (x,))
    assert gradcheck(lambda a: getattr(a, op)(0, keepdim=True)[0], (x,))


def test_gradcheck_composite_expression_matches_numerical():
    a, b = _inputs([(2, 3), (3, 2)], 0.5, 1.5)

    def fn(x, y):
        z = (x @ y).tanh().exp() + x.sum(1, keepdim=True).sigmoid()
        return (z / (z.mean() + 1)).log()

    assert gradcheck(fn, (a, b))


def test_gradcheck_multiple_outputs_checked_each():
    (a,) = _inputs([(2, 3)], -1, 1)
    assert gradcheck(lambda x: (x.exp(), x * x, x.sum(0)), (a,))


# ---- a wrong derivative must be caught -------------------------------------------------
# a node of the test's own (every recorded node is a spec's)
_BAD = node("BadBackward0", lambda g, saved, ctx: g * 3.0)
_GOOD = node("GoodBackward0", lambda g, saved, ctx: g * 3.0)


def _bad_identity(x):
    """y = x, whose recorded backward claims dy/dx = 3 (the true derivative is 1)."""
    return _BAD.record(x._data.copy(), (x,))


def test_gradcheck_wrong_derivative_returns_false_without_raise():
    (x,) = _inputs([(3,)], -1, 1)
    y = _bad_identity(x)
    assert y.grad_fn.name() == "BadBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy())
    assert gradcheck(_bad_identity, (x,), raise_exception=False) is False


def test_gradcheck_wrong_derivative_raises_with_jacobians():
    (x,) = _inputs([(3,)], -1, 1)
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(_bad_identity, (x,))
    with pytest.raises(RuntimeError):  # GradcheckError is a RuntimeError, as torch's
        gradcheck(lambda t: _bad_identity(t) * 2 + t, (x,))


def test_gradcheck_wrong_derivative_in_one_of_two_inputs_caught():
    a, b = _inputs([(2,), (2,)], -1, 1)
    assert gradcheck(lambda p, q: p * q, (a, b))
    assert gradcheck(lambda p, q: _bad_identity(p) * q, (a, b), raise_exception=False) is False


def test_gradcheck_correct_custom_backward_passes():
    (x,) = _inputs([(3,)], -1, 1)

    def good(t):
        return _GOOD.record(t._data * 3.0, (t,))

    assert gradcheck(good, (x,))


def test_gradcheck_float32_input_warns_like_torch():
    x = rg.tensor(np.array([0.5, 1.0], dtype=np.float32), requires_grad=True)
    with pytest.warns(UserWarning, match="double precision"):
        assert gradcheck(lambda t: t * 2, (x,), eps=1e-2, atol=1e-2, rtol=1e-2)


def test_gradcheck_leaves_inputs_unchanged():
    (x,) = _inputs([(2, 3)], -1, 1)
    before = x.detach().numpy().copy()
    gradcheck(lambda t: t.exp().sum(0), (x,))
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x.grad is None
