"""Second-order parity: the backward formulas are themselves differentiable rustgrad ops, so
gradients taken with create_graph=True differentiate again like torch's."""

from __future__ import annotations

import numpy as np
import pytest

from ..parity import check_double_backward

# name: (fn, shapes, low, high)
OPS = {
    "mul": (lambda lib, a, b: a * b, [(2, 3), (3,)], -2, 2),
    "div": (lambda lib, a, b: a / b, [(2, 3), (3,)], 0.5, 2),
    "rdiv": (lambda lib, a: 2.0 / a, [(3,)], 0.5, 2),
    "add_sub": (lambda lib, a, b: (a + b) * (a - b), [(3,), (3,)], -2, 2),
    "pow_scalar": (lambda lib, a: a**3, [(3,)], -2, 2),
    "pow_tensor": (lambda lib, a, b: a**b, [(3,), (3,)], 0.5, 2),
    "rpow": (lambda lib, a: 2.0**a, [(3,)], -2, 2),
    "exp_log_sqrt": (lambda lib, a: a.exp() + a.log() * a.sqrt(), [(3,)], 0.5, 2),
    "sigmoid_tanh": (lambda lib, a: a.sigmoid() * a.tanh(), [(3,)], -2, 2),
    "abs_relu_clamp": (lambda lib, a: a.abs() * a + a.relu() * a + a.clamp(-1, 1) * a,
                       [(4,)], -2, 2),
    "matmul": (lambda lib, a, b: (a @ b) * (a @ b), [(2, 3), (3, 2)], -1, 1),
    "matmul_batched": (lambda lib, a, b: (a @ b) ** 2, [(2, 2, 3), (3,)], -1, 1),
    "sum_mean": (lambda lib, a: a.sum(0) * a.mean(1, keepdim=True), [(2, 3)], -2, 2),
    "max_min": (lambda lib, a: a.max() * a + a.min(1).values.unsqueeze(1) * a, [(2, 3)], -2, 2),
    "shape_ops": (lambda lib, a: (a.t().reshape(-1) ** 2).unsqueeze(0).expand(2, 6)
                  .permute(1, 0).flatten(), [(2, 3)], -2, 2),
    "indexing": (lambda lib, a: a[[0, 0, 1]][:, ::2] ** 2 + a[a > 0].sum(), [(2, 3)], -2, 2),
    "cat_stack": (lambda lib, a, b: lib.cat([a * b, a]) * lib.stack([b, b, b, a, a, a])[:, 0],
                  [(3,), (3,)], -2, 2),
    "where_maximum": (lambda lib, a, b: lib.where(a > 0, a * a, b * b) * lib.maximum(a, b),
                      [(4,), (4,)], -2, 2),
    "inplace": (lambda lib, a, b: (a * 1).mul_(b).add_(a).div_(b), [(3,), (3,)], 0.5, 2),
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_double_backward_op_matches_torch(op, device):
    fn, shapes, low, high = OPS[op]
    check_double_backward(fn, *shapes, low=low, high=high, device=device)


def test_double_backward_composite_matches_torch(device):
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])

    def fn(lib, a, b):
        h = (a @ b).tanh()
        return (h * h.sigmoid()).sum(1) / (a.exp().mean() + 1)

    check_double_backward(fn, x, (3, 3), device=device)
