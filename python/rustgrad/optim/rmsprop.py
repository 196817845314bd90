"""RMSprop with momentum, centering, weight decay and maximize (torch's single-tensor
update)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma, _lerp_, _step_tensor, _zeros_like

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop: steps divided by a running root mean square of the gradients.

    With g the gradient (plus ``weight_decay * p``): ``v = alpha * v + (1 - alpha) * g**2``; the
    denominator is ``sqrt(v) + eps`` (centered: ``sqrt(v - a**2) + eps`` with a the running mean of
    g); then ``p -= lr * g / denom``, or with momentum ``b = momentum * b + g / denom``,
    ``p -= lr * b``.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float): the learning rate. Default: ``1e-2``.
        alpha (float): the smoothing constant. Default: 0.99.
        eps (float): added to the denominator for numerical stability. Default: ``1e-8``.
        weight_decay (float): L2 penalty added to the gradient. Default: 0.
        momentum (float): the momentum factor. Default: 0.
        centered (bool): normalize by an estimate of the gradient's variance. Default: ``False``.
        maximize (bool): ascend the objective (use -grad). Default: ``False``.
        foreach, differentiable: accepted for torch compatibility; the single-tensor update
            is always used (on CUDA, one fused kernel launch per parameter).
        capturable (bool): accepted for torch compatibility.
    """
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
        """Performs one optimization step (the closure, if given, recomputes the loss).

        Updates every parameter of every group that has a ``.grad``, in place and outside
        autograd; returns the closure's loss (or None).

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            alpha = group["alpha"]
            eps = group["eps"]
            wd = group["weight_decay"]
            momentum = group["momentum"]
            centered = group["centered"]
            maximize = group["maximize"]
            args = _RmspropArgs(lr, alpha, eps, wd, momentum, maximize)
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["square_avg"] = _zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = _zeros_like(p)
                    if centered:
                        state["grad_avg"] = _zeros_like(p)
                state["step"]._data[...] += 1
                if self._fused_step(p, state, centered, args):
                    continue
                xp = p._backend
                pd = p._data
                g = p.grad._data
                if maximize:
                    g = -g
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

    @staticmethod
    def _fused_step(p: Tensor, state: Dict[str, Any], centered: bool,
                    args: _RmspropArgs) -> bool:
        """The whole update of `p` and its state in one launch of the backend's kernel (CUDA),
        with the order of operations of the array formulation in `step`; False where the
        backend has none or the arrays do not qualify."""
        kernel = p._backend.kernels.rmsprop_step
        if kernel is None:
            return False
        grad_avg = state["grad_avg"]._data if centered else None
        buf = state["momentum_buffer"]._data if args.momentum > 0 else None
        if not kernel(p._data, p.grad._data, state["square_avg"]._data, grad_avg, buf, args):
            return False
        for t in state.values():
            t._bump_version()
        p._bump_version()
        return True


@dataclass
class _RmspropArgs:
    """One group's hyper-parameters, as the backend's fused step reads them."""

    lr: float
    alpha: float
    eps: float
    weight_decay: float
    momentum: float
    maximize: bool
