"""Dropout, Dropout1d/2d/3d, AlphaDropout, FeatureAlphaDropout: active in train(), the identity
in eval()."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


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
        return F.dropout1d(input, self.p, self.training, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Dropout3d(_DropoutNd):
    """During training, zeroes whole channels of a 3-D input with probability ``p`` (scaling the
    others by ``1 / (1 - p)``); in evaluation mode it is the identity.

    Args:
        p (float): the probability of zeroing a channel. Default: ``0.5``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        - Output: the input's shape.

    Example::

        >>> nn.Dropout3d(0.2)
        Dropout3d(p=0.2, inplace=False)
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies channel dropout to ``input`` in training mode; the identity in evaluation mode.
        """
        return F.dropout3d(input, self.p, self.training, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: during training, dropped entries take SELU's negative
    saturation value and an affine map keeps the mean and variance; the identity in
    evaluation mode.

    Args:
        p (float): the probability of dropping an entry. Default: ``0.5``.
        inplace (bool): write the result into the input. Default: ``False``.

    Example::

        >>> nn.AlphaDropout(0.2).eval()(torch.ones(2))
        tensor([1., 1.])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies alpha dropout in training mode; the identity in evaluation mode."""
        return F.alpha_dropout(input, self.p, self.training, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels of ``(N, C, *)`` input during training; the identity in
    evaluation mode.

    Args:
        p (float): the probability of dropping a channel. Default: ``0.5``.
        inplace (bool): write the result into the input. Default: ``False``.

    Example::

        >>> nn.FeatureAlphaDropout(0.2)
        FeatureAlphaDropout(p=0.2, inplace=False)
    """

    def forward(self, input: Tensor) -> Tensor:
        """Applies feature alpha dropout in training mode; the identity in evaluation mode."""
        return F.feature_alpha_dropout(input, self.p, self.training, self.inplace)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward
