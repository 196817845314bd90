"""torch's memory formats as objects: `rustgrad.contiguous_format`, `preserve_format`,
`channels_last`, `channels_last_3d`.

rustgrad's arrays are always laid out row-major by the ops that make them, so a memory format
only decides whether a call is valid (torch's type and rank checks); the values are the same in
every layout.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class memory_format:
    """A tensor memory layout, as `torch.memory_format`; compared by identity."""

    __slots__ = ("_name", "_rank")

    def __init__(self, name: str, rank: int = 0) -> None:
        self._name = name
        self._rank = rank  # the rank a channels-last format requires (0: any)

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self) -> str:
        return self._name  # pickles as the module attribute of that name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last", 4)
channels_last_3d = memory_format("channels_last_3d", 5)


def check(input: Any, fmt: Any, fn_name: str) -> None:
    """torch's checks on a `memory_format=` argument of fn_name applied to input."""
    if fmt is None:
        return
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{fn_name}(): argument 'memory_format' must be torch.memory_format, "
                        f"not {type(fmt).__name__}")
    if fmt._rank and input.dim() != fmt._rank:
        raise RuntimeError(f"required rank {fmt._rank} tensor to use {fmt._name} format")


def accepting(fn: F) -> F:
    """A `*_like` factory that also takes torch's `memory_format=` keyword."""

    @functools.wraps(fn)
    def like(input: Any, *args: Any, memory_format: Any = None, **kwargs: Any) -> Any:
        check(input, memory_format, fn.__name__)
        return fn(input, *args, **kwargs)

    return like  # type: ignore[return-value]


class layout:
    """How a tensor's elements are stored, as `torch.layout`: rustgrad has only `strided`
    (dense arrays with strides); sparse layouts do not exist here."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self) -> str:
        return self._name


strided = layout("strided")
