"""Adamax (Adam with the infinity norm) with weight decay and maximize (torch's single-tensor
update)."""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Union

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma, _lerp_, _step_tensor, _zeros_like, check_args

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax: Adam whose second moment is an exponentially weighted infinity norm.

    With g the gradient (plus ``weight_decay * p``): ``m = b1 * m + (1 - b1) * g``,
    ``u = max(b2 * u, |g| + eps)``, then ``p -= lr / (1 - b1**t) * m / u`` at step t. m and u are
    ``exp_avg`` and ``exp_inf`` in the state.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float, Tensor): the learning rate. Default: ``2e-3``.
        betas (Tuple[float, float]): the decay rates (b1, b2) of the first moment and of the
            infinity norm. Default: ``(0.9, 0.999)``.
        eps (float): added to |g| for numerical stability. Default: ``1e-8``.
        weight_decay (float): weight decay (L2 penalty). Default: 0.
        maximize (bool): ascend the objective (use -grad). Default: ``False``.
        foreach, capturable, differentiable: accepted for torch compatibility; the
            single-tensor update is always used.

    Example::

        >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = torch.optim.Adamax([w], lr=0.1)
        >>> for _ in range(2):
        ...     opt.zero_grad()
        ...     (w ** 2).sum().backward()
        ...     opt.step()
        >>> w
        tensor([ 0.8052, -1.8025], requires_grad=True)
    """

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
