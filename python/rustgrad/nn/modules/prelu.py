"""PReLU: a leaky ReLU whose negative slope is learned (one per channel, or one for all)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import _creation
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["PReLU"]


class PReLU(Module):
    """Applies a leaky ReLU with a learned negative slope: ``max(0, x) + weight * min(0, x)``.

    With ``num_parameters=1`` one slope is shared by all channels; otherwise there is one per
    channel (dimension 1 of the input). The slope gets a gradient like any parameter.

    Args:
        num_parameters (int): the number of slopes: 1 or the number of channels.
            Default: ``1``.
        init (float): the initial value of the slopes. Default: ``0.25``.
        device (rustgrad.device, optional): where the parameter is created.
        dtype (rustgrad.dtype, optional): the dtype of the parameter.

    Shape:
        - Input: ``(*)``, with the channels in dimension 1 when ``num_parameters > 1``.
        - Output: the input's shape.

    Example::

        >>> nn.PReLU()(torch.tensor([-2.0, 1.0]))
        tensor([-0.5000,  1.0000], grad_fn=<PreluKernelBackward0>)
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None) -> None:
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(_creation.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Sets every slope to ``init``."""
        _init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        """Applies PReLU with the learned slopes to ``input``."""
        return F.prelu(input, self.weight)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The number of slopes."""
        return f"num_parameters={self.num_parameters}"


_init = init
