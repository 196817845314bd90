"""PixelShuffle and PixelUnshuffle: channel blocks to spatial blocks and back."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle"]


class PixelShuffle(Module):
    """Rearranges ``(*, C * r^2, H, W)`` into ``(*, C, H * r, W * r)``: each group of ``r^2``
    channels becomes an ``r x r`` block of pixels (Shi et al., 2016).

    Args:
        upscale_factor (int): the factor ``r``.

    Shape:
        - Input: ``(*, C * r^2, H, W)``.
        - Output: ``(*, C, H * r, W * r)``.

    Example::

        >>> nn.PixelShuffle(2)(torch.ones(1, 8, 3, 3)).shape
        torch.Size([1, 2, 6, 6])
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Moves blocks of channels of ``input`` into space."""
        return F.pixel_shuffle(input, self.upscale_factor)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The upscale factor."""
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """The reverse of :class:`PixelShuffle`: rearranges ``(*, C, H * r, W * r)`` into
    ``(*, C * r^2, H, W)``.

    Args:
        downscale_factor (int): the factor ``r``.

    Shape:
        - Input: ``(*, C, H * r, W * r)``.
        - Output: ``(*, C * r^2, H, W)``.
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Moves ``r x r`` blocks of pixels of ``input`` into channels."""
        return F.pixel_unshuffle(input, self.downscale_factor)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The downscale factor."""
        return f"downscale_factor={self.downscale_factor}"
