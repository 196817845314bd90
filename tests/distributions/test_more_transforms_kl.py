"""CatTransform, StackTransform and CorrCholeskyTransform (values, inverses, log-determinants,
shapes, constraints and gradients as torch's; biject_to / transform_to for cat, stack and
corr_cholesky), and the KL divergences torch registers for ContinuousBernoulli."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import rustgrad.distributions as RD
import torch
import torch.distributions as TD
from torch.distributions.kl import _KL_REGISTRY

from ._util import backward_both, compare, tensors
from .test_kl import FAMILIES

A = np.asarray


def _tf(D):
    T = D.transforms
    return {
        "cat": (lambda: T.CatTransform([T.ExpTransform(), T.identity_transform, T.SigmoidTransform()],
                                       dim=-1, lengths=[2, 1, 2]), A([[0.3, -1.0, 2.0, 0.5, -0.2]] * 2)),
        "cat-dim0": (lambda: T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 3.0)], dim=0, lengths=[1, 2]),
                     A([[0.3, -1.0], [2.0, 0.5], [-0.2, 0.1]])),
        "cat-events": (lambda: T.CatTransform([T.StickBreakingTransform(), T.StickBreakingTransform()],
                                              dim=0, lengths=[1, 1]), A([[0.3, -1.0], [2.0, 0.5]])),
        "stack": (lambda: T.StackTransform([T.ExpTransform(), T.TanhTransform(), T.SoftplusTransform()], dim=1),
                  A([[0.3, -1.0, 2.0], [0.5, -0.2, 0.1]])),
        "stack-neg": (lambda: T.StackTransform([T.ExpTransform(), T.identity_transform], dim=-1),
                      A([[0.3, -1.0], [2.0, 0.5]])),
        "corr-cholesky": (lambda: T.CorrCholeskyTransform(), A([[0.3, -1.0, 2.0], [0.5, -0.2, 0.1]])),
        "corr-cholesky-4": (lambda: T.CorrCholeskyTransform(), A([0.3, -1.0, 2.0, 0.5, -0.2, 0.1])),
    }


CASES = list(_tf(TD))


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_transform_values_and_gradients_match_torch(name, dtype, device):
    outs, params = [], []
    for lib, D in ((torch, TD), (rustgrad, RD)):
        make, x0 = _tf(D)[name]
        t = make()
        x = tensors(lib, {"x": x0}, dtype, device)["x"]
        y = t(x)
        x_back = t.inv(y.detach())
        ladj = t.log_abs_det_jacobian(x, y)
        assert t.bijective
        outs.append({"y": y, "inv": x_back, "ladj": ladj})
        params.append(x)
        assert bool(t.codomain.check(y.detach()).all()) and bool(t.domain.check(x.detach()).all())
        # (the Cat and Stack transforms keep the base class's shapes, as torch's)
        meta = (t.domain.event_dim, t.codomain.event_dim, type(t.domain).__name__,
                tuple(t.forward_shape(x.shape)), tuple(t.inverse_shape(y.shape)))
        if lib is torch:
            tmeta = meta
        else:
            assert meta == tmeta
    for k in outs[0]:
        compare(outs[0][k], outs[1][k], f"{name}.{k}", dtype, device)
    assert backward_both(outs[0], outs[1], device)
    compare(params[0].grad, params[1].grad, f"{name}: grad", dtype, device)


def test_corr_cholesky_log_det_is_the_jacobian_of_the_lower_triangle():
    # the log |det| of the map x -> strictly lower triangle of y, by autograd's full Jacobian
    t = RD.transforms.CorrCholeskyTransform()
    x = rustgrad.tensor([0.3, -1.0, 2.0, 0.5, -0.2, 0.1], dtype=rustgrad.float64)
    rows, cols = np.tril_indices(4, -1)

    def f(v):
        return t(v)[..., rows, cols]

    jac = rustgrad.autograd.functional.jacobian(f, x).numpy()
    np.testing.assert_allclose(t.log_abs_det_jacobian(x, t(x)).item(), np.log(abs(np.linalg.det(jac))), rtol=1e-10)


def test_biject_to_and_transform_to_for_cat_stack_and_corr_cholesky(device):
    c = RD.constraints
    for registry in (RD.biject_to, RD.transform_to):
        assert isinstance(registry(c.corr_cholesky), RD.transforms.CorrCholeskyTransform)
        t = registry(c.cat([c.positive, c.real, c.interval(0.0, 2.0)], dim=0, lengths=[2, 1, 1]))
        assert isinstance(t, RD.transforms.CatTransform) and t.lengths == [2, 1, 1]
        y = t(rustgrad.tensor([-1.0, 0.5, 3.0, -3.0], device=device))
        assert bool(t.codomain.check(y).all())
        s = registry(c.stack([c.positive, c.unit_interval], dim=-1))
        assert isinstance(s, RD.transforms.StackTransform)
        y = s(rustgrad.tensor([[-1.0, 0.5], [3.0, -3.0]], device=device))
        assert bool(s.codomain.check(y).all())


def test_cached_transforms_and_errors_as_torchs():
    from ..parity import same_error

    for lib in (torch, rustgrad):
        T = lib.distributions.transforms
        t = T.CatTransform([T.ExpTransform(), T.ExpTransform()], lengths=[1, 2], cache_size=1)
        assert all(p._cache_size == 1 for p in t.transforms) and t.with_cache(1) is t
        x = lib.tensor([0.1, 0.2, 0.3])
        y = t(x)
        assert t.inv(y) is x
        s = T.StackTransform([T.ExpTransform()], cache_size=1).with_cache(0)
        assert s._cache_size == 0
        assert t.length == 3 and t.event_dim == 0
    same_error(lambda L: L.distributions.transforms.CatTransform([1.0]), "All elements of tseq must be Transform")
    same_error(lambda L: L.distributions.transforms.CatTransform([L.distributions.transforms.ExpTransform()],
                                                                 lengths=[1, 2]),
               "lengths (2) must match transforms (1)")
    same_error(lambda L: L.distributions.transforms.CatTransform(
        [L.distributions.transforms.ExpTransform()], lengths=[2])(L.ones(3)), "x.size(0) = 3 must equal length 2")
    same_error(lambda L: L.distributions.transforms.StackTransform(
        [L.distributions.transforms.ExpTransform()], dim=1)(L.ones(3)),
        "dim 1 out of range for tensor with 1 dimensions")
    same_error(lambda L: L.distributions.transforms.StackTransform(
        [L.distributions.transforms.ExpTransform()]).inv(L.ones(3)), "y.size(0) = 3 must equal len(transforms) 1")
    same_error(lambda L: L.distributions.transforms.CorrCholeskyTransform().forward_shape((4,)),
               "Input is not a flattened lower-diagonal number")
    same_error(lambda L: L.distributions.transforms.CorrCholeskyTransform().inverse_shape((3, 2)),
               "Input is not square")


# ---- KL divergences involving ContinuousBernoulli -----------------------------------------------
KL_FAMILIES = dict(FAMILIES)
KL_FAMILIES["ContinuousBernoulli"] = (lambda D, probs: D.ContinuousBernoulli(probs),
                                      [{"probs": A([0.3, 0.8])}, {"probs": A([0.6, 0.4999])}])
KL_FAMILIES["Uniform"] = (lambda D, low, high: D.Uniform(low, high),
                          [{"low": A([0.1, 0.2]), "high": A([0.6, 0.7])},
                           {"low": A([-0.5, 0.0]), "high": A([1.2, 1.5])}])
PAIRS = sorted({(p.__name__, q.__name__) for p, q in _KL_REGISTRY
                if "ContinuousBernoulli" in (p.__name__, q.__name__)})


def _build(lib, name, which, device, dtype):
    make, params = KL_FAMILIES[name]
    D = TD if lib is torch else RD
    ts = tensors(lib, params[which], dtype, device, tuple(k for k in params[which] if k == "n"))
    return make(D, **ts), ts


def test_every_continuous_bernoulli_pair_is_registered():
    assert len(PAIRS) == 13
    ours = {(p.__name__, q.__name__) for p, q in RD.kl._KL_REGISTRY}
    assert set(PAIRS) <= ours


@pytest.mark.parametrize("pair", PAIRS, ids=[f"{p}-{q}" for p, q in PAIRS])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_continuous_bernoulli_kl_values_and_gradients_match_torch(pair, dtype, device):
    p_name, q_name = pair
    tp, tpp = _build(torch, p_name, 0, device, dtype)
    tq, tqp = _build(torch, q_name, 1, device, dtype)
    rp, rpp = _build(rustgrad, p_name, 0, device, dtype)
    rq, rqp = _build(rustgrad, q_name, 1, device, dtype)
    touts = {"kl": TD.kl_divergence(tp, tq)}
    routs = {"kl": RD.kl_divergence(rp, rq)}
    compare(touts["kl"], routs["kl"], f"KL({p_name} || {q_name})", dtype, device)
    if backward_both(touts, routs, device):
        for tparams, rparams in ((tpp, rpp), (tqp, rqp)):
            for k in tparams:
                t, r = tparams[k].grad, rparams[k].grad
                assert (t is None) == (r is None), k
                if t is not None:
                    compare(t, r, f"KL({p_name} || {q_name}): grad of {k}", dtype, device, loose=True)


@pytest.mark.parametrize("low,high", [([0.0, -0.5], [1.0, 2.0]), ([0.1, -0.1], [0.9, 1.1])])
def test_continuous_bernoulli_uniform_support_edges(low, high, device):
    outs = []
    for lib, D in ((torch, TD), (rustgrad, RD)):
        kw = {"device": device} if lib is rustgrad else {}
        cb = D.ContinuousBernoulli(lib.tensor([0.3, 0.7], dtype=lib.float64, **kw))
        u = D.Uniform(lib.tensor(low, dtype=lib.float64, **kw), lib.tensor(high, dtype=lib.float64, **kw))
        outs.append((D.kl_divergence(cb, u), D.kl_divergence(u, cb)))
    for t, r in zip(*outs):
        compare(t, r, "KL edges", np.float64, device)
