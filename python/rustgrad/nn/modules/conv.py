"""Conv1d and Conv2d (cross-correlation, as torch), with torch's default initialization."""

from __future__ import annotations

import math
from typing import Any, Optional, Tuple, Union

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
        if isinstance(self.padding, str):
            raise NotImplementedError("string padding with a non-zeros padding_mode")
        pads = []
        for p in reversed(self.padding):
            pads += [p, p]
        return F.pad(input, pads, mode=self.padding_mode)


class Conv2d(_ConvNd):
    _n = 2

    def forward(self, input: Tensor) -> Tensor:
        padded = self._mode_pad(input)
        if padded is not None:
            return F.conv2d(padded, self.weight, self.bias, self.stride, 0, self.dilation,
                            self.groups)
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding,
                        self.dilation, self.groups)


class Conv1d(_ConvNd):
    _n = 1

    def forward(self, input: Tensor) -> Tensor:
        padded = self._mode_pad(input)
        if padded is not None:
            return F.conv1d(padded, self.weight, self.bias, self.stride, 0, self.dilation,
                            self.groups)
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding,
                        self.dilation, self.groups)
