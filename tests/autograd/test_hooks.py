"""register_hook, retain_grad ordering, post-accumulate-grad hooks (torch vs rustgrad)."""

from __future__ import annotations

import pytest

POST_NON_LEAF = "post accumulate grad hooks cannot be registered on non-leaf"
NO_GRAD_HOOK = "cannot register a hook on a tensor that doesn't require gradient"


def test_hook_on_non_leaf_observes_gradient(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    seen = []

    y.register_hook(lambda g: seen.append(g.tolist()))
    (y * 3).sum().backward()

    assert seen == [[3.0, 3.0]]
    assert x.grad.tolist() == [6.0, 6.0]


def test_hook_on_non_leaf_replacement_changes_upstream_gradient(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2

    y.register_hook(lambda g: g * 10)
    (y * 3).sum().backward()

    assert x.grad.tolist() == [60.0, 60.0]


def test_hook_on_leaf_replacement_changes_accumulated_grad(lib):
    x = lib.tensor([1.0], requires_grad=True)

    x.register_hook(lambda g: g * 100)
    (x * 2).backward()

    assert x.grad.tolist() == [200.0]


def test_hook_on_leaf_registered_before_graph_exists_runs(lib):
    x = lib.tensor([1.0], requires_grad=True)
    calls = []
    x.register_hook(lambda g: calls.append(g.item()))

    (x * 2).backward()
    (x * 5).backward()

    assert calls == [2.0, 5.0]
    assert x.grad.tolist() == [7.0]


def test_hook_on_leaf_registered_while_graph_exists_runs(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2
    calls = []

    x.register_hook(lambda g: calls.append(g.item()))
    y.backward()

    assert calls == [2.0]


def test_hook_handle_remove_stops_hook(lib):
    x = lib.tensor([1.0], requires_grad=True)
    h = x.register_hook(lambda g: g * 100)
    (x * 2).backward()

    h.remove()
    x.grad = None
    (x * 2).backward()

    assert x.grad.tolist() == [2.0]


def test_hook_handle_remove_twice_is_harmless(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2
    h = y.register_hook(lambda g: g * 100)

    h.remove()
    h.remove()
    y.backward()

    assert x.grad.tolist() == [2.0]


def test_hook_handle_as_context_manager_removes_on_exit(lib):
    x = lib.tensor([1.0], requires_grad=True)

    with x.register_hook(lambda g: g * 100):
        (x * 2).backward()
    (x * 2).backward()

    assert x.grad.tolist() == [202.0]


def test_hook_on_tensor_without_grad_raises(lib):
    with pytest.raises(RuntimeError, match=NO_GRAD_HOOK):
        lib.ones(2).register_hook(lambda g: g)


def test_hooks_run_in_registration_order_then_retain_grad(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2
    seen = []

    def h1(g):
        seen.append(("h1", g.item()))
        return g * 10

    def h2(g):
        seen.append(("h2", g.item()))
        return g + 1

    y.register_hook(h1)
    y.retain_grad()  # registered between the hooks, still sees the final value
    y.register_hook(h2)
    (y * 3).backward()

    assert seen == [("h1", 3.0), ("h2", 30.0)]
    assert y.grad.tolist() == [31.0]
    assert x.grad.tolist() == [62.0]


def test_hook_runs_once_with_summed_gradient_of_two_uses(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.item()))

    (y * 3 + y * 4).backward()

    assert seen == [7.0]


def test_hook_survives_del_of_its_non_leaf(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.item()))
    z = y * 3

    del y
    z.backward()

    assert seen == [3.0]


def test_hook_returning_wrong_shape_raises(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2

    def bad(g):
        return lib.ones(3)

    y.register_hook(bad)

    with pytest.raises(RuntimeError, match="hook 'bad' has changed the size of value"):
        y.sum().backward()


def test_hook_returning_wrong_dtype_raises(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g.double())

    with pytest.raises(
        RuntimeError,
        match=r"hook '<lambda>' has changed the type of value \(was torch\.FloatTensor got "
        r"torch\.DoubleTensor\)",
    ):
        y.sum().backward()


def test_hook_returning_non_tensor_raises_type_error(lib):
    x = lib.tensor([1.0], requires_grad=True)
    x.register_hook(lambda g: [1.0])

    with pytest.raises(TypeError, match="expected Variable, but hook returned 'list'"):
        (x * 2).backward()


def test_hook_exception_propagates_unchanged(lib):
    x = lib.tensor([1.0], requires_grad=True)

    def boom(g):
        raise ValueError("from the hook")

    x.register_hook(boom)

    with pytest.raises(ValueError, match="from the hook"):
        (x * 2).backward()
    assert x.grad is None


def test_hook_registered_before_inplace_sees_gradient_of_old_value(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(("old", g.item())))

    y.mul_(3)
    y.register_hook(lambda g: seen.append(("new", g.item())))
    (y * 5).backward()

    assert seen == [("new", 5.0), ("old", 15.0)]
    assert x.grad.tolist() == [30.0]


def test_retain_grad_before_inplace_moves_to_new_value(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2
    y.retain_grad()

    y.mul_(3)
    (y * 5).backward()

    assert y.retains_grad
    assert y.grad.tolist() == [5.0]


# ---- post-accumulate-grad hooks ----------------------------------------------------------
def test_post_accumulate_grad_hook_sees_updated_grad(lib):
    x = lib.tensor([1.0], requires_grad=True)
    log = []
    x.register_post_accumulate_grad_hook(lambda t: log.append((t is x, t.grad.tolist())))

    (x * 2).backward()
    (x * 2).backward()

    assert log == [(True, [2.0]), (True, [4.0])]


def test_post_accumulate_grad_hook_runs_after_tensor_hooks(lib):
    x = lib.tensor([1.0], requires_grad=True)
    order = []
    x.register_post_accumulate_grad_hook(lambda t: order.append(("post", t.grad.item())))
    x.register_hook(lambda g: order.append(("pre", g.item())))

    (x * 2).backward()

    assert order == [("pre", 2.0), ("post", 2.0)]


def test_post_accumulate_grad_hook_can_zero_grad_like_an_optimizer(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)

    def step(t):
        with lib.no_grad():
            t.sub_(t.grad)
        t.grad = None

    x.register_post_accumulate_grad_hook(step)
    (x * 2).sum().backward()

    assert x.tolist() == [-1.0, 0.0]
    assert x.grad is None


def test_post_accumulate_grad_hook_handle_remove(lib):
    x = lib.tensor([1.0], requires_grad=True)
    calls = []
    h = x.register_post_accumulate_grad_hook(lambda t: calls.append(1))

    h.remove()
    (x * 2).backward()

    assert calls == []


def test_post_accumulate_grad_hook_on_non_leaf_raises(lib):
    y = lib.tensor([1.0], requires_grad=True) * 2

    with pytest.raises(RuntimeError, match=POST_NON_LEAF):
        y.register_post_accumulate_grad_hook(lambda t: None)


def test_post_accumulate_grad_hook_without_grad_raises(lib):
    with pytest.raises(RuntimeError, match=NO_GRAD_HOOK):
        lib.ones(2).register_post_accumulate_grad_hook(lambda t: None)
