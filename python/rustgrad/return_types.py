"""torch.return_types: the named tuples of the ops with several results, with torch's names,
fields and repr: (values, indices) of max, min, sort and topk; the factorizations of
torch.linalg (slogdet, inv_ex, solve_ex, cholesky_ex, qr, svd, eigh, lstsq, lu_factor(_ex), lu,
ldl_factor(_ex), polar) and torch's own (svd, triangular_solve, lu_unpack, geqrf, lu's
_lu_with_info).

Each is a NamedTuple: it unpacks as ``values, indices = ...``, indexes as ``[0]``/``[1]`` and
has its fields as attributes (``.values`` and ``.indices``; ``.sign`` and ``.logabsdet``; ...).

Example::

    >>> result = torch.tensor([3.0, 1.0, 2.0]).sort()
    >>> result
    torch.return_types.sort(
    values=tensor([1., 2., 3.]),
    indices=tensor([1, 2, 0]))
    >>> values, indices = result
    >>> isinstance(result, torch.return_types.sort), indices is result.indices
    (True, True)
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence, Tuple


class _ValuesIndices(NamedTuple):
    values: Any
    indices: Any


def _repr(name: str, fields: Tuple[str, ...]) -> Any:
    def __repr__(self: Any) -> str:
        parts = ",\n".join(f"{f}={getattr(self, f)!r}" for f in fields)
        return f"torch.return_types.{name}(\n{parts})"

    return __repr__


def _make(name: str) -> type:
    along = " along a dim" if name in ("max", "min") else ""
    doc = f"What ``{name}`` returns{along}: the named tuple (values, indices)."
    return type(name, (_ValuesIndices,), {"__slots__": (), "__repr__": _repr(name, ("values", "indices")),
                                          "__module__": __name__, "__qualname__": name,
                                          "__doc__": doc})


def _named(name: str, fields: Sequence[str], what: str) -> type:
    """The named tuple torch.return_types.<name> of these fields (what: the op returning it)."""
    base = NamedTuple(f"_{name}", [(f, Any) for f in fields])  # type: ignore[misc]
    doc = f"What ``{what}`` returns: the named tuple ({', '.join(fields)})."
    return type(name, (base,), {"__slots__": (), "__repr__": _repr(name, tuple(fields)),
                                "__module__": __name__, "__qualname__": name, "__doc__": doc})


max = _make("max")
min = _make("min")
sort = _make("sort")
topk = _make("topk")
slogdet = _named("slogdet", ("sign", "logabsdet"), "slogdet")
linalg_slogdet = _named("linalg_slogdet", ("sign", "logabsdet"), "linalg.slogdet")
linalg_inv_ex = _named("linalg_inv_ex", ("inverse", "info"), "linalg.inv_ex")
linalg_solve_ex = _named("linalg_solve_ex", ("result", "info"), "linalg.solve_ex")
linalg_cholesky_ex = _named("linalg_cholesky_ex", ("L", "info"), "linalg.cholesky_ex")
linalg_qr = _named("linalg_qr", ("Q", "R"), "linalg.qr")
linalg_svd = _named("linalg_svd", ("U", "S", "Vh"), "linalg.svd")
svd = _named("svd", ("U", "S", "V"), "svd")
linalg_eigh = _named("linalg_eigh", ("eigenvalues", "eigenvectors"), "linalg.eigh")
linalg_eig = _named("linalg_eig", ("eigenvalues", "eigenvectors"), "linalg.eig")
linalg_lstsq = _named("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"), "linalg.lstsq")
frexp = _named("frexp", ("mantissa", "exponent"), "frexp")
cummax = _make("cummax")
cummin = _make("cummin")
kthvalue = _make("kthvalue")
mode = _make("mode")
median = _make("median")
nanmedian = _make("nanmedian")
aminmax = _named("aminmax", ("min", "max"), "aminmax")
histogram = _named("histogram", ("hist", "bin_edges"), "histogram")
histogramdd = _named("histogramdd", ("hist", "bin_edges"), "histogramdd")
triangular_solve = _named("triangular_solve", ("solution", "cloned_coefficient"), "triangular_solve")
lu_unpack = _named("lu_unpack", ("P", "L", "U"), "lu_unpack")
geqrf = _named("geqrf", ("a", "tau"), "geqrf")
_lu_with_info = _named("_lu_with_info", ("LU", "pivots", "info"), "lu")
linalg_lu_factor = _named("linalg_lu_factor", ("LU", "pivots"), "linalg.lu_factor")
linalg_lu_factor_ex = _named("linalg_lu_factor_ex", ("LU", "pivots", "info"), "linalg.lu_factor_ex")
linalg_lu = _named("linalg_lu", ("P", "L", "U"), "linalg.lu")
linalg_ldl_factor = _named("linalg_ldl_factor", ("LD", "pivots"), "linalg.ldl_factor")
linalg_ldl_factor_ex = _named("linalg_ldl_factor_ex", ("LD", "pivots", "info"), "linalg.ldl_factor_ex")
linalg_polar = _named("linalg_polar", ("U", "H"), "linalg.polar")

__all__ = ["max", "min", "sort", "topk", "slogdet", "linalg_slogdet", "linalg_inv_ex",
           "linalg_solve_ex", "linalg_cholesky_ex", "linalg_qr", "linalg_svd", "svd", "linalg_eigh",
           "linalg_lstsq", "frexp", "cummax", "cummin", "kthvalue", "mode", "median", "nanmedian",
           "aminmax", "histogram", "histogramdd", "triangular_solve", "lu_unpack", "geqrf", "_lu_with_info",
           "linalg_lu_factor", "linalg_lu_factor_ex", "linalg_lu", "linalg_ldl_factor", "linalg_ldl_factor_ex",
           "linalg_polar", "linalg_eig"]
