"""Dropout and Dropout2d: active in train(), the identity in eval()."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        """``p`` and ``inplace``."""
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """During training, zeroes each element of the input with probability ``p`` and scales the
    others by ``1 / (1 - p)``, so the expected value is unchanged; in evaluation mode it is
    the identity.

    The elements are drawn from rustgrad's generator (``rustgrad.manual_seed``). The gradient
    is masked and scaled the same way.

    Args:
        p (float): the probability of zeroing an element. Default: ``0.5``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Output: ``(*)``, the shape of the input.

    Example::

        >>> m = nn.Dropout(p=0.5)
        >>> x = torch.ones(2, 3)
        >>> _ = m.eval()
        >>> m(x)
        tensor([[1., 1., 1.],
                [1., 1., 1.]])
        >>> _ = m.train()
        >>> _ = rustgrad.manual_seed(0)
        >>> sorted(set(m(x).flatten().tolist()) - {0.0, 2.0})
        []
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies dropout to ``input`` in training mode; returns it unchanged in evaluation mode.
        """
        return F.dropout(input, self.p, self.training, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Dropout2d(_DropoutNd):
    """During training, zeroes whole channels of a 2-D input with probability ``p`` (scaling the
    others by ``1 / (1 - p)``); in evaluation mode it is the identity.

    Args:
        p (float): the probability of zeroing a channel. Default: ``0.5``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``.
        - Output: the input's shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies channel dropout to ``input`` in training mode; the identity in evaluation mode.
        """
        return F.dropout2d(input, self.p, self.training, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Dropout1d(_DropoutNd):
    """During training, zeroes whole channels of a 1-D input with probability ``p`` (scaling the
    others by ``1 / (1 - p)``); in evaluation mode it is the identity.

    Args:
        p (float): the probability of zeroing a channel. Default: ``0.5``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(N, C, L)`` or ``(C, L)``.
        - Output: the input's shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies channel dropout to ``input`` in training mode; the identity in evaluation mode.
        """
        x = input.unsqueeze(-1)
        return F.dropout2d(x, self.p, self.training, False).squeeze(-1)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward
