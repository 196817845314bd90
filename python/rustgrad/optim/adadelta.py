"""Adadelta with weight decay and maximize (torch's single-tensor update)."""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma, _step_tensor, _zeros_like, check_args

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta: steps scaled by the ratio of running RMS of updates and of gradients."""

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
        """Performs one optimization step (the closure, if given, recomputes the loss)."""
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
