"""Adafactor: Adam-like steps with a factored second moment for matrices (torch's single-tensor
update)."""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Tuple, Union

from .. import _creation, _dtype
from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma, _lerp_, _step_tensor

__all__ = ["Adafactor"]


def _norm(xp: Any, a: Any) -> float:
    """The 2-norm of an array as a Python float (the sum in the array's dtype, as torch's)."""
    return float(xp.sqrt(xp.sum(a * a)).item())


class Adafactor(Optimizer):
    """Adafactor: relative step sizes and a second-moment estimate that, for a parameter of two
    or more dimensions, keeps only its row and column means (memory of rows + columns instead of
    rows * columns).

    At step t, with g the gradient: ``beta2_t = 1 - t ** beta2_decay``,
    ``rho = min(lr, 1 / sqrt(t))`` and ``alpha = max(eps2, RMS(p)) * rho``. The parameter is
    first decayed, ``p *= 1 - lr * weight_decay``. For a matrix (batched over leading dims)
    ``row_var`` and ``col_var`` follow the means of ``g * g`` over the last and the second to
    last dimension (``lerp`` by ``1 - beta2_t``) and ``v = row_var @ col_var /
    max(mean(row_var), eps1)``; for a vector ``variance`` follows ``g * g`` itself. Then
    ``u = g / sqrt(max(v, eps1 ** 2))`` and ``p -= alpha * u / max(1, RMS(u) / d)``.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float, Tensor): the weight decay's coefficient and the largest relative step size.
            Default: ``1e-2``.
        beta2_decay (float): the decay rate of beta2 (<= 0). Default: ``-0.8``.
        eps (Tuple[float or None, float]): (eps1, eps2): eps1 bounds the denominators (None: the
            machine epsilon of the first parameter's dtype), eps2 the smallest parameter scale.
            Default: ``(None, 1e-3)``.
        d (float): the clipping threshold of the update's RMS (>= 1). Default: ``1.0``.
        weight_decay (float): the decoupled weight decay. Default: ``0.0``.
        foreach (bool, optional): accepted for torch compatibility; the single-tensor update is
            always used.
        maximize (bool): ascend the objective (use -grad). Default: ``False``.

    Example::

        >>> w = torch.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
        >>> opt = torch.optim.Adafactor([w])
        >>> for _ in range(2):
        ...     opt.zero_grad()
        ...     (w ** 2).sum().backward()
        ...     opt.step()
        >>> w
        tensor([[ 0.9468, -1.9669],
                [ 0.4804,  2.9635]], requires_grad=True)
        >>> sorted(opt.state[w])
        ['col_var', 'row_var', 'step']
    """

    def __init__(self, params: ParamsT, lr: Union[float, Tensor] = 1e-2,
                 beta2_decay: float = -0.8, eps: Tuple[Optional[float], float] = (None, 1e-3),
                 d: float = 1.0, weight_decay: float = 0.0, *, foreach: Optional[bool] = None,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs one optimization step (the closure, if given, recomputes the loss).

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params = self._params_with_grad(group)
            for p in params:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    if p.grad.dim() > 1:
                        shape = list(p.grad.shape)
                        state["row_var"] = _creation.zeros(shape[:-1] + [1], dtype=p.grad.dtype,
                                                           device=p.grad.device)
                        state["col_var"] = _creation.zeros(shape[:-2] + [1, shape[-1]],
                                                           dtype=p.grad.dtype,
                                                           device=p.grad.device)
                    else:
                        state["variance"] = _creation.zeros_like(p.grad)
            self._update(group, params)
        return loss

    def _update(self, group: dict, params: list) -> None:
        lr = float(group["lr"])
        beta2_decay = group["beta2_decay"]
        eps1, eps2 = group["eps"]
        d = group["d"]
        wd = group["weight_decay"]
        for p in params:
            state = self.state[p]
            xp = p._backend
            pd = p._data
            g = p.grad._data
            if group["maximize"]:
                g = -g
            if eps1 is None:  # as torch's: the first parameter's dtype decides for the group
                eps1 = _dtype.finfo(p.dtype).eps
            step_t = state["step"]
            step_t._data[...] += 1
            t = float(step_t.item())
            weight = t ** beta2_decay  # 1 - beta2_t
            rho = min(lr, 1 / t ** 0.5)
            alpha = max(eps2, _norm(xp, pd) / math.sqrt(p.numel())) * rho
            if wd != 0:
                pd *= 1 - lr * wd
            if g.ndim > 1:
                row, col = state["row_var"]._data, state["col_var"]._data
                for var, axis in ((row, -1), (col, -2)):
                    n = xp.sqrt(xp.sum(g * g, axis=axis, keepdims=True))
                    _lerp_(xp, var, n * n / g.shape[axis], weight)
                estimate = xp.matmul(row, col)
                estimate /= xp.maximum(xp.mean(row, axis=-2, keepdims=True), eps1)
            else:
                var = state["variance"]._data
                _lerp_(xp, var, g * g, weight)
                estimate = var.copy()
            update = 1 / xp.sqrt(xp.maximum(estimate, eps1 * eps1))
            update *= g
            denom = max(1.0, _norm(xp, update) / (math.sqrt(update.size) * d))
            pd[...] = _fma(xp, -alpha / denom, update, pd)
            for s in state.values():
                s._bump_version()
            p._bump_version()
