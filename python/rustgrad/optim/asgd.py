"""ASGD (averaged SGD): SGD with a decaying rate and a running average of the iterates in
state["ax"] (torch's single-tensor update)."""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma, _step_tensor, _zeros_like, check_args

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged stochastic gradient descent: SGD with a decaying rate, and a running average
    of the iterates.

    With g the gradient (plus ``weight_decay * p``), at step t: ``p *= 1 - lambd * eta``,
    ``p -= eta * g``, then ``ax += mu * (p - ax)`` (``ax = p`` while mu is 1); afterwards
    ``eta = lr / (1 + lambd * lr * t)**alpha`` and ``mu = 1 / max(1, t - t0)``. The average is
    ``state[p]["ax"]``; eta and mu are kept in the state too.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float, Tensor): the initial learning rate. Default: ``1e-2``.
        lambd (float): the decay term. Default: ``1e-4``.
        alpha (float): the power of the rate's decay. Default: ``0.75``.
        t0 (float): the step at which averaging starts. Default: ``1e6``.
        weight_decay (float): weight decay (L2 penalty). Default: 0.
        maximize (bool): ascend the objective (use -grad). Default: ``False``.
        foreach, capturable, differentiable: accepted for torch compatibility; the
            single-tensor update is always used.

    Example::

        >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = torch.optim.ASGD([w], lr=0.1)
        >>> for _ in range(2):
        ...     opt.zero_grad()
        ...     (w ** 2).sum().backward()
        ...     opt.step()
        >>> w
        tensor([ 0.6400, -1.2800], requires_grad=True)
    """

    def __init__(self, params: ParamsT, lr: Union[float, Tensor] = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: Optional[bool] = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_args(lr, weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs one optimization step (the closure, if given, recomputes the loss).

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            wd = group["weight_decay"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                xp = p._backend
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    # eta and mu are scalar-dtype tensors: torch reads them back rounded to it
                    state["eta"] = _step_tensor(lr)
                    state["mu"] = _step_tensor(1.0)
                    state["ax"] = _zeros_like(p)
                pd = p._data
                g = p.grad._data
                if group["maximize"]:
                    g = -g
                step_t, eta, mu = state["step"], state["eta"], state["mu"]
                step_t._data[...] += 1
                step = float(step_t.item())
                if wd != 0:
                    g = _fma(xp, wd, pd, g)
                eta_value = float(eta.item())
                pd *= 1 - lambd * eta_value
                pd[...] = _fma(xp, -eta_value, g, pd)
                ax = state["ax"]._data
                mu_value = float(mu.item())
                if mu_value != 1:
                    ax += (pd - ax) * pd.dtype.type(mu_value)
                else:
                    ax[...] = pd
                # torch goes through as_tensor(float): the default dtype's rounding, even when
                # a loaded state holds eta and mu in the parameters' dtype
                eta._data[...] = _step_tensor(lr / ((1 + lambd * lr * step) ** alpha))._data
                mu._data[...] = _step_tensor(1 / max(1, step - t0))._data
                for t in state.values():
                    t._bump_version()
                p._bump_version()
        return loss


