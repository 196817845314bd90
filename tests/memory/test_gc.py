"""Every Rust object that holds Python objects supports the garbage collector: reference cycles
through hooks, handles and grad_fn objects are collected, and graphs are freed after backward.

rustgrad collects some cycles torch leaks (a hook capturing its own non-leaf, a post-accumulate
hook capturing its leaf), so most tests here are rustgrad's own; where torch frees the same
thing, the test runs under both."""

from __future__ import annotations

import gc
import importlib
import weakref

import pytest
import rustgrad as rg


class Marker:
    """A plain Python object whose death a weakref can observe."""


def _dies(make):
    """Runs make() -> weakref in its own frame, collects, and says whether the target died."""
    ref = make()
    gc.collect()
    return ref() is None


# ---- hooks capturing their own tensor ---------------------------------------------------------
def test_gc_leaf_hook_capturing_its_leaf_is_collected():
    def make():
        x = rg.ones(2, requires_grad=True)
        x.register_hook(lambda g: g * x.detach())
        return weakref.ref(x)

    assert _dies(make)


def test_gc_leaf_hook_capturing_its_leaf_after_backward_is_collected():
    def make():
        x = rg.ones(2, requires_grad=True)
        x.register_hook(lambda g: g + x.detach())
        (x * 2).sum().backward()
        return weakref.ref(x)

    assert _dies(make)


def test_gc_non_leaf_hook_capturing_its_tensor_is_collected():
    def make():
        x = rg.ones(2, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: g * y.detach())
        return weakref.ref(y)

    assert _dies(make)


def test_gc_non_leaf_hook_capturing_its_tensor_after_backward_is_collected():
    def make():
        x = rg.ones(2, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: g * y.detach())
        y.sum().backward()
        return weakref.ref(y)

    assert _dies(make)


def test_gc_post_accumulate_grad_hook_capturing_its_leaf_is_collected():
    def make():
        x = rg.ones(2, requires_grad=True)
        x.register_post_accumulate_grad_hook(lambda t: x)
        (x * 2).sum().backward()
        return weakref.ref(x)

    assert _dies(make)


@pytest.mark.parametrize("leaf", [True, False])
def test_gc_hook_closure_holding_its_own_handle_is_collected(leaf):
    def make():
        x = rg.ones(2, requires_grad=True)
        t = x if leaf else x * 2
        handles = []
        handles.append(t.register_hook(lambda g: (handles, t) and g))
        return weakref.ref(t)

    assert _dies(make)


def test_gc_retain_grad_tensor_is_collected():
    def make():
        x = rg.ones(2, requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.sum().backward()
        return weakref.ref(y)

    assert _dies(make)


# ---- grad_fn handles ------------------------------------------------------------------------
def test_gc_accumulate_grad_handle_stored_on_its_leaf_is_collected():
    def make():
        x = rg.ones(2, requires_grad=True)
        x.acc = (x * 2).grad_fn.next_functions[0][0]  # the node holds x; x holds the node
        return weakref.ref(x)

    assert _dies(make)


def test_gc_hook_capturing_grad_fn_of_its_tensor_is_collected():
    def make():
        x = rg.ones(2, requires_grad=True)
        y = x * 2
        fn = y.grad_fn
        marker = Marker()
        y.register_hook(lambda g: (fn, marker) and g)
        return weakref.ref(marker)

    assert _dies(make)


def test_gc_tensor_attribute_cycle_is_collected():
    def make():
        y = rg.ones(2, requires_grad=True) * 2
        y.me = y
        return weakref.ref(y)

    assert _dies(make)


# ---- the collector never frees what a live graph still uses -------------------------------
def test_gc_hook_of_deleted_non_leaf_still_runs_while_graph_lives():
    seen = []

    def build():
        x = rg.ones(2, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: seen.append(g.tolist()) or (y, g)[1])  # captures y
        return x, (y * 3).sum(), weakref.ref(y)

    x, z, y_ref = build()  # only the graph (and the hook's own cycle) hold y now
    gc.collect()
    assert y_ref() is not None
    z.backward()

    assert seen == [[3.0, 3.0]]
    assert x.grad.tolist() == [6.0, 6.0]


def test_gc_hook_of_deleted_leaf_still_runs_while_graph_lives():
    def build():
        x = rg.ones(2, requires_grad=True)
        x.register_hook(lambda g: g * 10 + x.detach() * 0)  # captures x
        return (x * 2).sum(), weakref.ref(x)

    y, leaf = build()
    gc.collect()
    assert leaf() is not None
    y.backward()

    assert leaf().grad.tolist() == [20.0, 20.0]


# ---- graphs are freed after backward (torch frees the same) ---------------------------------
@pytest.fixture(params=["torch", "rustgrad"])
def lib(request):
    return importlib.import_module(request.param)


def test_gc_saved_intermediate_freed_by_backward(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = (y * y).sum()  # saves y
    saved = weakref.ref(y)
    del y

    assert saved() is not None
    z.backward()
    gc.collect()

    assert saved() is None


def test_gc_saved_intermediate_kept_by_retain_graph_until_output_dies(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = (y * y).sum()
    saved = weakref.ref(y)
    del y

    z.backward(retain_graph=True)
    assert saved() is not None
    del z
    gc.collect()

    assert saved() is None


def test_gc_graph_objects_freed_when_output_dies(lib):
    def build():
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        marker = Marker()
        y = x * 2
        y.register_hook(lambda g: (marker, g)[1])
        return (y * y).sum(), weakref.ref(marker)

    z, ref = build()
    gc.collect()
    assert ref() is not None  # the graph holds y's hook
    del z
    gc.collect()

    assert ref() is None


def test_gc_leaf_freed_when_graph_and_user_drop_it(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    z = (x * x).sum()
    leaf = weakref.ref(x)
    del x

    assert leaf() is not None  # the graph's AccumulateGrad holds it
    z.backward()
    del z
    gc.collect()

    assert leaf() is None
