"""backward() and autograd.grad(): arguments, accumulation, retain_graph, inputs=, errors."""

from __future__ import annotations

import pytest

SECOND_TIME = "Trying to backward through the graph a second time"
IMPLICIT = "grad can be implicitly created only for scalar outputs"
NO_GRAD_FN = "element 0 of tensors does not require grad and does not have a grad_fn"
UNUSED = "The differentiated Tensor at index 1 appears to not have been used in the graph"


# ---- backward -----------------------------------------------------------------------------
def test_backward_scalar_populates_leaf_grads(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, 4.0], requires_grad=True)

    (x * w).sum().backward()

    assert x.grad.tolist() == [3.0, 4.0]
    assert w.grad.tolist() == [1.0, 2.0]


def test_backward_non_scalar_without_gradient_raises(lib):
    y = lib.tensor([1.0, 2.0], requires_grad=True) * 2

    with pytest.raises(RuntimeError, match=IMPLICIT):
        y.backward()


def test_backward_with_gradient_argument_weights_outputs(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)

    (x * 2).backward(gradient=lib.tensor([1.0, 10.0]))

    assert x.grad.tolist() == [2.0, 20.0]


def test_backward_gradient_of_wrong_shape_raises(lib):
    y = lib.tensor([1.0, 2.0], requires_grad=True) * 2

    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of"):
        y.backward(lib.ones(3))


def test_backward_on_tensor_without_grad_raises_element_0(lib):
    with pytest.raises(RuntimeError, match=NO_GRAD_FN):
        lib.tensor(2.0).backward()


def test_backward_on_leaf_accumulates_ones(lib):
    x = lib.tensor(2.0, requires_grad=True)

    x.backward()

    assert x.grad.item() == 1.0


def test_backward_twice_without_retain_graph_raises(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    loss.backward()

    with pytest.raises(RuntimeError, match=SECOND_TIME):
        loss.backward()

    assert x.grad.tolist() == [2.0, 4.0]


def test_backward_retain_graph_true_accumulates_grad_doubles(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()

    loss.backward(retain_graph=True)
    first = x.grad.tolist()
    loss.backward()

    assert first == [2.0, 4.0]
    assert x.grad.tolist() == [4.0, 8.0]


def test_backward_two_graphs_accumulate_into_grad(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)

    (x * 2).sum().backward()
    g = x.grad
    (x * 3).sum().backward()

    assert x.grad.tolist() == [5.0, 5.0]
    assert x.grad is g  # accumulated in place, as torch does outside create_graph


def test_backward_after_grad_set_none_starts_fresh(lib):
    x = lib.tensor([1.0], requires_grad=True)
    (x * 2).backward()

    x.grad = None
    (x * 3).backward()

    assert x.grad.tolist() == [3.0]


def test_backward_shared_subexpression_sums_gradients(lib):
    x = lib.tensor([2.0], requires_grad=True)
    y = x * x

    (y + y * 3).backward()

    assert x.grad.tolist() == [16.0]


def test_backward_inputs_restricts_accumulation_to_named_leaves(lib):
    a = lib.tensor([1.0], requires_grad=True)
    b = lib.tensor([2.0], requires_grad=True)

    (a * b).backward(inputs=[a])

    assert a.grad.tolist() == [2.0]
    assert b.grad is None


def test_backward_inputs_non_leaf_populates_its_grad(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    y = a * 3

    (y * y).sum().backward(inputs=[y])

    assert y.grad.tolist() == [6.0, 12.0]
    assert a.grad is None


def test_backward_inputs_unreached_leaf_keeps_grad_none(lib):
    a = lib.tensor([1.0], requires_grad=True)
    b = lib.tensor([3.0], requires_grad=True)

    (a * 2).sum().backward(inputs=[b])

    assert b.grad is None and a.grad is None


def test_backward_inputs_empty_raises(lib):
    a = lib.tensor([1.0], requires_grad=True)

    with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty"):
        (a * 2).sum().backward(inputs=[])


def test_autograd_backward_function_matches_method(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)

    lib.autograd.backward([(a * 3).sum(), (a * a).sum()])

    assert a.grad.tolist() == [5.0, 7.0]


def test_autograd_backward_with_grad_tensors(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)

    lib.autograd.backward(a * 2, grad_tensors=lib.tensor([1.0, 3.0]))

    assert a.grad.tolist() == [2.0, 6.0]


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_backward_create_graph_makes_differentiable_grad(lib):
    x = lib.tensor([3.0], requires_grad=True)

    (x * x * x).backward(create_graph=True)
    g = x.grad

    assert g.requires_grad and g.tolist() == [27.0]
    (gx,) = lib.autograd.grad(g.sum(), x)
    assert gx.tolist() == [18.0]


def test_backward_create_graph_warns_reference_cycle_once(lib):
    import subprocess
    import sys

    code = (
        f"import warnings, {lib.__name__} as m\n"
        "x = m.tensor([3.0], requires_grad=True)\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    (x * x).backward(create_graph=True)\n"
        "    (x * x).backward(create_graph=True)\n"
        "print(len(w), 'create a reference cycle' in str(w[0].message))\n"
    )

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.split() == ["1", "True"]


# ---- autograd.grad ------------------------------------------------------------------------
def test_autograd_grad_returns_grads_and_leaves_dot_grad_untouched(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, 4.0], requires_grad=True)

    ga, gb = lib.autograd.grad((a * b).sum(), [a, b])

    assert ga.tolist() == [3.0, 4.0] and gb.tolist() == [1.0, 2.0]
    assert a.grad is None and b.grad is None


def test_autograd_grad_single_input_returns_one_tuple(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)

    out = lib.autograd.grad((a * a).sum(), a)

    assert isinstance(out, tuple) and len(out) == 1
    assert out[0].tolist() == [2.0, 4.0]


def test_autograd_grad_non_leaf_input(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    y = a * 3

    (gy,) = lib.autograd.grad((y * y).sum(), y)

    assert gy.tolist() == [6.0, 12.0]
    assert a.grad is None


def test_autograd_grad_unused_input_raises(lib):
    a = lib.tensor([1.0], requires_grad=True)
    b = lib.tensor([1.0], requires_grad=True)

    with pytest.raises(RuntimeError, match=UNUSED):
        lib.autograd.grad((a * 2).sum(), [a, b])


def test_autograd_grad_allow_unused_returns_none(lib):
    a = lib.tensor([1.0], requires_grad=True)
    b = lib.tensor([1.0], requires_grad=True)

    ga, gb = lib.autograd.grad((a * 2).sum(), [a, b], allow_unused=True)

    assert ga.tolist() == [2.0] and gb is None


def test_autograd_grad_materialize_grads_gives_zeros(lib):
    a = lib.tensor([1.0], requires_grad=True)
    b = lib.tensor([1.0, 1.0], requires_grad=True)

    _, gb = lib.autograd.grad((a * 2).sum(), [a, b], materialize_grads=True)

    assert gb.tolist() == [0.0, 0.0]
    assert not gb.requires_grad  # zeros that require grad only under create_graph


def test_autograd_grad_non_scalar_needs_grad_outputs(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)

    with pytest.raises(RuntimeError, match=IMPLICIT):
        lib.autograd.grad(a * 2, a)
    (g,) = lib.autograd.grad(a * 2, a, grad_outputs=lib.tensor([1.0, 5.0]))
    assert g.tolist() == [2.0, 10.0]


def test_autograd_grad_twice_without_retain_graph_raises(lib):
    a = lib.tensor([1.0], requires_grad=True)
    loss = (a * a).sum()
    lib.autograd.grad(loss, a)

    with pytest.raises(RuntimeError, match=SECOND_TIME):
        lib.autograd.grad(loss, a)


def test_autograd_grad_retain_graph_allows_second_call(lib):
    a = lib.tensor([1.0], requires_grad=True)
    loss = (a * a).sum()

    (g1,) = lib.autograd.grad(loss, a, retain_graph=True)
    (g2,) = lib.autograd.grad(loss, a)

    assert g1.tolist() == g2.tolist() == [2.0]


def test_autograd_grad_create_graph_second_derivative(lib):
    x = lib.tensor([2.0], requires_grad=True)

    (g,) = lib.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (gg,) = lib.autograd.grad(g.sum(), x)

    assert g.requires_grad and g.tolist() == [12.0]
    assert gg.tolist() == [12.0]


def test_autograd_grad_output_without_grad_raises(lib):
    a = lib.tensor([1.0], requires_grad=True)

    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        lib.autograd.grad(lib.ones(1).sum(), a)


def test_autograd_grad_runs_tensor_hooks_of_input(lib):
    a = lib.tensor([1.0], requires_grad=True)
    y = a * 2
    y.register_hook(lambda g: g * 10)

    (gy,) = lib.autograd.grad((y * 3).sum(), y)

    assert gy.tolist() == [30.0]
