"""torch.linalg.eig and torch.linalg.eigvals: the eigen-decomposition of general (not necessarily
symmetric) square matrices, batched over leading dims, with complex results as torch's
(float32 and complex64 inputs give complex64, float64 and complex128 give complex128).

Both run NumPy's LAPACK `geev` (the routine torch's CPU kernel calls), so eigenvalues come in
LAPACK's order and each eigenvector has unit norm with LAPACK's phase (its largest component
real), as torch's. CuPy has no general eigensolver (only eigh), so on CUDA the matrices are
copied to the host, decomposed there and the results copied back: torch's CUDA kernel does the
same through MAGMA's host `geev`. The backward runs on the input's device.

The gradient is torch's linalg_eig_backward: with gL, gV the gradients of the eigenvalues and
eigenvectors (torch's conjugate convention),

    gA = V^-H (diag(gL) + (V^H gV - V^H V diag(Re diag(V^H gV))) / conj(E)) V^H,
    E_ij = L_j - L_i off the diagonal,

taking the real part for a real A. An eigenvector is defined only up to a factor e^{i phi}, so
a loss that depends on that phase is ill-defined: as torch, the backward refuses it when the
imaginary part of diag(V^H gV) is not (near) zero. The formula is evaluated on the arrays
(rustgrad's complex matmul has no derivative of its own yet), so its result has no graph:
under create_graph the gradient records torch's NotImplemented node, whose backward raises.
"""

from __future__ import annotations

from typing import Any, Tuple

from .. import _dtype, return_types
from .._backends import CPU, namespace
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import NOT_IMPLEMENTED, const, is_grad_enabled, quiet_fp
from .decompositions import _check_matrix, _multi, _needs_grad, _no_kernel, _type_name

# the host's array library (NumPy), where the decomposition runs on every device
host = namespace(CPU)

_PHASE = ("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
          "multiplication by e^{i phi}. The specified loss function depends on this quantity, "
          "so it is ill-defined.")


def _check(fname: str, A: Tensor) -> None:
    """torch's checks, in its order: a dtype with no complex counterpart, the shape, then the
    low-precision dtypes its kernel has no loop for."""
    d = A._data
    if d.dtype.kind != "c" and not _dtype.is_floating_np(d.dtype):
        raise RuntimeError(f"Unknown Complex ScalarType for {_type_name(d)}")
    _check_matrix(fname, A)
    if d.dtype.kind != "c" and d.dtype.itemsize < 4:
        raise _no_kernel("linalg_eig_out", A)


def _complex_of(a: Any) -> Any:
    return host.complex64 if a.dtype in (host.float32, host.complex64) else host.complex128


def _host(A: Tensor) -> Any:
    """A's data as a NumPy array (copied from the device on CUDA)."""
    return host.asarray(A._backend.to_numpy(A._data))


def _back(A: Tensor, a: Any) -> Tensor:
    """A constant on A's device from the host array a."""
    a = host.ascontiguousarray(a)
    return const(A._backend.from_numpy(a, A.device))


def _eig_arrays(A: Tensor) -> Tuple[Any, Any]:
    a = _host(A)
    if not host.isfinite(a).all():
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    dt = _complex_of(a)
    with host.errstate(all="ignore"):
        w, v = host.linalg.eig(a)
    return w.astype(dt), v.astype(dt)


def _set_diagonal(m: Any, xp: Any, values: Any) -> None:
    k = xp.arange(m.shape[-1])
    m[..., k, k] = values


def _eig_bw(grads: Any, saved: Any, real_input: bool) -> Any:
    gL, gV = grads
    if gL is None and gV is None:
        return None
    Lt, Vt = saved.eigenvalues, saved.eigenvectors
    xp = Vt._backend
    L, V = Lt._data, Vt._data
    Vh = xp.conj(xp.swapaxes(V, -1, -2))
    with quiet_fp(xp):
        if gV is None:
            inner = xp.zeros(V.shape, dtype=V.dtype)
        else:
            VhgV = xp.matmul(Vh, gV._data.astype(V.dtype))
            diag = xp.diagonal(VhgV, 0, -2, -1)
            if not bool((xp.abs(diag.imag) <= 1e-2).all()):
                raise RuntimeError(_PHASE)
            inner = VhgV - xp.matmul(Vh, V) * diag.real[..., None, :]
            Lc = xp.conj(L)
            E = Lc[..., None, :] - Lc[..., :, None]
            _set_diagonal(E, xp, 1)
            inner = inner / E
        _set_diagonal(inner, xp, 0 if gL is None else gL._data.astype(V.dtype))
        gA = xp.linalg.solve(Vh, xp.matmul(inner, Vh))
    if real_input:
        gA = gA.real
    gA = xp.ascontiguousarray(gA)
    if is_grad_enabled():  # create_graph: this formula has no derivative here (it reads L, V too)
        ins = tuple(g for g in (gL, gV, Lt, Vt) if g is not None)
        return NOT_IMPLEMENTED.record(gA, ins, "linalg_eig_backward")
    return const(gA)


EIG = node("LinalgEigBackward0", _eig_bw, saved=("eigenvalues", "eigenvectors"))


def _eig(A: Tensor, fname: str) -> Tuple[Tensor, Tensor]:
    _check(fname, A)
    w, v = _eig_arrays(A)
    L, V = _back(A, w), _back(A, v)
    if not _needs_grad(A):
        return L, V
    real_input = A._data.dtype.kind != "c"
    return _multi(EIG, (L, V), (A,), (L, V), real_input)  # type: ignore[return-value]


@op(linalg="eig", grad_fn="LinalgEigBackward0", autocast=dict(cpu="fp32"))
def linalg_eig(A: Tensor) -> Any:
    """(eigenvalues, eigenvectors) of each square matrix of A, complex, in LAPACK's order.

    Args:
        A (Tensor): a matrix or a batch of them, float or complex, with finite entries.

    Returns torch.return_types.linalg_eig. Each eigenvector has unit norm but is defined only
    up to a complex phase: a loss that depends on the phase has no gradient (the backward
    raises, as torch's). On CUDA the decomposition is computed on the host.

    Example::

        >>> rustgrad.linalg.eig(rustgrad.tensor([[2., 0.], [0., 3.]])).eigenvalues
        tensor([2.+0.j, 3.+0.j])
    """
    return return_types.linalg_eig(*_eig(A, "linalg.eig"))


@op(linalg="eigvals", grad_fn="LinalgEigBackward0", autocast=dict(cpu="fp32"))
def linalg_eigvals(A: Tensor) -> Tensor:
    """The eigenvalues of each square matrix of A, complex (those of linalg.eig).

    A matrix with a NaN or infinite entry gets NaN eigenvalues where no gradient is needed
    (linalg.eig raises). On CUDA the eigenvalues are computed on the host.

    Example::

        >>> rustgrad.linalg.eigvals(rustgrad.tensor([[0., -1.], [1., 0.]]))
        tensor([0.+1.j, 0.-1.j])
    """
    if _needs_grad(A):
        return _eig(A, "linalg.eigvals")[0]
    _check("linalg.eigvals", A)
    a = _host(A)
    dt = _complex_of(a)
    finite = host.isfinite(a).all(axis=(-2, -1))
    with host.errstate(all="ignore"):
        w = host.linalg.eigvals(host.where(finite[..., None, None], a, 0)).astype(dt)
    w = host.where(finite[..., None], w, host.array(complex("nan+nanj"), dtype=dt))
    return _back(A, w)
