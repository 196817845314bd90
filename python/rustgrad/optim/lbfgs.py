"""L-BFGS with a fixed step or a strong-Wolfe line search (torch's algorithm, after minFunc).

The direction math runs on flat tensors with tensor ops, so the scalars torch keeps as 0-dim
tensors (ys, ro, H_diag, the step t) are 0-dim tensors here too and the state has torch's
layout; the parameters move in place through add_/copy_, which bump their versions.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple, Union

from .._ops.joins import cat
from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT

__all__ = ["LBFGS"]

Number = Union[float, Tensor]


def _cubic_interpolate(x1: Number, f1: Number, g1: Number, x2: Number, f2: Number,
                       g2: Number, bounds: Optional[Tuple[Number, Number]] = None) -> Number:
    """Minimizer of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to the bounds
    (default: the interval between the points); their midpoint when the cubic has none."""
    if bounds is None:
        lo, hi = (x1, x2) if x1 <= x2 else (x2, x1)
    else:
        lo, hi = bounds
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if not d2_square >= 0:
        return (lo + hi) / 2.0
    d2 = d2_square.sqrt()  # type: ignore[union-attr]
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, lo), hi)


ObjFunc = Callable[[List[Tensor], Number, Tensor], Tuple[float, Tensor]]


def _strong_wolfe(obj_func: ObjFunc, x: List[Tensor], t: Number, d: Tensor, f: float,
                  g: Tensor, gtd: Tensor, c1: float = 1e-4, c2: float = 0.9,
                  tolerance_change: float = 1e-9,
                  max_ls: int = 25) -> Tuple[float, Tensor, Number, int]:
    """Line search along d for a step satisfying the strong Wolfe conditions: bracket, then
    zoom by cubic interpolation. Returns (loss, flat grad, step, evaluations)."""
    d_norm = d.abs().max()
    g = g.clone()
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = g_new.dot(d)

    # bracketing phase
    t_prev: Number = 0
    f_prev, g_prev, gtd_prev = f, g, gtd
    done = False
    it = 0
    bracket: List[Number] = []
    bracket_f: List[float] = []
    bracket_g: List[Tensor] = []
    bracket_gtd: List[Number] = []
    while it < max_ls:
        if f_new > (f + c1 * t * gtd) or (it > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        # extrapolate, no closer than 1% of the last step and no farther than 10x
        t_next = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                    bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new.clone(), gtd_new
        t = t_next
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        it += 1
    if it == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom phase
    insuf_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and it < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        # a trial too near an end of the bracket twice running (or outside it) moves to 10%
        # of the bracket's length inside it
        top, bottom = max(bracket), min(bracket)
        margin = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < margin:
            if insuf_progress or t >= top or t <= bottom:
                t = top - margin if abs(t - top) < abs(t - bottom) else bottom + margin
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        it += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            # no sufficient decrease, or not below the low end: t becomes the high end
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new.clone(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new.clone(), gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


class LBFGS(Optimizer):
    """L-BFGS: quasi-Newton steps from a limited history of gradient differences; step() takes
    a closure that recomputes the loss and its gradients. One parameter group only.

    With ``s_k = x_{k+1} - x_k`` and ``y_k = g_{k+1} - g_k`` for the last ``history_size``
    iterations, the direction ``d = -H g`` applies the inverse-Hessian estimate H of the
    two-loop recursion (initial scaling ``s.y / y.y``) to the flat gradient g; the parameters
    move by ``t * d``, with ``t = lr`` (``min(1, 1 / |g|_1) * lr`` on the first iteration) or the
    step a strong-Wolfe line search finds. All parameters are treated as one flat vector.

    Args:
        params (iterable): the parameters to optimize (a single group).
        lr (float, Tensor): the step length. Default: ``1``.
        max_iter (int): the most iterations per step(). Default: ``20``.
        max_eval (int, optional): the most closure evaluations per step().
            Default: ``max_iter * 5 // 4``.
        tolerance_grad (float): stop when the largest gradient element is at most this.
            Default: ``1e-7``.
        tolerance_change (float): stop when the loss or the parameters change by at most this.
            Default: ``1e-9``.
        history_size (int): how many (s, y) pairs are kept. Default: ``100``.
        line_search_fn (str, optional): ``"strong_wolfe"``, or None for a fixed step.
            Default: None.
        maximize (bool): ascend the objective. Default: ``False``.

    Example::

        >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = torch.optim.LBFGS([w], line_search_fn="strong_wolfe")
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = ((w - 3) ** 2).sum()
        ...     loss.backward()
        ...     return loss
        >>> opt.step(closure)
        tensor(29., grad_fn=<SumBackward0>)
        >>> w
        tensor([3.0000, 3.0000], requires_grad=True)
    """

    def __init__(self, params: ParamsT, lr: Union[float, Tensor] = 1, max_iter: int = 20,
                 max_eval: Optional[int] = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: Optional[str] = None, *, maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn,
                        maximize=maximize)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: List[Tensor] = self.param_groups[0]["params"]
        self._numel_cache: Optional[int] = None

    def _numel(self) -> int:
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self) -> Tensor:
        views = [p.new_zeros(p.numel()) if p.grad is None else p.grad.reshape(-1)
                 for p in self._params]

        flat = cat(views, 0)
        # maximize: L-BFGS minimizes the negated loss, so it sees the negated gradient
        return flat.neg() if self.param_groups[0].get("maximize", False) else flat

    def _add_grad(self, step_size: Number, update: Tensor) -> None:
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(update[offset:offset + n].view_as(p), alpha=float(step_size))
            offset += n
        assert offset == self._numel()

    def _clone_param(self) -> List[Tensor]:
        return [p.clone() for p in self._params]

    def _set_param(self, params_data: List[Tensor]) -> None:
        for p, data in zip(self._params, params_data):
            p.copy_(data)

    def _directional_evaluate(self, closure: Callable[[], Any], x: List[Tensor], t: Number,
                              d: Tensor) -> Tuple[float, Tensor]:
        """Loss and flat gradient at x + t * d; the parameters are back at x afterwards."""
        self._add_grad(t, d)
        loss = self._signed(self._closure_loss(closure))
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def _signed(self, loss: Any) -> float:
        value = float(loss.detach()) if hasattr(loss, "detach") else float(loss)
        return -value if self.param_groups[0].get("maximize", False) else value

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Runs up to max_iter L-BFGS iterations; returns the closure's first loss.

        Args:
            closure (Callable): re-evaluates the model (zeroing and recomputing the gradients)
                and returns the loss; called once per function evaluation.
        """
        assert len(self.param_groups) == 1
        group = self.param_groups[0]
        lr = group["lr"].item() if isinstance(group["lr"], Tensor) else group["lr"]
        max_iter = group["max_iter"]
        max_eval = group["max_eval"]
        tolerance_grad = group["tolerance_grad"]
        tolerance_change = group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        history_size = group["history_size"]

        # the state is global; torch files it under the first parameter, so that
        # load_state_dict casts its tensors
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._closure_loss(closure)
        loss = self._signed(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        opt_cond = flat_grad.abs().max() <= tolerance_grad
        if opt_cond:
            return orig_loss

        d = state.get("d")
        t = state.get("t")
        old_dirs = state.get("old_dirs")
        old_stps = state.get("old_stps")
        ro = state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad = state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # direction: steepest descent first, then the two-loop recursion
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s)
                if ys > 1e-10:  # keep the pair only where it keeps the Hessian positive
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = state["al"]
                q = flat_grad.neg()
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q.add_(old_dirs[i], alpha=-float(al[i]))
                d = r = q.mul(H_diag)
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r.add_(old_stps[i], alpha=float(al[i] - be_i))

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss

            # step length: lr, scaled down on the very first iteration
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x: List[Tensor], t: Number, d: Tensor) -> Tuple[float, Tensor]:
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                # the last iteration's loss would go unused (stochastic settings): skip it
                if n_iter != max_iter:
                    loss = self._signed(self._closure_loss(closure))
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if d.mul(t).abs().max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = d
        state["t"] = t
        state["old_dirs"] = old_dirs
        state["old_stps"] = old_stps
        state["ro"] = ro
        state["H_diag"] = H_diag
        state["prev_flat_grad"] = prev_flat_grad
        state["prev_loss"] = prev_loss
        return orig_loss
