"""rustgrad.autograd.functional against torch.autograd.functional: values, create_graph,
strict mode and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

from ..parity import f64, parity, same_error

X = np.array([0.4, -1.3, 0.8])
Y = np.array([[0.5, 2.0], [-1.0, 0.3]])
V = np.array([1.0, -0.5, 2.0])


def scalar_fn(x):
    return (x.exp() * x.sin()).sum() + (x ** 2).prod()


def two_in_fn(x, y):
    return (x.unsqueeze(1) * y.sum(0)).tanh(), (y @ y).sum(1) * x[:2]


def scalar_two_in(x, y):
    return (x[:2] * (y ** 2).sum(0)).sum() + x.exp().sum() * y.sigmoid().mean()


@pytest.mark.parametrize("create_graph", [False, True])
def test_vjp_matches_torch(create_graph):
    def run(lib):
        out, vjp = lib.autograd.functional.vjp(
            lambda x, y: two_in_fn(x, y), (f64(lib, X), f64(lib, Y)),
            (f64(lib, np.ones((3, 2))), f64(lib, [1.0, -1.0])), create_graph=create_graph)
        return out, vjp, [t.requires_grad for t in vjp]

    parity(run)


@pytest.mark.parametrize("create_graph", [False, True])
def test_jvp_by_double_backward_trick_matches_torch(create_graph):
    def run(lib):
        out, jvp = lib.autograd.functional.jvp(
            two_in_fn, (f64(lib, X), f64(lib, Y)), (f64(lib, V), f64(lib, np.ones((2, 2)))),
            create_graph=create_graph)
        return out, jvp

    parity(run)


def test_jacobian_of_tuple_function_matches_torch():
    def run(lib):
        return lib.autograd.functional.jacobian(two_in_fn, (f64(lib, X), f64(lib, Y)))

    jac = parity(run)
    assert jac[0][0].shape == (3, 2, 3)
    assert jac[1][1].shape == (2, 2, 2)


def test_jacobian_single_input_and_vectorize_flag_give_torch_values():
    def run(lib):
        f = lambda x: x.sin() * x.sum()  # noqa: E731
        return (lib.autograd.functional.jacobian(f, f64(lib, X)),
                lib.autograd.functional.jacobian(f, f64(lib, X), vectorize=True))

    parity(run)


def test_hessian_matches_torch():
    def run(lib):
        return (lib.autograd.functional.hessian(scalar_fn, f64(lib, X)),
                lib.autograd.functional.hessian(scalar_two_in, (f64(lib, X), f64(lib, Y))))

    h, h2 = parity(run)
    np.testing.assert_allclose(h, h.T)
    assert len(h2) == 2 and len(h2[0]) == 2


@pytest.mark.parametrize("name", ["hvp", "vhp"])
def test_hvp_and_vhp_match_torch(name):
    def run(lib):
        fn = getattr(lib.autograd.functional, name)
        out, res = fn(scalar_fn, f64(lib, X), f64(lib, V))
        out2, res2 = fn(scalar_two_in, (f64(lib, X), f64(lib, Y)),
                        (f64(lib, V), f64(lib, np.ones((2, 2)))), create_graph=True)
        return out, res, out2, res2, [r.requires_grad for r in res2]

    parity(run)


def test_hessian_create_graph_is_differentiable_as_torch():
    def run(lib):
        x = f64(lib, X, True)
        h = lib.autograd.functional.hessian(scalar_fn, x, create_graph=True)
        (g,) = lib.autograd.grad(h.sum(), x)
        return h, g

    parity(run)


def test_vjp_independent_input_gives_zeros_unless_strict():
    def run(lib):
        f = lambda x, y: x * 2  # noqa: E731
        return lib.autograd.functional.vjp(f, (f64(lib, X), f64(lib, V)), f64(lib, V))[1]

    assert not parity(run)[1].any()


STRICT_ERRORS = [
    ("vjp_independent", lambda lib: lib.autograd.functional.vjp(
        lambda x, y: x * 2, (f64(lib, X), f64(lib, V)), f64(lib, V), strict=True),
     "The output of the user-provided function is independent of input 1. This is not allowed "
     "in strict mode."),
    ("jacobian_independent", lambda lib: lib.autograd.functional.jacobian(
        lambda x, y: x * 2, (f64(lib, X), f64(lib, V)), strict=True),
     "Output 0 of the user-provided function is independent of input 1. This is not allowed in "
     "strict mode."),
    ("output_no_grad", lambda lib: lib.autograd.functional.vjp(
        lambda x: f64(lib, V), f64(lib, X), f64(lib, V), strict=True),
     "Output 0 of the user-provided function does not require gradients."),
    ("hessian_linear", lambda lib: lib.autograd.functional.hessian(
        lambda x: x.sum(), f64(lib, X), strict=True),
     "found that the jacobian of the user-provided function with respect to input 0 is "
     "independent of the input"),
    ("v_wrong_size", lambda lib: lib.autograd.functional.vjp(
        lambda x: x * 2, f64(lib, X), f64(lib, [1.0])),
     "v has invalid size: should be torch.Size([3]) but got torch.Size([1])."),
    ("v_none_non_scalar", lambda lib: lib.autograd.functional.vjp(lambda x: x * 2, f64(lib, X)),
     "The vector v can only be None if the user-provided function returns a single Tensor with "
     "a single element."),
    ("hvp_tuple_output", lambda lib: lib.autograd.functional.hvp(
        lambda x: (x.sum(), x.sum()), f64(lib, X), f64(lib, V)),
     "The function given to hvp should return a single Tensor"),
    ("input_not_tensor", lambda lib: lib.autograd.functional.jacobian(lambda x: x, (1.0,)),
     "The inputs given to jacobian must be either a Tensor or a tuple of Tensors but the value "
     "at index 0 has type"),
]


@pytest.mark.parametrize("case", STRICT_ERRORS, ids=[c[0] for c in STRICT_ERRORS])
def test_functional_errors_match_torch(case):
    _, fn, phrase = case
    same_error(fn, phrase)
