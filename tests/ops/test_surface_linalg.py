"""The linear-algebra surface against torch: addmv, addr, addbmm and the in-place addmm_,
baddbmm_, addmv_, addr_, addbmm_; inner, vdot, chain_matmul, diagflat, vander; Tensor.H, mH,
adjoint(); renorm_; triangular_solve, cholesky_solve, cholesky_inverse, lu, lu_solve, lu_unpack,
geqrf, orgqr, ormqr; the removed eig/symeig/lstsq/solve/matrix_rank; svd_lowrank, pca_lowrank and
lobpcg. Values (float32/float64, integer and bool where torch takes them), grad_fn names, saved
attributes, gradients, gradcheck and double backward in float64, errors, on every device.

The randomized functions (svd_lowrank, pca_lowrank, lobpcg) draw other numbers than torch: they are
compared through what the draw does not change (exactly low-rank inputs, eigenvalues, the
projectors on the subspaces found)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check, check_double_backward, check_error, grad_ok, ints

pytestmark = pytest.mark.filterwarnings(
    r"ignore:torch\.(lu|lu_solve|triangular_solve|chain_matmul) is deprecated:UserWarning")


def well(lib, a):
    """a with 3 added to its diagonal: triangles of it are well-conditioned factors."""
    return a + 3 * lib.eye(a.shape[-1], dtype=a.dtype)


# ---- the BLAS-like ops ---------------------------------------------------------------------------
BLAS = {
    "addmv": (lambda L, x, m, v: L.addmv(x, m, v), (2,), (2, 3), (3,)),
    "addmv_scalars_broadcast": (lambda L, x, m, v: L.addmv(x, m, v, beta=0.5, alpha=-2), (1,), (2, 3), (3,)),
    "addmv_0d_input_beta0": (lambda L, x, m, v: L.addmv(x, m, v, beta=0), (), (2, 3), (3,)),
    "addmv_method": (lambda L, x, m, v: x.addmv(m, v, alpha=3), (2,), (2, 3), (3,)),
    "addmv_": (lambda L, x, m, v: x.clone().addmv_(m, v, beta=2, alpha=0.5), (2,), (2, 3), (3,)),
    "addmv_function": (lambda L, x, m, v: L.addmv_(x.clone(), m, v, alpha=-1), (2,), (2, 3), (3,)),
    "addr": (lambda L, x, a, b: L.addr(x, a, b), (3, 4), (3,), (4,)),
    "addr_scalars_broadcast": (lambda L, x, a, b: L.addr(x, a, b, beta=2, alpha=0.5), (4,), (3,), (4,)),
    "addr_method_beta0": (lambda L, x, a, b: x.addr(a, b, beta=0), (3, 4), (3,), (4,)),
    "addr_": (lambda L, x, a, b: x.clone().addr_(a, b, alpha=-1), (3, 4), (3,), (4,)),
    "addbmm": (lambda L, x, a, b: L.addbmm(x, a, b), (2, 4), (3, 2, 5), (3, 5, 4)),
    "addbmm_broadcast_scalars": (lambda L, x, a, b: L.addbmm(x, a, b, beta=-1, alpha=2), (4,), (3, 2, 5),
                                 (3, 5, 4)),
    "addbmm_method_empty_batch": (lambda L, x, a, b: x.addbmm(a, b), (2, 4), (0, 2, 5), (0, 5, 4)),
    "addbmm_": (lambda L, x, a, b: x.clone().addbmm_(a, b, beta=0.5), (2, 4), (3, 2, 5), (3, 5, 4)),
    "addmm_": (lambda L, x, a, b: x.clone().addmm_(a, b, beta=2, alpha=0.5), (2, 4), (2, 3), (3, 4)),
    "baddbmm_": (lambda L, x, a, b: x.clone().baddbmm_(a, b, alpha=-1), (2, 2, 4), (2, 2, 3), (2, 3, 4)),
    "inner_vectors": (lambda L, a, b: L.inner(a, b), (3,), (3,)),
    "inner_matrices": (lambda L, a, b: L.inner(a, b), (2, 3), (4, 3)),
    "inner_batched": (lambda L, a, b: L.inner(a, b), (2, 1, 3), (3,)),
    "inner_0d": (lambda L, a, b: (L.inner(a, b), b.inner(a)), (), (2, 3)),
    "vdot": (lambda L, a, b: (L.vdot(a, b), a.vdot(b)), (4,), (4,)),
    "chain_matmul_one": (lambda L, a: L.chain_matmul(a), (2, 3)),
    "chain_matmul_two": (lambda L, a, b: L.chain_matmul(a, b), (2, 3), (3, 4)),
    "chain_matmul_four": (lambda L, a, b, c, d: L.chain_matmul(a, b, c, d), (2, 5), (5, 1), (1, 4), (4, 3)),
    "diagflat": (lambda L, a: (L.diagflat(a), a.diagflat(1), L.diagflat(a, offset=-2)), (2, 3)),
    "diagflat_vector_and_0d": (lambda L, a: (L.diagflat(a), L.diagflat(a[0])), (3,)),
    "diagflat_noncontiguous": (lambda L, a: L.diagflat(a.t()), (2, 3)),
    "vander_one_and_no_columns": (lambda L, a: (L.vander(a, 1), L.vander(a, 0, increasing=True)), (3,)),
    "H": (lambda L, a: a.H, (2, 3)),
    "mH": (lambda L, a: a.mH, (4, 2, 3)),
    "adjoint": (lambda L, a: (a.adjoint(), L.adjoint(a)), (4, 2, 3)),
    "renorm_": (lambda L, a: a.clone().renorm_(2, 0, 1.0), (3, 4)),
    "renorm_dim_maxnorm": (lambda L, a: a.clone().renorm_(1, -1, 2.5), (2, 3, 4)),
}


@pytest.mark.parametrize("case", sorted(BLAS))
def test_blas_ops_match_torch(case, device):
    fn, *specs = BLAS[case]
    check(fn, *specs, device=device)


BLAS_GRADCHECK = ["addmv", "addmv_", "addr", "addr_scalars_broadcast", "addbmm", "addbmm_", "addmm_",
                  "baddbmm_", "inner_matrices", "vdot", "chain_matmul_four", "diagflat", "renorm_"]


@pytest.mark.parametrize("case", BLAS_GRADCHECK)
def test_blas_gradcheck(case):
    fn, *specs = BLAS[case]
    assert grad_ok(fn, *specs)


@pytest.mark.parametrize("case", ["addmv", "addr", "addbmm", "vdot", "inner_batched", "addmm_"])
def test_blas_double_backward_matches_torch(case, device):
    fn, *specs = BLAS[case]
    check_double_backward(fn, *specs, device=device)


def test_integer_and_bool_operands_match_torch(device):
    i23, i3 = ints(np.arange(6).reshape(2, 3)), ints([1, -2, 3])
    # integer products take integer multipliers: torch truncates float beta/alpha
    check(lambda L, x, m, v: (L.addmv(x, m, v), L.addmv(x, m, v, beta=2.5, alpha=1.5)), ints([1, 2]), i23, i3,
          dtypes=(None,), device=device)
    check(lambda L, x, a, b: (L.addr(x, a, b, beta=2, alpha=3), L.addr(x, a.bool(), b.bool())),
          ints(np.ones((3, 3))), i3, i3, dtypes=(None,), device=device)
    bools = np.array([True, False, True])
    check(lambda L, x, a, b: (L.addr(x, a, b), L.addr(x, a, b, beta=False), L.addr(x, a, b, alpha=2),
                              L.addr(x.long(), a, b)),
          np.ones((3, 3), dtype=bool), bools, ~bools, dtypes=(None,), device=device)
    check(lambda L, x, a, b: L.addbmm(x, a, b, beta=0.5, alpha=2), ints(np.ones((2, 2))),
          ints(np.ones((3, 2, 4))), ints(np.ones((3, 4, 2))), dtypes=(None,), device=device)
    check(lambda L, a, b: (L.inner(a, b), L.vdot(a[0], b), a.H, L.diagflat(a), L.vander(b),
                           L.chain_matmul(a, a.t(), a)), i23, i3, dtypes=(None,), device=device)
    check(lambda L, a: (L.vander(a), L.vander(a, 3, True), L.diagflat(a)), bools, dtypes=(None,), device=device)
    # an integer tensor written with a float product is refused; a float one takes an integer product
    check(lambda L, x, a: x.clone().addr_(a, a), np.zeros((3, 3)), i3, dtypes=(np.float64,), device=device)


def test_addr_promotes_its_operands(device):
    # (torch's own backward of mixed dtypes fails in its mv: the values only)
    check(lambda L, x, a, b: (L.addr(x.float(), a, b), L.addr(x, a.float(), b.float()),
                              x.float().addr_(a, b)), (3, 4), (3,), (4,),
          dtypes=(np.float64,), device=device, backward=False)


VANDER = {
    "vander": lambda L, a: L.vander(a),
    "vander_n": lambda L, a: (L.vander(a, 2), L.vander(a, N=5)),
    "vander_increasing": lambda L, a: L.vander(a, 4, True),
    "vander_two_columns": lambda L, a: L.vander(a, 2, increasing=True),
}


@pytest.mark.parametrize("case", sorted(VANDER))
def test_vander_matches_torch_down_to_its_failing_backward(case, device):
    # torch builds the powers as a cumulative product written back into the view it read, which
    # the product saved: its backward refuses, and rustgrad's (built the same way) does too
    fn = VANDER[case]
    check(fn, (4,), device=device, backward=False)
    check_error(lambda L, a: fn(L, a)[0].sum().backward() if isinstance(fn(L, a), tuple) else
                fn(L, a).sum().backward(), (4,), device=device, requires_grad=True,
                phrase="one of the variables needed for gradient computation has been modified by an inplace "
                       "operation")


def test_vander_keeps_low_precision_floats(device):
    check(lambda L, a: L.vander(a.half()).float(), (3,), low=0.5, high=1.5, dtypes=(np.float32,), device=device,
          rtol=1e-2, atol=1e-2, backward=False)


def test_H_of_a_0d_tensor_is_the_tensor_itself():
    from rustgrad._ops import blas

    blas._WARNED_H.clear()
    for lib in (torch, rustgrad):
        x = lib.tensor(2.0, requires_grad=True)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            assert x.H is x
        assert lib is torch or [str(w.message) for w in seen] == [
            "Tensor.H is deprecated on 0-D tensors. Consider using x.conj()."]
        m = lib.ones(2, 3)
        assert m.H._base is m and m.mH._base is m and m.adjoint()._base is m


def test_blas_saved_attributes_are_torchs():
    def saved(lib):
        x, m, v = lib.zeros(2, dtype=lib.float64), lib.ones(2, 3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
        m.requires_grad_()
        n1 = lib.addmv(x, m, v, beta=0.5, alpha=2).grad_fn
        n2 = lib.addr(lib.zeros(3, 2), v, v[:2].requires_grad_(), alpha=3).grad_fn
        b1 = lib.ones(4, 2, 3, dtype=lib.float64, requires_grad=True)
        n3 = lib.addbmm(x[:1], b1, lib.ones(4, 3, 5, dtype=lib.float64), beta=0).grad_fn
        n4 = lib.vdot(v.requires_grad_(), v).grad_fn
        return ((n1._saved_beta, n1._saved_alpha, n1._saved_mat is None, n1._saved_vec is v),
                (n2._saved_beta, n2._saved_alpha, n2._saved_vec1 is v, n2._saved_vec2 is None),
                (n3._saved_beta, n3._saved_alpha, n3._saved_batch1 is None, n3._saved_batch2 is not None,
                 n3._saved_batch1_sym_argsize_0, n3._saved_batch1_sym_argsize_1, n3._saved_batch2_sym_argsize_2),
                (n4._saved_self is v, n4._saved_other is v))

    assert saved(rustgrad) == saved(torch)


BLAS_ERRORS = {
    "addmv_ranks": (lambda L, x, m, v: L.addmv(x, m, m), (2,), (2, 3), (3,)),
    "addmv_input_2d": (lambda L, x, m, v: L.addmv(x.expand(2, 2), m, v), (2,), (2, 3), (3,)),
    "addmv_sizes": (lambda L, x, m, v: L.addmv(x, m, v[:2]), (2,), (2, 3), (3,)),
    "addmv_input_size": (lambda L, x, m, v: L.addmv(L.cat([x, x]), m, v), (2,), (2, 3), (3,)),
    "addmv_dtypes": (lambda L, x, m, v: L.addmv(x.float(), m, v), (2,), (2, 3), (3,)),
    "addmv_bool": (lambda L, x, m, v: L.addmv(x.bool(), m.bool(), v.bool()), (2,), (2, 3), (3,)),
    "addmv_inplace_shape": (lambda L, x, m, v: x[:1].clone().addmv_(m, v), (2,), (2, 3), (3,)),
    "addmv_inplace_leaf": (lambda L, x, m, v: x.addmv_(m, v), (2,), (2, 3), (3,)),
    "addr_vec1_2d": (lambda L, x, a, b: L.addr(x, x, b), (3, 4), (3,), (4,)),
    "addr_vec2_2d": (lambda L, x, a, b: L.addr(x, a, x), (3, 4), (3,), (4,)),
    "addr_shape": (lambda L, x, a, b: L.addr(x, b, a), (3, 4), (3,), (4,)),
    "addr_float_alpha_for_ints": (lambda L, x, a, b: L.addr(x.long(), a.long(), b.long(), alpha=0.5), (3, 4), (3,),
                                  (4,)),
    "addr_float_beta_for_bool": (lambda L, x, a, b: L.addr(x.bool(), a.bool(), b.bool(), beta=0.5), (3, 4), (3,),
                                 (4,)),
    "addr_bool_alpha": (lambda L, x, a, b: L.addr(x, a, b, alpha=True), (3, 4), (3,), (4,)),
    "addr_inplace_1d": (lambda L, x, a, b: x[0].clone().addr_(a, b), (3, 4), (3,), (4,)),
    "addr_inplace_shape": (lambda L, x, a, b: x[:, :1].clone().addr_(a, b), (3, 4), (3,), (4,)),
    "addr_inplace_cast": (lambda L, x, a, b: x.long().addr_(a, b), (3, 4), (3,), (4,)),
    "addbmm_batch1_3d": (lambda L, x, a, b: L.addbmm(x, a.unsqueeze(0), b), (2, 4), (3, 2, 5), (3, 5, 4)),
    "addbmm_batch2_3d": (lambda L, x, a, b: L.addbmm(x, a, b.unsqueeze(-1)), (2, 4), (3, 2, 5), (3, 5, 4)),
    "addbmm_batch2_2d": (lambda L, x, a, b: L.addbmm(x, a, b[0]), (2, 4), (3, 2, 5), (3, 5, 4)),
    "addbmm_batches": (lambda L, x, a, b: L.addbmm(x, a, b[:2]), (2, 4), (3, 2, 5), (3, 5, 4)),
    "addbmm_sizes": (lambda L, x, a, b: L.addbmm(x, a, b[:, :4]), (2, 4), (3, 2, 5), (3, 5, 4)),
    "addbmm_input": (lambda L, x, a, b: L.addbmm(x.t(), a, b), (2, 4), (3, 2, 5), (3, 5, 4)),
    "addbmm_dtype_self": (lambda L, x, a, b: L.addbmm(x.float(), a, b), (2, 4), (3, 2, 5), (3, 5, 4)),
    "addbmm_dtype_mat1": (lambda L, x, a, b: L.addbmm(x, a.float(), b), (2, 4), (3, 2, 5), (3, 5, 4)),
    "addbmm_bool": (lambda L, x, a, b: L.addbmm(x.bool(), a.bool(), b.bool()), (2, 4), (3, 2, 5), (3, 5, 4)),
    "addmm_inplace_shape": (lambda L, x, a, b: x[:, :3].clone().addmm_(a, b), (2, 4), (2, 3), (3, 4)),
    "addmm_inplace_broadcast": (lambda L, x, a, b: x[:1].clone().addmm_(a, b), (2, 4), (2, 3), (3, 4)),
    "addmm_inplace_dtype": (lambda L, x, a, b: x.float().addmm_(a, b), (2, 4), (2, 3), (3, 4)),
    "addmm_inplace_sizes": (lambda L, x, a, b: x.clone().addmm_(a, a), (2, 4), (2, 3), (3, 4)),
    "addmm_inplace_overlap": (lambda L, x, a, b: x[:1].expand(2, 4).addmm_(a, b), (2, 4), (2, 3), (3, 4)),
    "baddbmm_inplace_shape": (lambda L, x, a, b: x[0].clone().baddbmm_(a, b), (2, 2, 4), (2, 2, 3), (2, 3, 4)),
    "baddbmm_inplace_dtype": (lambda L, x, a, b: x.float().baddbmm_(a, b), (2, 2, 4), (2, 2, 3), (2, 3, 4)),
    "inner_last_dims": (lambda L, a, b: L.inner(a, b[:, :2]), (2, 3), (2, 3)),
    "inner_dtypes": (lambda L, a, b: L.inner(a, b.float()), (2, 3), (2, 3)),
    "inner_bool": (lambda L, a, b: L.inner(a.bool(), b.bool()), (2, 3), (2, 3)),
    "vdot_2d": (lambda L, a, b: L.vdot(a, b), (2, 3), (2, 3)),
    "vdot_0d": (lambda L, a, b: L.vdot(a[0], b[0, 0]), (2, 3), (2, 3)),
    "vdot_dtypes": (lambda L, a, b: L.vdot(a[0], b[0].float()), (2, 3), (2, 3)),
    "vdot_sizes": (lambda L, a, b: L.vdot(a[0], b[0, :2]), (2, 3), (2, 3)),
    "vdot_bool": (lambda L, a, b: L.vdot(a[0].bool(), b[0].bool()), (2, 3), (2, 3)),
    "chain_matmul_none": (lambda L, a: L.chain_matmul(), (2, 3)),
    "chain_matmul_1d": (lambda L, a: L.chain_matmul(a, a[0]), (2, 3)),
    "chain_matmul_shapes": (lambda L, a: L.chain_matmul(a, a), (2, 3)),
    "chain_matmul_list": (lambda L, a: L.chain_matmul([a, a.t()]), (2, 3)),
    "vander_2d": (lambda L, a: L.vander(a), (2, 3)),
    "vander_0d": (lambda L, a: L.vander(a[0, 0]), (2, 3)),
    "vander_negative_n": (lambda L, a: L.vander(a[0], -1), (2, 3)),
    "H_3d": (lambda L, a: a.H, (2, 2, 3)),
    "H_1d": (lambda L, a: a[0, 0].H, (2, 2, 3)),
    "mH_1d": (lambda L, a: a[0, 0].mH, (2, 2, 3)),
    "adjoint_1d": (lambda L, a: L.adjoint(a[0, 0]), (2, 2, 3)),
    "renorm_leaf": (lambda L, a: a.renorm_(2, 0, 1.0), (2, 3)),
    "renorm_1d": (lambda L, a: a[0].clone().renorm_(2, 0, 1.0), (2, 3)),
}


@pytest.mark.parametrize("case", sorted(BLAS_ERRORS))
def test_blas_errors_match_torch(case, device):
    fn, *specs = BLAS_ERRORS[case]
    grad = case.endswith("leaf")
    check_error(fn, *specs, device=device, requires_grad=grad)


# ---- triangular_solve, cholesky_solve, cholesky_inverse ----------------------------------------------
FACTOR = {
    "triangular_solve": (lambda L, b, a: L.triangular_solve(b, well(L, a)), (3, 2), (3, 3)),
    "triangular_solve_lower_transposed": (lambda L, b, a: L.triangular_solve(b, well(L, a), False, True),
                                          (3, 2), (3, 3)),
    "triangular_solve_unit": (lambda L, b, a: L.triangular_solve(b, a, upper=False, unitriangular=True),
                              (4, 1), (4, 4)),
    "triangular_solve_unit_upper_transposed": (lambda L, b, a: b.triangular_solve(a, transpose=True,
                                                                                  unitriangular=True), (3, 2), (3, 3)),
    "triangular_solve_broadcast": (lambda L, b, a: L.triangular_solve(b, well(L, a)), (2, 1, 3, 2), (3, 3, 3)),
    "triangular_solve_large": (lambda L, b, a: L.triangular_solve(b, well(L, a) / 3, upper=False), (40, 3), (40, 40)),
    "triangular_solve_only_clone_used": (lambda L, b, a: L.triangular_solve(b, a).cloned_coefficient, (3, 2),
                                         (3, 3)),
    "triangular_solve_only_solution_used": (lambda L, b, a: L.triangular_solve(b, well(L, a)).solution, (3, 2),
                                            (2, 3, 3)),
    "cholesky_solve": (lambda L, b, a: L.cholesky_solve(b, well(L, a).tril()), (3, 2), (3, 3)),
    "cholesky_solve_upper_method": (lambda L, b, a: b.cholesky_solve(well(L, a).triu(), upper=True), (3, 2),
                                    (3, 3)),
    "cholesky_solve_full_factor": (lambda L, b, a: L.cholesky_solve(b, well(L, a)), (3, 2), (3, 3)),
    "cholesky_solve_broadcast": (lambda L, b, a: L.cholesky_solve(b, well(L, a), True), (2, 3, 1), (3, 3)),
    "cholesky_solve_batch_of_factors": (lambda L, b, a: L.cholesky_solve(b, well(L, a)), (3, 2), (2, 3, 3)),
    "cholesky_inverse": (lambda L, a: L.cholesky_inverse(well(L, a).tril()), (3, 3)),
    "cholesky_inverse_full_factor": (lambda L, a: L.cholesky_inverse(well(L, a)), (3, 3)),
    "cholesky_inverse_upper_method": (lambda L, a: well(L, a).triu().cholesky_inverse(True), (3, 3)),
    "cholesky_inverse_batched": (lambda L, a: L.cholesky_inverse(well(L, a), upper=False), (2, 4, 4)),
    "cholesky_inverse_empty": (lambda L, a: L.cholesky_inverse(a[:0, :0]), (3, 3)),
    # LU
    "lu": (lambda L, a: L.lu(a), (4, 4)),
    "lu_get_infos": (lambda L, a: L.lu(a, get_infos=True), (3, 3)),
    "lu_method": (lambda L, a: a.lu(), (3, 3)),
    "lu_wide": (lambda L, a: L.lu(a), (3, 5)),
    "lu_tall": (lambda L, a: L.lu(a), (5, 3)),
    "lu_batched": (lambda L, a: L.lu(a, True, True), (2, 3, 4, 4)),
    "lu_empty": (lambda L, a: L.lu(a[:0]), (3, 3)),
    "lu_solve": (lambda L, b, a: L.lu_solve(b, *L.lu(a)), (3, 2), (3, 3)),
    "lu_solve_method_broadcast": (lambda L, b, a: b.lu_solve(*L.lu(a)), (2, 4, 1), (4, 4)),
    "lu_solve_batched_factors": (lambda L, b, a: L.lu_solve(b, *L.lu(a)), (3, 2), (2, 3, 3)),
    "lu_unpack": (lambda L, a: L.lu_unpack(*L.lu(a)), (4, 4)),
    "lu_unpack_wide": (lambda L, a: L.lu_unpack(*L.lu(a)), (3, 5)),
    "lu_unpack_tall_batched": (lambda L, a: L.lu_unpack(*L.lu(a)), (2, 5, 3)),
    "lu_unpack_no_pivots": (lambda L, a: L.lu_unpack(*L.lu(a), unpack_pivots=False), (3, 3)),
    "lu_unpack_only_L": (lambda L, a: L.lu_unpack(*L.lu(a)).L, (3, 4)),
    "lu_unpack_rebuilds": (lambda L, a: (lambda r: r.P @ r.L @ r.U)(L.lu_unpack(*L.lu(a))), (4, 3)),
    "lu_unpack_factors": (lambda L, a: L.lu_unpack(*L.lu(a))[1:], (3, 3)),
    # Householder QR
    "orgqr": (lambda L, a, t: L.orgqr(a, t), (4, 3), (3,)),
    "orgqr_fewer_reflectors": (lambda L, a, t: a.orgqr(t[:2]), (4, 3), (3,)),
    "orgqr_batched": (lambda L, a, t: L.orgqr(a, t), (2, 5, 3), (2, 2)),
    "orgqr_of_geqrf": (lambda L, a: L.orgqr(*[x.detach() for x in L.geqrf(a)]), (5, 3)),
    "ormqr": (lambda L, a, t, c: L.ormqr(a, t, c), (4, 3), (3,), (4, 2)),
    "ormqr_transpose": (lambda L, a, t, c: a.ormqr(t, c, transpose=True), (4, 3), (3,), (4, 5)),
    "ormqr_right": (lambda L, a, t, c: L.ormqr(a, t, c, left=False), (4, 3), (3,), (2, 4)),
    "ormqr_right_transpose": (lambda L, a, t, c: L.ormqr(a, t, c, False, True), (4, 3), (3,), (3, 4)),
    "ormqr_wide_reflectors": (lambda L, a, t, c: L.ormqr(a, t, c), (3, 4), (3,), (3, 2)),
    "ormqr_batched": (lambda L, a, t, c: L.ormqr(a, t, c), (2, 4, 2), (2, 2), (2, 4, 3)),
}


@pytest.mark.parametrize("case", sorted(FACTOR))
def test_factorizations_match_torch(case, device):
    fn, *specs = FACTOR[case]
    check(fn, *specs, device=device)


FACTOR_GRADCHECK = ["triangular_solve", "triangular_solve_lower_transposed", "triangular_solve_unit",
                    "triangular_solve_broadcast", "cholesky_solve", "cholesky_solve_upper_method",
                    "cholesky_inverse", "cholesky_inverse_upper_method", "lu", "lu_wide", "lu_tall", "lu_solve",
                    "lu_solve_method_broadcast", "lu_unpack_wide", "lu_unpack_tall_batched", "lu_unpack_rebuilds",
                    "orgqr", "orgqr_fewer_reflectors", "ormqr", "ormqr_transpose", "ormqr_right",
                    "ormqr_right_transpose", "ormqr_batched"]


@pytest.mark.parametrize("case", FACTOR_GRADCHECK)
def test_factorization_gradcheck(case):
    fn, *specs = FACTOR[case]
    assert grad_ok(fn, *specs)


@pytest.mark.parametrize("case", ["triangular_solve", "triangular_solve_unit", "cholesky_solve",
                                  "cholesky_inverse_upper_method", "lu", "lu_wide", "lu_tall", "lu_solve",
                                  "lu_unpack_factors", "orgqr", "ormqr_right_transpose"])
def test_factorization_double_backward_matches_torch(case, device):
    fn, *specs = FACTOR[case]
    check_double_backward(fn, *specs, device=device)


def test_triangular_inputs_are_read_only_in_their_triangle(device):
    # the other triangle (and a unit diagonal) are never read: garbage there changes nothing
    a = np.triu(np.random.default_rng(1).uniform(1, 2, (3, 3)))
    a[2, 0] = a[1, 0] = np.nan
    check(lambda L, b, a: (L.triangular_solve(b, a).solution, L.cholesky_solve(b, a, upper=True),
                           L.cholesky_inverse(a, upper=True)), (3, 2), a, device=device, backward=False)


def test_singular_triangles_give_inf_and_nan_as_torchs(device):
    z = np.zeros((3, 3))
    check(lambda L, b, a: (L.triangular_solve(b, a).solution, L.cholesky_solve(b, a)), (3, 2), z,
          dtypes=(np.float64,), device=device, backward=False)


def test_singular_lu_reports_info_without_raising(device):
    a = np.stack([np.eye(3), [[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]], np.zeros((3, 3))])
    check(lambda L, a: L.lu(a, get_infos=True), a, dtypes=(np.float64,), device=device, backward=False)


def test_lu_without_pivoting_on_cuda_factors_in_place(sim_cuda):
    a = rustgrad.tensor([[4., 3.], [6., 3.]], device="cuda", dtype=rustgrad.float64)
    LU, pivots = rustgrad.lu(a, pivot=False)
    assert pivots.tolist() == [1, 2]  # no row swapped
    _, L, U = rustgrad.lu_unpack(LU, pivots)
    assert np.allclose((L @ U).cpu().numpy(), a.cpu().numpy())
    assert L.tolist() == [[1.0, 0.0], [1.5, 1.0]]


def test_geqrf_matches_torch_and_has_no_derivative(device):
    for shape in ((5, 3), (3, 5), (2, 4, 4)):
        check(lambda L, a: L.geqrf(a), shape, device=device, backward=False)
    check(lambda L, a: a.geqrf(), np.zeros((3, 2)), device=device, backward=False)
    check_error(lambda L, a: L.geqrf(a).a.sum().backward(), (4, 3), device=device, requires_grad=True,
                phrase="the derivative for 'geqrf' is not implemented.")


def test_lu_unpack_of_integers_and_without_data(device):
    check(lambda L, a, p: L.lu_unpack(a, p.int()), ints([[2, 1], [3, 4]]), ints([2, 2]), dtypes=(None,),
          device=device)
    check(lambda L, a: L.lu_unpack(*L.lu(a), unpack_data=False), (3, 3), device=device, backward=False)
    # their empty L and U refuse a gradient as torch's: tril/triu of a vector
    check_error(lambda L, a: L.lu_unpack(*L.lu(a), unpack_data=False).U.sum().backward(), (3, 3),
                device=device, requires_grad=True, phrase="triu: input tensor must have at least 2 dimensions")


def test_factorization_saved_attributes_are_torchs():
    def saved(lib):
        a = lib.tensor(np.arange(9.0).reshape(3, 3) + 4 * np.eye(3), requires_grad=True)
        b = lib.ones(3, 2, dtype=lib.float64, requires_grad=True)
        out = []
        n = lib.triangular_solve(b, a, False, True, True).solution.grad_fn
        out.append((n._saved_upper, n._saved_transpose, n._saved_unitriangular, n._saved_A is a,
                    n._saved_self is b, n._saved_solution.shape))
        n = lib.cholesky_solve(b, a, True).grad_fn
        out.append((n._saved_upper, n._saved_input2 is a, n._saved_self is b, n._saved_result.shape))
        n = lib.cholesky_inverse(a).grad_fn
        out.append((n._saved_upper, n._saved_self is a, n._saved_result.shape))
        LU, piv = lib.lu(a)
        n = LU.grad_fn
        out.append((n._saved_pivot, n._saved_pivots.tolist(), n._saved_LU.shape))
        n = lib.lu_solve(b, LU, piv).grad_fn
        out.append((n._saved_left, n._saved_adjoint, n._saved_pivots.tolist(), n._saved_result.shape))
        n = lib.lu_unpack(*lib.lu(a[:2])).L.grad_fn
        out.append((n._saved_LU_data_sym_argsize_minus_1, n._saved_LU_data_sym_argsize_minus_2))
        tau = lib.ones(3, dtype=lib.float64, requires_grad=True)
        n = lib.orgqr(a, tau).grad_fn
        out.append((n._saved_input is a, n._saved_tau is tau, n._saved_result.shape))
        n = lib.ormqr(a, tau, b.mT, left=False, transpose=True).grad_fn
        out.append((n._saved_left, n._saved_transpose, n._saved_self is a, n._saved_input2 is tau,
                    n._saved_result.shape))
        return out

    assert saved(rustgrad) == saved(torch)


def test_named_tuples_are_torchs():
    a = rustgrad.tensor([[2., 1.], [1., 3.]])
    results = {
        "triangular_solve": (rustgrad.triangular_solve(a, a), ("solution", "cloned_coefficient")),
        "lu_unpack": (rustgrad.lu_unpack(*rustgrad.lu(a)), ("P", "L", "U")),
        "geqrf": (rustgrad.geqrf(a), ("a", "tau")),
        "_lu_with_info": (rustgrad.lu(a, get_infos=True), ("LU", "pivots", "info")),
    }
    for name, (result, fields) in results.items():
        assert type(result) is getattr(rustgrad.return_types, name)
        assert result._fields == fields == getattr(torch.return_types, name).__match_args__
        assert repr(result).startswith(f"torch.return_types.{name}(\n{fields[0]}=tensor(")
    # the plain tuples of torch.lu and Tensor.lu
    assert type(rustgrad.lu(a)) is tuple and type(a.lu(get_infos=True)) is tuple
    assert type(torch.lu(torch.eye(2))) is tuple and type(torch.eye(2).lu(get_infos=True)) is tuple


def test_deprecated_functions_warn_as_torch():
    from rustgrad._ops import blas, factorizations

    a = rustgrad.eye(2)
    calls = {
        "torch.lu is deprecated in favor of torch.linalg.lu_factor": lambda: rustgrad.lu(a),
        "torch.lu_solve is deprecated in favor of torch.linalg.lu_solve": lambda: rustgrad.lu_solve(a, *rustgrad.lu(a)),
        "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular":
            lambda: rustgrad.triangular_solve(a, a),
        "torch.chain_matmul is deprecated": lambda: rustgrad.chain_matmul(a, a),
    }
    for phrase, call in calls.items():
        factorizations._WARNED.clear()
        blas._WARNED_CHAIN.clear()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            call()
            call()
        said = [str(w.message) for w in seen if phrase in str(w.message)]
        assert len(said) == 1 and all(w.category is UserWarning for w in seen), [str(w.message) for w in seen]


FACTOR_ERRORS = {
    # triangular_solve
    "tri_b_1d": (lambda L, b, a: L.triangular_solve(b[:, 0], a), (3, 2), (3, 3)),
    "tri_a_1d": (lambda L, b, a: L.triangular_solve(b, a[0]), (3, 2), (3, 3)),
    "tri_dtypes_before_square": (lambda L, b, a: L.triangular_solve(b.float(), a[:, :2]), (3, 2), (3, 3)),
    "tri_not_square": (lambda L, b, a: L.triangular_solve(b, a[:2]), (3, 2), (3, 3)),
    "tri_sizes": (lambda L, b, a: L.triangular_solve(b[:2], a), (3, 2), (3, 3)),
    "tri_batches": (lambda L, b, a: L.triangular_solve(b, a), (2, 3, 2), (3, 3, 3)),
    "tri_int": (lambda L, b, a: L.triangular_solve(b.long(), a.long()), (3, 2), (3, 3)),
    "tri_half": (lambda L, b, a: L.triangular_solve(b.half(), a.half()), (3, 2), (3, 3)),
    # cholesky_solve, cholesky_inverse
    "chol_solve_b_1d": (lambda L, b, a: L.cholesky_solve(b[:, 0], a), (3, 2), (3, 3)),
    "chol_solve_u_1d": (lambda L, b, a: L.cholesky_solve(b, a[0]), (3, 2), (3, 3)),
    "chol_solve_dtypes": (lambda L, b, a: L.cholesky_solve(b.int(), a), (3, 2), (3, 3)),
    "chol_solve_not_square": (lambda L, b, a: L.cholesky_solve(b, a[:2]), (3, 2), (3, 3)),
    "chol_solve_sizes": (lambda L, b, a: L.cholesky_solve(b[:2], a), (3, 2), (3, 3)),
    "chol_solve_batches": (lambda L, b, a: L.cholesky_solve(b, a), (2, 3, 2), (3, 3, 3)),
    "chol_solve_int": (lambda L, b, a: L.cholesky_solve(b.long(), a.long()), (3, 2), (3, 3)),
    "chol_inverse_1d": (lambda L, a: L.cholesky_inverse(a[0]), (3, 3)),
    "chol_inverse_not_square": (lambda L, a: L.cholesky_inverse(a[:2]), (3, 3)),
    "chol_inverse_int": (lambda L, a: L.cholesky_inverse(a.long()), (3, 3)),
    "chol_inverse_half": (lambda L, a: a.half().cholesky_inverse(), (3, 3)),
    # lu
    "lu_1d": (lambda L, a: L.lu(a[0]), (3, 3)),
    "lu_int": (lambda L, a: L.lu(a.long()), (3, 3)),
    "lu_half": (lambda L, a: a.half().lu(), (3, 3)),
    "lu_without_pivots_on_cpu": (lambda L, a: L.lu(a, pivot=False), (3, 3)),
    # lu_solve
    "lu_solve_pivots_dtype": (lambda L, b, a: L.lu_solve(b, L.lu(a)[0], L.lu(a)[1].long()), (3, 2), (3, 3)),
    "lu_solve_b_1d": (lambda L, b, a: L.lu_solve(b[:, 0], *L.lu(a)), (3, 2), (3, 3)),
    "lu_solve_sizes": (lambda L, b, a: L.lu_solve(b[:2], *L.lu(a)), (3, 2), (3, 3)),
    "lu_solve_dtypes": (lambda L, b, a: L.lu_solve(b.float(), *L.lu(a)), (3, 2), (3, 3)),
    "lu_solve_pivot_batch": (lambda L, b, a: L.lu_solve(b, L.lu(a)[0].expand(2, 3, 3), L.lu(a)[1]), (3, 2),
                             (3, 3)),
    "lu_solve_pivot_count": (lambda L, b, a: L.lu_solve(b, L.lu(a)[0], L.lu(a)[1][:2]), (3, 2), (3, 3)),
    "lu_solve_not_square": (lambda L, b, a: L.lu_solve(b, L.lu(a)[0][:2], L.lu(a)[1]), (3, 2), (3, 3)),
    "lu_solve_int": (lambda L, b, a: L.lu_solve(b.long(), a.long(), L.lu(a)[1]), (3, 2), (3, 3)),
    "lu_solve_batches": (lambda L, b, a: L.lu_solve(b, *L.lu(a)), (2, 3, 2), (3, 3, 3)),
    "lu_solve_pivot_too_large": (lambda L, b, a: L.lu_solve(b, L.lu(a)[0], L.lu(a)[1] + 5), (3, 2), (3, 3)),
    "lu_solve_pivot_too_small": (lambda L, b, a: L.lu_solve(b, L.lu(a)[0], L.lu(a)[1] * 0), (3, 2), (3, 3)),
    # lu_unpack
    "lu_unpack_pivots_dtype": (lambda L, a: L.lu_unpack(L.lu(a)[0], L.lu(a)[1].long()), (3, 3)),
    "lu_unpack_pivots_shape": (lambda L, a: L.lu_unpack(L.lu(a)[0], L.lu(a)[1][:2]), (3, 3)),
    "lu_unpack_1d": (lambda L, a: L.lu_unpack(a[0], L.lu(a)[1].long()), (3, 3)),
    "lu_unpack_pivot_values": (lambda L, a: L.lu_unpack(L.lu(a)[0], L.lu(a)[1] * 0), (3, 3)),
    # geqrf, orgqr, ormqr
    "geqrf_1d": (lambda L, a: L.geqrf(a[0]), (4, 3)),
    "geqrf_int": (lambda L, a: L.geqrf(a.long()), (4, 3)),
    "geqrf_half": (lambda L, a: L.geqrf(a.half()), (4, 3)),
    "orgqr_1d": (lambda L, a, t: L.orgqr(a[0], t), (4, 3), (3,)),
    "orgqr_wide": (lambda L, a, t: L.orgqr(a.t(), t), (4, 3), (3,)),
    "orgqr_tau_long": (lambda L, a, t: L.orgqr(a[:, :2], t), (4, 3), (3,)),
    "orgqr_tau_ndim": (lambda L, a, t: L.orgqr(a, t[None]), (4, 3), (3,)),
    "orgqr_tau_0d": (lambda L, a, t: L.orgqr(a, t[0]), (4, 3), (3,)),
    "orgqr_tau_batch": (lambda L, a, t: L.orgqr(a.expand(2, 4, 3), t[None]), (4, 3), (3,)),
    "orgqr_dtypes": (lambda L, a, t: L.orgqr(a, t.float()), (4, 3), (3,)),
    "orgqr_int": (lambda L, a, t: L.orgqr(a.int(), t.int()), (4, 3), (3,)),
    "ormqr_input_1d": (lambda L, a, t, c: L.ormqr(a[0], t, c), (4, 3), (3,), (4, 2)),
    "ormqr_other_1d": (lambda L, a, t, c: L.ormqr(a, t, c[0]), (4, 3), (3,), (4, 2)),
    "ormqr_left_rows": (lambda L, a, t, c: L.ormqr(a, t, c[:3].float()), (4, 3), (3,), (4, 2)),
    "ormqr_right_columns": (lambda L, a, t, c: L.ormqr(a, t, c, left=False), (4, 3), (3,), (4, 2)),
    "ormqr_tau_size": (lambda L, a, t, c: L.ormqr(a, t[:2], c), (4, 3), (3,), (4, 2)),
    "ormqr_tau_size_right": (lambda L, a, t, c: L.ormqr(a, t[:2], c.t(), left=False), (4, 3), (3,), (4, 2)),
    "ormqr_tau_0d": (lambda L, a, t, c: L.ormqr(a, t[0], c), (4, 3), (3,), (4, 2)),
    "ormqr_other_ndim": (lambda L, a, t, c: L.ormqr(a, t, c[None]), (4, 3), (3,), (4, 2)),
    "ormqr_tau_ndim": (lambda L, a, t, c: L.ormqr(a, t[None], c), (4, 3), (3,), (4, 2)),
    "ormqr_tau_batch": (lambda L, a, t, c: L.ormqr(a.expand(2, 4, 3), t.expand(1, 3), c.expand(2, 4, 2)),
                        (4, 3), (3,), (4, 2)),
    "ormqr_other_batch": (lambda L, a, t, c: L.ormqr(a.expand(2, 4, 3), t.expand(2, 3), c.expand(1, 4, 2)),
                          (4, 3), (3,), (4, 2)),
    "ormqr_tau_dtype": (lambda L, a, t, c: L.ormqr(a, t.float(), c), (4, 3), (3,), (4, 2)),
    "ormqr_other_dtype": (lambda L, a, t, c: L.ormqr(a, t, c.float()), (4, 3), (3,), (4, 2)),
    "ormqr_int": (lambda L, a, t, c: L.ormqr(a.int(), t.int(), c.int()), (4, 3), (3,), (4, 2)),
}


# torch refuses pivot=False on the CPU only (CUDA factors without pivoting)
_CPU_ONLY_FACTOR_ERRORS = {"lu_without_pivots_on_cpu"}


@pytest.mark.parametrize("case", sorted(set(FACTOR_ERRORS) - _CPU_ONLY_FACTOR_ERRORS))
def test_factorization_errors_match_torch(case, device):
    _check_factor_error(case, device)


@pytest.mark.parametrize("case", sorted(_CPU_ONLY_FACTOR_ERRORS))
def test_cpu_only_factorization_errors_match_torch(case):
    _check_factor_error(case, "cpu")


def _check_factor_error(case, device):
    fn, *specs = FACTOR_ERRORS[case]
    # a dtype a kernel has no loop for: torch names the kernel with its device ("geqrf_cpu")
    kernel = case.endswith(("_int", "_half")) and case != "lu_solve_int"
    check_error(fn, *specs, device=device, phrase="not implemented for" if kernel else None)


@pytest.mark.parametrize("upper", [False, True])
def test_singular_cholesky_factor_raises_torchs_linalg_error(upper, device):
    singular = [np.array([[1., 0., 0.], [1., 0., 0.], [2., 3., 4.]]),
                np.stack([np.eye(3), np.zeros((3, 3))]),
                np.stack([np.eye(3), np.eye(3), np.diag([1., 2., 0.])])]
    for a in singular:
        a = a.swapaxes(-1, -2) if upper else a
        messages = []
        for lib, cls in ((torch, torch.linalg.LinAlgError), (rustgrad, rustgrad.linalg.LinAlgError)):
            kw = {"device": device} if lib is rustgrad else {}
            with pytest.raises(cls) as info:
                lib.cholesky_inverse(lib.tensor(a, **kw), upper)
            messages.append(str(info.value))
        assert messages[0] == messages[1] and "is zero, the inversion could not be completed" in messages[0]


# ---- removed functions -----------------------------------------------------------------------------
REMOVED = {
    "eig": lambda L, a: L.eig(a),
    "eig_method": lambda L, a: a.eig(eigenvectors=True),
    "symeig": lambda L, a: L.symeig(a, upper=False),
    "symeig_method": lambda L, a: a.symeig(True),
    "lstsq": lambda L, a: L.lstsq(a, a),
    "lstsq_method": lambda L, a: a.lstsq(a),
    "solve": lambda L, a: L.solve(a, a),
    "solve_method": lambda L, a: a.solve(a),
    "matrix_rank": lambda L, a: L.matrix_rank(a, 0.1, True),
}


@pytest.mark.parametrize("case", sorted(REMOVED))
def test_removed_functions_raise_torchs_error(case):
    errors = []
    for lib in (torch, rustgrad):
        with pytest.raises(RuntimeError) as info:
            REMOVED[case](lib, lib.eye(3))
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert errors[0].startswith("This function was deprecated since version 1.9 and is now removed.")


def test_removed_functions_are_bound_where_torch_has_them():
    for name in ("eig", "symeig", "lstsq", "solve", "matrix_rank"):
        assert hasattr(rustgrad, name) and callable(getattr(rustgrad, name))
    for name in ("eig", "symeig", "lstsq", "solve"):
        assert hasattr(rustgrad.Tensor, name)
    assert not hasattr(torch.Tensor, "matrix_rank") and not hasattr(rustgrad.Tensor, "matrix_rank")


# ---- svd_lowrank, pca_lowrank ------------------------------------------------------------------------
def _low_rank(shape, rank, seed=0):
    rng = np.random.default_rng(seed)
    *batch, m, n = shape
    return rng.standard_normal((*batch, m, rank)) @ rng.standard_normal((*batch, rank, n))


def _projector(V):
    return V @ V.mT


@pytest.mark.parametrize("shape,rank,q", [((6, 5), 2, 2), ((6, 5), 2, 4), ((5, 7), 3, 3), ((2, 6, 4), 2, 3),
                                          ((6, 5), 2, 8)])
def test_svd_lowrank_recovers_an_exactly_low_rank_matrix(shape, rank, q, device):
    a = _low_rank(shape, rank)
    got = {}
    for lib in (torch, rustgrad):
        kw = {"device": device} if lib is rustgrad else {}
        A = lib.tensor(a, **kw)
        lib.manual_seed(0)
        U, S, V = lib.svd_lowrank(A, q=q)
        got[lib.__name__] = (U, S, V)
        rebuilt = (U * S.unsqueeze(-2)) @ V.mT
        np.testing.assert_allclose(rebuilt.cpu().numpy(), a, atol=1e-10)
        k = S.shape[-1]
        np.testing.assert_allclose((U.mT @ U).cpu().numpy(), np.broadcast_to(np.eye(k), U.mT.shape[:-1] + (k,)),
                                   atol=1e-10)
    (tu, ts, tv), (ru, rs, rv) = got["torch"], got["rustgrad"]
    assert tu.shape == ru.shape and ts.shape == rs.shape and tv.shape == rv.shape
    assert str(ru.dtype) == str(tu.dtype) and ru.device.type == device.split(":")[0]
    np.testing.assert_allclose(rs.cpu().numpy()[..., :rank], ts.numpy()[..., :rank], rtol=1e-10)
    np.testing.assert_allclose(rs.cpu().numpy()[..., rank:], 0, atol=1e-10)
    # the rank leading singular vectors span the same spaces as torch's
    for t, r in ((tu, ru), (tv, rv)):
        np.testing.assert_allclose(_projector(r[..., :rank]).cpu().numpy(), _projector(t[..., :rank]).numpy(),
                                   atol=1e-9)


def test_svd_lowrank_with_mean_and_float32(device):
    a = _low_rank((7, 5), 2) + 3.0
    for lib in (torch, rustgrad):
        kw = {"device": device} if lib is rustgrad else {}
        A = lib.tensor(a, **kw)
        M = lib.full((5,), 3.0, dtype=lib.float64, **kw)
        U, S, V = lib.svd_lowrank(A, q=2, niter=1, M=M)
        np.testing.assert_allclose(((U * S) @ V.mT).cpu().numpy(), a - 3.0, atol=1e-10)
        U, S, V = lib.svd_lowrank(A.float(), q=3, niter=0)
        assert U.dtype == S.dtype == V.dtype == lib.float32
        np.testing.assert_allclose(((U * S) @ V.mT).cpu().numpy(), a, rtol=1e-4, atol=1e-4)


def test_svd_lowrank_singular_values_have_torchs_gradient(device):
    a = _low_rank((6, 4), 2)
    grads = []
    for lib in (torch, rustgrad):
        kw = {"device": device} if lib is rustgrad else {}
        A = lib.tensor(a, requires_grad=True, **kw)
        U, S, V = lib.svd_lowrank(A, q=2)
        assert S.grad_fn.name() == "LinalgSvdBackward0" and U.grad_fn.name() == "MmBackward0"
        assert V.grad_fn.name() == "TransposeBackward0"
        (S * lib.tensor([1.0, -2.0], dtype=lib.float64, **kw)).sum().backward()
        grads.append(A.grad.cpu().numpy())
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-9)


def test_pca_lowrank_matches_torch_on_low_rank_data(device):
    a = _low_rank((8, 5), 2) + np.arange(5.0)  # rank 2 once centered
    for center, q in ((True, 2), (True, None), (False, 3)):
        got = []
        for lib in (torch, rustgrad):
            kw = {"device": device} if lib is rustgrad else {}
            U, S, V = lib.pca_lowrank(lib.tensor(a, **kw), q=q, center=center)
            got.append((tuple(U.shape), tuple(S.shape), tuple(V.shape), S.cpu().numpy(),
                        _projector(V[:, :2]).cpu().numpy()))
        assert got[0][:3] == got[1][:3]
        np.testing.assert_allclose(got[1][3][:2], got[0][3][:2], rtol=1e-9)
        np.testing.assert_allclose(got[1][4], got[0][4], atol=1e-9)


LOWRANK_ERRORS = {
    "pca_q_too_large": lambda L, a: L.pca_lowrank(a, q=6),
    "pca_q_negative": lambda L, a: L.pca_lowrank(a, q=-1),
    "pca_1d": lambda L, a: L.pca_lowrank(a[0]),
    "svd_lowrank_1d": lambda L, a: L.svd_lowrank(a[0]),
    "svd_lowrank_int": lambda L, a: L.svd_lowrank(a.int(), q=2),
    "pca_int": lambda L, a: L.pca_lowrank(a.int()),
    "pca_niter_negative": lambda L, a: L.pca_lowrank(a, niter=-1),
}


@pytest.mark.parametrize("case", sorted(LOWRANK_ERRORS))
def test_lowrank_errors_match_torch(case, device):
    check_error(LOWRANK_ERRORS[case], (6, 5), device=device)


# ---- lobpcg ------------------------------------------------------------------------------------------
def _spd(n, seed=0, batch=()):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((*batch, n, n))
    return x @ np.swapaxes(x, -1, -2) + np.eye(n)


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_finds_the_extreme_eigenpairs(largest, device):
    a = _spd(12)
    w, v = np.linalg.eigh(a)
    sel = slice(None, -4, -1) if largest else slice(0, 3)
    A = rustgrad.tensor(a, device=device)
    E, X = rustgrad.lobpcg(A, k=3, largest=largest)
    assert E.shape == (3,) and X.shape == (12, 3) and E.device.type == device
    np.testing.assert_allclose(E.cpu().numpy(), w[sel], rtol=1e-10)
    np.testing.assert_allclose(_projector(X).cpu().numpy(), v[:, sel] @ v[:, sel].T, atol=1e-6)
    # torch's own lobpcg finds the same
    tE, tX = torch.lobpcg(torch.tensor(a), k=3, largest=largest)
    np.testing.assert_allclose(E.cpu().numpy(), tE.numpy(), rtol=1e-10)


def test_lobpcg_batched_float32_start_and_generalized(device):
    a = _spd(9, batch=(2,))
    E, X = rustgrad.lobpcg(rustgrad.tensor(a, device=device), k=2)
    assert E.shape == (2, 2) and X.shape == (2, 9, 2)
    np.testing.assert_allclose(E.cpu().numpy(), np.linalg.eigvalsh(a)[:, ::-1][:, :2], rtol=1e-10)
    E32, _ = rustgrad.lobpcg(rustgrad.tensor(a[0], dtype=rustgrad.float32, device=device), k=2)
    assert E32.dtype == rustgrad.float32
    np.testing.assert_allclose(E32.cpu().numpy(), E[0].cpu().numpy(), rtol=1e-4)
    X0 = rustgrad.tensor(np.random.default_rng(3).standard_normal((9, 3)), device=device)
    E3, X3 = rustgrad.lobpcg(rustgrad.tensor(a[0], device=device), X=X0)
    assert E3.shape == (3,) and X3.shape == (9, 3)
    # A x = l B x: the eigenvalues of L^-1 A L^-T, B = L L^T
    b = _spd(9, seed=5) / 10
    low = np.linalg.cholesky(b)
    expected = np.linalg.eigvalsh(np.linalg.solve(low, np.linalg.solve(low, a[0]).T))[::-1][:2]
    Eb, Xb = rustgrad.lobpcg(rustgrad.tensor(a[0], device=device), k=2, B=rustgrad.tensor(b, device=device))
    np.testing.assert_allclose(Eb.cpu().numpy(), expected, rtol=1e-9)
    tE, _ = torch.lobpcg(torch.tensor(a[0]), k=2, B=torch.tensor(b))
    np.testing.assert_allclose(Eb.cpu().numpy(), tE.numpy(), rtol=1e-9)


def test_lobpcg_gradient_matches_torch(device):
    a = _spd(12, seed=2)
    weights = np.random.default_rng(4).standard_normal((12, 12))
    grads = []
    for lib in (torch, rustgrad):
        kw = {"device": device} if lib is rustgrad else {}
        A = lib.tensor(a, requires_grad=True, **kw)
        E, X = lib.lobpcg(A, k=2)
        assert E.grad_fn.name() == X.grad_fn.name() == "LOBPCGAutogradFunctionBackward"
        assert E.grad_fn.next_functions[0][0].name() == "DivBackward0"  # through (A + A^T) / 2
        # the projector on the eigenvectors: free of their signs
        (E * lib.tensor([1.0, 3.0], dtype=lib.float64, **kw)).sum().backward(retain_graph=True)
        (_projector(X) * lib.tensor(weights, **kw)).sum().backward()
        grads.append(A.grad.cpu().numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads[1], grads[1].T, atol=1e-12)


def test_lobpcg_errors_match_torch(device):
    check_error(lambda L, a: L.lobpcg(a, k=5), (12, 12), device=device, phrase="LOBPCG algorithm is not applicable")
    check_error(lambda L, a: L.lobpcg(a[0], k=1), (12, 12), device=device)
    check_error(lambda L, a: L.lobpcg(a.int(), k=1), (12, 12), device=device)
    check_error(lambda L, a: L.lobpcg(a[:, :5], k=1), (12, 12), device=device, requires_grad=True)
    # torch's backward refuses a generalized problem
    for lib in (torch, rustgrad):
        kw = {"device": device} if lib is rustgrad else {}
        A = lib.tensor(_spd(9), requires_grad=True, **kw)
        E, _ = lib.lobpcg(A, k=1, B=lib.eye(9, dtype=lib.float64, **kw))
        with pytest.raises(ValueError, match="lobpcg.backward does not support backward with B != I yet."):
            E.sum().backward()
