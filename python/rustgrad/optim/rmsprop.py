"""RMSprop with momentum, centering, weight decay and maximize (torch's single-tensor
update)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from .optimizer import Optimizer, ParamsT, _fma, _lerp_, _step_tensor, _zeros_like

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params: ParamsT, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False,
                 foreach: Optional[bool] = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            alpha = group["alpha"]
            eps = group["eps"]
            wd = group["weight_decay"]
            momentum = group["momentum"]
            centered = group["centered"]
            maximize = group["maximize"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = _zeros_like(p)
                    if centered:
                        state["grad_avg"] = _zeros_like(p)
                xp = p._backend
                pd = p._data
                g = p.grad._data
                if maximize:
                    g = -g
                state["step"]._data[...] += 1
                if wd != 0:
                    g = _fma(xp, wd, pd, g)
                sq = state["square_avg"]._data
                sq *= alpha
                sq[...] = _fma(xp, (1 - alpha) * g, g, sq)
                if centered:
                    ga = state["grad_avg"]._data
                    _lerp_(xp, ga, g, 1 - alpha)
                    avg = xp.sqrt(_fma(xp, -ga, ga, sq))
                else:
                    avg = xp.sqrt(sq)
                avg += eps
                if momentum > 0:
                    buf = state["momentum_buffer"]._data
                    buf *= momentum
                    buf += g / avg
                    pd[...] = _fma(xp, -lr, buf, pd)
                else:
                    pd += ((-lr) * g) / avg
                for t in state.values():
                    t._bump_version()
                p._bump_version()
        return loss
