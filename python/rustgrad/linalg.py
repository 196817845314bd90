"""rustgrad.linalg: torch.linalg's functions (det, slogdet, inv, solve, cholesky, qr, svd, eigh,
lstsq, pinv, matrix_rank, matrix_power, matrix_exp, the norms, cross, vecdot, multi_dot and their
`_ex` forms), each declared beside its op in `_ops/decompositions.py` and bound here; and
LinAlgError, the RuntimeError they raise for a singular or non-positive-definite matrix.

Example::

    >>> A = torch.tensor([[4., 2.], [2., 3.]])
    >>> torch.linalg.det(A)
    tensor(8.)
    >>> torch.linalg.solve(A, torch.tensor([2., 1.]))
    tensor([0.5000, 0.0000])
"""

from __future__ import annotations

from . import _bind
from ._ops.decompositions import LinAlgError

__all__ = ["LinAlgError"]
# every op declared with a linalg name, bound once; see rustgrad/_bind.py
__all__ += _bind.bind_namespace(globals(), "rustgrad.linalg", "linalg")
