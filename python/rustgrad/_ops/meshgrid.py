"""meshgrid: coordinate grids from 1-d tensors, each an expanded view of its input (so its node is
ExpandBackward0, as torch's)."""

from __future__ import annotations

import warnings
from typing import Any, Optional, Tuple

from .._tensor import Tensor
from ._declare import op


@op(function="meshgrid")
def meshgrid(*tensors: Any, indexing: Optional[str] = None) -> Tuple[Tensor, ...]:
    """Grids of the 1-d (or 0-d) tensors' values; indexing "ij" (matrix, the default) or "xy"
    (Cartesian: the first two inputs' dimensions swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    if not tensors:
        raise RuntimeError("torch.meshgrid: Expected at least one tensor as input.")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
    ts = list(tensors)
    for t in ts[1:]:
        if t.dtype is not ts[0].dtype:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have "
                               "the same dtype.")
        if t.device != ts[0].device:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have "
                               "the same device.")
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    n = len(ts)
    grids = []
    for i, t in enumerate(ts):
        view = [1] * n
        view[i] = -1
        grids.append(t.reshape(view).expand(shape))
    if swap:  # the grids of the swapped inputs, handed back in the caller's order
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)
