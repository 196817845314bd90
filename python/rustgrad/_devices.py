"""Moving tensors between devices (differentiable: the gradient moves back)."""

from __future__ import annotations

from typing import Any

from ._backends import namespace
from ._ops._util import record
from ._tensor import Tensor


def _to_device_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return to_device(g, ctx)


def to_device(t: Tensor, target: Any) -> Tensor:
    src = t._backend
    dst = namespace(target)
    host = src.to_numpy(t._data)
    arr = dst.from_numpy(host.copy() if dst is src else host, target)
    return record(arr, (t,), "ToCopyBackward0", _to_device_bw, None, t.device)
