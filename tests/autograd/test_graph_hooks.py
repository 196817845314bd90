"""saved_tensors_hooks / save_on_cpu, grad_fn.register_hook / register_prehook, and the
`_saved_*` attributes of grad_fn objects, against torch."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from ..parity import f64, parity, same_error

X = np.array([1.0, 2.0, 3.0])
W = np.array([0.5, -1.0, 2.0])


# ---- saved_tensors_hooks -----------------------------------------------------------------
def test_saved_tensors_hooks_pack_and_unpack_counts_match_torch():
    def run(lib):
        log = []

        def pack(t):
            log.append(("pack", tuple(t.shape)))
            return t

        def unpack(t):
            log.append(("unpack", tuple(t.shape)))
            return t

        x = f64(lib, X, True)
        w = f64(lib, W, True)
        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = (x * w).exp()          # mul saves x and w, exp saves its result
            z = (y ** 2).sum()         # pow saves y
        after_forward = list(log)
        z.backward()
        return after_forward, sorted(log), x.grad, w.grad

    fwd, log, _, _ = parity(run)
    assert [e[0] for e in fwd] == ["pack"] * 4
    assert sum(e[0] == "unpack" for e in log) == 4


def test_saved_tensors_hooks_packed_copy_is_what_backward_uses():
    """With hooks, unpack's tensor is used (no version check): a copy taken at pack time keeps
    the gradient right even if the original is later modified in place."""
    def run(lib):
        x = f64(lib, X, True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
            a = x * 1
            y = (a * a).sum()
        with lib.no_grad():
            a.add_(100.0)
        y.backward()
        return x.grad

    np.testing.assert_allclose(parity(run), 2 * X)


def test_saved_tensors_hooks_unpacked_tensors_keep_their_place_for_double_backward():
    def run(lib):
        x = f64(lib, X, True)
        w = f64(lib, W, True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
            y = (x * x * w).sum()
            (g,) = lib.autograd.grad(y, x, create_graph=True)
        hx, hw = lib.autograd.grad(g.sum(), [x, w])
        return g, hx, hw

    parity(run)


def test_saved_tensors_hooks_innermost_pair_applies():
    def run(lib):
        log = []
        x = f64(lib, X, True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: log.append("outer") or t, lambda t: t):
            with lib.autograd.graph.saved_tensors_hooks(lambda t: log.append("inner") or t,
                                                        lambda t: t):
                (x * x).sum()
            (x.exp()).sum()
        (x.exp()).sum()  # no hooks any more
        return log

    assert parity(run) == ["inner", "inner", "outer"]


def test_save_on_cpu_gives_the_plain_gradients():
    def run(lib):
        x = f64(lib, X, True)
        with lib.autograd.graph.save_on_cpu():
            y = (x.exp() * x.sin()).sum()
        y.backward()
        return x.grad

    parity(run)


SAVED_HOOK_ERRORS = [
    ("pack_modifies_input", lambda lib: _pack_inplace(lib),
     "A saved tensor pack hook is modifying its input in place."),
    ("unpack_returns_non_tensor", lambda lib: _unpack_int(lib),
     "Output of saved tensor unpack_hook expected to be a Tensor but got result of type int"),
]


def _pack_inplace(lib):
    x = f64(lib, X, True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.add_(1), lambda t: t):
        a = x * 1
        a * a


def _unpack_int(lib):
    x = f64(lib, X, True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: 3, lambda t: t):
        y = (x * x).sum()
    y.backward()


@pytest.mark.parametrize("case", SAVED_HOOK_ERRORS, ids=[c[0] for c in SAVED_HOOK_ERRORS])
def test_saved_tensors_hooks_errors_match_torch(case):
    _, fn, phrase = case
    same_error(fn, phrase)


def test_saved_tensors_hooks_identity_on_output_is_collected(rg):
    """pack returning the output itself makes output -> node -> packed -> output: the garbage
    collector must see the cycle (Note [GC traversal])."""
    x = f64(rg, X, True)
    with rg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x.exp()
    ref = weakref.ref(y)
    del y
    gc.collect()
    assert ref() is None


# ---- node hooks --------------------------------------------------------------------------
def _graph(lib):
    x = f64(lib, X, True)
    w = f64(lib, W, True)
    y = x * w
    return x, w, y, y.exp().sum()


def test_node_prehook_and_posthook_see_and_replace_gradients_as_torch():
    def run(lib):
        x, w, y, z = _graph(lib)
        log = []

        def pre(grad_outputs):
            log.append(("pre", grad_outputs))
            return (grad_outputs[0] * 2,)

        def post(grad_inputs, grad_outputs):
            log.append(("post", grad_inputs, grad_outputs))
            return (grad_inputs[0], None)

        h1 = y.grad_fn.register_prehook(pre)
        y.grad_fn.register_hook(post)
        z.backward(retain_graph=True)
        first = (x.grad.clone(), w.grad)
        h1.remove()
        x.grad = None
        z.backward(retain_graph=True)
        return log, first, x.grad

    log, first, second = parity(run)
    assert [e[0] for e in log] == ["pre", "post", "post"]
    assert first[1] is None  # the post hook dropped w's gradient


def test_node_hooks_order_with_tensor_hooks_and_retain_grad_matches_torch():
    def run(lib):
        x, w, y, z = _graph(lib)
        order = []
        y.register_hook(lambda g: order.append("tensor"))
        y.retain_grad()
        y.grad_fn.register_prehook(lambda go: order.append("node_pre"))
        y.grad_fn.register_hook(lambda gi, go: order.append("node_post"))
        acc = y.grad_fn.next_functions[0][0]
        x.register_hook(lambda g: order.append("leaf_tensor"))
        x.register_post_accumulate_grad_hook(lambda t: order.append("post_accumulate"))
        acc.register_prehook(lambda go: order.append("acc_pre"))
        acc.register_hook(lambda gi, go: order.append(("acc_post", len(gi), len(go))))
        z.backward()
        return order, acc.name()

    order, name = parity(run)
    assert name == "torch::autograd::AccumulateGrad"
    assert order.index("node_pre") < order.index("node_post") < order.index("leaf_tensor")


def test_node_hook_call_counts_over_several_backwards_match_torch():
    def run(lib):
        x, w, y, z = _graph(lib)
        counts = {"pre": 0, "post": 0}
        y.grad_fn.register_prehook(lambda go: counts.__setitem__("pre", counts["pre"] + 1))
        h = y.grad_fn.register_hook(lambda gi, go: counts.__setitem__("post", counts["post"] + 1))
        for _ in range(3):
            z.backward(retain_graph=True)
        h.remove()
        z.backward()
        return counts

    assert parity(run) == {"pre": 4, "post": 3}


NODE_HOOK_ERRORS = [
    ("post_wrong_count", lambda lib: _bad_hook(lib, "post", lambda gi, go: (gi[0],)),
     "hook '<lambda>' has returned an incorrect number of values (got 1, but expected 2)"),
    ("pre_not_tuple", lambda lib: _bad_hook(lib, "pre", lambda go: go[0]),
     "expected tuple, but hook returned 'Tensor'"),
]


def _bad_hook(lib, kind, hook):
    x, w, y, z = _graph(lib)
    getattr(y.grad_fn, "register_prehook" if kind == "pre" else "register_hook")(hook)
    z.backward()


@pytest.mark.parametrize("case", NODE_HOOK_ERRORS, ids=[c[0] for c in NODE_HOOK_ERRORS])
def test_node_hook_errors_match_torch(case):
    _, fn, phrase = case
    same_error(fn, phrase)


def test_node_hook_holding_its_tensor_is_collected(rg):
    x = f64(rg, X, True)

    def make():
        y = x * 2
        y.grad_fn.register_hook(lambda gi, go: y)  # y -> node -> hook -> y, through Rust
        return weakref.ref(y)

    ref = make()
    gc.collect()
    assert ref() is None


# ---- _saved_* attributes -----------------------------------------------------------------
def test_grad_fn_saved_attributes_match_torch():
    def run(lib):
        x = f64(lib, X, True)
        w = f64(lib, W, True)
        m = x * w
        e = x.exp()
        p = x ** 2
        s = x * 2
        return ((m.grad_fn._saved_self is x, m.grad_fn._saved_other is w),
                e.grad_fn._saved_result, p.grad_fn._saved_exponent, p.grad_fn._saved_self is x,
                s.grad_fn._saved_other.item())

    out = parity(run)
    assert out[0] == (True, True) and out[2:] == (2, True, 2)


def test_grad_fn_unknown_attribute_and_freed_saved_errors_match_torch():
    same_error(lambda lib: (f64(lib, X, True) * 2).grad_fn._saved_nothing,
               "'MulBackward0' object has no attribute '_saved_nothing'")

    def freed(lib):
        e = f64(lib, X, True).exp()
        e.sum().backward()
        return e.grad_fn._saved_result

    same_error(freed, "Trying to backward through the graph a second time")
