"""torch.Size: a tuple that prints as `torch.Size([2, 3])`."""

from __future__ import annotations


class Size(tuple):
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
