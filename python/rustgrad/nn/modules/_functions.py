"""The autograd Function behind SyncBatchNorm across processes (torch's
``torch.nn.modules._functions.SyncBatchNorm``; its node is ``SyncBatchNormBackward``).

Forward: each rank's per-channel mean, biased variance and element count are gathered from every
rank of the group and pooled into the statistics of the whole global batch (ranks with no
elements count for nothing); the running statistics are updated with them as one BatchNorm over
the global batch would, and the local input is normalized with them.

Backward: the per-channel sums of ``dy`` and ``dy * (x - mean)`` are summed over the ranks, so the
input gradient is that of the global batch; the weight and bias gradients stay local (their sum
over the ranks is the global one, as DistributedDataParallel's averaging expects).
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ... import _creation
from ..._ops.joins import cat, stack
from ..._tensor import Tensor
from ...autograd.function import Function

__all__ = ["SyncBatchNorm"]


def _dist() -> Any:
    from ... import distributed  # import-time cost: `import rustgrad.nn` defers the package

    return distributed


def _reduce_dims(x: Tensor) -> List[int]:
    return [0, *range(2, x.dim())]


def _per_channel(v: Tensor, x: Tensor) -> Tensor:
    """A (C,) tensor shaped to broadcast over (N, C, *) input."""
    return v.view(1, -1, *([1] * (x.dim() - 2)))


class SyncBatchNorm(Function):
    """Batch normalization whose statistics are those of the batch over every rank."""

    @staticmethod
    def forward(ctx: Any, input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                running_mean: Optional[Tensor], running_var: Optional[Tensor], eps: float,
                momentum: float, process_group: Any, world_size: int) -> Tensor:
        x = input.contiguous()
        channels = x.size(1)
        count = x.numel() // channels if channels else 0
        if count == 1 and world_size < 2:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {count}")
        dims = _reduce_dims(x)
        if x.numel() > 0:
            local = cat([x.mean(dims), x.var(dims, correction=0),
                                   _creation.full((1,), float(count), dtype=x.dtype,
                                                  device=x.device)])
        else:
            local = _creation.zeros(2 * channels + 1, dtype=x.dtype, device=x.device)
        rows = [_creation.empty_like(local) for _ in range(world_size)]
        _dist().all_gather(rows, local, process_group)
        table = stack(rows)
        table = table[table[:, 2 * channels] >= 1]  # ranks with an empty batch count for nothing
        means, variances = table[:, :channels], table[:, channels:2 * channels]
        counts = table[:, 2 * channels:]
        total = float(counts.sum().item())
        mean = (means * counts).sum(0) / total
        var = ((variances + (means - mean) ** 2) * counts).sum(0) / total
        invstd = (var + eps).rsqrt()
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
        if running_var is not None:
            unbiased = var * (total / (total - 1)) if total > 1 else var
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
        ctx.save_for_backward(x, weight, mean, invstd)
        ctx.total = total
        ctx.process_group = process_group
        if x.numel() == 0:
            return _creation.empty_like(x)
        out = (x - _per_channel(mean, x)) * _per_channel(invstd, x)
        if weight is not None:
            out = out * _per_channel(weight, x)
        if bias is not None:
            out = out + _per_channel(bias, x)
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> Tuple[Optional[Tensor], ...]:
        x, weight, mean, invstd = ctx.saved_tensors
        g = grad_output.contiguous()
        channels = x.size(1)
        need_input, need_weight, need_bias = ctx.needs_input_grad[:3]
        grad_input = grad_weight = grad_bias = None
        if x.numel() > 0:
            dims = _reduce_dims(x)
            centered = x - _per_channel(mean, x)
            sum_dy = g.sum(dims)
            sum_dy_xmu = (g * centered).sum(dims)
            if weight is not None and need_weight:
                grad_weight = sum_dy_xmu * invstd
            if weight is not None and need_bias:
                grad_bias = sum_dy
            if need_input:
                both = cat([sum_dy, sum_dy_xmu])
                _dist().all_reduce(both, _dist().ReduceOp.SUM, ctx.process_group)
                mean_dy = both[:channels] / ctx.total
                mean_dy_xmu = both[channels:] / ctx.total
                scale = invstd if weight is None else invstd * weight.to(invstd.dtype)
                grad_input = (g - _per_channel(mean_dy, x)
                              - centered * _per_channel(invstd * invstd * mean_dy_xmu, x)) \
                    * _per_channel(scale, x)
        elif need_input:  # still take part in the other ranks' reduction
            _dist().all_reduce(_creation.zeros(2 * channels, dtype=x.dtype, device=x.device),
                               _dist().ReduceOp.SUM, ctx.process_group)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None
