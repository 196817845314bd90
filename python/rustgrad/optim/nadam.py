"""NAdam (Adam with Nesterov momentum and momentum decay), with L2 or decoupled weight decay
and maximize (torch's single-tensor update)."""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Union

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma, _lerp_, _step_tensor, _zeros_like, check_args

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam: Adam with a Nesterov look-ahead on the first moment and a decaying momentum.

    At step t the momentum is ``mu_t = b1 * (1 - 0.5 * 0.96**(t * momentum_decay))``; with m
    and v Adam's moment estimates and ``d = sqrt(v / (1 - b2**t)) + eps``, the step is
    ``p -= lr * (1 - mu_t) / (1 - prod(mu_1..mu_t)) * g / d
    + lr * mu_{t+1} / (1 - prod(mu_1..mu_{t+1})) * m / d``.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float, Tensor): the learning rate. Default: ``2e-3``.
        betas (Tuple[float, float]): the decay rates (b1, b2) of the moment estimates.
            Default: ``(0.9, 0.999)``.
        eps (float): added to the denominator for numerical stability. Default: ``1e-8``.
        weight_decay (float): weight decay. Default: 0.
        momentum_decay (float): how fast the momentum decays. Default: ``4e-3``.
        decoupled_weight_decay (bool): decay the weights directly (``p *= 1 - lr *
            weight_decay``, NAdamW) instead of adding an L2 term to g. Default: ``False``.
        maximize (bool): ascend the objective (use -grad). Default: ``False``.
        foreach, capturable, differentiable: accepted for torch compatibility; the
            single-tensor update is always used.

    Example::

        >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = torch.optim.NAdam([w], lr=0.1)
        >>> for _ in range(2):
        ...     opt.zero_grad()
        ...     (w ** 2).sum().backward()
        ...     opt.step()
        >>> w
        tensor([ 0.8200, -1.8179], requires_grad=True)
    """

    def __init__(self, params: ParamsT, lr: Union[float, Tensor] = 2e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: Optional[bool] = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_args(lr, eps=eps, betas=betas, weight_decay=weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
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
            momentum_decay = group["momentum_decay"]
            decoupled = group["decoupled_weight_decay"]
            maximize = group["maximize"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["mu_product"] = _step_tensor(1.0)
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
                bias_correction2 = 1 - beta2**step
                if wd != 0:
                    if decoupled:
                        pd *= 1 - lr * wd
                    else:
                        g = _fma(xp, wd, pd, g)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                # mu_product is a float32 scalar tensor, as torch's: its rounding feeds the steps
                mu_t = state["mu_product"]
                mu_t._data[...] *= mu
                mu_product = float(mu_t.item())
                mu_product_next = mu_product * mu_next
                m = state["exp_avg"]._data
                v = state["exp_avg_sq"]._data
                _lerp_(xp, m, g, 1 - beta1)
                v *= beta2
                v[...] = _fma(xp, (1 - beta2) * g, g, v)
                denom = xp.sqrt(v / bias_correction2)
                denom += eps
                pd += ((-lr * (1.0 - mu) / (1.0 - mu_product)) * g) / denom
                pd += (((-lr * mu_next) / (1.0 - mu_product_next)) * m) / denom
                for t in state.values():
                    t._bump_version()
                p._bump_version()
        return loss
