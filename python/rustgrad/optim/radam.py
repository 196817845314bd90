"""RAdam (Adam with a rectified adaptive learning rate), with L2 or decoupled weight decay and
maximize (torch's single-tensor update)."""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Union

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma, _lerp_, _step_tensor, _zeros_like, check_args

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam: Adam whose adaptive term is switched on, rectified, once its variance is finite.

    With m and v Adam's moment estimates, ``rho_inf = 2 / (1 - b2) - 1`` and
    ``rho_t = rho_inf - 2 * t * b2**t / (1 - b2**t)``: while ``rho_t <= 5`` the step is
    ``p -= lr * m / (1 - b1**t)`` (momentum SGD); after, it is multiplied by
    ``r_t * sqrt(1 - b2**t) / (sqrt(v) + eps)``, with the rectification
    ``r_t = sqrt((rho_t - 4) (rho_t - 2) rho_inf / ((rho_inf - 4) (rho_inf - 2) rho_t))``.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float, Tensor): the learning rate. Default: ``1e-3``.
        betas (Tuple[float, float]): the decay rates (b1, b2) of the moment estimates.
            Default: ``(0.9, 0.999)``.
        eps (float): added to the denominator for numerical stability. Default: ``1e-8``.
        weight_decay (float): weight decay. Default: 0.
        decoupled_weight_decay (bool): decay the weights directly (``p *= 1 - lr *
            weight_decay``, as AdamW) instead of adding an L2 term to g. Default: ``False``.
        maximize (bool): ascend the objective (use -grad). Default: ``False``.
        foreach, capturable, differentiable: accepted for torch compatibility; the
            single-tensor update is always used.

    Example::

        >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = torch.optim.RAdam([w], lr=0.1)
        >>> for _ in range(2):
        ...     opt.zero_grad()
        ...     (w ** 2).sum().backward()
        ...     opt.step()
        >>> w
        tensor([ 0.6211, -1.2421], requires_grad=True)
    """

    def __init__(self, params: ParamsT, lr: Union[float, Tensor] = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: Optional[bool] = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        check_args(lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs one optimization step (the closure, if given, recomputes the loss).

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            wd = group["weight_decay"]
            decoupled = group["decoupled_weight_decay"]
            maximize = group["maximize"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                xp = p._backend
                pd = p._data
                g = p.grad._data
                if maximize:
                    g = -g
                step_t = state["step"]
                step_t._data[...] += 1
                step = float(step_t.item())
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
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                update = (m / bias_correction1) * lr
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    # torch's `scalar / tensor` is reciprocal() * scalar
                    adaptive_lr = (1 / (xp.sqrt(v) + eps)) * bias_correction2**0.5
                    update = update * adaptive_lr
                    update *= rect
                pd -= update
                for t in state.values():
                    t._bump_version()
                p._bump_version()
        return loss
