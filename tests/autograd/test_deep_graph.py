"""Deep graphs: backward and destruction of a 100,000-op chain neither recurse nor crash
(rustgrad only: the engine and the iterative drop are rustgrad's own)."""

from __future__ import annotations

import gc
import sys
import weakref

N = 100_000


def _chain(rg, n, saving):
    x = rg.tensor([1.0], requires_grad=True)
    one = rg.tensor([1.0])
    y = x
    for _ in range(n):
        y = y * one if saving else y + 0.0  # `y * one` saves y in every node
    return x, y


def test_deep_chain_backward_gives_exact_grad(rg):
    limit = sys.getrecursionlimit()
    x, y = _chain(rg, N, saving=True)

    y.backward()

    assert x.grad.tolist() == [1.0]
    assert sys.getrecursionlimit() == limit


def test_deep_chain_freed_after_backward(rg):
    x, y = _chain(rg, N, saving=True)
    y.backward()
    head = weakref.ref(y)
    leaf = weakref.ref(x)  # the chain's first node holds the leaf (through its AccumulateGrad)

    del x
    assert leaf() is not None
    del y
    gc.collect()

    assert head() is None
    assert leaf() is None


def test_deep_chain_freed_without_backward(rg):
    x, y = _chain(rg, N, saving=True)
    leaf = weakref.ref(x)

    del x
    assert leaf() is not None
    del y
    gc.collect()

    assert leaf() is None


def test_deep_chain_retain_graph_backward_twice(rg):
    x, y = _chain(rg, N, saving=False)

    y.backward(retain_graph=True)
    y.backward()

    assert x.grad.tolist() == [2.0]


def test_deep_chain_with_hooks_runs_every_hook(rg):
    x = rg.tensor([1.0], requires_grad=True)
    calls = []
    y = x
    for i in range(N // 10):
        y = y + 0.0
        if i % 1000 == 0:
            y.register_hook(lambda g: calls.append(g.item()))

    y.backward()

    assert len(calls) == N // 10 // 1000
    assert x.grad.tolist() == [1.0]
