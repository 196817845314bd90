"""gradgradcheck on the ops that have double backward, and on a case it must reject."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad as rg

RNG = np.random.default_rng(0)


def T(*shape, low=-1.0, high=1.0):
    return rg.tensor(RNG.uniform(low, high, shape), requires_grad=True)


# name: (fn, inputs)
OPS = {
    "mul_broadcast": (lambda a, b: a * b, lambda: [T(2, 3), T(3)]),
    "div": (lambda a, b: a / b, lambda: [T(3), T(3, low=0.5, high=2)]),
    "pow_scalar": (lambda a: a ** 3, lambda: [T(3)]),
    "pow_tensor": (lambda a, b: a ** b, lambda: [T(3, low=0.5, high=2), T(3)]),
    "exp_log_sqrt": (lambda a: a.exp() + a.log() + a.sqrt(), lambda: [T(3, low=0.5, high=2)]),
    "tanh_sigmoid": (lambda a: a.tanh() * a.sigmoid(), lambda: [T(4)]),
    "sin_cos": (lambda a: a.sin() * a.cos(), lambda: [T(3)]),
    "matmul": (lambda a, b: a @ b, lambda: [T(2, 3), T(3, 2)]),
    "sum_mean": (lambda a: a.sum(0) * a.mean(1, keepdim=True), lambda: [T(2, 3)]),
    "softmax": (lambda a: a.softmax(-1), lambda: [T(2, 3)]),
    "logsumexp": (lambda a: a.logsumexp(1), lambda: [T(2, 3)]),
    "norm": (lambda a: a.norm(), lambda: [T(3)]),
    "indexing": (lambda a: a[[0, 0, 1]][:, ::2] ** 2, lambda: [T(2, 3)]),
    "cat_stack": (lambda a, b: rg.cat([a * b, a * a]) * rg.stack([b, a]).reshape(-1),
                  lambda: [T(3), T(3)]),
    "where_maximum": (lambda a, b: rg.where(a > 0, a * a, b * b) * rg.maximum(a, b),
                      lambda: [T(4), T(4)]),
    "shape_ops": (lambda a: (a.t().reshape(-1) ** 2).unsqueeze(0).expand(2, 6), lambda: [T(2, 3)]),
    "abs_relu_clamp": (lambda a: a.abs() * a + a.relu() * a + a.clamp(-0.5, 0.5) * a,
                       lambda: [T(4)]),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_gradgradcheck_op_passes(name):
    fn, make = OPS[name]
    inputs = make()
    assert rg.autograd.gradcheck(fn, inputs)
    assert rg.autograd.gradgradcheck(fn, inputs)


def _first_order_only():
    """A custom Function with a right first derivative whose backward hides the dependence on
    its input from double backward (it computes through .detach())."""

    class Cube(rg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x.detach() ** 2

    return Cube


def test_gradgradcheck_rejects_wrong_second_derivative():
    cube = _first_order_only()
    x = T(3)
    assert rg.autograd.gradcheck(cube.apply, [x])
    assert rg.autograd.gradgradcheck(cube.apply, [x], raise_exception=False) is False
    with pytest.raises(rg.autograd.gradcheck_module.GradcheckError
                       if hasattr(rg.autograd, "gradcheck_module") else RuntimeError,
                       match="Jacobian mismatch"):
        rg.autograd.gradgradcheck(cube.apply, [x])


def test_gradgradcheck_with_given_grad_outputs_matches_torch_verdict():
    import torch

    a = RNG.uniform(-1, 1, (3,))
    go = RNG.uniform(-1, 1, (3,))
    for lib in (torch, rg):
        x = lib.tensor(a, requires_grad=True)
        g = lib.tensor(go, requires_grad=True)
        assert lib.autograd.gradgradcheck(lambda t: t.exp() * t, [x], [g])
