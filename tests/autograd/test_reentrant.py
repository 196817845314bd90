"""Reentrant backward: backward or autograd.grad called from inside a running backward (a
tensor hook, a node hook, a custom Function's backward) runs to completion, as torch."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

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


# A thread with a 256 KiB stack nests reentrant backwards until one is refused (or the process
# crashes: torch's does, after about 45 levels). Run in a subprocess so that a crash fails this
# test instead of ending the test run.
_DEEP_REENTRANT = r"""
import sys, threading
import rustgrad as lib

sys.setrecursionlimit(100_000)  # the C stack, not Python's frame count, must be the limit
how = sys.argv[1]
reached = []


def level(n):
    t = lib.tensor([1.0, 2.0], requires_grad=True)
    with lib.enable_grad():
        y = (t * 2).exp()
        reached.append(n)
        if n < 10_000:
            y.register_hook(lambda g: (level(n + 1), g)[1])
        if how == "grad":
            lib.autograd.grad(y.sum(), t)
        else:
            y.sum().backward()


def main():
    try:
        level(0)
        print("no error")
    except RuntimeError as e:
        print(type(e).__name__, max(reached), "|", e)
    # the thread is usable again: a nesting of ten levels runs to the end
    reached.clear()
    t = lib.tensor([1.0], requires_grad=True)

    def shallow(n):
        u = lib.tensor([1.0], requires_grad=True)
        with lib.enable_grad():
            z = u * 3
            if n < 10:
                z.register_hook(lambda g: (shallow(n + 1), g)[1])
            z.sum().backward()
        reached.append(n)

    shallow(0)
    (t * 2).sum().backward()
    print("after", len(reached), t.grad.item())


threading.stack_size(256 * 1024)
th = threading.Thread(target=main)
th.start()
th.join()
"""


@pytest.mark.parametrize("how", ["backward", "grad"])
def test_deep_reentrant_backward_on_a_small_stack_raises_instead_of_crashing(how):
    out = subprocess.run([sys.executable, "-c", _DEEP_REENTRANT, how], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, f"the process crashed (rc {out.returncode}): {out.stderr[-2000:]}"
    first, after = out.stdout.strip().splitlines()
    kind, depth, message = first.split(" ", 2)
    # RecursionError, a RuntimeError (CPython's own C-stack error is a RecursionError too)
    assert kind == "RecursionError", first
    assert "reentrant backward" in message and "stack" in message, message
    assert "threading.stack_size" in message
    # not refused early: torch's engine crashes at about 45 levels on this stack
    assert int(depth) >= 30, first
    assert after == "after 11 2.0"
