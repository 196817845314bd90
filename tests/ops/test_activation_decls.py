"""The nn op families (activation, conv, pool, loss, norm, linear) against torch: the public
names they declare are torch's names with torch's parameters, nn.functional is argument
handling over them (no second op family under nn/), and the ops reached through the new names
(top-level functions, in-place activations) match torch."""

from __future__ import annotations

import inspect
import pathlib
import re

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as RF
import torch
import torch.nn.functional as TF
from rustgrad import _bind

from ..parity import F, check, check_double_backward, check_error, ints

NN_FAMILIES = ("activation", "conv", "pool", "loss", "norm", "linear")
PKG = pathlib.Path(rustgrad.__file__).parent


def _decls():
    return [d for d in _bind.declared() if d.family in NN_FAMILIES]


def _params(fn):
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # a torch builtin without a Python signature
        return None


# ---- declarations ---------------------------------------------------------------------------
def test_nn_family_declared_names_all_exist_in_torch():
    for d in _decls():
        for name in d.function:
            assert hasattr(torch, name), f"rustgrad.{name}: torch has no such function"
        for name in d.method + d.dunder:
            assert hasattr(torch.Tensor, name), f"Tensor.{name}: torch has no such method"
        for name in d.functional:
            assert hasattr(TF, name), f"nn.functional.{name}: torch has no such function"


def test_nn_functional_declared_ops_take_torch_parameter_names():
    compared = 0
    for d in _decls():
        for name in d.functional:
            theirs = _params(getattr(TF, name))
            if theirs is None or theirs == ["args", "kwargs"]:
                continue
            assert _params(d.fn) == theirs, f"nn.functional.{name}"
            compared += 1
    assert compared >= 20


def test_nn_functional_all_names_every_public_function_and_exist_in_torch():
    public = {n for n, v in vars(RF).items() if callable(v) and not n.startswith("_")
              and getattr(v, "__module__", "").startswith("rustgrad._ops")
              or inspect.isfunction(v) and v.__module__ == RF.__name__ and not n.startswith("_")}
    assert public <= set(RF.__all__)
    assert len(RF.__all__) == len(set(RF.__all__))
    for name in RF.__all__:
        assert hasattr(TF, name), name


def test_nn_functional_ops_are_the_declared_functions():
    assert RF.gelu is rustgrad._ops.activation.gelu
    assert RF.conv2d is rustgrad.conv2d is rustgrad._ops.conv.conv2d
    assert RF.layer_norm is rustgrad.layer_norm
    assert RF.sigmoid is rustgrad.sigmoid is rustgrad.Tensor.sigmoid
    assert not hasattr(rustgrad, "gelu") and not hasattr(rustgrad, "pad")


def test_nn_records_no_nodes_and_imports_no_array_library():
    nn_sources = list((PKG / "nn").rglob("*.py"))
    assert nn_sources and not (PKG / "nn" / "_prims.py").exists()
    for path in nn_sources:
        text = path.read_text()
        assert not re.search(r"\brecord\(|_core\.|import _core", text), path
    families = [PKG / "_ops" / f"{m}.py" for m in NN_FAMILIES + ("pointwise", "backward_hook")]
    for path in nn_sources + families:
        assert not re.search(r"^\s*(import numpy|from numpy|import cupy)", path.read_text(), re.M), path


# ---- the ops under their new names ------------------------------------------------------------
IMG = (2, 4, 5, 5)
TOP_LEVEL = {
    "selu": (lambda lib, x: lib.selu(x), [(3, 4)]),
    "celu": (lambda lib, x: lib.celu(x, 0.7), [(3, 4)]),
    "relu": (lambda lib, x: lib.relu(x), [(3, 4)]),
    "softmax": (lambda lib, x: lib.softmax(x, 1), [(3, 4)]),
    "conv2d": (lambda lib, x, w, b: lib.conv2d(x, w, b, 1, 1), [IMG, (3, 4, 3, 3), (3,)]),
    "conv1d": (lambda lib, x, w: lib.conv1d(x, w, None, 2), [(2, 4, 9), (3, 4, 3)]),
    "max_pool2d": (lambda lib, x: lib.max_pool2d(x, 2), [IMG]),
    "max_pool1d": (lambda lib, x: lib.max_pool1d(x, 3, 2), [(2, 4, 9)]),
    "avg_pool1d": (lambda lib, x: lib.avg_pool1d(x, 2), [(2, 4, 9)]),
    "adaptive_avg_pool1d": (lambda lib, x: lib.adaptive_avg_pool1d(x, 3), [(2, 4, 9)]),
    "layer_norm": (lambda lib, x, w, b: lib.layer_norm(x, (5,), w, b), [(3, 4, 5), (5,), (5,)]),
    "group_norm": (lambda lib, x, w, b: lib.group_norm(x, 2, w, b), [IMG, (4,), (4,)]),
    "embedding": (lambda lib, w, i: lib.embedding(w, i, 1), [(5, 3), ints([[0, 1], [4, 1]])]),
}


@pytest.mark.parametrize("name", sorted(TOP_LEVEL))
def test_nn_ops_as_top_level_functions_match_torch(name, device):
    fn, specs = TOP_LEVEL[name]
    check(fn, *specs, device=device)


DOUBLE = {
    "group_norm": (lambda lib, x, w, b: lib.group_norm(x, 2, w, b), [(2, 4, 3), (4,), (4,)]),
    # no bias: torch's bias gradient hangs off ConvolutionBackwardBackward0 (requires_grad),
    # rustgrad's is a plain sum of the upstream gradient
    "conv1d": (lambda lib, x, w: lib.conv1d(x, w, None, 1, 1), [(2, 3, 6), (2, 3, 3)]),
    "softplus": (lambda lib, x: F(lib).softplus(x, 2.0), [(3, 4)]),
    "mish": (lambda lib, x: F(lib).mish(x), [(3, 4)]),
    "celu": (lambda lib, x: lib.celu(x, 0.5), [(3, 4)]),
    "log_softmax": (lambda lib, x: lib.log_softmax(x, 1), [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(DOUBLE))
def test_nn_ops_double_backward_matches_torch(name, device):
    fn, specs = DOUBLE[name]
    check_double_backward(fn, *specs, device=device)


INPLACE = {
    "relu": {}, "relu6": {}, "hardtanh": {"min_val": -0.5, "max_val": 0.5}, "elu": {"alpha": 0.5},
    "selu": {}, "celu": {"alpha": 0.5}, "leaky_relu": {"negative_slope": 0.2}, "silu": {},
    "mish": {}, "hardsigmoid": {}, "hardswish": {},
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_activation_writes_input_with_torch_grad_fn(name, device):
    kwargs = INPLACE[name]
    check(lambda lib, x: getattr(F(lib), name)(x * 1, inplace=True, **kwargs), (3, 4), low=-4.0,
          high=4.0, device=device)


def test_dropout_inplace_keeps_history_like_torch():
    for lib in (torch, rustgrad):
        x = lib.ones(3, 4, requires_grad=True)
        y = x * 2
        out = lib.nn.functional.dropout(y, 0.5, True, inplace=True)
        assert out is y and y.grad_fn is not None
        out.sum().backward()
        kept = (y.detach().numpy() != 0).astype(np.float32)
        np.testing.assert_array_equal(x.grad.numpy(), kept * 4)


ERRORS = {
    "mish_int": (lambda lib, a: F(lib).mish(a.long()), "not implemented for 'Long'"),
    "logsigmoid_int": (lambda lib, a: F(lib).logsigmoid(a.long()), "not implemented for 'Long'"),
    "hardsigmoid_int": (lambda lib, a: F(lib).hardsigmoid(a.long()), "not implemented for 'Long'"),
    "hardswish_int": (lambda lib, a: F(lib).hardswish(a.long()), "not implemented for 'Long'"),
    "selu_int": (lambda lib, a: F(lib).selu(a.long()), '"elu_cpu" not implemented'),
    "celu_int": (lambda lib, a: F(lib).celu(a.long()), '"elu_cpu" not implemented'),
    "softmin_int": (lambda lib, a: F(lib).softmin(a.long(), 1), "not implemented for 'Long'"),
    "pad_reflect_value": (lambda lib, a: F(lib).pad(a, (1, 1), mode="reflect", value=2.0),
                          "doesn't take in value argument"),
    "linear_shapes": (lambda lib, a: F(lib).linear(a, lib.ones(2, 3, dtype=a.dtype)),
                      "mat1 and mat2 shapes cannot be multiplied"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_nn_ops_invalid_arguments_raise_torch_error(case, device):
    fn, phrase = ERRORS[case]
    check_error(fn, (3, 4), phrase=phrase, device=device)
