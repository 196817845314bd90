"""Flatten and Unflatten."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..._tensor import Tensor
from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flattens the dimensions ``start_dim`` to ``end_dim`` of the input into one (a view where
    possible).

    Args:
        start_dim (int): the first dimension to flatten. Default: ``1`` (keeps the batch).
        end_dim (int): the last dimension to flatten. Default: ``-1``.

    Shape:
        - Input: ``(*, S_start, ..., S_end, *)``.
        - Output: ``(*, S_start * ... * S_end, *)``.

    Example::

        >>> nn.Flatten()(torch.ones(2, 3, 4)).shape
        torch.Size([2, 12])
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``input.flatten(start_dim, end_dim)``."""
        return input.flatten(self.start_dim, self.end_dim)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """``start_dim`` and ``end_dim``."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits the dimension ``dim`` of the input into the shape ``unflattened_size``.

    Args:
        dim (int): the dimension to split.
        unflattened_size (sequence of int): the new dimensions; their product is the size of
            ``dim`` (one may be -1).

    Shape:
        - Input: ``(*, S_dim, *)``.
        - Output: ``(*, U_1, ..., U_n, *)``.

    Example::

        >>> nn.Unflatten(1, (2, 2))(torch.ones(3, 4)).shape
        torch.Size([3, 2, 2])
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size) if isinstance(unflattened_size, list) \
            else unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``input.unflatten(dim, unflattened_size)``."""
        return input.unflatten(self.dim, self.unflattened_size)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """``dim`` and ``unflattened_size``."""
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
