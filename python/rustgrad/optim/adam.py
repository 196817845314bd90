"""Adam (and, with decoupled_weight_decay, AdamW), amsgrad and maximize: torch's
single-tensor update."""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

from .optimizer import Optimizer, ParamsT, _fma, _lerp_, _step_tensor, _zeros_like, check_args

__all__ = ["Adam"]


class Adam(Optimizer):
    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: Optional[bool] = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 fused: Optional[bool] = None, decoupled_weight_decay: bool = False) -> None:
        check_args(lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            wd = group["weight_decay"]
            amsgrad = group["amsgrad"]
            maximize = group["maximize"]
            decoupled = group["decoupled_weight_decay"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = _zeros_like(p)
                xp = p._backend
                pd = p._data
                g = p.grad._data
                if maximize:
                    g = -g
                step_t = state["step"]
                step_t._data[...] += 1
                step_t._bump_version()
                if wd != 0:
                    if decoupled:
                        pd *= 1 - lr * wd
                    else:
                        g = _fma(xp, wd, pd, g)
                m = state["exp_avg"]._data
                v = state["exp_avg_sq"]._data
                _lerp_(xp, m, g, 1 - beta1)
                v *= beta2
                v[...] = _fma(xp, (1 - beta2) * g, g, v)
                step = float(step_t.item())
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = bias_correction2**0.5
                if amsgrad:
                    vmax = state["max_exp_avg_sq"]._data
                    xp.maximum(vmax, v, out=vmax)
                    state["max_exp_avg_sq"]._bump_version()
                    denom = xp.sqrt(vmax) / bias_correction2_sqrt
                else:
                    denom = xp.sqrt(v) / bias_correction2_sqrt
                denom += eps
                pd += ((-step_size) * m) / denom
                state["exp_avg"]._bump_version()
                state["exp_avg_sq"]._bump_version()
                p._bump_version()
        return loss
