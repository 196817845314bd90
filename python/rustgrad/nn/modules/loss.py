"""Loss modules: hold the options and call nn.functional."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Optional, Tuple

from ..._ops.loss import legacy_reduction
from ..._tensor import Tensor
from .. import functional as F
from .distance import PairwiseDistance
from .linear import Linear
from .module import Module

__all__ = [
    "L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss",
    "SmoothL1Loss", "HuberLoss", "KLDivLoss", "SoftMarginLoss", "MarginRankingLoss",
    "HingeEmbeddingLoss", "CosineEmbeddingLoss", "PoissonNLLLoss", "GaussianNLLLoss",
    "MultiMarginLoss", "MultiLabelMarginLoss", "TripletMarginLoss",
    "TripletMarginWithDistanceLoss", "LinearCrossEntropyLoss",
]


class _Loss(Module):
    reduction: str

    def __init__(self, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = legacy_reduction(size_average, reduce, reduction)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    weight: Optional[Tensor]

    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """The mean absolute error: the loss of each element is ``|input - target|``.

    Args:
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the loss of each
            element, their mean or their sum. Default: ``'mean'``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Target: ``(*)``, the shape of the input.
        - Output: a scalar; ``(*)`` with ``reduction='none'``.

    Example::

        >>> loss = nn.L1Loss()
        >>> loss(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 4.0]))
        tensor(1.)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.l1_loss(input, target, reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class MSELoss(_Loss):
    """The mean squared error: the loss of each element is ``(input - target)^2``.

    The gradient with respect to ``input`` is ``2 * (input - target) / N`` with the mean.

    Args:
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the loss of each
            element, their mean or their sum. Default: ``'mean'``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Target: ``(*)``, the shape of the input.
        - Output: a scalar; ``(*)`` with ``reduction='none'``.

    Example::

        >>> loss = nn.MSELoss()
        >>> x = torch.tensor([1.0, 2.0], requires_grad=True)
        >>> out = loss(x, torch.tensor([1.0, 4.0]))
        >>> out
        tensor(2., grad_fn=<MseLossBackward0>)
        >>> out.backward()
        >>> x.grad
        tensor([ 0., -2.])
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.mse_loss(input, target, reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class NLLLoss(_WeightedLoss):
    """The negative log-likelihood loss: ``-input[n, target[n]]`` for each sample, given
    log-probabilities (e.g. from :class:`LogSoftmax`).

    With a ``weight``, each sample's loss is scaled by the weight of its class, and the mean
    divides by the sum of those weights.

    Args:
        weight (Tensor, optional): a weight for each of the ``C`` classes.
        size_average (bool, optional): deprecated; use ``reduction``.
        ignore_index (int): a target value whose samples add nothing to the loss or the mean.
            Default: ``-100``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``. Default: ``'mean'``.

    Shape:
        - Input: ``(N, C)``, ``(C)`` or ``(N, C, d1, d2, ...)``.
        - Target: ``(N)``, ``()`` or ``(N, d1, d2, ...)`` of class indices in ``[0, C)``.
        - Output: a scalar; the target's shape with ``reduction='none'``.

    Example::

        >>> loss = nn.NLLLoss()
        >>> loss(torch.tensor([[-0.5, -1.0]]), torch.tensor([1]))
        tensor(1.)
    """

    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 ignore_index: int = -100, reduce: Optional[bool] = None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class CrossEntropyLoss(_WeightedLoss):
    """The cross entropy between the softmax of unnormalized scores ``input`` and ``target``.

    The same as :class:`LogSoftmax` over the class dimension followed by :class:`NLLLoss`,
    computed stably. ``target`` holds class indices, or class probabilities of the input's
    shape. The gradient with respect to the scores is ``softmax(input) - one_hot(target)``
    (divided by N with the mean).

    Args:
        weight (Tensor, optional): a weight for each of the ``C`` classes.
        size_average (bool, optional): deprecated; use ``reduction``.
        ignore_index (int): a target index whose samples add nothing to the loss or the mean.
            Default: ``-100``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``. Default: ``'mean'``.
        label_smoothing (float): in [0, 1]; mixes the target with the uniform distribution
            over the classes by this amount. Default: ``0.0``.

    Shape:
        - Input: ``(N, C)``, ``(C)`` or ``(N, C, d1, d2, ...)``.
        - Target: ``(N)``, ``()`` or ``(N, d1, d2, ...)`` of class indices in ``[0, C)``,
      or class probabilities of the input's shape.
        - Output: a scalar; ``(N)`` (or ``(N, d1, ...)``) with ``reduction='none'``.

    Example::

        >>> loss = nn.CrossEntropyLoss()
        >>> scores = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]], requires_grad=True)
        >>> out = loss(scores, torch.tensor([0, 2]))
        >>> out
        tensor(0.1755, grad_fn=<NllLossBackward0>)
        >>> out.backward()
        >>> scores.grad.shape
        torch.Size([2, 3])
    """

    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 ignore_index: int = -100, reduce: Optional[bool] = None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class LinearCrossEntropyLoss(_WeightedLoss):
    """The cross entropy of ``target`` and the logits of a linear map of ``input`` (a
    :class:`Linear` of its own, ``self.linear``, without bias by default): see
    :func:`~rustgrad.nn.functional.linear_cross_entropy`.

    Args:
        in_features (int): the size of each input sample.
        num_classes (int): the number of classes ``C``.
        out_features (tuple of ints): ``(d1, ..., dK)`` for a K-dimensional loss; the linear
            map has ``C * d1 * ... * dK`` outputs. Default: ``()``.
        bias (bool): whether the linear map adds a learnable bias. Default: ``False``.
        device (rustgrad.device, optional): where the linear weight is created.
        dtype (rustgrad.dtype, optional): the linear weight's dtype.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``. Default: ``'mean'``.
        weight (Tensor, optional): a weight for each of the ``C`` classes, ``(C)``.
        ignore_index (int, optional): a class index whose entries add nothing (class indices
            only; ``None`` means -100). Default: ``None``.
        label_smoothing (float): in [0, 1]. Default: ``0.0``.
        options (optional): torch's chunking options; the loss is computed unchunked.

    Shape:
        - Input: ``(in_features)`` or ``(N, in_features)``.
        - Target: class indices ``()``, ``(N)`` or ``(N, *out_features)``, or class
          probabilities ``(C)`` or ``(N, C, *out_features)``.
        - Output: a scalar; the target's shape (of indices) with ``reduction='none'``.

    Example::

        >>> loss = nn.LinearCrossEntropyLoss(2, 3, out_features=(5,))
        >>> loss.linear
        Linear(in_features=2, out_features=15, bias=False)
        >>> loss(torch.randn(4, 2), torch.zeros(4, 5, dtype=torch.long)).shape
        torch.Size([])
    """

    num_classes: int
    out_features: Tuple[int, ...]
    ignore_index: Optional[int]
    label_smoothing: float

    def __init__(self, in_features: int, num_classes: int, *, out_features: Tuple[int, ...] = (),
                 bias: bool = False, device: Any = None, dtype: Any = None,
                 reduction: str = "mean", weight: Optional[Tensor] = None,
                 ignore_index: Optional[int] = None, label_smoothing: float = 0.0,
                 options: Any = None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError("expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight, None, None, reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        # the weight is stored flat, (C * prod(out_features), in_features), and reshaped in
        # forward, as torch's
        self.linear = Linear(in_features, math.prod(out_features) * num_classes, bias=bias,
                             device=device, dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input``'s logits and ``target``."""
        weight = self.linear.weight.reshape(
            (self.num_classes, *self.out_features, self.linear.in_features))
        bias = None if self.linear.bias is None else \
            self.linear.bias.reshape((self.num_classes, *self.out_features))
        return F.linear_cross_entropy(input, weight, target, linear_bias=bias,
                                      weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing, options=self.options)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward

    def extra_repr(self) -> str:
        """The linear map's sizes and the loss's options."""
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")


class BCELoss(_WeightedLoss):
    """The binary cross entropy between probabilities ``input`` and targets in [0, 1]:
    ``-(target * log(input) + (1 - target) * log(1 - input))``, the logs clamped to at
    least -100.

    Args:
        weight (Tensor, optional): multiplies the loss of each element (broadcast).
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the loss of each
            element, their mean or their sum. Default: ``'mean'``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Target: ``(*)``, the shape of the input.
        - Output: a scalar; ``(*)`` with ``reduction='none'``.
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class BCEWithLogitsLoss(_Loss):
    """A sigmoid followed by :class:`BCELoss`, computed stably from the logits ``input``:
    ``-(target * log(sigmoid(input)) + (1 - target) * log(1 - sigmoid(input)))``.

    Args:
        weight (Tensor, optional): multiplies the loss of each element (broadcast).
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the loss of each
            element, their mean or their sum. Default: ``'mean'``.
        pos_weight (Tensor, optional): a weight for the positive term of each class.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Target: ``(*)``, the shape of the input.
        - Output: a scalar; ``(*)`` with ``reduction='none'``.

    Example::

        >>> loss = nn.BCEWithLogitsLoss()
        >>> loss(torch.tensor([0.0, 2.0]), torch.tensor([0.0, 1.0]))
        tensor(0.4100)
    """

    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean",
                 pos_weight: Optional[Tensor] = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class SmoothL1Loss(_Loss):
    """An L1 loss that is quadratic near zero: ``0.5 * d^2 / beta`` where ``|d| < beta`` and
    ``|d| - 0.5 * beta`` elsewhere, with ``d = input - target``.

    Args:
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the loss of each
            element, their mean or their sum. Default: ``'mean'``.
        beta (float): where the loss changes from quadratic to linear. Default: ``1.0``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Target: ``(*)``, the shape of the input.
        - Output: a scalar; ``(*)`` with ``reduction='none'``.
    """

    def __init__(self, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                 reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class HuberLoss(_Loss):
    """The Huber loss: ``0.5 * d^2`` where ``|d| < delta`` and ``delta * (|d| - 0.5 * delta)``
    elsewhere, with ``d = input - target``.

    Args:
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the loss of each
            element, their mean or their sum. Default: ``'mean'``.
        delta (float): where the loss changes from quadratic to linear. Default: ``1.0``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Target: ``(*)``, the shape of the input.
        - Output: a scalar; ``(*)`` with ``reduction='none'``.
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        if not isinstance(delta, (float, int)):
            raise TypeError(f"delta must be a float or int, got: {type(delta)}")
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class KLDivLoss(_Loss):
    """The Kullback-Leibler divergence ``target * (log(target) - input)`` of each element, where
    ``input`` holds log-probabilities (and ``target`` probabilities, or log-probabilities
    with ``log_target=True``).

    Args:
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'batchmean'`` | ``'sum'`` | ``'mean'``; ``'batchmean'``
            divides the sum by the batch size, matching the definition of the divergence.
            Default: ``'mean'`` (with a warning).
        log_target (bool): whether ``target`` holds log-probabilities. Default: ``False``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Target: ``(*)``, the shape of the input.
        - Output: a scalar; ``(*)`` with ``reduction='none'``.
    """

    def __init__(self, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                 reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class SoftMarginLoss(_Loss):
    """The two-class logistic loss ``log(1 + exp(-target * input))``, with targets 1 or -1.

    Args:
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the loss of each
            element, their mean or their sum. Default: ``'mean'``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Target: ``(*)``, the shape of the input.
        - Output: a scalar; ``(*)`` with ``reduction='none'``.
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.soft_margin_loss(input, target, reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class MarginRankingLoss(_Loss):
    """The ranking loss ``max(0, -target * (input1 - input2) + margin)``: ``target`` is 1 where
    ``input1`` should rank higher and -1 where ``input2`` should.

    Args:
        margin (float): the margin. Default: ``0.0``.
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the loss of each
            element, their mean or their sum. Default: ``'mean'``.

    Shape:
        - Input1, Input2, Target: ``(N)`` or ``()``.
        - Output: a scalar; ``(N)`` with ``reduction='none'``.
    """

    def __init__(self, margin: float = 0.0, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input1``, ``input2`` and ``target`` (see the class docstring)."""
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class HingeEmbeddingLoss(_Loss):
    """The hinge embedding loss: ``input`` where ``target`` is 1 and ``max(0, margin - input)``
    where it is -1; ``input`` is typically a distance between two embeddings.

    Args:
        margin (float): the margin. Default: ``1.0``.
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the loss of each
            element, their mean or their sum. Default: ``'mean'``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Target: ``(*)``, the shape of the input.
        - Output: a scalar; ``(*)`` with ``reduction='none'``.
    """

    def __init__(self, margin: float = 1.0, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class CosineEmbeddingLoss(_Loss):
    """The cosine embedding loss: ``1 - cos(input1, input2)`` where ``target`` is 1 and
    ``max(0, cos(input1, input2) - margin)`` where it is -1.

    Args:
        margin (float): the margin, in [-1, 1]. Default: ``0.0``.
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the loss of each
            element, their mean or their sum. Default: ``'mean'``.

    Shape:
        - Input1, Input2: ``(N, D)`` or ``(D)``.
        - Target: ``(N)`` or ``()``.
        - Output: a scalar; ``(N)`` with ``reduction='none'``.
    """

    def __init__(self, margin: float = 0.0, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input1``, ``input2`` and ``target`` (see the class docstring)."""
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class PoissonNLLLoss(_Loss):
    """The negative log-likelihood of ``target`` under a Poisson distribution: with
    ``log_input=True``, ``exp(input) - target * input``; otherwise
    ``input - target * log(input + eps)``.

    Args:
        log_input (bool): whether the input is the log of the rate. Default: ``True``.
        full (bool): add Stirling's approximation of ``log(target!)``. Default: ``False``.
        size_average (bool, optional): deprecated; use ``reduction``.
        eps (float): avoids ``log(0)`` when ``log_input=False``. Default: ``1e-8``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``. Default: ``'mean'``.

    Shape:
        - Input: ``(*)``, any number of dimensions.
        - Target: ``(*)``, the shape of the input.
        - Output: a scalar; ``(*)`` with ``reduction='none'``.
    """

    def __init__(self, log_input: bool = True, full: bool = False,
                 size_average: Optional[bool] = None, eps: float = 1e-8,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``log_input`` and ``target`` (see the class docstring)."""
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class GaussianNLLLoss(_Loss):
    """The negative log-likelihood of ``target`` under a normal distribution of mean ``input``
    and variance ``var``: ``0.5 * (log(var) + (input - target)^2 / var)``.

    Args:
        full (bool): add the constant ``0.5 * log(2 * pi)``. Default: ``False``.
        eps (float): the smallest variance used (clamped). Default: ``1e-6``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the loss of each
            element, their mean or their sum. Default: ``'mean'``.

    Shape:
        - Input, Target: ``(N, *)`` or ``(*)``.
        - Var: the input's shape, or with one dimension of size 1.
        - Output: a scalar; the input's shape with ``reduction='none'``.
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6,
                 reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor) -> Tensor:
        """Computes the loss of ``input``, ``target`` and ``var`` (see the class docstring)."""
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class MultiMarginLoss(_WeightedLoss):
    """The multi-class hinge loss: per sample, the mean over the other classes ``i`` of
    ``max(0, margin - x[y] + x[i]) ** p`` (times ``weight[y]``).

    Args:
        p (int): 1 or 2. Default: ``1``.
        margin (float): the margin. Default: ``1.0``.
        weight (Tensor, optional): a weight per class ``(C)``.
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``. Default: ``'mean'``.

    Shape:
        - Input: ``(N, C)`` or ``(C)``.
        - Target: ``(N)`` or ``()``, class indices.
        - Output: a scalar; ``(N)`` with ``reduction='none'``.

    Example::

        >>> nn.MultiMarginLoss()(torch.tensor([[0.1, 0.2, 0.4, 0.8]]), torch.tensor([3]))
        tensor(0.3250)
    """

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Optional[Tensor] = None,
                 size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class MultiLabelMarginLoss(_Loss):
    """The multi-label hinge loss: per sample, the sum over its target classes ``j`` and
    other classes ``i`` of ``max(0, 1 - (x[j] - x[i]))``, divided by the number of classes.

    Args:
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``. Default: ``'mean'``.

    Shape:
        - Input: ``(N, C)`` or ``(C)``.
        - Target: the input's shape: target classes first, then ``-1``.
        - Output: a scalar; ``(N)`` with ``reduction='none'``.

    Example::

        >>> loss = nn.MultiLabelMarginLoss()
        >>> loss(torch.tensor([[0.1, 0.2, 0.4, 0.8]]), torch.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class TripletMarginLoss(_Loss):
    """The triplet loss ``max(0, margin + d(a, p) - d(a, n))``, with ``d`` the ``p``-norm
    pairwise distance.

    Args:
        margin (float): the margin. Default: ``1.0``.
        p (float): the norm's order. Default: ``2.0``.
        eps (float): added to the differences. Default: ``1e-6``.
        swap (bool): use the smaller of ``d(a, n)`` and ``d(p, n)``. Default: ``False``.
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``. Default: ``'mean'``.

    Shape:
        - Anchor, positive, negative: ``(N, D)`` or ``(D)``.
        - Output: a scalar; ``(N)`` with ``reduction='none'``.

    Example::

        >>> a = torch.tensor([[0., 0.]])
        >>> nn.TripletMarginLoss(eps=0.)(a, a + 1, a + 2)
        tensor(0.)
    """

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """Computes the loss of the triplets (see the class docstring)."""
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class TripletMarginWithDistanceLoss(_Loss):
    """The triplet loss ``max(0, margin + d(a, p) - d(a, n))`` with any distance function
    (:class:`PairwiseDistance` by default).

    Args:
        distance_function (callable, optional): ``d(x1, x2)``, a non-negative tensor.
        margin (float): the margin, greater than 0. Default: ``1.0``.
        swap (bool): use the smaller of ``d(a, n)`` and ``d(p, n)``. Default: ``False``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``. Default: ``'mean'``.

    Example::

        >>> a = torch.tensor([[0., 0.]])
        >>> nn.TripletMarginWithDistanceLoss()(a, a, a + 3.)
        tensor(0.)
    """

    def __init__(self, *, distance_function: Optional[Callable[[Tensor, Tensor], Tensor]] = None,
                 margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = (distance_function if distance_function is not None
                                  else PairwiseDistance())
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """Computes the loss of the triplets (see the class docstring)."""
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class CTCLoss(_Loss):
    """The connectionist temporal classification loss: the negative log likelihood of each
    target sequence under the (T, N, C) log probabilities, summed over its alignments.

    Args:
        blank (int): the blank label. Default: ``0``.
        reduction (str): ``'none'`` | ``'mean'`` (each loss divided by its target length, then
            averaged) | ``'sum'``. Default: ``'mean'``.
        zero_infinity (bool): make infinite losses (inputs too short for their targets) and
            their gradients 0. Default: ``False``.

    Example::

        >>> lp = torch.zeros(3, 1, 2).log_softmax(2)
        >>> nn.CTCLoss(reduction="sum")(lp, torch.tensor([[1]]), (3,), (1,))
        tensor(0.2877)
    """

    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Any,
                target_lengths: Any) -> Tensor:
        """Computes the loss (see the class docstring)."""
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward
