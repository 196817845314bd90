"""The affine map of nn.Linear, `linear(input, weight, bias) = input @ weight.T + bias`, with
torch's graph: addmm(bias, input, weight.t()) (AddmmBackward0) or mm (MmBackward0) for 2-D
input, the batch dims folded in and out by views otherwise."""

from __future__ import annotations

from typing import Optional, Tuple

from .._tensor import Tensor
from ._declare import op
from .linalg import UNSAFE_VIEW_RESHAPE, addmm, mm


@op(functional="linear", grad_fn=("AddmmBackward0", "MmBackward0", "UnsafeViewBackward0"),
    autocast=dict(cuda="lower", cpu="lower"))
def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """input @ weight.T + bias."""
    xd = input._data
    if xd.ndim == 2:
        return mm(input, weight.t()) if bias is None else addmm(bias, input, weight.t())
    if xd.ndim == 1:
        if bias is not None:
            return _unsafe_view(linear(input.view(1, -1), weight, bias), (-1,))
        return linear(input.unsqueeze(0), weight, bias).squeeze(0)
    lead = xd.shape[:-1]
    out = linear(input.reshape(-1, xd.shape[-1]), weight, bias)
    # torch folds the batch dims into an mm (addmm with a bias: _unsafe_view since 2.15)
    return _unsafe_view(out, lead + (out._data.shape[-1],))


def _unsafe_view(out: Tensor, shape: Tuple[int, ...]) -> Tensor:
    return UNSAFE_VIEW_RESHAPE.record(out._data.reshape(shape), (out,), out._data.shape)
