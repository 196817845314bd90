"""Reentrant backward: backward or autograd.grad called from inside a running backward (a
tensor hook, a node hook, a custom Function's backward) runs to completion, as torch."""

from __future__ import annotations

import threading

import numpy as np

from ..parity import f64, parity


def test_autograd_grad_inside_tensor_hook_matches_torch():
    def run(lib):
        x = f64(lib, [0.5, 1.5], True)
        side = f64(lib, [2.0, -1.0], True)
        seen = []

        def hook(g):
            with lib.enable_grad():  # backward runs hooks with grad mode = create_graph
                (inner,) = lib.autograd.grad((side ** 3).sum(), side)
            seen.append(inner)
            return g * 2

        y = x.exp()
        y.register_hook(hook)
        y.sum().backward()
        return x.grad, seen

    parity(run)


def test_backward_inside_custom_function_backward_matches_torch():
    def run(lib):
        w = f64(lib, [0.3, -0.7], True)

        class Inner(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a.detach() * 1

            @staticmethod
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                with lib.enable_grad():
                    a2 = a.detach().requires_grad_()
                    out = (a2.sin() * w).sum()
                out.backward()  # reentrant: accumulates into w.grad
                return g * a2.grad

        x = f64(lib, [1.0, 2.0], True)
        Inner.apply(x).sum().backward()
        return x.grad, w.grad

    parity(run)


def test_nested_reentrant_backward_three_levels_deep():
    def run(lib):
        x = f64(lib, [0.2, 0.4], True)
        depth = []

        def level(n):
            t = f64(lib, [1.0, 2.0], True)
            with lib.enable_grad():
                y = t * (n + 1)
                if n < 3:
                    y.register_hook(lambda g: (level(n + 1), None)[1])
                y.sum().backward()
            depth.append(n)

        y = x * 3
        y.register_hook(lambda g: (level(0), None)[1])
        y.sum().backward()
        return depth, x.grad

    depth, _ = parity(run)
    assert depth == [3, 2, 1, 0]


def test_reentrant_backward_from_node_hook_and_other_thread_does_not_deadlock(rg):
    x = f64(rg, [1.0, 2.0], True)
    results = []

    def post(gi, go):
        t = f64(rg, [3.0], True)
        with rg.enable_grad():
            (t * t).sum().backward()
        results.append(t.grad.item())

    y = x.exp()
    y.grad_fn.register_hook(post)

    def worker():
        z = f64(rg, [1.0], True)
        for _ in range(20):
            (z * 2).sum().backward()
        results.append(z.grad.item())

    th = threading.Thread(target=worker)
    th.start()
    y.sum().backward()
    th.join(timeout=30)
    assert not th.is_alive()
    assert sorted(results) == [6.0, 40.0]
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
