"""Products against torch: matmul / @ over every rank combination, mm, outer, dot, mv, bmm,
addmm, baddbmm, einsum, tensordot, kron, trace, diag, diag_embed."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad

from ..parity import check, check_double_backward, check_error, grad_ok

MATMUL_SHAPES = [
    ((4,), (4,)),  # dot
    ((3, 4), (4,)),  # mv
    ((4,), (4, 5)),  # vector @ matrix
    ((3, 4), (4, 5)),  # mm
    ((2, 3, 4), (2, 4, 5)),  # bmm
    ((2, 3, 4), (4, 5)),  # batched @ matrix
    ((3, 4), (2, 4, 5)),  # matrix @ batched
    ((2, 1, 3, 4), (5, 4, 2)),  # broadcast batch
    ((4,), (2, 4, 5)),  # vector @ batched
    ((2, 3, 4), (4,)),  # batched @ vector
    ((1, 4), (4, 1)),
    ((0, 4), (4, 3)),
    ((3, 0), (0, 2)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_rank_combinations_match_torch(shapes, device):
    check(lambda lib, a, b: lib.matmul(a, b), *shapes, device=device)
    check(lambda lib, a, b: a @ b, *shapes, device=device)


def test_mm_method_and_function_match_torch(device):
    check(lambda lib, a, b: (a.mm(b), lib.mm(a, b), a.matmul(b)), (3, 4), (4, 2), device=device)


def test_matmul_chain_with_transposed_operand_matches_torch(device):
    check(lambda lib, a, b: (a @ b.t()) @ a, (3, 3), (3, 3), device=device)


def test_matmul_only_one_operand_requires_grad_other_grad_none(device):
    check(lambda lib, a, b: a @ b.detach(), (2, 3, 4), (4, 2), device=device)
    check(lambda lib, a, b: a.detach() @ b, (4,), (4, 2), device=device)


# ---- outer, dot, mv, mm, bmm, addmm, baddbmm, einsum, tensordot, kron, trace, diag ---------------
PRODUCTS = {
    "outer": (lambda lib, a, b: lib.outer(a, b), (3,), (4,)),
    "outer_method": (lambda lib, a, b: a.outer(b), (0,), (2,)),
    "ger": (lambda lib, a, b: lib.ger(a, b), (2,), (1,)),
    "dot": (lambda lib, a, b: lib.dot(a, b), (4,), (4,)),
    "dot_empty": (lambda lib, a, b: a.dot(b), (0,), (0,)),
    "mv": (lambda lib, a, b: lib.mv(a, b), (3, 4), (4,)),
    "mv_method": (lambda lib, a, b: a.mv(b), (1, 2), (2,)),
    "mm": (lambda lib, a, b: lib.mm(a, b), (3, 4), (4, 5)),
    "mm_method": (lambda lib, a, b: a.mm(b), (1, 4), (4, 1)),
    "mm_empty": (lambda lib, a, b: a.mm(b), (3, 0), (0, 2)),
    "bmm": (lambda lib, a, b: lib.bmm(a, b), (2, 3, 4), (2, 4, 5)),
    "bmm_method": (lambda lib, a, b: a.bmm(b), (1, 2, 2), (1, 2, 3)),
    "kron": (lambda lib, a, b: lib.kron(a, b), (2, 3), (3, 2)),
    "kron_mixed_dims": (lambda lib, a, b: a.kron(b), (3,), (2, 2)),
    "kron_scalar": (lambda lib, a, b: lib.kron(a, b), (), (3,)),
    "tensordot_int": (lambda lib, a, b: lib.tensordot(a, b, dims=1), (3, 4), (4, 5)),
    "tensordot_two": (lambda lib, a, b: lib.tensordot(a, b), (2, 3, 4), (3, 4, 2)),
    "tensordot_zero": (lambda lib, a, b: lib.tensordot(a, b, dims=0), (2, 3), (2,)),
    "tensordot_lists": (lambda lib, a, b: lib.tensordot(a, b, dims=([0, 2], [2, 0])),
                        (2, 3, 4), (4, 5, 2)),
    "tensordot_all": (lambda lib, a, b: lib.tensordot(a, b, dims=([0, 1], [0, 1])), (3, 4),
                      (3, 4)),
    "tensordot_tensor_dims": (lambda lib, a, b: lib.tensordot(
        a, b, dims=lib.tensor([[1], [0]])), (3, 4), (4, 2)),
}


@pytest.mark.parametrize("case", sorted(PRODUCTS))
def test_products_match_torch(case, device):
    fn, *shapes = PRODUCTS[case]
    check(fn, *shapes, device=device)


ADDMM = {
    "addmm": (lambda lib, c, a, b: lib.addmm(c, a, b), (3, 5), (3, 4), (4, 5)),
    "addmm_broadcast": (lambda lib, c, a, b: c.addmm(a, b), (5,), (3, 4), (4, 5)),
    "addmm_scalar_input": (lambda lib, c, a, b: lib.addmm(c, a, b), (), (2, 4), (4, 3)),
    "addmm_beta_alpha": (lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=-2.0), (3, 1),
                         (3, 4), (4, 5)),
    "addmm_beta0": (lambda lib, c, a, b: lib.addmm(c, a, b, beta=0), (3, 5), (3, 4), (4, 5)),
    "baddbmm": (lambda lib, c, a, b: lib.baddbmm(c, a, b), (2, 3, 5), (2, 3, 4), (2, 4, 5)),
    "baddbmm_broadcast": (lambda lib, c, a, b: c.baddbmm(a, b, alpha=3.0), (3, 1), (2, 3, 4),
                          (2, 4, 5)),
    "baddbmm_beta": (lambda lib, c, a, b: lib.baddbmm(c, a, b, beta=2.0), (5,), (2, 3, 4),
                     (2, 4, 5)),
}


@pytest.mark.parametrize("case", sorted(ADDMM))
def test_addmm_family_match_torch(case, device):
    fn, *shapes = ADDMM[case]
    check(fn, *shapes, device=device)


EINSUM = {
    "matmul": ("ij,jk->ik", (3, 4), (4, 5)),
    "implicit": ("ij,jk", (3, 4), (4, 5)),
    "dot": ("i,i->", (4,), (4,)),
    "outer": ("i,j->ij", (3,), (4,)),
    "outer_transposed": ("i,j->ji", (3,), (4,)),
    "sum_all": ("ij->", (3, 4)),
    "sum_rows": ("ij->i", (3, 4)),
    "transpose": ("ij->ji", (3, 4)),
    "identity": ("ij", (3, 4)),
    "diag": ("ii->i", (3, 3)),
    "trace": ("ii", (3, 3)),
    "batched": ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    "elementwise": ("ij,ij->ij", (3, 4), (3, 4)),
    "frobenius": ("ij,ij->", (3, 4), (3, 4)),
    "rowdot": ("ij,ij->i", (3, 4), (3, 4)),
    "matvec": ("ij,j->i", (3, 4), (4,)),
    "ellipsis": ("...ij,...jk->...ik", (2, 3, 4), (2, 4, 5)),
    "ellipsis_broadcast": ("...j,...j->...", (2, 1, 3), (4, 3)),
    "attention": ("bhqd,bhkd->bhqk", (2, 2, 3, 4), (2, 2, 5, 4)),
    "three_operands": ("ij,jk,kl->il", (2, 3), (3, 4), (4, 5)),
    "three_vectors": ("i,i,i->", (3,), (3,), (3,)),
    "transposed_operand": ("ji,jk->ik", (4, 3), (4, 5)),
    "diag_times_vector": ("ii,i->i", (3, 3), (3,)),
    "lone_subscripts": ("ij,k->i", (3, 4), (5,)),
    "size_one_broadcast": ("ij,j->ij", (3, 4), (1,)),
    "spaces_and_upper": ("I j , j K -> I K", (3, 4), (4, 2)),
}


@pytest.mark.parametrize("case", sorted(EINSUM))
def test_einsum_subscripts_match_torch(case, device):
    eq, *shapes = EINSUM[case]
    check(lambda lib, *ops: lib.einsum(eq, *ops), *shapes, device=device)


def test_einsum_operand_list_matches_torch(device):
    check(lambda lib, a, b: lib.einsum("ij,jk->ik", [a, b]), (3, 4), (4, 5), device=device)


MATRIX = {
    "trace": (lambda lib, a: lib.trace(a), (3, 4)),
    "trace_method": (lambda lib, a: a.trace(), (2, 4)),
    "diag_vector": (lambda lib, a: lib.diag(a), (4,)),
    "diag_vector_offset": (lambda lib, a: a.diag(1), (3,)),
    "diag_vector_neg_offset": (lambda lib, a: lib.diag(a, -2), (2,)),
    "diag_matrix": (lambda lib, a: lib.diag(a), (3, 4)),
    "diag_matrix_offset": (lambda lib, a: a.diag(-1), (3, 4)),
    "diag_embed": (lambda lib, a: lib.diag_embed(a), (3, 4)),
    "diag_embed_offset_dims": (lambda lib, a: a.diag_embed(1, 0, 2), (3, 4)),
    "diag_embed_vector": (lambda lib, a: lib.diag_embed(a, -1), (3,)),
}


@pytest.mark.parametrize("case", sorted(MATRIX))
def test_matrix_helpers_match_torch(case, device):
    fn, shape = MATRIX[case]
    check(fn, shape, device=device)


def test_trace_of_tall_matrix_gradient_is_the_identity():
    # torch 2.9's trace_backward also sets [3, 0] of a 4x2 input (a strided index_fill that
    # wraps); rustgrad gives the true gradient, the 4x2 identity
    a = rustgrad.rand(4, 2, dtype=rustgrad.float64, requires_grad=True)
    a.trace().backward(rustgrad.tensor(2.5, dtype=rustgrad.float64))
    np.testing.assert_array_equal(a.grad.numpy(), 2.5 * np.eye(4, 2))
    assert grad_ok(lambda lib, x: x.trace(), (4, 2))


def test_integral_products_match_torch(device):
    a = np.array([[1, 2], [3, 4]], dtype=np.int64)
    check(lambda lib, x: (lib.mm(x, x), lib.dot(x[0], x[1]), lib.trace(x), lib.kron(x, x),
                          lib.einsum("ij,jk->ik", x, x), lib.diag(x)), a, dtypes=(np.float64,),
          device=device)


# ---- gradcheck, double backward ------------------------------------------------------------
GRADCHECK = ["outer", "dot", "mv", "mm", "bmm", "kron", "kron_mixed_dims", "tensordot_lists",
             "tensordot_two"]


@pytest.mark.parametrize("case", GRADCHECK)
def test_product_gradcheck_passes(case):
    fn, *shapes = PRODUCTS[case]
    assert grad_ok(fn, *shapes)


@pytest.mark.parametrize("case", ["addmm_beta_alpha", "baddbmm_broadcast"])
def test_addmm_family_gradcheck_passes(case):
    fn, *shapes = ADDMM[case]
    assert grad_ok(fn, *shapes)


@pytest.mark.parametrize("case", ["matmul", "diag", "trace", "ellipsis_broadcast",
                                  "three_operands", "lone_subscripts", "outer_transposed",
                                  "sum_rows"])
def test_einsum_gradcheck_passes(case):
    eq, *shapes = EINSUM[case]
    assert grad_ok(lambda lib, *ops: lib.einsum(eq, *ops), *shapes)


@pytest.mark.parametrize("case", ["trace", "diag_vector_offset", "diag_matrix_offset",
                                  "diag_embed_offset_dims"])
def test_matrix_helper_gradcheck_passes(case):
    fn, shape = MATRIX[case]
    assert grad_ok(fn, shape)


@pytest.mark.parametrize("case", ["mm", "bmm", "mv", "kron", "tensordot_lists"])
def test_product_double_backward_matches_torch(case, device):
    fn, *shapes = PRODUCTS[case]
    check_double_backward(fn, *shapes, device=device)


@pytest.mark.parametrize("case", ["matmul", "three_operands", "attention"])
def test_einsum_double_backward_matches_torch(case, device):
    eq, *shapes = EINSUM[case]
    check_double_backward(lambda lib, *ops: lib.einsum(eq, *ops), *shapes, device=device)


def test_addmm_double_backward_matches_torch(device):
    fn, *shapes = ADDMM["addmm_beta_alpha"]
    check_double_backward(fn, *shapes, device=device)


# ---- errors --------------------------------------------------------------------------------
ERRORS = {
    "mm_vector": (lambda lib, a: a[0].mm(a), "self must be a matrix"),
    "mm_vector_b": (lambda lib, a: a.mm(a[0]), "mat2 must be a matrix"),
    "mm_batched": (lambda lib, a: a.unsqueeze(0).mm(a.t()), "self must be a matrix"),
    "mm_shapes": (lambda lib, a: a.mm(a), "mat1 and mat2 shapes cannot be multiplied (3x4 and"),
    "mm_dtypes": (lambda lib, a: a.mm(a.t().float()),
                  "expected m1 and m2 to have the same dtype, but got: double != float"),
    "mv_sizes": (lambda lib, a: lib.mv(a, a[:, 0]), "size mismatch, got input (3), mat (3x4)"),
    "mv_vector": (lambda lib, a: lib.mv(a[0], a[0]), "vector + matrix @ vector expected"),
    "dot_matrix": (lambda lib, a: lib.dot(a, a), "1D tensors expected, but got 2D and 2D"),
    "dot_sizes": (lambda lib, a: lib.dot(a[0], a[:, 0]), "inconsistent tensor size"),
    "dot_dtypes": (lambda lib, a: lib.dot(a[0], a[0].float()),
                   "expected both vectors to have same dtype, but found Double and Float"),
    "outer_matrix": (lambda lib, a: lib.outer(a, a[0]), "outer: Expected 1-D argument self"),
    "bmm_matrix": (lambda lib, a: lib.bmm(a, a), "batch1 must be a 3D tensor"),
    "bmm_batch": (lambda lib, a: lib.bmm(a.unsqueeze(0), a.unsqueeze(0)),
                  "Expected size for first two dimensions of batch2 tensor"),
    "bmm_dtypes": (lambda lib, a: lib.bmm(a.unsqueeze(0), a.t().unsqueeze(0).float()),
                   "expected scalar type Double but found Float"),
    "addmm_input": (lambda lib, a: lib.addmm(a[:, :2], a, a.t()),
                    "The expanded size of the tensor (3) must match the existing size (2)"),
    "addmm_dtypes": (lambda lib, a: lib.addmm(a[:, :1].float(), a, a.t()),
                     "self and mat2 must have the same dtype"),
    "baddbmm_input": (lambda lib, a: lib.baddbmm(a, a.unsqueeze(0), a.t().unsqueeze(0)),
                      "The expanded size of the tensor (3) must match the existing size (4)"),
    "trace_vector": (lambda lib, a: lib.trace(a[0]), "trace: expected a matrix"),
    "diag_3d": (lambda lib, a: lib.diag(a.unsqueeze(0)), "diag(): Supports 1D or 2D tensors"),
    "diag_embed_dims": (lambda lib, a: lib.diag_embed(a, 0, 1, 1), "cannot be identical"),
    "einsum_sizes": (lambda lib, a: lib.einsum("ij,jk->ik", a, a), "subscript j has size 3"),
    "einsum_operands": (lambda lib, a: lib.einsum("ij,jk->ik", a),
                        "fewer operands were provided than specified"),
    "einsum_subscript": (lambda lib, a: lib.einsum("i1->i", a), "invalid subscript given at"),
    "einsum_output": (lambda lib, a: lib.einsum("ij->k", a),
                      "output subscript k does not appear in the equation"),
    "einsum_output_twice": (lambda lib, a: lib.einsum("ij->ii", a), "appears more than once"),
    "einsum_dims": (lambda lib, a: lib.einsum("ijk->i", a), "does not match the number of dim"),
    "einsum_dtypes": (lambda lib, a: lib.einsum("ij,jk->ik", a, a.t().float()),
                      "expected scalar type Double but found Float"),
    # matmul's batch dims broadcast (torch's expand) before the matrix sizes are compared
    "matmul_batch_broadcast": (lambda lib, a: a.expand(2, 3, 4) @ a.t().expand(5, 4, 3),
                               "The size of tensor a (2) must match the size of tensor b (5) at "
                               "non-singleton dimension 0"),
    "matmul_batch_broadcast_sizes": (lambda lib, a: a.expand(2, 3, 4) @ a.expand(5, 3, 4),
                                     "The size of tensor a (2) must match the size of tensor b "
                                     "(5) at non-singleton dimension 0"),
    "matmul_batch_broadcast_inner": (lambda lib, a: a.expand(7, 2, 3, 4) @ a.t().expand(5, 4, 3),
                                     "The size of tensor a (2) must match the size of tensor b "
                                     "(5) at non-singleton dimension 1"),
    "tensordot_sizes": (lambda lib, a: lib.tensordot(a, a, dims=1),
                        "contracted dimensions need to match"),
    "tensordot_negative": (lambda lib, a: lib.tensordot(a, a, dims=-1),
                           "tensordot expects dims >= 0"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_products_invalid_arguments_raise_torch_error(case, device):
    fn, phrase = ERRORS[case]
    check_error(fn, (3, 4), phrase=phrase, device=device)


def test_mm_is_matrix_only_while_matmul_broadcasts(device):
    a = rustgrad.ones(2, 3, 4, device=device)
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        a.mm(rustgrad.ones(4, 2, device=device))
    assert tuple(a.matmul(rustgrad.ones(4, 2, device=device)).shape) == (2, 3, 2)
