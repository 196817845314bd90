"""parameters_to_vector and vector_to_parameters."""

from __future__ import annotations

from typing import Iterable

from ..._ops.joins import cat
from ..._tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Flattens the parameters and concatenates them into one 1-D tensor.

    The result is computed with recorded ops, so gradients flow back to the parameters.

    Args:
        parameters (iterable of Tensor): the parameters, e.g. ``model.parameters()``.

    Example::

        >>> lin = nn.Linear(3, 2)
        >>> nn.utils.parameters_to_vector(lin.parameters()).shape
        torch.Size([8])
    """
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copies consecutive slices of ``vec`` into the parameters' data (the reverse of
    :func:`parameters_to_vector`).

    The parameters' ``.data`` is replaced; autograd records nothing.

    Args:
        vec (Tensor): a 1-D tensor with as many elements as the parameters together.
        parameters (iterable of Tensor): the parameters to overwrite.
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
