"""Muon: momentum SGD whose update, for a 2-D parameter, is orthogonalized by a Newton-Schulz
iteration run in bfloat16 (torch's single-tensor update, with its bfloat16 roundings)."""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Tuple

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma, _lerp_, _zeros_like

__all__ = ["Muon"]

# Keller Jordan's quintic Newton-Schulz coefficients (torch's defaults)
_NS_COEFFICIENTS = (3.4445, -4.775, 2.0315)
_ADJUST_LR_FNS = ("original", "match_rms_adamw", "spectral_unclamped")


def _bfloat16(xp: Any, a: Any) -> Any:
    """`a` rounded to bfloat16 (to nearest, ties to even), as a float32 array.

    Every step of the iteration rounds its float32 result so, which is what torch's bfloat16
    kernels do (they compute in float32 and round each result); float64 goes through float32
    first, as torch's conversion does."""
    u = xp.asarray(a).astype(xp.float32).view(xp.uint32)
    u = (u + ((u >> 16) & 1) + 0x7FFF) & 0xFFFF0000
    return u.view(xp.float32)


def _newton_schulz(xp: Any, update: Any, coefficients: Tuple[float, ...], steps: int,
                   eps: float) -> Any:
    """The orthogonalized update (U S' V^T with S' near 1, for the SVD U S V^T of `update`), the
    bfloat16 values as float32."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if update.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    x = _bfloat16(xp, update)
    tall = update.shape[0] > update.shape[1]  # iterate on the wide orientation (smaller Gram)
    if tall:
        x = x.T
    norm = _bfloat16(xp, xp.sqrt(xp.sum(x * x)))
    x = _bfloat16(xp, x / _bfloat16(xp, xp.maximum(norm, eps)))
    for _ in range(steps):
        gram = _bfloat16(xp, xp.matmul(x, x.T))
        poly = _bfloat16(xp, b * gram + c * xp.matmul(gram, gram))
        x = _bfloat16(xp, a * x + xp.matmul(poly, x))
    return x.T if tall else x


def _adjusted_lr(lr: float, adjust_lr_fn: Optional[str], shape: Tuple[int, ...]) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    elif adjust_lr_fn == "spectral_unclamped":
        ratio = math.sqrt(rows / cols)
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon: momentum SGD for 2-D parameters (hidden layers' weights) whose update is
    orthogonalized.

    With g the gradient: the momentum buffer follows ``b = lerp(b, g, 1 - momentum)``, the
    update is ``lerp(g, b, momentum)`` with Nesterov (else ``b``), orthogonalized by
    ``ns_steps`` Newton-Schulz iterations ``X <- a X + (b A + c A A) X`` with ``A = X X^T``
    (in bfloat16, as torch's, after scaling X to unit Frobenius norm), then
    ``p *= 1 - lr * weight_decay`` and ``p -= lr' * X`` with ``lr'`` the adjusted learning
    rate of the parameter's shape (A, B): ``"original"`` (the default) ``lr * sqrt(max(1,
    A / B))``, ``"match_rms_adamw"`` ``0.2 * lr * sqrt(max(A, B))``, ``"spectral_unclamped"``
    ``lr * sqrt(A / B)``. Parameters of other shapes (biases, embeddings) should go to another
    optimizer such as AdamW.

    Args:
        params (iterable): the parameters to optimize (2-D), or dicts defining parameter
            groups.
        lr (float): the learning rate. Default: ``1e-3``.
        weight_decay (float): the decoupled weight decay. Default: ``0.1``.
        momentum (float): the momentum factor. Default: ``0.95``.
        nesterov (bool): use Nesterov momentum. Default: ``True``.
        ns_coefficients (Tuple[float, float, float]): the iteration's (a, b, c). Default:
            ``(3.4445, -4.775, 2.0315)``.
        eps (float): the smallest norm the update is divided by. Default: ``1e-7``.
        ns_steps (int): the number of iterations (< 100). Default: 5.
        adjust_lr_fn (str, optional): ``"original"``, ``"match_rms_adamw"`` or
            ``"spectral_unclamped"``. Default: None (``"original"``).

    Example::

        >>> w = torch.tensor([[1.0, 0.0], [0.0, 2.0]], requires_grad=True)
        >>> opt = torch.optim.Muon([w], lr=0.1, weight_decay=0.0)
        >>> (w ** 2).sum().backward()
        >>> opt.step()
        >>> w
        tensor([[0.8883, 0.0000],
                [0.0000, 1.9309]], requires_grad=True)
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: Tuple[float, float, float] = _NS_COEFFICIENTS,
                 eps: float = 1e-7, ns_steps: int = 5,
                 adjust_lr_fn: Optional[str] = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in _ADJUST_LR_FNS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:  # torch checks the constructor's groups only
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Performs one optimization step (the closure, if given, recomputes the loss).

        Args:
            closure (Callable, optional): re-evaluates the model and returns the loss.
        """
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params = self._params_with_grad(group)
            for p in params:
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = _zeros_like(p.grad)
            lr = float(group["lr"])
            wd = group["weight_decay"]
            momentum = group["momentum"]
            for p in params:
                xp = p._backend
                g = p.grad._data
                if g.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                buf_t = self.state[p]["momentum_buffer"]
                buf = buf_t._data
                _lerp_(xp, buf, g, 1 - momentum)
                if group["nesterov"]:
                    update = g.copy()
                    _lerp_(xp, update, buf, momentum)
                else:
                    update = buf
                ortho = _newton_schulz(xp, update, group["ns_coefficients"], group["ns_steps"],
                                       group["eps"])
                step_lr = _adjusted_lr(lr, group["adjust_lr_fn"], tuple(p.shape))
                pd = p._data
                pd *= 1 - lr * wd
                pd[...] = _fma(xp, -step_lr, ortho.astype(pd.dtype), pd)
                buf_t._bump_version()
                p._bump_version()
        return loss
