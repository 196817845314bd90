"""Tutorial programs about leaves, detach and hooks: each runs under torch and rustgrad and must
print and behave the same."""

from __future__ import annotations

import warnings

import pytest

NON_LEAF_GRAD = "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"


def test_tutorial_leaf_and_mul_result_reprs(lib):
    leaf = lib.tensor([5.0], requires_grad=True)
    out = leaf * 2

    assert (leaf.is_leaf, leaf.grad_fn) == (True, None)
    assert repr(leaf) == "tensor([5.], requires_grad=True)"
    assert not out.is_leaf
    assert out.grad_fn.name() == "MulBackward0"
    assert repr(out) == "tensor([10.], grad_fn=<MulBackward0>)"


def test_tutorial_detached_branch_gets_no_grad(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2
    z = y + 1
    y_detached = y.detach()
    w = y_detached * 3

    z.backward()

    assert x.grad.tolist() == [2.0]
    assert repr(x.grad) == "tensor([2.])"
    assert y_detached.grad is None
    assert w.requires_grad is False
    assert repr(w) == "tensor([6.])"


def test_tutorial_retain_grad_on_intermediate(lib):
    a = lib.tensor([1.0], requires_grad=True)
    b = a * 2
    b.retain_grad()
    c = b * 3

    c.backward()

    assert a.grad.tolist() == [6.0]
    assert b.grad.tolist() == [3.0]


def test_tutorial_intermediate_without_retain_grad_is_none_with_warning(lib):
    a = lib.tensor([1.0], requires_grad=True)
    b = a * 2
    c = b * 3

    c.backward()

    assert a.grad.tolist() == [6.0]
    with pytest.warns(UserWarning, match=NON_LEAF_GRAD):
        assert b.grad is None


def test_tutorial_hook_prints_gradient(lib, capsys):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda grad: print(grad))
    z = y * 3

    z.backward()

    assert capsys.readouterr().out == "tensor([3.])\n"
    assert x.grad.tolist() == [6.0]


def test_tutorial_backward_through_detach_raises(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x.detach() * 2
    z = y * 3

    with pytest.raises(
        RuntimeError,
        match="element 0 of tensors does not require grad and does not have a grad_fn",
    ):
        z.backward()

    assert x.grad is None


def test_tutorial_retain_grad_after_backward_leaves_grad_none(lib):
    a = lib.tensor([1.0], requires_grad=True)
    b = a * 2
    c = b * 3
    c.backward()

    b.retain_grad()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert b.grad is None


def test_tutorial_write_through_detach_changes_original(lib):
    a = lib.tensor([1.0], requires_grad=True)
    b = a.detach()

    b[0] = 5.0

    assert repr(a) == "tensor([5.], requires_grad=True)"
    assert a.requires_grad and a.is_leaf


def test_tutorial_inplace_on_detach_changes_original_but_clone_does_not(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x.detach()
    y += 1

    assert repr(x) == "tensor([2.], requires_grad=True)"
    assert repr(y) == "tensor([2.])"

    c = x.detach().clone()
    c += 1

    assert repr(x) == "tensor([2.], requires_grad=True)"
    assert repr(c) == "tensor([3.])"


def test_tutorial_mean_gradient_is_one_over_n(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)

    x.mean().backward()

    assert repr(x.grad) == "tensor([0.5000, 0.5000])"


def test_tutorial_reprs_of_outputs_match_torch(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)

    reprs = [repr(x * 2), repr(x + 1), repr(x.sum()), repr(x.mean()), repr(x.detach())]

    assert reprs == [
        "tensor([2., 4.], grad_fn=<MulBackward0>)",
        "tensor([2., 3.], grad_fn=<AddBackward0>)",
        "tensor(3., grad_fn=<SumBackward0>)",
        "tensor(1.5000, grad_fn=<MeanBackward0>)",
        "tensor([1., 2.])",
    ]
