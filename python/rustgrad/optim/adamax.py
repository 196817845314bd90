"""Adamax (Adam with the infinity norm) with weight decay and maximize (torch's single-tensor
update)."""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Union

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma, _lerp_, _step_tensor, _zeros_like, check_args

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax: Adam whose second moment is an exponentially weighted infinity norm."""

    def __init__(self, params: ParamsT, lr: Union[float, Tensor] = 2e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: Optional[bool] = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_args(lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs one optimization step (the closure, if given, recomputes the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            wd = group["weight_decay"]
            maximize = group["maximize"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_inf"] = _zeros_like(p)
                xp = p._backend
                pd = p._data
                g = p.grad._data
                if maximize:
                    g = -g
                step_t = state["step"]
                step_t._data[...] += 1
                if wd != 0:
                    g = _fma(xp, wd, pd, g)
                m = state["exp_avg"]._data
                u = state["exp_inf"]._data
                _lerp_(xp, m, g, 1 - beta1)
                u *= beta2
                xp.maximum(u, xp.abs(g) + eps, out=u)
                clr = lr / (1 - beta1 ** float(step_t.item()))
                pd += ((-clr) * m) / u
                for t in state.values():
                    t._bump_version()
                p._bump_version()
        return loss
