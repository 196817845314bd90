"""LayerNorm, GroupNorm, LocalResponseNorm and CrossMapLRN2d."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence, Union

from ... import _creation
from ..._tensor import Tensor
from ...autograd.function import Function
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "LocalResponseNorm", "CrossMapLRN2d"]


class LayerNorm(Module):
    """Normalizes each sample over its last ``len(normalized_shape)`` dimensions:
    ``y = (x - mean) / sqrt(var + eps) * weight + bias`` (Ba et al., 2016).

    The mean and biased variance are computed per sample, in training and evaluation mode
    alike. ``weight`` (ones) and ``bias`` (zeros) have shape ``normalized_shape``.

    Args:
        normalized_shape (int or sequence of int): the trailing shape to normalize over.
        eps (float): added to the variance for numerical stability. Default: ``1e-5``.
        elementwise_affine (bool): whether the layer has a learnable weight (and bias).
            Default: ``True``.
        bias (bool): whether the layer has a learnable bias (with ``elementwise_affine``).
            Default: ``True``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(N, *)``, ending with ``normalized_shape``.
        - Output: the input's shape.

    Example::

        >>> ln = nn.LayerNorm(4)
        >>> ln(torch.tensor([[1.0, 2.0, 3.0, 4.0]]))
        tensor([[-1.3416, -0.4472,  0.4472,  1.3416]], grad_fn=<NativeLayerNormBackward0>)
    """

    def __init__(self, normalized_shape: Union[int, Sequence[int]], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_creation.empty(self.normalized_shape, device=device,
                                                    dtype=dtype))
            if bias:
                self.bias = Parameter(_creation.empty(self.normalized_shape, device=device,
                                                      dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Sets the weight to ones and the bias to zeros."""
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """Normalizes ``input`` over its trailing ``normalized_shape`` dimensions."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The normalized shape, ``eps`` and ``elementwise_affine``."""
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Splits the channels into ``num_groups`` groups and normalizes each group of each sample
    over its channels and spatial elements (Wu and He, 2018), then applies a per-channel
    affine map.

    Args:
        num_groups (int): the number of groups; it must divide ``num_channels``.
        num_channels (int): the number of channels ``C``.
        eps (float): added to the variance for numerical stability. Default: ``1e-5``.
        affine (bool): whether the layer has a learnable per-channel weight and bias.
            Default: ``True``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(N, C, *)``.
        - Output: the input's shape.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(_creation.empty(num_channels, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(_creation.empty(num_channels, device=device, dtype=dtype))
                init.zeros_(self.bias)
            else:
                self.register_parameter("bias", None)
            init.ones_(self.weight)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        """Normalizes ``input`` per group of channels of each sample."""
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """``num_groups``, ``num_channels``, ``eps`` and ``affine``."""
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LocalResponseNorm(Module):
    """Divides each entry by ``(k + alpha * mean of the squares of its size neighbouring
    channels) ** beta``.

    Args:
        size (int): the number of channels in each window.
        alpha (float): the scale. Default: ``1e-4``.
        beta (float): the exponent. Default: ``0.75``.
        k (float): the additive constant. Default: ``1.0``.

    Shape:
        - Input: ``(N, C, *)``.
        - Output: the input's shape.

    Example::

        >>> nn.LocalResponseNorm(2)
        LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``local_response_norm(input, size, alpha, beta, k)``."""
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The window size and the constants."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


# ---- CrossMapLRN2d: torch's legacy LRN, an autograd Function with its own backward ------------
# torch's forward sums the squares of each channel's window as a running sum over the channels
# and never takes channel 0 out of it; its backward sums the ratios over a window placed
# differently. Both are reproduced as they are (0/1 matrices over the channels, built by
# running torch's loops on indices), so values and gradients are torch's; the backward is
# not the derivative of the forward (torch's gradcheck of it fails too).
def _lrn_window(channels: int, size: int) -> Any:
    """(C, C) rows: which channels' squares torch's running sum holds at each channel."""
    pre_pad = int((size - 1) / 2 + 1)
    rows = [[0.0] * channels for _ in range(channels)]
    if channels:
        for j in range(min(pre_pad, channels)):
            rows[0][j] = 1.0
    for c in range(1, channels):
        rows[c] = list(rows[c - 1])
        if c < channels - pre_pad + 1:
            rows[c][c + pre_pad - 1] += 1.0
        if c > pre_pad:
            rows[c][c - pre_pad] -= 1.0
    return rows


def _lrn_ratio_window(channels: int, size: int) -> Any:
    """(C, C) rows: which channels' ratios torch's backward sums at each channel."""
    start = int(size - (size - 1) / 2)
    return [[1.0 if c - start <= j <= c + size - 1 - start else 0.0 for j in range(channels)]
            for c in range(channels)]


def _over_channels(rows: Any, t: Tensor) -> Tensor:
    """rows (C, C) applied along dim 1 of t (N, C, H, W)."""
    n, c, h, w = t.shape
    m = _creation.tensor(rows, dtype=t.dtype, device=t.device)
    return (m @ t.reshape(n, c, h * w)).reshape(n, c, h, w)


def _lrn_forward(ctx: Any, input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1) -> Tensor:
    ctx.size, ctx.alpha, ctx.beta, ctx.k = size, alpha, beta, k
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    scale = _over_channels(_lrn_window(input.shape[1], size), input * input)
    ctx.scale = scale * (alpha / size) + k
    output = ctx.scale.pow(-beta) * input
    ctx.save_for_backward(input, output)
    return output


def _lrn_backward(ctx: Any, grad_output: Tensor) -> Any:
    input, output = ctx.saved_tensors
    size, channels = ctx.size, input.shape[1]
    start = int(size - (size - 1) / 2)
    if start > size - 1:  # torch's narrow of its padded buffer fails
        raise RuntimeError(f"start ({start}) + length ({channels}) exceeds dimension size "
                           f"({channels + size - 1}).")
    ratio = grad_output * output / ctx.scale
    summed = _over_channels(_lrn_ratio_window(channels, size), ratio)
    grad = ctx.scale.pow(-ctx.beta) * grad_output - \
        (2 * ctx.alpha * ctx.beta / size) * input * summed
    return grad, None, None, None, None


# named as torch's Function, so its node is CrossMapLRN2dBackward
_cross_map_lrn2d = type(Function)("CrossMapLRN2d", (Function,), {
    "__module__": __name__,
    "__doc__": "torch's legacy cross-channel LRN as an autograd Function.",
    "forward": staticmethod(_lrn_forward),
    "backward": staticmethod(_lrn_backward),
})


class CrossMapLRN2d(Module):
    """torch's legacy local response normalization across the channels of a 4-D input:
    each entry divided by ``(k + alpha / size * (sum of squares over its channel window)) **
    beta``, with torch's own window and backward (see the note above).

    Args:
        size (int): the number of channels in each window.
        alpha (float): the scale. Default: ``1e-4``.
        beta (float): the exponent. Default: ``0.75``.
        k (float): the additive constant. Default: ``1``.

    Shape:
        - Input: ``(N, C, H, W)``.
        - Output: the input's shape.

    Example::

        >>> nn.CrossMapLRN2d(3)
        CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)
        >>> nn.CrossMapLRN2d(1, alpha=1.0, beta=1.0, k=0)(torch.full((1, 1, 1, 1), 2.0))
        tensor([[[[0.5000]]]])
    """

    size: int
    alpha: float
    beta: float
    k: float

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        """Normalizes ``input`` across its channels."""
        return _cross_map_lrn2d.apply(input, self.size, self.alpha, self.beta, self.k)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The window size and the constants."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
