"""Conv1d and Conv2d (cross-correlation, as torch), with torch's default initialization."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, List, Optional, Tuple, Union

from ... import _creation
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d"]


def _ntuple(v: Any, n: int) -> Tuple[int, ...]:
    if isinstance(v, (tuple, list)):
        return tuple(int(x) for x in v)
    return (int(v),) * n


class _ConvNd(Module):
    _n = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Union[str, Any] = 0, dilation: Any = 1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of "
                    f"{valid_padding_strings}"
                )
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in {"zeros", "reflect", "replicate", "circular"}:
            raise ValueError(
                "padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], "
                f"but got padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        self.padding: Any = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.transposed = False
        self.output_padding = (0,) * n
        self.groups = groups
        self.padding_mode = padding_mode
        self.weight = Parameter(_creation.empty(
            (out_channels, in_channels // groups) + self.kernel_size, device=device,
            dtype=dtype))
        if bias:
            self.bias = Parameter(_creation.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        output_padding = getattr(self, "output_padding", ())  # transposed convolutions only
        if any(output_padding):
            s += f", output_padding={output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _mode_pad(self, input: Tensor) -> Optional[Tensor]:
        if self.padding_mode == "zeros":
            return None
        pads: List[int] = []
        if self.padding == "same":
            # torch's split of the total 'same' padding: the extra element goes on the right
            for k, d in zip(reversed(self.kernel_size), reversed(self.dilation)):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]
        elif self.padding == "valid":
            pads = [0, 0] * len(self.kernel_size)
        else:
            for p in reversed(self.padding):
                pads += [p, p]
        return F.pad(input, pads, mode=self.padding_mode)


class Conv2d(_ConvNd):
    """Applies a 2-D convolution (a cross-correlation, as torch) over an input of several planes.

    Each output channel is the sum over the input channels of the input correlated with a
    ``kernel_size`` filter, plus a bias. The weight is initialized with
    ``kaiming_uniform_(a=sqrt(5))`` and the bias uniformly in ``(-1/sqrt(fan_in),
    1/sqrt(fan_in))``.

    Args:
        in_channels (int): the number of channels of the input.
        out_channels (int): the number of channels the convolution produces.
        kernel_size (int or tuple): the size of the filter.
        stride (int or tuple): the step between applications of the filter. Default: ``1``.
        padding (int, tuple or str): implicit padding on both sides, or ``'valid'`` (none) or
            ``'same'`` (the output as large as the input; stride 1 only). Default: ``0``.
        dilation (int or tuple): the spacing between filter elements. Default: ``1``.
        groups (int): splits the channels into groups convolved separately. Default: ``1``.
        bias (bool): whether the layer adds a learnable bias. Default: ``True``.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
            Default: ``'zeros'``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(N, C_in, H_in, W_in)`` or ``(C_in, H_in, W_in)``.
        - Output: ``(N, C_out, H_out, W_out)`` or ``(C_out, H_out, W_out)``, where
          ``H_out = floor((H_in + 2 * padding[0] - dilation[0] * (kernel_size[0] - 1) - 1)
          / stride[0] + 1)`` and likewise for ``W_out``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> m = nn.Conv2d(3, 8, 3, padding=1)
        >>> m
        Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
        >>> m(torch.randn(2, 3, 16, 16)).shape
        torch.Size([2, 8, 16, 16])
        >>> nn.Conv2d(3, 8, 3, stride=2)(torch.randn(2, 3, 16, 16)).shape
        torch.Size([2, 8, 7, 7])
    """

    _n = 2

    def forward(self, input: Tensor) -> Tensor:
        """Convolves ``input`` (``(N, C_in, H, W)`` or ``(C_in, H, W)``) with the layer's weight and bias.
        """
        padded = self._mode_pad(input)
        if padded is not None:
            return F.conv2d(padded, self.weight, self.bias, self.stride, 0, self.dilation,
                            self.groups)
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding,
                        self.dilation, self.groups)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class Conv1d(_ConvNd):
    """Applies a 1-D convolution (a cross-correlation, as torch) over an input of several
    channels.

    Args:
        in_channels (int): the number of channels of the input.
        out_channels (int): the number of channels the convolution produces.
        kernel_size (int or tuple): the size of the filter.
        stride (int or tuple): the step between applications of the filter. Default: ``1``.
        padding (int, tuple or str): implicit padding on both sides, or ``'valid'`` or
            ``'same'``. Default: ``0``.
        dilation (int or tuple): the spacing between filter elements. Default: ``1``.
        groups (int): splits the channels into groups convolved separately. Default: ``1``.
        bias (bool): whether the layer adds a learnable bias. Default: ``True``.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
            Default: ``'zeros'``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(N, C_in, L_in)`` or ``(C_in, L_in)``.
        - Output: ``(N, C_out, L_out)`` or ``(C_out, L_out)``, where
          ``L_out = floor((L_in + 2 * padding - dilation * (kernel_size - 1) - 1) / stride + 1)``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> nn.Conv1d(4, 6, 3)(torch.randn(2, 4, 10)).shape
        torch.Size([2, 6, 8])
    """

    _n = 1

    def forward(self, input: Tensor) -> Tensor:
        """Convolves ``input`` (``(N, C_in, L)`` or ``(C_in, L)``) with the layer's weight and bias.
        """
        padded = self._mode_pad(input)
        if padded is not None:
            return F.conv1d(padded, self.weight, self.bias, self.stride, 0, self.dilation,
                            self.groups)
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding,
                        self.dilation, self.groups)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


# ---- transposed convolutions ----------------------------------------------------------------
class _ConvTransposeNd(_ConvNd):
    """Shared by ConvTranspose1d/2d: torch's (in, out/groups, *k) weight and output_padding."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {type(self).__name__}'
            )
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)
        self.transposed = True
        self.output_padding = _ntuple(output_padding, self._n)
        # the transposed weight's shape; replacing the entry keeps state_dict's key order
        self.weight = Parameter(_creation.empty(
            (in_channels, out_channels // groups) + self.kernel_size, device=device, dtype=dtype))
        self.reset_parameters()

    def _output_padding(self, input: Tensor, output_size: Optional[Any]) -> Tuple[int, ...]:
        """The output_padding that makes the output `output_size` (torch's checks)."""
        n = self._n
        if output_size is None:
            return self.output_padding
        lead = 2 if input.ndim == n + 2 else 1
        size = [int(v) for v in output_size]
        if len(size) == lead + n:
            size = size[lead:]
        if len(size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or "
                f"{lead + n} elements (got {len(size)})"
            )
        lo = [(input.shape[lead + i] - 1) * self.stride[i] - 2 * self.padding[i]
              + self.dilation[i] * (self.kernel_size[i] - 1) + 1 for i in range(n)]
        hi = [lo[i] + self.stride[i] - 1 for i in range(n)]
        if any(not lo[i] <= size[i] <= hi[i] for i in range(n)):
            raise ValueError(
                f"requested an output size of {list(output_size)}, but valid sizes range from "
                f"{lo} to {hi} (for an input of {input.shape[2:]})"
            )
        return tuple(size[i] - lo[i] for i in range(n))


class ConvTranspose1d(_ConvTransposeNd):
    """Applies a 1-D transposed convolution, the gradient of :class:`Conv1d` with respect to its
    input.

    Args:
        in_channels (int): the number of channels of the input.
        out_channels (int): the number of channels the layer produces.
        kernel_size (int or tuple): the size of the filter.
        stride (int or tuple): the step of the filter over the output. Default: ``1``.
        padding (int or tuple): ``dilation * (kernel_size - 1) - padding`` zeros of implicit
            padding, as torch. Default: ``0``.
        output_padding (int or tuple): extra size added to one side of the output, to pick
            among the sizes a strided layer can produce. Default: ``0``.
        groups (int): splits the channels into groups handled separately. Default: ``1``.
        bias (bool): whether the layer adds a learnable bias. Default: ``True``.
        dilation (int or tuple): the spacing between filter elements. Default: ``1``.
        padding_mode (str): only ``'zeros'``. Default: ``'zeros'``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(N, C_in, L_in)`` or ``(C_in, L_in)``.
        - Output: ``(N, C_out, L_out)`` or ``(C_out, L_out)``, where
          ``L_out = (L_in - 1) * stride - 2 * padding + dilation * (kernel_size - 1)
          + output_padding + 1``.
    """

    _n = 1

    def forward(self, input: Tensor, output_size: Optional[Any] = None) -> Tensor:
        """The transposed convolution of (N, C, L) or (C, L) input (output_size picks among
        the valid lengths)."""
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class ConvTranspose2d(_ConvTransposeNd):
    """Applies a 2-D transposed convolution, the gradient of :class:`Conv2d` with respect to its
    input (sometimes called a fractionally strided convolution); used to upsample.

    The weight has torch's shape ``(in_channels, out_channels / groups, *kernel_size)``.

    Args:
        in_channels (int): the number of channels of the input.
        out_channels (int): the number of channels the layer produces.
        kernel_size (int or tuple): the size of the filter.
        stride (int or tuple): the step of the filter over the output. Default: ``1``.
        padding (int or tuple): ``dilation * (kernel_size - 1) - padding`` zeros of implicit
            padding, as torch. Default: ``0``.
        output_padding (int or tuple): extra size added to one side of the output, to pick
            among the sizes a strided layer can produce. Default: ``0``.
        groups (int): splits the channels into groups handled separately. Default: ``1``.
        bias (bool): whether the layer adds a learnable bias. Default: ``True``.
        dilation (int or tuple): the spacing between filter elements. Default: ``1``.
        padding_mode (str): only ``'zeros'``. Default: ``'zeros'``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(N, C_in, H_in, W_in)`` or ``(C_in, H_in, W_in)``.
        - Output: ``(N, C_out, H_out, W_out)`` or ``(C_out, H_out, W_out)``, where
          ``H_out = (H_in - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kernel_size[0] - 1)
          + output_padding[0] + 1`` and likewise for ``W_out``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> up = nn.ConvTranspose2d(4, 2, 3, stride=2)
        >>> up(torch.randn(1, 4, 5, 5)).shape
        torch.Size([1, 2, 11, 11])
    """

    _n = 2

    def forward(self, input: Tensor, output_size: Optional[Any] = None) -> Tensor:
        """The transposed convolution of (N, C, H, W) or (C, H, W) input (output_size picks
        among the valid sizes)."""
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


__all__ += ["ConvTranspose1d", "ConvTranspose2d"]


# ---- 3-d convolutions -----------------------------------------------------------------------
class Conv3d(_ConvNd):
    """Applies a 3-D convolution (a cross-correlation, as torch) over an input of several
    volumes.

    Args:
        in_channels (int): the number of channels of the input.
        out_channels (int): the number of channels the convolution produces.
        kernel_size (int or tuple): the size of the filter.
        stride (int or tuple): the step between applications of the filter. Default: ``1``.
        padding (int, tuple or str): implicit padding on both sides, or ``'valid'`` (none) or
            ``'same'`` (the output as large as the input; stride 1 only). Default: ``0``.
        dilation (int or tuple): the spacing between filter elements. Default: ``1``.
        groups (int): splits the channels into groups convolved separately. Default: ``1``.
        bias (bool): whether the layer adds a learnable bias. Default: ``True``.
        padding_mode (str): ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.
            Default: ``'zeros'``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(N, C_in, D_in, H_in, W_in)`` or ``(C_in, D_in, H_in, W_in)``.
        - Output: ``(N, C_out, D_out, H_out, W_out)`` or ``(C_out, D_out, H_out, W_out)``, where
          ``D_out = floor((D_in + 2 * padding[0] - dilation[0] * (kernel_size[0] - 1) - 1)
          / stride[0] + 1)`` and likewise for ``H_out`` and ``W_out``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> m = nn.Conv3d(2, 4, 3, padding=1)
        >>> m
        Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=(1, 1, 1))
        >>> m(torch.randn(1, 2, 4, 5, 6)).shape
        torch.Size([1, 4, 4, 5, 6])
    """

    _n = 3

    def forward(self, input: Tensor) -> Tensor:
        """Convolves ``input`` (``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)``) with the layer's
        weight and bias."""
        padded = self._mode_pad(input)
        if padded is not None:
            return F.conv3d(padded, self.weight, self.bias, self.stride, 0, self.dilation,
                            self.groups)
        return F.conv3d(input, self.weight, self.bias, self.stride, self.padding,
                        self.dilation, self.groups)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class ConvTranspose3d(_ConvTransposeNd):
    """Applies a 3-D transposed convolution, the gradient of :class:`Conv3d` with respect to its
    input; used to upsample volumes.

    The weight has torch's shape ``(in_channels, out_channels / groups, *kernel_size)``.

    Args:
        in_channels (int): the number of channels of the input.
        out_channels (int): the number of channels the layer produces.
        kernel_size (int or tuple): the size of the filter.
        stride (int or tuple): the step of the filter over the output. Default: ``1``.
        padding (int or tuple): ``dilation * (kernel_size - 1) - padding`` zeros of implicit
            padding, as torch. Default: ``0``.
        output_padding (int or tuple): extra size added to one side of the output, to pick
            among the sizes a strided layer can produce. Default: ``0``.
        groups (int): splits the channels into groups handled separately. Default: ``1``.
        bias (bool): whether the layer adds a learnable bias. Default: ``True``.
        dilation (int or tuple): the spacing between filter elements. Default: ``1``.
        padding_mode (str): only ``'zeros'``. Default: ``'zeros'``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(N, C_in, D_in, H_in, W_in)`` or ``(C_in, D_in, H_in, W_in)``.
        - Output: ``(N, C_out, D_out, H_out, W_out)`` or ``(C_out, D_out, H_out, W_out)``, where
          ``D_out = (D_in - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kernel_size[0] - 1)
          + output_padding[0] + 1`` and likewise for ``H_out`` and ``W_out``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> nn.ConvTranspose3d(2, 3, 2, stride=2)(torch.randn(1, 2, 2, 3, 4)).shape
        torch.Size([1, 3, 4, 6, 8])
    """

    _n = 3

    def forward(self, input: Tensor, output_size: Optional[Any] = None) -> Tensor:
        """The transposed convolution of (N, C, D, H, W) or (C, D, H, W) input (output_size
        picks among the valid sizes)."""
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups,
                                  self.dilation)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


__all__ += ["Conv3d", "ConvTranspose3d"]
