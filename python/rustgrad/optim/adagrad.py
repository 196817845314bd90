"""Adagrad with lr decay, weight decay, initial accumulator and maximize (torch's
single-tensor update)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

from .. import _creation
from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma, _step_tensor

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad: per-element learning rates shrunk by the sum of past squared gradients.

    With g the gradient (plus ``weight_decay * p``) at step t: ``clr = lr / (1 + (t - 1) * lr_decay)``,
    ``s += g**2``, ``p -= clr * g / (sqrt(s) + eps)``.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float): the learning rate. Default: ``1e-2``.
        lr_decay (float): the learning rate decay. Default: 0.
        weight_decay (float): L2 penalty added to the gradient. Default: 0.
        initial_accumulator_value (float): the starting value of s. Default: 0.
        eps (float): added to the denominator for numerical stability. Default: ``1e-10``.
        maximize (bool): ascend the objective (use -grad). Default: ``False``.
        foreach, differentiable, fused: accepted for torch compatibility; the single-tensor
            update is always used (on CUDA, one fused kernel launch per parameter).
    """
    def __init__(self, params: ParamsT, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: Optional[bool] = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: Optional[bool] = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _step_tensor()
                state["sum"] = _creation.full_like(p, group["initial_accumulator_value"])

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
            lr_decay = group["lr_decay"]
            wd = group["weight_decay"]
            eps = group["eps"]
            maximize = group["maximize"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                xp = p._backend
                pd = p._data
                g = p.grad._data
                state["step"]._data[...] += 1
                step = float(state["step"].item())
                clr = lr / (1 + (step - 1) * lr_decay)
                if self._fused_step(p, state, _AdagradArgs(clr, eps, wd, maximize)):
                    continue
                if maximize:
                    g = -g
                if wd != 0:
                    g = _fma(xp, wd, pd, g)
                s = state["sum"]._data
                s[...] = _fma(xp, g, g, s)
                std = xp.sqrt(s)
                std += eps
                pd += ((-clr) * g) / std
                for t in state.values():
                    t._bump_version()
                p._bump_version()
        return loss

    @staticmethod
    def _fused_step(p: Tensor, state: Dict[str, Any], args: _AdagradArgs) -> bool:
        """The whole update of `p` and its sum in one launch of the backend's kernel (CUDA),
        with the order of operations of the array formulation in `step`; False where the
        backend has none or the arrays do not qualify."""
        kernel = p._backend.kernels.adagrad_step
        if kernel is None or not kernel(p._data, p.grad._data, state["sum"]._data, args):
            return False
        for t in state.values():
            t._bump_version()
        p._bump_version()
        return True


@dataclass
class _AdagradArgs:
    """One step's hyper-parameters, as the backend's fused step reads them."""

    clr: float  # the learning rate decayed for this step
    eps: float
    weight_decay: float
    maximize: bool
