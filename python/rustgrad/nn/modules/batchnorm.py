"""BatchNorm1d/2d: batch statistics in train(), running statistics (buffers) in eval()."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ... import _creation, _dtype
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class _BatchNorm(Module):
    running_mean: Optional[Tensor]
    running_var: Optional[Tensor]
    num_batches_tracked: Optional[Tensor]

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(_creation.empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(_creation.empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean",
                                 _creation.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var",
                                 _creation.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 _creation.tensor(0, dtype=_dtype.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Resets ``running_mean`` to 0, ``running_var`` to 1 and ``num_batches_tracked`` to 0."""
        if self.track_running_stats:
            self.running_mean.zero_()  # type: ignore[union-attr]
            self.running_var.fill_(1)  # type: ignore[union-attr]
            self.num_batches_tracked.zero_()  # type: ignore[union-attr]

    def reset_parameters(self) -> None:
        """Resets the running statistics, the weight to 1 and the bias to 0."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        """The number of features and the options."""
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def forward(self, input: Tensor) -> Tensor:
        """Normalizes ``input`` per channel.

        In training mode (or without running statistics) it uses the batch's mean and biased
        variance and updates the running statistics; in evaluation mode it uses the running
        statistics.
        """
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            nbt = self.num_batches_tracked
            nbt._data[...] += 1
            nbt._bump_version()
            factor = 1.0 / float(nbt.item()) if self.momentum is None else self.momentum
        bn_training = True if self.training else (
            self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias,
                            bn_training, factor, self.eps)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class BatchNorm1d(_BatchNorm):
    """Applies batch normalization over a 2-D or 3-D input (Ioffe and Szegedy, 2015):
    ``y = (x - mean) / sqrt(var + eps) * weight + bias`` per channel.

    In training mode the mean and (biased) variance are those of the current batch, over all
    dimensions but the channel one, and the running statistics are updated as
    ``running = (1 - momentum) * running + momentum * batch_stat`` (with the unbiased
    variance). In evaluation mode the running statistics are used instead. Gradients flow
    through the batch statistics.

    Args:
        num_features (int): the number of channels ``C``.
        eps (float): added to the variance for numerical stability. Default: ``1e-5``.
        momentum (float or None): the weight of the current batch in the running statistics;
            None for a cumulative average. Default: ``0.1``.
        affine (bool): whether the layer has a learnable weight and bias. Default: ``True``.
        track_running_stats (bool): whether the layer keeps running statistics (buffers);
            if not, batch statistics are used in both modes. Default: ``True``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(N, C)`` or ``(N, C, L)``.
        - Output: the input's shape.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> bn = nn.BatchNorm1d(3)
        >>> bn(torch.randn(8, 3)).shape
        torch.Size([8, 3])
        >>> bn.num_batches_tracked
        tensor(1)
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Applies batch normalization over a 4-D input ``(N, C, H, W)``, per channel ``C``:
    ``y = (x - mean) / sqrt(var + eps) * weight + bias``.

    In training mode the statistics are those of the batch, over ``N``, ``H`` and ``W``, and
    the running statistics (buffers) are updated; in evaluation mode the running statistics
    are used. See :class:`BatchNorm1d` for the update rule.

    Args:
        num_features (int): the number of channels ``C``.
        eps (float): added to the variance for numerical stability. Default: ``1e-5``.
        momentum (float or None): the weight of the current batch in the running statistics;
            None for a cumulative average. Default: ``0.1``.
        affine (bool): whether the layer has a learnable weight and bias. Default: ``True``.
        track_running_stats (bool): whether the layer keeps running statistics.
            Default: ``True``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(N, C, H, W)``.
        - Output: the input's shape.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> bn = nn.BatchNorm2d(4)
        >>> x = torch.randn(2, 4, 5, 5)
        >>> bn(x).shape
        torch.Size([2, 4, 5, 5])
        >>> bn.running_mean.shape
        torch.Size([4])
        >>> _ = bn.eval()  # normalize with the running statistics from now on
        >>> bn(x).shape
        torch.Size([2, 4, 5, 5])
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Applies batch normalization over a 5-D input ``(N, C, D, H, W)``, per channel ``C``.

    See :class:`BatchNorm2d`; the statistics are over ``N``, ``D``, ``H`` and ``W``.

    Args:
        num_features (int): the number of channels ``C``.
        eps (float): added to the variance for numerical stability. Default: ``1e-5``.
        momentum (float or None): the weight of the current batch in the running statistics.
            Default: ``0.1``.
        affine (bool): whether the layer has a learnable weight and bias. Default: ``True``.
        track_running_stats (bool): whether the layer keeps running statistics.
            Default: ``True``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(N, C, D, H, W)``.
        - Output: the input's shape.
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")
