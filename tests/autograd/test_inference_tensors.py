"""Inference tensors (Note [Inference tensors]): what inference mode makes, what may be done with
it outside, and views made in inference mode of normal tensors — each against torch."""

from __future__ import annotations

import numpy as np
import pytest

SAVED = "Inference tensors cannot be saved for backward"
INPLACE = "Inplace update to inference tensor outside InferenceMode is not allowed"
VERSION = "Inference tensors do not track version counter"
VIEW = "A view was created in inference mode and is being modified inplace in normal mode"


def _made_inside(lib):
    x = lib.ones(3, requires_grad=True)
    with lib.inference_mode():
        i = lib.ones(3)
        j = x * 2
        v = x.view(3)
    return x, i, j, v


def test_tensors_made_inside_are_inference_tensors(lib):
    x, i, j, v = _made_inside(lib)
    assert i.is_inference() and j.is_inference() and not j.requires_grad
    assert not x.is_inference()
    # a view of a normal tensor is not one; like a no_grad view it still requires grad
    assert not v.is_inference() and v.requires_grad and v.grad_fn is None and v._base is x
    assert not lib.ones(2).is_inference() and not (i * 2).is_inference()
    assert not i.clone().is_inference()
    assert i.view(3).is_inference() and i[0].is_inference()
    assert i.detach().is_inference() and i.data.is_inference()
    assert i.is_leaf and i.grad_fn is None


def test_version_counter_is_refused_inside_and_outside(lib):
    _, i, _, _ = _made_inside(lib)
    with pytest.raises(RuntimeError, match=VERSION):
        _ = i._version
    with lib.inference_mode():
        with pytest.raises(RuntimeError, match=VERSION):
            _ = i._version


def test_saving_one_for_backward_is_refused(lib):
    x, i, _, _ = _made_inside(lib)
    with pytest.raises(RuntimeError, match=SAVED):
        x * i  # mul saves both operands
    with pytest.raises(RuntimeError, match=SAVED):
        lib.nn.functional.linear(x, i.reshape(1, 3))
    y = x + i  # add saves nothing: allowed
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))


def test_module_built_in_inference_mode_cannot_train_outside(lib):
    with lib.inference_mode():
        lin = lib.nn.Linear(3, 1)
    assert lin.weight.is_inference()
    with pytest.raises(RuntimeError, match=SAVED):
        lin(lib.ones(2, 3, requires_grad=True))


def test_custom_function_cannot_save_one(lib):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(b)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None

    x, i, _, _ = _made_inside(lib)
    with pytest.raises(RuntimeError, match=SAVED):
        Scale.apply(x, i)


@pytest.mark.parametrize("write", ["add_", "zero_", "setitem", "copy_", "mul_tensor"])
def test_inplace_outside_is_refused(lib, write):
    _, i, _, _ = _made_inside(lib)
    ops = {
        "add_": lambda: i.add_(1),
        "zero_": lambda: i.zero_(),
        "setitem": lambda: i.__setitem__(0, 5.0),
        "copy_": lambda: i.copy_(lib.full((3,), 7.0)),
        "mul_tensor": lambda: i.mul_(lib.full((3,), 7.0)),
    }
    with pytest.raises(RuntimeError, match=INPLACE):
        ops[write]()
    with pytest.raises(RuntimeError, match=INPLACE):
        with lib.no_grad():  # only inference mode allows it
            ops[write]()
    if lib.__name__ == "rustgrad":  # torch writes before it refuses; rustgrad leaves it as it was
        np.testing.assert_array_equal(i.numpy(), np.ones(3))


def test_inplace_inside_inference_mode_is_allowed(lib):
    _, i, _, _ = _made_inside(lib)
    with lib.inference_mode():
        i.add_(1)
        i[0] = 5.0
    np.testing.assert_array_equal(i.numpy(), [5.0, 2.0, 2.0])


def test_detach_and_data_of_one_may_be_written_outside(lib):
    _, i, _, _ = _made_inside(lib)
    d = i.detach()
    d.add_(1)
    assert d.is_inference() and d._version == 1
    i.data.add_(1)
    np.testing.assert_array_equal(i.numpy(), [3.0, 3.0, 3.0])


def test_requires_grad_outside_is_refused(lib):
    _, i, _, _ = _made_inside(lib)
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor "
                                           "outside InferenceMode is not allowed"):
        i.requires_grad_()
    assert not i.requires_grad
    i.requires_grad_(False)
    with lib.inference_mode():
        k = lib.ones(2).requires_grad_()
    assert k.requires_grad and k.is_inference()


def test_inplace_on_a_view_made_inside_is_refused_outside(lib):
    x, _, _, v = _made_inside(lib)
    with pytest.raises(RuntimeError, match=VIEW + ". Given that this use case is ambiguous"):
        v.mul_(2)
    assert "inside the inference_mode block" in _message(lambda: v.mul_(2))
    # of a view made outside from it: torch names the view of a view
    w = v.view(3)
    assert w.grad_fn.name() == "ViewBackward0"
    msg = _message(lambda: w.mul_(2))
    assert msg.startswith("Output 0 of View is a view of a view which was created in "
                          "inference mode and is being modified inplace in normal mode.")


def test_view_made_inside_of_a_tensor_not_requiring_grad_may_be_written(lib):
    y = lib.ones(3)
    with lib.inference_mode():
        vy = y.view(3)
    vy.add_(1)
    np.testing.assert_array_equal(y.numpy(), [2.0, 2.0, 2.0])


def test_base_written_after_a_view_made_inside_makes_the_view_unusable(lib):
    x = lib.ones(3, requires_grad=True)
    b = x * 1
    with lib.inference_mode():
        v = b.view(3)
    b.mul_(2)
    expected = ("A view was created in inference mode and its base or another view of its "
                "base has been modified inplace in normal mode.")
    assert _message(lambda: v.grad_fn).startswith(expected)
    assert _message(lambda: v.sum()).startswith(expected)


def _message(f) -> str:
    with pytest.raises(RuntimeError) as info:
        f()
    return str(info.value)
