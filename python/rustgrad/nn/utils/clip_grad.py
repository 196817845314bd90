"""clip_grad_norm_ and clip_grad_value_: rescale or clamp .grad in place, as torch."""

from __future__ import annotations

import math
import warnings
from typing import Any, Iterable, List, Optional, Union

from ..._creation import tensor as _tensor
from ..._tensor import Tensor

_TensorOrTensors = Union[Tensor, Iterable[Tensor]]


def _grads(parameters: _TensorOrTensors) -> List[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _norm_array(a: Any, p: float) -> float:
    """The p-norm of a backend array, as a Python float."""
    if a.size == 0:
        return 0.0
    if p == math.inf:
        return float(abs(a).max())
    if p == -math.inf:
        return float(abs(a).min())
    if p == 2:
        return float((a * a).sum()) ** 0.5
    if p == 1:
        return float(abs(a).sum())
    return float((abs(a) ** p).sum()) ** (1.0 / p)


def get_total_norm(tensors: _TensorOrTensors, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: Optional[bool] = None) -> Tensor:
    """Returns the norm of the norms of ``tensors``, as one would get by concatenating them.

    Args:
        tensors (Tensor or iterable of Tensor): the tensors (typically gradients).
        norm_type (float): the order of the norm; ``inf`` for the max norm. Default: ``2.0``.
        error_if_nonfinite (bool): raise if the total norm is nan or inf. Default: ``False``.
        foreach (bool, optional): accepted for torch compatibility; ignored.

    Returns:
        the total norm, a 0-dim tensor (0 when ``tensors`` is empty).
    """
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    norm_type = float(norm_type)

    if not tensors:
        return _tensor(0.0)
    norms = [_norm_array(t._data, norm_type) for t in tensors]
    if norm_type == math.inf:
        total = max(norms)
    elif norm_type == -math.inf:
        total = min(norms)
    else:
        total = sum(n**norm_type for n in norms) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return _tensor(total, dtype=tensors[0].dtype, device=tensors[0].device)


def clip_grad_norm_(parameters: _TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: Optional[bool] = None) -> Tensor:
    """Rescales the gradients of ``parameters`` in place so that their total norm is at most
    ``max_norm``.

    The total norm is computed over all ``.grad`` tensors together, as if concatenated into
    one vector. When it exceeds ``max_norm``, every ``.grad`` is multiplied by
    ``max_norm / (total_norm + 1e-6)``; parameters without a gradient are skipped. Call it
    between ``backward()`` and ``optimizer.step()``. Nothing is recorded by autograd.

    Args:
        parameters (Tensor or iterable of Tensor): the parameters whose gradients to clip.
        max_norm (float): the largest total norm allowed.
        norm_type (float): the order of the norm; ``inf`` for the max norm. Default: ``2.0``.
        error_if_nonfinite (bool): raise if the total norm is nan or inf. Default: ``False``.
        foreach (bool, optional): accepted for torch compatibility; ignored.

    Returns:
        the total norm of the gradients before clipping (a 0-dim tensor).

    Example::

        >>> w = nn.Parameter(torch.zeros(2))
        >>> (w * torch.tensor([3.0, 4.0])).sum().backward()
        >>> nn.utils.clip_grad_norm_([w], max_norm=1.0)
        tensor(5.)
        >>> w.grad
        tensor([0.6000, 0.8000])
    """
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    if not grads:
        return total
    clip_coef = float(max_norm) / (float(total.item()) + 1e-6)
    if clip_coef < 1.0:
        for g in grads:
            d = g._data
            d *= d.dtype.type(clip_coef)
            g._bump_version()
    return total


def clip_grad_norm(parameters: _TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: Optional[bool] = None) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_` (warns with a ``FutureWarning``)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: _TensorOrTensors, clip_value: float,
                     foreach: Optional[bool] = None) -> None:
    """Clamps the gradients of ``parameters`` in place to ``[-clip_value, clip_value]``.

    Parameters without a gradient are skipped; nothing is recorded by autograd.

    Args:
        parameters (Tensor or iterable of Tensor): the parameters whose gradients to clip.
        clip_value (float): the largest absolute value allowed.
        foreach (bool, optional): accepted for torch compatibility; ignored.

    Example::

        >>> w = nn.Parameter(torch.zeros(3))
        >>> (w * torch.tensor([-2.0, 0.5, 3.0])).sum().backward()
        >>> nn.utils.clip_grad_value_(w, 1.0)
        >>> w.grad
        tensor([-1.0000,  0.5000,  1.0000])
    """
    v = float(clip_value)
    for g in _grads(parameters):
        g._backend.clip(g._data, -v, v, out=g._data)
        g._bump_version()

