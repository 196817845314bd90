"""Rprop (resilient backpropagation): per-element step sizes grown or shrunk by the sign of
successive gradients (torch's single-tensor update)."""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Union

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _step_tensor, _zeros_like, check_args

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop: each element moves by its own step size against the gradient's sign."""

    def __init__(self, params: ParamsT, lr: Union[float, Tensor] = 1e-2,
                 etas: Tuple[float, float] = (0.5, 1.2),
                 step_sizes: Tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: Optional[bool] = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_args(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs one optimization step (the closure, if given, recomputes the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_min, step_max = group["step_sizes"]
            maximize = group["maximize"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                xp = p._backend
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["prev"] = _zeros_like(p)
                    size = _zeros_like(p)
                    size._data[...] = float(group["lr"])
                    state["step_size"] = size
                pd = p._data
                g = p.grad._data
                if maximize:
                    g = -g
                state["step"]._data[...] += 1
                prev = state["prev"]._data
                size = state["step_size"]._data
                s = xp.sign(g * prev)
                factor = xp.where(s > 0, etaplus, xp.where(s < 0, etaminus, 1.0)).astype(pd.dtype)
                size *= factor
                xp.clip(size, step_min, step_max, out=size)
                # after a sign change the element rests this step and forgets its gradient
                g = xp.where(factor == pd.dtype.type(etaminus), 0, g).astype(pd.dtype)
                pd -= xp.sign(g) * size
                prev[...] = g
                for t in state.values():
                    t._bump_version()
                p._bump_version()
        return loss
