"""Gradients that a mask cuts off, against torch.

Where an op's output does not depend on its input (clamp beyond a bound, relu below zero, the
branch where() did not take), torch's backward selects a zero: a NaN or inf arriving from
upstream is dropped there, not multiplied by zero into NaN. Under create_graph the first-order
gradient of the piecewise-linear activations (relu, hardtanh, leaky_relu) requires grad through
torch's *BackwardBackward0 node, with a zero second derivative.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np
import pytest

from ..parity import f64, parity

VALS = [-3.0, -1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 3.0, 6.0, 7.0]
NAN = float("nan")


def _F(lib: Any) -> Any:
    return lib.nn.functional


UNARY: Dict[str, Callable[[Any, Any], Any]] = {
    "clamp": lambda lib, x: x.clamp(-0.5, 0.5),
    "clamp_min_kw": lambda lib, x: x.clamp(min=0.0),
    "clamp_max_kw": lambda lib, x: x.clamp(max=0.0),
    "clip": lambda lib, x: x.clip(-0.5, 0.5),
    "clamp_": lambda lib, x: x.clamp_(-0.5, 0.5),
    "clamp_min": lambda lib, x: x.clamp_min(0.0),
    "clamp_max": lambda lib, x: x.clamp_max(0.0),
    "clamp_min_": lambda lib, x: x.clamp_min_(0.0),
    "clamp_tensor_bounds": lambda lib, x: x.clamp(lib.zeros(10, dtype=lib.float64),
                                                  lib.ones(10, dtype=lib.float64)),
    "clamp_min_tensor": lambda lib, x: x.clamp_min(lib.zeros(10, dtype=lib.float64)),
    "relu": lambda lib, x: x.relu(),
    "relu_": lambda lib, x: x.relu_(),
    "F.relu_inplace": lambda lib, x: _F(lib).relu(x, inplace=True),
    "hardtanh": lambda lib, x: _F(lib).hardtanh(x),
    "hardtanh_inplace": lambda lib, x: _F(lib).hardtanh(x, -0.5, 0.5, inplace=True),
    "relu6": lambda lib, x: _F(lib).relu6(x),
    "leaky_relu": lambda lib, x: _F(lib).leaky_relu(x),
    "elu": lambda lib, x: _F(lib).elu(x),
    "hardsigmoid": lambda lib, x: _F(lib).hardsigmoid(x),
    "hardswish": lambda lib, x: _F(lib).hardswish(x),
    "abs": lambda lib, x: x.abs(),
    "sign": lambda lib, x: x.sign(),
    "masked_fill": lambda lib, x: x.masked_fill(x > 0, 1.0),
    "where_scalar": lambda lib, x: lib.where(x > 0, x, 0.0),
}

BINARY: Dict[str, Callable[[Any, Any, Any], Any]] = {
    "where": lambda lib, x, y: lib.where(x > y, x, y),
    "maximum": lambda lib, x, y: lib.maximum(x, y),
    "minimum": lambda lib, x, y: lib.minimum(x, y),
    "max_binary": lambda lib, x, y: lib.max(x, y),
    "clamp_tensor_min": lambda lib, x, y: x.clamp(min=y),
    "clamp_min_tensor_both": lambda lib, x, y: x.clamp_min(y),
    "clamp_max_tensor_both": lambda lib, x, y: x.clamp_max(y),
}


@pytest.mark.parametrize("upstream", [NAN, float("inf")])
@pytest.mark.parametrize("name", list(UNARY))
def test_non_finite_upstream_gradient_is_cut_off(name: str, upstream: float) -> None:
    def program(lib: Any) -> Any:
        x = f64(lib, VALS, requires_grad=True)
        out = UNARY[name](lib, x.clone())
        out.backward(lib.full_like(out, upstream))
        return x.grad

    parity(program)


@pytest.mark.parametrize("name", list(BINARY))
def test_nan_upstream_gradient_stays_on_its_side(name: str) -> None:
    def program(lib: Any) -> Any:
        x = f64(lib, VALS, requires_grad=True)
        y = f64(lib, VALS[::-1], requires_grad=True)
        out = BINARY[name](lib, x.clone(), y.clone())
        out.backward(lib.full_like(out, NAN))
        return x.grad, y.grad

    parity(program)


def test_sqrt_after_clamp_gives_zero_where_clamped() -> None:
    # the fuzzer's program: sqrt's gradient at the clamped -0.5 is NaN, clamp drops it
    def program(lib: Any) -> Any:
        x = lib.tensor([-3.0, 0.25], dtype=lib.float64, requires_grad=True)
        x.clamp(-0.5, 0.5).sqrt().sum().backward()
        return x.grad

    np.testing.assert_array_equal(parity(program), [0.0, 1.0])


@pytest.mark.parametrize("name", ["clamp_min", "clamp_max", "clamp_min_tensor"])
def test_clamp_side_at_the_bound_and_at_nan(name: str) -> None:
    # torch 2.15: strict bounds for a number (no gradient on the bound nor for NaN); a tensor
    # bound splits a tie and passes a NaN input's gradient to both sides
    def program(lib: Any) -> Any:
        x = f64(lib, [-1.0, 0.0, 1.0, NAN], requires_grad=True)
        b = f64(lib, [0.0, 0.0, 0.0, 0.0], requires_grad=True)
        if name == "clamp_min_tensor":
            out = x.clamp_min(b)
        else:
            out = getattr(x, name)(0.0)
        out.backward(lib.ones(4, dtype=lib.float64))
        return x.grad, b.grad

    parity(program)


# ---- first-order gradients under create_graph ------------------------------------------------
# (op, whether torch's grad_fn name is compared): the names of the rest differ in rustgrad
CREATE_GRAPH = {
    "relu": (lambda lib, x: x.relu(), True),
    "relu_": (lambda lib, x: x.relu_(), True),
    "hardtanh": (lambda lib, x: _F(lib).hardtanh(x), True),
    "relu6": (lambda lib, x: _F(lib).relu6(x), True),
    "leaky_relu": (lambda lib, x: _F(lib).leaky_relu(x, 0.2), True),
    "leaky_relu_inplace": (lambda lib, x: _F(lib).leaky_relu(x, 0.2, inplace=True), True),
    "clamp": (lambda lib, x: x.clamp(-0.5, 0.5), True),
    "clamp_min": (lambda lib, x: x.clamp_min(0.0), True),
    "where": (lambda lib, x: lib.where(x > 0, x, 0.0), True),
    "sign": (lambda lib, x: x.sign(), True),
    "maximum": (lambda lib, x: lib.maximum(x, lib.zeros_like(x)), True),
    "elu": (lambda lib, x: _F(lib).elu(x), False),
    "hardswish": (lambda lib, x: _F(lib).hardswish(x), False),
}


def _node_name(t: Any) -> Any:
    return None if t.grad_fn is None else t.grad_fn.name()


@pytest.mark.parametrize("upstream_requires_grad", [False, True])
@pytest.mark.parametrize("name", list(CREATE_GRAPH))
def test_first_order_gradient_under_create_graph(name: str, upstream_requires_grad: bool) -> None:
    fn, names = CREATE_GRAPH[name]

    def program(lib: Any) -> Any:
        x = f64(lib, VALS, requires_grad=True)
        w = lib.tensor(np.linspace(-1.0, 2.0, 10), requires_grad=upstream_requires_grad)
        out = fn(lib, x.clone())
        (g,) = lib.autograd.grad((out * w).sum(), [x], create_graph=True)
        result = [g.requires_grad, g]
        if names:
            result.append(_node_name(g))
        if g.requires_grad:
            wrt = [x, w] if upstream_requires_grad else [x]
            result.append(lib.autograd.grad((g * g).sum(), wrt, allow_unused=True))
        return result

    parity(program)


def test_relu_gradient_supports_a_second_backward() -> None:
    # the brief's case: the sum of relu's create_graph gradient backpropagates (to zeros)
    def program(lib: Any) -> Any:
        x = f64(lib, [-1.0, 0.0, 2.0], requires_grad=True)
        (g,) = lib.autograd.grad(x.relu().sum(), [x], create_graph=True)
        g.sum().backward()
        return _node_name(g), g, x.grad

    assert parity(program)[0] == "ThresholdBackwardBackward0"


def test_select_grad_keeps_float32() -> None:
    def program(lib: Any) -> Any:
        x = lib.tensor([-1.0, 2.0], dtype=lib.float32, requires_grad=True)
        (g,) = lib.autograd.grad(_F(lib).leaky_relu(x, 0.1).sum(), [x], create_graph=True)
        return g.dtype == lib.float32, g

    parity(program, rtol=1e-6)


@pytest.mark.parametrize("reduce", ["max", "min", "median", "amax"])
@pytest.mark.parametrize("upstream", [float("nan"), float("inf"), 1.0])
def test_full_reductions_pass_an_upstream_only_to_the_chosen_entries(reduce, upstream):
    def fn(lib):
        x = lib.tensor([-1.0, 0.0, 1.0, 1.0, 0.0], dtype=lib.float64, requires_grad=True)
        getattr(x, reduce)().backward(lib.tensor(upstream, dtype=lib.float64))
        return x.grad

    parity(fn)
