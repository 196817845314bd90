"""rustgrad.autograd.functional (vjp, jvp, jacobian, hessian, vhp, hvp) against
torch.autograd.functional: values, the nesting of results (bare Tensor or tuple at each level),
requires_grad of every result, create_graph results differentiated again, strict-mode and argument
errors and the order torch checks them in; float64 finite differences as a second oracle; the
devices."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import f64, parity, same_error, to_np

X = np.array([0.4, -1.3, 0.8])
Y = np.array([[0.5, 2.0], [-1.0, 0.3]])
V = np.array([1.0, -0.5, 2.0])
W = np.array([[0.3, -1.2], [0.7, 0.1]])
S = np.array(0.7)


def functional(lib: Any) -> Any:
    return lib.autograd.functional


# ---- functions under test (methods only, so one body serves torch and rustgrad) ----------------
def one_to_one(x):
    return x.sin() * x.sum()


def one_to_many(x):
    return x.exp(), (x ** 2).sum(), x.reshape(3, 1) * x


def many_to_one(x, y):
    return (x[:2].unsqueeze(1) * y).tanh()


def many_to_many(x, y):
    return (x.unsqueeze(1) * y.sum(0)).tanh(), (y @ y).sum(1) * x[:2]


def one_to_one_in_tuples(x):
    return (x * x.sigmoid(),)


def zero_dim(s):
    return s.exp() * s


def scalar_fn(x):
    return (x.exp() * x.sin()).sum() + (x ** 2).prod()


def scalar_two_in(x, y):
    return (x[:2] * (y ** 2).sum(0)).sum() + x.exp().sum() * y.sigmoid().mean()


def scalar_of_zero_dim(s):
    return s.sin() * s ** 3


def structure(r: Any) -> Any:
    """The nesting of a result, with each tensor's shape, dtype, requires_grad and whether it has
    a grad_fn: compared across libraries by `parity`."""
    if isinstance(r, tuple):
        return tuple(structure(t) for t in r)
    return ("tensor", tuple(r.shape), str(r.dtype).split(".")[-1], r.requires_grad,
            r.grad_fn is not None)


def flat(r: Any) -> list:
    return [t for item in r for t in flat(item)] if isinstance(r, tuple) else [r]


# name: (function, inputs, v for vjp (one per output), v for jvp (one per input))
MAPS = {
    "one_to_one": (one_to_one, lambda lib, rg: f64(lib, X, rg), lambda lib: f64(lib, V),
                   lambda lib: f64(lib, V)),
    "one_to_many": (one_to_many, lambda lib, rg: f64(lib, X, rg),
                    lambda lib: (f64(lib, V), f64(lib, 1.5), f64(lib, np.outer(V, X))),
                    lambda lib: f64(lib, V)),
    "many_to_one": (many_to_one, lambda lib, rg: (f64(lib, X, rg), f64(lib, Y, rg)),
                    lambda lib: f64(lib, W), lambda lib: (f64(lib, V), f64(lib, W))),
    "many_to_many": (many_to_many, lambda lib, rg: (f64(lib, X, rg), f64(lib, Y, rg)),
                     lambda lib: (f64(lib, np.ones((3, 2))), f64(lib, [1.0, -1.0])),
                     lambda lib: (f64(lib, V), f64(lib, W))),
    "tuples_of_one": (one_to_one_in_tuples, lambda lib, rg: (f64(lib, X, rg),),
                      lambda lib: (f64(lib, V),), lambda lib: (f64(lib, V),)),
    "zero_dim": (zero_dim, lambda lib, rg: f64(lib, S, rg), lambda lib: f64(lib, 2.0),
                 lambda lib: f64(lib, -1.5)),
}

# name: (scalar function, inputs, v (one per input))
SCALARS = {
    "one_input": (scalar_fn, lambda lib, rg: f64(lib, X, rg), lambda lib: f64(lib, V)),
    "two_inputs": (scalar_two_in, lambda lib, rg: (f64(lib, X, rg), f64(lib, Y, rg)),
                   lambda lib: (f64(lib, V), f64(lib, W))),
    "tuple_of_one": (lambda x: (x ** 3).sum(), lambda lib, rg: (f64(lib, X, rg),),
                     lambda lib: (f64(lib, V),)),
    "zero_dim": (scalar_of_zero_dim, lambda lib, rg: f64(lib, S, rg), lambda lib: f64(lib, 1.0)),
}

GRID = [(cg, rg) for cg in (False, True) for rg in (False, True)]
GRID_IDS = [f"create_graph={cg}-inputs_require_grad={rg}" for cg, rg in GRID]


# ---- values and structure ---------------------------------------------------------------------
@pytest.mark.parametrize("create_graph,requires_grad", GRID, ids=GRID_IDS)
@pytest.mark.parametrize("case", MAPS)
def test_vjp_values_and_structure_match_torch(case, create_graph, requires_grad):
    fn, inputs, v, _ = MAPS[case]

    def run(lib):
        res = functional(lib).vjp(fn, inputs(lib, requires_grad), v(lib), create_graph)
        return res, structure(res)

    parity(run)


@pytest.mark.parametrize("create_graph,requires_grad", GRID, ids=GRID_IDS)
@pytest.mark.parametrize("case", MAPS)
def test_jvp_values_and_structure_match_torch(case, create_graph, requires_grad):
    fn, inputs, _, v = MAPS[case]

    def run(lib):
        res = functional(lib).jvp(fn, inputs(lib, requires_grad), v(lib), create_graph)
        return res, structure(res)

    parity(run)


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("create_graph,requires_grad", GRID, ids=GRID_IDS)
@pytest.mark.parametrize("case", MAPS)
def test_jacobian_values_and_structure_match_torch(case, create_graph, requires_grad, vectorize):
    fn, inputs, _, _ = MAPS[case]

    def run(lib):
        jac = functional(lib).jacobian(fn, inputs(lib, requires_grad), create_graph,
                                       vectorize=vectorize)
        return jac, structure(jac)

    parity(run)


def test_jacobian_blocks_have_output_then_input_shape():
    jac = rustgrad.autograd.functional.jacobian(many_to_many, (f64(rustgrad, X), f64(rustgrad, Y)))
    assert [[tuple(b.shape) for b in row] for row in jac] == [
        [(3, 2, 3), (3, 2, 2, 2)], [(2, 3), (2, 2, 2)]]


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("create_graph,requires_grad", GRID, ids=GRID_IDS)
@pytest.mark.parametrize("case", SCALARS)
def test_hessian_values_and_structure_match_torch(case, create_graph, requires_grad, vectorize):
    fn, inputs, _ = SCALARS[case]

    def run(lib):
        h = functional(lib).hessian(fn, inputs(lib, requires_grad), create_graph,
                                    vectorize=vectorize)
        return h, structure(h)

    parity(run)


@pytest.mark.parametrize("name", ["vhp", "hvp"])
@pytest.mark.parametrize("create_graph,requires_grad", GRID, ids=GRID_IDS)
@pytest.mark.parametrize("case", SCALARS)
def test_vhp_and_hvp_values_and_structure_match_torch(case, create_graph, requires_grad, name):
    fn, inputs, v = SCALARS[case]

    def run(lib):
        res = getattr(functional(lib), name)(fn, inputs(lib, requires_grad), v(lib),
                                             create_graph)
        return res, structure(res)

    parity(run)


V_NONE_CASES = {
    "vjp_scalar_output": lambda lib: functional(lib).vjp(lambda x: (x ** 2).sum(), f64(lib, X)),
    "vjp_one_element_tuple": lambda lib: functional(lib).vjp(
        lambda x: ((x ** 3).sum().reshape(1, 1),), f64(lib, X)),
    "jvp_one_element_input": lambda lib: functional(lib).jvp(lambda x: x.exp(), f64(lib, [0.3])),
    "hvp_zero_dim_input": lambda lib: functional(lib).hvp(lambda s: s ** 3, f64(lib, 2.0)),
    "vhp_one_element_tuple": lambda lib: functional(lib).vhp(
        lambda x: (x ** 3).sum(), (f64(lib, [2.0]),)),
}


@pytest.mark.parametrize("case", V_NONE_CASES)
def test_v_none_means_ones_for_one_element_as_torch(case):
    parity(lambda lib: (V_NONE_CASES[case](lib), structure(V_NONE_CASES[case](lib))))


def test_independent_inputs_and_outputs_give_zeros_as_torch():
    def run(lib):
        F = functional(lib)
        w = f64(lib, V, True)  # reached by an output, not an input

        def f(x, y):
            return x * 2, w * 3, f64(lib, V)

        res = (F.vjp(f, (f64(lib, X), f64(lib, V)), (f64(lib, V),) * 3),
               F.jvp(f, (f64(lib, X), f64(lib, V)), (f64(lib, V),) * 2),
               F.jacobian(f, (f64(lib, X), f64(lib, V))),
               F.hessian(lambda x, y: (x ** 2).sum() + y.sum(), (f64(lib, X), f64(lib, V))),
               F.hvp(lambda x: (x * w).sum(), f64(lib, X), f64(lib, V)),
               F.vhp(lambda x: (x * w).sum(), f64(lib, X), f64(lib, V)))
        return res, structure(res)

    res, _ = parity(run)
    assert not res[0][1][1].any() and not res[2][1][0].any() and not res[4][1].any()


def test_outputs_that_do_not_require_grad_are_returned_detached_with_zero_derivatives():
    def run(lib):
        F = functional(lib)
        x = f64(lib, X)
        res = (F.vjp(lambda x: lib.ones(3), x, lib.ones(3), create_graph=True),
               F.jvp(lambda x: (x * x, lib.ones(2)), x, f64(lib, V), create_graph=True),
               F.jacobian(lambda x: (x * x, lib.ones(2)), x, create_graph=True, vectorize=True),
               F.hessian(lambda x: lib.ones((), dtype=lib.float64), x, create_graph=True))
        return res, structure(res)

    parity(run)


# ---- create_graph: results differentiable again, as in torch ----------------------------------
def _two_input_results(lib: Any, name: str, x: Any, y: Any, create_graph: bool) -> Any:
    F = functional(lib)
    v_in = (f64(lib, V), f64(lib, W))
    if name == "vjp":
        return F.vjp(many_to_many, (x, y), (f64(lib, np.ones((3, 2))), f64(lib, [1.0, -1.0])),
                     create_graph)
    if name == "jvp":
        return F.jvp(many_to_many, (x, y), v_in, create_graph)
    if name == "jacobian":
        return F.jacobian(many_to_many, (x, y), create_graph)
    if name == "hessian":
        return F.hessian(scalar_two_in, (x, y), create_graph)
    return getattr(F, name)(scalar_two_in, (x, y), v_in, create_graph)


NAMES = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


@pytest.mark.parametrize("name", NAMES)
def test_create_graph_results_differentiate_as_torch(name):
    def run(lib):
        x, y = f64(lib, X, True), f64(lib, Y, True)
        res = _two_input_results(lib, name, x, y, create_graph=True)
        weights = [f64(lib, np.linspace(-1, 1, t.numel()).reshape(tuple(t.shape))) for t in flat(res)]
        total = sum((t * w).sum() for t, w in zip(flat(res), weights))
        return lib.autograd.grad(total, (x, y), allow_unused=True, materialize_grads=True)

    parity(run)


@pytest.mark.parametrize("name", NAMES)
def test_results_without_create_graph_are_detached_and_leave_grad_alone(name):
    for lib in (torch, rustgrad):
        x, y = f64(lib, X, True), f64(lib, Y, True)
        res = _two_input_results(lib, name, x, y, create_graph=False)
        assert not any(t.requires_grad for t in flat(res)), lib.__name__
        assert x.grad is None and y.grad is None and x.is_leaf


def test_hessian_with_create_graph_is_differentiable_again_as_torch():
    def run(lib):
        x = f64(lib, X, True)
        h = functional(lib).hessian(scalar_fn, x, create_graph=True)
        (g,) = lib.autograd.grad((h * f64(lib, np.outer(V, X))).sum(), x)
        return h, g

    parity(run)


def test_under_no_grad_derivatives_are_computed_and_the_mode_kept():
    def run(lib):
        with lib.no_grad():
            F = functional(lib)
            res = (F.jacobian(one_to_one, f64(lib, X, True)),
                   F.hessian(scalar_fn, f64(lib, X), create_graph=True),
                   F.hvp(scalar_fn, f64(lib, X), f64(lib, V)))
            return res, structure(res), lib.is_grad_enabled()

    assert parity(run)[2] is False


# ---- float64 finite differences -----------------------------------------------------------------
def _numeric_jacobian(fn: Callable[..., Any], arrays: list, eps: float = 1e-6) -> list:
    """Central differences: blocks[i][j] of shape out_i.shape + in_j.shape (rustgrad forward)."""
    def outputs(arrs):
        out = fn(*[rustgrad.tensor(a) for a in arrs])
        return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]

    base = outputs(arrays)
    blocks = [[np.zeros(o.shape + a.shape) for a in arrays] for o in base]
    for j, a in enumerate(arrays):
        for idx in np.ndindex(a.shape):
            hi = [b.copy() for b in arrays]
            lo = [b.copy() for b in arrays]
            hi[j][idx] += eps
            lo[j][idx] -= eps
            for i, (p, m) in enumerate(zip(outputs(hi), outputs(lo))):
                blocks[i][j][(...,) + idx] = (p - m) / (2 * eps)
    return blocks


def _numeric_hessian(fn: Callable[..., Any], arrays: list) -> list:
    def gradient(*xs):
        xs = tuple(x.requires_grad_() for x in xs)
        return rustgrad.autograd.grad(fn(*xs), xs)

    return _numeric_jacobian(gradient, arrays, eps=1e-5)


@pytest.mark.parametrize("case", ["one_to_one", "one_to_many", "many_to_one", "many_to_many"])
def test_jacobian_vjp_jvp_agree_with_finite_differences(case):
    fn, inputs, v_out, v_in = MAPS[case]
    xs = inputs(rustgrad, False)
    arrays = [x.numpy() for x in (xs if isinstance(xs, tuple) else (xs,))]
    numeric = _numeric_jacobian(fn, arrays)
    jac = rustgrad.autograd.functional.jacobian(fn, xs)
    jac = jac if isinstance(jac, tuple) else (jac,)
    jac = [row if isinstance(row, tuple) else (row,) for row in jac]
    for got_row, want_row in zip(jac, numeric):
        for got, want in zip(got_row, want_row):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-8)
    # v^T J and J v from the numeric Jacobian
    vo = [t.numpy() for t in flat(v_out(rustgrad))]
    vi = [t.numpy() for t in flat(v_in(rustgrad))]
    vjp = flat(rustgrad.autograd.functional.vjp(fn, xs, v_out(rustgrad))[1])
    jvp = flat(rustgrad.autograd.functional.jvp(fn, xs, v_in(rustgrad))[1])
    for j in range(len(arrays)):
        want = sum(np.tensordot(vo[i], numeric[i][j], axes=vo[i].ndim) for i in range(len(vo)))
        np.testing.assert_allclose(vjp[j].numpy(), want, rtol=1e-6, atol=1e-8)
    for i in range(len(numeric)):
        want = sum(np.tensordot(numeric[i][j], vi[j], axes=vi[j].ndim) for j in range(len(vi)))
        np.testing.assert_allclose(jvp[i].numpy(), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case", ["one_input", "two_inputs"])
def test_hessian_vhp_hvp_agree_with_finite_differences(case):
    fn, inputs, v = SCALARS[case]
    xs = inputs(rustgrad, False)
    xs_t = xs if isinstance(xs, tuple) else (xs,)
    arrays = [x.numpy() for x in xs_t]
    numeric = _numeric_hessian(fn, arrays)
    h = rustgrad.autograd.functional.hessian(fn, xs)
    h = h if isinstance(h, tuple) else ((h,),)
    for got_row, want_row in zip(h, numeric):
        for got, want in zip(got_row, want_row):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-7)
    vs = [t.numpy() for t in flat(v(rustgrad))]
    vhp = flat(rustgrad.autograd.functional.vhp(fn, xs, v(rustgrad))[1])
    hvp = flat(rustgrad.autograd.functional.hvp(fn, xs, v(rustgrad))[1])
    for i in range(len(arrays)):
        h_v = sum(np.tensordot(numeric[i][j], vs[j], axes=vs[j].ndim) for j in range(len(vs)))
        v_h = sum(np.tensordot(vs[j], numeric[j][i], axes=vs[j].ndim) for j in range(len(vs)))
        np.testing.assert_allclose(hvp[i].numpy(), h_v, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(vhp[i].numpy(), v_h, rtol=1e-5, atol=1e-7)


# ---- errors: strict mode, one case per stage at which a derivative can be missing ---------------
def _w(lib: Any) -> Any:
    """A tensor that requires grad but is no input: outputs reach it, not the inputs."""
    return f64(lib, V, True)


def _xv(lib: Any) -> tuple:
    return f64(lib, X), f64(lib, V)


STRICT_ERRORS = [
    ("vjp_output_no_grad", lambda lib: functional(lib).vjp(
        lambda x: f64(lib, V), f64(lib, X), f64(lib, V), strict=True),
     "Output 0 of the user-provided function does not require gradients. The outputs must be "
     "computed in a differentiable manner from the input when running in strict mode."),
    ("vjp_output_no_grad_before_v_none", lambda lib: functional(lib).vjp(
        lambda x: (x * 2, f64(lib, V)), f64(lib, X), strict=True),
     "Output 1 of the user-provided function does not require gradients."),
    ("vjp_independent_input", lambda lib: functional(lib).vjp(
        lambda x, y: x * 2, _xv(lib), f64(lib, V), strict=True),
     "The output of the user-provided function is independent of input 1. This is not allowed "
     "in strict mode."),
    ("vjp_linear_create_graph", lambda lib: functional(lib).vjp(
        lambda x, y: x * 2, _xv(lib), f64(lib, V), strict=True, create_graph=True),
     "The jacobian of the user-provided function is independent of input 0. This is not allowed "
     "in strict mode when create_graph=True."),
    ("jvp_output_no_grad", lambda lib: functional(lib).jvp(
        lambda x: (x * 2, x.detach()), f64(lib, X), f64(lib, V), strict=True),
     "Output 1 of the user-provided function does not require gradients."),
    ("jvp_independent_input", lambda lib: functional(lib).jvp(
        lambda x, y: x * 2, _xv(lib), (f64(lib, V),) * 2, strict=True),
     "The output of the user-provided function is independent of input 1."),
    ("jvp_output_not_from_inputs", lambda lib: functional(lib).jvp(
        lambda x: (x ** 2, _w(lib) * 2), f64(lib, X), f64(lib, V), strict=True),
     "The gradient with respect to the input is independent of entry 1 in the grad_outputs when "
     "using the double backward trick to compute forward mode gradients. This is not allowed in "
     "strict mode."),
    ("jvp_linear_output_create_graph", lambda lib: functional(lib).jvp(
        lambda x: (x ** 2, x * 2), f64(lib, X), f64(lib, V), strict=True, create_graph=True),
     "The jacobian of the user-provided function is independent of input 1. This is not allowed "
     "in strict mode when create_graph=True."),
    ("jacobian_output_no_grad", lambda lib: functional(lib).jacobian(
        lambda x: (x * 2, f64(lib, V)), f64(lib, X), strict=True),
     "Output 1 of the user-provided function does not require gradients."),
    ("jacobian_independent", lambda lib: functional(lib).jacobian(
        lambda x, y: x * 2, _xv(lib), strict=True),
     "Output 0 of the user-provided function is independent of input 1. This is not allowed in "
     "strict mode."),
    ("jacobian_output_not_from_inputs", lambda lib: functional(lib).jacobian(
        lambda x: (x ** 2, _w(lib) * 2), f64(lib, X), strict=True),
     "Output 1 of the user-provided function is independent of input 0."),
    # torch names the output's index here, though the phrase says "input"
    ("jacobian_linear_create_graph", lambda lib: functional(lib).jacobian(
        lambda x, y: (x ** 2 + y, y ** 2 + x * 2), _xv(lib), strict=True, create_graph=True),
     "The jacobian of the user-provided function is independent of input 0. This is not allowed "
     "in strict mode when create_graph=True."),
    ("jacobian_strict_and_vectorize", lambda lib: functional(lib).jacobian(
        lambda x: x ** 2, f64(lib, X), strict=True, vectorize=True),
     "`strict=True` and `vectorized=True` are not supported together. Please either set "
     "`strict=False` or `vectorize=False`."),
    ("jacobian_output_no_grad_before_vectorize", lambda lib: functional(lib).jacobian(
        lambda x: f64(lib, V), f64(lib, X), strict=True, vectorize=True),
     "Output 0 of the user-provided function does not require gradients."),
    ("hessian_output_no_grad", lambda lib: functional(lib).hessian(
        lambda x: f64(lib, 1.0), f64(lib, X), strict=True),
     "Output 0 of the user-provided function does not require gradients."),
    ("hessian_linear", lambda lib: functional(lib).hessian(
        lambda x: x.sum(), f64(lib, X), strict=True),
     "While computing the hessian, found that the jacobian of the user-provided function with "
     "respect to input 0 is independent of the input. This is not allowed in strict mode. You "
     "should ensure that your function is twice differentiable and that the jacobian depends on "
     "the inputs (this would be violated by a linear function for example)."),
    ("hessian_linear_before_vectorize", lambda lib: functional(lib).hessian(
        lambda x, y: (x ** 2).sum() + y.sum(), _xv(lib), strict=True, vectorize=True),
     "found that the jacobian of the user-provided function with respect to input 1 is "
     "independent of the input."),
    ("hessian_separable", lambda lib: functional(lib).hessian(
        lambda x, y: (x ** 2).sum() + (y ** 2).sum(), _xv(lib), strict=True),
     "Output 0 of the user-provided function is independent of input 1."),
    ("hessian_strict_and_vectorize", lambda lib: functional(lib).hessian(
        lambda x: (x ** 3).sum(), f64(lib, X), strict=True, vectorize=True),
     "`strict=True` and `vectorized=True` are not supported together."),
    ("vhp_linear", lambda lib: functional(lib).vhp(
        lambda x, y: (x ** 2).sum() + y.sum(), _xv(lib), (f64(lib, V),) * 2, strict=True),
     "While computing the hessian, found that the jacobian of the user-provided function with "
     "respect to input 1 is independent of the input."),
    ("vhp_gradient_not_from_inputs", lambda lib: functional(lib).vhp(
        lambda x, y: (x ** 2).sum() + (y * _w(lib)).sum(), _xv(lib), (f64(lib, V),) * 2,
        strict=True),
     "The jacobian of the user-provided function is independent of input 1. This is not allowed "
     "in strict mode."),
    ("vhp_constant_hessian_create_graph", lambda lib: functional(lib).vhp(
        lambda x, y: (x * y).sum(), _xv(lib), (f64(lib, V),) * 2, strict=True,
        create_graph=True),
     "The hessian of the user-provided function is independent of input 0. This is not allowed "
     "in strict mode when create_graph=True."),
    ("hvp_output_no_grad", lambda lib: functional(lib).hvp(
        lambda x: f64(lib, 1.0), f64(lib, X), f64(lib, V), strict=True),
     "Output 0 of the user-provided function does not require gradients."),
    ("hvp_linear", lambda lib: functional(lib).hvp(
        lambda x: x.sum(), f64(lib, X), f64(lib, V), strict=True),
     "While computing the hessian, found that the jacobian of the user-provided function with "
     "respect to input 0 is independent of the input."),
    ("hvp_gradient_not_from_inputs", lambda lib: functional(lib).hvp(
        lambda x, y: (x ** 2).sum() + (y * _w(lib)).sum(), _xv(lib), (f64(lib, V),) * 2,
        strict=True),
     "The hessian of the user-provided function is independent of entry 1 in the grad_jacobian. "
     "This is not allowed in strict mode as it prevents from using the double backward trick to "
     "replace forward mode AD."),
    ("hvp_constant_hessian_create_graph", lambda lib: functional(lib).hvp(
        lambda x: (x * x).sum(), f64(lib, X), f64(lib, V), strict=True, create_graph=True),
     "The hessian of the user-provided function is independent of input 0. This is not allowed "
     "in strict mode when create_graph=True."),
]


@pytest.mark.parametrize("case", STRICT_ERRORS, ids=[c[0] for c in STRICT_ERRORS])
def test_strict_mode_errors_match_torch(case):
    _, fn, phrase = case
    same_error(fn, phrase)


STRICT_PASSES = {
    "jacobian_blocks_of_zeros_still_reached": lambda lib: functional(lib).jacobian(
        lambda x, y: lib.cat([x * 2, y * 3]), _xv(lib), strict=True),
    "jvp_linear_without_create_graph": lambda lib: functional(lib).jvp(
        lambda x: x * 2, f64(lib, X), f64(lib, V), strict=True),
    "jvp_tangent_requiring_grad_with_create_graph": lambda lib: functional(lib).jvp(
        lambda x: x * _w(lib), f64(lib, X), f64(lib, V), strict=True, create_graph=True),
    "hessian_create_graph": lambda lib: functional(lib).hessian(
        lambda x: (x ** 2).sum(), f64(lib, X), strict=True, create_graph=True),
    "vhp_create_graph": lambda lib: functional(lib).vhp(
        lambda x: (x * x * _w(lib)).sum(), f64(lib, X), f64(lib, V), strict=True,
        create_graph=True),
}


@pytest.mark.parametrize("case", STRICT_PASSES)
def test_strict_mode_accepts_what_torch_accepts(case):
    parity(lambda lib: (STRICT_PASSES[case](lib), structure(STRICT_PASSES[case](lib))))


# ---- errors: arguments ----------------------------------------------------------------------------
ARGUMENT_ERRORS = [
    ("inputs_list", lambda lib: functional(lib).jacobian(lambda x: x, [f64(lib, X)]),
     "The inputs given to jacobian must be either a Tensor or a tuple of Tensors but the given "
     "inputs has type <class 'list'>."),
    ("inputs_float_in_tuple", lambda lib: functional(lib).vjp(lambda x, y: x, (f64(lib, X), 1.0)),
     "The inputs given to vjp must be either a Tensor or a tuple of Tensors but the value at "
     "index 1 has type <class 'float'>."),
    ("outputs_list", lambda lib: functional(lib).jvp(lambda x: [x], f64(lib, X), f64(lib, X)),
     "The outputs of the user-provided function given to jvp must be either a Tensor or a tuple "
     "of Tensors but the given outputs of the user-provided function has type <class 'list'>."),
    ("outputs_int_in_tuple", lambda lib: functional(lib).jacobian(lambda x: (x, 2), f64(lib, X)),
     "The outputs of the user-provided function given to jacobian must be either a Tensor or a "
     "tuple of Tensors but the value at index 1 has type <class 'int'>."),
    ("hessian_output_float", lambda lib: functional(lib).hessian(lambda x: 1.0, f64(lib, X)),
     "The outputs of the user-provided function given to hessian must be"),
    ("v_list", lambda lib: functional(lib).vjp(lambda x: x, f64(lib, X), [f64(lib, X)]),
     "The v given to vjp must be either a Tensor or a tuple of Tensors but the given v has type "
     "<class 'list'>."),
    ("v_str", lambda lib: functional(lib).hvp(lambda x: x.sum(), f64(lib, X), "v"),
     "The v given to hvp must be either a Tensor or a tuple of Tensors but the given v has type "
     "<class 'str'>."),
    ("v_wrong_size", lambda lib: functional(lib).vjp(lambda x: x * 2, f64(lib, X), f64(lib, [1.0])),
     "v has invalid size: should be torch.Size([3]) but got torch.Size([1])."),
    ("v_wrong_size_jvp", lambda lib: functional(lib).jvp(
        lambda x: x * 2, f64(lib, X), f64(lib, X).reshape(3, 1)),
     "v has invalid size: should be torch.Size([3]) but got torch.Size([3, 1])."),
    ("v_tuple_for_one_output", lambda lib: functional(lib).vjp(
        lambda x: x * 2, f64(lib, X), (f64(lib, X), f64(lib, X))),
     "The given v should contain a single Tensor."),
    ("v_tensor_for_two_inputs", lambda lib: functional(lib).vhp(
        lambda x, y: (x * y).sum(), (f64(lib, X), f64(lib, X)), f64(lib, X)),
     "v is a tuple of invalid length: should be 2 but got 1."),
    ("v_none_vjp", lambda lib: functional(lib).vjp(lambda x: x * 2, f64(lib, X)),
     "The vector v can only be None if the user-provided function returns a single Tensor with "
     "a single element."),
    ("v_none_jvp", lambda lib: functional(lib).jvp(lambda x: x * 2, f64(lib, X)),
     "The vector v can only be None if the input to the user-provided function is a single "
     "Tensor with a single element."),
    ("v_none_hvp_two_inputs", lambda lib: functional(lib).hvp(
        lambda x, y: (x * y).sum(), (f64(lib, [1.0]), f64(lib, [2.0]))),
     "The vector v can only be None if the input to the user-provided function is a single "
     "Tensor with a single element."),
    ("hessian_tuple_output", lambda lib: functional(lib).hessian(
        lambda x: ((x ** 2).sum(),), f64(lib, X)),
     "The function given to hessian should return a single Tensor"),
    ("hvp_tuple_output", lambda lib: functional(lib).hvp(
        lambda x: (x.sum(), x.sum()), f64(lib, X), f64(lib, V)),
     "The function given to hvp should return a single Tensor"),
    ("vhp_many_elements", lambda lib: functional(lib).vhp(lambda x: x * 2, f64(lib, X), f64(lib, V)),
     "The Tensor returned by the function given to vhp should contain a single element"),
    ("hessian_many_elements_before_vectorize", lambda lib: functional(lib).hessian(
        lambda x: x * 2, f64(lib, X), strict=True, vectorize=True),
     "The Tensor returned by the function given to hessian should contain a single element"),
    ("integer_input", lambda lib: functional(lib).jacobian(lambda x: x * 2, lib.tensor([1, 2])),
     "only Tensors of floating point dtype can require gradients"),
    ("jacobian_strategy", lambda lib: functional(lib).jacobian(
        lambda x: x, [f64(lib, X)], strategy="backward"),
     'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
     'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, '
     'prefer to use "reverse-mode".'),
    ("hessian_strategy_after_inputs", lambda lib: functional(lib).hessian(
        lambda x: x.sum(), [f64(lib, X)], outer_jacobian_strategy="backward"),
     "The inputs given to hessian must be either a Tensor or a tuple of Tensors"),
    ("hessian_strategy", lambda lib: functional(lib).hessian(
        lambda x: x.sum(), f64(lib, X), outer_jacobian_strategy=None),
     'Expected strategy to be either "forward-mode" or "reverse-mode".'),
]


@pytest.mark.parametrize("case", ARGUMENT_ERRORS, ids=[c[0] for c in ARGUMENT_ERRORS])
def test_argument_errors_match_torch(case):
    _, fn, phrase = case
    same_error(fn, phrase)


# ---- forward mode: torch's errors where torch raises; NotImplementedError where it computes -----
FORWARD_ERRORS = [
    ("create_graph_before_inputs", lambda lib: functional(lib).jacobian(
        lambda x: x, [f64(lib, X)], create_graph=True, strategy="forward-mode"),
     '`create_graph=True` and `strategy="forward-mode"` are not supported together (yet). '
     'Please either set `create_graph=False` or `strategy="reverse-mode"`.'),
    ("strict", lambda lib: functional(lib).jacobian(
        lambda x: x, f64(lib, X), strict=True, vectorize=True, strategy="forward-mode"),
     '`strict=True` and `strategy="forward-mode"` are not supported together (yet). Please '
     'either set `strict=False` or `strategy="reverse-mode"`.'),
    ("inputs_before_vectorize", lambda lib: functional(lib).jacobian(
        lambda x: x, [f64(lib, X)], strategy="forward-mode"),
     "The inputs given to jacobian must be either a Tensor or a tuple of Tensors"),
    ("without_vectorize", lambda lib: functional(lib).jacobian(
        lambda x: x, f64(lib, X), strategy="forward-mode"),
     "Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly implemented for "
     "`vectorize=True`."),
    ("hessian_without_vectorize", lambda lib: functional(lib).hessian(
        lambda x: (x ** 3).sum(), f64(lib, X), outer_jacobian_strategy="forward-mode"),
     "only implemented for `vectorize=True`."),
    ("hessian_create_graph", lambda lib: functional(lib).hessian(
        lambda x: (x ** 3).sum(), f64(lib, X), create_graph=True, vectorize=True,
        outer_jacobian_strategy="forward-mode"),
     '`create_graph=True` and `strategy="forward-mode"` are not supported together (yet).'),
    ("function_errors_first", lambda lib: functional(lib).hessian(
        lambda x: x * 2, f64(lib, X), vectorize=True, outer_jacobian_strategy="forward-mode"),
     "The Tensor returned by the function given to hessian should contain a single element"),
]


@pytest.mark.parametrize("case", FORWARD_ERRORS, ids=[c[0] for c in FORWARD_ERRORS])
def test_forward_mode_errors_match_torch(case):
    _, fn, phrase = case
    same_error(fn, phrase)


@pytest.mark.parametrize("call", [
    lambda F, x: F.jacobian(lambda x: x ** 2, x, vectorize=True, strategy="forward-mode"),
    lambda F, x: F.hessian(lambda x: (x ** 3).sum(), x, vectorize=True,
                           outer_jacobian_strategy="forward-mode"),
], ids=["jacobian", "hessian"])
def test_forward_mode_where_torch_computes_raises_not_implemented(call):
    assert call(torch.autograd.functional, f64(torch, X)).shape == (3, 3)  # torch computes it
    with pytest.raises(NotImplementedError, match="needs forward-mode AD"):
        call(rustgrad.autograd.functional, f64(rustgrad, X))


# ---- the order of checks: when func runs relative to the checks of v ---------------------------
@pytest.mark.parametrize("name,calls", [("vjp", 1), ("jvp", 0), ("vhp", 0), ("hvp", 0)])
def test_v_is_checked_before_func_runs_except_in_vjp_as_torch(name, calls):
    def run(lib):
        seen = []

        def f(x):
            seen.append(1)
            return (x ** 2).sum() if name in ("vhp", "hvp") else x * 2

        try:
            getattr(functional(lib), name)(f, f64(lib, X), f64(lib, V[:2]))
        except RuntimeError as e:
            return str(e).split(" should be")[0], len(seen)
        return None

    assert parity(run) == ("v has invalid size:", calls)


def test_func_runs_once_per_call_as_torch():
    def run(lib):
        seen = []

        def f(x):
            seen.append(1)
            return (x ** 3).sum()

        F = functional(lib)
        counts = []
        for call in (lambda: F.jacobian(f, f64(lib, X)), lambda: F.hessian(f, f64(lib, X)),
                     lambda: F.hessian(f, f64(lib, X), vectorize=True),
                     lambda: F.hvp(f, f64(lib, X), f64(lib, V)),
                     lambda: F.vhp(f, f64(lib, X), f64(lib, V)),
                     lambda: F.vjp(f, f64(lib, X)), lambda: F.jvp(f, f64(lib, X), f64(lib, V))):
            seen.clear()
            call()
            counts.append(len(seen))
        return counts

    assert parity(run) == [1] * 7


# ---- devices ------------------------------------------------------------------------------------
def test_functional_on_a_device_matches_torch(device):
    def results(lib, dev):
        x = lib.tensor(X, device=dev)
        v = lib.tensor(V, device=dev)
        F = functional(lib)
        return (F.vjp(one_to_one, x, v), F.jvp(one_to_one, x, v), F.jacobian(one_to_many, x),
                F.hessian(scalar_fn, x), F.hvp(scalar_fn, x, v), F.vhp(scalar_fn, x, v))

    got = results(rustgrad, device)
    assert all(t.device.type == device for t in flat(got))
    want = to_np(results(torch, "cpu"))
    for g, w in zip(flat(to_np(got)), flat(want)):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9)
