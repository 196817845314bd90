"""torch.linalg.eig and torch.linalg.eigvals against torch, on every device: eigenvalues
(float32/float64/complex64/complex128 inputs, batched and empty, output dtypes), eigenvectors
through the quantities that do not depend on their complex phase (|V|, unit norms, A V = V diag(L)),
the named tuple, grad_fn names, gradients for phase-invariant real losses (real and complex
inputs), gradcheck, torch's refusal of a phase-dependent loss, autocast, and the errors."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check_error, oracle_for, rustgrad_on

_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-10), "complex64": (1e-4, 1e-5),
        "complex128": (1e-9, 1e-10)}
DTYPES = ["float32", "float64", "complex64", "complex128"]


def _np(t: Any) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        t = t.resolve_conj()
    return np.asarray(t.detach().cpu().numpy())


def _same(t: Any, r: Any, what: str, scale: float = 1.0, device: str = "cpu") -> None:
    assert isinstance(r, rustgrad.Tensor), f"{what}: rustgrad gave {type(r).__name__}"
    assert str(r.dtype) == str(t.dtype), f"{what}: dtype {r.dtype} != torch's {t.dtype}"
    assert tuple(r.shape) == tuple(t.shape), f"{what}: shape {tuple(r.shape)} != {tuple(t.shape)}"
    assert r.device.type == device, f"{what}: on {r.device}"
    tv, rv = _np(t), _np(r)
    rtol, atol = _TOL[tv.dtype.name]
    np.testing.assert_allclose(rv, tv, rtol=rtol * scale, atol=atol * scale, err_msg=what)


def _matrix(shape: Any, dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2, 2, shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.uniform(-2, 2, shape)
    return a.astype(dtype)


def _matched(t: Any, r: Any) -> Any:
    """r's eigenvalues (last dim) reordered as t's. geev's order is not specified, and float32
    rounding in another LAPACK (torch's MKL; NumPy's OpenBLAS here) can swap two: each of t's is
    paired with the nearest of r's not yet taken. Returns (r reordered, the permutation)."""
    tv, rv = _np(t), _np(r)
    n = tv.shape[-1]
    perm = np.zeros(tv.shape, dtype=np.int64)
    for idx in np.ndindex(*tv.shape[:-1]):
        free = list(range(n))
        for i in range(n):
            j = min(free, key=lambda k: abs(rv[idx][k] - tv[idx][i]))
            perm[idx + (i,)] = j
            free.remove(j)
    lib = rustgrad
    p = lib.tensor(perm, device=r.device)
    return r.gather(-1, p), perm


SHAPES = [(3, 3), (2, 4, 4), (1, 1), (2, 2, 3, 3), (0, 0), (2, 0, 0)]


# ---- values ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_eig_values_match_torch(shape, dtype, device):
    a = _matrix(shape, dtype)
    lib = rustgrad_on(device)
    tL, tV = torch.linalg.eig(torch.tensor(a))
    r = lib.linalg.eig(lib.tensor(a))
    assert isinstance(r, rustgrad.return_types.linalg_eig)
    rL, rV = r
    assert r.eigenvalues is rL and r.eigenvectors is rV
    matched, perm = _matched(tL, rL)
    _same(tL, matched, "eigenvalues", 10, device)
    # eigenvectors: unique up to a phase per column, so compare |V| and check A V = V diag(L)
    cols = rustgrad.tensor(perm, device=rV.device).unsqueeze(-2).expand(*rV.shape)
    _same(tV.abs(), rV.abs().gather(-1, cols), "|eigenvectors|", 10, device)
    assert str(rV.dtype) == str(tV.dtype) and tuple(rV.shape) == tuple(tV.shape)
    assert rV.device.type == device
    v, w = _np(rV), _np(rL)
    rtol, atol = _TOL[np.dtype(str(tV.dtype).split(".")[1]).name]
    if v.size:
        np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, rtol=rtol * 10, atol=atol * 10)
        np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=rtol * 100, atol=atol * 100)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_eigvals_match_torch(shape, dtype, device):
    a = _matrix(shape, dtype, seed=1)
    lib = rustgrad_on(device)
    t = torch.linalg.eigvals(torch.tensor(a))
    r = lib.linalg.eigvals(lib.tensor(a))
    _same(t, _matched(t, r)[0], "eigvals", 10, device)
    assert r.grad_fn is None


@pytest.mark.parametrize("case", ["rotation", "diagonal", "triangular", "defective_free"])
def test_eig_of_structured_matrices_matches_torch(case, device):
    a = {"rotation": [[0.0, -1.0], [1.0, 0.0]],
         "diagonal": [[2.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 3.0]],
         "triangular": [[1.0, 2.0, 3.0], [0.0, 4.0, 5.0], [0.0, 0.0, 6.0]],
         "defective_free": [[4.0, 1.0], [2.0, 3.0]]}[case]
    lib = rustgrad_on(device)
    tL, tV = torch.linalg.eig(torch.tensor(a, dtype=torch.float64))
    rL, rV = lib.linalg.eig(lib.tensor(a, dtype=lib.float64))
    _same(tL, rL, "eigenvalues", device=device)
    # these are LAPACK's own normalisation on both sides (largest component real)
    _same(tV, rV, "eigenvectors", 10, device)


def test_eig_repr_matches_torch():
    a = [[1.0, 2.0], [3.0, 4.0]]
    assert repr(rustgrad.linalg.eig(rustgrad.tensor(a))) == repr(torch.linalg.eig(torch.tensor(a)))


def test_eigvals_of_a_non_finite_matrix_is_nan_for_that_matrix_only(device):
    a = np.array([[[1.0, 2.0], [3.0, 4.0]], [[np.inf, 1.0], [1.0, 1.0]]])
    lib = rustgrad_on(device)
    t = torch.linalg.eigvals(torch.tensor(a))  # torch's batched kernel: NaNs for that matrix
    r = lib.linalg.eigvals(lib.tensor(a))
    _same(t[0], r[0], "finite matrix", device=device)
    assert np.isnan(_np(r[1]).real).all() and np.isnan(_np(t[1]).real).all()


def test_autocast_on_the_cpu_runs_eig_in_float32():
    for L in (torch, rustgrad):
        x = L.tensor([[1.0, 2.0], [3.0, 4.0]]).bfloat16()
        with L.autocast("cpu", dtype=L.bfloat16):
            assert str(L.linalg.eig(x).eigenvalues.dtype) == "torch.complex64"
            assert str(L.linalg.eigvals(x).dtype) == "torch.complex64"


# ---- gradients ------------------------------------------------------------------------------
def _row_weights(L: Any, A: Any) -> Any:
    """Weights per row of A's eigenvector matrices (the same for every column, so that a loss
    does not depend on the eigenvalues' order)."""
    w = np.linspace(0.3, 1.7, A.shape[-1]).reshape(-1, 1)
    return L.tensor(w, dtype=A.real.dtype)


def _eigvals_weighted(L: Any, A: Any) -> Any:
    e = L.linalg.eigvals(A)
    return (e.real ** 2 * 0.5).sum() - (e.imag.abs() * e.real).sum()


def _eig_both(L: Any, A: Any) -> Any:
    r = L.linalg.eig(A)
    return ((r.eigenvectors.abs() ** 2 * _row_weights(L, A)).sum() + r.eigenvalues.imag.abs().sum()
            + r.eigenvalues.real.sum())


# real losses that do not depend on the eigenvectors' phases (nor on the eigenvalues' order)
LOSSES = {
    "eigvals_abs": lambda L, A: L.linalg.eigvals(A).abs().sum(),
    "eigvals_real": lambda L, A: L.linalg.eigvals(A).real.sum(),
    "eigvals_weighted": _eigvals_weighted,
    "eig_values_only": lambda L, A: (L.linalg.eig(A).eigenvalues.abs() * 2).sum(),
    "eig_vectors_abs": lambda L, A: (L.linalg.eig(A).eigenvectors.abs() * _row_weights(L, A)).sum(),
    "eig_both": _eig_both,
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)], ids=str)
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_gradients_match_torch(loss, shape, dtype, device):
    a = _matrix(shape, dtype, seed=2)
    oracle, lib = oracle_for(device), rustgrad_on(device)
    res = []
    for L in (oracle, lib):
        A = L.tensor(a.copy(), requires_grad=True)
        out = LOSSES[loss](L, A)
        out.backward()
        res.append((out, A.grad))
    (tl, tg), (rl, rg) = res
    _same(tl, rl, "loss", 10, device)
    _same(tg, rg, "grad", 1000, device)


@pytest.mark.parametrize("fn", ["eig", "eigvals"])
def test_grad_fn_names_match_torch(fn, device):
    a = _matrix((3, 3), "float64")
    lib = rustgrad_on(device)
    t = getattr(torch.linalg, fn)(torch.tensor(a, requires_grad=True))
    r = getattr(lib.linalg, fn)(lib.tensor(a, requires_grad=True))
    for tt, rr in zip(t if fn == "eig" else (t,), r if fn == "eig" else (r,)):
        assert rr.grad_fn.name() == tt.grad_fn.name() == "LinalgEigBackward0"
    if fn == "eig":
        assert r[0].grad_fn is r[1].grad_fn
        g = r[0].grad_fn
        _same(t[0].grad_fn._saved_eigenvalues, g._saved_eigenvalues, "saved L", device=device)
        assert tuple(g._saved_eigenvectors.shape) == (3, 3)


def test_gradients_pass_gradcheck():
    rng = np.random.default_rng(3)
    for program in (lambda A: rustgrad.linalg.eigvals(A).abs(),
                    lambda A: rustgrad.linalg.eigvals(A).real,
                    lambda A: rustgrad.linalg.eig(A).eigenvectors.abs(),
                    lambda A: rustgrad.linalg.eig(A).eigenvalues.imag):
        A = rustgrad.tensor(rng.uniform(-2, 2, (2, 3, 3)), requires_grad=True)
        assert rustgrad.autograd.gradcheck(program, (A,))


def test_a_phase_dependent_loss_is_refused_as_torch(device):
    a = _matrix((3, 3), "float64")  # a pair of complex eigenvalues
    oracle, lib = oracle_for(device), rustgrad_on(device)
    errors = []
    for L in (oracle, lib):
        A = L.tensor(a.copy(), requires_grad=True)
        with pytest.raises(RuntimeError) as info:
            L.linalg.eig(A).eigenvectors.real.sum().backward()
        errors.append(str(info.value))
        assert A.grad is None
    assert "specified up to multiplication by e^{i phi}" in errors[0]
    assert errors[1] == errors[0]


def test_second_derivative_is_refused_clearly():
    """torch's eig has a double backward; rustgrad's formula runs on arrays (its complex matmul
    has no derivative yet), so the first gradient is right and the second one raises."""
    a = _matrix((3, 3), "float64")
    tA = torch.tensor(a, requires_grad=True)
    rA = rustgrad.tensor(a, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.linalg.eigvals(tA).abs().sum(), tA, create_graph=True)
    (rg,) = rustgrad.autograd.grad(rustgrad.linalg.eigvals(rA).abs().sum(), rA, create_graph=True)
    _same(tg, rg, "first derivative", 100)
    assert rg.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_eig_backward is not implemented"):
        rg.sum().backward()


# ---- errors ---------------------------------------------------------------------------------
EIG: Callable[..., Any] = lambda L, a: L.linalg.eig(a)  # noqa: E731
EIGVALS: Callable[..., Any] = lambda L, a: L.linalg.eigvals(a)  # noqa: E731


# torch's eigvals of one non-finite matrix crashes (rustgrad gives NaN): no "nan" case for it
_ERROR_CASES = [(case, fn) for case in ("rect", "vector", "scalar", "int", "bool", "rect_int",
                                        "half", "nan")
                for fn in (EIG, EIGVALS) if not (case == "nan" and fn is EIGVALS)]


@pytest.mark.filterwarnings("ignore:.*support is experimental")  # torch's, for half inputs
@pytest.mark.parametrize("case, fn", _ERROR_CASES,
                         ids=[f"{c}-{'eig' if f is EIG else 'eigvals'}" for c, f in _ERROR_CASES])
def test_errors_match_torch(case, fn, device):
    _check_eig_error(case, fn, device)


@pytest.mark.parametrize("fn", [EIG, EIGVALS], ids=["eig", "eigvals"])
def test_bfloat16_error_matches_torch(fn):  # CPU only: CuPy has no bfloat16 arrays
    _check_eig_error("bfloat16", fn, "cpu")


def _check_eig_error(case, fn, device):
    phrase = None
    if case in ("half", "bfloat16"):
        phrase = "not implemented for"  # torch's kernel is named after its device
    spec = {"rect": (2, 3), "vector": (3,), "scalar": (), "int": np.ones((2, 2), np.int64),
            "bool": np.ones((2, 2), bool), "rect_int": np.ones((2, 3), np.int32),
            "half": np.ones((2, 2), np.float16), "bfloat16": (2, 2),
            "nan": np.array([[np.nan, 1.0], [1.0, 1.0]])}[case]

    def program(L: Any, a: Any) -> Any:
        return fn(L, a.bfloat16() if case == "bfloat16" else a)

    dtype = np.float16 if case == "half" else np.float64
    check_error(program, spec, device=device, phrase=phrase, dtype=dtype)


def test_eig_with_grad_refuses_non_finite_input_for_eigvals_too():
    a = np.array([[np.nan, 1.0], [1.0, 1.0]])
    for L in (torch, rustgrad):
        with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
            L.linalg.eigvals(L.tensor(a, requires_grad=True))
