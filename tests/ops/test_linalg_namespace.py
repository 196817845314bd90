"""torch.linalg's solvers, factorizations and matrix functions against torch: solve_triangular,
lu_factor, lu_factor_ex, lu, lu_solve, householder_product, ldl_factor, ldl_factor_ex, ldl_solve,
vander, matmul, diagonal, tensorinv, tensorsolve, cond, matrix_sqrth and polar. Values
(float32/float64, batched and broadcast; integers where torch takes them), grad_fn names,
gradients, gradcheck and double backward in float64, saved attributes, named tuples, errors
(torch's exception type and key phrase), on every device.

LDL^T is compared pivot for pivot with LAPACK's sytrf (Bunch-Kaufman) as torch runs it. Where
torch's own backward raises (the LDL functions; cond with the norms it computes through an
inverse it then writes in place), rustgrad's raises the same error."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check, check_double_backward, check_error, grad_ok, ints


def LA(lib):  # noqa: N802  (the program's torch.linalg)
    return lib.linalg


def well(lib, a):
    """a with 3 added to its diagonal: triangles of it are well-conditioned factors."""
    return a + 3 * lib.eye(a.shape[-1], dtype=a.dtype)


def spd(lib, a):
    """A symmetric positive-definite matrix made from a."""
    return a @ a.mT + lib.eye(a.shape[-1], dtype=a.dtype)


def sym(lib, a):
    return a + a.mT


# ---- values, grad_fn names and gradients -------------------------------------------------------
CASES = {
    # solve_triangular
    "solve_triangular_upper": (lambda L, a, b: LA(L).solve_triangular(well(L, a), b, upper=True), (3, 3), (3, 2)),
    "solve_triangular_lower": (lambda L, a, b: LA(L).solve_triangular(well(L, a), b, upper=False), (4, 4), (4, 3)),
    "solve_triangular_right": (lambda L, a, b: LA(L).solve_triangular(well(L, a), b, upper=True, left=False),
                               (3, 3), (2, 3)),
    "solve_triangular_unit": (lambda L, a, b: LA(L).solve_triangular(a, b, upper=False, unitriangular=True),
                              (3, 3), (3, 2)),
    "solve_triangular_unit_right": (lambda L, a, b: LA(L).solve_triangular(a, b, upper=True, left=False,
                                                                           unitriangular=True), (3, 3), (4, 3)),
    "solve_triangular_broadcast": (lambda L, a, b: LA(L).solve_triangular(well(L, a), b, upper=False),
                                   (2, 1, 3, 3), (4, 3, 2)),
    "solve_triangular_batched_B_only": (lambda L, a, b: LA(L).solve_triangular(well(L, a), b, upper=True),
                                        (3, 3), (2, 3, 2)),
    "solve_triangular_large": (lambda L, a, b: LA(L).solve_triangular(well(L, a) / 3, b, upper=True, left=False),
                               (40, 40), (2, 40)),
    "solve_triangular_empty": (lambda L, a, b: LA(L).solve_triangular(a[:0], b, upper=True), (2, 3, 3), (3, 2)),
    "solve_triangular_no_columns": (lambda L, a, b: LA(L).solve_triangular(well(L, a), b[:, :0], upper=True),
                                    (3, 3), (3, 2)),
    # lu_factor, lu_factor_ex, lu
    "lu_factor": (lambda L, a: LA(L).lu_factor(a), (4, 4)),
    "lu_factor_batched": (lambda L, a: LA(L).lu_factor(a), (2, 3, 3)),
    "lu_factor_wide": (lambda L, a: LA(L).lu_factor(a), (3, 5)),
    "lu_factor_tall": (lambda L, a: LA(L).lu_factor(a, pivot=True), (5, 3)),
    "lu_factor_ex": (lambda L, a: LA(L).lu_factor_ex(a), (2, 4, 4)),
    "lu_factor_ex_wide_checked": (lambda L, a: LA(L).lu_factor_ex(a, check_errors=True), (2, 3, 5)),
    "lu_factor_empty": (lambda L, a: LA(L).lu_factor(a[:0, :0]), (3, 3)),
    "lu": (lambda L, a: LA(L).lu(a), (4, 4)),
    "lu_batched": (lambda L, a: LA(L).lu(a), (2, 3, 3)),
    "lu_wide": (lambda L, a: LA(L).lu(a), (3, 5)),
    "lu_tall": (lambda L, a: LA(L).lu(a), (2, 5, 3)),
    "lu_L_only": (lambda L, a: LA(L).lu(a).L, (4, 3)),
    "lu_U_only": (lambda L, a: LA(L).lu(a).U, (3, 4)),
    "lu_rebuilds": (lambda L, a: (lambda r: r.P @ r.L @ r.U)(LA(L).lu(a)), (4, 4)),
    "lu_empty": (lambda L, a: LA(L).lu(a[:0]), (3, 3)),
    # lu_solve
    "lu_solve": (lambda L, a, b: LA(L).lu_solve(*LA(L).lu_factor(a), b), (3, 3), (3, 2)),
    "lu_solve_adjoint": (lambda L, a, b: LA(L).lu_solve(*LA(L).lu_factor(a), b, adjoint=True), (3, 3), (3, 2)),
    "lu_solve_right": (lambda L, a, b: LA(L).lu_solve(*LA(L).lu_factor(a), b, left=False), (3, 3), (2, 3)),
    "lu_solve_right_adjoint": (lambda L, a, b: LA(L).lu_solve(*LA(L).lu_factor(a), b, left=False, adjoint=True),
                               (4, 4), (2, 4)),
    "lu_solve_broadcast": (lambda L, a, b: LA(L).lu_solve(*LA(L).lu_factor(a), b, adjoint=True), (2, 1, 3, 3),
                           (4, 3, 2)),
    "lu_solve_batched_factors": (lambda L, a, b: LA(L).lu_solve(*LA(L).lu_factor(a), b, left=False),
                                 (2, 3, 3), (1, 3)),
    "lu_solve_detached_factors": (lambda L, a, b: LA(L).lu_solve(*[t.detach() for t in LA(L).lu_factor(a)], b),
                                  (3, 3), (3, 2)),
    # householder_product
    "householder_product": (lambda L, a, t: LA(L).householder_product(a, t), (4, 3), (3,)),
    "householder_product_keywords": (lambda L, a, t: LA(L).householder_product(input=a, tau=t[:2]), (4, 3), (3,)),
    "householder_product_batched": (lambda L, a, t: LA(L).householder_product(a, t), (2, 5, 3), (2, 2)),
    "householder_product_of_geqrf": (lambda L, a: LA(L).householder_product(*[x.detach() for x in L.geqrf(a)]),
                                     (5, 3)),
    # vander, matmul, diagonal
    "vander": (lambda L, x: LA(L).vander(x), (4,)),
    "vander_N": (lambda L, x: LA(L).vander(x, N=2), (3,)),
    "vander_batched": (lambda L, x: LA(L).vander(x, N=5), (2, 3)),
    "vander_0d": (lambda L, x: LA(L).vander(x[0], N=3), (4,)),
    "vander_empty": (lambda L, x: LA(L).vander(x[:0], N=3), (4,)),
    "matmul": (lambda L, a, b: LA(L).matmul(a, b), (2, 3, 4), (4, 5)),
    "matmul_vectors": (lambda L, a, b: LA(L).matmul(a, b), (4,), (4,)),
    "matmul_matrix_vector": (lambda L, a, b: LA(L).matmul(input=a, other=b), (3, 4), (4,)),
    "diagonal": (lambda L, a: LA(L).diagonal(a), (2, 3, 4)),
    "diagonal_offset": (lambda L, a: LA(L).diagonal(a, offset=-1), (4, 3)),
    "diagonal_dims": (lambda L, a: LA(L).diagonal(a, offset=1, dim1=0, dim2=2), (3, 2, 4)),
    # tensorinv, tensorsolve
    "tensorinv": (lambda L, a: LA(L).tensorinv(a + 3 * L.eye(6, dtype=a.dtype).reshape(2, 3, 6)), (2, 3, 6)),
    "tensorinv_ind1": (lambda L, a: LA(L).tensorinv(a + 3 * L.eye(6, dtype=a.dtype).reshape(6, 2, 3), ind=1),
                       (6, 2, 3)),
    "tensorinv_matrix": (lambda L, a: LA(L).tensorinv(well(L, a), 1), (4, 4)),
    "tensorinv_4d": (lambda L, a: LA(L).tensorinv(a + 3 * L.eye(4, dtype=a.dtype).reshape(2, 2, 2, 2)),
                     (2, 2, 2, 2)),
    "tensorsolve": (lambda L, a, b: LA(L).tensorsolve(a + 3 * L.eye(6, dtype=a.dtype).reshape(2, 3, 6), b),
                    (2, 3, 6), (2, 3)),
    "tensorsolve_dims": (lambda L, a, b: LA(L).tensorsolve(
        a + 3 * L.eye(6, dtype=a.dtype).reshape(6, 2, 3).movedim(0, 1), b, dims=(0,)), (2, 6, 3), (6,)),
    "tensorsolve_two_dims": (lambda L, a, b: LA(L).tensorsolve(
        a + 3 * L.eye(6, dtype=a.dtype).reshape(6, 2, 3).movedim(0, 1), b, dims=[0, 2]), (2, 6, 3), (6,)),
    "tensorsolve_0d": (lambda L, a, b: LA(L).tensorsolve(a[0] + 3, b[0]), (2,), (2,)),
    # cond
    "cond": (lambda L, a: LA(L).cond(a), (2, 3, 3)),
    "cond_2": (lambda L, a: LA(L).cond(a, 2), (3, 3)),
    "cond_minus_2": (lambda L, a: LA(L).cond(a, p=-2), (2, 3, 3)),
    "cond_nuc": (lambda L, a: LA(L).cond(a, "nuc"), (2, 3, 3)),
    "cond_rectangular": (lambda L, a: LA(L).cond(a), (3, 5)),
    "cond_float_order": (lambda L, a: LA(L).cond(a, -2.0), (3, 4)),
    # matrix_sqrth, polar
    "matrix_sqrth": (lambda L, a: LA(L).matrix_sqrth(spd(L, a)), (3, 3)),
    "matrix_sqrth_batched": (lambda L, a: LA(L).matrix_sqrth(spd(L, a)), (2, 4, 4)),
    "matrix_sqrth_lower_only": (lambda L, a: LA(L).matrix_sqrth(spd(L, a).tril() + 5 * a.triu(1)), (3, 3)),
    "polar": (lambda L, a: LA(L).polar(a), (4, 3)),
    "polar_square_batched": (lambda L, a: LA(L).polar(a), (2, 3, 3)),
    "polar_U_only": (lambda L, a: LA(L).polar(a).U, (5, 2)),
    "polar_H_only": (lambda L, a: LA(L).polar(a).H, (5, 2)),
    "polar_no_columns": (lambda L, a: LA(L).polar(a[:, :0]), (3, 2)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_linalg_functions_match_torch(case, device):
    fn, *specs = CASES[case]
    check(fn, *specs, device=device)


GRADCHECK = [
    "solve_triangular_upper", "solve_triangular_right", "solve_triangular_unit", "solve_triangular_unit_right",
    "solve_triangular_broadcast", "lu_factor", "lu_factor_wide", "lu_factor_tall", "lu", "lu_wide", "lu_tall",
    "lu_L_only", "lu_solve", "lu_solve_adjoint", "lu_solve_right", "lu_solve_right_adjoint", "lu_solve_broadcast",
    "householder_product", "householder_product_keywords", "vander", "vander_batched", "matmul", "diagonal_dims",
    "tensorinv", "tensorinv_ind1", "tensorsolve", "tensorsolve_dims", "cond", "cond_minus_2", "cond_nuc",
    "cond_rectangular", "matrix_sqrth", "matrix_sqrth_batched", "polar", "polar_square_batched",
]


@pytest.mark.parametrize("case", GRADCHECK)
def test_linalg_gradcheck(case):
    fn, *specs = CASES[case]
    assert grad_ok(fn, *specs)


DOUBLE_BACKWARD = [
    "solve_triangular_upper", "solve_triangular_unit_right", "lu_factor", "lu_factor_wide", "lu_L_only",
    "lu_U_only", "lu_rebuilds", "lu_solve", "lu_solve_adjoint", "lu_solve_right", "lu_solve_right_adjoint",
    "householder_product", "vander", "tensorinv", "tensorsolve", "cond", "cond_nuc", "matrix_sqrth",
    "polar_U_only", "polar_H_only",
]


@pytest.mark.parametrize("case", DOUBLE_BACKWARD)
def test_linalg_double_backward_matches_torch(case, device):
    fn, *specs = CASES[case]
    check_double_backward(fn, *specs, device=device)


def test_integer_inputs_of_vander_matmul_and_diagonal(device):
    x = ints([1, -2, 3])
    check(lambda L, x: (LA(L).vander(x), LA(L).vander(x.to(L.int8), N=4), LA(L).vander(x.to(L.uint8).abs())), x,
          dtypes=(None,), device=device)
    m = ints([[1, 2, 3], [4, 5, 6]])
    check(lambda L, m: (LA(L).matmul(m, m.mT), LA(L).diagonal(m), LA(L).diagonal(m.bool(), offset=1)), m,
          dtypes=(None,), device=device)


def test_solve_triangular_takes_B_in_As_dtype(device):
    # the result has A's dtype, whatever B's (torch casts B)
    check(lambda L, a, b: (LA(L).solve_triangular(well(L, a), b.double(), upper=True),
                           LA(L).solve_triangular(well(L, a).double(), b, upper=False),
                           LA(L).solve_triangular(well(L, a), b.long(), upper=True)),
          (3, 3), (3, 2), dtypes=(np.float32,), device=device, backward=False)
    a, b = rustgrad.eye(2, requires_grad=True), rustgrad.ones(2, 1, dtype=rustgrad.float64, requires_grad=True)
    LA(rustgrad).solve_triangular(a, b, upper=True).sum().backward()
    assert a.grad.dtype == rustgrad.float32 and b.grad.dtype == rustgrad.float64


def test_solve_triangular_reads_one_triangle_and_zero_pivots_give_inf_and_nan(device):
    a = np.triu(np.random.default_rng(1).uniform(1, 2, (3, 3)))
    a[2, 0] = a[1, 0] = np.nan
    check(lambda L, a, b: (LA(L).solve_triangular(a, b, upper=True),
                           LA(L).solve_triangular(a.mT, b, upper=False, left=False, unitriangular=True)),
          a, (3, 3), device=device, backward=False)
    check(lambda L, a, b: LA(L).solve_triangular(a, b, upper=True), np.array([[0., 1.], [0., 1.]]), (2, 1),
          dtypes=(np.float64,), device=device, backward=False)


def test_singular_lu_factor_raises_and_lu_factor_ex_reports(device):
    singular = np.stack([np.eye(3), [[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]], np.zeros((3, 3))])
    check(lambda L, a: (*LA(L).lu_factor_ex(a), *LA(L).lu(a)), singular, dtypes=(np.float64,), device=device,
          backward=False)
    check(lambda L, a: LA(L).lu_factor_ex(a[:, :2]), singular, dtypes=(np.float64,), device=device, backward=False)
    for fn, phrase in (
            (lambda L, a: LA(L).lu_factor(a), "torch.linalg.lu_factor: (Batch element 1): U[3,3] is zero"),
            (lambda L, a: LA(L).lu_factor_ex(a, check_errors=True), "torch.linalg.lu_factor_ex: (Batch element 1)"),
            (lambda L, a: LA(L).lu_factor(a[2]), "torch.linalg.lu_factor: U[1,1] is zero and using it on lu_solve"),
            (lambda L, a: LA(L).lu_factor(a[2, :2]), "U[1,1] is zero"),
    ):
        t, r = check_error(fn, singular, device=device, phrase=phrase)
        assert type(r) is RuntimeError and str(r) == str(t)  # a plain RuntimeError, as torch's


def test_lu_without_pivoting_on_cuda(sim_cuda):
    a = rustgrad.tensor([[4., 3., 1.], [6., 3., 2.], [1., 1., 5.]], device="cuda", dtype=rustgrad.float64)
    P, L, U = rustgrad.linalg.lu(a, pivot=False)
    assert P.shape == (0,) and P.device.type == "cuda"
    assert np.allclose((L @ U).cpu().numpy(), a.cpu().numpy())
    assert L.tolist()[1][0] == 1.5  # no row swapped: 6 / 4
    LU, pivots = rustgrad.linalg.lu_factor(a, pivot=False)
    assert pivots.tolist() == [1, 2, 3]
    assert np.allclose(LU.cpu().numpy(), (L + U - rustgrad.eye(3, device="cuda")).cpu().numpy())
    # the gradient of A = L U: partial pivoting swaps no rows of this matrix, so torch's pivoted
    # factors (and their gradients) are the same
    b = np.array([[6., 3., 1.], [4., 3., 2.], [1., 1., 5.]])
    grads = []
    for lib, kw in ((rustgrad, dict(pivot=False)), (torch, {})):
        x = lib.tensor(b, requires_grad=True, **({"device": "cuda"} if lib is rustgrad else {}))
        _, L, U = lib.linalg.lu(x, **kw)
        (L.sum() + (U * U).sum()).backward()
        grads.append(x.grad.cpu().numpy())
    assert np.allclose(grads[0], grads[1])


def test_ldl_factor_matches_lapacks_bunch_kaufman_pivots(device):
    rng = np.random.default_rng(3)
    mats = [rng.standard_normal((5, 5)), rng.standard_normal((2, 4, 4)),
            np.array([[0., 1., 2.], [1., 0., 3.], [2., 3., 0.]]) / 2,  # zero diagonal: 2x2 pivots
            np.array([[1., 5., 0.], [5., 1., 0.], [0., 0., 4.]]) / 2,
            np.diag([3., -1., 2.]) / 2]
    for a in mats:
        check(lambda L, a: (*LA(L).ldl_factor(sym(L, a)), *LA(L).ldl_factor_ex(sym(L, a), hermitian=True)), a,
              device=device, backward=False)
    # a 2x2 pivot, then a 1x1 one
    assert LA(rustgrad).ldl_factor(rustgrad.tensor(mats[3] * 2, device=device)).pivots.tolist() == [-2, -2, 3]


def test_ldl_factor_reads_the_lower_triangle_and_reports_zero_blocks(device):
    a = np.tril(np.random.default_rng(4).standard_normal((4, 4))) + np.triu(np.full((4, 4), np.nan), 1)
    check(lambda L, a: LA(L).ldl_factor(a), a, device=device, backward=False)
    singular = np.stack([np.eye(3), np.zeros((3, 3)), np.diag([1., 0., 0.])])
    check(lambda L, a: LA(L).ldl_factor_ex(a), singular, device=device, backward=False)
    check(lambda L, a: LA(L).ldl_factor(a[:0]), singular, device=device, backward=False)
    for fn, phrase in ((lambda L, a: LA(L).ldl_factor(a), "torch.linalg.ldl_factor: Unknown error code: 2."),
                       (lambda L, a: LA(L).ldl_factor_ex(a, check_errors=True),
                        "torch.linalg.ldl_factor_ex: Unknown error code: 1.")):
        check_error(fn, singular[1:] if "_ex" in phrase else singular[2], device=device, phrase=phrase)


def test_ldl_solve_matches_torch(device):
    rng = np.random.default_rng(5)
    for a, b in ((rng.standard_normal((5, 5)), rng.standard_normal((5, 2))),
                 (rng.standard_normal((2, 4, 4)), rng.standard_normal((4, 3))),
                 (rng.standard_normal((4, 4)), rng.standard_normal((2, 4, 3))),
                 (np.array([[0., 1., 2.], [1., 0., 3.], [2., 3., 0.]]), rng.standard_normal((3, 1)))):
        check(lambda L, a, b: LA(L).ldl_solve(*LA(L).ldl_factor(sym(L, a)), b), a, b, device=device, backward=False)
        check(lambda L, a, b: LA(L).ldl_solve(*LA(L).ldl_factor(sym(L, a)), b, hermitian=True), a, b,
              device=device, backward=False)
    # int64 pivots are taken, and the solution solves the system
    a = rng.standard_normal((4, 4))

    def solved(L, a, b):
        LD, pivots = LA(L).ldl_factor(sym(L, a))
        return sym(L, a) @ LA(L).ldl_solve(LD, pivots.long(), b)

    check(solved, a, (4, 2), dtypes=(np.float64,), device=device, backward=False)


def test_ldl_functions_have_no_derivative(device):
    check_error(lambda L, a: LA(L).ldl_factor(sym(L, a)).LD.sum().backward(), (3, 3), device=device,
                requires_grad=True, phrase="derivative for aten::linalg_ldl_factor_ex is not implemented")
    check_error(lambda L, a, b: LA(L).ldl_solve(*LA(L).ldl_factor(sym(L, a.detach())), b).sum().backward(),
                (3, 3), (3, 2), device=device, requires_grad=True,
                phrase="derivative for aten::linalg_ldl_solve is not implemented")


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1])
def test_cond_of_singular_zero_and_empty_matrices(p, device):
    check(lambda L, a: (LA(L).cond(a[0], p), LA(L).cond(a[:, :0, :0], p), LA(L).cond(a[:0], p)),
          np.stack([np.zeros((2, 2)), np.diag([1., 0.])]), device=device, backward=False)
    check(lambda L, a: LA(L).cond(a, p), np.diag([1., 0.]), device=device, backward=False)
    check(lambda L, a: (LA(L).cond(a), LA(L).cond(a, 1)), (2, 0), device=device, backward=False)


@pytest.mark.parametrize("p", ["fro", math.inf, -math.inf, 1, -1])
def test_cond_through_the_inverse(p, device):
    # torch writes the inverse it saved for its gradient in place: its backward raises, and so does ours
    check(lambda L, a: LA(L).cond(a, p), (2, 3, 3), device=device, backward=False)
    check_error(lambda L, a: LA(L).cond(a, p).sum().backward(), (3, 3), device=device, requires_grad=True,
                phrase="modified by an inplace operation")
    check(lambda L, a: LA(L).cond(a.detach(), p), (3, 3), device=device, backward=False)


def test_matrix_sqrth_takes_negative_eigenvalues_as_zero(device):
    check(lambda L, a: LA(L).matrix_sqrth(a), np.array([[1., 2.], [2., 1.]]), device=device, backward=False)
    check(lambda L, a: LA(L).matrix_sqrth(a[:0, :0]), (2, 2), device=device, backward=False)
    x = LA(rustgrad).matrix_sqrth(rustgrad.tensor([[5., 4.], [4., 5.]], device=device))
    assert np.allclose((x @ x).cpu().numpy(), [[5., 4.], [4., 5.]])


def test_polar_factors(device):
    a = rustgrad.tensor(np.random.default_rng(6).standard_normal((2, 5, 3)), device=device)
    U, H = LA(rustgrad).polar(a)
    assert np.allclose((U @ H).cpu().numpy(), a.cpu().numpy())
    assert np.allclose((U.mT @ U).cpu().numpy(), np.eye(3))
    assert np.allclose(H.cpu().numpy(), H.mT.cpu().numpy()) and bool((LA(rustgrad).eigvalsh(H) > 0).all())


def test_tensorinv_of_a_singular_matrix_raises_torchs_linalg_error(device):
    messages = []
    for lib, cls in ((torch, torch.linalg.LinAlgError), (rustgrad, rustgrad.linalg.LinAlgError)):
        kw = {"device": device} if lib is rustgrad else {}
        with pytest.raises(cls) as info:
            lib.linalg.tensorinv(lib.zeros(2, 2, 4, **kw))
        messages.append(str(info.value))
        with pytest.raises(cls) as info:
            lib.linalg.tensorsolve(lib.zeros(2, 2, **kw), lib.ones(2, **kw))
        messages.append(str(info.value))
    assert messages[:2] == messages[2:]
    assert messages[0] == ("inv: The diagonal element 1 is zero, the inversion could not be completed because the "
                           "input matrix is singular.")


# ---- errors ------------------------------------------------------------------------------------
ERRORS = {
    # solve_triangular
    "st_A_1d": (lambda L, a, b: LA(L).solve_triangular(a[0], b, upper=True), (3, 3), (3, 2)),
    "st_B_1d": (lambda L, a, b: LA(L).solve_triangular(a, b[:, 0], upper=True), (3, 3), (3, 2)),
    "st_not_square": (lambda L, a, b: LA(L).solve_triangular(a[:2], b, upper=True), (3, 3), (3, 2)),
    "st_sizes": (lambda L, a, b: LA(L).solve_triangular(a, b[:2], upper=True), (3, 3), (3, 2)),
    "st_sizes_right": (lambda L, a, b: LA(L).solve_triangular(a, b, upper=True, left=False), (3, 3), (3, 2)),
    "st_sizes_before_batches": (lambda L, a, b: LA(L).solve_triangular(a, b, upper=True), (2, 3, 3), (4, 4, 3)),
    "st_batches": (lambda L, a, b: LA(L).solve_triangular(a, b, upper=True), (2, 3, 3), (3, 3, 2)),
    "st_int": (lambda L, a, b: LA(L).solve_triangular(a.long(), b, upper=True), (3, 3), (3, 2)),
    "st_bool": (lambda L, a, b: LA(L).solve_triangular(a.bool(), b, upper=True), (3, 3), (3, 2)),
    "st_half": (lambda L, a, b: LA(L).solve_triangular(a.half(), b.half(), upper=True), (3, 3), (3, 2)),
    "st_upper_required": (lambda L, a, b: LA(L).solve_triangular(a, b), (3, 3), (3, 2)),
    "st_upper_keyword_only": (lambda L, a, b: LA(L).solve_triangular(a, b, True), (3, 3), (3, 2)),
    # lu_factor, lu
    "luf_1d": (lambda L, a: LA(L).lu_factor(a[0]), (3, 3)),
    "luf_ex_1d": (lambda L, a: LA(L).lu_factor_ex(a[0]), (3, 3)),
    "luf_int": (lambda L, a: LA(L).lu_factor(a.long()), (3, 3)),
    "luf_half": (lambda L, a: LA(L).lu_factor(a.half()), (3, 3)),
    "lu_1d": (lambda L, a: LA(L).lu(a[0]), (3, 3)),
    "lu_int": (lambda L, a: LA(L).lu(a.int()), (3, 3)),
    "lu_half": (lambda L, a: LA(L).lu(a.half()), (3, 3)),
    "luf_no_pivots_cpu": (lambda L, a: LA(L).lu_factor(a, pivot=False), (3, 3)),
    "luf_ex_no_pivots_cpu": (lambda L, a: LA(L).lu_factor_ex(a, pivot=False), (3, 3)),
    "lu_no_pivots_cpu": (lambda L, a: LA(L).lu(a, pivot=False), (3, 3)),
    # lu_solve
    "lus_B_1d": (lambda L, a, b: LA(L).lu_solve(*LA(L).lu_factor(a), b[:, 0]), (3, 3), (3, 2)),
    "lus_sizes": (lambda L, a, b: LA(L).lu_solve(*LA(L).lu_factor(a), b[:2]), (3, 3), (3, 2)),
    "lus_sizes_right": (lambda L, a, b: LA(L).lu_solve(*LA(L).lu_factor(a), b, left=False), (3, 3), (3, 2)),
    "lus_sizes_right_adjoint": (lambda L, a, b: LA(L).lu_solve(*LA(L).lu_factor(a), b, left=False, adjoint=True),
                                (3, 3), (3, 2)),
    "lus_pivots_long": (lambda L, a, b: LA(L).lu_solve(LA(L).lu_factor(a)[0], LA(L).lu_factor(a)[1].long(), b),
                        (3, 3), (3, 2)),
    "lus_pivots_count": (lambda L, a, b: LA(L).lu_solve(LA(L).lu_factor(a)[0], LA(L).lu_factor(a)[1][:2], b),
                         (3, 3), (3, 2)),
    "lus_pivots_batch": (lambda L, a, b: LA(L).lu_solve(LA(L).lu_factor(a)[0].expand(2, 3, 3),
                                                        LA(L).lu_factor(a)[1], b), (3, 3), (3, 2)),
    "lus_not_square": (lambda L, a, b: LA(L).lu_solve(LA(L).lu_factor(a)[0][:2], LA(L).lu_factor(a)[1], b),
                       (3, 3), (3, 2)),
    "lus_dtypes": (lambda L, a, b: LA(L).lu_solve(*LA(L).lu_factor(a), b.float()), (3, 3), (3, 2)),
    "lus_int": (lambda L, a, b: LA(L).lu_solve(a.long(), LA(L).lu_factor(a)[1], b.long()), (3, 3), (3, 2)),
    "lus_batches": (lambda L, a, b: LA(L).lu_solve(*LA(L).lu_factor(a), b), (2, 3, 3), (3, 3, 2)),
    "lus_pivot_too_large": (lambda L, a, b: LA(L).lu_solve(LA(L).lu_factor(a)[0], LA(L).lu_factor(a)[1] + 5, b),
                            (3, 3), (3, 2)),
    "lus_pivot_too_small": (lambda L, a, b: LA(L).lu_solve(LA(L).lu_factor(a)[0], LA(L).lu_factor(a)[1] * 0, b),
                            (3, 3), (3, 2)),
    # householder_product
    "hp_1d": (lambda L, a, t: LA(L).householder_product(a[0], t), (4, 3), (3,)),
    "hp_wide": (lambda L, a, t: LA(L).householder_product(a.t(), t), (4, 3), (3,)),
    "hp_tau_long": (lambda L, a, t: LA(L).householder_product(a[:, :2], t), (4, 3), (3,)),
    "hp_tau_dtype": (lambda L, a, t: LA(L).householder_product(a, t.float()), (4, 3), (3,)),
    "hp_int": (lambda L, a, t: LA(L).householder_product(a.int(), t.int()), (4, 3), (3,)),
    # vander, matmul, diagonal
    "vander_bool": (lambda L, x: LA(L).vander(x > 0), (3,)),
    "vander_half": (lambda L, x: LA(L).vander(x.half()), (3,)),
    "vander_N_1": (lambda L, x: LA(L).vander(x, N=1), (3,)),
    "vander_one_entry": (lambda L, x: LA(L).vander(x[:1]), (3,)),
    "vander_N_positional": (lambda L, x: LA(L).vander(x, 2), (3,)),
    "matmul_number": (lambda L, a: LA(L).matmul(a, 2), (3,)),
    "matmul_number_first": (lambda L, a: LA(L).matmul(2, a), (3,)),
    "matmul_sizes": (lambda L, a, b: LA(L).matmul(a, b), (2, 3), (4, 5)),
    "matmul_0d": (lambda L, a, b: LA(L).matmul(a[0], b), (3,), (3,)),
    "diagonal_1d": (lambda L, a: LA(L).diagonal(a), (3,)),
    "diagonal_same_dims": (lambda L, a: LA(L).diagonal(a, dim1=0, dim2=0), (3, 3)),
    "diagonal_positional": (lambda L, a: LA(L).diagonal(a, 1), (3, 3)),
    # tensorinv, tensorsolve
    "tinv_ind_0": (lambda L, a: LA(L).tensorinv(a, ind=0), (2, 3, 6)),
    "tinv_ind_negative": (lambda L, a: LA(L).tensorinv(a, -1), (2, 2)),
    "tinv_shapes": (lambda L, a: LA(L).tensorinv(a, ind=1), (2, 3, 6)),
    "tinv_too_many_dims": (lambda L, a: LA(L).tensorinv(a, ind=3), (2, 3, 6)),
    "tinv_int": (lambda L, a: LA(L).tensorinv(a.int(), ind=1), (4, 4)),
    "tinv_half": (lambda L, a: LA(L).tensorinv(a.half(), ind=1), (4, 4)),
    "tsolve_shapes": (lambda L, a, b: LA(L).tensorsolve(a, b[0]), (2, 3, 6), (2, 3)),
    "tsolve_reshape": (lambda L, a, b: LA(L).tensorsolve(a, b.reshape(6)), (4, 2, 3), (2, 3)),
    "tsolve_dtypes": (lambda L, a, b: LA(L).tensorsolve(a, b.float()), (2, 3, 6), (2, 3)),
    "tsolve_int": (lambda L, a, b: LA(L).tensorsolve(a.int(), b.int()), (2, 3, 6), (2, 3)),
    "tsolve_dims_range": (lambda L, a, b: LA(L).tensorsolve(a, b, dims=(0, 5)), (2, 3, 6), (2, 3)),
    "tsolve_dims_repeated": (lambda L, a, b: LA(L).tensorsolve(a, b[0, :2], dims=(0, 0)), (2, 3, 6), (2, 3)),
    # cond
    "cond_1d": (lambda L, a: LA(L).cond(a), (3,)),
    "cond_1d_invalid_order": (lambda L, a: LA(L).cond(a, 3), (3,)),
    "cond_1d_fro": (lambda L, a: LA(L).cond(a, "fro"), (3,)),
    "cond_invalid_order": (lambda L, a: LA(L).cond(a, 3), (2, 3)),
    "cond_invalid_float_order": (lambda L, a: LA(L).cond(a, 3.0), (3, 3)),
    "cond_invalid_fraction": (lambda L, a: LA(L).cond(a, 2.5), (3, 3)),
    "cond_invalid_nan": (lambda L, a: LA(L).cond(a, math.nan), (3, 3)),
    "cond_invalid_str": (lambda L, a: LA(L).cond(a, "abc"), (3, 3)),
    "cond_invalid_str_not_square": (lambda L, a: LA(L).cond(a, "abc"), (2, 3)),
    "cond_not_square_fro": (lambda L, a: LA(L).cond(a, "fro"), (2, 3)),
    "cond_not_square_nuc": (lambda L, a: LA(L).cond(a, "nuc"), (2, 3)),
    "cond_not_square_1": (lambda L, a: LA(L).cond(a, 1), (2, 3)),
    "cond_not_square_minus_1_float": (lambda L, a: LA(L).cond(a, -1.0), (2, 3)),
    "cond_not_square_inf": (lambda L, a: LA(L).cond(a, -math.inf), (2, 3)),
    "cond_empty_not_square_fro": (lambda L, a: LA(L).cond(a[:, :0], "fro"), (2, 3)),
    "cond_int": (lambda L, a: LA(L).cond(a.int()), (3, 3)),
    "cond_int_fro": (lambda L, a: LA(L).cond(a.int(), "fro"), (3, 3)),
    "cond_int_nuc": (lambda L, a: LA(L).cond(a.int(), "nuc"), (3, 3)),
    "cond_half_inf": (lambda L, a: LA(L).cond(a.half(), math.inf), (3, 3)),
    # ldl_factor, ldl_solve
    "ldl_1d": (lambda L, a: LA(L).ldl_factor(a[0]), (3, 3)),
    "ldl_not_square": (lambda L, a: LA(L).ldl_factor(a[:2]), (3, 3)),
    "ldl_ex_not_square": (lambda L, a: LA(L).ldl_factor_ex(a[:2], check_errors=True), (3, 3)),
    "ldl_int": (lambda L, a: LA(L).ldl_factor(a.long()), (3, 3)),
    "ldl_half": (lambda L, a: LA(L).ldl_factor(a.half()), (3, 3)),
    "ldls_LD_1d": (lambda L, a, b: LA(L).ldl_solve(a[0], LA(L).ldl_factor(sym(L, a))[1], b), (3, 3), (3, 2)),
    "ldls_not_square": (lambda L, a, b: LA(L).ldl_solve(a[:2], LA(L).ldl_factor(sym(L, a))[1], b), (3, 3), (3, 2)),
    "ldls_B_1d": (lambda L, a, b: LA(L).ldl_solve(*LA(L).ldl_factor(sym(L, a)), b[:, 0]), (3, 3), (3, 2)),
    "ldls_int": (lambda L, a, b: LA(L).ldl_solve(a.long(), LA(L).ldl_factor(sym(L, a))[1], b.long()), (3, 3),
                 (3, 2)),
    "ldls_pivots_shape": (lambda L, a, b: LA(L).ldl_solve(LA(L).ldl_factor(sym(L, a))[0],
                                                          LA(L).ldl_factor(sym(L, a))[1][:2], b), (3, 3), (3, 2)),
    "ldls_pivots_float": (lambda L, a, b: LA(L).ldl_solve(LA(L).ldl_factor(sym(L, a))[0],
                                                          LA(L).ldl_factor(sym(L, a))[1].float(), b), (3, 3), (3, 2)),
    "ldls_dtypes": (lambda L, a, b: LA(L).ldl_solve(*LA(L).ldl_factor(sym(L, a)), b.float()), (3, 3), (3, 2)),
    "ldls_sizes": (lambda L, a, b: LA(L).ldl_solve(*LA(L).ldl_factor(sym(L, a)), b[:2]), (3, 3), (3, 2)),
    "ldls_batches": (lambda L, a, b: LA(L).ldl_solve(*LA(L).ldl_factor(sym(L, a)), b), (3, 3, 3), (2, 3, 2)),
    "ldls_half": (lambda L, a, b: LA(L).ldl_solve(a.half(), LA(L).ldl_factor(sym(L, a))[1], b.half()), (3, 3),
                  (3, 2)),
    "ldls_pivot_too_large": (lambda L, a, b: LA(L).ldl_solve(LA(L).ldl_factor(sym(L, a))[0],
                                                             LA(L).ldl_factor(sym(L, a))[1] + 10, b), (3, 3), (3, 2)),
    "ldls_pivot_zero": (lambda L, a, b: LA(L).ldl_solve(LA(L).ldl_factor(sym(L, a))[0],
                                                        LA(L).ldl_factor(sym(L, a))[1] * 0, b), (3, 3), (3, 2)),
    # matrix_sqrth, polar
    "sqrth_1d": (lambda L, a: LA(L).matrix_sqrth(a[0]), (3, 3)),
    "sqrth_not_square": (lambda L, a: LA(L).matrix_sqrth(a[:2]), (3, 3)),
    "sqrth_int": (lambda L, a: LA(L).matrix_sqrth(a.int()), (3, 3)),
    "sqrth_half": (lambda L, a: LA(L).matrix_sqrth(a.half()), (3, 3)),
    "polar_1d": (lambda L, a: LA(L).polar(a[0]), (3, 3)),
    "polar_wide": (lambda L, a: LA(L).polar(a), (3, 4)),
    "polar_empty_wide": (lambda L, a: LA(L).polar(a[:0]), (3, 4)),
    "polar_int": (lambda L, a: LA(L).polar(a.int()), (3, 3)),
    "polar_half": (lambda L, a: LA(L).polar(a.half()), (4, 3)),
}
# a dtype a kernel has no loop for: torch names the kernel with its device ("lu_cpu")
_KERNEL_ERRORS = {"st_int", "st_bool", "st_half", "luf_int", "luf_half", "lu_int", "lu_half", "hp_int", "ldl_half",
                  "ldls_half", "polar_half"}
_CPU_ONLY = {"luf_no_pivots_cpu", "luf_ex_no_pivots_cpu", "lu_no_pivots_cpu"}
# Python's message for a missing or surplus argument is not the one torch's parser writes
_PHRASES = {"st_upper_required": "missing 1 required", "st_upper_keyword_only": "positional arguments but 3 were given",
}


@pytest.mark.parametrize("case", sorted(set(ERRORS) - _CPU_ONLY))
def test_linalg_errors_match_torch(case, device):
    _check_linalg_error(case, device)


@pytest.mark.parametrize("case", sorted(_CPU_ONLY))  # torch factors without pivoting on CUDA
def test_cpu_only_linalg_errors_match_torch(case):
    _check_linalg_error(case, "cpu")


def _check_linalg_error(case, device):
    fn, *specs = ERRORS[case]
    phrase = _PHRASES.get(case, "not implemented for" if case in _KERNEL_ERRORS else None)
    check_error(fn, *specs, device=device, phrase=phrase)


# ---- saved attributes, named tuples, names -------------------------------------------------------
def test_saved_attributes_are_torchs():
    def saved(lib):
        a = lib.tensor(np.arange(9.0).reshape(3, 3) + 4 * np.eye(3), requires_grad=True)
        b = lib.ones(3, 2, dtype=lib.float64, requires_grad=True)
        out = []
        n = lib.linalg.solve_triangular(a, b, upper=False, left=True, unitriangular=True).grad_fn
        out.append((n.name(), n._saved_upper, n._saved_left, n._saved_unitriangular, n._saved_self is a,
                    n._saved_result.shape))
        LU, piv = lib.linalg.lu_factor(a)
        n = LU.grad_fn
        out.append((n.name(), n._saved_pivot, n._saved_pivots.tolist(), n._saved_LU.shape))
        P, L, U = lib.linalg.lu(a)
        n = L.grad_fn
        out.append((n.name(), n is U.grad_fn, P.grad_fn, n._saved_pivot, n._saved_P.tolist(),
                    n._saved_L.tolist() == L.tolist(), n._saved_U.shape))
        n = lib.linalg.lu_solve(LU, piv, b.mT, left=False, adjoint=True).grad_fn
        out.append((n.name(), n._saved_left, n._saved_adjoint, n._saved_pivots.tolist(), n._saved_result.shape))
        n = lib.linalg.matrix_sqrth(a @ a.mT).grad_fn
        out.append((n.name(), n._saved_self.shape))
        U, H = lib.linalg.polar(a)
        n = U.grad_fn
        out.append((n.name(), n is H.grad_fn, n._saved_A is a, n._saved_U.shape, n._saved_H.shape))
        tau = lib.ones(3, dtype=lib.float64, requires_grad=True)
        n = lib.linalg.householder_product(a, tau).grad_fn
        out.append((n.name(), n._saved_input is a, n._saved_tau is tau))
        out.append(lib.linalg.ldl_factor(a + a.mT).LD.grad_fn.name())
        return out

    assert saved(rustgrad) == saved(torch)


@pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated:UserWarning")
def test_named_tuples_are_torchs():
    a = rustgrad.tensor([[2., 1.], [1., 3.]])
    results = {
        "linalg_lu_factor": rustgrad.linalg.lu_factor(a),
        "linalg_lu_factor_ex": rustgrad.linalg.lu_factor_ex(a),
        "linalg_lu": rustgrad.linalg.lu(a),
        "linalg_ldl_factor": rustgrad.linalg.ldl_factor(a),
        "linalg_ldl_factor_ex": rustgrad.linalg.ldl_factor_ex(a),
        "linalg_polar": rustgrad.linalg.polar(a),
        "triangular_solve": rustgrad.triangular_solve(a, a),
        "geqrf": rustgrad.geqrf(a),
        "lu_unpack": rustgrad.lu_unpack(*rustgrad.linalg.lu_factor(a)),
    }
    for name, result in results.items():
        cls = getattr(rustgrad.return_types, name)
        assert type(result) is cls and name in rustgrad.return_types.__all__
        fields = getattr(torch.return_types, name).__match_args__
        assert result._fields == fields
        assert repr(result).startswith(f"torch.return_types.{name}(\n{fields[0]}=tensor(")
    assert rustgrad.return_types._lu_with_info._fields == torch.return_types._lu_with_info.__match_args__


def test_householder_product_is_orgqr():
    assert rustgrad.linalg.householder_product is rustgrad.orgqr


def test_autocast_on_cpu_runs_these_in_float32_as_torch():
    def run(lib):
        a = lib.tensor(np.eye(4) * 2 + 0.1, dtype=lib.bfloat16)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            return [str(t.dtype) for t in (lib.linalg.tensorinv(a, ind=1),
                                           lib.linalg.householder_product(a, a[:, 0]), lib.linalg.cond(a),
                                           lib.linalg.tensorsolve(a, a[0]), lib.linalg.matmul(a.float(), a.float()))]

    assert run(rustgrad) == run(torch)
