"""torch.Size: a tuple that prints as `torch.Size([2, 3])`."""

from __future__ import annotations


class Size(tuple):
    __slots__ = ()

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n
