"""kl_divergence: every pair torch registers among the distributions rustgrad has gives torch's
value and gradients; dispatch, register_kl and the errors behave as torch's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import rustgrad
import rustgrad.distributions as RD
import torch
import torch.distributions as TD
from torch.distributions.kl import _KL_REGISTRY

from ._cases import SPD, SPD2
from ._util import backward_both, compare, tensors

A = np.asarray

# two parameter sets per family (p's and q's), batch shape (2,)
FAMILIES = {
    "Bernoulli": (lambda D, probs: D.Bernoulli(probs), [{"probs": A([0.3, 0.9])}, {"probs": A([0.6, 0.2])}]),
    "Beta": (lambda D, a, b: D.Beta(a, b), [{"a": A([0.5, 3.0]), "b": A([1.2, 0.7])},
                                            {"a": A([2.0, 1.5]), "b": A([0.8, 4.0])}]),
    "Binomial": (lambda D, n, probs: D.Binomial(n, probs), [{"n": A([5.0, 5.0]), "probs": A([0.3, 0.9])},
                                                             {"n": A([5.0, 5.0]), "probs": A([0.6, 0.2])}]),
    "Categorical": (lambda D, probs: D.Categorical(probs), [{"probs": A([[0.3, 0.9, 0.2], [1.0, 2.0, 3.0]])},
                                                            {"probs": A([[0.5, 0.1, 0.4], [0.2, 0.2, 3.0]])}]),
    "Cauchy": (lambda D, loc, scale: D.Cauchy(loc, scale), [{"loc": A([0.5, -1.0]), "scale": A([1.2, 0.7])},
                                                             {"loc": A([0.0, 1.0]), "scale": A([0.5, 2.0])}]),
    "Dirichlet": (lambda D, c: D.Dirichlet(c), [{"c": A([[0.5, 3.0, 1.0], [2.0, 2.0, 0.3]])},
                                                 {"c": A([[1.5, 1.0, 1.0], [0.4, 5.0, 0.3]])}]),
    "Exponential": (lambda D, rate: D.Exponential(rate), [{"rate": A([0.5, 2.0])}, {"rate": A([1.5, 0.3])}]),
    "Gamma": (lambda D, c, r: D.Gamma(c, r), [{"c": A([0.5, 3.0]), "r": A([1.2, 0.7])},
                                              {"c": A([2.0, 1.5]), "r": A([0.8, 4.0])}]),
    "Geometric": (lambda D, probs: D.Geometric(probs), [{"probs": A([0.3, 0.9])}, {"probs": A([0.6, 0.2])}]),
    "Gumbel": (lambda D, loc, scale: D.Gumbel(loc, scale), [{"loc": A([0.5, -1.0]), "scale": A([1.2, 0.7])},
                                                             {"loc": A([0.0, 1.0]), "scale": A([0.5, 2.0])}]),
    "HalfNormal": (lambda D, scale: D.HalfNormal(scale), [{"scale": A([1.2, 0.7])}, {"scale": A([0.5, 2.0])}]),
    "Laplace": (lambda D, loc, scale: D.Laplace(loc, scale), [{"loc": A([0.5, -1.0]), "scale": A([1.2, 0.7])},
                                                               {"loc": A([0.0, 1.0]), "scale": A([0.5, 2.0])}]),
    "Normal": (lambda D, loc, scale: D.Normal(loc, scale), [{"loc": A([0.5, -1.0]), "scale": A([1.2, 0.7])},
                                                             {"loc": A([0.0, 1.0]), "scale": A([0.5, 2.0])}]),
    "OneHotCategorical": (lambda D, probs: D.OneHotCategorical(probs),
                          [{"probs": A([[0.3, 0.9, 0.2], [1.0, 2.0, 3.0]])},
                           {"probs": A([[0.5, 0.1, 0.4], [0.2, 0.2, 3.0]])}]),
    "Pareto": (lambda D, scale, alpha: D.Pareto(scale, alpha), [{"scale": A([0.5, 1.0]), "alpha": A([3.2, 2.7])},
                                                                 {"scale": A([0.4, 0.5]), "alpha": A([1.5, 4.0])}]),
    "Poisson": (lambda D, rate: D.Poisson(rate), [{"rate": A([0.5, 3.0])}, {"rate": A([1.5, 0.7])}]),
    "Uniform": (lambda D, low, high: D.Uniform(low, high), [{"low": A([0.1, 0.2]), "high": A([0.6, 0.7])},
                                                             {"low": A([0.0, -1.0]), "high": A([1.2, 0.9])}]),
    "MultivariateNormal": (lambda D, loc, cov: D.MultivariateNormal(loc, cov),
                           [{"loc": A([[0.5, 1.0, 0.0], [0.0, 0.0, 1.0]]), "cov": A([SPD, SPD2])},
                            {"loc": A([0.0, -1.0, 0.5]), "cov": SPD2}]),
    "LowRankMultivariateNormal": (lambda D, loc, w, d: D.LowRankMultivariateNormal(loc, w, d),
                                  [{"loc": A([[0.5, 1.0, 0.0], [0.0, 0.0, 1.0]]),
                                    "w": A([[2.0, 0.5], [0.5, 1.0], [0.1, 0.2]]), "d": A([1.0, 2.0, 0.5])},
                                   {"loc": A([0.0, -1.0, 0.5]), "w": A([[0.3], [0.5], [-1.0]]),
                                    "d": A([[0.5, 1.0, 1.5], [2.0, 1.0, 0.7]])}]),
    "Independent": (lambda D, loc, scale: D.Independent(D.Normal(loc, scale), 1),
                    [{"loc": A([[0.5, -1.0], [0.0, 0.0]]), "scale": A([[1.2, 0.7], [1.0, 1.0]])},
                     {"loc": A([[0.0, 1.0], [1.0, 0.0]]), "scale": A([[0.5, 2.0], [1.0, 3.0]])}]),
    "TransformedDistribution": (lambda D, loc, scale: D.TransformedDistribution(
        D.Normal(loc, scale), [D.transforms.ExpTransform()]),
        [{"loc": A([0.5, -1.0]), "scale": A([1.2, 0.7])}, {"loc": A([0.0, 1.0]), "scale": A([0.5, 2.0])}]),
    "ExponentialFamily": None,  # reached through its subclasses (Bregman divergence test below)
}

NO_GRAD = {"n"}

PAIRS = sorted({(p.__name__, q.__name__) for p, q in _KL_REGISTRY
                if FAMILIES.get(p.__name__) and FAMILIES.get(q.__name__)})


def _build(lib, name, which, device, dtype=np.float64):
    make, params = FAMILIES[name]
    D = TD if lib is torch else RD
    ts = tensors(lib, params[which], dtype, device, tuple(k for k in params[which] if k in NO_GRAD))
    return make(D, **ts), ts


def test_every_pair_torch_registers_among_ours_is_covered():
    assert len(PAIRS) >= 60
    ours = {(p.__name__, q.__name__) for p, q in RD.kl._KL_REGISTRY}
    assert set(PAIRS) <= ours
    missing = {(p.__name__, q.__name__) for p, q in _KL_REGISTRY if hasattr(RD, p.__name__) and
               hasattr(RD, q.__name__)} - ours
    assert not missing, missing


@pytest.mark.parametrize("pair", PAIRS, ids=[f"{p}-{q}" for p, q in PAIRS])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_kl_values_and_gradients_match_torch(pair, dtype, device):
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


EDGE_CASES = [
    # p's support outside q's, zero probabilities, equal distributions
    ("Uniform", {"low": A([0.0, -1.0]), "high": A([1.0, 2.0])},
     "Uniform", {"low": A([0.5, -2.0]), "high": A([2.0, 3.0])}),
    ("Uniform", {"low": A([-0.5, 0.2]), "high": A([0.5, 1.5])}, "Beta", {"a": A([1.0, 2.0]), "b": A([1.0, 2.0])}),
    ("Uniform", {"low": A([-0.5, 0.2]), "high": A([0.5, 1.5])}, "Exponential", {"rate": A([1.0, 2.0])}),
    ("Uniform", {"low": A([0.1, 0.2]), "high": A([0.5, 1.5])},
     "Pareto", {"scale": A([0.2, 0.1]), "alpha": A([1.0, 2.0])}),
    ("Bernoulli", {"probs": A([0.0, 1.0, 0.5])}, "Bernoulli", {"probs": A([0.0, 0.5, 1.0])}),
    ("Categorical", {"probs": A([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]])}, "Categorical",
     {"probs": A([[0.5, 0.0, 0.5], [0.2, 0.0, 0.8]])}),
    ("Pareto", {"scale": A([0.5, 1.0]), "alpha": A([0.8, 1.5])}, "Exponential", {"rate": A([1.0, 2.0])}),
    ("Pareto", {"scale": A([0.5, 1.0]), "alpha": A([0.8, 2.5])},
     "Normal", {"loc": A([1.0, 2.0]), "scale": A([1.0, 2.0])}),
    ("Pareto", {"scale": A([0.5, 1.0]), "alpha": A([0.8, 2.5])}, "Gamma", {"c": A([1.0, 2.0]), "r": A([1.0, 2.0])}),
    ("Pareto", {"scale": A([0.5, 1.0]), "alpha": A([0.8, 2.5])},
     "Pareto", {"scale": A([0.7, 0.5]), "alpha": A([1.0, 2.0])}),
    ("Binomial", {"n": A([5.0, 7.0]), "probs": A([0.3, 0.4])},
     "Binomial", {"n": A([5.0, 5.0]), "probs": A([0.5, 0.4])}),
    ("Normal", {"loc": A([0.5, -1.0]), "scale": A([1.2, 0.7])},
     "Normal", {"loc": A([0.5, -1.0]), "scale": A([1.2, 0.7])}),
]


@pytest.mark.parametrize("p_name,p_params,q_name,q_params", EDGE_CASES, ids=[f"{c[0]}-{c[2]}" for c in EDGE_CASES])
def test_kl_edge_values_match_torch(p_name, p_params, q_name, q_params, device):
    outs = []
    for lib, D in ((torch, TD), (rustgrad, RD)):
        p = FAMILIES[p_name][0](D, **tensors(lib, p_params, np.float64, device, tuple(NO_GRAD & set(p_params))))
        q = FAMILIES[q_name][0](D, **tensors(lib, q_params, np.float64, device, tuple(NO_GRAD & set(q_params))))
        outs.append(D.kl_divergence(p, q))
    compare(outs[0], outs[1], f"KL({p_name} || {q_name})", np.float64, device)
    assert (~np.isfinite(outs[1].detach().cpu().numpy())).any() or p_name == q_name


def test_bregman_divergence_of_an_exponential_family(device):
    # a subclass without a closed form of its own falls back to the Bregman divergence of its
    # log-normalizer (gradients by autograd), as torch's
    class TNormal(TD.Normal):
        pass

    class RNormal(RD.Normal):
        pass

    outs = []
    for lib, cls, D in ((torch, TNormal, TD), (rustgrad, RNormal, RD)):
        kw = {"device": device} if lib is rustgrad else {}
        loc = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True, **kw)
        q_loc = lib.tensor([0.0, 1.0], dtype=lib.float64, requires_grad=True, **kw)
        p = cls(loc, lib.tensor([1.2, 0.7], dtype=lib.float64, **kw))
        q = cls(q_loc, lib.tensor([0.5, 2.0], dtype=lib.float64, **kw))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # torch: ambiguous (Normal, ExponentialFamily)
            kl = D.kl._kl_expfamily_expfamily(p, q)
        kl.sum().backward()
        # p's natural parameters are detached (as torch's): only q's get a gradient
        assert loc.grad is None
        # the entropy of an exponential family by the same autograd trick
        entropy = D.ExponentialFamily.entropy(cls(loc, lib.tensor(1.5, dtype=lib.float64, **kw)))
        outs.append((kl, q_loc.grad, entropy))
    for t, r in zip(*outs):
        compare(t, r, "Bregman", np.float64, device)
    # the Bregman divergence is the closed form's value
    f64 = torch.float64
    closed = TD.kl_divergence(TD.Normal(torch.tensor([0.5, -1.0], dtype=f64), torch.tensor([1.2, 0.7], dtype=f64)),
                              TD.Normal(torch.tensor([0.0, 1.0], dtype=f64), torch.tensor([0.5, 2.0], dtype=f64)))
    np.testing.assert_allclose(outs[1][0].detach().cpu().numpy(), closed.numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="cross KL-divergence"):
        RD.kl._kl_expfamily_expfamily(RD.Normal(0.0, 1.0), RD.Exponential(1.0))


def test_errors_match_torch():
    from ..parity import same_error

    same_error(lambda lib: lib.distributions.kl_divergence(lib.distributions.Normal(0.0, 1.0),
                                                           lib.distributions.Categorical(lib.ones(2))),
               "No KL(p || q) is implemented for p type Normal and q type Categorical")
    same_error(lambda lib: lib.distributions.kl_divergence(
        lib.distributions.Binomial(2, lib.tensor(0.5)), lib.distributions.Binomial(3, lib.tensor(0.5))),
        "KL between Binomials where q.total_count > p.total_count is not implemented")
    same_error(lambda lib: lib.distributions.kl_divergence(
        lib.distributions.MultivariateNormal(lib.zeros(2), lib.eye(2)),
        lib.distributions.MultivariateNormal(lib.zeros(3), lib.eye(3))), "KL-divergence between two")
    same_error(lambda lib: lib.distributions.kl_divergence(
        lib.distributions.Independent(lib.distributions.Normal(lib.zeros(2, 2), 1.0), 1),
        lib.distributions.Independent(lib.distributions.Normal(lib.zeros(2, 2), 1.0), 2)), "")
    # stricter than torch (which registers it silently): a pair of non-distributions is refused
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        RD.register_kl(int, RD.Normal)


def test_register_kl_dispatches_to_the_most_specific_pair():
    class A_(RD.Normal):
        pass

    class B_(A_):
        pass

    calls = []

    @RD.register_kl(A_, RD.Normal)
    def _a(p, q):
        calls.append("A")
        return rustgrad.zeros(())

    @RD.register_kl(B_, RD.Normal)
    def _b(p, q):
        calls.append("B")
        return rustgrad.ones(())

    try:
        assert RD.kl_divergence(B_(0.0, 1.0), RD.Normal(0.0, 1.0)).item() == 1.0
        assert RD.kl_divergence(A_(0.0, 1.0), RD.Normal(0.0, 1.0)).item() == 0.0
        # the built-in (Normal, Normal) formula still serves plain Normals
        assert RD.kl_divergence(RD.Normal(0.0, 1.0), RD.Normal(1.0, 1.0)).item() == pytest.approx(0.5)
        assert calls == ["B", "A"]

        # ambiguous: (A_, Normal) is more specific in p, (Normal, A_) in q
        @RD.register_kl(RD.Normal, A_)
        def _c(p, q):
            return rustgrad.full((), 2.0)

        with pytest.warns(RuntimeWarning, match="Ambiguous kl_divergence"):
            assert RD.kl_divergence(A_(0.0, 1.0), A_(0.0, 1.0)).item() == 0.0
    finally:
        for key in [(A_, RD.Normal), (B_, RD.Normal), (RD.Normal, A_)]:
            RD.kl._KL_REGISTRY.pop(key, None)
        RD.kl._KL_MEMOIZE.clear()
