"""Matrix products of operands with different dtypes: torch refuses them (no promotion), with
the message of the product matmul folds to (dot, mv, mm, bmm, or mm of the swapped operands);
addmm, baddbmm and tensordot likewise."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import parity

F32, F64, I64 = np.float32, np.float64, np.int64


def _arr(shape, dtype):
    return np.ones(shape, dtype=dtype)


def check_error(fn, *arrays, requires_grad=False, phrase=None):
    """fn(lib, *tensors of these arrays, dtypes kept) raises the same exception type with the
    same message under torch and rustgrad (holding `phrase` when given)."""
    msgs = []
    for lib in (torch, rustgrad):
        ins = [lib.tensor(a, requires_grad=requires_grad and a.dtype.kind == "f")
               for a in arrays]
        with pytest.raises(Exception) as info:  # noqa: PT011 - compared below
            fn(lib, *ins)
        msgs.append((type(info.value).__name__, str(info.value)))
    assert msgs[1] == msgs[0]
    assert phrase is None or phrase in msgs[0][1]


MATMUL = [
    # (shape a, shape b, key phrase of torch's message for float32 @ float64)
    ((2, 3), (3, 4), "expected m1 and m2 to have the same dtype, but got: float != double"),
    ((3,), (3,), "dot : expected both vectors to have same dtype, but found Float and Double"),
    ((2, 3), (3,), "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    ((3,), (3, 4), "expected m1 and m2 to have the same dtype, but got: float != double"),
    ((2, 2, 3), (3, 4), "expected m1 and m2 to have the same dtype, but got: float != double"),
    ((2, 2, 3), (3,),
     "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    ((2, 2, 3), (2, 3, 4), "expected scalar type Float but found Double"),
    ((2, 3), (2, 3, 4), "expected scalar type Float but found Double"),
    ((3,), (2, 3, 4), "expected scalar type Float but found Double"),
    ((1, 2, 2, 3), (2, 3, 4), "expected scalar type Float but found Double"),
]


@pytest.mark.parametrize("sa,sb,phrase", MATMUL)
@pytest.mark.parametrize("form", ["operator", "function", "method"])
def test_matmul_of_different_float_dtypes_raises(sa, sb, phrase, form):
    call = {
        "operator": lambda lib, a, b: a @ b,
        "function": lambda lib, a, b: lib.matmul(a, b),
        "method": lambda lib, a, b: a.matmul(b),
    }[form]
    check_error(call, _arr(sa, F32), _arr(sb, F64), phrase=phrase)


@pytest.mark.parametrize("sa,sb", [(s[0], s[1]) for s in MATMUL])
def test_matmul_reversed_dtypes_raises_with_torchs_order(sa, sb):
    check_error(lambda lib, a, b: a @ b, _arr(sa, F64), _arr(sb, F32))


@pytest.mark.parametrize("sa,sb", [((2, 3), (2, 3, 4)), ((1, 2, 3), (2, 3, 4))])
def test_matmul_folded_with_swapped_operands_names_them_swapped(sa, sb):
    # a requires grad: torch folds to (b.mT @ a.t()).mT, an mm whose m1 is b
    check_error(lambda lib, a, b: a @ b, _arr(sa, F32), _arr(sb, F64),
                requires_grad=True,
                phrase="expected m1 and m2 to have the same dtype, but got: double != float")


@pytest.mark.parametrize("da,db", [(F32, I64), (I64, F32), (np.int32, I64), (np.float16, F32)])
def test_matmul_mixed_kinds_raises(da, db):
    check_error(lambda lib, a, b: a @ b, _arr((2, 3), da), _arr((3, 4), db),
                phrase="expected m1 and m2 to have the same dtype")


def test_shape_error_comes_before_dtype_error_except_for_dot():
    check_error(lambda lib, a, b: a @ b, _arr((2, 3), F32), _arr((4, 4), F64),
                phrase="mat1 and mat2 shapes cannot be multiplied")
    check_error(lambda lib, a, b: a @ b, _arr((3,), F32), _arr((4,), F64),
                phrase="dot : expected both vectors to have same dtype")


@pytest.mark.parametrize("name,sa,sb", [("mm", (2, 3), (3, 4)), ("bmm", (2, 2, 3), (2, 3, 4)),
                                        ("mv", (2, 3), (3,)), ("dot", (3,), (3,))])
def test_named_products_refuse_mixed_dtypes(name, sa, sb):
    check_error(lambda lib, a, b: getattr(lib, name)(a, b), _arr(sa, F32), _arr(sb, F64),
                )


@pytest.mark.parametrize("dtypes", [(F64, F32, F32), (F32, F64, F32), (F32, F32, F64)])
def test_addmm_mixed_dtypes(dtypes):
    shapes = ((2, 4), (2, 3), (3, 4))
    check_error(lambda lib, i, a, b: lib.addmm(i, a, b),
                *(_arr(s, d) for s, d in zip(shapes, dtypes)))


@pytest.mark.parametrize("dtypes", [(F64, F32, F32), (F32, F64, F32), (F32, F32, F64)])
def test_baddbmm_mixed_dtypes(dtypes):
    shapes = ((2, 2, 4), (2, 2, 3), (2, 3, 4))
    check_error(lambda lib, i, a, b: lib.baddbmm(i, a, b),
                *(_arr(s, d) for s, d in zip(shapes, dtypes)))


def test_tensordot_mixed_dtypes():
    check_error(lambda lib, a, b: lib.tensordot(a, b, 1), _arr((2, 3), F64), _arr((3, 4), F32),
                phrase="both inputs should have same dtype")


def test_same_dtype_products_still_work():
    def prog(lib):
        a = lib.tensor(np.arange(6.0).reshape(2, 3), dtype=lib.float32)
        b = lib.tensor(np.arange(12).reshape(3, 4))
        return a @ a.t(), b.t() @ b, lib.arange(3) @ lib.arange(3)

    parity(prog)


BOOL_PRODUCTS = {
    "mm": lambda lib, m, v: m @ m,
    "mv": lambda lib, m, v: m @ v,
    "dot": lambda lib, m, v: v @ v,
    "vm": lambda lib, m, v: v @ m,
    "batched": lambda lib, m, v: m.expand(2, 2, 2) @ m,
    "bmm": lambda lib, m, v: lib.bmm(m.expand(2, 2, 2), m.expand(2, 2, 2)),
    "addmm": lambda lib, m, v: lib.addmm(m, m, m),
    "baddbmm": lambda lib, m, v: lib.baddbmm(*(m.expand(2, 2, 2),) * 3),
    "tensordot": lambda lib, m, v: lib.tensordot(m, m, 1),
    "einsum_contracted": lambda lib, m, v: lib.einsum("ij,jk->ik", m, m),
}


@pytest.mark.parametrize("name", list(BOOL_PRODUCTS))
def test_bool_products_are_not_implemented_as_torch(name):
    from ..parity import same_error

    same_error(lambda lib: BOOL_PRODUCTS[name](lib, lib.tensor([[True, False], [True, True]]),
                                               lib.tensor([True, False])),
               "not implemented for 'Bool'")


def test_bool_products_without_a_contraction_stay_bool():
    parity(lambda lib: lib.outer(lib.tensor([True, False]), lib.tensor([True, True])))
    parity(lambda lib: lib.einsum("ij,jk->ijk", lib.tensor([[True, False]]),
                                  lib.tensor([[True], [False]])))
