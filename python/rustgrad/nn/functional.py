"""torch.nn.functional: activations, losses, linear/conv/pooling, normalization, dropout,
attention.

The ops live in the `_ops` families (activation, conv, pool, loss, norm, linear, indexing), each
declaring its `nn.functional` name beside its definition; `_bind` binds them here. What is
written here is argument handling over those ops where torch's functional signature differs
from the op's (relu's inplace, softmax's _stacklevel, embedding's argument order) and the
composites that torch also writes in Python (l1_loss, kl_div, dropout, attention, ...).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, List, Optional, Tuple

from .. import _bind, _creation, _dtype
from .._creation import zeros_like as _zeros_like
from .._ops import activation as _act
from .._ops import conv as _conv
from .._ops import distance as _distance
from .._ops import indexing as _indexing
from .._ops import joins as _joins
from .._ops import linalg as _linalg
from .._ops import linear as _lin
from .._ops import loss as _loss
from .._ops import norm as _norm_ops
from .._ops import special as _special
from .._ops.compare import where as _where
from .._tensor import Tensor
from ..autograd import is_grad_enabled as _is_grad_enabled
from ..autograd import no_grad as _no_grad

# the reduction-argument helpers (nn.modules.loss uses `_reduction` too)
_reduction = _loss.legacy_reduction
_apply_reduction = _loss.apply_reduction


# ---- bilinear -----------------------------------------------------------------------------
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Optional[Tensor] = None) -> Tensor:
    # y_k = x1 @ W_k @ x2
    """Applies a bilinear transformation: ``y_k = x1 @ weight[k] @ x2 + bias[k]``.

    Args:
        input1 (Tensor): ``(*, in1_features)``.
        input2 (Tensor): ``(*, in2_features)``.
        weight (Tensor): ``(out_features, in1_features, in2_features)``.
        bias (Tensor, optional): ``(out_features)``.

    Returns:
        a tensor of shape ``(*, out_features)``.
    """
    out = ((input1.unsqueeze(1) @ weight).squeeze(-2) if input1.ndim == 1 else
           (input1.unsqueeze(1).unsqueeze(1) @ weight.unsqueeze(0)).squeeze(-2))
    out = (out * input2.unsqueeze(-2)).sum(-1)
    return out + bias if bias is not None else out


# ---- activations with a functional signature of their own ----------------------------------
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(input, 0); inplace writes it into input (ReluBackward0, as torch's relu_)."""
    return input.relu_() if inplace else _act.relu(input)


def relu_(input: Tensor) -> Tensor:
    """relu written into input."""
    return input.relu_()


def softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3,
            dtype: Optional[_dtype.dtype] = None) -> Tensor:
    """exp(input) / exp(input).sum(dim) (torch's implicit dim, with its warning, if none)."""
    if dim is None:
        dim = _act._softmax_dim(input.ndim, "softmax")
    return _act.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3,
                dtype: Optional[_dtype.dtype] = None) -> Tensor:
    """input - logsumexp(input, dim) (torch's implicit dim, with its warning, if none)."""
    if dim is None:
        dim = _act._softmax_dim(input.ndim, "log_softmax")
    return _act.log_softmax(input, dim, dtype)


# ---- dropout, embedding, one_hot ----------------------------------------------------------
def _dropout_mask(input: Tensor, shape: Tuple[int, ...], p: float) -> Tensor:
    """Kept entries scaled by 1/(1-p), dropped ones 0, drawn from rustgrad's generator."""
    r = _creation.rand(shape, dtype=input.dtype, device=input.device)
    if p == 1.0:
        return r * 0
    return (r < (1.0 - p)).to(input.dtype) * (1.0 / (1.0 - p))


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zeroes elements with probability p and scales the rest by 1/(1-p); the identity when
    not training."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        mask = _creation.zeros(input.shape, dtype=input.dtype, device=input.device)
    else:
        mask = _dropout_mask(input, input.shape, p)
    out = _act.inplace_input(input, inplace) * mask
    return _act.write_activation(input, out) if inplace else out


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zeroes whole channels of (N, C, H, W) (or (C, H, W)) input with probability p."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    mask = _dropout_mask(input, tuple(input.shape[:-2]) + (1, 1), p)
    out = _act.inplace_input(input, inplace) * mask
    return _act.write_activation(input, out) if inplace else out


def _feature_mask_shape(input: Tensor) -> Tuple[int, ...]:
    """One mask entry per (sample, channel) of (N, C, *) input: whole feature maps drop."""
    return tuple(input.shape[:2]) + (1,) * (input.ndim - 2)


def _channel_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    if not training or p == 0.0:
        return input
    if p == 1.0:
        mask = _creation.zeros(_feature_mask_shape(input), dtype=input.dtype,
                               device=input.device)
    else:
        mask = _dropout_mask(input, _feature_mask_shape(input), p)
    out = _act.inplace_input(input, inplace) * mask
    return _act.write_activation(input, out) if inplace else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zeroes whole channels of (N, C, L) (or (C, L)) input with probability p, scaling the
    others by 1/(1-p); the identity when not training.

    Args:
        input (Tensor): (N, C, L) or (C, L).
        p (float, optional): the probability of zeroing a channel. Default: 0.5.
        training (bool, optional): apply dropout (else return input). Default: True.
        inplace (bool, optional): write the result into input. Default: False.

    Example::

        >>> F.dropout1d(torch.ones(2, 3), 0.5, training=False)
        tensor([[1., 1., 1.],
                [1., 1., 1.]])
    """
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    if input.ndim == 2:
        if not training or p == 0.0:
            return input
        out = _channel_dropout(input.unsqueeze(0), p, training, inplace).squeeze(0)
        return input if inplace else out
    return _channel_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zeroes whole channels of (N, C, D, H, W) (or (C, D, H, W)) input with probability p,
    scaling the others by 1/(1-p); the identity when not training.

    Args:
        input (Tensor): (N, C, D, H, W) or (C, D, H, W).
        p (float, optional): the probability of zeroing a channel. Default: 0.5.
        training (bool, optional): apply dropout (else return input). Default: True.
        inplace (bool, optional): write the result into input. Default: False.

    Example::

        >>> F.dropout3d(torch.ones(1, 2, 1, 1, 1), 0.5, training=False).flatten()
        tensor([1., 1.])
    """
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).", UserWarning, stacklevel=2)
    if input.ndim == 4:
        if not training or p == 0.0:
            return input
        out = _channel_dropout(input.unsqueeze(0), p, training, inplace).squeeze(0)
        return input if inplace else out
    return _channel_dropout(input, p, training, inplace)


# SELU's negative saturation value, -scale * alpha: what alpha dropout sets dropped entries to
_ALPHA_PRIME = 1.7580993408473766


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                   shape: Tuple[int, ...]) -> Tensor:
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    src = _act.inplace_input(input, inplace)
    if p == 1.0:
        out = src * _creation.zeros(input.shape, dtype=input.dtype, device=input.device)
    else:
        keep = (_creation.rand(shape, dtype=input.dtype, device=input.device) < 1.0 - p).to(
            input.dtype)
        # an affine map after the mask keeps the mean and variance of SELU's fixed point
        a = 1.0 / math.sqrt((_ALPHA_PRIME ** 2 * p + 1) * (1 - p))
        b = (keep - 1) * (_ALPHA_PRIME * a) + _ALPHA_PRIME * a * p
        out = src * (keep * a) + b
    return _act.write_activation(input, out) if inplace else out


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped entries take SELU's negative saturation value and
    an affine map keeps the input's mean and variance; the identity when not training.

    Args:
        input (Tensor): the input tensor.
        p (float, optional): the probability of dropping an entry. Default: 0.5.
        training (bool, optional): apply dropout (else return input). Default: False.
        inplace (bool, optional): write the result into input. Default: False.

    Example::

        >>> F.alpha_dropout(torch.ones(3), 0.5)
        tensor([1., 1., 1.])
    """
    return _alpha_dropout(input, p, training, inplace, tuple(input.shape))


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """alpha_dropout of whole channels of (N, C, *) input; the identity when not training.

    Args:
        input (Tensor): (N, C, *), at least 2 dims.
        p (float, optional): the probability of dropping a channel. Default: 0.5.
        training (bool, optional): apply dropout (else return input). Default: False.
        inplace (bool, optional): write the result into input. Default: False.

    Example::

        >>> F.feature_alpha_dropout(torch.ones(1, 2), 0.5)
        tensor([[1., 1.]])
    """
    _check_p(p)
    if training and 0.0 < p and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = _feature_mask_shape(input) if input.ndim >= 2 else tuple(input.shape)
    return _alpha_dropout(input, p, training, inplace, shape)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax distribution over dim: softmax((logits + g) / tau), g
    Gumbel(0, 1) noise; with hard=True the one-hot of its argmax in value, with the soft
    sample's gradient (the straight-through estimator).

    Args:
        logits (Tensor): unnormalized log-probabilities.
        tau (float, optional): the temperature. Default: 1.
        hard (bool, optional): return one-hot samples. Default: False.
        eps (float, optional): deprecated, has no effect.
        dim (int, optional): the dim of the categories. Default: -1.

    Example::

        >>> y = F.gumbel_softmax(torch.zeros(2, 3), hard=True)
        >>> y.sum(-1)
        tensor([1., 1.])
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", UserWarning,
                      stacklevel=2)
    # -log(E), E ~ Exp(1) = -log(U) with U in (0, 1]
    u = 1.0 - _creation.rand(tuple(logits.shape), dtype=logits.dtype, device=logits.device)
    gumbels = -(-u.log()).log()
    y_soft = _act.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = _zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def embedding(input: Tensor, weight: Tensor, padding_idx: Optional[int] = None,
              max_norm: Optional[float] = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """The rows of weight at the indices in input (torch.embedding, whose arguments come in
    the other order); max_norm first renormalizes the rows used, in place."""
    if padding_idx is not None:
        n = weight.shape[0]
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            padding_idx += n
    else:
        padding_idx = -1
    if max_norm is not None:
        _indexing.embedding_renorm_(weight, input, max_norm, norm_type)
    return _indexing.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 rows with a 1 at each class index of tensor (a new last dim of num_classes)."""
    if tensor.dtype.is_floating_point or tensor.dtype == _dtype.bool_:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    n = tensor.numel()
    if num_classes == -1:
        num_classes = int(tensor.max()) + 1 if n else 0
    if n and int(tensor.min()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    if n and int(tensor.max()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = _creation.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(_dtype.int64)


# ---- distances ----------------------------------------------------------------------------
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """Divides ``input`` by its ``p``-norm along ``dim``: ``input / max(||input||_p, eps)``.

    Args:
        input (Tensor): the input.
        p (float): the order of the norm. Default: ``2.0``.
        dim (int): the dimension to normalize along. Default: ``1``.
        eps (float): the smallest norm divided by, avoiding a division by zero.
            Default: ``1e-12``.

    Example::

        >>> F.normalize(torch.tensor([[3.0, 4.0]]))
        tensor([[0.6000, 0.8000]])
    """
    # Tensor.norm: a zero vector's norm passes a zero gradient (sqrt's would be inf * 0)
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input)


# ---- losses composed of ops ---------------------------------------------------------------
def cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                  size_average: Optional[bool] = None, ignore_index: int = -100,
                  reduce: Optional[bool] = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over dim 1 (dim 0 for unbatched input) then nll_loss; class-index or
    class-probability targets, weight, ignore_index, label_smoothing, as torch."""
    reduction = _reduction(size_average, reduce, reduction)
    probabilities = tuple(target.shape) == tuple(input.shape)
    if probabilities:
        if not target.is_floating_point():
            raise RuntimeError("Expected floating point type for target with class "
                               f"probabilities, got {_dtype.scalar_type_name(target.dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(
            f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}"
        )
    if probabilities and input.ndim == 0:
        raise IndexError("Dimension specified as 1 but tensor has no dimensions")
    cdim = 0 if input.ndim == 1 else 1
    logp = _act.log_softmax(input, cdim)
    c = input.shape[cdim]
    wshape = [1] * input.ndim
    wshape[cdim] = c
    if probabilities:  # class probabilities
        t = target * (1 - label_smoothing) + label_smoothing / c if label_smoothing > 0 \
            else target
        prod = logp * t
        if weight is not None:
            prod = prod * weight.reshape(wshape)
        if reduction == "mean":
            return -prod.sum() / (input.numel() / c)
        if reduction == "sum":
            return -prod.sum()
        return -prod.sum(cdim)
    nll = _loss.nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing <= 0:
        return nll
    keep = target != ignore_index
    smooth = -(logp * weight.reshape(wshape)).sum(cdim) if weight is not None \
        else -logp.sum(cdim)
    # masked_fill, not where(keep, smooth, smooth * 0): an ignored entry must pass no
    # gradient (inf * 0 is nan where every target is ignored and the mean divides by 0)
    smooth = smooth.masked_fill(~keep, 0.0)
    if reduction == "mean":
        if weight is not None:
            wsel = weight[target[keep]]
            ret = smooth.sum() / wsel.sum()
        else:
            ret = smooth.sum() / keep.sum()
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return nll * (1 - label_smoothing) + ret * (label_smoothing / c)


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Optional[Tensor] = None, weight: Optional[Tensor] = None,
                         reduction: str = "mean", ignore_index: Optional[int] = None,
                         label_smoothing: float = 0.0, options: Any = None) -> Tensor:
    """cross_entropy of the logits ``linear(input, linear_weight, linear_bias)``, as torch's.

    Args:
        input (Tensor): ``(in_features)`` or ``(N, in_features)``.
        linear_weight (Tensor): ``(C, in_features)``, or ``(C, d1, ..., dK, in_features)``
            for a K-dimensional loss (batched input only).
        target (Tensor): class indices ``()``, ``(N)`` or ``(N, d1, ..., dK)``, or class
            probabilities of the logits' shape.
        linear_bias (Tensor, optional): ``(C)`` or ``(C, d1, ..., dK)``.
        weight (Tensor, optional): a weight for each of the ``C`` classes.
        reduction (str, optional): ``'none'`` | ``'mean'`` | ``'sum'``. Default: ``'mean'``.
        ignore_index (int, optional): a class index whose entries add nothing (class indices
            only); ``None`` means -100. Default: ``None``.
        label_smoothing (float, optional): in [0, 1]. Default: 0.0.
        options (optional): torch's chunking options; rustgrad computes the same loss
            unchunked whatever they say.

    Example::

        >>> x = torch.tensor([[1.0, 0.0]])
        >>> w = torch.tensor([[2.0, 0.0], [0.0, 2.0]])
        >>> F.linear_cross_entropy(x, w, torch.tensor([0]))
        tensor(0.1269)
    """
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError("expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batches = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), "
            f"got {in_features} and {linear_weight.shape[-1]}, respectively")
    classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {in_features}), got unbatched input with shape "
            f"{tuple(input.shape)}")
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    if out_features:
        rows = math.prod(out_features) * classes
        linear_weight = linear_weight.reshape(rows, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(rows)
    logits = _lin.linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)


def assert_int_or_pair(arg: Any, arg_name: str, message: str) -> None:
    """Raises AssertionError(message.format(arg_name)) unless arg is an int or has length 2.

    Example::

        >>> F.assert_int_or_pair((1, 2), "stride", "{} must be an int or a pair")
        >>> F.assert_int_or_pair([1, 2, 3], "stride", "{} must be an int or a pair")
        Traceback (most recent call last):
          ...
        AssertionError: stride must be an int or a pair
    """
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


def l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None,
            reduce: Optional[bool] = None, reduction: str = "mean",
            weight: Optional[Tensor] = None) -> Tensor:
    """The mean absolute error ``|input - target|``, reduced as ``reduction`` says.

    See :class:`~rustgrad.nn.L1Loss`.

    Args:
        input (Tensor): the prediction, any shape.
        target (Tensor): the target, the same shape.
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the elementwise loss,
            its mean or its sum. Default: ``'mean'``.
        weight (Tensor, optional): of input's shape, multiplies the elementwise loss; with
            ``'mean'`` the result is the weighted mean, divided by the sum of the weights.
    """
    reduction = _reduction(size_average, reduce, reduction)
    if weight is not None:
        _loss.check_weight_size(input, weight)
    _loss.check_target_size(input, target)
    loss = (input - target).abs()
    if weight is not None:
        # torch: the weighted mean, sum(weight * loss) / sum(weight)
        return _loss.weighted_reduction(loss * weight, weight, reduction)
    return _apply_reduction(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average: Optional[bool] = None,
           reduce: Optional[bool] = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Pointwise target * (log(target) - input) (input holds log-probabilities)."""
    reduction = _reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.", UserWarning, stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _special.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _apply_reduction(loss, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None,
                     reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """The two-class logistic loss ``log(1 + exp(-target * input))``, with targets 1 or -1.

    See :class:`~rustgrad.nn.SoftMarginLoss`.

    Args:
        input (Tensor): the scores, any shape.
        target (Tensor): 1 or -1, the same shape.
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the elementwise loss,
            its mean or its sum. Default: ``'mean'``.
    """
    if target.requires_grad and _is_grad_enabled():
        raise RuntimeError("The function 'soft_margin_loss' is not differentiable with respect "
                           "to argument 'target'. This input cannot have requires_grad True.")
    # -(input * target): input is the left operand of the product, as in torch's shape error
    loss = _act.stable_softplus(-(input * target))
    return _apply_reduction(loss, _reduction(size_average, reduce, reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                        reduction: str = "mean") -> Tensor:
    """The ranking loss ``max(0, -target * (input1 - input2) + margin)``.

    ``target`` is 1 where ``input1`` should rank higher and -1 where ``input2`` should.
    See :class:`~rustgrad.nn.MarginRankingLoss`.

    Args:
        input1 (Tensor): the first scores, ``(N)`` or ``()``.
        input2 (Tensor): the second scores, the same shape.
        target (Tensor): 1 or -1, the same shape.
        margin (float): the margin. Default: ``0.0``.
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the elementwise loss,
            its mean or its sum. Default: ``'mean'``.
    """
    loss = (-target * (input1 - input2) + margin).clamp(min=0)
    return _apply_reduction(loss, _reduction(size_average, reduce, reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                         reduction: str = "mean") -> Tensor:
    """The hinge embedding loss: ``input`` where ``target`` is 1, ``max(0, margin - input)``
    where it is -1 (``input`` is typically a distance).

    See :class:`~rustgrad.nn.HingeEmbeddingLoss`.

    Args:
        input (Tensor): the distances, any shape.
        target (Tensor): 1 or -1, the same shape.
        margin (float): the margin. Default: ``1.0``.
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the elementwise loss,
            its mean or its sum. Default: ``'mean'``.
    """
    # zeros, not input * 0 (nan where input is inf)
    zeros = _zeros_like(input)
    margin_clamp = (margin - input).clamp(min=0)
    out_m = _where(target == 1, zeros, margin_clamp)
    out_i = _where(target == -1, zeros, input)
    return _apply_reduction(out_i + out_m, _reduction(size_average, reduce, reduction))


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                          reduction: str = "mean") -> Tensor:
    """The cosine embedding loss: ``1 - cos(input1, input2)`` where ``target`` is 1,
    ``max(0, cos(input1, input2) - margin)`` where it is -1.

    See :class:`~rustgrad.nn.CosineEmbeddingLoss`.

    Args:
        input1 (Tensor): ``(N, D)`` or ``(D)``.
        input2 (Tensor): the same shape.
        target (Tensor): 1 or -1, ``(N)`` or ``()``.
        margin (float): the margin, in [-1, 1]. Default: ``0.0``.
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the elementwise loss,
            its mean or its sum. Default: ``'mean'``.
    """
    td = target.ndim
    if td > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.ndim != td + 1 or input2.ndim != td + 1:
        raise RuntimeError(
            f"{td}D target tensor expects {td + 1}D input tensors, but found inputs with sizes "
            f"{list(input1.shape)} and {list(input2.shape)}."
        )
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    m1 = (input1 * input1).sum(-1) + eps
    m2 = (input2 * input2).sum(-1) + eps
    cos = prod / (m1 * m2).sqrt()
    zeros = cos * 0
    pos = _where(target == 1, 1 - cos, zeros)
    neg = _where(target == -1, (cos - margin).clamp(min=0), zeros)
    return _apply_reduction(pos + neg, _reduction(size_average, reduce, reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: Optional[bool] = None, eps: float = 1e-8,
                     reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of ``target`` under a Poisson distribution of rate ``input``.

    With ``log_input=True`` the loss is ``exp(input) - target * input``; otherwise
    ``input - target * log(input + eps)``. See :class:`~rustgrad.nn.PoissonNLLLoss`.

    Args:
        input (Tensor): the rate (or its log), any shape.
        target (Tensor): the counts, the same shape.
        log_input (bool): whether ``input`` is the log of the rate. Default: ``True``.
        full (bool): add Stirling's approximation of ``log(target!)`` (for targets > 1).
            Default: ``False``.
        size_average (bool, optional): deprecated; use ``reduction``.
        eps (float): avoids ``log(0)`` when ``log_input=False``. Default: ``1e-8``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``. Default: ``'mean'``.
    """
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        # Stirling's term of the targets above 1, masked (not clamped): its gradient at a
        # target <= 1 is 0 * log(target), nan at 0 as torch's
        t = target
        stirling = t * t.log() - t + (t * (2 * math.pi)).log() * 0.5
        loss = loss + stirling.masked_fill(t <= 1, 0.0)
    return _apply_reduction(loss, _reduction(size_average, reduce, reduction))


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of ``target`` under a normal distribution of mean ``input`` and
    variance ``var``: ``0.5 * (log(var) + (input - target)^2 / var)``.

    ``var`` is clamped to at least ``eps`` (the gradient passes through the clamp, as in
    torch). See :class:`~rustgrad.nn.GaussianNLLLoss`.

    Args:
        input (Tensor): the predicted means, ``(N, *)`` or ``(*)``.
        target (Tensor): the targets, the same shape.
        var (Tensor): the predicted variances, the same shape or with one dimension of size 1.
        full (bool): add the constant ``0.5 * log(2 * pi)``. Default: ``False``.
        eps (float): the smallest variance used. Default: ``1e-6``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``. Default: ``'mean'``.
    """
    if not isinstance(var, Tensor):  # one variance for every element
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.new_full(tuple(input.shape), float(var))
    if tuple(var.shape) != tuple(input.shape):
        vs, xs = tuple(var.shape), tuple(input.shape)
        if xs[:-1] == vs:  # one variance per sample
            var = var.unsqueeze(-1)
        else:  # torch: the same rank, and one dimension of size 1 where they differ
            differ = [i for i, (a, b) in enumerate(zip(vs, xs)) if a != b]
            if len(vs) != len(xs) or len(differ) != 1 or vs[differ[0]] != 1:
                raise ValueError("var is of incorrect size")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")

    # clamped to eps in place of a copy, outside the graph: the gradient passes as if
    # unclamped, and an infinite variance stays inf (var + (clamped - var) would be nan)
    v = var.clone()
    with _no_grad():
        v.clamp_(min=eps)
    d = input - target
    loss = (v.log() + d * d / v) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _apply_reduction(loss, reduction)


# ---- attention ----------------------------------------------------------------------------
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Optional[Tensor] = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: Optional[float] = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v, as torch's math backend: a bool mask keeps the
    True entries, a float mask is added, `is_causal` keeps the lower triangle (an error with
    attn_mask, as documented); rows with every entry masked give 0, not NaN."""
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_dtype.cpp_name(query.dtype)} key.dtype: {_dtype.cpp_name(key.dtype)} and value.dtype: "
            f"{_dtype.cpp_name(value.dtype)} instead."
        )
    if attn_mask is not None and attn_mask.dtype != _dtype.bool_ and \
            not attn_mask.is_floating_point():
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {_dtype.cpp_name(attn_mask.dtype)} and  query.dtype: "
            f"{_dtype.cpp_name(query.dtype)} instead."
        )
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    if enable_gqa:
        key = key.repeat_interleave(query.size(-3) // key.size(-3), -3)
        value = value.repeat_interleave(query.size(-3) // value.size(-3), -3)
    keep: Optional[Tensor] = None
    bias: Optional[Tensor] = None
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError(
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                "is_causal=True"
            )
        keep = _creation.ones(L, S, dtype=_dtype.bool_, device=query.device).tril(diagonal=0)
    elif attn_mask is not None:
        if attn_mask.dtype == _dtype.bool_:
            keep = attn_mask
        else:
            bias = attn_mask
    attn = (query @ key.transpose(-2, -1)) * scale_factor
    if bias is not None:
        attn = attn + bias
    if keep is not None:
        attn = attn.masked_fill(keep.logical_not(), -math.inf)
    masked = keep is not None or bias is not None
    attn = _act.safe_softmax(attn, -1) if masked else _act.softmax(attn, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return attn @ value


def _canonical_mask(mask: Optional[Tensor], mask_name: str, other_type: Optional[Any],
                    other_name: str, target_type: Any, check_other: bool = True
                    ) -> Optional[Tensor]:
    """A bool mask becomes a float one (-inf where True); float masks pass unchanged."""
    if mask is None:
        return None

    is_float = mask.is_floating_point()
    if mask.dtype != _dtype.bool_ and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(
            f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type "
            "for both instead.", UserWarning, stacklevel=3)
    if not is_float:
        mask = _creation.zeros_like(mask, dtype=target_type).masked_fill_(mask, -math.inf)
    return mask


def _none_or_dtype(input: Optional[Tensor]) -> Optional[Any]:
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _in_projection_packed(q: Tensor, k: Tensor, v: Tensor, w: Tensor,
                          b: Optional[Tensor] = None) -> List[Tensor]:
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = _lin.linear(q, w, b)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2)
            proj = proj.contiguous()
            return [proj[0], proj[1], proj[2]]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        q_proj = _lin.linear(q, w_q, b_q)
        kv = _lin.linear(k, w_kv, b_kv).unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2)
        kv = kv.squeeze(-2).contiguous()
        return [q_proj, kv[0], kv[1]]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return [_lin.linear(q, w_q, b_q), _lin.linear(k, w_k, b_k), _lin.linear(v, w_v, b_v)]


def _mha_shape_check(query: Tensor, key: Tensor, value: Tensor,
                     key_padding_mask: Optional[Tensor], attn_mask: Optional[Tensor],
                     num_heads: int) -> bool:
    if query.dim() == 3:
        if not (key.dim() == 3 and value.dim() == 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                f"found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                f"found {attn_mask.dim()}-D tensor instead"
            )
        return True
    if query.dim() == 2:
        if not (key.dim() == 2 and value.dim() == 2):
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                f"but found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                    f"but found {attn_mask.dim()}-D tensor instead"
                )
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(
                        f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}"
                    )
        return False
    raise AssertionError(
        "query should be unbatched 2D or batched 3D tensor but received "
        f"{query.dim()}-D query tensor"
    )


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Optional[Tensor], in_proj_bias: Optional[Tensor],
        bias_k: Optional[Tensor], bias_v: Optional[Tensor], add_zero_attn: bool,
        dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Optional[Tensor],
        training: bool = True, key_padding_mask: Optional[Tensor] = None,
        need_weights: bool = True, attn_mask: Optional[Tensor] = None,
        use_separate_proj_weight: bool = False, q_proj_weight: Optional[Tensor] = None,
        k_proj_weight: Optional[Tensor] = None, v_proj_weight: Optional[Tensor] = None,
        static_k: Optional[Tensor] = None, static_v: Optional[Tensor] = None,
        average_attn_weights: bool = True, is_causal: bool = False
) -> Tuple[Tensor, Optional[Tensor]]:
    """torch.nn.functional.multi_head_attention_forward, step for step (time-first inputs)."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                f"{value.shape[:2]}"
            )
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but a projection is None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q = _lin.linear(query, q_proj_weight, b_q)
        k = _lin.linear(key, k_proj_weight, b_k)
        v = _lin.linear(value, v_proj_weight, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                    f"{(tgt_len, src_len)}."
                )
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                    f"{(bsz * num_heads, tgt_len, src_len)}."
                )
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key.")
        k = _joins.cat([k, bias_k.repeat(1, bsz, 1)])
        v = _joins.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = _conv.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = _conv.pad(key_padding_mask, (0, 1))

    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = (k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None
         else static_k)
    v = (v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None
         else static_v)

    if add_zero_attn:
        zeros = _creation.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k = _joins.cat([k, zeros], 1)
        v = _joins.cat([v, zeros], 1)
        if attn_mask is not None:
            attn_mask = _conv.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = _conv.pad(key_padding_mask, (0, 1))

    src_len = k.size(1)
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(
                f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                f"{key_padding_mask.shape[0]}"
            )
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(
                f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                f"{key_padding_mask.shape[1]}"
            )
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(
            -1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        E = q.shape[-1]
        q_scaled = q * math.sqrt(1.0 / float(E))
        if attn_mask is not None:
            weights = _linalg.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            weights = _linalg.bmm(q_scaled, k.transpose(-2, -1))
        weights = softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = _linalg.bmm(weights, v)
        out = out.transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)
        out = _lin.linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.size(1))
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out = out.squeeze(1)
            weights = weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).contiguous().view(bsz * tgt_len, embed_dim)
    out = _lin.linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.size(1))
    if not is_batched:
        out = out.squeeze(1)
    return out, None



# ---- instance_norm, rms_norm, multilabel_soft_margin_loss (composites, as torch's) -------------
def instance_norm(input: Tensor, running_mean: Optional[Tensor] = None,
                  running_var: Optional[Tensor] = None, weight: Optional[Tensor] = None,
                  bias: Optional[Tensor] = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Each channel of each sample normalized over its own spatial elements."""
    if use_input_stats:
        spatial = 1
        for s in input.shape[2:]:
            spatial *= s
        if spatial == 1:
            raise ValueError("Expected more than 1 spatial element when training, got input size "
                             f"{input.shape}")
    elif running_mean is None or running_var is None:
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    # torch's: one batch_norm over (1, N*C, *) with the per-channel tensors repeated N times
    b, c = input.shape[0], input.shape[1]
    flat = input.contiguous().view(1, b * c, *input.shape[2:])
    rep = [None if t is None else t.repeat(b) for t in (weight, bias, running_mean, running_var)]
    out = _norm_ops.batch_norm(flat, rep[2], rep[3], rep[0], rep[1], use_input_stats, momentum, eps)
    with _no_grad():
        for mine, tmp in ((running_mean, rep[2]), (running_var, rep[3])):
            if mine is not None and tmp is not None:
                mine.copy_(tmp.view(b, c).mean(0))
    return out.view(input.shape)


def rms_norm(input: Tensor, normalized_shape: List[int], weight: Optional[Tensor] = None,
             eps: Optional[float] = None) -> Tensor:
    """input divided by the root mean square over its last len(normalized_shape) dims."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    k = len(shape)
    _norm_ops.check_normalized_shape(tuple(shape), weight, None)
    if k > input.ndim:
        raise ValueError(f"Input tensor must have at least {k} dimensions, but got {input.ndim}")
    if list(input.shape[input.ndim - k:]) != shape:
        # torch's rms_norm words the shape without layer_norm's ", " after the "*"
        raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape "
                           f"[*{', '.join(str(s) for s in shape)}], but got input of size"
                           f"{list(input.shape)}")
    if eps is None:
        eps = _dtype.finfo(input.dtype).eps
    dims = list(range(input.ndim - k, input.ndim))
    out = input * (input.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Each entry divided by (k + alpha * mean of the squares of its `size` neighbouring
    channels) ** beta (the window zero-padded at the ends of the channel dim).

    Args:
        input (Tensor): (N, C, *), at least 3 dims.
        size (int): the number of channels in each window.
        alpha (float, optional): the scale. Default: 1e-4.
        beta (float, optional): the exponent. Default: 0.75.
        k (float, optional): the additive constant. Default: 1.

    Example::

        >>> F.local_response_norm(torch.ones(1, 2, 1), 2, alpha=1., beta=1.)
        tensor([[[0.6667],
                 [0.5000]]])
    """
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         "dimensions)")
    if input.numel() == 0:
        return input
    n, c = input.shape[0], input.shape[1]
    # channels last, padded by size // 2 before and (size - 1) // 2 after, windowed
    sq = (input * input).reshape(n, c, -1).transpose(1, 2)
    sq = _conv.pad(sq, (size // 2, (size - 1) // 2))
    div = sq.unfold(2, size, 1).mean(-1).transpose(1, 2).reshape(input.shape)
    return input / (div * alpha + k).pow(beta)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Optional[Any] = None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """The triplet loss max(0, margin + d(anchor, positive) - d(anchor, negative)) with any
    distance function d (pairwise_distance by default).

    Args:
        anchor (Tensor): the anchors.
        positive (Tensor): the samples that should be near.
        negative (Tensor): the samples that should be far.
        distance_function (callable, optional): d(x1, x2), a non-negative tensor per pair.
        margin (float, optional): the margin, greater than 0. Default: 1.
        swap (bool, optional): use the smaller of d(anchor, negative) and d(positive,
            negative). Default: False.
        reduction (str, optional): "none", "mean" or "sum". Default: "mean".

    Example::

        >>> a = torch.tensor([[0., 0.]])
        >>> F.triplet_margin_with_distance_loss(a, a, a + 3., distance_function=torch.cdist)
        tensor(0.)
    """
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _loss.check_triplet_dims(anchor, positive, negative)
    dist = _distance.pairwise_distance if distance_function is None else distance_function
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    loss = (margin + d_pos - d_neg).clamp(min=0)
    return _apply_reduction(loss, _reduction(None, None, reduction))


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                                size_average: Optional[bool] = None,
                                reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """Binary logistic loss per class, averaged over the classes (last dim)."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(size_average, reduce, reduction)
    if input.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    ls = _act.logsigmoid
    loss = -(target * ls(input) + (1 - target) * ls(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(dim=class_dim) / input.shape[class_dim]
    return _apply_reduction(loss, reduction)


__all__ = [
    "bilinear", "relu", "relu_", "softmax", "log_softmax", "dropout", "dropout2d", "embedding",
    "one_hot", "normalize", "cross_entropy", "l1_loss",
    "kl_div", "soft_margin_loss", "margin_ranking_loss", "hinge_embedding_loss",
    "cosine_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "scaled_dot_product_attention", "multi_head_attention_forward",
    "instance_norm", "rms_norm", "multilabel_soft_margin_loss", "dropout1d", "dropout3d",
    "alpha_dropout", "feature_alpha_dropout", "gumbel_softmax", "local_response_norm",
    "triplet_margin_with_distance_loss", "linear_cross_entropy", "assert_int_or_pair",
]
# every op declared with an nn.functional name (linear, conv2d, pad, max_pool2d, gelu,
# layer_norm, nll_loss, ...), bound once; see rustgrad/_bind.py
__all__ += _bind.bind_namespace(globals(), "rustgrad.nn.functional", "functional")
