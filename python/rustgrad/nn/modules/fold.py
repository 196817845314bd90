"""Fold and Unfold: sliding blocks to columns and back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """Sums columns of sliding blocks ``(N, C * prod(kernel_size), L)`` back into an image of
    ``output_size`` (the adjoint of :class:`Unfold`).

    Args:
        output_size (int or tuple): the image's spatial size.
        kernel_size (int or tuple): the blocks' size.
        dilation (int or tuple): the spacing of a block's entries. Default: ``1``.
        padding (int or tuple): implicit zero padding on each side. Default: ``0``.
        stride (int or tuple): the step between blocks. Default: ``1``.

    Example::

        >>> nn.Fold(2, 1)(torch.arange(4.).view(1, 1, 4))
        tensor([[[[0., 1.],
                  [2., 3.]]]])
    """

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``fold(input, output_size, kernel_size, dilation, padding, stride)``."""
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The image size and the blocks' geometry."""
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extracts sliding blocks of ``(N, C, H, W)`` input as columns
    ``(N, C * prod(kernel_size), L)``.

    Args:
        kernel_size (int or tuple): the blocks' size.
        dilation (int or tuple): the spacing of a block's entries. Default: ``1``.
        padding (int or tuple): implicit zero padding on each side. Default: ``0``.
        stride (int or tuple): the step between blocks. Default: ``1``.

    Example::

        >>> nn.Unfold(1)(torch.arange(4.).view(1, 1, 2, 2))
        tensor([[[0., 1., 2., 3.]]])
    """

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``unfold(input, kernel_size, dilation, padding, stride)``."""
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The blocks' geometry."""
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
