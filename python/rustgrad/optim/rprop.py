"""Rprop (resilient backpropagation): per-element step sizes grown or shrunk by the sign of
successive gradients (torch's single-tensor update)."""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Union

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _step_tensor, _zeros_like, check_args

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop: each element moves by its own step size against the gradient's sign.

    Each element's step size starts at lr. When g has the sign of the previous gradient the
    size is multiplied by etaplus, when the sign flipped by etaminus (and that element rests
    this step, forgetting g), then clamped to ``step_sizes``; the update is
    ``p -= sign(g) * step_size``. Only the gradient's sign is used, never its magnitude.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float, Tensor): the initial step size. Default: ``1e-2``.
        etas (Tuple[float, float]): (etaminus, etaplus), the factors that shrink and grow the
            step sizes. Default: ``(0.5, 1.2)``.
        step_sizes (Tuple[float, float]): the smallest and largest step size.
            Default: ``(1e-6, 50)``.
        maximize (bool): ascend the objective (use -grad). Default: ``False``.
        foreach, capturable, differentiable: accepted for torch compatibility; the
            single-tensor update is always used.

    Example::

        >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = torch.optim.Rprop([w], lr=0.1)
        >>> for _ in range(2):
        ...     opt.zero_grad()
        ...     (w ** 2).sum().backward()
        ...     opt.step()
        >>> w
        tensor([ 0.7800, -1.7800], requires_grad=True)
    """

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
        """Performs one optimization step (the closure, if given, recomputes the loss).

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
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
