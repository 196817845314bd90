"""RMSNorm: division by the root mean square over the last dims, with a learned scale."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

from ... import _creation
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["RMSNorm"]


class RMSNorm(Module):
    """Divides each sample by its root mean square over the last ``len(normalized_shape)``
    dimensions and scales it: ``y = x / sqrt(mean(x^2) + eps) * weight`` (Zhang and Sennrich,
    2019). Unlike :class:`LayerNorm` it neither subtracts the mean nor adds a bias.

    Args:
        normalized_shape (int or sequence of int): the trailing shape to normalize over.
        eps (float, optional): added to the mean square; the dtype's machine epsilon if None.
        elementwise_affine (bool): whether the layer has a learnable weight (ones).
            Default: ``True``.
        device (rustgrad.device, optional): where the parameter is created.
        dtype (rustgrad.dtype, optional): the dtype of the parameter.

    Shape:
        - Input: ``(N, *)``, ending with ``normalized_shape``.
        - Output: the input's shape.
    """

    def __init__(self, normalized_shape: Union[int, Sequence[int]], eps: Optional[float] = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_creation.empty(self.normalized_shape, device=device,
                                                    dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Sets the weight to ones."""
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        """Normalizes ``x`` by its root mean square over the trailing ``normalized_shape`` dimensions.
        """
        return F.rms_norm(x, list(self.normalized_shape), self.weight, self.eps)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The normalized shape, ``eps`` and ``elementwise_affine``."""
        return ("{normalized_shape}, eps={eps}, "
                "elementwise_affine={elementwise_affine}".format(**self.__dict__))
