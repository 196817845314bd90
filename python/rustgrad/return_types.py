"""torch.return_types: the named (values, indices) tuples of max, min, sort and topk, with
torch's names and repr.

Each is a NamedTuple: it unpacks as ``values, indices = ...``, indexes as ``[0]``/``[1]`` and
has the fields ``.values`` and ``.indices``.

Example::

    >>> result = torch.tensor([3.0, 1.0, 2.0]).sort()
    >>> result
    torch.return_types.sort(
    values=tensor([1., 2., 3.]),
    indices=tensor([1, 2, 0]))
    >>> values, indices = result
    >>> isinstance(result, torch.return_types.sort), indices is result.indices
    (True, True)
"""

from __future__ import annotations

from typing import Any, NamedTuple


class _ValuesIndices(NamedTuple):
    values: Any
    indices: Any


def _make(name: str) -> type:
    along = " along a dim" if name in ("max", "min") else ""
    doc = f"What ``{name}`` returns{along}: the named tuple (values, indices)."

    def __repr__(self: Any) -> str:
        return f"torch.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"

    return type(name, (_ValuesIndices,), {"__slots__": (), "__repr__": __repr__,
                                          "__module__": __name__, "__qualname__": name,
                                          "__doc__": doc})


max = _make("max")
min = _make("min")
sort = _make("sort")
topk = _make("topk")

__all__ = ["max", "min", "sort", "topk"]
