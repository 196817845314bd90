"""Padding layers over F.pad: constant (and zero), reflection, replication and circular,
1d/2d/3d."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence, Tuple, Union

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


def _pads(padding: Union[int, Sequence[int]], n: int) -> Tuple[int, ...]:
    """An int pads every side; else the (left, right[, top, bottom]) tuple as given."""
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    return tuple(padding)


class _PadNd(Module):
    _n = 1
    _mode = "constant"

    def __init__(self, padding: Union[int, Sequence[int]]) -> None:
        super().__init__()
        self.padding = _pads(padding, self._n)

    def forward(self, input: Tensor) -> Tensor:
        """Pads ``input`` by ``self.padding`` with this layer's mode."""
        return F.pad(input, self.padding, self._mode)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The padding."""
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: Union[int, Sequence[int]], value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        """Pads ``input`` by ``self.padding`` with ``self.value``."""
        return F.pad(input, self.padding, "constant", self.value)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The padding and the value."""
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with a constant value."""

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims with a constant value."""

    _n = 2


class ZeroPad1d(ConstantPad1d):
    """Pads the last dimension of the input with zeros.

    Args:
        padding (int or tuple): the same amount on both sides, or ``(left, right)``.

    Shape:
        - Input: ``(C, W_in)`` or ``(N, C, W_in)``.
        - Output: the same with ``W_out = W_in + left + right``.

    Example::

        >>> nn.ZeroPad1d((1, 2))(torch.ones(1, 2))
        tensor([[0., 1., 1., 0., 0.]])
    """

    def __init__(self, padding: Union[int, Sequence[int]]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        """The padding."""
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last two dimensions of the input with zeros.

    Args:
        padding (int or tuple): the same amount on all sides, or
            ``(left, right, top, bottom)``.

    Shape:
        - Input: ``(C, H_in, W_in)`` or ``(N, C, H_in, W_in)``.
        - Output: the same with ``H_out = H_in + top + bottom`` and
          ``W_out = W_in + left + right``.
    """

    def __init__(self, padding: Union[int, Sequence[int]]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        """The padding."""
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pads the last dim with its reflection (the edge not repeated)."""

    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pads the last two dims with their reflection."""

    _n, _mode = 2, "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last dim by repeating its edge values."""

    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pads the last two dims by repeating their edge values."""

    _n, _mode = 2, "replicate"


class CircularPad1d(_PadNd):
    """Pads the last dim by wrapping around."""

    _n, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Pads the last two dims by wrapping around."""

    _n, _mode = 2, "circular"




class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dims with a constant value."""

    _n = 3


class ZeroPad3d(ConstantPad3d):
    """Pads the last three dimensions of the input with zeros.

    Args:
        padding (int or tuple): the same amount on all sides, or
            ``(left, right, top, bottom, front, back)``.

    Shape:
        - Input: ``(C, D_in, H_in, W_in)`` or ``(N, C, D_in, H_in, W_in)``.
        - Output: the same with each padded dimension grown by its two amounts.
    """

    def __init__(self, padding: Union[int, Sequence[int]]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        """The padding."""
        return f"{self.padding}"


class ReflectionPad3d(_PadNd):
    """Pads the last three dims with their reflection."""

    _n, _mode = 3, "reflect"


class ReplicationPad3d(_PadNd):
    """Pads the last three dims by repeating their edge values."""

    _n, _mode = 3, "replicate"


class CircularPad3d(_PadNd):
    """Pads the last three dims by wrapping around."""

    _n, _mode = 3, "circular"
