"""torch.linalg against torch: det, slogdet, logdet, inv, solve, cholesky, qr, svd, svdvals, eigh,
eigvalsh, lstsq, pinv, matrix_rank, matrix_power, matrix_exp, the norms, cross, vecdot, multi_dot,
and the Tensor methods / torch.* functions of them: values, gradients (batched and broadcast),
grad_fn names, errors, gradcheck and double backward.

Singular and eigen vectors are defined up to sign, and NumPy's LAPACK may pick other signs than
torch's: programs compare them through sign-free quantities (|U|, u_i v_i^T), whose gradients are
sign-free too."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check, check_double_backward, check_error, grad_ok


def spd(lib, x):
    """A symmetric positive-definite matrix (batch) made from any square x."""
    n = x.shape[-1]
    return x @ x.mT + n * lib.eye(n, dtype=x.dtype)


def rank_one_terms(U, Vh):
    """u_i v_i^T for each singular triple: free of the vectors' signs."""
    k = min(U.shape[-1], Vh.shape[-2])
    return U[..., :, :k].unsqueeze(-1) * Vh[..., :k, :].unsqueeze(-3)


CASES = {
    # det, slogdet, logdet
    "det": (lambda lib, a: lib.linalg.det(a), (3, 3)),
    "det_batched": (lambda lib, a: lib.linalg.det(a), (2, 4, 4)),
    "det_1x1": (lambda lib, a: lib.linalg.det(a), (1, 1)),
    "det_method_function": (lambda lib, a: (a.det(), lib.det(a)), (2, 3, 3)),
    "slogdet": (lambda lib, a: lib.linalg.slogdet(a), (2, 3, 3)),
    "slogdet_method": (lambda lib, a: a.slogdet(), (3, 3)),
    "logdet": (lambda lib, a: lib.logdet(spd(lib, a)), (2, 3, 3)),
    "logdet_negative_is_nan": (lambda lib, a: a.logdet(), np.array([[0., 1.], [1., 0.]])),
    # inv, inverse
    "inv": (lambda lib, a: lib.linalg.inv(a), (3, 3)),
    "inv_batched": (lambda lib, a: lib.linalg.inv(spd(lib, a)), (2, 3, 3)),
    "inverse_method_function": (lambda lib, a: (a.inverse(), lib.inverse(a)), (4, 4)),
    "inv_ex": (lambda lib, a: lib.linalg.inv_ex(spd(lib, a)), (2, 3, 3)),
    # solve
    "solve_vector": (lambda lib, a, b: lib.linalg.solve(spd(lib, a), b), (3, 3), (3,)),
    "solve_matrix": (lambda lib, a, b: lib.linalg.solve(spd(lib, a), b), (3, 3), (3, 2)),
    "solve_batched_vector": (lambda lib, a, b: lib.linalg.solve(spd(lib, a), b), (2, 3, 3), (2, 3)),
    "solve_broadcast_vector": (lambda lib, a, b: lib.linalg.solve(spd(lib, a), b), (2, 3, 3), (3,)),
    "solve_broadcast_batch": (lambda lib, a, b: lib.linalg.solve(spd(lib, a), b), (3, 3), (2, 3, 2)),
    "solve_broadcast_both": (lambda lib, a, b: lib.linalg.solve(spd(lib, a), b), (2, 1, 3, 3),
                             (4, 3, 1)),
    "solve_left_false": (lambda lib, a, b: lib.linalg.solve(spd(lib, a), b, left=False), (3, 3),
                         (2, 3)),
    "solve_ex": (lambda lib, a, b: lib.linalg.solve_ex(spd(lib, a), b), (2, 3, 3), (3, 2)),
    # cholesky
    "cholesky": (lambda lib, a: lib.linalg.cholesky(spd(lib, a)), (3, 3)),
    "cholesky_batched": (lambda lib, a: lib.linalg.cholesky(spd(lib, a)), (2, 4, 4)),
    "cholesky_upper": (lambda lib, a: lib.linalg.cholesky(spd(lib, a), upper=True), (3, 3)),
    "cholesky_reads_lower_triangle": (lambda lib, a: lib.linalg.cholesky(spd(lib, a).tril() + a.triu(1)),
                                      (3, 3)),
    "cholesky_ex": (lambda lib, a: lib.linalg.cholesky_ex(spd(lib, a)), (2, 3, 3)),
    # qr (Householder: the same signs in every LAPACK)
    "qr_tall": (lambda lib, a: lib.linalg.qr(a), (4, 3)),
    "qr_square": (lambda lib, a: lib.linalg.qr(a), (3, 3)),
    "qr_wide": (lambda lib, a: lib.linalg.qr(a), (2, 4)),
    "qr_batched": (lambda lib, a: lib.linalg.qr(a), (2, 4, 3)),
    "qr_complete_wide": (lambda lib, a: lib.linalg.qr(a, mode="complete"), (3, 4)),
    "qr_only_R_used": (lambda lib, a: lib.linalg.qr(a).R, (4, 3)),
    "qr_only_Q_used": (lambda lib, a: lib.linalg.qr(a).Q, (3, 5)),
    # svd, svdvals, torch.svd
    "svdvals": (lambda lib, a: lib.linalg.svdvals(a), (4, 3)),
    "svdvals_batched_wide": (lambda lib, a: lib.linalg.svdvals(a), (2, 3, 5)),
    "svd_reduced": (lambda lib, a: (lambda r: (r.U.abs(), r.S, r.Vh.abs()))(
        lib.linalg.svd(a, full_matrices=False)), (4, 3)),
    "svd_terms_tall": (lambda lib, a: (lambda r: rank_one_terms(r.U, r.Vh))(
        lib.linalg.svd(a, full_matrices=False)), (4, 3)),
    "svd_terms_wide_batched": (lambda lib, a: (lambda r: rank_one_terms(r.U, r.Vh))(
        lib.linalg.svd(a, full_matrices=False)), (2, 3, 5)),
    "svd_full_matrices": (lambda lib, a: (lambda r: (rank_one_terms(r.U, r.Vh), r.S))(
        lib.linalg.svd(a)), (5, 3)),
    "svd_rebuilt": (lambda lib, a: (lambda r: (r.U * r.S.unsqueeze(-2)) @ r.Vh)(
        lib.linalg.svd(a, full_matrices=False)), (3, 4)),
    "torch_svd": (lambda lib, a: (lambda r: (r.U.abs(), r.S, r.V.abs()))(lib.svd(a)), (4, 3)),
    "torch_svd_method_not_some": (lambda lib, a: (lambda r: (r.S, r.V.abs()))(a.svd(some=False)), (3, 3)),
    "torch_svd_no_uv": (lambda lib, a: tuple(lib.svd(a, compute_uv=False)), (4, 3)),
    # eigh, eigvalsh
    "eigh": (lambda lib, a: (lambda r: (r.eigenvalues, r.eigenvectors.abs()))(
        lib.linalg.eigh(a + a.mT)), (4, 4)),
    "eigh_batched": (lambda lib, a: (lambda r: (r.eigenvalues, r.eigenvectors.abs()))(
        lib.linalg.eigh(a + a.mT)), (2, 3, 3)),
    "eigh_upper_of_nonsymmetric": (lambda lib, a: lib.linalg.eigh(a, UPLO="U").eigenvalues, (3, 3)),
    "eigh_lower_of_nonsymmetric": (lambda lib, a: lib.linalg.eigh(a).eigenvalues, (3, 3)),
    "eigh_projector": (lambda lib, a: (lambda r: r.eigenvectors[..., :1] @ r.eigenvectors[..., :1].mT)(
        lib.linalg.eigh(a + a.mT)), (3, 3)),
    "eigvalsh": (lambda lib, a: lib.linalg.eigvalsh(a + a.mT), (2, 4, 4)),
    # lstsq ('gels' and 'gelsd': the drivers both sides take on this device)
    "lstsq_gels": (lambda lib, a, b: lib.linalg.lstsq(a, b, driver="gels"), (5, 3), (5, 2)),
    "lstsq_gels_vector_batched": (lambda lib, a, b: lib.linalg.lstsq(a, b, driver="gels"), (2, 5, 3),
                                  (2, 5)),
    "lstsq_gels_wide": (lambda lib, a, b: lib.linalg.lstsq(a, b, driver="gels").solution, (3, 5),
                        (3, 2)),
    "lstsq_gels_broadcast": (lambda lib, a, b: lib.linalg.lstsq(a, b, driver="gels"), (2, 1, 5, 3),
                             (1, 3, 5, 2)),
    # pinv, pinverse
    "pinv_tall": (lambda lib, a: lib.linalg.pinv(a), (4, 3)),
    "pinv_wide_batched": (lambda lib, a: lib.linalg.pinv(a), (2, 3, 5)),
    "pinv_hermitian": (lambda lib, a: lib.linalg.pinv(spd(lib, a), hermitian=True), (3, 3)),
    "pinv_atol_drops_values": (lambda lib, a: lib.linalg.pinv(a, atol=1.0), (4, 3)),
    "pinverse_method_function": (lambda lib, a: (a.pinverse(), lib.pinverse(a, rcond=0.1)), (3, 4)),
    # matrix_power, matrix_exp
    **{f"matrix_power_{n}": (lambda lib, a, n=n: lib.linalg.matrix_power(spd(lib, a) / 4, n), (2, 3, 3))
       for n in (-3, -2, -1, 0, 1, 2, 3, 5, 6)},
    "matrix_power_2d_method_function": (lambda lib, a: (a.matrix_power(4), lib.matrix_power(a, 0)), (3, 3)),
    "matrix_exp": (lambda lib, a: lib.linalg.matrix_exp(a), (3, 3)),
    "matrix_exp_batched_method": (lambda lib, a: (a.matrix_exp(), lib.matrix_exp(a)), (2, 3, 3)),
    "matrix_exp_large_norm": (lambda lib, a: lib.linalg.matrix_exp(3 * a), (4, 4)),
    # norms
    "vector_norm": (lambda lib, a: (lib.linalg.vector_norm(a), lib.linalg.vector_norm(a, 1, dim=1),
                                    lib.linalg.vector_norm(a, math.inf, dim=(0, 1), keepdim=True),
                                    lib.linalg.vector_norm(a, 3.5, dim=-1)), (3, 4)),
    **{f"matrix_norm_{o}": (lambda lib, a, o=o: (lib.linalg.matrix_norm(a, o),
                                                  lib.linalg.matrix_norm(a, o, keepdim=True),
                                                  lib.linalg.matrix_norm(a, o, dim=(2, 0))), (3, 4, 5))
       for o in ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf)},
    "matrix_norm_dtype": (lambda lib, a: lib.linalg.matrix_norm(a.float(), "nuc", dtype=lib.float64), (3, 3)),
    "norm_default_flattens": (lambda lib, a: lib.linalg.norm(a), (2, 3, 4)),
    "norm_vector_and_matrix": (lambda lib, a: (lib.linalg.norm(a[0], 3), lib.linalg.norm(a, "nuc"),
                                               lib.linalg.norm(a, -1), lib.linalg.norm(a, 2, dim=0),
                                               lib.linalg.norm(a, math.inf, dim=(1, 0)),
                                               lib.linalg.norm(a, dim=(0, 1), keepdim=True)), (3, 4)),
    # cross, vecdot, multi_dot
    "cross": (lambda lib, a, b: lib.linalg.cross(a, b), (4, 3), (4, 3)),
    "cross_broadcast": (lambda lib, a, b: lib.linalg.cross(a, b), (1, 3), (4, 3)),
    "cross_dim0": (lambda lib, a, b: lib.linalg.cross(a, b, dim=0), (3, 2), (3, 2)),
    "cross_method_function": (lambda lib, a, b: (a.cross(b, dim=1), lib.cross(a, b, dim=-1)), (2, 3),
                              (2, 3)),
    "vecdot": (lambda lib, a, b: lib.linalg.vecdot(a, b), (2, 3), (3,)),
    "vecdot_dim": (lambda lib, a, b: lib.linalg.vecdot(a, b, dim=0), (3, 2), (3, 1)),
    "multi_dot_two": (lambda lib, a, b: lib.linalg.multi_dot([a, b]), (2, 3), (3, 4)),
    "multi_dot_vectors": (lambda lib, a, b: lib.linalg.multi_dot([a, b]), (3,), (3,)),
    "multi_dot_three": (lambda lib, a, b, c: lib.linalg.multi_dot([a, b, c]), (5, 2), (2, 6), (6, 3)),
    "multi_dot_three_other_order": (lambda lib, a, b, c: lib.linalg.multi_dot([a, b, c]), (2, 6),
                                    (6, 2), (2, 6)),
    "multi_dot_chain": (lambda lib, a, b, c, d: lib.linalg.multi_dot((a, b, c, d)), (4,), (4, 6),
                        (6, 2), (2,)),
    "multi_dot_five": (lambda lib, *ts: lib.linalg.multi_dot(ts), (3, 5), (5, 1), (1, 4), (4, 2), (2, 3)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_linalg_matches_torch(case, device):
    fn, *specs = CASES[case]
    check(fn, *specs, device=device)


@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss"])
def test_lstsq_cpu_drivers_match_torch(driver):
    # gelsy (the CPU default: rank, no residuals), gelsd / gelss (singular values, residuals)
    check(lambda lib, a, b: lib.linalg.lstsq(a, b, driver=driver), (2, 6, 3), (2, 6, 2))
    check(lambda lib, a, b: lib.linalg.lstsq(a, b, driver="gelsd"), (5, 3), (5,))
    check(lambda lib, a, b: lib.linalg.lstsq(a, b, 0.5, driver="gelsd"), (5, 3), (5, 2))


@pytest.mark.parametrize("driver", ["gelsy", "gelsd"])
def test_lstsq_rank_deficient_gives_the_minimum_norm_solution(driver):
    a = np.ones((4, 3))
    b = np.arange(8.).reshape(4, 2)
    check(lambda lib, a, b: lib.linalg.lstsq(a, b, driver=driver), a, b, dtypes=(np.float64,))


def test_cuda_lstsq_takes_only_gels_and_defaults_to_it(sim_cuda):
    a = rustgrad.randn(5, 3, device="cuda")
    b = rustgrad.randn(5, 2, device="cuda")
    r = rustgrad.linalg.lstsq(a, b)
    assert tuple(r.residuals.shape) == (2,) and r.rank.numel() == 0  # torch's CUDA gels
    with pytest.raises(RuntimeError, match="`driver` other than `gels` is not supported on CUDA"):
        rustgrad.linalg.lstsq(a, b, driver="gelsd")
    assert rustgrad.linalg.svd(a, driver="gesvdj").S.shape == (3,)


def test_matrix_rank_matches_torch(device):
    x = np.random.default_rng(0).standard_normal((2, 4, 3))
    low = x @ np.diag([1.0, 1.0, 0.0]) @ x.transpose(0, 2, 1)  # 4 x 4 matrices of rank 2
    check(lambda lib, a, b: (lib.linalg.matrix_rank(a), lib.linalg.matrix_rank(b),
                             lib.linalg.matrix_rank(b, hermitian=True),
                             lib.linalg.matrix_rank(a, atol=1.0, rtol=0.0),
                             lib.linalg.matrix_rank(a, 0.5), lib.linalg.matrix_rank(a, rtol=0.4)),
          x, low, dtypes=(np.float64,), device=device)


def test_matrix_power_of_integers_and_float_exponent():
    check(lambda lib, a: lib.linalg.matrix_power(a, 3), np.array([[1, 2], [0, 1]], dtype=np.int64),
          dtypes=(None,))
    for lib in (torch, rustgrad):
        with pytest.raises(TypeError, match="argument 'n' .* must be int, not float"):
            lib.linalg.matrix_power(lib.eye(2), 2.0)


def test_return_types_are_torch_named_tuples():
    a = rustgrad.tensor([[2., 1.], [1., 3.]])
    expected = {
        "linalg_slogdet": (rustgrad.linalg.slogdet(a), ("sign", "logabsdet")),
        "slogdet": (a.slogdet(), ("sign", "logabsdet")),
        "linalg_inv_ex": (rustgrad.linalg.inv_ex(a), ("inverse", "info")),
        "linalg_solve_ex": (rustgrad.linalg.solve_ex(a, a), ("result", "info")),
        "linalg_cholesky_ex": (rustgrad.linalg.cholesky_ex(a), ("L", "info")),
        "linalg_qr": (rustgrad.linalg.qr(a), ("Q", "R")),
        "linalg_svd": (rustgrad.linalg.svd(a), ("U", "S", "Vh")),
        "svd": (rustgrad.svd(a), ("U", "S", "V")),
        "linalg_eigh": (rustgrad.linalg.eigh(a), ("eigenvalues", "eigenvectors")),
        "linalg_lstsq": (rustgrad.linalg.lstsq(a, a), ("solution", "residuals", "rank", "singular_values")),
    }
    for name, (result, fields) in expected.items():
        assert type(result) is getattr(rustgrad.return_types, name)
        assert result._fields == fields
        assert tuple(result) == tuple(getattr(result, f) for f in fields)
        assert repr(result).startswith(f"torch.return_types.{name}(\n{fields[0]}=tensor(")


def test_grad_fn_saved_attributes_are_torchs():
    a = rustgrad.randn(3, 3, dtype=rustgrad.float64, requires_grad=True)
    s = spd(rustgrad, a.detach()).requires_grad_()
    det = rustgrad.linalg.det(a)
    assert det.grad_fn._saved_A is a and bool((det.grad_fn._saved_result == det).all())
    inv = rustgrad.linalg.inv(a)
    assert bool((inv.grad_fn._saved_inverse == inv).all())
    L = rustgrad.linalg.cholesky(s, upper=True)
    assert L.grad_fn._saved_upper is True and bool((L.grad_fn._saved_L == L).all())
    Q, R = rustgrad.linalg.qr(a, mode="complete")
    assert Q.grad_fn is R.grad_fn and Q.grad_fn._saved_mode == "complete"
    U, S, Vh = rustgrad.linalg.svd(a[:, :2])
    node = S.grad_fn
    assert node is U.grad_fn is Vh.grad_fn and node._saved_full_matrices is True
    assert node._saved_S_sym_argsize_minus_1 == 2 and bool((node._saved_Vh == Vh).all())
    assert rustgrad.linalg.svdvals(a).grad_fn._saved_full_matrices is False
    w, v = rustgrad.linalg.eigh(s)
    assert bool((w.grad_fn._saved_eigenvalues == w).all()) and w.grad_fn is v.grad_fn
    x = rustgrad.linalg.solve(a, s, left=False)
    assert x.grad_fn._saved_left is False and x.grad_fn._saved_A is a
    c = rustgrad.linalg.cross(a, s, dim=0)
    assert c.grad_fn._saved_dim == 0 and c.grad_fn._saved_other is s
    sign, logabs = rustgrad.linalg.slogdet(a)
    assert sign.grad_fn is logabs.grad_fn and bool((sign.grad_fn._saved_sign == sign).all())
    r = rustgrad.linalg.lstsq(a, s)
    assert r.solution.grad_fn is r.residuals.grad_fn and r.solution.grad_fn._saved_b is s
    assert r.rank.grad_fn is None and not r.rank.requires_grad
    p = rustgrad.linalg.pinv(a)
    assert p.grad_fn._saved_self is a
    assert rustgrad.linalg.matrix_exp(a).grad_fn._saved_self is a


# ---- errors ----------------------------------------------------------------------------------
SINGULAR = np.array([[1., 2.], [2., 4.]])
SINGULAR_BATCH = np.stack([np.eye(2), SINGULAR])
NOT_PD = np.array([[1., 2.], [2., 1.]])


def _both_raise(fn, *arrays, device="cpu"):
    """fn(lib, *inputs) raises LinAlgError under both libraries; their messages."""
    messages = []
    for lib, cls in ((torch, torch.linalg.LinAlgError), (rustgrad, rustgrad.linalg.LinAlgError)):
        kw = {"device": device} if lib is rustgrad else {}
        ins = [lib.tensor(a, **kw) for a in arrays]
        with pytest.raises(cls) as info:
            fn(lib, *ins)
        messages.append(str(info.value))
    return messages


LINALG_ERRORS = {
    "inv_singular": (lambda lib, a: lib.linalg.inv(a), SINGULAR),
    "inv_singular_batch": (lambda lib, a: lib.linalg.inv(a), SINGULAR_BATCH),
    "inverse_singular": (lambda lib, a: a.inverse(), SINGULAR),
    "matrix_power_negative_singular": (lambda lib, a: lib.linalg.matrix_power(a, -2), SINGULAR),
    "inv_ex_check_errors": (lambda lib, a: lib.linalg.inv_ex(a, check_errors=True), SINGULAR_BATCH),
    "solve_singular": (lambda lib, a: lib.linalg.solve(a, a[0]), SINGULAR),
    "solve_singular_batch": (lambda lib, a: lib.linalg.solve(a, a[..., :1]), SINGULAR_BATCH),
    "cholesky_not_pd": (lambda lib, a: lib.linalg.cholesky(a), NOT_PD),
    "cholesky_not_pd_batch": (lambda lib, a: lib.linalg.cholesky(a), np.stack([np.eye(2), NOT_PD])),
    "cholesky_not_pd_upper": (lambda lib, a: lib.linalg.cholesky(a, upper=True), NOT_PD),
    "cholesky_ex_check_errors": (lambda lib, a: lib.linalg.cholesky_ex(a, check_errors=True), NOT_PD),
}


@pytest.mark.parametrize("case", sorted(LINALG_ERRORS))
def test_singular_and_not_positive_definite_raise_linalg_error(case, device):
    fn, a = LINALG_ERRORS[case]
    t, r = _both_raise(fn, a, device=device)
    assert r == t


def test_non_finite_inputs_give_nan_not_an_error_as_torchs(device):
    a = np.stack([[[np.nan, 1.], [1., 1.]], [[2., 1.], [1., 2.]]])
    check(lambda lib, x: (lib.linalg.inv(x), lib.linalg.solve(x, x[1, 0]), lib.linalg.det(x)), a,
          dtypes=(np.float64,), device=device, backward=False)
    t, r = _both_raise(lambda lib, x: lib.linalg.cholesky(x), a, device=device)  # potrf refuses a NaN pivot
    assert r == t


def test_linalg_error_is_a_runtime_error_as_torchs():
    assert issubclass(rustgrad.linalg.LinAlgError, RuntimeError)
    assert issubclass(torch.linalg.LinAlgError, RuntimeError)
    assert rustgrad.linalg.LinAlgError.__module__ == "rustgrad.linalg"


def test_ex_forms_report_info_without_raising(device):
    a = np.stack([np.eye(2), SINGULAR, np.eye(2)])
    check(lambda lib, x: lib.linalg.inv_ex(x).info, a, dtypes=(np.float64,), device=device)
    check(lambda lib, x: (lib.linalg.inv_ex(x).inverse[0], lib.linalg.inv_ex(x).inverse[2]), a,
          dtypes=(np.float64,), device=device)
    check(lambda lib, x: lib.linalg.solve_ex(x, lib.ones(1, 3, 2, 1, dtype=x.dtype)).info, a,
          dtypes=(np.float64,), device=device)
    check(lambda lib, x: lib.linalg.solve_ex(x[1], x[1, 0]).info, a, dtypes=(np.float64,), device=device)
    # LAPACK's partial factor where the factorization stops, as torch's
    b = np.stack([np.eye(2), NOT_PD, [[-1., 0.], [0., 1.]], [[2., 1.], [1., 3.]]])
    check(lambda lib, x: lib.linalg.cholesky_ex(x), b, dtypes=(np.float64,), device=device)
    c = np.array([[4., 2., 1.], [2., 1., 0.], [1., 0., 3.]])  # stops at order 2 (its gradient: garbage)
    check(lambda lib, x: lib.linalg.cholesky_ex(x, upper=True), c, dtypes=(np.float64,), device=device,
          backward=False)


def test_det_of_singular_matrices_has_torchs_gradient(device):
    # first order: 0 at an exactly singular matrix (torch solves with LU's zero pivots nudged)
    a = np.stack([SINGULAR, [[0., 0.], [0., 0.]], [[1., 2.], [3., 4.]]])
    check(lambda lib, x: lib.linalg.det(x), a, dtypes=(np.float64,), device=device)
    # under create_graph: the SVD formula (the adjugate), and its own gradient
    three = np.array([[1., 2., 3.], [2., 4., 6.], [0., 1., 5.]])  # rank 2
    check_double_backward(lambda lib, x: lib.linalg.det(x), three, device=device)


ARG_ERRORS = {
    "det_1d": (lambda lib, a: lib.linalg.det(a), (3,)),
    "det_not_square": (lambda lib, a: lib.linalg.det(a), (2, 3)),
    "det_int": (lambda lib, a: lib.linalg.det(a), np.ones((2, 2), dtype=np.int64)),
    "det_int_1d": (lambda lib, a: lib.det(a), np.ones(2, dtype=np.int64)),
    "inv_half": (lambda lib, a: lib.linalg.inv(a.half()), (2, 2)),
    "slogdet_int": (lambda lib, a: lib.slogdet(a), np.ones((2, 2), dtype=np.int64)),
    "logdet_not_square": (lambda lib, a: lib.logdet(a), (2, 3)),
    "solve_shapes": (lambda lib, a, b: lib.linalg.solve(a, b), (2, 2), (3,)),
    "solve_shapes_left_false": (lambda lib, a, b: lib.linalg.solve(a, b, left=False), (2, 2), (3, 3)),
    "solve_vector_left_false": (lambda lib, a, b: lib.linalg.solve(a, b, left=False), (2, 2), (2,)),
    "solve_batches": (lambda lib, a, b: lib.linalg.solve(a, b), (2, 3, 3), (4, 3, 1)),
    "solve_dtypes": (lambda lib, a, b: lib.linalg.solve(a, b.double()), (2, 2), (2,)),
    "solve_int": (lambda lib, a, b: lib.linalg.solve(a, b), np.eye(2, dtype=np.int64), np.ones(2, dtype=np.int64)),
    "cholesky_not_square": (lambda lib, a: lib.linalg.cholesky(a), (2, 3)),
    "cholesky_removed": (lambda lib, a: lib.cholesky(a), (2, 2)),
    "cholesky_method_removed": (lambda lib, a: a.cholesky(), (2, 2)),
    "qr_removed": (lambda lib, a: a.qr(some=False), (2, 2)),
    "qr_mode": (lambda lib, a: lib.linalg.qr(a, mode="x"), (3, 2)),
    "qr_int": (lambda lib, a: lib.linalg.qr(a), np.ones((2, 2), dtype=np.int64)),
    "svd_1d": (lambda lib, a: lib.linalg.svd(a), (3,)),
    "eigh_uplo": (lambda lib, a: lib.linalg.eigh(a, UPLO="X"), (2, 2)),
    "eigh_not_square": (lambda lib, a: lib.linalg.eigh(a), (2, 3)),
    "lstsq_rows": (lambda lib, a, b: lib.linalg.lstsq(a, b), (4, 3), (3, 2)),
    "lstsq_dtypes": (lambda lib, a, b: lib.linalg.lstsq(a, b.double()), (4, 3), (4, 2)),
    "lstsq_1d": (lambda lib, a, b: lib.linalg.lstsq(a, b), (4,), (4,)),
    "lstsq_ranks": (lambda lib, a, b: lib.linalg.lstsq(a, b), (5, 3), (2, 5, 2)),
    "lstsq_batches": (lambda lib, a, b: lib.linalg.lstsq(a, b), (2, 1, 5, 3), (3, 5, 2)),
    "lstsq_driver": (lambda lib, a, b: lib.linalg.lstsq(a, b, driver="foo"), (4, 3), (4, 2)),
    "lstsq_int": (lambda lib, a: lib.linalg.lstsq(a, a), np.ones((2, 2), dtype=np.int64)),
    "pinv_1d": (lambda lib, a: lib.linalg.pinv(a), (3,)),
    "pinv_int": (lambda lib, a: lib.linalg.pinv(a), np.ones((2, 2), dtype=np.int64)),
    "matrix_rank_1d": (lambda lib, a: lib.linalg.matrix_rank(a), (3,)),
    "matrix_power_not_square": (lambda lib, a: lib.linalg.matrix_power(a, 2), (2, 3)),
    "matrix_power_int_negative": (lambda lib, a: lib.linalg.matrix_power(a, -1), np.eye(2, dtype=np.int64)),
    "matrix_exp_int": (lambda lib, a: lib.linalg.matrix_exp(a), np.ones((2, 2), dtype=np.int64)),
    "matrix_exp_1d": (lambda lib, a: lib.linalg.matrix_exp(a), (2,)),
    "matrix_norm_1d": (lambda lib, a: lib.linalg.matrix_norm(a), (3,)),
    "matrix_norm_order": (lambda lib, a: lib.linalg.matrix_norm(a, 3), (3, 3)),
    "matrix_norm_order_float": (lambda lib, a: lib.linalg.matrix_norm(a, 3.5), (3, 3)),
    "matrix_norm_order_str": (lambda lib, a: lib.linalg.matrix_norm(a, "abc"), (3, 3)),
    "matrix_norm_dims_equal": (lambda lib, a: lib.linalg.matrix_norm(a, dim=(0, 0)), (3, 3)),
    "matrix_norm_dim_int": (lambda lib, a: lib.linalg.norm(a, "fro", dim=1), (3, 3)),
    "matrix_norm_narrowing": (lambda lib, a: lib.linalg.matrix_norm(a.double(), 2, dtype=lib.float32), (3, 3)),
    "matrix_norm_int": (lambda lib, a: lib.linalg.matrix_norm(a), np.ones((2, 2), dtype=np.int64)),
    "norm_3d_with_ord": (lambda lib, a: lib.linalg.norm(a, 2), (2, 2, 2)),
    "norm_str_ord_1d": (lambda lib, a: lib.linalg.norm(a, "nuc"), (3,)),
    "vector_norm_int": (lambda lib, a: lib.linalg.vector_norm(a), np.ones(2, dtype=np.int64)),
    "cross_length": (lambda lib, a, b: lib.linalg.cross(a, b), (2, 4), (2, 4)),
    "cross_ndim": (lambda lib, a, b: lib.linalg.cross(a, b), (3, 1, 3), (3, 3)),
    "cross_broadcast": (lambda lib, a, b: lib.linalg.cross(a, b), (2, 3), (4, 3)),
    "cross_dtypes": (lambda lib, a, b: lib.linalg.cross(a, b.double()), (3,), (3,)),
    "torch_cross_default_dim_length": (lambda lib, a, b: lib.cross(a, b), (3, 3), (1, 3)),
    "torch_cross_no_dim_of_3": (lambda lib, a, b: lib.cross(a, b), (2, 4), (2, 4)),
    "vecdot_dtypes": (lambda lib, a, b: lib.linalg.vecdot(a, b.double()), (3,), (3,)),
    "vecdot_int": (lambda lib, a: lib.linalg.vecdot(a, a), np.ones(3, dtype=np.int64)),
    "vecdot_shapes": (lambda lib, a, b: lib.linalg.vecdot(a, b), (2, 3), (2, 4)),
    "multi_dot_one": (lambda lib, a: lib.linalg.multi_dot([a]), (2, 2)),
    "multi_dot_first_3d": (lambda lib, a, b: lib.linalg.multi_dot([a, b]), (2, 2, 2), (2, 2)),
    "multi_dot_last_3d": (lambda lib, a, b: lib.linalg.multi_dot([a, b]), (2, 2), (2, 2, 2)),
    "multi_dot_middle_1d": (lambda lib, a, b: lib.linalg.multi_dot([a, b, a]), (2, 2), (2,)),
    "multi_dot_shapes": (lambda lib, a, b: lib.linalg.multi_dot([a, b]), (2, 3), (2, 2)),
    "multi_dot_dtypes": (lambda lib, a, b: lib.linalg.multi_dot([a, b.double()]), (2, 3), (3, 2)),
    "multi_dot_vector_shapes": (lambda lib, a, b: lib.linalg.multi_dot([a, b]), (3,), (2, 2)),
    "norm_dims_three": (lambda lib, a: lib.linalg.norm(a, dim=(0, 1, 2)), (2, 2, 2)),
    "pinv_hermitian_not_square": (lambda lib, a: lib.linalg.pinv(a, hermitian=True), (2, 3)),
    "matrix_rank_hermitian_not_square": (lambda lib, a: lib.linalg.matrix_rank(a, hermitian=True), (2, 3)),
    "cross_bool": (lambda lib, a: lib.linalg.cross(a > 0, a > 0), (3,)),
    "inv_ex_int": (lambda lib, a: lib.linalg.inv_ex(a), np.ones((2, 2), dtype=np.int64)),
    "solve_ex_not_square": (lambda lib, a, b: lib.linalg.solve_ex(a, b), (2, 3), (2,)),
    "cholesky_ex_int": (lambda lib, a: lib.linalg.cholesky_ex(a), np.ones((2, 2), dtype=np.int64)),
}


@pytest.mark.parametrize("case", sorted(ARG_ERRORS))
def test_invalid_arguments_raise_torch_error(case, device):
    fn, *specs = ARG_ERRORS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.cross without dim
        check_error(fn, *specs, device=device, dtype=np.float32)


LOW_PRECISION = {
    "det": lambda lib, a: lib.linalg.det(a),
    "slogdet": lambda lib, a: lib.linalg.slogdet(a),
    "logdet": lambda lib, a: a.logdet(),
    "inv": lambda lib, a: lib.linalg.inv(a),
    "solve": lambda lib, a: lib.linalg.solve(a, a),
    "cholesky": lambda lib, a: lib.linalg.cholesky_ex(a),
    "qr": lambda lib, a: lib.linalg.qr(a),
    "svd": lambda lib, a: lib.linalg.svdvals(a),
    "eigh": lambda lib, a: lib.linalg.eigvalsh(a),
    "lstsq": lambda lib, a: lib.linalg.lstsq(a, a),
    "pinv": lambda lib, a: lib.linalg.pinv(a),
    "matrix_rank": lambda lib, a: lib.linalg.matrix_rank(a),
    "matrix_norm_2": lambda lib, a: lib.linalg.matrix_norm(a, 2),
    "matrix_norm_nuc": lambda lib, a: lib.linalg.matrix_norm(a, "nuc"),
}


def _refused_as_torch(case: str, dtype: str, device: str) -> None:
    fn = LOW_PRECISION[case]
    try:
        fn(torch, getattr(torch.eye(2), dtype)())
    except (RuntimeError, NotImplementedError) as e:
        message = str(e)
    # refused by torch's check, or by the kernel it dispatches to ("lu_cpu" not implemented for
    # 'Half'), which rustgrad names after the device
    at = message.find(" not implemented for")
    phrase = message[at:] if message.startswith('"') else message
    check_error(lambda lib, a: fn(lib, getattr(a, dtype)()), np.eye(2), device=device, phrase=phrase)


@pytest.mark.parametrize("case", sorted(LOW_PRECISION))
def test_half_inputs_are_refused_as_torch(case, device):
    _refused_as_torch(case, "half", device)


@pytest.mark.parametrize("case", sorted(LOW_PRECISION))
def test_bfloat16_inputs_are_refused_as_torch(case):
    _refused_as_torch(case, "bfloat16", "cpu")  # CuPy has no bfloat16


def test_torch_cross_without_dim_warns_and_takes_the_first_dim_of_size_3(device):
    # (torch warns once per process, so only rustgrad's warning is checked here)
    with pytest.warns(UserWarning, match="Using torch.cross without specifying the dim arg is deprecated"):
        rustgrad.cross(rustgrad.ones(2, 3), rustgrad.ones(2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda lib, a, b: lib.cross(a, b), (1, 3), (3, 3), device=device)
        check(lambda lib, a, b: a.cross(b), (3, 2), (3, 2), device=device)


def test_eigh_of_integers_and_svd_driver_on_the_cpu_are_refused_as_torch(device):
    check_error(lambda lib, a: lib.linalg.eigh(a), np.ones((2, 2), dtype=np.int64), device=device,
                phrase="not implemented for 'Long'")
    check_error(lambda lib, a: lib.linalg.svdvals(a, driver="gesvd"), (2, 2),
                phrase="keyword argument `driver=` is only supported on CUDA inputs")


@pytest.mark.parametrize("mode, shape, phrase", [
    ("r", (3, 2), "The derivative of linalg.qr depends on Q, which is not computed when mode='r'"),
    ("complete", (3, 2), "not differentiable when mode='complete' and nrows > ncols"),
])
def test_qr_backward_refusals_match_torch(mode, shape, phrase, device):
    for lib in (torch, rustgrad):
        kw = {"device": device} if lib is rustgrad else {}
        a = lib.randn(*shape, dtype=lib.float64, requires_grad=True, **kw)
        Q, R = lib.linalg.qr(a, mode=mode)
        assert Q.grad_fn.name() == "LinalgQrBackward0"
        assert tuple(Q.shape) == ((0,) if mode == "r" else (3, 3))
        with pytest.raises(RuntimeError, match=phrase):
            R.sum().backward()


def test_empty_and_degenerate_shapes_match_torch():
    check(lambda lib, a: (lib.linalg.det(a), lib.linalg.inv(a), lib.linalg.matrix_exp(a)),
          np.zeros((0, 0)), backward=False)
    check(lambda lib, a: lib.linalg.eigh(a), np.zeros((2, 0, 0)), backward=False)
    check(lambda lib, a: lib.linalg.svdvals(a), np.zeros((0, 3, 2)), backward=False)
    check(lambda lib, a: lib.linalg.pinv(a), np.zeros((0, 3)), backward=False)


# ---- gradcheck and double backward ---------------------------------------------------------------
GRADCHECK = {
    "det": (lambda lib, a: lib.linalg.det(a), (3, 3)),
    "slogdet": (lambda lib, a: lib.linalg.slogdet(a).logabsdet, (2, 3, 3)),
    "inv": (lambda lib, a: lib.linalg.inv(spd(lib, a)), (2, 3, 3)),
    "solve": (lambda lib, a, b: lib.linalg.solve(spd(lib, a), b), (3, 3), (2, 3, 2)),
    "solve_left_false": (lambda lib, a, b: lib.linalg.solve(spd(lib, a), b, left=False), (3, 3), (2, 3)),
    "cholesky": (lambda lib, a: lib.linalg.cholesky(spd(lib, a)), (3, 3)),
    "cholesky_upper": (lambda lib, a: lib.linalg.cholesky(spd(lib, a), upper=True), (2, 3, 3)),
    "qr_tall": (lambda lib, a: lib.linalg.qr(a), (4, 3)),
    "qr_wide": (lambda lib, a: lib.linalg.qr(a), (2, 4)),
    "svd_terms": (lambda lib, a: (lambda r: (rank_one_terms(r.U, r.Vh), r.S))(
        lib.linalg.svd(a, full_matrices=False)), (4, 3)),
    "svd_terms_wide": (lambda lib, a: rank_one_terms(*lib.linalg.svd(a, full_matrices=False)[::2]), (2, 4)),
    "eigh": (lambda lib, a: (lambda r: (r.eigenvalues, r.eigenvectors @ r.eigenvectors.mT.tril()))(
        lib.linalg.eigh(a + a.mT)), (3, 3)),
    "lstsq_residuals": (lambda lib, a, b: lib.linalg.lstsq(a, b, driver="gelsd")[:2], (5, 3), (5, 2)),
    "pinv": (lambda lib, a: lib.linalg.pinv(a), (3, 4)),
    "matrix_exp": (lambda lib, a: lib.linalg.matrix_exp(a), (3, 3)),
    "matrix_power": (lambda lib, a: lib.linalg.matrix_power(spd(lib, a), -2), (3, 3)),
    "matrix_norm_nuc": (lambda lib, a: lib.linalg.matrix_norm(a, "nuc"), (3, 4)),
    "cross": (lambda lib, a, b: lib.linalg.cross(a, b), (2, 3), (1, 3)),
    "multi_dot": (lambda lib, a, b, c: lib.linalg.multi_dot([a, b, c]), (3,), (3, 4), (4, 2)),
}


@pytest.mark.parametrize("case", sorted(GRADCHECK))
def test_linalg_gradcheck_passes(case):
    fn, *shapes = GRADCHECK[case]
    assert grad_ok(fn, *shapes)


def _first(fn):
    """The program's first output (check_double_backward differentiates that one)."""
    return lambda lib, *xs: (lambda out: out[0] if isinstance(out, tuple) else out)(fn(lib, *xs))


DOUBLE = {
    "det": (lambda lib, a: lib.linalg.det(a), (3, 3)),
    "slogdet": (lambda lib, a: lib.linalg.slogdet(a).logabsdet, (2, 3, 3)),
    "inv": (lambda lib, a: lib.linalg.inv(spd(lib, a)), (3, 3)),
    "solve": (lambda lib, a, b: lib.linalg.solve(spd(lib, a), b), (3, 3), (3, 2)),
    "cholesky": (lambda lib, a: lib.linalg.cholesky(spd(lib, a)), (3, 3)),
    "qr_R": (lambda lib, a: lib.linalg.qr(a).R, (4, 3)),
    "svdvals": (lambda lib, a: lib.linalg.svdvals(a), (4, 3)),
    "eigvalsh": (lambda lib, a: lib.linalg.eigvalsh(a + a.mT), (3, 3)),
    "pinv": (lambda lib, a: lib.linalg.pinv(a), (4, 3)),
    "matrix_exp": (lambda lib, a: lib.linalg.matrix_exp(a), (3, 3)),
    "cross": (lambda lib, a, b: lib.linalg.cross(a, b), (2, 3), (2, 3)),
    "lstsq": (lambda lib, a, b: lib.linalg.lstsq(a, b, driver="gels").solution, (5, 3), (5, 2)),
}


@pytest.mark.parametrize("case", sorted(DOUBLE))
def test_linalg_double_backward_matches_torch(case, device):
    fn, *shapes = DOUBLE[case]
    check_double_backward(_first(fn), *shapes, device=device, rtol=1e-6, atol=1e-8)


# ---- the namespace -------------------------------------------------------------------------------
def test_every_linalg_name_is_torchs_and_bound_to_its_op():
    from rustgrad import _bind

    declared = {n: d for d in _bind.declared() for n in d.linalg}
    assert {"det", "slogdet", "inv", "inv_ex", "solve", "cholesky", "cholesky_ex", "qr", "svd",
            "svdvals", "eigh", "eigvalsh", "lstsq", "pinv", "matrix_rank", "matrix_power",
            "matrix_exp", "norm", "vector_norm", "matrix_norm", "cross", "vecdot",
            "multi_dot"} <= set(declared)
    for name, d in declared.items():
        assert getattr(rustgrad.linalg, name) is d.fn, name
        assert hasattr(torch.linalg, name), name
        assert name in rustgrad.linalg.__all__
    for name in ("det", "logdet", "slogdet", "inverse", "cholesky", "qr", "svd", "pinverse",
                 "matrix_power", "matrix_exp", "cross"):
        assert callable(getattr(rustgrad, name)) and callable(getattr(rustgrad.Tensor, name)), name
