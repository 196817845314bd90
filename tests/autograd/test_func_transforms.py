"""rustgrad.func against torch.func: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap
and functional_call: values, result structure, requires_grad at the top level, nesting,
composition with autograd, and torch's errors. Each program runs under torch on the CPU and
under rustgrad on the device under test."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import _assert_same_values, same_error, to_np

RNG = np.random.default_rng(0)
X3 = RNG.uniform(-1.5, 1.5, 3)
Y3 = RNG.uniform(-1.5, 1.5, 3)
A23 = RNG.uniform(-1.5, 1.5, (2, 3))
B42 = RNG.uniform(-1.5, 1.5, (4, 2))


def run(fn: Callable[[Any, Callable[..., Any]], Any], device: str, rtol: float = 1e-7,
        atol: float = 1e-9) -> None:
    """`fn(lib, t)` under torch (cpu) and rustgrad (`device`); `t(array)` makes a float64 tensor
    on that library's device. The nested results must match."""
    def maker(lib: Any, dev: str) -> Callable[..., Any]:
        return lambda a, **kw: lib.tensor(np.asarray(a, dtype=np.float64), device=dev, **kw)

    expected = to_np(fn(torch, maker(torch, "cpu")))
    got = to_np(fn(rustgrad, maker(rustgrad, device)))
    _assert_same_values(expected, got, rtol, atol)


def flags(tree: Any) -> Any:
    """requires_grad of each tensor of a nested result."""
    if isinstance(tree, (torch.Tensor, rustgrad.Tensor)):
        return tree.requires_grad
    if isinstance(tree, (tuple, list)):
        return [flags(v) for v in tree]
    if isinstance(tree, dict):
        return {k: flags(v) for k, v in tree.items()}
    return tree


def f_scalar(lib: Any) -> Callable[..., Any]:
    return lambda x, y: (x.sin() * y + x ** 2).sum()


# ---- grad, grad_and_value ---------------------------------------------------------------------
@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1, 0)])
def test_grad_argnums(device, argnums):
    run(lambda lib, t: lib.func.grad(f_scalar(lib), argnums=argnums)(t(X3), t(Y3)), device)


def test_grad_and_value_with_aux(device):
    def fn(lib, t):
        g, (v, aux) = lib.func.grad_and_value(
            lambda x: ((x ** 3).sum(), {"sq": x ** 2, "n": [x.cos()]}), has_aux=True)(t(X3))
        return g, v, aux, flags((g, v, aux))
    run(fn, device)


def test_grad_of_pytree_argument_and_unused_input(device):
    def fn(lib, t):
        g = lib.func.grad(lambda p, x: (p["w"] * x).sum() + p["b"][0].sum() * 0)(
            {"w": t(X3), "b": [t(Y3), t(Y3)]}, t(Y3))
        return g, flags(g)
    run(fn, device)


def test_nested_grad_gives_higher_derivatives(device):
    def fn(lib, t):
        f = lambda x: lib.sin(x) * x  # noqa: E731
        x = t(0.7)
        return lib.func.grad(f)(x), lib.func.grad(lib.func.grad(f))(x), \
            lib.func.grad(lib.func.grad(lib.func.grad(f)))(x)
    run(fn, device)


def test_grad_result_requires_grad_only_through_outside_tensors(device):
    def fn(lib, t):
        p = t(Y3, requires_grad=True)
        x = t(X3)
        linear = lib.func.grad(lambda x: (x * p).sum())(x)  # depends on p
        unrelated = lib.func.grad(lambda x: (x * x).sum() + p.sum())(x)
        of_leaf = lib.func.grad(lambda x: (x * x).sum())(p)  # p itself is differentiated
        with lib.no_grad():
            quiet = lib.func.grad(lambda x: (x * p).sum())(x)
        return flags([linear, unrelated, of_leaf, quiet]), linear, unrelated, of_leaf, quiet
    run(fn, device)


def test_grad_composes_with_backward_to_parameters(device):
    def fn(lib, t):
        w = t(A23, requires_grad=True)
        x = t(X3)
        g = lib.func.grad(lambda x: lib.tanh(w @ x).pow(2).sum())(x)
        (g * t(Y3)).sum().backward()
        return g, w.grad
    run(fn, device)


def test_grad_works_under_no_grad_and_respects_inner_no_grad(device):
    def fn(lib, t):
        def f(x):
            with lib.no_grad():
                c = x * 10  # a constant for the transform
            return (x * c).sum() + (x ** 3).sum()
        with lib.no_grad():
            outer = lib.func.grad(lambda x: (x ** 3).sum())(t(X3))
        return outer, lib.func.grad(f)(t(X3))
    run(fn, device)


def test_gradcheck_through_grad_transform():
    x = rustgrad.tensor(X3, requires_grad=True)
    g = rustgrad.func.grad(lambda x: (x.sin() * x).sum())
    assert rustgrad.autograd.gradcheck(g, (x,))


# ---- vjp, jvp ---------------------------------------------------------------------------------
def test_vjp_tuple_outputs_called_twice(device):
    def fn(lib, t):
        out, vjp_fn = lib.func.vjp(lambda x, y: (x * y, (x.exp(), y.sum())), t(X3), t(Y3))
        cot = (t(Y3), (t(X3), t(2.0)))
        first, second = vjp_fn(cot), vjp_fn(cot)
        return out, first, second, flags((out, first))
    run(fn, device)


def test_vjp_has_aux(device):
    def fn(lib, t):
        out, vjp_fn, aux = lib.func.vjp(lambda x: (x.sin(), x.cos()), t(A23), has_aux=True)
        return out, vjp_fn(t(A23)), aux, flags(aux)
    run(fn, device)


def test_jvp_values_and_aux(device):
    def fn(lib, t):
        f = lambda x, y: (x * y.exp(), (x ** 2).sum())  # noqa: E731
        out, tangent_out = lib.func.jvp(f, (t(X3), t(Y3)), (t(Y3), t(X3)))
        o2, j2, aux = lib.func.jvp(lambda x: (x.sin(), x), (t(X3),), (t(Y3),), has_aux=True)
        return out, tangent_out, o2, j2, aux, flags((out, tangent_out, j2))
    run(fn, device)


def test_jvp_of_a_function_not_depending_on_input_is_zero(device):
    run(lambda lib, t: lib.func.jvp(lambda x: lib.ones(2, dtype=lib.float64, device=x.device),
                                    (t(X3),), (t(Y3),)), device)


def test_jvp_is_differentiable_with_respect_to_primals(device):
    def fn(lib, t):
        x = t(X3, requires_grad=True)
        _, jv = lib.func.jvp(lambda x: x.sin() * x, (x,), (t(Y3),))
        jv.sum().backward()
        return jv, x.grad
    run(fn, device)


# ---- Jacobians --------------------------------------------------------------------------------
JAC_FUNCS = {
    "square-out": lambda lib: (lambda x: x.sin() * x.sum(), (X3,), 0),
    "more-out": lambda lib: (lambda x: lib.outer(x, x.exp()), (X3,), 0),  # jacfwd by columns
    "fewer-out": lambda lib: (lambda a: a.sum(0) * a[0], (A23,), 0),       # jacfwd by rows
    "two-in-two-out": lambda lib: (lambda a, x: (a @ x, (a ** 2).sum()), (A23, X3), (0, 1)),
    "dict-out": lambda lib: (lambda x, y: {"p": x * y, "q": x.cos()}, (X3, Y3), 1),
}


@pytest.mark.parametrize("kind", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("case", sorted(JAC_FUNCS))
def test_jacobians(device, kind, case):
    def fn(lib, t):
        f, args, argnums = JAC_FUNCS[case](lib)
        jac = getattr(lib.func, kind)(f, argnums=argnums)(*[t(a) for a in args])
        return jac, flags(jac)
    run(fn, device)


@pytest.mark.parametrize("kind", ["jacrev", "jacfwd"])
def test_jacobian_has_aux(device, kind):
    run(lambda lib, t: getattr(lib.func, kind)(lambda x: (x.exp(), x.sum()), has_aux=True)(
        t(X3)), device)


def test_jacfwd_equals_jacrev():
    f = lambda x: rustgrad.outer(x.tanh(), x)  # noqa: E731
    x = rustgrad.tensor(X3)
    np.testing.assert_allclose(rustgrad.func.jacfwd(f)(x).numpy(),
                               rustgrad.func.jacrev(f)(x).numpy(), rtol=1e-12)


@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_hessian(device, argnums):
    run(lambda lib, t: lib.func.hessian(lambda x, y: (x.sin() * y ** 2).sum() * x.sum(),
                                        argnums=argnums)(t(X3), t(Y3)), device)


def test_nested_jacobians(device):
    run(lambda lib, t: lib.func.jacrev(lib.func.jacfwd(lambda x: x.exp() * x.sum()))(t(X3)),
        device)


# ---- vmap -------------------------------------------------------------------------------------
def test_vmap_in_dims_and_out_dims(device):
    def fn(lib, t):
        v = lib.func.vmap
        return (v(lib.dot)(t(B42), t(B42)),
                v(lambda a, b: a * b, in_dims=(1, None))(t(A23), t(2.0)),
                v(lambda a: a * 2, in_dims=-1, out_dims=1)(t(A23)),
                v(lambda p: p["x"] + p["y"][0], in_dims=({"x": 0, "y": [1]},))(
                    {"x": t(A23.T), "y": [t(A23)]}),
                v(lambda a: (a.sum(), a * 3), out_dims=(0, 1))(t(B42)),
                v(lambda a, k=1.0: a * k)(t(X3), k=5.0))
    run(fn, device)


def test_vmap_out_dims_none_for_an_unbatched_output(device):
    def fn(lib, t):
        c = t(Y3)
        return lib.func.vmap(lambda a: (a * 2, c), out_dims=(0, None))(t(A23))
    run(fn, device)


def test_vmap_nests_and_composes_with_grad(device):
    def fn(lib, t):
        v, g = lib.func.vmap, lib.func.grad
        per_example = v(g(lambda w, x: (w * x).sin().sum()), in_dims=(None, 0))(t(X3), t(A23))
        nested = v(v(lambda a, b: a * b, in_dims=(0, None)), in_dims=(None, 0))(t(X3), t(Y3))
        through = g(lambda x: v(lambda r: (r ** 2).sum())(x).sum())(t(A23))
        return per_example, nested, through
    run(fn, device)


def test_vmap_gradient_flows_to_inputs(device):
    def fn(lib, t):
        a = t(A23, requires_grad=True)
        out = lib.func.vmap(lambda r: r.softmax(0))(a)
        (out * t(A23)).sum().backward()
        return out, a.grad
    run(fn, device)


def test_vmap_over_an_empty_batch(device):
    run(lambda lib, t: lib.func.vmap(lambda r: r * 2)(t(np.zeros((0, 2)))), device)


def test_vmap_randomness(device):
    rustgrad.manual_seed(0)
    x = rustgrad.zeros(4, 3, device=device)
    same = rustgrad.func.vmap(lambda r: r + rustgrad.rand(3, device=device),
                              randomness="same")(x)
    different = rustgrad.func.vmap(lambda r: r + rustgrad.rand(3, device=device),
                                   randomness="different")(x)
    assert bool((same == same[0]).all())
    assert not bool((different == different[0]).all())
    same_error(lambda lib: lib.func.vmap(lambda r: r + lib.rand(3))(lib.zeros(4, 3)),
               "vmap: called random operation while in randomness error mode")


def test_vmap_chunk_size_is_accepted(device):
    run(lambda lib, t: lib.func.vmap(lambda r: r.sum(), chunk_size=2)(t(B42)), device)


# ---- functional_call --------------------------------------------------------------------------
def test_functional_call_grad_over_parameters(device):
    def fn(lib, t):
        m = lib.nn.Linear(3, 2).to(device if lib is rustgrad else "cpu").double()
        params = {"weight": t(A23), "bias": t([0.5, -0.5])}
        x = t(B42[:, :1] * X3)

        def loss(p, x):
            return lib.func.functional_call(m, p, (x,)).tanh().sum()
        g = lib.func.grad(loss)(params, x)
        split = lib.func.functional_call(m, ({"weight": t(A23)}, {"bias": t([1.0, 2.0])}), x)
        per_example = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0))(params, x)
        return g, split, per_example
    run(fn, device)


# ---- errors -----------------------------------------------------------------------------------
ERRORS = {
    "non-scalar": (lambda f, x: f.grad(lambda x: x)(x), "Expected f(*args) to return a scalar "
                   "Tensor, got tensor with 1 dims"),
    "not-a-tensor-out": (lambda f, x: f.grad(lambda x: 3.0)(x), "Expected f(*args) to return a "
                         "Tensor, got <class 'float'>"),
    "argnum-range": (lambda f, x: f.grad(lambda x: x.sum(), argnums=1)(x),
                     "Got argnum=1, but only 1 positional inputs"),
    "argnum-type": (lambda f, x: f.grad(lambda x: x.sum(), argnums=1.0)(x),
                    "argnums must be int or Tuple[int, ...], got: <class 'float'>"),
    "argnum-in-tuple": (lambda f, x: f.grad(lambda x, y: x.sum(), argnums=(0, 1.0))(x, x),
                        "argnum must be int, got: <class 'float'>"),
    "argnums-empty": (lambda f, x: f.grad(lambda x: x.sum(), argnums=())(x),
                      "argnums must be non-empty"),
    "argnums-repeat": (lambda f, x: f.grad(lambda x: x.sum(), argnums=(0, 0))(x),
                       "argnums elements must be unique, got (0, 0)"),
    "has-aux": (lambda f, x: f.grad(lambda x: x.sum(), has_aux=True)(x),
                "output of function f should be a tuple: (output, aux) if has_aux is True"),
    "aux-type": (lambda f, x: f.grad(lambda x: (x.sum(), 1), has_aux=True)(x),
                 "Expected tensors, got unsupported type <class 'int'>"),
    "input-type": (lambda f, x: f.grad(lambda x: x.sum())(3.0),
                   "Thing passed to transform API must be Tensor, got <class 'float'>"),
    "vjp-out": (lambda f, x: f.vjp(lambda x: 3, x), "vjp(f, *primals): expected f(*primals) to "
                "return only tensors, got unsupported type <class 'int'>"),
    "vjp-cotangents": (lambda f, x: f.vjp(lambda x: x, x)[1]((x,)),
                       "Expected pytree structure of cotangents to be the same"),
    "vjp-shape": (lambda f, x: f.vjp(lambda x: x, x)[1](x[:2]), "Mismatch in shape"),
    "jvp-primals": (lambda f, x: f.jvp(lambda x: x, x, x), "Expected primals to be a tuple"),
    "jvp-structure": (lambda f, x: f.jvp(lambda x: x, (x,), (x, x)),
                      "Expected primals and tangents to have the same python structure"),
    "jvp-size": (lambda f, x: f.jvp(lambda x: x, (x,), (x[:2],)),
                 "Tensor is of size [3] while the given forward gradient is of size [2]"),
    "jvp-empty": (lambda f, x: f.jvp(lambda x: x, (), ()),
                  "Expected primals to contain at least one Tensor"),
    "jvp-primal-type": (lambda f, x: f.jvp(lambda x: x, (3.0,), (x,)),
                        "Expected primals to only contain Tensors, got <class 'float'>"),
    "jacrev-argnum": (lambda f, x: f.jacrev(lambda x: x, argnums=2)(x),
                      "Got argnum=2, but only 1 positional inputs"),
    "jacrev-out": (lambda f, x: f.jacrev(lambda x: 3)(x), "expected f(*primals) to return only "
                   "tensors"),
    "jacrev-chunk": (lambda f, x: f.jacrev(lambda x: x, chunk_size=0),
                     "jacrev: `chunk_size` should be greater than 0."),
    "jacfwd-random": (lambda f, x: f.jacfwd(lambda x: x + torch_or_rg(x).rand(3))(x),
                      "called random operation while in randomness error mode"),
    "vmap-in-dim": (lambda f, x: f.vmap(lambda x: x, in_dims=1)(x),
                    "Got in_dim=1 for some input, but that input is a Tensor of dimensionality 1"),
    "vmap-in-dims-structure": (lambda f, x: f.vmap(lambda x: x, in_dims=(0, 0))(x),
                               "in_dims is not compatible with the structure of `inputs`"),
    "vmap-in-dims-type": (lambda f, x: f.vmap(lambda x: x, in_dims=[0])(x),
                          "expected `in_dims` to be int or a (potentially nested) tuple"),
    "vmap-none": (lambda f, x: f.vmap(lambda x: x, in_dims=(None,))(x),
                  "vmap: Expected at least one Tensor to vmap over"),
    "vmap-sizes": (lambda f, x: f.vmap(lambda a, b: a)(x, x[:2]),
                   "got sizes [3, 2] for the mapped dimension"),
    "vmap-non-tensor-in": (lambda f, x: f.vmap(lambda a: a)(3.0),
                           "We cannot vmap over non-Tensor arguments"),
    "vmap-non-tensor-out": (lambda f, x: f.vmap(lambda a: 3)(x), "must only return Tensors, got "
                            "type <class 'int'>"),
    "vmap-out-dims": (lambda f, x: f.vmap(lambda a: a, out_dims=(0, 0))(x),
                      "out_dims is not compatible with the structure of `outputs`"),
    "vmap-out-dim-none": (lambda f, x: f.vmap(lambda a: a, out_dims=None)(x),
                          "can not return a BatchedTensor when out_dim is None"),
    "vmap-no-inputs": (lambda f, x: f.vmap(lambda: x)(), "got no inputs"),
    "vmap-randomness": (lambda f, x: f.vmap(lambda a: a, randomness="foo"),
                        "Only allowed values for randomness are 'error', 'different', or 'same'"),
    "vmap-chunk": (lambda f, x: f.vmap(lambda a: a, chunk_size=0),
                   "vmap: chunk_size should be None or greater than 0. (got 0)"),
    "vmap-0d": (lambda f, x: f.vmap(lambda a: a)(x.sum()),
                "that input is a Tensor of dimensionality 0"),
    "functional-call-repeat": (lambda f, x: f.functional_call(
        torch_or_rg(x).nn.Linear(3, 1), ({"bias": x[:1]}, {"bias": x[:1]}), x),
        "['bias'] appeared in multiple dictionaries"),
    "functional-call-type": (lambda f, x: f.functional_call(torch_or_rg(x).nn.Linear(3, 1), 3, x),
                             "Expected parameter_and_buffer_dicts to be a dict"),
}


def torch_or_rg(x: Any) -> Any:
    return torch if isinstance(x, torch.Tensor) else rustgrad


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_torch(case):
    call, phrase = ERRORS[case]
    same_error(lambda lib: call(lib.func, lib.tensor(X3)), phrase)


def test_func_is_reachable_as_attribute():
    import subprocess
    import sys
    code = "import rustgrad; print(rustgrad.func.vmap.__module__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "rustgrad.func._vmap"
