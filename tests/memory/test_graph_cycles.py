"""Cycles that run through the graph itself (see Note [GC traversal] in rust/python/src/gc.rs):
a grad_fn kept on a tensor its own graph saves, identity saved_tensors_hooks (the graph holds the
tensors it produced) under create_graph=True, create_graph=True's param <-> grad cycle (training
steps with it stay flat). Each is collected, and collecting never clears what a live graph still
uses.

torch frees a grad_fn stored on its own output; it leaks the deeper cycles (its nodes do not show
their saved tensors to the collector), so those tests are rustgrad's own."""

from __future__ import annotations

import gc
import importlib
import random
import warnings
import weakref

import pytest
import rustgrad as rg


def _dies(make) -> bool:
    """Runs make() -> weakref in its own frame, collects, and says whether the target died."""
    ref = make()
    gc.collect()
    return ref() is None


@pytest.fixture(params=["torch", "rustgrad"])
def lib(request):
    return importlib.import_module(request.param)


def _identity():
    return rg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)


# ---- a grad_fn stored on a tensor of its own graph --------------------------------------------
def test_grad_fn_stored_on_its_own_output_is_collected(lib):
    def make():
        x = lib.ones(2, requires_grad=True)
        y = x * 2
        y.keep = y.grad_fn
        y.exp()  # another holder of y's node while the graph is built
        return weakref.ref(y)

    assert _dies(make)


def test_grad_fn_of_a_later_op_stored_on_the_tensor_it_saves_is_collected():
    # y -> w.grad_fn -> (z's node saves y) -> y: the saved tensor lies two nodes below.
    def make():
        x = rg.ones(2, requires_grad=True)
        y = x * 2
        z = y * y
        w = z * 3
        y.keep = w.grad_fn
        return weakref.ref(y)

    assert _dies(make)


def test_output_stored_on_a_tensor_its_graph_saves_is_collected():
    def make():
        x = rg.ones(2, requires_grad=True)
        t = rg.ones(2)
        z = (x * t).exp()  # MulBackward0 saves t
        t.keep = z
        return weakref.ref(t)

    assert _dies(make)


def test_create_graph_cycle_of_a_graph_past_the_walk_cap_is_collected():
    # Past the trial walk's cap the cheaper walk through exclusive nodes still finds the param.
    def make():
        w = rg.ones(3, requires_grad=True)
        h = w
        for _ in range(1500):
            h = h * w
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (h * 0).sum().backward(create_graph=True)
        return weakref.ref(w)

    assert _dies(make)


def test_grad_fn_stored_on_a_saved_tensor_still_works_after_collection():
    x = rg.tensor([1.0, 2.0], requires_grad=True)
    t = rg.tensor([3.0, 4.0])
    z = (x * t).exp()
    t.keep = z.grad_fn
    ref = weakref.ref(t)
    del t
    gc.collect()
    assert ref() is not None  # z's graph still uses it
    z.sum().backward()
    expected = (rg.tensor([3.0, 4.0]) * (x.detach() * rg.tensor([3.0, 4.0])).exp()).tolist()
    assert x.grad.tolist() == pytest.approx(expected)
    del z
    gc.collect()
    assert ref() is None


# ---- identity saved_tensors_hooks with create_graph=True --------------------------------------
@pytest.mark.parametrize(
    "loss",
    [
        lambda w: (w * w).exp().sum(),
        lambda w: (w * 3).sigmoid().sum(),
        lambda w: ((w * w).tanh() * w).sum(),
    ],
)
def test_identity_saved_tensors_hooks_with_create_graph_are_collected(loss):
    def make():
        w = rg.ones(3, requires_grad=True)
        with _identity():
            y = loss(w)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y.backward(create_graph=True)
        assert w.grad is not None and w.grad.grad_fn is not None
        return weakref.ref(w)

    assert _dies(make)


def test_identity_saved_tensors_hooks_graph_still_works_after_collection():
    import torch

    def run(lib, hooks):
        w = lib.tensor([0.5, 1.0, 1.5], requires_grad=True)
        with hooks():
            y = (w * w).exp().sum()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y.backward(create_graph=True)
        grad = w.grad
        ref = weakref.ref(w)
        del w, y
        gc.collect()
        assert ref() is not None  # the grad's graph still holds w
        g = grad.tolist()
        grad.sum().backward()
        return g, ref().grad.tolist(), ref

    ours = run(rg, _identity)
    theirs = run(torch, lambda: torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t))
    assert ours[0] == pytest.approx(theirs[0])
    assert ours[1] == pytest.approx(theirs[1])
    ref = ours[2]
    del ours
    gc.collect()
    assert ref() is None


def test_collections_never_clear_identity_packed_graphs_still_in_use_stress():
    """Random graphs saved through identity hooks, with create_graph=True cycles; random parts
    kept: after gc.collect() every kept tensor keeps its history and values, and backward through
    it still works; once dropped, everything is collected."""
    rng = random.Random(1)
    ops = [
        lambda t, w: t * w,
        lambda t, w: (t * 0.1).exp() * w,
        lambda t, w: t.tanh() + w,
        lambda t, w: (t * w).sigmoid(),
    ]
    for _ in range(10):
        w = rg.ones(3, requires_grad=True)
        with _identity():
            t = w * 1.5
            chain = [t]
            for _ in range(rng.randint(1, 5)):
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
        for h in handles:
            assert h.name().endswith("Backward0")
        c = None
        for c in kept:
            c.sum().backward(retain_graph=True)
        if grad is not None:
            grad.sum().backward()
        if kept or grad is not None:
            assert ref() is not None and ref().grad is not None
        c = h = None
        del kept, grad, handles, c, h
        gc.collect()
        assert ref() is None


# ---- a hook capturing its own non-leaf, with create_graph=True --------------------------------
def test_hook_capturing_its_own_non_leaf_with_create_graph_is_collected():
    # y -> hook -> closure cell -> y, and x -> x.grad -> graph (saves y) -> x; torch leaks it.
    def make():
        x = rg.ones(2, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: g * y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (y * y).sum().backward(create_graph=True)
        return weakref.ref(y)

    assert _dies(make)


def test_hook_capturing_its_own_non_leaf_still_runs_after_collection():
    import torch

    def run(lib):
        seen = []

        def build():
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            y = x * 2
            y.register_hook(lambda g: seen.append(g.tolist()) or g * y)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                (y * y).sum().backward(create_graph=True, retain_graph=True)
            return x, (y * 3).sum(), x.grad, weakref.ref(y)

        x, z, grad, ref = build()
        gc.collect()
        assert ref() is not None  # z's graph and x.grad's graph still use y and its hook
        z.backward(retain_graph=True)
        grad.sum().backward()
        return seen, x.grad.tolist()

    ours, theirs = run(rg), run(torch)
    assert ours[0] == theirs[0]
    assert ours[1] == pytest.approx(theirs[1])


def test_collections_never_clear_hooked_graphs_still_in_use_stress():
    """Random graphs whose intermediates carry hooks capturing themselves or another
    intermediate, differentiated with create_graph=True; random parts kept: after gc.collect()
    the kept graphs still run backward, their hooks included; once dropped, all is collected."""
    rng = random.Random(2)
    for _ in range(12):
        calls = []
        w = rg.ones(3, requires_grad=True)
        t = w * 1.5
        chain = [t]
        for _ in range(rng.randint(2, 5)):
            t = (t * w).tanh() if rng.random() < 0.5 else t * w
            chain.append(t)
        for c in chain:
            if rng.random() < 0.6:
                other = rng.choice(chain)
                c.register_hook(lambda g, other=other, c=c, calls=calls: calls.append(1) or g + 0 * other * c)
        c = other = None  # the loop variables hold graph tensors
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t.sum().backward(create_graph=True, retain_graph=True)
        kept = [c for c in chain if rng.random() < 0.4]
        grad = w.grad if rng.random() < 0.5 else None
        ref = weakref.ref(w)
        del w, t, chain
        gc.collect()
        c = None
        for c in kept:
            c.sum().backward(retain_graph=True)
        if grad is not None:
            grad.sum().backward(retain_graph=True)
        if kept or grad is not None:
            assert ref() is not None and ref().grad is not None
        assert calls  # some hook ran
        c = None
        del kept, grad, c
        gc.collect()
        assert ref() is None


# ---- create_graph=True: the param <-> grad cycle is collected --------------------------------
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
