"""Parity of in-place ops on non-leaf tensors in a graph (the arithmetic ones, clamp_, copy_,
fill_, and the unary exp_ / sigmoid_ / ... ): values, grad_fn after the rebase, version counter
bumps, and gradients through the rebased history."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad

from ..parity import check, check_error, ints

INPLACE = {
    "add_tensor": lambda y, b: y.add_(b),
    "add_alpha": lambda y, b: y.add_(b, alpha=-2),
    "add_scalar": lambda y, b: y.add_(1.5),
    "sub_tensor": lambda y, b: y.sub_(b),
    "sub_scalar": lambda y, b: y.sub_(3),
    "mul_tensor": lambda y, b: y.mul_(b),
    "mul_scalar": lambda y, b: y.mul_(-0.5),
    "div_tensor": lambda y, b: y.div_(b),
    "div_scalar": lambda y, b: y.div_(4),
    "zero_": lambda y, b: y.zero_(),
    "fill_scalar": lambda y, b: y.fill_(2.5),
    "fill_0d_tensor": lambda y, b: y.fill_(b.sum()),
    "copy_": lambda y, b: y.copy_(b),
    "clamp_both": lambda y, b: y.clamp_(-0.5, 0.5),
    "clamp_min": lambda y, b: y.clamp_(min=0.2),
    "clamp_max": lambda y, b: y.clamp_(max=-0.2),
    "iadd": lambda y, b: y.__iadd__(b),
    "isub": lambda y, b: y.__isub__(b),
    "imul": lambda y, b: y.__imul__(b),
    "itruediv": lambda y, b: y.__itruediv__(b),
    "iadd_scalar": lambda y, b: y.__iadd__(2),
    "imul_scalar": lambda y, b: y.__imul__(3.0),
}


def _inplace_program(op):
    def fn(lib, a, b):
        y = a * 2  # non-leaf in the graph
        out = INPLACE[op](y, b)
        assert out is y
        return y, y * a  # uses the rebased history and the leaf again

    return fn


@pytest.mark.parametrize("other_shape", [(3, 4), (4,), ()], ids=str)
@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace_on_nonleaf_grads_and_versions_match_torch(op, other_shape, device):
    if op == "fill_0d_tensor":
        other_shape = ()
    check(_inplace_program(op), (3, 4), other_shape, low=0.5, high=2.0, device=device)


def test_inplace_operators_rebind_same_object_like_torch(device):
    def fn(lib, a, b):
        y = a * 1.5
        z = y
        y += b
        y *= b
        y -= 1
        y /= b + 2
        assert y is z
        return y

    check(fn, (2, 3), (2, 3), low=0.5, device=device)


def test_inplace_chain_bumps_version_each_time_like_torch(device):
    def fn(lib, a, b):
        y = a + 0
        y.add_(b).mul_(b).sub_(1.0).div_(2.0).clamp_(-1, 1)
        return y

    check(fn, (4,), (4,), device=device)


def test_inplace_on_tensor_not_requiring_grad_with_grad_other_like_torch(device):
    def fn(lib, a, b):
        y = b.detach().clone()  # no grad
        y.mul_(a)  # now in the graph
        y.add_(a)
        return y

    check(fn, (3,), (3,), device=device)


def test_inplace_without_grad_bumps_versions_like_torch(device):
    def fn(lib, a, b):
        y = a.clone()
        y.add_(b)
        y.mul_(2)
        y.zero_()
        y.fill_(1.0)
        y.copy_(b)
        y.clamp_(0, 1)
        y += 1
        return y

    check(fn, (3, 2), (2,), requires_grad=False, device=device)


def test_inplace_under_no_grad_on_leaf_allowed_like_torch(device):
    def fn(lib, a, b):
        with lib.no_grad():
            a.mul_(2)
            a.add_(b)
        return a * 1

    check(fn, (3,), (3,), device=device)


def test_inplace_copy_broadcast_and_cast_like_torch(device):
    def fn(lib, a, b):
        y = a * 1
        y.copy_(b.float())  # cast on copy, gradient cast back
        return y, y * a

    check(fn, (2, 3), (3,), device=device)


OVERWRITES = {
    "copy_": lambda y, b: y.copy_(b),
    "fill_tensor": lambda y, b: y.fill_(b.sum()),
}


@pytest.mark.parametrize("op", sorted(OVERWRITES))
def test_inplace_overwrite_sends_zero_grad_to_old_history_like_torch(op, device):
    def fn(lib, a, b):
        y = a * 1
        OVERWRITES[op](y, b)
        return y

    check(fn, (2, 3), (3,), device=device)


def test_inplace_clamp_tensor_bounds_match_torch(device):
    def fn(lib, a, lo, hi):
        y = a * 1
        y.clamp_(lo, hi)
        return y

    check(fn, (3, 4), (4,), (3, 1), seed=5, device=device)
    check(fn, (3, 4), (4,), (3, 1), seed=5, requires_grad=False, device=device)


MIXED = {
    "f32_add_f64": ("float32", "float64", lambda y, b: y.add_(b)),
    "f32_sub_f64_alpha": ("float32", "float64", lambda y, b: y.sub_(b, alpha=2)),
    "f32_mul_f64": ("float32", "float64", lambda y, b: y.mul_(b)),
    "f32_div_f64": ("float32", "float64", lambda y, b: y.div_(b)),
    "f16_iadd_f32": ("float16", "float32", lambda y, b: y.__iadd__(b)),
    "f64_mul_f32": ("float64", "float32", lambda y, b: y.mul_(b)),
}


@pytest.mark.parametrize("case", sorted(MIXED))
def test_inplace_mixed_float_dtypes_keep_self_dtype_one_node_like_torch(case, device):
    self_dt, other_dt, op = MIXED[case]

    def fn(lib, a, b):
        y = a.to(getattr(lib, self_dt)) * 1
        op(y, b.to(getattr(lib, other_dt)))
        return y

    check(fn, (2, 3), (3,), dtypes=(np.float64,), low=0.5, rtol=1e-3, atol=1e-3, device=device)


@pytest.mark.parametrize("exponent", [2, 0.5, "tensor"])
def test_inplace_pow_on_nonleaf_saves_old_self_like_torch(exponent, device):
    def fn(lib, a, b):
        y = a * 1
        y.pow_(b if exponent == "tensor" else exponent)
        if exponent != "tensor":
            y **= 2  # PowBackward0 saves the old self, not the result
        return y

    check(fn, (2, 3), (3,), low=0.5, device=device)


def test_inplace_pow_tensor_exponent_saved_result_modified_raises_like_torch(device):
    def fn(lib, a, b):
        y = a * 1
        y.pow_(b)  # PowBackward1 saves its result, y itself
        y **= 2
        y.sum().backward()

    check_error(fn, np.full((2, 3), 1.5), np.array([0.5, 2.0, 3.0]), requires_grad=True,
                phrase="one of the variables needed for gradient computation has been modified "
                       "by an inplace operation", device=device)


VIEW_WRITES = {
    "slice_mul": lambda y, b: y[1:].mul_(2),
    "row_add_tensor": lambda y, b: y[0].add_(b),
    "column_div": lambda y, b: y[:, 1].div_(b[0] + 3),
    "view_iadd": lambda y, b: y.view(-1).__iadd__(1.0),
    "transpose_sub": lambda y, b: y.t().sub_(1.0),
    "row_clamp": lambda y, b: y[1].clamp_(-0.5, 0.5),
    "two_writes": lambda y, b: (y[0].mul_(b), y[:, 0].add_(1.0)),
    "unsqueeze_mul": lambda y, b: y.unsqueeze(0).mul_(3),
    "step_slice_mul": lambda y, b: y[::2, ::3].mul_(3),
    "row_zero": lambda y, b: y[2].zero_(),
    "row_copy": lambda y, b: y[2].copy_(b),
}


@pytest.mark.parametrize("op", sorted(VIEW_WRITES))
def test_inplace_on_view_of_nonleaf_base_history_and_grads_match_torch(op, device):
    def fn(lib, a, b):
        y = a * 1
        VIEW_WRITES[op](y, b)
        return y, y * a

    check(fn, (3, 4), (4,), device=device)


def test_inplace_on_view_of_base_without_grad_joins_graph_like_torch(device):
    def fn(lib, a, b):
        base = a.detach().clone()
        row = base[1]
        row.mul_(b)
        return base, row

    check(fn, (3, 4), (4,), device=device)


# ---- in-place unary ------------------------------------------------------------------------
UNARY = ["exp", "sigmoid", "tanh", "sqrt", "abs", "neg", "square", "relu"]


@pytest.mark.parametrize("name", UNARY)
def test_inplace_unary_matches_torch(name, device):
    low = 0.1 if name == "sqrt" else -2.0
    check(lambda lib, a: getattr(a * 1, name + "_")(), (3, 4), low=low, device=device)
    # on a view: the base's history becomes CopySlices
    check(lambda lib, a: (lambda b: (getattr(b[1], name + "_")(), b)[1])(a * 1), (3, 4),
          low=low, device=device)


@pytest.mark.parametrize("name", UNARY)
def test_inplace_unary_refuses_leaf(name, device):
    check_error(lambda lib, a: getattr(a, name + "_")(), (3,), requires_grad=True,
                phrase="a leaf Variable that requires grad", device=device)


def test_inplace_unary_without_grad_bumps_version(device):
    x = rustgrad.tensor([1.0, 4.0], device=device)
    y = x.sqrt_()
    assert y is x and x._version == 1 and x.tolist() == [1.0, 2.0]


def test_inplace_unary_int_cast_error(device):
    check_error(lambda lib, a: a.exp_(), ints([1, 2]), phrase="can't be cast", device=device)


@pytest.mark.parametrize("name", ["abs_", "square_", "exp_", "sqrt_", "log_", "sin_", "relu_", "neg_"])
def test_inplace_unary_graph_is_torchs_no_clone_node(name: str) -> None:
    # the in-place form records the op's own node over self's history, as torch's (the input
    # it reads is kept as a copy without a node of its own)
    torch = pytest.importorskip("torch")
    got = []
    for lib in (torch, rustgrad):
        x = lib.tensor([0.5, 1.5, 2.0], requires_grad=True)
        y = x * 1
        getattr(y, name)()
        fn = y.grad_fn
        got.append((fn.name(), [f.name() for f, _ in fn.next_functions if f is not None]))
    assert got[0] == got[1]
