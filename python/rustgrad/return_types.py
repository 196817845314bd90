"""torch.return_types: the named (values, indices) tuples of max, min, sort and topk, with
torch's names and repr."""

from __future__ import annotations

from typing import Any, NamedTuple


class _ValuesIndices(NamedTuple):
    values: Any
    indices: Any


def _make(name: str) -> type:
    def __repr__(self: Any) -> str:
        return f"torch.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"

    return type(name, (_ValuesIndices,), {"__slots__": (), "__repr__": __repr__,
                                          "__module__": __name__, "__qualname__": name})


max = _make("max")
min = _make("min")
sort = _make("sort")
topk = _make("topk")

__all__ = ["max", "min", "sort", "topk"]
