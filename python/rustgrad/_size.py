"""torch.Size: a tuple that prints as `torch.Size([2, 3])`."""

from __future__ import annotations

from typing import Tuple


class Size(Tuple[int, ...]):
    __slots__ = ()

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds (the product of the sizes).

        Example::

            >>> torch.Size([2, 3]).numel()
            6
        """
        n = 1
        for s in self:
            n *= s
        return n


def _wrap_dim(dim: int, ndim: int) -> int:
    """dim as a non-negative index into ndim dims (a 0-d tensor takes dims 0 and -1), or torch's
    IndexError."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim + n if dim < 0 else dim
