"""torch's complex-number API on real tensors (rustgrad has no complex dtypes): conj,
conj_physical(_), resolve_conj, resolve_neg, is_conj, is_neg, real and imag.

On a real tensor torch's conj, conj_physical, resolve_conj, resolve_neg and real return the
tensor itself (the same object, not a view); is_conj and is_neg are False; imag is an error.
conj_physical_ writes nothing new but is an in-place op all the same: the version moves and,
with autograd, self's history gains ConjPhysicalBackward1, as torch's."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ._declare import op
from ._node import node
from .copyslices import inplace_from


def _tensor_arg(x: Any, name: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


@op(method="conj", function="conj")
def conj(input: Tensor) -> Tensor:
    """The complex conjugate of input: input itself, for the real tensors rustgrad has.

    Example::

        >>> x = rustgrad.tensor([1., -2.])
        >>> x.conj() is x
        True
    """
    _tensor_arg(input, "conj")
    return input


@op(method="conj_physical", function="conj_physical")
def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate of input computed eagerly: input itself, for real tensors.

    Example::

        >>> x = rustgrad.tensor([1., -2.])
        >>> rustgrad.conj_physical(x) is x
        True
    """
    _tensor_arg(input, "conj_physical")
    return input


def _conj_physical_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g  # the conjugate of a real gradient


CONJ_PHYSICAL_ = node("ConjPhysicalBackward1", _conj_physical_bw)


@op(method="conj_physical_", function="conj_physical_", grad_fn="ConjPhysicalBackward1")
def conj_physical_(self: Tensor) -> Tensor:
    """conj_physical written into self: the values stay, the version moves and autograd records
    ConjPhysicalBackward1 (whose gradient passes unchanged), as torch's."""
    _tensor_arg(self, "conj_physical_")
    return inplace_from(self, lambda src: CONJ_PHYSICAL_.record(src._data.copy(), (src,)), False)


@op(method="resolve_conj", function="resolve_conj")
def resolve_conj(input: Tensor) -> Tensor:
    """input with a lazy conjugation materialized: input itself (real tensors have none).

    Example::

        >>> x = rustgrad.tensor([1., -2.])
        >>> x.resolve_conj() is x
        True
    """
    _tensor_arg(input, "resolve_conj")
    return input


@op(method="resolve_neg", function="resolve_neg")
def resolve_neg(input: Tensor) -> Tensor:
    """input with a lazy negation materialized: input itself (rustgrad has no lazy negation).

    Example::

        >>> x = rustgrad.tensor([1., -2.])
        >>> x.resolve_neg() is x
        True
    """
    _tensor_arg(input, "resolve_neg")
    return input


@op(method="is_conj", function="is_conj")
def is_conj(input: Tensor) -> bool:
    """Whether input's conjugate bit is set: never, for real tensors.

    Example::

        >>> rustgrad.tensor([1.]).is_conj()
        False
    """
    _tensor_arg(input, "is_conj")
    return False


@op(method="is_neg", function="is_neg")
def is_neg(input: Tensor) -> bool:
    """Whether input's negative bit is set: never in rustgrad.

    Example::

        >>> rustgrad.tensor([1.]).is_neg()
        False
    """
    _tensor_arg(input, "is_neg")
    return False


@op(prop="real", function="real")
def real(input: Tensor) -> Tensor:
    """The real part of input: input itself, for real tensors.

    Example::

        >>> x = rustgrad.tensor([1., -2.])
        >>> x.real is x
        True
    """
    _tensor_arg(input, "real")
    return input


@op(prop="imag", function="imag")
def imag(input: Tensor) -> Tensor:
    """The imaginary part of input: a TypeError for real tensors, as torch's.

    Example::

        >>> rustgrad.tensor([1.]).imag
        Traceback (most recent call last):
            ...
        TypeError: imag is not implemented for tensors with non-complex dtypes.
    """
    _tensor_arg(input, "imag")
    raise TypeError("imag is not implemented for tensors with non-complex dtypes.")
