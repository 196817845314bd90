"""Cycles that run through the graph itself (see Note [GC traversal] in rust/python/src/gc.rs):
a grad_fn kept on a tensor its own graph saves, identity saved_tensors_hooks (the graph holds the
tensors it produced) under create_graph=True. Each is collected, and collecting never clears
what a live graph still uses.

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
