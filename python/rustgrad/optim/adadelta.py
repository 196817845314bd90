"""Adadelta with weight decay and maximize (torch's single-tensor update)."""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma, _step_tensor, _zeros_like, check_args

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta: steps scaled by the ratio of running RMS of updates and of gradients.

    With g the gradient (plus ``weight_decay * p``): ``v = rho * v + (1 - rho) * g**2``,
    ``delta = sqrt(u + eps) / sqrt(v + eps) * g``, ``u = rho * u + (1 - rho) * delta**2``, then
    ``p -= lr * delta``. v and u are ``square_avg`` and ``acc_delta`` in the state.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float, Tensor): a factor on delta. Default: ``1.0``.
        rho (float): decay rate of the running averages, in [0, 1]. Default: ``0.9``.
        eps (float): added inside the square roots for numerical stability. Default: ``1e-6``.
        weight_decay (float): weight decay (L2 penalty). Default: 0.
        maximize (bool): ascend the objective (use -grad). Default: ``False``.
        foreach, capturable, differentiable: accepted for torch compatibility; the
            single-tensor update is always used.

    Example::

        >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = torch.optim.Adadelta([w], lr=1.0)
        >>> for _ in range(2):
        ...     opt.zero_grad()
        ...     (w ** 2).sum().backward()
        ...     opt.step()
        >>> w
        tensor([ 0.9936, -1.9936], requires_grad=True)
    """

    def __init__(self, params: ParamsT, lr: Union[float, Tensor] = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0, foreach: Optional[bool] = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_args(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_args(eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs one optimization step (the closure, if given, recomputes the loss).

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            rho = group["rho"]
            eps = group["eps"]
            wd = group["weight_decay"]
            maximize = group["maximize"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _zeros_like(p)
                    state["acc_delta"] = _zeros_like(p)
                xp = p._backend
                pd = p._data
                g = p.grad._data
                state["step"]._data[...] += 1
                if maximize:
                    g = -g
                if wd != 0:
                    g = _fma(xp, wd, pd, g)
                sq = state["square_avg"]._data
                acc = state["acc_delta"]._data
                sq *= rho
                sq[...] = _fma(xp, (1 - rho) * g, g, sq)
                std = xp.sqrt(sq + eps)
                delta = xp.sqrt(acc + eps)
                delta /= std
                delta *= g
                acc *= rho
                acc[...] = _fma(xp, (1 - rho) * delta, delta, acc)
                pd[...] = _fma(xp, -lr, delta, pd)
                for t in state.values():
                    t._bump_version()
                p._bump_version()
        return loss
