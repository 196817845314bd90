"""The affine map of nn.Linear, `linear(input, weight, bias) = input @ weight.T + bias`, with
torch's graph: addmm(bias, input, weight.t()) (AddmmBackward0) or mm (MmBackward0) for 2-D
input, the batch dims folded in and out by views otherwise."""

from __future__ import annotations

from typing import Any, Optional

from .._tensor import Tensor
from ._declare import op
from ._util import record
from .linalg import addmm, mm


def _unsafe_view_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.reshape(ctx)


@op(functional="linear", grad_fn=("AddmmBackward0", "MmBackward0"))
def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """input @ weight.T + bias."""
    xd = input._data
    if xd.ndim == 2:
        return mm(input, weight.t()) if bias is None else addmm(bias, input, weight.t())
    if xd.ndim == 1:
        if bias is not None:
            return linear(input.view(1, -1), weight, bias).view(-1)
        return linear(input.unsqueeze(0), weight, bias).squeeze(0)
    lead = xd.shape[:-1]
    out = linear(input.reshape(-1, xd.shape[-1]), weight, bias)
    shape = lead + (out._data.shape[-1],)
    if bias is not None:
        return out.view(shape)
    # torch's matmul folds the batch dims and ends on _unsafe_view
    return record(out._data.reshape(shape), (out,), "UnsafeViewBackward0", _unsafe_view_bw,
                  None, out._data.shape)
