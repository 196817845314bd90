"""InstanceNorm1d, 2d and 3d: per-sample, per-channel normalization."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ..._tensor import Tensor
from .. import functional as F
from .batchnorm import _BatchNorm

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_BatchNorm):
    _no_batch_dim = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: object = None,
                 dtype: object = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def _check_input_dim(self, input: Tensor) -> None:
        n = self._no_batch_dim
        if input.dim() not in (n, n + 1):
            raise ValueError(f"expected {n}D or {n + 1}D input (got {input.dim()}D input)")

    def _apply_instance_norm(self, input: Tensor) -> Tensor:
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                               self.bias, self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You "
                          "can silence this warning by not passing in num_features, which is "
                          "not used because affine=False", stacklevel=2)
        if input.dim() == self._no_batch_dim:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class InstanceNorm1d(_InstanceNorm):
    """Normalizes each channel of each (N, C, L) sample over L."""

    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Normalizes each channel of each (N, C, H, W) sample over H and W."""

    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Normalizes each channel of each (N, C, D, H, W) sample over D, H and W."""

    _no_batch_dim = 4
