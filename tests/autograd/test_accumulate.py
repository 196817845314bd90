"""Leaf accumulation (AccumulateGrad): `.grad` takes the incoming gradient itself only when no one
else can see it, else a copy; later gradients are added in place, or out of place under
create_graph. Each case runs under torch and rustgrad (see Note [Stealing a gradient],
rust/core/src/accumulate.rs)."""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any

import numpy as np
import pytest


def shares_memory(lib: ModuleType, a: Any, b: Any) -> bool:
    if lib.__name__ == "torch":
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    return bool(np.shares_memory(a._data, b._data))


@pytest.fixture(autouse=True)
def _quiet_create_graph_warning():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Using backward\\(\\) with create_graph=True")
        yield


def test_accumulate_gradient_argument_of_leaf_backward_is_copied(lib):
    x = lib.ones(3, requires_grad=True)
    g = lib.tensor([1.0, 2.0, 3.0])

    x.backward(g)
    x.backward(g)

    assert x.grad is not g and not shares_memory(lib, x.grad, g)
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    assert g.tolist() == [1.0, 2.0, 3.0]


def test_accumulate_gradient_passed_through_to_two_leaves_is_copied_for_each(lib):
    # AddBackward0 hands the gradient it received to both inputs as it is.
    x = lib.ones(2, requires_grad=True)
    z = lib.ones(2, requires_grad=True)
    g = lib.tensor([1.0, 2.0])

    (x + z).backward(g)
    (x + z).backward(g)

    for leaf in (x, z):
        assert leaf.grad is not g and not shares_memory(lib, leaf.grad, g)
        assert leaf.grad.tolist() == [2.0, 4.0]
    assert not shares_memory(lib, x.grad, z.grad)
    assert g.tolist() == [1.0, 2.0]


def test_accumulate_fresh_gradient_shared_by_two_leaves_gives_each_its_own(lib):
    x = lib.ones(2, requires_grad=True)
    z = lib.ones(2, requires_grad=True)

    ((x + z) * 2).sum().backward()
    x.grad.add_(1.0)

    assert not shares_memory(lib, x.grad, z.grad)
    assert (x.grad.tolist(), z.grad.tolist()) == ([3.0, 3.0], [2.0, 2.0])


def test_accumulate_gradient_kept_by_a_hook_is_not_written_into(lib):
    x = lib.ones(2, requires_grad=True)
    kept = []
    x.register_hook(lambda g: kept.append(g))

    (x * 2).sum().backward()
    (x * 3).sum().backward()

    assert all(not shares_memory(lib, x.grad, k) for k in kept)
    assert [k.tolist() for k in kept] == [[2.0, 2.0], [3.0, 3.0]]
    assert x.grad.tolist() == [5.0, 5.0]


def test_accumulate_tensor_returned_by_a_hook_is_not_written_into(lib):
    x = lib.ones(2, requires_grad=True)
    r = lib.full((2,), 7.0)
    x.register_hook(lambda g: r)

    (x * 2).sum().backward()
    (x * 2).sum().backward()

    assert x.grad is not r and not shares_memory(lib, x.grad, r)
    assert x.grad.tolist() == [14.0, 14.0]
    assert r.tolist() == [7.0, 7.0]


def test_accumulate_retained_grad_of_a_non_leaf_is_not_shared_with_the_leaf(lib):
    x = lib.ones(3, requires_grad=True)
    y = x + 0
    y.retain_grad()

    y.sum().backward()
    y.sum().backward()

    assert not shares_memory(lib, x.grad, y.grad)
    assert x.grad.tolist() == y.grad.tolist() == [2.0] * 3


def test_accumulate_second_backward_adds_in_place_into_the_same_grad(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    first = x.grad
    version = first._version

    (x * x).sum().backward()

    assert x.grad is first
    assert first.tolist() == [4.0, 8.0]
    assert first._version == version + 1


def test_accumulate_user_set_grad_is_added_into_in_place(lib):
    x = lib.ones(2, requires_grad=True)
    g = lib.ones(2)
    x.grad = g

    (x * 2).sum().backward()

    assert x.grad is g
    assert g.tolist() == [3.0, 3.0]


def test_accumulate_values_after_two_backwards_match_torch(rg):
    import torch

    def grads(lib: ModuleType) -> Any:
        w = lib.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
        b = lib.tensor([0.25, -1.0], requires_grad=True)
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0], [-1.0, 0.5]])
        seen = []
        for _ in range(2):
            ((x @ w + b).tanh() ** 2).sum().backward()
            seen.append((w.grad.tolist(), b.grad.tolist()))
        return seen

    for got, want in zip(grads(rg), grads(torch)):
        assert np.allclose(got[0], want[0], atol=1e-6) and np.allclose(got[1], want[1], atol=1e-6)


def test_accumulate_create_graph_first_grad_is_a_recorded_copy(lib):
    x = lib.ones(2, requires_grad=True)
    g = lib.ones(2, requires_grad=True)

    x.backward(g, create_graph=True)

    assert x.grad is not g and not shares_memory(lib, x.grad, g)
    assert x.grad.requires_grad
    assert x.grad.grad_fn.name() == "torch::autograd::CopyBackwards"
    x.grad.sum().backward()
    assert g.grad.tolist() == [1.0, 1.0]


def test_accumulate_create_graph_second_grad_is_summed_out_of_place(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward(create_graph=True)
    first = x.grad

    (x * x).sum().backward(create_graph=True)

    assert x.grad is not first
    assert x.grad.grad_fn.name() == "AddBackward0"
    assert (first.tolist(), x.grad.tolist()) == ([2.0, 4.0], [4.0, 8.0])


def test_accumulate_gradient_of_other_dtype_is_cast_to_the_leaf(lib):
    x = lib.ones(2, requires_grad=True)
    g = lib.ones(2, dtype=lib.float64)

    x.backward(g)

    assert x.grad.dtype == lib.float32
    assert x.grad.tolist() == [1.0, 1.0]


def test_accumulate_plain_backward_after_create_graph_leaves_grad_without_graph(rg):
    # rustgrad replaces a `.grad` that records a graph by a sum in no graph, which breaks the
    # param -> .grad -> graph -> param cycle; torch adds into it in place and keeps the graph.
    x = rg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward(create_graph=True)
    first = x.grad

    (x * x).sum().backward()

    assert x.grad is not first and x.grad.grad_fn is None
    assert (first.tolist(), x.grad.tolist()) == ([2.0, 4.0], [4.0, 8.0])


def test_accumulate_fresh_gradient_is_taken_without_a_python_call(rg):
    import sys

    calls = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_name == "_accumulate_grad":
            calls.append(frame.f_locals["how"])

    x = rg.ones(3, requires_grad=True)
    g = rg.ones(3)
    sys.setprofile(profile)
    try:
        (x * 2).backward(g)  # MulBackward0's output: the engine's alone
        (x * 2).backward(g)
    finally:
        sys.setprofile(None)

    assert calls == ["add_in_place"]
    assert x.grad.tolist() == [4.0, 4.0, 4.0]
