"""Review regressions: code that runs while rustgrad's Rust side holds a lock or a borrow (a
`__del__`, a weakref callback, the garbage collector) neither hangs nor finds the tensor borrowed,
and the cycles a training step makes (create_graph=True's param <-> grad) are collected, while
what is still in use is never cleared."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import warnings
import weakref

import pytest
import rustgrad as rg


def _run_isolated(code: str) -> str:
    """Runs `code` in a fresh interpreter (a deadlock there cannot hang the suite)."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# ---- locks held while Python code runs -------------------------------------------------------
def test_removing_a_hook_whose_del_registers_a_hook_on_the_same_tensor_does_not_hang():
    out = _run_isolated(
        """
        import rustgrad as rg
        x = rg.ones(3, requires_grad=True)
        class Hook:
            def __call__(self, g):
                return g
            def __del__(self):
                x.register_hook(lambda g: g * 2)
        handle = x.register_hook(Hook())
        handle.remove()
        (x * 1).sum().backward()
        print(x.grad.tolist())
        """
    )
    assert out.strip() == "[2.0, 2.0, 2.0]"


def test_garbage_collection_while_describing_a_modified_saved_tensor_does_not_hang():
    # The error message is built by Python code; a collection there traverses the node whose
    # saved values are being unpacked.
    out = _run_isolated(
        """
        import gc
        import rustgrad as rg
        from rustgrad._ops import _util
        describe = _util.describe
        def collecting(array):
            gc.collect()
            return "tensor"
        describe.__code__ = collecting.__code__
        a = rg.ones(3, requires_grad=True).clone()
        y = a * a
        fn = y.grad_fn
        del y
        a.add_(1)
        try:
            fn._saved_values()
        except RuntimeError as e:
            print("inplace" in str(e))
        """
    )
    assert out.strip() == "True"


# ---- borrows held while Python code runs ------------------------------------------------------
def test_finalizer_of_the_old_grad_can_use_the_tensor_while_grad_is_set():
    w = rg.ones(3, requires_grad=True)
    g = rg.ones(3)
    w.grad = g
    seen = []
    weakref.finalize(g, lambda: seen.append((w.grad, w.requires_grad, w.register_hook(lambda q: q))))
    del g
    w.grad = None
    assert len(seen) == 1
    assert seen[0][0] is None and seen[0][1] is True


def test_finalizer_of_the_old_history_can_use_the_tensor_during_detach_():
    x = rg.ones(3, requires_grad=True)
    t = rg.ones(3)
    y = x * t  # MulBackward0 holds `t` alone once the name goes
    seen = []
    weakref.finalize(t, lambda: seen.append((y.is_leaf, y.requires_grad, y.grad_fn)))
    del t
    y.detach_()
    assert seen == [(True, False, None)]


def test_finalizer_of_the_old_history_can_use_the_tensor_during_an_inplace_op():
    x = rg.ones(3, requires_grad=True)
    t = rg.ones(3)
    y = x * t
    y.retain_grad()
    seen = []
    weakref.finalize(t, lambda: seen.append((y._version, y.retains_grad)))
    del t
    y.mul_(3)
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
    assert y.grad.tolist() == [1.0, 1.0, 1.0]
    y.detach_()
    assert seen == [(1, True)]


def test_finalizer_of_the_old_data_can_use_the_tensor():
    x = rg.ones(3, requires_grad=True)
    old = x.data
    seen = []
    weakref.finalize(old, lambda: seen.append(x.requires_grad))
    del old
    x.data = rg.zeros(3)
    gc.collect()
    assert x.tolist() == [0.0, 0.0, 0.0]


# ---- create_graph=True: the param <-> grad cycle is collected --------------------------------
def _dies(make):
    ref = make()
    gc.collect()
    return ref() is None


@pytest.mark.parametrize(
    "loss",
    [
        lambda w: (w * w).sum(),
        lambda w: (w * w * w).sum(),
        lambda w: (w.exp() * 2).tanh().sum(),
        lambda w: ((w * 3).sigmoid() * w).sum(),
    ],
)
def test_create_graph_param_grad_cycle_is_collected(loss):
    def make():
        w = rg.ones(4, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss(w).backward(create_graph=True)
        assert w.grad is not None and w.grad.grad_fn is not None
        return weakref.ref(w)

    assert _dies(make)


def _flat(step, n=25):
    """live_storages() is the same before and after n more steps (each collected)."""
    step()
    gc.collect()
    before = rg.memory.live_storages()
    for _ in range(n):
        step()
    gc.collect()
    return rg.memory.live_storages() - before


class _Square(rg.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 2 * a * g


def test_training_steps_with_create_graph_hooks_and_functions_stay_flat():
    def step():
        w = rg.nn.Parameter(rg.ones(8))
        b = rg.nn.Parameter(rg.zeros(8))
        x = rg.ones(8)
        h = _Square.apply(w * x + b)
        h.retain_grad()
        w.register_hook(lambda g: g * 1.0)
        b.register_post_accumulate_grad_hook(lambda t: None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (h.tanh() * w).sum().backward(create_graph=True)
        penalty = (w.grad * w.grad).sum() + (b.grad * b.grad).sum()
        penalty.backward()

    assert _flat(step) == 0


def test_training_steps_with_saved_tensors_hooks_and_create_graph_stay_flat():
    def step():
        w = rg.ones(6, requires_grad=True)
        with rg.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
            y = (w * w).exp().sum()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y.backward(create_graph=True)

    assert _flat(step) == 0


def test_training_steps_with_hooks_and_retain_grad_stay_flat():
    def step():
        w = rg.ones(4, requires_grad=True)
        y = w * 3
        y.retain_grad()
        y.register_hook(lambda g: g + y.detach())
        y.grad_fn.register_hook(lambda gi, go: None)
        y.grad_fn.register_prehook(lambda go: None)
        w.register_post_accumulate_grad_hook(lambda t: t)
        (y.exp() * w).sum().backward()

    assert _flat(step) == 0


# ---- nothing still in use is cleared ----------------------------------------------------------
def test_collecting_the_param_grad_cycle_keeps_tensors_the_user_still_holds():
    def make():
        w = rg.ones(3, requires_grad=True)
        a = w * w
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (a * w).sum().backward(create_graph=True)
        return weakref.ref(w), a, w.grad

    ref, a, grad = make()
    gc.collect()
    # `grad`'s graph holds w (and `a`): all still usable.
    assert ref() is not None
    assert a.grad_fn.name() == "MulBackward0"
    assert a.tolist() == [1.0, 1.0, 1.0]
    assert grad.tolist() == [3.0, 3.0, 3.0]
    grad.sum().backward()
    assert ref().grad is not None
    del a, grad
    gc.collect()
    assert ref() is None


def test_collecting_keeps_a_saved_tensor_the_user_still_holds():
    def make():
        w = rg.ones(3, requires_grad=True)
        a = (w * 2).exp()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (a * a).sum().backward(create_graph=True)
        return weakref.ref(w), a

    for _ in range(4):
        ref, a = make()
        gc.collect()
        assert a.grad_fn.name() == "ExpBackward0"
        assert a.grad_fn.next_functions[0][0].name() == "MulBackward0"
        (a.sum()).backward()
        assert ref() is not None and ref().grad is not None
        del a
        gc.collect()
        assert ref() is None


def test_collections_never_clear_what_the_user_still_holds_stress():
    """Random graphs with create_graph=True cycles; random parts kept: after gc.collect() every
    kept tensor still has its history and values, and backward through it still works."""
    import random

    rng = random.Random(0)
    ops = [
        lambda t, w: t * w,
        lambda t, w: (t * 0.1).exp() * w,
        lambda t, w: t.tanh() + w,
        lambda t, w: (t * w).sigmoid(),
    ]
    for _ in range(12):  # each full collection costs ~0.1 s in the whole suite
        w = rg.ones(3, requires_grad=True)
        t = w * 1.5
        chain = [t]
        for _ in range(rng.randint(1, 6)):
            t = rng.choice(ops)(t, w)
            chain.append(t)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t.sum().backward(create_graph=True)
        kept = [c for c in chain if rng.random() < 0.5]
        grad = w.grad if rng.random() < 0.5 else None
        handles = [c.grad_fn for c in chain if rng.random() < 0.3]
        before = [(c.grad_fn.name(), c.tolist()) for c in kept]
        ref = weakref.ref(w)
        del w, t, chain
        gc.collect()
        assert [(c.grad_fn.name(), c.tolist()) for c in kept] == before
        c = h = f = None
        for h in handles:
            assert h.name().endswith("Backward0")
            for f, _ in h.next_functions:
                assert f is None or f.name()
        for c in kept:
            c.sum().backward(retain_graph=True)
        if grad is not None:
            assert grad.grad_fn is not None
            grad.sum().backward()
        if kept or grad is not None or handles:
            assert ref() is not None
            assert ref().grad is not None
        c = h = f = None  # the loop variables hold graph objects too
        del kept, grad, handles, c, h, f
        gc.collect()
        assert ref() is None
