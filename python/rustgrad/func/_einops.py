"""torch.func.rearrange: einops' rearrange patterns ("b c (h w) -> b h w c"), as a reshape to
the elementary axes, a permutation and a reshape to the output's groups.

The pattern language: axis names (Python identifiers not starting or ending with ``_``),
parenthesized groups of them (a dimension that is their product, one level deep), ``1`` or
``()`` for a dimension of size 1, and one ``...`` for the dimensions the pattern does not name.
Sizes of split axes come from ``axes_lengths`` or are inferred (one unknown per group). The
errors are torch's, in torch's order; a size mismatch raises ``DimensionBindError`` with
torch's message, its first-class dimensions named ``d0``, ``d1``, ... in left-side order.
"""

from __future__ import annotations

import functools
import keyword
import warnings
from typing import Any, Dict, List, Sequence, Tuple, Union

from .._ops.joins import stack
from .._tensor import Tensor

__all__ = ["rearrange"]

_ELLIPSIS = "\u2026"  # "..." once parsed: one character, never an axis name


class DimensionBindError(Exception):
    """A dimension's size does not fit the pattern (torch's functorch.dim.DimensionBindError)."""


class _Side:
    """One side of a pattern: `items` is the top-level sequence, each either _ELLIPSIS or a list
    of axis names (a group; a bare name is a group of one; ``1`` or ``()`` is an empty group),
    `names` the set of names (with _ELLIPSIS when there is one)."""

    def __init__(self, text: str) -> None:
        self.items: List[Union[str, List[str]]] = []
        self.names: set = set()
        self.has_ellipsis = False
        self.ellipsis_in_group = False
        self.anonymous = False  # a number > 1 stands for an axis (rearrange refuses it)
        if "." in text:
            if "..." not in text:
                raise ValueError("Expression may contain dots only inside ellipsis (...)")
            if text.count("...") != 1 or text.count(".") != 3:
                raise ValueError("Expression may contain dots only inside ellipsis (...); only "
                                 "one ellipsis for tensor ")
            text = text.replace("...", _ELLIPSIS)
            self.has_ellipsis = True
        group: Any = None
        word = ""
        for ch in text + " ":
            if ch.isalnum() or ch in ("_", _ELLIPSIS):
                word += ch
                continue
            if ch not in "() ":
                raise ValueError(f"Unknown character '{ch}'")
            if word:
                self._axis(word, group)
                word = ""
            if ch == "(":
                if group is not None:
                    raise ValueError("Axis composition is one-level (brackets inside brackets "
                                     "not allowed)")
                group = []
            elif ch == ")":
                if group is None:
                    raise ValueError("Brackets are not balanced")
                self.items.append(group)
                group = None
        if group is not None:
            raise ValueError(f"Imbalanced parentheses in expression: '{text}'")

    def _axis(self, word: str, group: Any) -> None:
        if word in self.names:
            raise ValueError(f"Indexing expression contains duplicate dimension '{word}'")
        if word == _ELLIPSIS:
            self.names.add(word)
            if group is None:
                self.items.append(word)
            else:
                group.append(word)
                self.ellipsis_in_group = True
            return
        if word.isdecimal():
            value = int(word)
            if value == 1:  # a unit axis: a dimension of size 1 (nothing inside a group)
                if group is None:
                    self.items.append([])
                return
            if value < 1:
                raise ValueError(f"Anonymous axis should have positive length, not {value}")
            self.anonymous = True
            word = f"#{len(self.names)}"  # a name of its own, never matching the other side's
        elif not word.isidentifier():
            raise ValueError(f"Invalid axis identifier: {word}\nnot a valid python identifier")
        elif word[0] == "_" or word[-1] == "_":
            raise ValueError(f"Invalid axis identifier: {word}\naxis name should should not "
                             "start or end with underscore")
        elif keyword.iskeyword(word):
            warnings.warn(f"It is discouraged to use axes names that are keywords: {word}",
                          RuntimeWarning, stacklevel=6)
        elif word == "axis":
            warnings.warn("It is discouraged to use 'axis' as an axis name and will raise an "
                          "error in future", FutureWarning, stacklevel=6)
        self.names.add(word)
        (self.items if group is None else group).append(word if group is not None else [word])


@functools.lru_cache(256)
def _parse(pattern: str, length_names: Tuple[str, ...]) -> Tuple[_Side, _Side]:
    parts = pattern.split("->")
    if len(parts) != 2:
        raise ValueError("Pattern must contain a single '->' separator")
    if _ELLIPSIS in length_names:
        raise ValueError(f"'{_ELLIPSIS}' is not an allowed axis identifier")
    left, right = _Side(parts[0]), _Side(parts[1])
    if right.has_ellipsis and not left.has_ellipsis:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern {pattern}")
    if left.ellipsis_in_group:
        raise ValueError(f"Ellipsis is parenthesis in the left side is not allowed: {pattern}")
    return left, right


def _pack_name(dims: Sequence[str]) -> str:
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def rearrange(tensor: Union[Tensor, List[Tensor], Tuple[Tensor, ...]], pattern: str,
              **axes_lengths: int) -> Tensor:
    """Reorders, splits, merges, adds and removes dimensions as an einops pattern says.

    ``"b h w c -> b c h w"`` permutes, ``"b c h w -> b (c h w)"`` flattens, ``"(h1 h) w ->
    h1 h w"`` splits (with ``h1=2``), ``"... c -> c ..."`` moves the last dimension first, and
    ``"a b -> a 1 b"`` adds a dimension of size 1. A list or tuple of tensors is stacked first
    (a new leading dimension). The result is a view of ``tensor`` where a reshape allows.

    Args:
        tensor (Tensor or sequence of Tensor): the tensor(s) to rearrange.
        pattern (str): ``"<input dims> -> <output dims>"``.
        **axes_lengths (int): the sizes of axes a split cannot infer.

    Example::

        >>> from rustgrad.func import rearrange
        >>> x = torch.arange(6).reshape(2, 3)
        >>> rearrange(x, "a b -> b a")
        tensor([[0, 3],
                [1, 4],
                [2, 5]])
        >>> rearrange(x, "a (b c) -> (a b) c", c=1).shape
        torch.Size([6, 1])
    """
    if not isinstance(tensor, Tensor):
        if not isinstance(tensor, (list, tuple)):
            raise TypeError("stack(): argument 'tensors' (position 1) must be tuple of Tensors, "
                            f"not {type(tensor).__name__}")
        tensor = stack(list(tensor))
    left, right = _parse(pattern, tuple(axes_lengths))
    for length in axes_lengths.values():
        if type(length) is not int:
            raise TypeError(f"rearrange axis lengths must be integers, got: {type(length)}")
    if left.anonymous or right.anonymous:
        raise ValueError("rearrange only supports unnamed axes of size 1")
    difference = left.names ^ right.names
    if difference:
        raise ValueError("Identifiers only on one side of rearrange expression (should be on "
                         f"both): {difference}")
    unmatched = set(axes_lengths) - left.names
    if unmatched:
        raise ValueError(f"Identifiers not found in rearrange expression: {unmatched}")

    ndim = tensor.dim()
    n_units = sum(1 for item in left.items if item == [])
    if left.has_ellipsis:
        n_ellipsis = ndim - (len(left.items) - 1)
        wanted = n_units + len(left.names) - 1
        if wanted > ndim:
            raise ValueError(f"Number of dimensions in pattern ({wanted}) must be less than or "
                             f"equal to the number of dimensions in the tensor ({ndim})")
    else:
        n_ellipsis = 0
        if len(left.items) != ndim:
            raise ValueError(f"Number of dimensions in pattern ({len(left.items)}) must be "
                             f"equal to the number of dimensions in the tensor ({ndim})")
    if n_units + len(left.names) - left.has_ellipsis + n_ellipsis == 0:
        return tensor  # nothing named: torch returns the tensor as it is

    # the elementary axes, in left-side order: their first-class names d0, d1, ... and sizes
    sizes: List[int] = []
    where: Dict[str, List[int]] = {}  # axis name -> its elementary positions
    units: List[int] = []
    for item, size in zip(_expand(left.items, n_ellipsis), tensor.shape):
        if item == _ELLIPSIS:
            where.setdefault(_ELLIPSIS, []).append(len(sizes))
            sizes.append(size)
            continue
        if not item:  # a unit axis: bound to the dimension's size, summed over (as torch)
            units.append(len(sizes))
            sizes.append(size)
            continue
        first = len(sizes)
        names = [f"d{first + k}" for k in range(len(item))]
        given = [axes_lengths.get(name, -1) for name in item]
        unknown = [k for k, g in enumerate(given) if g < 0]
        if len(unknown) > 1:
            raise DimensionBindError("cannot infer the sizes of two dimensions at once "
                                     f"{names[unknown[0]]} and {names[unknown[1]]}")
        known = 1
        for g in given:
            known *= g if g >= 0 else 1
        if unknown:
            if size % known != 0:
                shown = tuple("?" if g < 0 else g for g in given)
                raise DimensionBindError("inferred dimension does not evenly fit into larger "
                                         f"dimension: {size} vs {shown}")
            given[unknown[0]] = size // known
        elif known != size:
            raise DimensionBindError(f"Dimension sizes to do not match ({size} != {known}) when "
                                     f"matching dimension pack {_pack_name(names)}")
        for name, g in zip(item, given):
            where[name] = [len(sizes)]
            sizes.append(g)

    order: List[int] = []
    shape: List[int] = []
    for item in right.items:
        axes = where.get(_ELLIPSIS, []) if item == _ELLIPSIS else \
            [i for name in item for i in where.get(name, [])]
        order.extend(axes)
        if item == _ELLIPSIS:
            shape.extend(sizes[i] for i in axes)
        else:
            n = 1
            for i in axes:
                n *= sizes[i]
            shape.append(n)
    out = tensor.reshape(sizes)
    order += units  # unit axes last, then summed over (torch's order, then its sum)
    if order != sorted(order):
        out = out.permute(order)
    if units:
        # a reduction's result is a new row-major tensor in torch (so views of it work)
        out = out.sum(dim=list(range(len(order) - len(units), len(order)))).contiguous()
    return out.reshape(shape)


def _expand(items: Sequence[Any], n_ellipsis: int) -> List[Any]:
    """The left side's items with the ellipsis repeated once per dimension it stands for."""
    out: List[Any] = []
    for item in items:
        out.extend([item] * n_ellipsis if item == _ELLIPSIS else [item])
    return out
