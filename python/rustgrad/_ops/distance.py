"""Pairwise distances: cdist, the p-norm distance between each row of x1 and each row of x2.

The forward computes on the device's arrays from the broadcast differences; the backward is
written in rustgrad ops over the same differences (so double backward works), with torch's
conventions at ties and zero distances: a zero distance passes no gradient, and for p = inf
every coordinate attaining the max gets it."""

from __future__ import annotations

import math
from typing import Any, Optional

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._util import quiet_fp, record, sum_to

_SAVED = {"CdistBackward0": {
    "x1": lambda s, c: s[0], "x2": lambda s, c: s[1], "result": lambda s, c: s[2],
    "p": lambda s, c: c,
}}


def _cdist_bw(g: Tensor, saved: Any, p: float) -> Any:
    x1, x2, out = saved
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (..., P, R, M)
    gg = g.unsqueeze(-1)
    d = out.unsqueeze(-1)
    if p == 0:
        term = diff * 0.0
    elif p == 1:
        term = gg * diff.sign()
    elif p == math.inf:
        term = gg * diff.sign() * (diff.abs() == d).to(diff.dtype)
    else:
        # sign(diff) |diff|^(p-1) / d^(p-1); a zero distance passes nothing
        ratio = diff / d if p == 2 else \
            diff.sign() * (diff.abs() / d).pow(p - 1)
        term = gg * ratio.masked_fill(d == 0, 0.0)
    g1 = sum_to(term.sum(-2), tuple(x1.shape)) if x1.requires_grad else None
    g2 = sum_to(-term.sum(-3), tuple(x2.shape)) if x2.requires_grad else None
    return g1, g2


@op(function="cdist", grad_fn="CdistBackward0", saved=_SAVED)
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: Optional[str] = None) -> Tensor:
    """The p-norm distances between the rows of x1 (..., P, M) and of x2 (..., R, M)."""
    a, b = x1._data, x2._data
    if a.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {a.ndim}D")
    if b.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {b.ndim}D")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_dtype.scalar_type_name(t.dtype)}")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{a.shape[-1]} X2: {b.shape[-1]}")
    if not p >= 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(x1.dtype)} but found "
                           f"{_dtype.scalar_type_name(x2.dtype)}")
    if a.dtype.name == "float16":
        raise NotImplementedError("\"cdist\" not implemented for 'Half'")
    if compute_mode not in (None, "use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    xp = x1._backend
    p = float(p)
    diff = xp.abs(a[..., :, None, :] - b[..., None, :, :])
    with quiet_fp(xp):
        if p == 0:
            out = (diff != 0).sum(-1).astype(a.dtype)
        elif p == 1:
            out = diff.sum(-1)
        elif p == 2:
            out = xp.sqrt((diff * diff).sum(-1))
        elif p == math.inf:
            out = diff.max(-1) if diff.shape[-1] else diff.sum(-1)
        else:
            out = (diff ** p).sum(-1) ** (1.0 / p)
    return record(xp.ascontiguousarray(out), (x1, x2), "CdistBackward0", _cdist_bw, (x1, x2), p,
                  True)
