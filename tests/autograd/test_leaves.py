"""Leaves, requires_grad, the .grad attribute: each test runs under torch and rustgrad (`lib`)."""

from __future__ import annotations

import warnings

import pytest

NO_RETAIN = "can't retain_grad on Tensor that has requires_grad=False"
NON_LEAF_GRAD = "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"


# ---- what is a leaf -----------------------------------------------------------------------
def test_leaf_created_by_user_is_leaf_without_grad_fn(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    c = lib.ones(2)

    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    assert c.is_leaf and not c.requires_grad and c.grad_fn is None


def test_leaf_op_result_requiring_grad_is_not_leaf(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)

    y = x * 2

    assert not y.is_leaf
    assert y.requires_grad
    assert y.grad_fn.name() == "MulBackward0"


def test_leaf_result_under_no_grad_is_leaf_not_requiring_grad(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)

    with lib.no_grad():
        y = x * 2

    assert y.is_leaf and not y.requires_grad and y.grad_fn is None


def test_leaf_result_of_inputs_without_grad_is_leaf(lib):
    a, b = lib.ones(2), lib.ones(2)

    y = (a * b + 1).sum()

    assert y.is_leaf and not y.requires_grad and y.grad_fn is None


def test_leaf_detach_of_non_leaf_is_leaf(lib):
    y = lib.tensor([1.0], requires_grad=True) * 2

    d = y.detach()

    assert d.is_leaf and not d.requires_grad and d.grad_fn is None


# ---- requires_grad --------------------------------------------------------------------
def test_requires_grad_setter_on_leaf_changes_flag(lib):
    x = lib.ones(2)

    x.requires_grad = True
    assert x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad


@pytest.mark.parametrize("value", [True, False])
def test_requires_grad_setter_on_non_leaf_raises_leaf_only(lib, value):
    y = lib.ones(2, requires_grad=True) * 2

    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad = value

    assert y.requires_grad and not y.is_leaf


def test_requires_grad_setter_false_on_non_leaf_hints_detach(lib):
    y = lib.ones(2, requires_grad=True) * 2

    with pytest.raises(RuntimeError, match=r"use var_no_grad = var\.detach\(\)"):
        y.requires_grad = False


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_requires_grad_on_integer_tensor_raises_floating_point_only(lib, dtype):
    t = lib.zeros(2, dtype=getattr(lib, dtype))

    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype"):
        lib.zeros(2, dtype=getattr(lib, dtype), requires_grad=True)
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype"):
        t.requires_grad = True
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require"):
        t.requires_grad_()
    assert not t.requires_grad
    t.requires_grad = False  # turning it off is always allowed


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_requires_grad_on_floating_tensor_allowed(lib, dtype):
    t = lib.zeros(2, dtype=getattr(lib, dtype))

    t.requires_grad = True

    assert t.requires_grad


def test_requires_grad_underscore_returns_self_and_sets_flag(lib):
    x = lib.ones(2)

    out = x.requires_grad_()

    assert out is x and x.requires_grad
    assert x.requires_grad_(False) is x and not x.requires_grad


def test_requires_grad_underscore_true_on_non_leaf_is_allowed(lib):
    y = lib.ones(2, requires_grad=True) * 2

    assert y.requires_grad_(True) is y
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad_(False)


# ---- the .grad attribute --------------------------------------------------------------
def test_grad_setter_accepts_matching_tensor_and_none(lib):
    x = lib.ones(2, 3, requires_grad=True)
    g = lib.full((2, 3), 2.0)

    x.grad = g
    assert x.grad is g
    x.grad = None
    assert x.grad is None


def test_grad_setter_wrong_shape_raises_size_message(lib):
    x = lib.ones(2, requires_grad=True)

    with pytest.raises(RuntimeError) as err:
        x.grad = lib.ones(3)

    assert str(err.value) == (
        "attempting to assign a gradient of size '[3]' to a tensor of size '[2]'. "
        "Please ensure that the gradient and the tensor are the same size"
    )
    assert x.grad is None


@pytest.mark.parametrize(
    "dtype, name", [("float64", "double"), ("float16", "c10::Half"), ("int64", "long int")]
)
def test_grad_setter_wrong_dtype_raises_dtype_message(lib, dtype, name):
    x = lib.ones(2, requires_grad=True)

    with pytest.raises(RuntimeError) as err:
        x.grad = lib.ones(2, dtype=getattr(lib, dtype))

    assert str(err.value) == (
        f"attempting to assign a gradient with dtype '{name}' to a tensor with grad_dtype "
        "'Float'. The gradient must match the tensor's grad_dtype (defaults to the tensor's "
        "dtype). You can set the tensor's grad_dtype attribute with a specific dtype, or None to "
        "allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its "
        "gradient may break downstream systems that assume they match."
    )


def test_grad_setter_non_tensor_raises_type_error(lib):
    x = lib.ones(2, requires_grad=True)

    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        x.grad = [1.0, 2.0]


def test_grad_of_non_leaf_is_none_with_user_warning(lib):
    y = lib.tensor([1.0], requires_grad=True) * 2
    (y * 3).sum().backward()

    with pytest.warns(UserWarning, match=NON_LEAF_GRAD):
        assert y.grad is None


def test_grad_of_non_leaf_with_retain_grad_has_no_warning(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()

    (y * 3).sum().backward()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.retains_grad
        assert y.grad.tolist() == [3.0, 3.0]
    assert x.grad.tolist() == [6.0, 6.0]


def test_grad_of_leaf_before_backward_is_none_without_warning(lib):
    x = lib.ones(2, requires_grad=True)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is None


def test_retain_grad_on_leaf_is_noop(lib):
    x = lib.ones(2, requires_grad=True)

    x.retain_grad()
    (x * 2).sum().backward()

    assert not x.retains_grad
    assert x.grad.tolist() == [2.0, 2.0]


def test_retain_grad_without_requires_grad_raises(lib):
    with pytest.raises(RuntimeError, match=NO_RETAIN):
        lib.ones(2).retain_grad()


def test_retain_grad_accumulates_across_backwards(lib):
    x = lib.tensor([1.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    z = y * 3

    z.backward(retain_graph=True)
    z.backward()

    assert y.grad.tolist() == [6.0]
    assert x.grad.tolist() == [12.0]


def test_retain_grad_called_after_backward_leaves_grad_none(lib):
    a = lib.tensor([1.0], requires_grad=True)
    b = a * 2
    (b * 3).backward()

    b.retain_grad()

    assert b.retains_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert b.grad is None
