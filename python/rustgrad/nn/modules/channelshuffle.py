"""ChannelShuffle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Regroups the channels of ``(N, C, *)`` input: split into ``groups`` groups, channel
    ``j`` of group ``i`` moves to position ``j * groups + i``.

    Args:
        groups (int): the number of groups; must divide the channel count.

    Example::

        >>> nn.ChannelShuffle(2)(torch.arange(4.).view(1, 4, 1)).flatten()
        tensor([0., 2., 1., 3.])
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``channel_shuffle(input, groups)``."""
        return F.channel_shuffle(input, self.groups)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The number of groups."""
        return f"groups={self.groups}"
