"""hardshrink, softshrink, tanhshrink, threshold/threshold_, glu, rrelu/rrelu_ in evaluation, and
the in-place spellings of nn.functional (elu_, celu_, selu_, hardtanh_, leaky_relu_) against
torch: values, grad_fn names, gradients, double backward, errors, and their modules' reprs."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import F, check, check_double_backward, check_error, grad_ok, ints, parity

# values near the bands' edges (0.5) are avoided by the random inputs' spread; EDGES has them
PROGRAMS = {
    "hardshrink": lambda L, a: F(L).hardshrink(a),
    "hardshrink_lambd": lambda L, a: F(L).hardshrink(a, 1.2),
    "hardshrink_torch": lambda L, a: L.hardshrink(a, 0.3),
    "hardshrink_method": lambda L, a: a.hardshrink(0.7),
    "softshrink": lambda L, a: F(L).softshrink(a),
    "softshrink_lambd": lambda L, a: F(L).softshrink(a, 1.1),
    "tanhshrink": lambda L, a: F(L).tanhshrink(a),
    "threshold": lambda L, a: F(L).threshold(a, 0.3, -2.0),
    "threshold_torch": lambda L, a: L.threshold(a, -0.1, 5.0),
    "threshold_inplace": lambda L, a: F(L).threshold(a * 1, 0.3, 7.0, inplace=True),
    "threshold_": lambda L, a: F(L).threshold_(a * 1, 0.0, 1.5),
    "threshold__torch": lambda L, a: L.threshold_(a * 1, 0.0, 1.5),
    "glu": lambda L, a: F(L).glu(a),
    "glu_dim0": lambda L, a: F(L).glu(a, 0),
    "rrelu_eval": lambda L, a: F(L).rrelu(a),
    "rrelu_eval_bounds": lambda L, a: F(L).rrelu(a, 0.2, 0.6),
    "rrelu_torch": lambda L, a: L.rrelu(a, 0.1, 0.3),
    "rrelu_inplace_eval": lambda L, a: F(L).rrelu(a * 1, 0.1, 0.5, inplace=True),
    "rrelu_": lambda L, a: F(L).rrelu_(a * 1, 0.1, 0.5),
    "elu_": lambda L, a: F(L).elu_(a * 1, 0.7),
    "celu_": lambda L, a: F(L).celu_(a * 1, 1.5),
    "celu__torch": lambda L, a: L.celu_(a * 1),
    "selu_": lambda L, a: F(L).selu_(a * 1),
    "selu__torch": lambda L, a: L.selu_(a * 1),
    "hardtanh_": lambda L, a: F(L).hardtanh_(a * 1, -0.5, 0.8),
    "leaky_relu_": lambda L, a: F(L).leaky_relu_(a * 1, 0.2),
}


@pytest.mark.parametrize("shape", [(4, 2), (2, 6), (4,)], ids=str)
@pytest.mark.parametrize("op", sorted(PROGRAMS))
def test_values_gradients_and_names_match_torch(op, shape, device):
    check(PROGRAMS[op], shape, device=device)


@pytest.mark.parametrize("op", sorted(PROGRAMS))
def test_empty_input_matches_torch(op, device):
    if op.startswith("glu"):
        check(PROGRAMS[op], (0, 2) if op == "glu" else (2, 0), device=device)
    else:
        check(PROGRAMS[op], (0, 3), device=device)


EDGES = np.array([-0.5, 0.5, -0.3, 0.3, 0.0, -0.0, 2.0, -2.0, np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("op", ["hardshrink", "softshrink", "threshold", "rrelu_eval",
                                "hardshrink_torch", "threshold_"])
def test_edge_values_and_their_gradients_match_torch(op, device):
    # the bands' bounds themselves, signed zeros, infinities and NaN
    fn = {"threshold": lambda L, a: F(L).threshold(a, 0.3, -2.0),
          "threshold_": lambda L, a: F(L).threshold_(a * 1, 0.5, 9.0)}.get(op, PROGRAMS[op])
    check(fn, EDGES, device=device)


@pytest.mark.parametrize("op", ["hardshrink", "softshrink", "threshold", "glu", "rrelu_eval",
                                "threshold_inplace"])
def test_double_backward_matches_torch(op, device):
    check_double_backward(PROGRAMS[op], (3, 4), device=device)


@pytest.mark.parametrize("op", ["softshrink", "glu", "glu_dim0", "tanhshrink", "rrelu_eval"])
def test_gradcheck(op):
    assert grad_ok(PROGRAMS[op], (2, 4))


def test_saved_attributes_match_torch():
    def program(lib):
        x = lib.tensor([[-1.0, 0.25, 2.0, -0.75]], dtype=lib.float64, requires_grad=True)
        h, s = F(lib).hardshrink(x, 0.3), F(lib).softshrink(x, 0.4)
        t = F(lib).threshold(x, 0.1, 3.0)
        r = F(lib).rrelu(x, 0.1, 0.2)
        return (h.grad_fn._saved_lambd, s.grad_fn._saved_lambd, t.grad_fn._saved_threshold,
                h.grad_fn._saved_self, r.grad_fn._saved_lower, r.grad_fn._saved_upper,
                r.grad_fn._saved_training)

    parity(program)


def test_integer_inputs_match_torch(device):
    # threshold keeps the dtype (the value is cast); the shrinks refuse integers
    check(lambda L, a: F(L).threshold(a, 1.5, 7.5), ints([[1, 2], [3, -4]]), dtypes=(None,),
          device=device)
    check_error(lambda L, a: F(L).hardshrink(a), ints([1, 2]), device=device,
                phrase='"hardshrink_cpu" not implemented for \'Long\'')
    check_error(lambda L, a: F(L).softshrink(a), ints([1, 2]), device=device,
                phrase='"softshrink_check" not implemented for \'Long\'')
    check_error(lambda L, a: F(L).glu(a), ints([1, 2]), device=device,
                phrase='"glu_cpu" not implemented for \'Long\'')
    check_error(lambda L, a: F(L).rrelu(a), ints([1, 2]), device=device,
                phrase='"leaky_relu_cpu" not implemented for \'Long\'')


def test_errors_match_torch(device):
    check_error(lambda L, a: F(L).glu(a), (3, 5), device=device,
                phrase="Halving dimension must be even, but dimension 1 is size 5")
    check_error(lambda L, a: F(L).glu(a.sum()), (3, 4), device=device,
                phrase="glu does not support scalars because halving size must be even")
    for dt in (np.float64, np.float32):
        check_error(lambda L, a: F(L).softshrink(a, -1.0), (3,), device=device, dtype=dt,
                    phrase="but found -1")
    check_error(lambda L, a: F(L).hardtanh(a, 1.0, -1.0), (3,), device=device,
                phrase="min_val cannot be greater than max_val")
    # hardtanh_ does not check: crossed bounds clamp everything to max_val
    check(lambda L, a: F(L).hardtanh_(a * 1, 1.0, -1.0), (3,), device=device)


def test_inplace_forms_refuse_a_leaf_that_requires_grad(device):
    for fn in (lambda L, a: F(L).threshold_(a, 0.0, 1.0), lambda L, a: F(L).elu_(a),
               lambda L, a: F(L).rrelu_(a), lambda L, a: F(L).leaky_relu_(a)):
        check_error(fn, (3,), device=device, requires_grad=True,
                    phrase="a leaf Variable that requires grad is being used in an in-place")


def test_rrelu_uses_the_mean_slope_in_evaluation():
    x = rustgrad.tensor([-2.0, -1.0, 3.0], requires_grad=True)
    y = rustgrad.nn.functional.rrelu(x, 0.2, 0.4)
    assert y.tolist() == pytest.approx([-0.6, -0.3, 3.0])
    y.sum().backward()
    assert x.grad.tolist() == pytest.approx([0.3, 0.3, 1.0])


MODULES = {
    "GLU": lambda nn: nn.GLU(0),
    "Hardshrink": lambda nn: nn.Hardshrink(0.3),
    "Softshrink": lambda nn: nn.Softshrink(),
    "Threshold": lambda nn: nn.Threshold(0.1, 20.0),
    "Threshold_inplace": lambda nn: nn.Threshold(0.1, 20, True),
    "RReLU": lambda nn: nn.RReLU().eval(),
    "RReLU_args": lambda nn: nn.RReLU(0.1, 0.3, inplace=True).eval(),
    "Softmax2d": lambda nn: nn.Softmax2d(),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_match_torch(name):
    def program(lib):
        m = MODULES[name](lib.nn)
        x = lib.tensor(np.linspace(-2, 2, 24).reshape(2, 3, 2, 2)[:, :2], requires_grad=True)
        y = m(x * 1)
        y.sum().backward()
        return repr(m), list(m.state_dict()), y, x.grad

    parity(program)


def test_softmax2d_refuses_other_ranks():
    for lib in (torch, rustgrad):
        with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D"):
            lib.nn.Softmax2d()(lib.zeros(2, 3))
