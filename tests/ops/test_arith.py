"""Parity of add, sub, mul, truediv, neg and pow with torch: broadcasting, reflected operators,
Python scalars, 0-d, size-1 and empty dims; addcmul_ / addcdiv_."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from ..parity import check, check_error, grad_ok, ints, same_error

BINARY_SHAPES = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((3, 1), (1, 4)),
    ((2, 3, 4), (3, 1)),
    ((), (3,)),
    ((3,), ()),
    ((), ()),
    ((1,), (5,)),
    ((0, 3), (3,)),
    ((2, 0), (1, 1)),
    ((4, 1, 3), (2, 1)),
]

OPS = {
    "add": lambda lib, a, b: lib.add(a, b),
    "add_alpha": lambda lib, a, b: lib.add(a, b, alpha=2.5),
    "sub": lambda lib, a, b: lib.sub(a, b),
    "sub_alpha": lambda lib, a, b: a.sub(b, alpha=-3),
    "mul": lambda lib, a, b: lib.mul(a, b),
    "div": lambda lib, a, b: lib.div(a, b),
    "op_add": lambda lib, a, b: a + b,
    "op_sub": lambda lib, a, b: a - b,
    "op_mul": lambda lib, a, b: a * b,
    "op_div": lambda lib, a, b: a / b,
}


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(OPS))
def test_binary_broadcast_shapes_match_torch(op, shapes, device):
    check(OPS[op], *shapes, low=0.5, high=2.0, device=device)


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv])
@pytest.mark.parametrize("scalar", [2, -1.5, 0.25, True])
@pytest.mark.parametrize("shape", [(3, 4), (), (0,)], ids=str)
def test_binary_python_scalar_both_sides_match_torch(op, scalar, shape, device):
    if op is operator.sub and scalar is True:  # torch refuses bool in subtraction
        check_error(lambda lib, a: op(a, scalar), shape, phrase="Subtraction, the `-` operator",
                    device=device)
        check_error(lambda lib, a: op(scalar, a), shape, phrase="Subtraction, the `-` operator",
                    device=device)
        return
    check(lambda lib, a: op(a, scalar), shape, low=0.5, high=2.0, device=device)
    check(lambda lib, a: op(scalar, a), shape, low=0.5, high=2.0, device=device)


def test_binary_same_tensor_both_operands_grads_add_up(device):
    check(lambda lib, a: a * a + a / (a + 3) - a, (3, 2), low=0.5, device=device)


def test_binary_one_operand_without_grad_gets_none_grad(device):
    def fn(lib, a, b):
        return a * b.detach() + b.detach() / a

    check(fn, (2, 3), (2, 3), low=0.5, device=device)


@pytest.mark.parametrize("shape", [(3, 4), (), (1,), (0, 2)], ids=str)
def test_neg_function_and_operator_match_torch(shape, device):
    check(lambda lib, a: (lib.neg(a), -a, a.neg(), lib.negative(a)), shape, device=device)


@pytest.mark.parametrize("exponent", [2, 3, 0.5, -1, -2.5, 0, 1, 1.0])
@pytest.mark.parametrize("shape", [(3, 4), (), (0,)], ids=str)
def test_pow_scalar_exponent_matches_torch(exponent, shape, device):
    check(lambda lib, a: a**exponent, shape, low=0.5, high=2.0, device=device)
    check(lambda lib, a: lib.pow(a, exponent), shape, low=0.5, high=2.0, device=device)


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((), (2, 2)), ((2, 1), ())],
                         ids=str)
def test_pow_tensor_exponent_matches_torch(shapes, device):
    check(lambda lib, a, b: a**b, *shapes, low=0.5, high=2.0, device=device)
    check(lambda lib, a, b: lib.pow(a, b), *shapes, low=0.5, high=2.0, device=device)


@pytest.mark.parametrize("base", [2, 0.5, 3.0, 1])
@pytest.mark.parametrize("shape", [(3, 4), (), (0, 1)], ids=str)
def test_pow_scalar_base_matches_torch(base, shape, device):
    check(lambda lib, a: base**a, shape, device=device)


def test_pow_negative_base_integer_exponent_matches_torch(device):
    check(lambda lib, a: a**3 + a**2, (4, 3), low=-2.0, high=-0.5, device=device)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_pow_tensor_exponent_zero_base_and_exponent_match_torch(device):
    # torch: d(a**b)/da is 0 where b == 0 (not 0 * 0**-1); d/db is 0 where a == 0 and b >= 0
    base = np.array([0.0, 1.0, 2.0, 0.0, 0.0])
    exponent = np.array([2.0, 0.0, 1.0, 0.0, 0.5])  # NumPy warns on 0 ** -1, torch does not
    check(lambda lib, a, b: a**b, base, exponent, device=device)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_pow_scalar_base_zero_matches_torch(device):
    check(lambda lib, a: 0**a, np.array([0.0, 1.0, 2.0, -1.0]), device=device)
    check(lambda lib, a: 0.0**a, np.array([0.5, 3.0]), device=device)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_pow_scalar_exponent_at_zero_base_matches_torch(device):
    check(lambda lib, a: (a**0, a**1, a**2, a**3, a**0.5, a**-1), np.array([0.0, 1.0, 4.0]),
          device=device)


# ---- addcmul_, addcdiv_ ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["addcmul_", "addcdiv_"])
def test_addc_inplace_matches_torch(name):
    check(lambda L, x, a, b: getattr(x * 1, name)(a, b, value=0.5), (3, 4), (3, 4), (4,),
          low=0.5, high=2.0)
    check(lambda L, x, a, b: getattr(x * 1, name)(a, b), (3, 4), (1, 4), (3, 1), low=0.5, high=2.0)
    assert grad_ok(lambda L, x, a, b: getattr(x * 1, name)(a, b, value=-2), (2, 3), (2, 3), (3,),
                   low=0.5, high=2.0)
    same_error(lambda L: getattr(L.zeros(3), name)(L.ones(2, 3), L.ones(3)),
               "doesn't match the broadcast shape")


def test_addcmul_inplace_without_grad(lib):
    x = lib.zeros(3)
    x.addcmul_(lib.tensor([1.0, 2.0, 3.0]), lib.tensor([2.0, 2.0, 2.0]), value=0.5)
    assert x.tolist() == [1.0, 2.0, 3.0] and x._version == 1


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_div_with_rounding_records_torchs_node_with_zero_gradients(mode, device):
    # torch: DivBackward2, whose gradients are zeros (the rounding's derivative)
    check(lambda lib, a, b: lib.div(a, b, rounding_mode=mode), (3, 4), (4,), device=device)
    check(lambda lib, a: lib.div(a, 2.5, rounding_mode=mode), (3,), device=device)
    check(lambda lib, a, b: lib.div(a, b, rounding_mode=mode), ints([3, -5, 7]), (3,),
          dtypes=(np.float32,), device=device)
