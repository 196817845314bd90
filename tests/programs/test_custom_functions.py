"""Custom autograd Functions: save_for_backward, needs_input_grad, mark_non_differentiable,
once_differentiable, gradcheck; a gradient-reversal layer, the setup_context style, and
backward(inputs=...)."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, data, err_head, grads_of, program, programs_in, seed_params


@program
def custom_function(torch):
    log = True

    class ScaledTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            y = torch.tanh(x) * scale
            ctx.save_for_backward(x, scale)
            return y

        @staticmethod
        def backward(ctx, grad_out):
            x, scale = ctx.saved_tensors
            if log:
                print("needs", ctx.needs_input_grad)
            dx = dscale = None
            if ctx.needs_input_grad[0]:
                dx = grad_out * scale * (1 - torch.tanh(x) ** 2)
            if ctx.needs_input_grad[1]:
                dscale = (grad_out * torch.tanh(x)).sum().reshape(scale.shape)
            return dx, dscale

    class SortWithIndex(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            values, idx = torch.sort(x)
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)
            return values, idx

        @staticmethod
        def backward(ctx, grad_values, grad_idx):
            (idx,) = ctx.saved_tensors
            grad = torch.zeros_like(grad_values)
            grad.scatter_(0, idx, grad_values)
            return grad

    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g

    x = torch.tensor([0.3, -1.2, 0.7], requires_grad=True)
    scale = torch.tensor([2.0], requires_grad=True)
    y = ScaledTanh.apply(x, scale)
    print(type(y.grad_fn).__name__.endswith("Backward"), y.requires_grad)
    y.sum().backward()

    fixed = torch.tensor([2.0])
    x2 = torch.tensor([0.5, 1.5], requires_grad=True)
    ScaledTanh.apply(x2, fixed).sum().backward()

    v = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
    values, idx = SortWithIndex.apply(v)
    print(values.requires_grad, idx.requires_grad, idx.dtype)
    (values * torch.tensor([1.0, 10.0, 100.0])).sum().backward()

    c = torch.tensor([1.0, 2.0], requires_grad=True)
    out = Cube.apply(c).sum()
    (gc,) = torch.autograd.grad(out, c, create_graph=True)
    twice = err_head(lambda: gc.sum().backward(), 8)

    log = False  # gradcheck's number of backward calls is an implementation detail
    check = torch.autograd.gradcheck(
        ScaledTanh.apply,
        (torch.tensor([0.2, -0.4], dtype=torch.float64, requires_grad=True),
         torch.tensor([1.5], dtype=torch.float64, requires_grad=True)))
    return {"y": y, "x_grad": x.grad, "scale_grad": scale.grad, "x2_grad": x2.grad,
            "v_grad": v.grad, "idx": idx, "gc": gc.detach(), "twice": twice, "check": check}


@program
def gradient_reversal_and_new_style_function(torch):
    class GradReverse(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, alpha):
            ctx.alpha = alpha
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output.neg() * ctx.alpha, None

    class Clamp(torch.autograd.Function):
        # the functorch-compatible style: forward without ctx, then setup_context
        @staticmethod
        def forward(x, lo, hi):
            return x.clamp(lo, hi)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, lo, hi = inputs
            ctx.save_for_backward((x >= lo) & (x <= hi))

        @staticmethod
        def backward(ctx, grad):
            (mask,) = ctx.saved_tensors
            return grad * mask, None, None

    nn = torch.nn
    feat = seed_params(torch, nn.Linear(3, 4), 68)
    label_head = seed_params(torch, nn.Linear(4, 2), 69)
    domain_head = seed_params(torch, nn.Linear(4, 1), 70)
    x = torch.from_numpy(data((5, 3), 71))
    h = feat(x)
    loss = label_head(h).pow(2).mean() + domain_head(GradReverse.apply(h, 0.5)).mean()
    loss.backward()

    v = torch.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    Clamp.apply(v, -1.0, 1.0).sum().backward()

    # backward(inputs=...) accumulates only into the listed leaves
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    (a * b).sum().backward(inputs=[a])
    return {"feat": grads_of(feat), "domain": grads_of(domain_head), "v_grad": v.grad,
            "a_grad": a.grad, "b_grad": b.grad}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
