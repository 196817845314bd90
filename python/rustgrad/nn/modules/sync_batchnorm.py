"""SyncBatchNorm: batch normalization over the batch of every rank of a process group."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..._tensor import Tensor
from .. import functional as F
from ._functions import SyncBatchNorm as _SyncBatchNormFunction
from ._functions import _dist
from .batchnorm import _BatchNorm
from .instancenorm import _InstanceNorm
from .module import Module

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose training statistics are those of the whole batch across the
    ranks of a process group (``rustgrad.distributed``), for inputs of any dimension ``(N, C,
    *)``.

    In training mode, with the default process group initialised and more than one rank in
    ``process_group`` (default: the whole world), each channel's mean and variance are computed
    over the batches of every rank, the running statistics are updated with them, and the input
    gradient is that of the global batch; the weight and bias gradients are each rank's own
    share (DistributedDataParallel averages them). The input must then be on a GPU, as torch's.
    Otherwise (evaluation mode, no process group, or a world of one) it is
    :class:`BatchNorm1d`/``2d``/``3d`` on the local batch.

    Args:
        num_features (int): the number of channels ``C``.
        eps (float): added to the variance for numerical stability. Default: ``1e-5``.
        momentum (float or None): the weight of the current batch in the running statistics;
            None for a cumulative average. Default: ``0.1``.
        affine (bool): whether the layer has a learnable weight and bias. Default: ``True``.
        track_running_stats (bool): whether the layer keeps running statistics.
            Default: ``True``.
        process_group (ProcessGroup, optional): the ranks whose batches are pooled; the
            default group when None.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.
        bias (bool): whether the affine transform has a bias. Default: ``True``.

    Shape:
        - Input: ``(N, C, *)``.
        - Output: the input's shape.

    Example::

        >>> bn = nn.SyncBatchNorm(3)
        >>> bn(torch.randn(4, 3, 2)).shape  # no process group: a local BatchNorm
        torch.Size([4, 3, 2])
        >>> net = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm2d(4)))
        >>> net
        Sequential(
          (0): SyncBatchNorm(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
        )
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input: Tensor) -> None:
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input: Tensor) -> Tensor:
        """Normalizes ``input`` per channel with the statistics of the global batch (training,
        several ranks) or as a local BatchNorm."""
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            nbt = self.num_batches_tracked
            if nbt is None:
                raise AssertionError("num_batches_tracked must not be None")
            nbt.add_(1)
            factor = 1.0 / float(nbt.item()) if self.momentum is None else self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        running_mean = self.running_mean if use_stats else None
        running_var = self.running_var if use_stats else None

        world_size = 1
        group = None
        if bn_training and self.training and _dist().is_initialized():
            if input.device.type != "cuda":
                raise ValueError(
                    "SyncBatchNorm expected input tensor to be on GPU or XPU or privateuseone"
                )
            group = self.process_group if self.process_group else _dist().group.WORLD
            world_size = _dist().get_world_size(group)
        if world_size <= 1:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias,
                                bn_training, factor, self.eps)
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean,
                                            running_var, self.eps, factor, group, world_size)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """Returns ``module`` with every BatchNorm layer in it (itself included) replaced by a
        :class:`SyncBatchNorm` sharing its parameters and running statistics (and train mode).

        Args:
            module (Module): a module holding BatchNorm layers.
            process_group (ProcessGroup, optional): the group the new layers synchronize over;
                the default group when None.

        Returns:
            the module itself, or the new SyncBatchNorm when ``module`` is a BatchNorm.
        """
        converted = module
        # rustgrad's InstanceNorm layers derive from _BatchNorm; torch's do not, and stay
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group,
                            bias=module.bias is not None)
            if module.affine:
                converted.weight = module.weight
                converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
            if hasattr(module, "qconfig"):
                converted.qconfig = module.qconfig
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
