"""Identity, Linear, Bilinear."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ... import _creation
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "NonDynamicallyQuantizableLinear"]


class Identity(Module):
    """A placeholder layer that returns its input unchanged; its constructor accepts and ignores
    any arguments.

    Example::

        >>> nn.Identity(54, unused="x")(torch.ones(2))
        tensor([1., 1.])
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``input`` itself."""
        return input

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Linear(Module):
    """Applies an affine map to the last dimension of the input: ``y = x @ weight.T + bias``.

    The weight is initialized with ``kaiming_uniform_(a=sqrt(5))`` and the bias uniformly in
    ``(-1/sqrt(in_features), 1/sqrt(in_features))``, as torch does.

    Args:
        in_features (int): the size of each input sample.
        out_features (int): the size of each output sample.
        bias (bool): whether the layer adds a learnable bias. Default: ``True``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Attributes:
        weight (Parameter): ``(out_features, in_features)``.
        bias (Parameter or None): ``(out_features)``.

    Shape:
        - Input: ``(*, in_features)``.
        - Output: ``(*, out_features)``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> m = nn.Linear(20, 30)
        >>> m
        Linear(in_features=20, out_features=30, bias=True)
        >>> m(torch.randn(128, 20)).shape
        torch.Size([128, 30])
        >>> m.weight.shape
        torch.Size([30, 20])
    """

    in_features: int
    out_features: int
    weight: Parameter

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_creation.empty((out_features, in_features), device=device,
                                                dtype=dtype))
        if bias:
            self.bias = Parameter(_creation.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws the weight and bias with the layer's default initialization."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``input @ weight.T + bias``."""
        return F.linear(input, self.weight, self.bias)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """``in_features``, ``out_features`` and whether there is a bias."""
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """Applies a bilinear map to two inputs: ``y_k = x1 @ weight[k] @ x2 + bias[k]``.

    The weight and bias are initialized uniformly in ``(-1/sqrt(in1_features),
    1/sqrt(in1_features))``.

    Args:
        in1_features (int): the size of each sample of the first input.
        in2_features (int): the size of each sample of the second input.
        out_features (int): the size of each output sample.
        bias (bool): whether the layer adds a learnable bias. Default: ``True``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input1: ``(*, in1_features)``.
        - Input2: ``(*, in2_features)``, the same leading dimensions.
        - Output: ``(*, out_features)``.
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(_creation.empty((out_features, in1_features, in2_features),
                                                device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_creation.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws the weight and bias with the layer's default initialization."""
        if self.in1_features <= 0:
            raise ValueError(
                f"in1_features must be > 0, but got (in1_features={self.in1_features})"
            )
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """Returns ``input1 @ weight[k] @ input2 + bias[k]`` for each output feature ``k``."""
        return F.bilinear(input1, input2, self.weight, self.bias)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The three feature sizes and whether there is a bias."""
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """torch's Linear subclass used as MultiheadAttention.out_proj (same math, its own repr)."""
