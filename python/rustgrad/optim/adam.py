"""Adam (and, with decoupled_weight_decay, AdamW), amsgrad and maximize: torch's
single-tensor update."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma, _lerp_, _step_tensor, _zeros_like, check_args

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam: steps scaled by running estimates of the gradient's first and second moments.

    With g the gradient (plus ``weight_decay * p``, or with ``decoupled_weight_decay`` instead
    ``p *= 1 - lr * weight_decay``): ``m = b1 * m + (1 - b1) * g``, ``v = b2 * v + (1 - b2) * g**2``,
    then ``p -= lr * (m / (1 - b1**t)) / (sqrt(v / (1 - b2**t)) + eps)`` at step t; amsgrad uses the
    running maximum of v.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float): the learning rate. Default: ``1e-3``.
        betas (Tuple[float, float]): the decay rates (b1, b2) of the moment estimates.
            Default: ``(0.9, 0.999)``.
        eps (float): added to the denominator for numerical stability. Default: ``1e-8``.
        weight_decay (float): weight decay (L2 penalty). Default: 0.
        amsgrad (bool): use the AMSGrad variant. Default: ``False``.
        maximize (bool): ascend the objective (use -grad). Default: ``False``.
        foreach, differentiable, fused: accepted for torch compatibility; the single-tensor
            update is always used.
        capturable (bool): keep the step count on the parameters' device and compute the
            bias corrections there, so that the step can be captured in a CUDA graph (without
            it, ``step()`` inside a capture raises, as torch's). Default: ``False``.
        decoupled_weight_decay (bool): decay the weights directly, as AdamW. Default: ``False``.

    Example::

        >>> w = torch.tensor([1.0], requires_grad=True)
        >>> opt = torch.optim.Adam([w], lr=0.1)
        >>> (w ** 2).sum().backward()
        >>> opt.step()
        >>> w
        tensor([0.9000], requires_grad=True)
    """
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
        """Performs one optimization step (the closure, if given, recomputes the loss).

        Updates every parameter of every group that has a ``.grad``, in place and outside
        autograd; returns the closure's loss (or None).

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            capturable = group["capturable"]
            if not capturable and _capturing(group):
                raise RuntimeError(f"Attempting CUDA graph capture of step() for an instance of "
                                   f"{type(self).__name__} but param_groups' capturable is False.")
            lr = float(group["lr"])
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            wd = group["weight_decay"]
            amsgrad = group["amsgrad"]
            maximize = group["maximize"]
            decoupled = group["decoupled_weight_decay"]
            pending: List[Any] = []
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor().to(p.device) if capturable else _step_tensor()
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = _zeros_like(p)
                xp = p._backend
                g = p.grad._data
                step_t = state["step"]
                step_t._data[...] += 1
                step_t._bump_version()
                if capturable:  # the bias corrections on the device, in the step's dtype
                    if step_t.device != p.device:  # a step count loaded from a checkpoint
                        state["step"] = step_t = step_t.to(p.device)
                    t = step_t._data
                    args = _AdamArgs(lr, beta1, beta2, eps, wd, decoupled, maximize,
                                     lr / (1 - beta1**t), (1 - beta2**t) ** 0.5)
                    self._array_step(p, g, state, amsgrad, args)
                    continue
                step = float(step_t.item())
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = bias_correction2**0.5
                args = _AdamArgs(lr, beta1, beta2, eps, wd, decoupled, maximize, step_size,
                                 bias_correction2_sqrt)
                if xp.kernels.adam_step_multi is not None:  # one launch for the whole group
                    pending.append((p, g, state, args))
                    continue
                if self._fused_step(p, g, state, amsgrad, args):
                    continue
                self._array_step(p, g, state, amsgrad, args)
            if pending:
                self._multi_step(pending, amsgrad)
        return loss

    def _multi_step(self, pending: List[Any], amsgrad: bool) -> None:
        """The group's parameters of one step count updated by one launch of the backend's
        multi-tensor kernel; each parameter it does not take by its own kernel or formulation."""
        batches: Dict[Any, List[Any]] = {}
        for item in pending:  # one launch per device, dtype and step count (a later param's)
            p = item[0]
            key = (str(p.device), p._data.dtype, item[3].step_size)
            batches.setdefault(key, []).append(item)
        for items in batches.values():
            p0 = items[0][0]
            kernel = p0._backend.kernels.adam_step_multi
            vmax = [s["max_exp_avg_sq"]._data for _, _, s, _ in items] if amsgrad else None
            if kernel([p._data for p, _, _, _ in items], [g for _, g, _, _ in items],
                      [s["exp_avg"]._data for _, _, s, _ in items],
                      [s["exp_avg_sq"]._data for _, _, s, _ in items], vmax, items[0][3]):
                for p, _, state, _ in items:
                    for t in (p, state["exp_avg"], state["exp_avg_sq"]):
                        t._bump_version()
                    if amsgrad:
                        state["max_exp_avg_sq"]._bump_version()
                continue
            for p, g, state, args in items:
                if not self._fused_step(p, g, state, amsgrad, args):
                    self._array_step(p, g, state, amsgrad, args)

    def _array_step(self, p: Tensor, g: Any, state: Dict[str, Any], amsgrad: bool,
                    args: _AdamArgs) -> None:
        """One parameter's update in backend array operations (torch's single-tensor Adam)."""
        xp, pd = p._backend, p._data
        lr, beta1, beta2, eps, wd = args.lr, args.beta1, args.beta2, args.eps, args.weight_decay
        decoupled, maximize = args.decoupled, args.maximize
        step_size, bias_correction2_sqrt = args.step_size, args.bias_correction2_sqrt
        if maximize:
            g = -g
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

    def _fused_step(self, p: Tensor, g: Any, state: Dict[str, Any], amsgrad: bool,
                    args: _AdamArgs) -> bool:
        """The whole update of `p` and its state in one pass of the backend's kernel (CPU,
        float32/float64, contiguous), with the roundings of the NumPy formulation in `step`;
        False where the backend has none or the arrays do not qualify."""
        kernel = p._backend.kernels.adam_step
        vmax = state["max_exp_avg_sq"]._data if amsgrad else None
        if kernel is None or not kernel(p._data, g, state["exp_avg"]._data,
                                        state["exp_avg_sq"]._data, vmax, args):
            return False
        for t in (p, state["exp_avg"], state["exp_avg_sq"]):
            t._bump_version()
        if amsgrad:
            state["max_exp_avg_sq"]._bump_version()
        return True


@dataclass
class _AdamArgs:
    """One step's hyper-parameters, as the backend's fused step reads them."""

    lr: float
    beta1: float
    beta2: float
    eps: float
    weight_decay: float
    decoupled: bool
    maximize: bool
    step_size: Any  # floats; 0-d arrays on the device with capturable
    bias_correction2_sqrt: Any


def _capturing(group: Dict[str, Any]) -> bool:
    """Whether a CUDA graph capture is under way on the current stream (asked only when the
    group has a CUDA parameter)."""
    if not any(p.device.type == "cuda" for p in group["params"]):
        return False
    from .. import cuda

    return cuda.is_current_stream_capturing()
