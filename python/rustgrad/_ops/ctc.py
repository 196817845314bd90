"""The connectionist temporal classification loss: nn.functional.ctc_loss.

The negative log likelihood of each target under the (T, N, C) log probabilities is the alpha
recursion of Graves et al. in log space over the target extended with blanks (blank, l1, blank,
l2, ..., blank): one step per time, vectorized over the batch and the extended positions. The
node (CtcLossBackward0) gives torch's gradient, which is not the plain derivative by the log
probabilities: it is exp(log_probs) - exp(log(sum of alpha * beta over the positions of each
label) + nll - log_probs), the derivative through a log_softmax that torch's kernel assumes
produced its input (the two agree once that log_softmax's backward is applied). Time steps past
an input's length get 0, and with zero_infinity so does a sample whose loss is infinite.
Reductions are as torch's: mean divides each loss by its target length (at least 1) and
averages; a second derivative is torch's "not implemented".
"""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple, Union

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import NOT_IMPLEMENTED, const, is_grad_enabled, quiet_fp
from .compare import where

_C = " (while checking arguments for ctc_loss_allocate_outputs)"
Lengths = Union[Tensor, Sequence[int]]


def _logaddexp3(xp: Any, a: Any, b: Any, c: Any) -> Any:
    """log(exp(a) + exp(b) + exp(c)) as torch's kernel: shifted by the max (0 when all are -inf)."""
    m = xp.maximum(xp.maximum(a, b), c)
    m = xp.where(m == -xp.inf, m.dtype.type(0), m)
    return xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m)) + m


def _shift(xp: Any, a: Any, k: int) -> Any:
    """a moved k places right along the last dim, -inf coming in."""
    out = xp.full(a.shape, -xp.inf, dtype=a.dtype)
    if k < a.shape[-1]:
        out[..., k:] = a[..., :a.shape[-1] - k]
    return out


class _Problem:
    """The extended targets of a batch and their log probabilities."""

    def __init__(self, xp: Any, lp: Any, targets: Any, il: List[int], tl: List[int],
                 blank: int) -> None:
        t_max, n, c = lp.shape
        smax = max(tl, default=0)
        i64 = _dtype.int64.np
        j = xp.arange(smax).reshape(1, smax)
        tla = xp.asarray(tl, dtype=i64).reshape(n, 1)
        if targets.ndim == 1:  # concatenated
            offsets = [0]
            for v in tl[:-1]:
                offsets.append(offsets[-1] + v)
            pos = xp.asarray(offsets, dtype=i64).reshape(n, 1) + j
            pos = xp.where(j < tla, pos, 0)
            labels = targets[pos] if targets.size else xp.zeros((n, smax), dtype=i64)
        else:
            labels = targets[:, :smax]
        labels = xp.clip(xp.where(j < tla, labels.astype(i64), blank), 0, c - 1)
        s = 2 * smax + 1
        ext = xp.full((n, s), blank, dtype=i64)
        ext[:, 1::2] = labels
        skip = xp.zeros((n, s), dtype=bool)
        if s > 2:
            # as torch's: a label equal to the blank may still be reached past the blank before it
            skip[:, 2:] = ext[:, 2:] != ext[:, :-2]
        self.ext, self.skip = ext, skip
        self.lpe = xp.take_along_axis(lp, xp.broadcast_to(ext.reshape(1, n, s), (t_max, n, s)),
                                      axis=2)
        self.il, self.tl = il, tl
        self.rows = xp.arange(n)
        self.ila = xp.asarray(il, dtype=i64)
        self.tla = xp.asarray(tl, dtype=i64)


def _alpha(xp: Any, pr: _Problem) -> Tuple[Any, Any]:
    """(log_alpha (N, T, S'), nll (N,))."""
    lpe = pr.lpe
    t_max, n, s = lpe.shape
    alpha = xp.full((t_max, n, s), -xp.inf, dtype=lpe.dtype)
    if t_max:
        alpha[0, :, 0] = lpe[0, :, 0]
        if s > 1:
            alpha[0, :, 1] = xp.where(pr.tla > 0, lpe[0, :, 1], -xp.inf)
    neg = -xp.inf
    for t in range(1, t_max):
        prev = alpha[t - 1]
        two = xp.where(pr.skip, _shift(xp, prev, 2), neg)
        alpha[t] = lpe[t] + _logaddexp3(xp, prev, _shift(xp, prev, 1), two)
    last = xp.clip(pr.ila - 1, 0, max(t_max - 1, 0))
    end = alpha[last, pr.rows] if t_max else xp.full((n, s), neg, dtype=lpe.dtype)  # (N, S')
    l1 = end[pr.rows, 2 * pr.tla]
    l2 = xp.where(pr.tla > 0, end[pr.rows, xp.maximum(2 * pr.tla - 1, 0)], neg)
    m = xp.maximum(l1, l2)
    m = xp.where(m == neg, m.dtype.type(0), m)
    ll = xp.where(pr.tla > 0, xp.log(xp.exp(l1 - m) + xp.exp(l2 - m)) + m, l1)
    # no input at all: only an empty target has probability 1
    ll = xp.where(pr.ila == 0, xp.where(pr.tla == 0, ll.dtype.type(0), neg), ll)
    return alpha, -ll


def _beta(xp: Any, pr: _Problem) -> Any:
    lpe = pr.lpe
    t_max, n, s = lpe.shape
    beta = xp.full((t_max, n, s), -xp.inf, dtype=lpe.dtype)
    pos = xp.arange(s).reshape(1, s)
    two_l = (2 * pr.tla).reshape(n, 1)
    start = (pos == two_l) | ((pos == two_l - 1) & (two_l > 0))
    skip_next = xp.zeros((n, s), dtype=bool)  # s + 2 reachable from s
    if s > 2:
        skip_next[:, :-2] = pr.skip[:, 2:]
    ila = pr.ila.reshape(n, 1)
    nxt = xp.full((n, s), -xp.inf, dtype=lpe.dtype)
    for t in range(t_max - 1, -1, -1):
        one = xp.full((n, s), -xp.inf, dtype=lpe.dtype)
        two = xp.full((n, s), -xp.inf, dtype=lpe.dtype)
        if s > 1:
            one[:, :-1] = nxt[:, 1:]
        if s > 2:
            two[:, :-2] = nxt[:, 2:]
        two = xp.where(skip_next, two, -xp.inf)
        step = lpe[t] + _logaddexp3(xp, nxt, one, two)
        init = xp.where(start, lpe[t], -xp.inf)
        cur = xp.where(ila - 1 == t, init, xp.where(t < ila - 1, step, -xp.inf))
        beta[t] = cur
        nxt = cur
    return beta


def _last_label_quirk(xp: Any, pr: _Problem, ab: Any, lcab: Any) -> None:
    """torch's kernel sets the last step's two terms (the final blank's, then the last label's)
    by assignment: where the last label is the blank itself, the blank's sum is the label's
    term alone. Done here for those samples (rare: a label equal to the blank)."""
    for b, (il, tl) in enumerate(zip(pr.il, pr.tl)):
        if il > 0 and tl > 0:
            label = pr.ext[b, 2 * tl - 1]
            if bool(label == pr.ext[b, 0]):
                lcab[il - 1, b, label] = ab[il - 1, b, 2 * tl - 1]


def _ctc_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    pr, alpha, nll, zero_infinity, _ = ctx
    lp = saved.log_probs
    xp = g._backend
    lpd = lp._data
    t_max, n, c = lpd.shape
    with quiet_fp(xp):
        beta = _beta(xp, pr)
        ab = alpha + beta  # (T, N, S')
        m = ab.max(axis=2, keepdims=True) if ab.shape[2] else xp.zeros((t_max, n, 1), lpd.dtype)
        m = xp.where(m == -xp.inf, m.dtype.type(0), m)
        onehot = (pr.ext.reshape(n, -1, 1) == xp.arange(c).reshape(1, 1, c)).astype(lpd.dtype)
        summed = xp.matmul(xp.exp(ab - m).transpose(1, 0, 2), onehot).transpose(1, 0, 2)
        lcab = xp.log(summed) + m  # (T, N, C)
        _last_label_quirk(xp, pr, ab, lcab)
        grad = xp.exp(lpd) - xp.exp(lcab + nll.reshape(1, n, 1) - lpd)
    grad = grad * g._data.astype(lpd.dtype).reshape(1, n, 1)
    valid = xp.arange(t_max).reshape(t_max, 1) < pr.ila.reshape(1, n)
    if zero_infinity:
        valid = valid & (nll != xp.inf).reshape(1, n)
    grad = xp.where(valid.reshape(t_max, n, 1), grad, lpd.dtype.type(0))
    if is_grad_enabled():  # create_graph: torch's backward has no derivative
        return NOT_IMPLEMENTED.record(grad, (g, lp), "_ctc_loss_backward")
    return const(grad)


CTC = node("CtcLossBackward0", _ctc_bw, saved=("log_probs", "targets"), result=True, getters={
    "input_lengths": lambda s, c: tuple(c[0].il),
    "target_lengths": lambda s, c: tuple(c[0].tl),
    "blank": lambda s, c: c[4],
    "zero_infinity": lambda s, c: c[3],
    "result0": lambda s, c: s[2],
    "result1": lambda s, c: _alpha_tensor(c),
})


def _alpha_tensor(ctx: Any) -> Tensor:
    return const(ctx[1].transpose(1, 0, 2).copy())


def _lengths(v: Any, name: str) -> List[int]:
    if isinstance(v, Tensor):
        if v._data.dtype.kind not in "iu":
            raise RuntimeError(f"{name} must be integral")
        return [int(x) for x in v._backend.to_numpy(v._data).reshape(-1).tolist()]
    return [int(x) for x in v]


def _check_forms(input_lengths: Any, target_lengths: Any) -> None:
    """torch's two signatures: both lengths tensors, or both sequences of ints."""
    tensors = isinstance(input_lengths, Tensor), isinstance(target_lengths, Tensor)
    if tensors == (True, True) or (tensors == (False, False) and all(
            isinstance(v, (list, tuple)) for v in (input_lengths, target_lengths))):
        return
    got = ", ".join(type(v).__name__ for v in (input_lengths, target_lengths))
    raise TypeError("ctc_loss() received an invalid combination of arguments - got (Tensor, "
                    f"Tensor, {got}, ...), but expected one of: (Tensor log_probs, Tensor "
                    "targets, tuple of ints input_lengths, tuple of ints target_lengths, ...) or "
                    "(Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor "
                    "target_lengths, ...)")


def _check(lp: Tensor, targets: Tensor, il: List[int], tl: List[int], blank: int) -> None:
    """torch's ctc_loss_allocate_outputs checks, in its order."""
    if not _dtype.is_floating_np(lp._data.dtype) or lp._data.dtype.itemsize < 4:
        raise NotImplementedError(
            f'"ctc_loss_cpu" not implemented for \'{_dtype.scalar_type_name(lp.dtype)}\'')
    if lp.ndim != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {lp.ndim}-dimensional tensor "
                           f"for argument #1 'log_probs'{_C}")
    if not 1 <= targets.ndim <= 2:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.ndim}-dimensional "
                           f"tensor for argument #2 'targets'{_C}")
    t_max, n, c = lp.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    if len(il) != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tl) != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    for v in tl:
        if v < 0:
            raise RuntimeError("Expected target_lengths to have value at least 0, but got value "
                               f"{v}{_C}")
    want = sum(tl) if targets.ndim == 1 else n
    if targets.shape[0] != want:
        raise RuntimeError(f"Expected tensor to have size {want} at dimension 0, but got size "
                           f"{targets.shape[0]} for argument #2 'targets'{_C}")
    if targets.ndim == 2 and targets.shape[1] < max(tl, default=0):
        raise RuntimeError(f"Expected tensor to have size at least {max(tl)} at dimension 1, but "
                           f"got size {targets.shape[1]} for argument #2 'targets'{_C}")
    for v in il:
        if v < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value "
                               f"{v}{_C}")
        if v > t_max:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got "
                               f"value {v}{_C}")


def _ctc_nll(lp: Tensor, targets: Tensor, il: List[int], tl: List[int], blank: int,
             zero_infinity: bool) -> Tensor:
    """torch's _ctc_loss: the per-sample negative log likelihood (N,), one node."""
    _check(lp, targets, il, tl, blank)
    xp = lp._backend
    tgt = targets._data
    pr = _Problem(xp, lp._data, tgt, il, tl, blank)
    with quiet_fp(xp):
        alpha, nll = _alpha(xp, pr)
    nll = xp.ascontiguousarray(nll.astype(lp._data.dtype))
    return CTC.record(nll, (lp,), (pr, alpha, nll, zero_infinity, blank), log_probs=lp,
                      targets=targets)


@op(functional="ctc_loss", grad_fn="CtcLossBackward0", autocast=dict(cpu="fp32"))
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Lengths, target_lengths: Lengths,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The connectionist temporal classification loss of log probabilities over time.

    log_probs is (T, N, C) or unbatched (T, C); targets are (N, S), padded, or concatenated
    (sum(target_lengths),); the lengths are tensors or tuples of ints."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    _check_forms(input_lengths, target_lengths)
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    batched = log_probs.ndim == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    tgt = targets
    if tgt._data.dtype != _dtype.int64.np:
        tgt = tgt.to(_dtype.int64)
    res = _ctc_nll(lp, tgt, il, tl, int(blank), bool(zero_infinity))
    if zero_infinity:
        res = where(res == float("inf"), const(res._backend.zeros((), dtype=res._data.dtype)), res)
    if reduction == "mean":
        lengths = res._backend.asarray(tl, dtype=res._data.dtype)
        return (res / const(res._backend.maximum(lengths, 1))).mean()
    if reduction == "sum":
        return res.sum()
    return res if batched else res.squeeze(0)

