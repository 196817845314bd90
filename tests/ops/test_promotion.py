"""Parity of torch's type promotion: result dtypes (and gradient dtypes) of mixed-dtype ops."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from ..parity import check


def arr(dtype, shape=(2, 3), low=1, high=4, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.uniform(low, high, size=shape).astype(dtype) if np.dtype(dtype).kind == "f" \
        else rng.integers(low, high, size=shape).astype(dtype)


OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv}

# (left operand, right operand): arrays become tensors, anything else stays a Python scalar
CASES = {
    "int32_times_float_scalar": (arr(np.int32), 2.5),
    "int64_tensor_float32_tensor": (arr(np.int64), arr(np.float32)),
    "float32_tensor_float64_0d": (arr(np.float32), arr(np.float64, ())),
    "float64_0d_float32_tensor": (arr(np.float64, ()), arr(np.float32)),
    "float32_0d_float64_0d": (arr(np.float32, ()), arr(np.float64, ())),
    "bool_tensor_int_scalar": (arr(np.bool_), 3),
    "bool_tensor_int_tensor": (arr(np.bool_), arr(np.int32)),
    "int_tensor_int_tensor": (arr(np.int64), arr(np.int64)),
    "int32_tensor_int64_0d": (arr(np.int32), arr(np.int64, ())),
    "uint8_int8": (arr(np.uint8), arr(np.int8)),
    "int16_float_0d": (arr(np.int16), arr(np.float64, ())),
    "int8_bool_scalar": (arr(np.int8), True),
    "float16_float16": (arr(np.float16), arr(np.float16)),
    "float16_float_scalar": (arr(np.float16), 2.5),
    "float16_float32_0d": (arr(np.float16), arr(np.float32, ())),
    "float16_float32_tensor": (arr(np.float16), arr(np.float32)),
    "float16_int_tensor": (arr(np.float16), arr(np.int64)),
    "float32_int_scalar": (arr(np.float32), 3),
    "float32_bool_tensor": (arr(np.float32), arr(np.bool_)),
    "int64_int_scalar": (arr(np.int64), 2),
}


NUMPY_DIV0 = pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # x / False


@NUMPY_DIV0
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_promotion_binary_result_dtype_matches_torch(case, op, device):
    left, right = CASES[case]
    f = OPS[op]
    is_bool = [isinstance(x, np.ndarray) and x.dtype == bool or x is True for x in (left, right)]
    if op == "sub" and any(is_bool):
        return  # torch refuses bool subtraction: covered by the error tests
    tensors = [x for x in (left, right) if isinstance(x, np.ndarray)]

    def fn(lib, *ts):
        it = iter(ts)
        a = next(it) if isinstance(left, np.ndarray) else left
        b = next(it) if isinstance(right, np.ndarray) else right
        return f(a, b)

    # gradients cast up from a lower precision carry that precision's rounding
    check(fn, *tensors, dtypes=(None,), rtol=1e-3, atol=1e-3, device=device)


@NUMPY_DIV0
@pytest.mark.parametrize("case", ["int32_times_float_scalar", "int64_tensor_float32_tensor",
                                  "bool_tensor_int_scalar", "float16_float32_tensor"])
def test_promotion_reflected_operand_order_matches_torch(case, device):
    left, right = CASES[case]
    tensors = [x for x in (left, right) if isinstance(x, np.ndarray)]
    if len(tensors) == 2:
        check(lambda lib, a, b: (b + a, b * a, b / a), *tensors, dtypes=(None,), device=device)
    else:
        check(lambda lib, a: (right + a, right * a, right / a), *tensors, dtypes=(None,),
              device=device)


def test_promotion_int_true_division_gives_default_float_like_torch(device):
    check(lambda lib, a, b: (a / b, a / 2, 3 / a, lib.div(a, b)), arr(np.int64), arr(np.int32),
          dtypes=(None,), device=device)


def test_promotion_float16_unary_and_reduce_match_torch(device):
    x = arr(np.float16, (3, 4), low=0.5, high=2)
    check(lambda lib, a: (a.exp(), a.log(), a.sqrt(), a.sigmoid(), a.tanh(), a.sum(), a.mean(0),
                          a * a, a @ a.t()), x, dtypes=(None,), device=device)


def test_promotion_int_unary_gives_float_like_torch(device):
    x = arr(np.int64, (3,), low=1, high=5)
    check(lambda lib, a: (a.exp(), a.log(), a.sqrt(), a.sigmoid(), a.tanh(), a.abs(), a.relu(),
                          a.sum(), a.max(), a.clamp(2, 3)), x, dtypes=(None,), device=device)


def test_promotion_bool_sum_gives_int64_like_torch(device):
    check(lambda lib, a: (a.sum(), a.sum(0), a + a, a * a), arr(np.bool_), dtypes=(None,),
          device=device)


def test_promotion_gradients_flow_back_in_input_dtype_like_torch(device):
    a, b = arr(np.float32, (3,)), arr(np.float64, (3,))
    check(lambda lib, x, y: x * y + x / y - y, a, b, dtypes=(None,), rtol=1e-5, atol=1e-6,
          device=device)
    s = arr(np.float64, ())
    check(lambda lib, x, y: x * y + lib.maximum(x, y) + lib.where(x > 2, x, y), a, s,
          dtypes=(None,), rtol=1e-5, atol=1e-6, device=device)


def test_promotion_result_type_and_promote_types_match_torch():
    import rustgrad
    import torch

    names = ["float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool"]
    for x in names:
        for y in names:
            got = rustgrad.promote_types(getattr(rustgrad, x), getattr(rustgrad, y))
            want = torch.promote_types(getattr(torch, x), getattr(torch, y))
            assert str(got) == str(want), (x, y, got, want)
