"""Upsample, UpsamplingNearest2d and UpsamplingBilinear2d: F.interpolate as layers, as torch's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Resamples a 1-D, 2-D or 3-D (multi-channel) input to ``size`` or by ``scale_factor``.

    Args:
        size (int or tuple, optional): the output's spatial size.
        scale_factor (float or tuple, optional): the multiplier of the spatial size (give
            ``size`` or ``scale_factor``, not both).
        mode (str): ``'nearest'``, ``'linear'``, ``'bilinear'``, ``'bicubic'`` or
            ``'trilinear'``. Default: ``'nearest'``.
        align_corners (bool, optional): for the linear modes, align the corner pixels of input
            and output instead of their edges.
        recompute_scale_factor (bool, optional): compute the interpolation from the output
            size rather than from ``scale_factor``.

    Shape:
        - Input: ``(N, C, W_in)``, ``(N, C, H_in, W_in)`` or ``(N, C, D_in, H_in, W_in)``.
        - Output: ``(N, C, W_out)``, ``(N, C, H_out, W_out)`` or
          ``(N, C, D_out, H_out, W_out)``.

    Example::

        >>> up = nn.Upsample(scale_factor=2, mode="nearest")
        >>> up(torch.tensor([[[[1.0, 2.0]]]]))
        tensor([[[[1., 1., 2., 2.],
                  [1., 1., 2., 2.]]]])
    """

    def __init__(self, size: Optional[Any] = None, scale_factor: Optional[Any] = None,
                 mode: str = "nearest", align_corners: Optional[bool] = None,
                 recompute_scale_factor: Optional[bool] = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        # torch keeps factors as floats (a 0 or None factor as None)
        if isinstance(scale_factor, tuple):
            self.scale_factor: Any = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Resamples ``input`` with ``F.interpolate`` and this layer's settings."""
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def __setstate__(self, state: Dict[str, Any]) -> None:
        # layers pickled before recompute_scale_factor existed recomputed the scale
        state.setdefault("recompute_scale_factor", True)
        super().__setstate__(state)

    def extra_repr(self) -> str:
        """The scale factor (or size) and the mode."""
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample with mode='nearest' (4-D input)."""

    def __init__(self, size: Optional[Any] = None, scale_factor: Optional[Any] = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample with mode='bilinear', align_corners=True (4-D input)."""

    def __init__(self, size: Optional[Any] = None, scale_factor: Optional[Any] = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
