"""The forward-mode formulas the node specs state (`node(..., forward=...)`): each one's tangents
against torch's forward AD and against the double-vjp that forward_ad falls back on, with the
fallback forbidden so that a formula, not the fallback, is what is checked; and every spec that
states a formula is exercised here."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Set

import numpy as np
import pytest
import rustgrad
import rustgrad.autograd.forward_ad as fwAD
import torch
import torch.autograd.forward_ad  # noqa: F401  (torch.autograd.forward_ad below)
from rustgrad._ops import pointwise, special
from rustgrad._ops._node import NODES

from ..parity import oracle_for, rustgrad_on


class Case(NamedTuple):
    program: Callable[..., Any]
    shapes: Sequence[Any]
    low: float = -1.5
    high: float = 1.5
    torch: bool = True  # torch's forward AD has the op (rrelu's noise differs: rustgrad only)


def _unary_program(row: Any) -> Callable[..., Any]:
    if row.public:
        return lambda L, x: getattr(L, row.name)(x)
    return lambda L, x: getattr(L.special, row.special[0])(x)


# the unary table's rows, on an input inside every row's domain (acosh's shifted into it)
CASES: Dict[str, Case] = {
    row.name: Case(_unary_program(row), [(2, 3)], 0.2, 0.9)
    for row in pointwise._ROWS + special._ROWS if row.name != "acosh"
}
CASES["acosh"] = Case(lambda L, x: L.acosh(x + 1.5), [(2, 3)], 0.2, 0.9)


def _rrelu(inplace: bool) -> Callable[..., Any]:
    def program(L: Any, x: Any) -> Any:
        L.manual_seed(0)
        return L.nn.functional.rrelu(x * 1 if inplace else x, training=True, inplace=inplace)
    return program


CASES.update({
    # arithmetic, a broadcast operand included
    "add_alpha": Case(lambda L, x, y: L.add(x, y, alpha=0.5), [(2, 3), (3,)]),
    "sub_alpha": Case(lambda L, x, y: L.sub(x, y, alpha=2), [(2, 3), (2, 3)]),
    "rsub": Case(lambda L, x: 2.0 - x, [(2, 3)]),
    "neg": Case(lambda L, x: -x, [(2, 3)]),
    "mul": Case(lambda L, x, y: x * y, [(2, 3), (3,)]),
    "mul_scalar": Case(lambda L, x: x * 2.5, [(2, 3)]),
    "div": Case(lambda L, x, y: x / (y + 3), [(2, 3), (2, 1)]),
    "div_floor": Case(lambda L, x, y: L.div(x, y + 3, rounding_mode="floor"), [(2, 3), (2, 3)]),
    "remainder_scalar": Case(lambda L, x: x % 0.7, [(2, 3)]),
    "remainder_tensor": Case(lambda L, x, y: L.remainder(x, y + 3), [(2, 3), (2, 3)]),
    "pow_scalar": Case(lambda L, x: x ** 3, [(2, 3)]),
    "pow_tensor": Case(lambda L, x, y: (x + 2) ** y, [(2, 3), (2, 3)]),
    "rpow": Case(lambda L, x: 2.0 ** x, [(2, 3)]),
    "addcmul": Case(lambda L, x, a, b: L.addcmul(x, a, b, value=0.5), [(2, 3), (2, 3), (3,)]),
    "addcdiv": Case(lambda L, x, a, b: L.addcdiv(x, a, b + 3, value=2), [(2, 3), (2, 3), (2, 3)]),
    # pointwise
    "exp_log_sqrt": Case(lambda L, x: x.exp() + x.log() + x.sqrt(), [(2, 3)], 0.2, 0.9),
    "abs_sign": Case(lambda L, x: x.abs() + x.sign(), [(2, 3)]),
    "tanh_reciprocal": Case(lambda L, x: x.tanh() + x.reciprocal(), [(2, 3)], 0.2, 0.9),
    "clamp": Case(lambda L, x: x.clamp(-0.5, 0.5), [(2, 3)]),
    "clamp_tensor": Case(lambda L, x, lo, hi: L.clamp(x, lo - 1, hi + 1), [(2, 3), (2, 3), (3,)]),
    "clamp_min_max": Case(lambda L, x: x.clamp_min(-0.3) + x.clamp_max(0.4), [(2, 3)]),
    "clamp_min_max_tensor": Case(lambda L, x, b: L.clamp_min(x, b) + L.clamp_max(x, b),
                                 [(2, 3), (2, 3)]),
    "atan2": Case(lambda L, x, y: L.atan2(x, y), [(2, 3), (2, 3)]),
    "rounding": Case(lambda L, x: x.floor() + x.ceil() + x.trunc() + x.round() + x.round(decimals=1),
                     [(2, 3)]),
    "erf": Case(lambda L, x: L.erf(x), [(2, 3)]),
    "lerp": Case(lambda L, x, y, w: L.lerp(x, y, 0.3) + L.lerp(x, y, w), [(2, 3), (2, 3), (2, 3)]),
    "fmod": Case(lambda L, x, y: L.fmod(x, 0.7) + L.fmod(x, y + 3), [(2, 3), (2, 3)]),
    "nan_to_num_frac": Case(lambda L, x: L.nan_to_num(x) + x.frac(), [(2, 3)]),
    "where": Case(lambda L, x, y: L.where(x > 0, x, y), [(2, 3), (3,)]),
    "maximum_minimum": Case(lambda L, x, y: L.maximum(x, y) + L.minimum(x, y), [(2, 3), (2, 3)]),
    "fmax_fmin": Case(lambda L, x, y: L.fmax(x, y) + L.fmin(x, y), [(2, 3), (2, 3)]),
    "clone_to": Case(lambda L, x: x.clone() + x.float().double(), [(2, 3)]),
    # reductions
    "sum": Case(lambda L, x: x.sum(), [(3, 4)]),
    "sum_dim": Case(lambda L, x: x.sum((0, 1), keepdim=True) + x.sum(1, keepdim=True), [(3, 4)]),
    "mean": Case(lambda L, x: x.mean() + x.mean(0).sum(), [(3, 4)]),
    # products
    "dot": Case(lambda L, x, y: L.dot(x, y), [(4,), (4,)]),
    "mv": Case(lambda L, a, v: L.mv(a, v), [(3, 4), (4,)]),
    "mm": Case(lambda L, a, b: L.mm(a, b), [(3, 4), (4, 2)]),
    "bmm": Case(lambda L, a, b: L.bmm(a, b), [(2, 3, 4), (2, 4, 2)]),
    "addmm": Case(lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=2), [(3, 2), (3, 4), (4, 2)]),
    "baddbmm": Case(lambda L, c, a, b: L.baddbmm(c, a, b), [(2, 3, 2), (2, 3, 4), (2, 4, 2)]),
    # a dual weight: linear transposes it inside (TBackward0 between the weight and addmm)
    "linear_dual_weight": Case(lambda L, x, w, b: L.nn.functional.linear(x, w, b),
                               [(5, 3), (4, 3), (4,)]),
    # joins (an input without a tangent gives zeros)
    "cat": Case(lambda L, x, y: L.cat([x, y.sin().detach(), y], 1), [(2, 3), (2, 2)]),
    "stack": Case(lambda L, x, y: L.stack([x, y, x.detach()], 0), [(2, 3), (2, 3)]),
    # activations
    "relu_sigmoid": Case(lambda L, x: L.relu(x) + L.sigmoid(x), [(2, 3)]),
    "softplus": Case(lambda L, x: L.nn.functional.softplus(x, beta=2), [(2, 3)]),
    "gelu": Case(lambda L, x: L.nn.functional.gelu(x) + L.nn.functional.gelu(x, approximate="tanh"),
                 [(2, 3)]),
    "silu_mish": Case(lambda L, x: L.nn.functional.silu(x) + L.nn.functional.mish(x), [(2, 3)]),
    "logsigmoid": Case(lambda L, x: L.nn.functional.logsigmoid(x), [(2, 3)]),
    "leaky_relu": Case(lambda L, x: L.nn.functional.leaky_relu(x, 0.1), [(2, 3)]),
    "leaky_relu_": Case(lambda L, x: L.nn.functional.leaky_relu(x * 1, 0.1, inplace=True), [(2, 3)]),
    "elu_celu": Case(lambda L, x: L.nn.functional.elu(x) + L.nn.functional.celu(x, 0.5), [(2, 3)]),
    "elu_celu_": Case(lambda L, x: (L.nn.functional.elu(x * 1, inplace=True)
                                    + L.nn.functional.celu(x * 1, 0.5, inplace=True)), [(2, 3)]),
    "hard_family": Case(lambda L, x: (L.nn.functional.hardtanh(x, -0.5, 0.5)
                                      + L.nn.functional.hardsigmoid(x)
                                      + L.nn.functional.hardswish(x)), [(2, 3)], -4, 4),
    "shrinks": Case(lambda L, x: (L.nn.functional.hardshrink(x, 0.5)
                                  + L.nn.functional.softshrink(x, 0.5)), [(2, 3)]),
    "threshold": Case(lambda L, x: L.nn.functional.threshold(x, 0.1, 20.0), [(2, 3)]),
    "threshold_": Case(lambda L, x: L.nn.functional.threshold(x * 1, 0.1, 20.0, inplace=True),
                       [(2, 3)]),
    "rrelu": Case(_rrelu(False), [(2, 3)], torch=False),
    "rrelu_": Case(_rrelu(True), [(2, 3)], torch=False),
    "softmax": Case(lambda L, x: L.softmax(x, 1) + L.nn.functional.softmax(x, dim=0), [(3, 4)]),
    "log_softmax": Case(lambda L, x: L.log_softmax(x, 1), [(3, 4)]),
    # losses
    "nll_loss": Case(lambda L, x: L.nn.functional.nll_loss(x.log_softmax(1), L.tensor([0, 2, 1])),
                     [(3, 4)]),
    "nll_loss_none_weight": Case(lambda L, x: L.nn.functional.nll_loss(
        x, L.tensor([0, 2, 1]), weight=L.tensor([1.0, 2.0, 0.5, 1.0], dtype=L.float64),
        reduction="none", ignore_index=1), [(3, 4)]),
    "nll_loss_2d": Case(lambda L, x: L.nn.functional.nll_loss(
        x, L.tensor([[[0, 1], [2, 0]], [[1, 1], [0, 2]]]), reduction="sum"), [(2, 3, 2, 2)]),
    "cross_entropy": Case(lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([0, 2, 1])),
                          [(3, 4)]),
    "mse_loss": Case(lambda L, x, y: (L.nn.functional.mse_loss(x, y)
                                      + L.nn.functional.mse_loss(x, y, reduction="sum")
                                      + L.nn.functional.mse_loss(x, y.detach(), reduction="none")),
                     [(2, 3), (2, 3)]),
})


def _np(t: Any) -> Any:
    return None if t is None else np.asarray(t.detach().cpu().numpy())


def _tangents(lib: Any, case: Case, seed: int = 0) -> List[Any]:
    """(primal, tangent) of each output of case.program run on duals in lib's forward AD."""
    rng = np.random.default_rng(seed)
    prims = [rng.uniform(case.low, case.high, s) for s in case.shapes]
    tans = [rng.uniform(-1.0, 1.0, s) for s in case.shapes]
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        duals = [fw.make_dual(lib.tensor(p), lib.tensor(t)) for p, t in zip(prims, tans)]
        out = case.program(lib, *duals)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        return [(_np(fw.unpack_dual(o).primal), _np(fw.unpack_dual(o).tangent)) for o in outs]


def _no_fallback(*args: Any) -> Any:
    raise AssertionError("forward AD fell back on the double-vjp: a node states no formula")


def _assert_same(got: List[Any], want: List[Any]) -> None:
    assert len(got) == len(want)
    for i, ((gp, gt), (wp, wt)) in enumerate(zip(got, want)):
        np.testing.assert_allclose(gp, wp, rtol=1e-7, atol=1e-9, err_msg=f"primal {i}")
        assert (gt is None) == (wt is None), f"output {i}: tangent {gt} instead of {wt}"
        if wt is not None:
            assert gt.shape == wt.shape and gt.dtype == wt.dtype, f"output {i}"
            np.testing.assert_allclose(gt, wt, rtol=1e-7, atol=1e-9, err_msg=f"tangent {i}")


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.torch))
def test_formula_tangents_match_torch(device: str, name: str, monkeypatch: pytest.MonkeyPatch
                                      ) -> None:
    monkeypatch.setattr(fwAD, "_jvps", _no_fallback)
    got = _tangents(rustgrad_on(device), CASES[name])
    want = _tangents(oracle_for(device), CASES[name])
    _assert_same(got, want)
    assert any(t is not None for _, t in got)


@pytest.mark.parametrize("name", sorted(CASES))
def test_formula_tangents_match_the_double_vjp(device: str, name: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    lib = rustgrad_on(device)
    want = _tangents(lib, CASES[name])
    monkeypatch.setattr(fwAD, "FORMULAS", False)
    _assert_same(want, _tangents(lib, CASES[name]))
    monkeypatch.setattr(fwAD, "FORMULAS", True)
    monkeypatch.setattr(fwAD, "_jvps", _no_fallback)
    _assert_same(_tangents(lib, CASES[name]), want)


# Views: forward AD takes a view's tangent as the same view of its input's (no formula), so
# their formulas serve only a view inside another op (linear's transpose of a dual weight);
# each is checked here directly, called on the node a view records, against the view itself.
VIEWS: Dict[str, Callable[[Any], Any]] = {
    "TBackward0": lambda x: x.t(),
    "TransposeBackward0": lambda x: x.transpose(0, 2),
    "PermuteBackward0": lambda x: x.permute(2, 0, 1),
    "UnsqueezeBackward0": lambda x: x.unsqueeze(1),
    "SliceBackward0": lambda x: x[:, 1:],
    "SelectBackward0": lambda x: x[1],
}
# an index with None records its node with the index as its ctx
INDEX_VIEWS = {"UnsqueezeBackward0": lambda x: x[1, None], "SliceBackward0": lambda x: x[:, None, 1:]}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_formulas(device: str, name: str) -> None:
    lib = rustgrad_on(device)
    for view in (VIEWS[name], INDEX_VIEWS.get(name)):
        if view is None:
            continue
        shape = (3, 4) if name == "TBackward0" else (2, 3, 4)
        x = lib.randn(*shape, dtype=lib.float64, requires_grad=True)
        t = lib.randn(*shape, dtype=lib.float64)
        node = view(x).grad_fn
        assert node.name() == name
        formula, saved, ctx = node._forward_args()
        np.testing.assert_array_equal(_np(formula((t,), saved, ctx)), _np(view(t)))


def test_safe_softmax_formula(device: str) -> None:
    # torch's _safe_softmax (attention's): a row of -inf gives zeros, in value and tangent
    from rustgrad._ops.activation import safe_softmax
    lib = rustgrad_on(device)
    x = lib.randn(3, 4, dtype=lib.float64)
    x[1] = -float("inf")
    t = lib.randn(3, 4, dtype=lib.float64)
    node = safe_softmax(x.requires_grad_(), 1).grad_fn
    formula, saved, ctx = node._forward_args()
    _, want = rustgrad.func.jvp(lambda a: safe_softmax(a, 1), (x.detach(),), (t,))
    got = formula((t,), saved, ctx)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12, atol=1e-14)
    assert not _np(got)[1].any()


def _recorded(case: Case) -> Set[str]:
    """The names of the nodes case.program records (its inputs requiring grad)."""
    rng = np.random.default_rng(0)
    xs = [rustgrad.tensor(rng.uniform(case.low, case.high, s), requires_grad=True)
          for s in case.shapes]
    out = case.program(rustgrad, *xs)
    seen: Set[Any] = set()
    stack = [o.grad_fn for o in (out if isinstance(out, (tuple, list)) else [out])]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(n for n, _ in node.next_functions)
    return {node.name() for node in seen}


def test_every_stated_formula_is_checked() -> None:
    stated = {name for name, spec in NODES.items() if spec.forward is not None}
    checked: Set[str] = set(VIEWS) | {"SafeSoftmaxBackward0"}
    for case in CASES.values():
        checked |= _recorded(case)
    assert stated - checked == set()


def test_a_node_without_a_formula_falls_back_on_the_double_vjp() -> None:
    # cumsum states no forward formula: its tangent is the double-vjp's, still torch's
    spec: Optional[Any] = NODES["CumsumBackward0"]
    assert spec is not None and spec.forward is None
    got = _tangents(rustgrad, Case(lambda L, x: x.cumsum(1).sin(), [(2, 3)]))
    want = _tangents(torch, Case(lambda L, x: x.cumsum(1).sin(), [(2, 3)]))
    _assert_same(got, want)


# ---- what the tangents' path must leave as torch leaves it (found in review) ---------------
def _both(program: Callable[[Any], Any]) -> List[Any]:
    return [program(torch), program(rustgrad)]


def test_a_tangent_is_differentiable_only_in_what_it_uses() -> None:
    # a weight the tangent does not use leaves it plain; one it uses puts it in a graph
    def program(L: Any) -> Any:
        fw = L.autograd.forward_ad
        b = L.zeros(2, 3, dtype=L.float64, requires_grad=True)
        w = L.ones(4, 3, dtype=L.float64, requires_grad=True)
        with fw.dual_level():
            x = fw.make_dual(L.ones(2, 3, dtype=L.float64), L.ones(2, 3, dtype=L.float64))
            unused = fw.unpack_dual(L.addcmul(b, x, x)).tangent
            used = fw.unpack_dual(L.nn.functional.linear(x, w)).tangent
            return unused.requires_grad, used.requires_grad
    want, got = _both(program)
    assert got == want == (False, True)


def test_gradients_of_a_tangent_through_a_fallback_op() -> None:
    # conv2d states no forward formula: its double-vjp tangent stays differentiable in W
    def program(L: Any) -> Any:
        rng = np.random.default_rng(0)
        fw = L.autograd.forward_ad
        x, tx = (L.tensor(rng.standard_normal((1, 1, 5, 5))) for _ in range(2))
        w = L.tensor(rng.standard_normal((2, 1, 3, 3)), requires_grad=True)
        with fw.dual_level():
            t = fw.unpack_dual(L.nn.functional.conv2d(fw.make_dual(x, tx), w).tanh().sum()).tangent
            return _np(L.autograd.grad(t, w)[0])
    want, got = _both(program)
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_a_made_tensor_keeps_requires_grad_and_gets_no_tangent() -> None:
    def program(L: Any) -> Any:
        fw = L.autograd.forward_ad
        with fw.dual_level():
            z = fw.make_dual(L.ones(3), L.ones(3)).new_zeros(3, requires_grad=True)
            return z.requires_grad, fw.unpack_dual(z).tangent
    want, got = _both(program)
    assert got == want == (True, None)


def test_an_op_runs_once_random_draws_and_running_statistics_included() -> None:
    def program(L: Any) -> Any:
        fw, F = L.autograd.forward_ad, L.nn.functional
        x = L.tensor(np.arange(24.0).reshape(4, 6) / 7)
        mean, var = L.zeros(6, dtype=L.float64), L.ones(6, dtype=L.float64)
        w = L.ones(6, dtype=L.float64, requires_grad=True)
        with fw.dual_level():
            d = fw.make_dual(x, L.ones(4, 6, dtype=L.float64))
            L.manual_seed(1)
            dropped = F.dropout1d(d, 0.5, training=True)  # unbatched: a view inside the op
            after = L.rand(2)
            F.batch_norm(d, mean, var, w, None, training=True, momentum=0.5)
        return _np(dropped), _np(after), _np(mean)
    want, got = _both(program)
    # the draws differ between the libraries; what matters is rustgrad's own stream and the
    # running mean updated once (torch's value)
    L = rustgrad
    L.manual_seed(1)
    x = L.tensor(np.arange(24.0).reshape(4, 6) / 7)
    np.testing.assert_array_equal(got[0], _np(L.nn.functional.dropout1d(x, 0.5, training=True)))
    np.testing.assert_array_equal(got[1], _np(L.rand(2)))
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12)


def test_cat_with_only_a_legacy_empty_dual() -> None:
    def program(L: Any) -> Any:
        fw = L.autograd.forward_ad
        with fw.dual_level():
            e = fw.make_dual(L.zeros(0), L.zeros(0))
            return _np(fw.unpack_dual(L.cat([L.ones(2, 3), e])).tangent)
    want, got = _both(program)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_tangents_at_ties_and_nans(op: str) -> None:
    def program(L: Any) -> Any:
        fw = L.autograd.forward_ad
        x = L.tensor([float("nan"), 2.0, 3.0, 1.0], dtype=L.float64)
        y = L.tensor([1.0, float("nan"), 3.0, float("nan")], dtype=L.float64)
        with fw.dual_level():
            a = fw.make_dual(x, L.ones(4, dtype=L.float64))
            b = fw.make_dual(y, 2 * L.ones(4, dtype=L.float64))
            return _np(fw.unpack_dual(getattr(L, op)(a, b)).tangent)
    want, got = _both(program)
    np.testing.assert_array_equal(got, want)
