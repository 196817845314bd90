"""SGD with momentum, dampening, Nesterov, weight decay and maximize (torch's single-tensor
update, with its rounding)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, with optional momentum (heavy-ball or Nesterov).

    With g the gradient (plus ``weight_decay * p``): ``b = momentum * b + (1 - dampening) * g``
    (b = g at the first step), then ``p -= lr * (g + momentum * b)`` with Nesterov, else
    ``p -= lr * b``; without momentum ``p -= lr * g``.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float): the learning rate. Default: ``1e-3``.
        momentum (float): the momentum factor. Default: 0.
        dampening (float): the dampening of the momentum. Default: 0.
        weight_decay (float): L2 penalty added to the gradient. Default: 0.
        nesterov (bool): use Nesterov momentum. Default: ``False``.
        maximize (bool): ascend the objective (use -grad). Default: ``False``.
        foreach, differentiable, fused: accepted for torch compatibility; the single-tensor
            update is always used.

    Example::

        >>> w = torch.tensor([1.0], requires_grad=True)
        >>> opt = torch.optim.SGD([w], lr=0.1)
        >>> for _ in range(2):
        ...     opt.zero_grad()
        ...     (w ** 2).sum().backward()
        ...     opt.step()
        >>> w
        tensor([0.6400], requires_grad=True)
    """
    def __init__(self, params: ParamsT, lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: Optional[bool] = None,
                 differentiable: bool = False, fused: Optional[bool] = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
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
            momentum = group["momentum"]
            dampening = group["dampening"]
            wd = group["weight_decay"]
            nesterov = group["nesterov"]
            maximize = group["maximize"]
            args = _SgdArgs(lr, wd, momentum, dampening, nesterov, maximize)
            for p in self._params_with_grad(group):
                xp = p._backend
                g = p.grad._data
                pd = p._data
                if self._fused_step(p, g, momentum, args):
                    continue
                if maximize:
                    g = -g
                if wd != 0:
                    g = _fma(xp, wd, pd, g)
                if momentum != 0:
                    state = self.state[p]
                    buf: Optional[Tensor] = state.get("momentum_buffer")
                    if buf is None:
                        buf = p.grad.detach().clone()
                        buf._data[...] = g
                        state["momentum_buffer"] = buf
                    else:
                        bd = buf._data
                        bd *= momentum
                        bd[...] = _fma(xp, 1 - dampening, g, bd)
                        buf._bump_version()
                    g = _fma(xp, momentum, buf._data, g) if nesterov else buf._data
                pd[...] = _fma(xp, -lr, g, pd)
                p._bump_version()
        return loss

    def _fused_step(self, p: Tensor, g: Any, momentum: float, args: _SgdArgs) -> bool:
        """The whole update of `p` in one pass of the backend's kernel (CPU, float32/float64,
        contiguous), with the roundings of the NumPy formulation below; False where the backend
        has none or the arrays do not qualify."""
        kernel = p._backend.kernels.sgd_step
        if kernel is None:
            return False
        buf = None
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            args.init_buffer = buf is None
            if buf is None:
                buf = p.grad.detach().clone()
            if not kernel(p._data, g, buf._data, args):
                return False
            if args.init_buffer:
                state["momentum_buffer"] = buf
            else:
                buf._bump_version()
        elif not kernel(p._data, g, None, args):
            return False
        p._bump_version()
        return True


@dataclass
class _SgdArgs:
    """One group's hyper-parameters, as the backend's fused step reads them."""

    lr: float
    weight_decay: float
    momentum: float
    dampening: float
    nesterov: bool
    maximize: bool
    init_buffer: bool = False
