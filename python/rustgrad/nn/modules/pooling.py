"""MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d, AdaptiveMaxPool1d/2d/3d,
MaxUnpool1d/2d/3d, LPPool1d/2d/3d, FractionalMaxPool2d/3d."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "MaxUnpool1d",
           "MaxUnpool2d", "LPPool1d", "LPPool2d"]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size: Any, stride: Optional[Any] = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool2d(_MaxPoolNd):
    """Takes the maximum over ``kernel_size`` windows of each channel of a 2-D input.

    The gradient flows only to the element that was the maximum of each window.

    Args:
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple, optional): the step of the window. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        return_indices (bool): also return the flat indices of the maxima. Default: ``False``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``, where
          ``H_out = floor((H_in + 2 * padding[0] - dilation[0] * (kernel_size[0] - 1) - 1)
          / stride[0] + 1)`` (ceil with ``ceil_mode``) and likewise for ``W_out``.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> nn.MaxPool2d(2)(x)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """

    def forward(self, input: Tensor) -> Any:
        """Max-pools ``input``; returns ``(output, indices)`` with ``return_indices=True``."""
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class MaxPool1d(_MaxPoolNd):
    """Takes the maximum over ``kernel_size`` windows of each channel of a 1-D input.

    Args:
        kernel_size (int): the size of the window.
        stride (int, optional): the step of the window. Default: ``kernel_size``.
        padding (int): implicit ``-inf`` padding on both sides. Default: ``0``.
        dilation (int): the spacing between window elements. Default: ``1``.
        return_indices (bool): also return the indices of the maxima. Default: ``False``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``, where
          ``L_out = floor((L_in + 2 * padding - dilation * (kernel_size - 1) - 1) / stride + 1)``.
    """

    def forward(self, input: Tensor) -> Any:
        """Max-pools ``input``; returns ``(output, indices)`` with ``return_indices=True``."""
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class _AvgPoolNd(Module):
    def __init__(self, kernel_size: Any, stride: Optional[Any] = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: Optional[int] = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        """The window size, stride and padding."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Averages ``kernel_size`` windows of each channel of a 2-D input.

    Args:
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple, optional): the step of the window. Default: ``kernel_size``.
        padding (int or tuple): implicit zero padding on both sides. Default: ``0``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        count_include_pad (bool): count the padding zeros in the divisor. Default: ``True``.
        divisor_override (int, optional): divide by this instead of the window size.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``, where
          ``H_out = floor((H_in + 2 * padding[0] - kernel_size[0]) / stride[0] + 1)`` and
          likewise for ``W_out``.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Average-pools ``input``."""
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class AvgPool1d(Module):
    """Averages ``kernel_size`` windows of each channel of a 1-D input.

    Args:
        kernel_size (int): the size of the window.
        stride (int, optional): the step of the window. Default: ``kernel_size``.
        padding (int): implicit zero padding on both sides. Default: ``0``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        count_include_pad (bool): count the padding zeros in the divisor. Default: ``True``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``, where
          ``L_out = floor((L_in + 2 * padding - kernel_size) / stride + 1)``.
    """

    def __init__(self, kernel_size: Any, stride: Optional[Any] = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self) -> str:
        """The window size, stride and padding."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:
        """Average-pools ``input``."""
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


def _single(v: Any) -> Any:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


class _AdaptiveAvgPoolNd(Module):
    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        """The output size."""
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Averages each channel of a 2-D input over windows chosen so that the output has size
    ``output_size``, whatever the input's size.

    Args:
        output_size (int or tuple): the output's ``(H_out, W_out)``; an int for a square;
            None in a position keeps the input's size there.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``.

    Example::

        >>> nn.AdaptiveAvgPool2d((1, 1))(torch.ones(2, 8, 7, 5)).shape
        torch.Size([2, 8, 1, 1])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Average-pools ``input`` to ``output_size``."""
        return F.adaptive_avg_pool2d(input, self.output_size)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class AdaptiveAvgPool1d(AdaptiveAvgPool2d):
    """Averages each channel of a 1-D input over windows chosen so that the output has length
    ``output_size``.

    Args:
        output_size (int): the output's length.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, output_size)`` or ``(C, output_size)``.
    """

    def forward(self, input: Tensor) -> Tensor:
        """Average-pools ``input`` to ``output_size``."""
        return F.adaptive_avg_pool1d(input, self.output_size)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


def _tuple(v: Any, n: int) -> Tuple[int, ...]:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _MaxUnpoolNd(Module):
    def __init__(self, kernel_size: Any, stride: Optional[Any], padding: Any, n: int) -> None:
        super().__init__()
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride if stride is not None else kernel_size, n)
        self.padding = _tuple(padding, n)

    def extra_repr(self) -> str:
        """The window, stride and padding of the pooling undone."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of :class:`MaxPool2d`: each value put back at its index, zeros
    elsewhere.

    Args:
        kernel_size (int or tuple): the pooling's window.
        stride (int or tuple, optional): the pooling's stride. Default: ``kernel_size``.
        padding (int or tuple): the pooling's padding. Default: ``0``.

    Example::

        >>> x = torch.tensor([[[[1., 2.], [3., 4.]]]])
        >>> v, i = nn.MaxPool2d(2, return_indices=True)(x)
        >>> nn.MaxUnpool2d(2)(v, i)
        tensor([[[[0., 0.],
                  [0., 4.]]]])
    """

    def __init__(self, kernel_size: Any, stride: Optional[Any] = None, padding: Any = 0) -> None:
        super().__init__(kernel_size, stride, padding, 2)

    def forward(self, input: Tensor, indices: Tensor, output_size: Optional[Any] = None) -> Tensor:
        """Unpools ``input`` by ``indices`` (to ``output_size`` when given)."""
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of :class:`MaxPool1d`: each value put back at its index, zeros
    elsewhere.

    Args:
        kernel_size (int or tuple): the pooling's window.
        stride (int or tuple, optional): the pooling's stride. Default: ``kernel_size``.
        padding (int or tuple): the pooling's padding. Default: ``0``.

    Example::

        >>> nn.MaxUnpool1d(2)
        MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))
    """

    def __init__(self, kernel_size: Any, stride: Optional[Any] = None, padding: Any = 0) -> None:
        super().__init__(kernel_size, stride, padding, 1)

    def forward(self, input: Tensor, indices: Tensor, output_size: Optional[Any] = None) -> Tensor:
        """Unpools ``input`` by ``indices`` (to ``output_size`` when given)."""
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of :class:`MaxPool3d`: each value put back at its index, zeros
    elsewhere.

    Args:
        kernel_size (int or tuple): the pooling's window.
        stride (int or tuple, optional): the pooling's stride. Default: ``kernel_size``.
        padding (int or tuple): the pooling's padding. Default: ``0``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``, where
          ``D_out = (D_in - 1) * stride[0] - 2 * padding[0] + kernel_size[0]`` and likewise
          for ``H_out`` and ``W_out``, or ``output_size`` when given.

    Example::

        >>> x = torch.arange(8.).view(1, 1, 2, 2, 2)
        >>> v, i = nn.MaxPool3d(2, return_indices=True)(x)
        >>> nn.MaxUnpool3d(2)(v, i).flatten()
        tensor([0., 0., 0., 0., 0., 0., 0., 7.])
    """

    def __init__(self, kernel_size: Any, stride: Optional[Any] = None, padding: Any = 0) -> None:
        super().__init__(kernel_size, stride, padding, 3)

    def forward(self, input: Tensor, indices: Tensor, output_size: Optional[Any] = None) -> Tensor:
        """Unpools ``input`` by ``indices`` (to ``output_size`` when given)."""
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class _AdaptiveMaxPoolNd(Module):
    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        """The output size."""
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Takes the maximum of each channel of a 2-D input over windows chosen so that the output
    has size ``output_size``.

    Args:
        output_size (int or tuple): the output's ``(H_out, W_out)``; None in a position keeps
            the input's size there.
        return_indices (bool): also return the flat indices of the maxima. Default: ``False``.

    Example::

        >>> nn.AdaptiveMaxPool2d(1)(torch.arange(4.).view(1, 1, 2, 2))
        tensor([[[[3.]]]])
    """

    def forward(self, input: Tensor) -> Any:
        """Max-pools ``input`` to ``output_size`` (and returns the indices when asked)."""
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class AdaptiveMaxPool1d(AdaptiveMaxPool2d):
    """Takes the maximum of each channel of a 1-D input over windows chosen so that the output
    has length ``output_size``.

    Args:
        output_size (int): the output's length.
        return_indices (bool): also return the indices of the maxima. Default: ``False``.

    Example::

        >>> nn.AdaptiveMaxPool1d(2)(torch.tensor([[1., 3., 2., 0.]]))
        tensor([[3., 2.]])
    """

    def forward(self, input: Tensor) -> Any:
        """Max-pools ``input`` to ``output_size`` (and returns the indices when asked)."""
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class _LPPoolNd(Module):
    def __init__(self, norm_type: float, kernel_size: Any, stride: Optional[Any] = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        if norm_type == 0:
            raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        """The norm, the window, the stride and the rounding."""
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool2d(_LPPoolNd):
    """The ``p``-norm of each window of a 2-D input: ``(sum x^p) ** (1/p)``.

    Args:
        norm_type (float): ``p`` (not 0); ``inf`` gives max pooling of ``|x|``.
        kernel_size (int or tuple): the window's size.
        stride (int or tuple, optional): the step between windows. Default: ``kernel_size``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Example::

        >>> nn.LPPool2d(2, 2)(torch.tensor([[[[3., 4.], [0., 0.]]]]))
        tensor([[[[5.]]]])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``lp_pool2d(input, norm_type, kernel_size, stride, ceil_mode)``."""
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class LPPool1d(_LPPoolNd):
    """The ``p``-norm of each window of a 1-D input: ``(sum x^p) ** (1/p)``.

    Args:
        norm_type (float): ``p`` (not 0); ``inf`` gives max pooling of ``|x|``.
        kernel_size (int): the window's size.
        stride (int, optional): the step between windows. Default: ``kernel_size``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Example::

        >>> nn.LPPool1d(2, 2)(torch.tensor([[3., 4., 1., 0.]]))
        tensor([[5., 1.]])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``lp_pool1d(input, norm_type, kernel_size, stride, ceil_mode)``."""
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class LPPool3d(_LPPoolNd):
    """The ``p``-norm of each window of a 3-D input: ``(sum x^p) ** (1/p)``.

    Args:
        norm_type (float): ``p`` (not 0); ``inf`` gives max pooling of ``|x|``.
        kernel_size (int or tuple): the window's size.
        stride (int or tuple, optional): the step between windows. Default: ``kernel_size``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``, where
          ``D_out = floor((D_in - kernel_size[0]) / stride[0] + 1)`` and likewise for
          ``H_out`` and ``W_out``.

    Example::

        >>> nn.LPPool3d(2, 2)(torch.tensor([3., 4., 0., 0., 0., 0., 0., 0.]).view(1, 1, 2, 2, 2))
        tensor([[[[[5.]]]]])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Returns ``lp_pool3d(input, norm_type, kernel_size, stride, ceil_mode)``."""
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


# ---- 3-d pooling ----------------------------------------------------------------------------
class MaxPool3d(_MaxPoolNd):
    """Takes the maximum over ``kernel_size`` windows of each channel of a 3-D input.

    The gradient flows only to the element that was the maximum of each window.

    Args:
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple, optional): the step of the window. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        return_indices (bool): also return the flat indices of the maxima. Default: ``False``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``, where
          ``D_out = floor((D_in + 2 * padding[0] - dilation[0] * (kernel_size[0] - 1) - 1)
          / stride[0] + 1)`` (ceil with ``ceil_mode``) and likewise for ``H_out`` and ``W_out``.

    Example::

        >>> nn.MaxPool3d(2)(torch.arange(8.0).reshape(1, 1, 2, 2, 2))
        tensor([[[[[7.]]]]])
    """

    def forward(self, input: Tensor) -> Any:
        """Max-pools ``input``; returns ``(output, indices)`` with ``return_indices=True``."""
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class AvgPool3d(_AvgPoolNd):
    """Averages ``kernel_size`` windows of each channel of a 3-D input.

    Args:
        kernel_size (int or tuple): the size of the window.
        stride (int or tuple, optional): the step of the window. Default: ``kernel_size``.
        padding (int or tuple): implicit zero padding on both sides. Default: ``0``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        count_include_pad (bool): count the padding zeros in the divisor. Default: ``True``.
        divisor_override (int, optional): divide by this instead of the window size.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``, where
          ``D_out = floor((D_in + 2 * padding[0] - kernel_size[0]) / stride[0] + 1)`` and
          likewise for ``H_out`` and ``W_out``.

    Example::

        >>> nn.AvgPool3d(2)(torch.arange(8.0).reshape(1, 1, 2, 2, 2))
        tensor([[[[[3.5000]]]]])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Average-pools ``input``."""
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Averages each channel of a 3-D input over windows chosen so that the output has size
    ``output_size``, whatever the input's size.

    Args:
        output_size (int or tuple): the output's ``(D_out, H_out, W_out)``; an int for a cube;
            None in a position keeps the input's size there.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``.

    Example::

        >>> nn.AdaptiveAvgPool3d((1, 2, 2))(torch.ones(2, 8, 3, 7, 5)).shape
        torch.Size([2, 8, 1, 2, 2])
    """

    def forward(self, input: Tensor) -> Tensor:
        """Average-pools ``input`` to ``output_size``."""
        return F.adaptive_avg_pool3d(input, self.output_size)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Takes the maximum of each channel of a 3-D input over windows chosen so that the output
    has size ``output_size``.

    Args:
        output_size (int or tuple): the output's ``(D_out, H_out, W_out)``; None in a position
            keeps the input's size there.
        return_indices (bool): also return the flat indices of the maxima. Default: ``False``.

    Example::

        >>> nn.AdaptiveMaxPool3d(1)(torch.arange(8.).view(1, 1, 2, 2, 2))
        tensor([[[[[7.]]]]])
    """

    def forward(self, input: Tensor) -> Any:
        """Max-pools ``input`` to ``output_size`` (and returns the indices when asked)."""
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


__all__ += ["MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d"]


# ---- fractional max pooling -----------------------------------------------------------------
class _FractionalMaxPoolNd(Module):
    _dims = 2

    def __init__(self, kernel_size: Any, output_size: Optional[Any] = None,
                 output_ratio: Optional[Any] = None, return_indices: bool = False,
                 _random_samples: Optional[Tensor] = None) -> None:
        super().__init__()
        n = self._dims
        name = type(self).__name__
        if n == 3 and ((isinstance(kernel_size, int) and kernel_size <= 0) or (
                isinstance(kernel_size, (tuple, list)) and not all(k > 0 for k in kernel_size))):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = _tuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _tuple(output_size, n) if output_size is not None else None
        self.output_ratio = _tuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             "ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Takes the maximum over ``kernel_size`` windows of each channel of a 2-D input, placed
    pseudo-randomly so that the output has ``output_size`` (or ``output_ratio`` of the
    input's size).

    Args:
        kernel_size (int or tuple): the window's size.
        output_size (int or tuple, optional): the output's ``(H_out, W_out)``; needs
            ``kH + H_out - 1 <= H_in`` and ``kW + W_out - 1 <= W_in``.
        output_ratio (float or tuple, optional): the output's size as a fraction (in (0, 1))
            of the input's, when ``output_size`` is not given.
        return_indices (bool): also return the flat indices of the maxima (for
            :class:`MaxUnpool2d`). Default: ``False``.
        _random_samples (Tensor, optional): ``(N, C, 2)`` samples in [0, 1) placing the
            windows (a buffer); drawn anew on each call when not given.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``.

    Example::

        >>> m = nn.FractionalMaxPool2d(2, output_size=2, _random_samples=torch.full((1, 1, 2), 0.5))
        >>> m(torch.arange(16.).view(1, 1, 4, 4))
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """

    _dims = 2

    def forward(self, input: Tensor) -> Any:
        """Pools ``input``; returns ``(output, indices)`` with ``return_indices=True``."""
        return F.fractional_max_pool2d(input, self.kernel_size, self.output_size,
                                       self.output_ratio, self.return_indices,
                                       _random_samples=self._random_samples)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Takes the maximum over ``kernel_size`` windows of each channel of a 3-D input, placed
    pseudo-randomly so that the output has ``output_size`` (or ``output_ratio`` of the
    input's size).

    Args:
        kernel_size (int or tuple): the window's size (positive).
        output_size (int or tuple, optional): the output's ``(D_out, H_out, W_out)``.
        output_ratio (float or tuple, optional): the output's size as a fraction (in (0, 1))
            of the input's, when ``output_size`` is not given.
        return_indices (bool): also return the flat indices of the maxima (for
            :class:`MaxUnpool3d`). Default: ``False``.
        _random_samples (Tensor, optional): ``(N, C, 3)`` samples in [0, 1) placing the
            windows (a buffer); drawn anew on each call when not given.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``.

    Example::

        >>> nn.FractionalMaxPool3d(2, output_ratio=0.5)(torch.ones(1, 2, 4, 6, 8)).shape
        torch.Size([1, 2, 2, 3, 4])
    """

    _dims = 3

    def forward(self, input: Tensor) -> Any:
        """Pools ``input``; returns ``(output, indices)`` with ``return_indices=True``."""
        return F.fractional_max_pool3d(input, self.kernel_size, self.output_size,
                                       self.output_ratio, self.return_indices,
                                       _random_samples=self._random_samples)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


__all__ += ["MaxUnpool3d", "LPPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d"]
