"""The crossing into the engine (`_core.run_backward`) and the phrases the engine defines once."""

from __future__ import annotations

import pytest


def test_run_backward_options_are_keyword_only(rg):
    x = rg.ones(2, requires_grad=True)
    y = (x * 2).sum()

    with pytest.raises(TypeError):
        rg._core.run_backward((y,), (rg.ones(()),), False, False, (), True)
    rg._core.run_backward((y,), (rg.ones(()),), keep_graph=False, accumulate_grad=True)

    assert x.grad.tolist() == [2.0, 2.0]


def test_run_backward_without_accumulate_grad_returns_the_input_grads(rg):
    x = rg.ones(2, requires_grad=True)
    y = (x * 3).sum()

    (g,) = rg._core.run_backward((y,), (rg.ones(()),), inputs=(x,), accumulate_grad=False)

    assert g.tolist() == [3.0, 3.0] and x.grad is None


def test_second_backward_phrase_is_the_engines_for_nodes_and_functions(rg):
    class Square(rg.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = rg.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError) as engine_error:
        y.backward()
    z = Square.apply(x).sum()
    z.backward()
    with pytest.raises(RuntimeError) as function_error:
        _ = z.grad_fn.next_functions[0][0].saved_tensors

    assert str(engine_error.value) == rg._core.SECOND_BACKWARD
    assert str(function_error.value) == rg._core.SECOND_BACKWARD
    assert rg._core.SECOND_BACKWARD.startswith(
        "Trying to backward through the graph a second time"
    )
