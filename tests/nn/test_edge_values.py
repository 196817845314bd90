"""Losses, normalizations and activations on the inputs that break naive formulas: NaN, +inf,
-inf, zeros, empty batches and 0-d tensors, each compared with torch (the oracle).

Where torch gives a number, rustgrad gives the same number (NaN where torch's is NaN, inf where
torch's is inf) and the same gradient; where torch raises, rustgrad raises the same exception
type with torch's key phrase and leaves its inputs as they were. The sweep builds every case
from a table (`_ACTIVATIONS`, `_NORMS`, `_LOSSES`) and asks torch at run time which of the two
it is, so a case whose outcome torch changes is still compared, not skipped.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest
import rustgrad
import torch

from tests.parity import F, check, check_error, rustgrad_on

# NumPy's floating-point warnings some of rustgrad's composites still raise (torch computes
# inf/nan silently) and torch's own UserWarnings (a target that broadcasts, kl_div's mean) are
# not what the sweep compares
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")

CLASSES = ("nan", "posinf", "neginf", "zeros", "empty", "scalar")
_SPECIAL = {"nan": np.nan, "posinf": np.inf, "neginf": -np.inf}


@dataclass
class Case:
    """A program `fn(lib, *floats)` over float inputs of `shapes` (random in [low, high) per
    input); `special` lists the inputs that get the NaN/inf/zero values; `params` those that
    are parameters (a weight per channel, ...): they keep their shapes where the others get
    an empty batch or 0-d shape."""

    fn: Callable[..., Any]
    shapes: Sequence[Tuple[int, ...]]
    ranges: Sequence[Tuple[float, float]] = ((-3.0, 3.0),)
    special: Sequence[int] = (0,)
    params: Sequence[int] = ()
    elementwise: bool = False


def _ranges(case: Case) -> List[Tuple[float, float]]:
    r = list(case.ranges)
    return r + [r[-1]] * (len(case.shapes) - len(r))


def _arrays(case: Case, cls: str, which: int, seed: int = 0) -> List[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for k, (shape, (lo, hi)) in enumerate(zip(case.shapes, _ranges(case))):
        if cls == "empty" and k not in case.params:
            shape = (0,) + tuple(shape[1:])
        elif cls == "scalar" and k not in case.params:
            shape = ()
        a = rng.uniform(lo, hi, size=shape)
        if k == which and cls in _SPECIAL:
            a.reshape(-1)[::3] = _SPECIAL[cls]  # every third entry: rows with and without
        elif k == which and cls == "zeros":
            a[...] = 0.0
        out.append(a)
    return out


# ---- integer and sign targets, built from the float input's shape --------------------------
def _classes(x: Any) -> int:
    return x.shape[1] if x.ndim > 1 else x.shape[0] if x.ndim == 1 else 1


def _class_targets(lib: Any, x: Any, ignore: bool = False) -> Any:
    """int64 class indices for input x ((N, C, ...) -> (N, ...)); all -100 when ignore."""
    shape = tuple(x.shape[:1]) + tuple(x.shape[2:]) if x.ndim > 1 else ()
    n = int(np.prod(shape)) if shape else 1
    c = max(_classes(x), 1)
    vals = np.full(n, -100) if ignore else np.arange(n) % c
    return lib.tensor(vals.reshape(shape).astype(np.int64))


def _signs(lib: Any, shape: Sequence[int], dtype: Any) -> Any:
    """1, -1, 1, ... of `shape` (the targets of the margin losses)."""
    n = int(np.prod(shape)) if len(shape) else 1
    vals = np.where(np.arange(n) % 2 == 0, 1.0, -1.0).reshape(tuple(shape))
    return lib.tensor(vals, dtype=dtype)


def _bits(lib: Any, shape: Sequence[int], dtype: Any) -> Any:
    """0, 1, 0, ... of `shape` (multi-label targets)."""
    n = int(np.prod(shape)) if len(shape) else 1
    return lib.tensor((np.arange(n) % 2).reshape(tuple(shape)).astype(np.float64), dtype=dtype)


# ---- the table ------------------------------------------------------------------------------
_ACT = ((4, 5),)


def _elementwise(fn: Callable[..., Any]) -> Case:
    return Case(fn, _ACT, elementwise=True)


_ACTIVATIONS: Dict[str, Case] = {
    "relu": _elementwise(lambda lib, x: F(lib).relu(x)),
    "relu6": _elementwise(lambda lib, x: F(lib).relu6(x)),
    "elu": _elementwise(lambda lib, x: F(lib).elu(x)),
    "elu_alpha": _elementwise(lambda lib, x: F(lib).elu(x, alpha=0.5)),
    "selu": _elementwise(lambda lib, x: F(lib).selu(x)),
    "celu": _elementwise(lambda lib, x: F(lib).celu(x, alpha=2.0)),
    "gelu": _elementwise(lambda lib, x: F(lib).gelu(x)),
    "gelu_tanh": _elementwise(lambda lib, x: F(lib).gelu(x, approximate="tanh")),
    "silu": _elementwise(lambda lib, x: F(lib).silu(x)),
    "mish": _elementwise(lambda lib, x: F(lib).mish(x)),
    "softplus": _elementwise(lambda lib, x: F(lib).softplus(x)),
    "softplus_beta": _elementwise(lambda lib, x: F(lib).softplus(x, beta=2.0, threshold=1.0)),
    "softsign": _elementwise(lambda lib, x: F(lib).softsign(x)),
    "sigmoid": _elementwise(lambda lib, x: F(lib).sigmoid(x)),
    "tanh": _elementwise(lambda lib, x: F(lib).tanh(x)),
    "tanhshrink": _elementwise(lambda lib, x: F(lib).tanhshrink(x)),
    "logsigmoid": _elementwise(lambda lib, x: F(lib).logsigmoid(x)),
    "hardtanh": _elementwise(lambda lib, x: F(lib).hardtanh(x)),
    "hardsigmoid": _elementwise(lambda lib, x: F(lib).hardsigmoid(x)),
    "hardswish": _elementwise(lambda lib, x: F(lib).hardswish(x)),
    "leaky_relu": _elementwise(lambda lib, x: F(lib).leaky_relu(x, 0.1)),
    # the in-place forms, written into a copy of the input
    "relu_inplace": _elementwise(lambda lib, x: F(lib).relu(x.clone(), inplace=True)),
    "leaky_relu_inplace": _elementwise(lambda lib, x: F(lib).leaky_relu(x.clone(), 0.2, True)),
    "hardtanh_inplace": _elementwise(lambda lib, x: F(lib).hardtanh(x.clone(), -2.0, 2.0, True)),
    "elu_inplace": _elementwise(lambda lib, x: F(lib).elu(x.clone(), inplace=True)),
    "selu_inplace": _elementwise(lambda lib, x: F(lib).selu(x.clone(), inplace=True)),
    "silu_inplace": _elementwise(lambda lib, x: F(lib).silu(x.clone(), inplace=True)),
    "mish_inplace": _elementwise(lambda lib, x: F(lib).mish(x.clone(), inplace=True)),
    "hardswish_inplace": _elementwise(lambda lib, x: F(lib).hardswish(x.clone(), inplace=True)),
    "hardsigmoid_inplace": _elementwise(lambda lib, x: F(lib).hardsigmoid(x.clone(),
                                                                          inplace=True)),
    "prelu": Case(lambda lib, x, w: F(lib).prelu(x, w), ((4, 5), (1,)), ((-3.0, 3.0), (0.1, 0.5)),
                  special=(0, 1), params=(1,)),
    "softmax": Case(lambda lib, x: F(lib).softmax(x, dim=-1), _ACT),
    "softmax_dim0": Case(lambda lib, x: F(lib).softmax(x, dim=0), _ACT),
    "log_softmax": Case(lambda lib, x: F(lib).log_softmax(x, dim=-1), _ACT),
    "softmin": Case(lambda lib, x: F(lib).softmin(x, dim=-1), _ACT),
}


def _batch_norm(lib: Any, x: Any, w: Any, b: Any, training: bool) -> Any:
    c = x.shape[1] if x.ndim > 1 else 1
    rm = lib.tensor(np.linspace(-0.5, 0.5, c), dtype=x.dtype)
    rv = lib.tensor(np.linspace(0.5, 2.0, c), dtype=x.dtype)
    out = F(lib).batch_norm(x, rm, rv, w, b, training=training, momentum=0.3)
    return out, rm, rv  # the running statistics are compared too


_NORMS: Dict[str, Case] = {
    "layer_norm": Case(lambda lib, x, w, b: F(lib).layer_norm(x, (5,), w, b),
                       ((4, 3, 5), (5,), (5,)), special=(0, 1), params=(1, 2)),
    "layer_norm_plain": Case(lambda lib, x: F(lib).layer_norm(x, (3, 5)), ((4, 3, 5),)),
    "batch_norm_train": Case(lambda lib, x, w, b: _batch_norm(lib, x, w, b, True),
                             ((4, 3, 5), (3,), (3,)), special=(0, 1), params=(1, 2)),
    "batch_norm_eval": Case(lambda lib, x, w, b: _batch_norm(lib, x, w, b, False),
                            ((4, 3, 5), (3,), (3,)), special=(0, 1), params=(1, 2)),
    "batch_norm_2d": Case(lambda lib, x: _batch_norm(lib, x, None, None, True), ((4, 3),)),
    "group_norm": Case(lambda lib, x, w, b: F(lib).group_norm(x, 3, w, b),
                       ((4, 6, 5), (6,), (6,)), special=(0, 1), params=(1, 2)),
    "instance_norm": Case(lambda lib, x: F(lib).instance_norm(x), ((4, 3, 5),)),
    "rms_norm": Case(lambda lib, x, w: F(lib).rms_norm(x, (5,), w), ((4, 3, 5), (5,)),
                     special=(0, 1), params=(1,)),
    "normalize": Case(lambda lib, x: F(lib).normalize(x, dim=1), ((4, 5),)),
    "normalize_p1": Case(lambda lib, x: F(lib).normalize(x, p=1.0, dim=-1), ((4, 5),)),
    "normalize_pinf": Case(lambda lib, x: F(lib).normalize(x, p=float("inf"), dim=1), ((4, 5),)),
    "normalize_p3": Case(lambda lib, x: F(lib).normalize(x, p=3.0, dim=1), ((4, 5),)),
    "batchnorm1d_module": Case(lambda lib, x: lib.nn.BatchNorm1d(3, dtype=x.dtype)(x),
                               ((4, 3, 5),)),
    "layernorm_module": Case(lambda lib, x: lib.nn.LayerNorm(5, dtype=x.dtype)(x),
                             ((4, 3, 5),)),
}

_PROB = (0.05, 0.95)
_POS = (0.2, 3.0)


def _loss(name: str, reduction: str) -> Case:
    """The loss `name` with `reduction` (the table of losses, per reduction)."""
    r = reduction
    table: Dict[str, Case] = {
        "mse_loss": Case(lambda lib, x, t: F(lib).mse_loss(x, t, reduction=r), ((4, 5),) * 2,
                         special=(0, 1)),
        "l1_loss": Case(lambda lib, x, t: F(lib).l1_loss(x, t, reduction=r), ((4, 5),) * 2,
                        special=(0, 1)),
        "smooth_l1_loss": Case(lambda lib, x, t: F(lib).smooth_l1_loss(x, t, reduction=r,
                                                                         beta=0.5),
                               ((4, 5),) * 2, special=(0, 1)),
        "smooth_l1_beta0": Case(lambda lib, x, t: F(lib).smooth_l1_loss(x, t, reduction=r,
                                                                          beta=0.0),
                                ((4, 5),) * 2, special=(0, 1)),
        "huber_loss": Case(lambda lib, x, t: F(lib).huber_loss(x, t, reduction=r, delta=0.5),
                           ((4, 5),) * 2, special=(0, 1)),
        "soft_margin_loss": Case(lambda lib, x: F(lib).soft_margin_loss(
            x, _signs(lib, x.shape, x.dtype), reduction=r), ((4, 5),)),
        "binary_cross_entropy": Case(lambda lib, x, t: F(lib).binary_cross_entropy(
            x, t.detach(), reduction=r), ((4, 5),) * 2, (_PROB, (0.0, 1.0)), special=(0, 1)),
        "binary_cross_entropy_weight": Case(lambda lib, x, t, w: F(lib).binary_cross_entropy(
            x, t.detach(), w.detach(), reduction=r), ((4, 5),) * 3, (_PROB, (0.0, 1.0), _POS),
            special=(0, 2)),
        "bce_with_logits": Case(lambda lib, x, t: F(lib).binary_cross_entropy_with_logits(
            x, t, reduction=r), ((4, 5),) * 2, ((-3.0, 3.0), (0.0, 1.0)), special=(0, 1)),
        "bce_with_logits_pos_weight": Case(
            lambda lib, x, t, p: F(lib).binary_cross_entropy_with_logits(
                x, t, pos_weight=p.detach(), reduction=r),
            ((4, 5), (4, 5), (5,)), ((-3.0, 3.0), (0.0, 1.0), _POS), special=(0, 2),
            params=(2,)),
        "kl_div": Case(lambda lib, x, t: F(lib).kl_div(x, t, reduction=r),
                       ((4, 5),) * 2, ((-3.0, 0.0), (0.0, 1.0)), special=(0, 1)),
        "kl_div_log_target": Case(lambda lib, x, t: F(lib).kl_div(x, t, reduction=r,
                                                                   log_target=True),
                                  ((4, 5),) * 2, ((-3.0, 0.0),), special=(0, 1)),
        "poisson_nll_loss": Case(lambda lib, x, t: F(lib).poisson_nll_loss(x, t, reduction=r),
                                 ((4, 5),) * 2, ((-2.0, 2.0), (0.0, 4.0)), special=(0, 1)),
        "poisson_nll_loss_rate_full": Case(lambda lib, x, t: F(lib).poisson_nll_loss(
            x, t, log_input=False, full=True, reduction=r), ((4, 5),) * 2,
            (_POS, (0.0, 4.0)), special=(0, 1)),
        "gaussian_nll_loss": Case(lambda lib, x, t, v: F(lib).gaussian_nll_loss(
            x, t, v, reduction=r), ((4, 5),) * 3, ((-2.0, 2.0), (-2.0, 2.0), _POS),
            special=(0, 1, 2)),
        "margin_ranking_loss": Case(lambda lib, a, b: F(lib).margin_ranking_loss(
            a, b, _signs(lib, a.shape, a.dtype), margin=0.5, reduction=r), ((6,),) * 2,
            special=(0, 1)),
        "hinge_embedding_loss": Case(lambda lib, x: F(lib).hinge_embedding_loss(
            x, _signs(lib, x.shape, x.dtype), reduction=r), ((4, 5),), ((0.0, 3.0),)),
        "cosine_embedding_loss": Case(lambda lib, a, b: F(lib).cosine_embedding_loss(
            a, b, _signs(lib, a.shape[:1], a.dtype), margin=0.1, reduction=r), ((4, 5),) * 2,
            special=(0, 1)),
        "multilabel_soft_margin_loss": Case(lambda lib, x: F(lib).multilabel_soft_margin_loss(
            x, _bits(lib, x.shape, x.dtype), reduction=r), ((4, 5),)),
        "nll_loss": Case(lambda lib, x: F(lib).nll_loss(x, _class_targets(lib, x),
                                                        reduction=r), ((4, 5),)),
        "nll_loss_all_ignored": Case(lambda lib, x: F(lib).nll_loss(
            x, _class_targets(lib, x, ignore=True), reduction=r), ((4, 5),)),
        "nll_loss_weight": Case(lambda lib, x, w: F(lib).nll_loss(
            x, _class_targets(lib, x), w.detach(), reduction=r), ((4, 5), (5,)),
            ((-3.0, 0.0), _POS), special=(0, 1), params=(1,)),
        "nll_loss_2d": Case(lambda lib, x: F(lib).nll_loss(x, _class_targets(lib, x),
                                                           reduction=r), ((2, 3, 2, 2),)),
        "cross_entropy": Case(lambda lib, x: F(lib).cross_entropy(x, _class_targets(lib, x),
                                                                  reduction=r), ((4, 5),)),
        "cross_entropy_all_ignored": Case(lambda lib, x: F(lib).cross_entropy(
            x, _class_targets(lib, x, ignore=True), reduction=r), ((4, 5),)),
        "cross_entropy_smoothing": Case(lambda lib, x: F(lib).cross_entropy(
            x, _class_targets(lib, x), label_smoothing=0.2, reduction=r), ((4, 5),)),
        "cross_entropy_smoothing_all_ignored": Case(lambda lib, x: F(lib).cross_entropy(
            x, _class_targets(lib, x, ignore=True), label_smoothing=0.2, reduction=r),
            ((4, 5),)),
        "cross_entropy_weight_smoothing": Case(lambda lib, x, w: F(lib).cross_entropy(
            x, _class_targets(lib, x), w.detach(), label_smoothing=0.2, reduction=r),
            ((4, 5), (5,)), ((-3.0, 3.0), _POS), special=(0, 1), params=(1,)),
        "cross_entropy_probs": Case(lambda lib, x, t: F(lib).cross_entropy(
            x, t, reduction=r), ((4, 5),) * 2, ((-3.0, 3.0), (0.0, 1.0)), special=(0, 1)),
    }
    return table[name]


_LOSS_NAMES = (
    "mse_loss", "l1_loss", "smooth_l1_loss", "smooth_l1_beta0", "huber_loss",
    "soft_margin_loss", "binary_cross_entropy", "binary_cross_entropy_weight",
    "bce_with_logits", "bce_with_logits_pos_weight", "kl_div", "kl_div_log_target",
    "poisson_nll_loss", "poisson_nll_loss_rate_full", "gaussian_nll_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
    "multilabel_soft_margin_loss", "nll_loss", "nll_loss_all_ignored", "nll_loss_weight",
    "nll_loss_2d", "cross_entropy", "cross_entropy_all_ignored", "cross_entropy_smoothing",
    "cross_entropy_smoothing_all_ignored", "cross_entropy_weight_smoothing",
    "cross_entropy_probs",
)

_DISTANCES: Dict[str, Case] = {
    "cosine_similarity": Case(lambda lib, a, b: F(lib).cosine_similarity(a, b), ((4, 5),) * 2,
                              special=(0, 1)),
    "cosine_similarity_dim0": Case(lambda lib, a, b: F(lib).cosine_similarity(a, b, dim=0),
                                   ((4, 5),) * 2, special=(0, 1)),
    "pairwise_distance": Case(lambda lib, a, b: F(lib).pairwise_distance(a, b), ((4, 5),) * 2,
                              special=(0, 1)),
    "pairwise_distance_p1": Case(lambda lib, a, b: F(lib).pairwise_distance(a, b, p=1.0),
                                 ((4, 5),) * 2, special=(0, 1)),
    "kl_div_batchmean": Case(lambda lib, x, t: F(lib).kl_div(x, t, reduction="batchmean"),
                             ((4, 5),) * 2, ((-3.0, 0.0), (0.0, 1.0)), special=(0, 1)),
    "mse_loss_weight": Case(lambda lib, x, t, w: F(lib).mse_loss(x, t, weight=w.detach()),
                            ((4, 5),) * 3, ((-3.0, 3.0), (-3.0, 3.0), _POS), special=(0, 2)),
    "l1_loss_weight": Case(lambda lib, x, t, w: F(lib).l1_loss(x, t, weight=w.detach()),
                           ((4, 5),) * 3, ((-3.0, 3.0), (-3.0, 3.0), _POS), special=(0, 2)),
    "huber_loss_weight": Case(lambda lib, x, t, w: F(lib).huber_loss(x, t, weight=w.detach()),
                              ((4, 5),) * 3, ((-3.0, 3.0), (-3.0, 3.0), _POS), special=(0, 2)),
    "cross_entropy_probs_smoothing": Case(lambda lib, x, t: F(lib).cross_entropy(
        x, t, label_smoothing=0.3), ((4, 5),) * 2, ((-3.0, 3.0), (0.0, 1.0)), special=(0, 1)),
    "cross_entropy_unbatched": Case(lambda lib, x: F(lib).cross_entropy(
        x, lib.tensor(np.int64(1))), ((5,),)),
    "pairwise_distance_pinf": Case(
        lambda lib, a, b: F(lib).pairwise_distance(a, b, p=float("inf"), keepdim=True),
        ((4, 5),) * 2, special=(0, 1)),
}

# known differences: case id prefix -> reason; each is xfail(strict=True) (README, What differs)
_XFAIL: Dict[str, str] = {}
# torch computes soft_margin_loss as log1p(exp(-t x)) and its gradient as
# -t exp(-t x) / (1 + exp(-t x)): at x = -+inf (and already at |x| > 88 in float32) that is
# inf / inf = nan; rustgrad's softplus gives the limit, -t / N
for _r in ("mean", "sum", "none"):
    for _v in ("posinf", "neginf"):
        _XFAIL[f"soft_margin_loss[{_r}]-{_v}"] = (
            "gradient at x = -t * inf: torch nan (exp overflows in its formula), rustgrad the "
            "finite limit -t/N of its stable softplus"
        )


def _params() -> List[Any]:
    out = []

    def add(name: str, case: Case) -> None:
        for cls in CLASSES:
            targets = case.special if cls in _SPECIAL or cls == "zeros" else (None,)
            for which in targets:
                cid = f"{name}-{cls}" + (f"-arg{which}" if which is not None else "")
                marks = []
                for prefix, reason in _XFAIL.items():
                    if cid.startswith(prefix):
                        marks.append(pytest.mark.xfail(strict=True, reason=reason))
                out.append(pytest.param(case, cls, which, id=cid, marks=marks))

    for name, case in _ACTIVATIONS.items():
        add(name, case)
    for name, case in _NORMS.items():
        add(name, case)
    for name, case in _DISTANCES.items():
        add(name, case)
    for name in _LOSS_NAMES:
        for reduction in ("mean", "sum", "none"):
            add(f"{name}[{reduction}]", _loss(name, reduction))
    return out


def _torch_error(fn: Callable[..., Any], arrays: Sequence[np.ndarray]) -> Optional[Exception]:
    """The exception torch raises for the program in float64 (forward or backward), if any."""
    ins = [torch.tensor(a, requires_grad=True) for a in arrays]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(torch, *ins)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            live = [o for o in outs if o.requires_grad]
            if live:
                torch.autograd.backward(live, [torch.ones_like(o) for o in live])
    except Exception as e:  # noqa: BLE001 - any exception is what is compared
        return e
    return None


def _torch_paths(fn: Callable[..., Any], a: np.ndarray, g: np.ndarray) -> List[Tuple[Any, Any]]:
    """torch's (value, gradient) of an elementwise program in its two CPU loops: each element
    on its own (the scalar loop) and each repeated 64 times (the vectorized loop)."""
    flat_a, flat_g = a.reshape(-1), g.reshape(-1)
    scalar_v, scalar_g = np.empty_like(flat_a), np.empty_like(flat_a)
    for i in range(flat_a.size):
        x = torch.tensor(flat_a[i:i + 1], requires_grad=True)
        y = fn(torch, x)
        y.backward(torch.tensor(flat_g[i:i + 1]))
        scalar_v[i], scalar_g[i] = y.item(), x.grad.item()
    x = torch.tensor(np.repeat(flat_a[:, None], 64, axis=1), requires_grad=True)
    y = fn(torch, x)
    y.backward(torch.tensor(np.repeat(flat_g[:, None], 64, axis=1)))
    vector = (y.detach()[:, 0].numpy(), x.grad[:, 0].numpy())
    return [(scalar_v.reshape(a.shape), scalar_g.reshape(a.shape)),
            (vector[0].reshape(a.shape), vector[1].reshape(a.shape))]


def _close(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    rtol, atol = (1e-7, 1e-9) if a.dtype == np.float64 else (1e-4, 1e-5)
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def _check_elementwise(fn: Callable[..., Any], a0: np.ndarray) -> None:
    """An elementwise activation at NaN/inf: torch's scalar and vectorized CPU loops disagree
    on some of these (elu's gradient at NaN is nan in one, the positive slope in the other;
    gelu(inf) in float32 is inf in one, nan in the other), and which one an element gets
    depends on its position. rustgrad, the same at every position, must give at each element
    what one of torch's two loops gives, and torch's one answer wherever they agree."""
    rng = np.random.default_rng(1)
    for dt in (np.float64, np.float32):
        a = a0.astype(dt)
        g = rng.uniform(-1.0, 1.0, size=a.shape).astype(dt)
        x = rustgrad.tensor(a, requires_grad=True)
        y = fn(rustgrad, x)
        assert str(y.dtype) == str(torch.tensor(a).dtype) and tuple(y.shape) == a.shape
        y.backward(rustgrad.tensor(g))
        got = (y.detach().numpy(), x.grad.numpy())
        paths = _torch_paths(fn, a, g)
        for k, what in enumerate(("value", "gradient")):
            ok = _close(got[k], paths[0][k]) | _close(got[k], paths[1][k])
            assert ok.all(), (
                f"[{np.dtype(dt).name}] {what} at inputs {a[~ok]}: rustgrad {got[k][~ok]}, "
                f"torch {paths[0][k][~ok]} (scalar loop) / {paths[1][k][~ok]} (vectorized)"
            )


@pytest.mark.parametrize("case,cls,which", _params())
def test_edge_values_match_torch(case: Case, cls: str, which: Optional[int]) -> None:
    arrays = _arrays(case, cls, -1 if which is None else which)
    if case.elementwise and cls in _SPECIAL:
        _check_elementwise(case.fn, arrays[0])
        return
    err = _torch_error(case.fn, arrays)
    if err is None:
        # values (NaN and inf where torch has them), dtypes, shapes, and the gradients of a
        # random upstream gradient, in float64 and float32
        check(case.fn, *arrays, grad_fn=False, versions=False, views=False)
    else:
        check_error(case.fn, *arrays, requires_grad=True)


def test_sweep_covers_every_class_and_family() -> None:
    ids = [p.id for p in _params()]
    assert len(ids) > 900
    for cls in CLASSES:
        assert any(f"-{cls}" in i for i in ids), cls
    for name in list(_ACTIVATIONS) + list(_NORMS) + list(_DISTANCES) + list(_LOSS_NAMES):
        assert any(i.startswith(name) for i in ids), name


# ---- the cases the sweep grew from, on every device ----------------------------------------
def _ints(lib: Any, values: Any) -> Any:
    return lib.tensor(np.array(values, dtype=np.int64))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy", "cross_entropy_smoothing",
                                  "cross_entropy_weight_smoothing"])
def test_every_target_ignored_gives_zero_gradients(loss, reduction, device):
    # a padding-only batch: torch's mean is nan (0 / 0), its gradient zeros, never nan
    def prog(lib, x):
        t = _ints(lib, [-100, -100, -100])
        if loss == "nll_loss":
            return F(lib).nll_loss(x, t, reduction=reduction)
        kw = {"label_smoothing": 0.1} if "smoothing" in loss else {}
        if "weight" in loss:
            kw["weight"] = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=x.dtype)
        return F(lib).cross_entropy(x, t, reduction=reduction, **kw)

    check(prog, (3, 4), device=device, grad_fn=False)
    x = rustgrad.tensor(np.ones((3, 4)), requires_grad=True, device=device)
    out = prog(rustgrad_on(device), x)
    out.backward(rustgrad.ones_like(out))
    assert np.isnan(out.item()) if reduction == "mean" else not out.detach().cpu().numpy().any()
    assert not x.grad.cpu().numpy().any() and not np.signbit(x.grad.cpu().numpy()).any()


def test_ignored_entries_holding_nan_or_inf_contribute_nothing(device):
    x = np.array([[np.nan, 1.0, 2.0], [np.inf, -np.inf, 0.5], [0.1, 0.2, 0.3]])

    def prog(lib, x):
        t = _ints(lib, [-100, 1, 2])
        return (F(lib).nll_loss(x, t, reduction="none"), F(lib).nll_loss(x, _ints(lib, [0, -100, 2])),
                F(lib).cross_entropy(x, t, reduction="sum"))

    check(prog, x, device=device, grad_fn=False)


def test_zero_vectors_have_torchs_finite_gradients(device):
    a = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    b = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    # torch clamps the norms by eps: a zero row's gradient is finite (and large), not nan
    for p in (2.0, 1.0, 3.0, float("inf")):
        check(lambda lib, x, p=p: F(lib).normalize(x, p=p), a, device=device, grad_fn=False)
    check(lambda lib, x, y: F(lib).cosine_similarity(x, y), a, b, device=device, grad_fn=False)
    check(lambda lib, x, y: F(lib).cosine_embedding_loss(x, y, lib.tensor([1.0, -1.0, 1.0],
                                                                          dtype=x.dtype)),
          a, b, device=device, grad_fn=False)
    x = rustgrad.tensor(a, requires_grad=True, device=device)
    F(rustgrad).normalize(x).sum().backward()
    assert np.isfinite(x.grad.cpu().numpy()).all()


@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, 3.0, 0.5, -1.0, float("inf")])
def test_pairwise_distance_every_p_and_zero_distances(p, device):
    a = np.array([[1.0, 2.0], [3.0, 3.0], [0.0, 0.0]])
    b = np.array([[1.0, 2.0], [1.0, 5.0], [0.0, 0.0]])
    check(lambda lib, x, y: F(lib).pairwise_distance(x, y, p=p, eps=0.0), a, b, device=device,
          grad_fn=False)


def test_hinge_embedding_loss_of_inf_is_inf(device):
    x = np.array([np.inf, -np.inf, 0.5, np.inf])

    def prog(lib, x):
        t = lib.tensor([1.0, 1.0, -1.0, -1.0], dtype=x.dtype)
        return F(lib).hinge_embedding_loss(x, t, reduction="none")

    check(prog, x, device=device, grad_fn=False)
    out = prog(rustgrad_on(device), rustgrad.tensor(x, device=device))
    assert out.cpu().numpy()[0] == np.inf


@pytest.mark.parametrize("bad", [np.nan, -0.5, 1.5, np.inf])
@pytest.mark.parametrize("where", ["input", "target"])
def test_binary_cross_entropy_refuses_values_outside_0_1(bad, where, device):
    good = np.array([0.25, 0.5, 0.75])
    wrong = good.copy()
    wrong[1] = bad
    specs = (wrong, good) if where == "input" else (good, wrong)
    check_error(lambda lib, x, t: F(lib).binary_cross_entropy(x, t), *specs, device=device,
                phrase=f"all elements of {where} should be between 0 and 1")


@pytest.mark.parametrize("module", ["BatchNorm1d", "BatchNorm2d"])
def test_batch_norm_training_on_an_empty_batch_as_torch(module, device):
    shape = (0, 3) if module == "BatchNorm1d" else (0, 3, 4, 4)

    def prog(lib, x):
        m = getattr(lib.nn, module)(3, dtype=x.dtype, device=x.device)
        with lib.no_grad():
            m.running_mean.fill_(0.5)
            m.weight.fill_(2.0)
        out = m(x)
        # torch: an empty output, the running statistics unchanged, the batch counted
        return out, m.running_mean, m.running_var, m.num_batches_tracked

    check(prog, shape, device=device, grad_fn=False)
    check(lambda lib, x, w, b: F(lib).batch_norm(x, None, None, w, b, training=True),
          shape, (3,), (3,), device=device)


def test_group_norm_of_an_empty_batch_as_torch(device):
    check(lambda lib, x, w, b: F(lib).group_norm(x, 3, w, b), (0, 6, 5), (6,), (6,),
          device=device)


@pytest.mark.parametrize("norm", ["batch_norm", "batch_norm_eval", "group_norm", "layer_norm"])
def test_norms_with_an_infinite_weight_as_torch(norm, device):
    # torch computes x * (w * rstd) + (b - mean * w * rstd): nan where inf * x - inf * mean
    w = np.array([1.0, np.inf, 2.0, -np.inf, 0.5, 1.0])

    def prog(lib, x, w, b):
        if norm == "group_norm":
            return F(lib).group_norm(x, 3, w, b)
        if norm == "layer_norm":
            return F(lib).layer_norm(x.transpose(1, 2), (6,), w, b)
        rm = lib.zeros(6, dtype=x.dtype)
        rv = lib.ones(6, dtype=x.dtype)
        return F(lib).batch_norm(x, rm, rv, w, b, training=norm == "batch_norm")

    check(prog, (4, 6, 5), w, (6,), device=device, grad_fn=False)


@pytest.mark.parametrize("target", [0.0, -0.0, 0.5])
def test_kl_div_gradient_of_a_zero_target_is_torchs(target, device):
    # xlogy(t, t)'s derivative in t is log(t) + t / t: nan at t == 0, as torch's
    t = np.array([target, 0.25, 1.0])
    check(lambda lib, x, t: F(lib).kl_div(x, t, reduction="sum"), (3,), t, device=device,
          grad_fn=False)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_target_gradient(reduction, weighted, device):
    # d/dt: log(1 - x) - log(x), not clamped: inf at x == 0, -inf at x == 1 (torch's)
    x = np.array([0.0, 1e-50, 0.3, 0.5, 1.0])
    t = np.array([0.2, 0.4, 0.6, 0.8, 1.0])

    def prog(lib, x, t):
        w = lib.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=x.dtype) if weighted else None
        return F(lib).binary_cross_entropy(x, t, w, reduction=reduction)

    check(prog, x, t, device=device, dtypes=(np.float64,), grad_fn=False)
    check(prog, (5,), (5,), low=0.05, high=0.95, device=device, grad_fn=False)


def test_soft_margin_loss_gradient_at_zero(device):
    # softplus'(0) = 1/2: -t/2 per element (a clamp-and-abs composite gave 0)
    check(lambda lib, x: F(lib).soft_margin_loss(x, lib.tensor([1.0, -1.0, 1.0], dtype=x.dtype)),
          np.zeros(3), device=device, grad_fn=False)


def test_gaussian_nll_loss_variance_edges(device):
    x, t = np.array([0.5, 1.0, -1.0]), np.array([0.0, 0.0, 0.0])
    # an infinite variance: loss inf, gradient 0 (a clamp written as var + (clamped - var) gave
    # inf - inf = nan); a tiny one is clamped to eps with the gradient passing as unclamped
    for var in ([1.0, np.inf, 2.0], [1e-9, 1.0, 0.0]):
        check(lambda lib, a, b, v: F(lib).gaussian_nll_loss(a, b, v), x, t, np.array(var),
              device=device, grad_fn=False)
    check_error(lambda lib, a, b, v: F(lib).gaussian_nll_loss(a, b, v), x, t,
                np.array([1.0, -1.0, 1.0]), device=device, phrase="var has negative entry")
    check_error(lambda lib, a, b, v: F(lib).gaussian_nll_loss(a, b, v), (3, 4), (3, 4),
                np.ones((3, 2)), device=device, phrase="var is of incorrect size")
    check(lambda lib, a, b, v: F(lib).gaussian_nll_loss(a, b, v), (3, 4), (3, 4), (3,),
          low=0.5, device=device, grad_fn=False)
    # torch broadcasts a size-1 dimension anywhere, and takes a number for the variance
    for vshape in ((4, 1, 5), (1, 3, 5), (4, 3, 1)):
        check(lambda lib, a, b, v: F(lib).gaussian_nll_loss(a, b, v), (4, 3, 5), (4, 3, 5),
              vshape, low=0.5, device=device, grad_fn=False)
    for vshape in ((4, 1, 1), (3, 5)):
        check_error(lambda lib, a, b, v: F(lib).gaussian_nll_loss(a, b, v), (4, 3, 5),
                    (4, 3, 5), np.ones(vshape), device=device, phrase="var is of incorrect size")
    check(lambda lib, a, b: F(lib).gaussian_nll_loss(a, b, 2.0), (4, 3), (4, 3), device=device,
          grad_fn=False)
    check_error(lambda lib, a, b: F(lib).gaussian_nll_loss(a, b, -1.0), (4, 3), (4, 3),
                device=device, phrase="var has negative entry")


ARGUMENTS_REFUSED = {
    "cosine_embedding_0d_target": (lambda lib, a, b: F(lib).cosine_embedding_loss(
        a, b, lib.tensor(1.0, dtype=a.dtype)), (2, 3), (2, 3),
        "0D target tensor expects 1D input tensors, but found inputs with sizes [2, 3] and [2, 3]"),
    "cosine_embedding_1d_target": (lambda lib, a, b: F(lib).cosine_embedding_loss(
        a, b, lib.ones(3, dtype=a.dtype)), (3,), (3,),
        "1D target tensor expects 2D input tensors"),
    "cosine_embedding_2d_target": (lambda lib, a, b: F(lib).cosine_embedding_loss(
        a, b, lib.ones(2, 1, dtype=a.dtype)), (2, 3), (2, 3),
        "0D or 1D target tensor expected, multi-target not supported"),
    "nll_loss_0d": (lambda lib, a, b: F(lib).nll_loss(a.sum(), _ints(lib, 0)), (2,), (2,),
                    "Expected 1 or more dimensions (got 0)"),
    "cross_entropy_long_probabilities": (lambda lib, a, b: F(lib).cross_entropy(
        a, b.long()), (2, 3), (2, 3),
        "Expected floating point type for target with class probabilities, got Long"),
    "cross_entropy_probabilities_ignore_index": (lambda lib, a, b: F(lib).cross_entropy(
        a, b, ignore_index=1), (2, 3), (2, 3),
        "ignore_index is not supported for floating point target"),
    "cross_entropy_smoothing": (lambda lib, a, b: F(lib).cross_entropy(
        a, b, label_smoothing=2.0), (2, 3), (2, 3),
        "label_smoothing must be between 0.0 and 1.0. Got: 2"),
    "cross_entropy_0d": (lambda lib, a, b: F(lib).cross_entropy(a.sum(), b.sum()), (2,), (2,),
                         "Dimension specified as 1 but tensor has no dimensions"),
    "multilabel_0d": (lambda lib, a, b: F(lib).multilabel_soft_margin_loss(a.sum(), b.sum()),
                      (2,), (2,), "Dimension specified as -1 but tensor has no dimensions"),
    "bce_weight_not_expanding": (lambda lib, a, b: F(lib).binary_cross_entropy(
        a, b.detach(), lib.ones(3, dtype=a.dtype)), (2,), (2,),
        "Attempting to broadcast a dimension of length 3 at -1!"),
    "bce_weight_enlarging": (lambda lib, a, b: F(lib).binary_cross_entropy(
        a, b, lib.ones(2, 3, dtype=a.dtype)), np.full(3, 0.25), np.full(3, 0.5),
        "output with shape [3] doesn't match the broadcast shape [2, 3]"),
    "bce_logits_pos_weight_enlarging": (lambda lib, a, b: F(lib).binary_cross_entropy_with_logits(
        a.sum(), b.sum(), pos_weight=lib.ones(5, dtype=a.dtype)), (2,), (2,),
        "output with shape [] doesn't match the broadcast shape [5]"),
    "bce_logits_weight_not_broadcasting": (lambda lib, a, b: F(lib).binary_cross_entropy_with_logits(
        a, b, weight=lib.ones(4, dtype=a.dtype)), (3,), (3,),
        "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"),
    "soft_margin_sizes": (lambda lib, a, b: F(lib).soft_margin_loss(a, b.detach()), (3,), (2,),
                          "The size of tensor a (3) must match the size of tensor b (2)"),
    "soft_margin_target_requiring_grad": (lambda lib, a, b: F(lib).soft_margin_loss(a, b),
                                          (3,), (3,), "The function 'soft_margin_loss' is not "
                                          "differentiable with respect to argument 'target'"),
    "mse_weight_shape": (lambda lib, a, b: F(lib).mse_loss(a, b, weight=lib.ones(1, dtype=a.dtype)),
                         (3,), (3,), "Weights and input must have the same size."),
    "l1_weight_shape": (lambda lib, a, b: F(lib).l1_loss(a, b, weight=lib.ones(2, 3, dtype=a.dtype)),
                        (3,), (3,), "Weights and input must have the same size."),
    "huber_weight_shape": (lambda lib, a, b: F(lib).huber_loss(a, b, weight=lib.ones(4, dtype=a.dtype)),
                           (3,), (3,), "Weights and input must have the same size."),
    "layer_norm_weight_shape": (lambda lib, a, b: F(lib).layer_norm(a, (3,), b), (2, 3), (2,),
                                "Expected weight to be of same shape as normalized_shape, but got "
                                "weight of shape [2] and normalized_shape = [3]"),
    "layer_norm_empty_shape": (lambda lib, a, b: F(lib).layer_norm(a, ()), (2, 3), (2,),
                               "Expected normalized_shape to be at least 1-dimensional"),
    "rms_norm_0d": (lambda lib, a, b: F(lib).rms_norm(a.sum(), (3,)), (2,), (2,),
                    "Input tensor must have at least 1 dimensions, but got 0"),
    "rms_norm_shape": (lambda lib, a, b: F(lib).rms_norm(a, (2, 5)), (4, 5), (2,),
                       "Given normalized_shape=[2, 5], expected input with shape [*2, 5], but got "
                       "input of size[4, 5]"),
    "group_norm_1d": (lambda lib, a, b: F(lib).group_norm(a, 1), (3,), (2,),
                      "Expected at least 2 dimensions for input tensor but received 1"),
    "group_norm_one_value": (lambda lib, a, b: F(lib).group_norm(a, 6), (1, 6), (2,),
                             "Expected more than 1 value per channel when training, got input "
                             "size [1, 6]"),
    "group_norm_empty_plane": (lambda lib, a, b: F(lib).group_norm(a, 3), (2, 6, 0), (2,),
                               "Expected HxW to be greater than 0, got 0"),
    "group_norm_weight": (lambda lib, a, b: F(lib).group_norm(a, 3, b), (2, 6, 5), (5,),
                          "Expected weight to be a vector of size equal to the number of "
                          "channels in input, but got weight of shape [5] and input of shape "
                          "[2, 6, 5]"),
    "batch_norm_0d": (lambda lib, a, b: F(lib).batch_norm(a.sum(), None, None, training=True),
                      (2,), (2,), "tuple index out of range"),
    "batch_norm_running_size": (lambda lib, a, b: F(lib).batch_norm(a, b, b), (4, 3), (2,),
                                "running_mean should contain 3 elements not 2"),
    "batch_norm_weight_size": (lambda lib, a, b: F(lib).batch_norm(a, None, None, b,
                                                                   training=True), (4, 3), (2,),
                               "weight should contain 3 elements not 2"),
    "batch_norm_eval_without_stats": (lambda lib, a, b: F(lib).batch_norm(a, None, None),
                                      (4, 3), (2,),
                                      "running_mean must be defined in evaluation mode"),
    "batch_norm_one_running_stat": (lambda lib, a, b: F(lib).batch_norm(
        a, b.detach(), None, training=True), (4, 3), (3,),
        "running_mean and running_var must either both be None or neither be None"),
}


@pytest.mark.parametrize("case", sorted(ARGUMENTS_REFUSED))
def test_loss_and_norm_arguments_refused_as_torch(case, device):
    fn, a, b, phrase = ARGUMENTS_REFUSED[case]
    check_error(fn, a, b, phrase=phrase, requires_grad=True, device=device)
