"""Transforms (forward, inverse, log_abs_det_jacobian, shapes, domains, caching, equality),
TransformedDistribution's shape rules and biject_to / transform_to, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import rustgrad.distributions as RD
import torch
import torch.distributions as TD

from ._util import compare

A = np.asarray
X = A([[0.3, -1.2, 2.0], [0.0, 0.7, -0.4]])
POS = A([[0.3, 1.2, 2.0], [0.1, 0.7, 4.0]])
SQUARE = A([[[0.3, -1.2], [2.0, 0.5]], [[0.0, 0.7], [-0.4, -2.0]]])

# name: (build(T, lib, device) -> transform, input array)
TRANSFORMS = {
    "Exp": (lambda T, L, d: T.ExpTransform(), X),
    "Affine-scalars": (lambda T, L, d: T.AffineTransform(1.5, -2.0), X),
    "Affine-tensors": (lambda T, L, d: T.AffineTransform(_p(L, [0.5, 1.0, -1.0], d), _p(L, [2.0, -0.5, 3.0], d)), X),
    "Affine-event": (lambda T, L, d: T.AffineTransform(_p(L, [0.5, 1.0, -1.0], d), _p(L, [2.0, -0.5, 3.0], d),
                                                       event_dim=1), X),
    "Sigmoid": (lambda T, L, d: T.SigmoidTransform(), X),
    "Tanh": (lambda T, L, d: T.TanhTransform(), X),
    "Softplus": (lambda T, L, d: T.SoftplusTransform(), X),
    "Power": (lambda T, L, d: T.PowerTransform(_p(L, [2.0, 0.5, -1.5], d)), POS),
    "Power-scalar": (lambda T, L, d: T.PowerTransform(3.0), POS),
    "Abs": (lambda T, L, d: T.AbsTransform(), X),
    "Softmax": (lambda T, L, d: T.SoftmaxTransform(), X),
    "StickBreaking": (lambda T, L, d: T.StickBreakingTransform(), X),
    "Compose": (lambda T, L, d: T.ComposeTransform([T.AffineTransform(0.5, 2.0), T.ExpTransform(),
                                                    T.PowerTransform(0.5)]), X),
    "Compose-event-dims": (lambda T, L, d: T.ComposeTransform([T.AffineTransform(0.5, 2.0),
                                                               T.StickBreakingTransform()]), X),
    "Compose-empty": (lambda T, L, d: T.ComposeTransform([]), X),
    "Independent": (lambda T, L, d: T.IndependentTransform(T.SigmoidTransform(), 1), X),
    "Reshape": (lambda T, L, d: T.ReshapeTransform((3,), (3, 1)), X),
    "LowerCholesky": (lambda T, L, d: T.LowerCholeskyTransform(), SQUARE),
    "PositiveDefinite": (lambda T, L, d: T.PositiveDefiniteTransform(), SQUARE),
    "CDF": (lambda T, L, d: T.CumulativeDistributionTransform(
        (TD if L is torch else RD).Normal(_p(L, [0.5, 1.0, -1.0], d), _p(L, [2.0, 0.5, 3.0], d))), X),
    "Inverse-Exp": (lambda T, L, d: T.ExpTransform().inv, POS),
    "Inverse-Sigmoid": (lambda T, L, d: T.SigmoidTransform().inv, POS / 5),
    "Inverse-Compose": (lambda T, L, d: T.ComposeTransform([T.AffineTransform(0.5, 2.0), T.ExpTransform()]).inv,
                        POS),
}


def _p(lib, values, device):
    kw = {"device": device} if lib is rustgrad else {}
    return lib.tensor(values, dtype=lib.float64, **kw)


def _run(lib, name, device):
    T = TD.transforms if lib is torch else RD.transforms
    t = TRANSFORMS[name][0](T, lib, device)
    kw = {"device": device} if lib is rustgrad else {}
    x = lib.tensor(TRANSFORMS[name][1], dtype=lib.float64, requires_grad=True, **kw)
    out = {"y": t(x)}
    out["x_back"] = t.inv(out["y"])
    try:
        out["ladj"] = t.log_abs_det_jacobian(x, out["y"])
    except NotImplementedError:
        out["ladj"] = "NotImplementedError"
    facts = {
        "domain": repr(t.domain), "codomain": repr(t.codomain),
        "domain_event_dim": t.domain.event_dim, "codomain_event_dim": t.codomain.event_dim,
        "bijective": t.bijective, "repr": repr(t),
        "forward_shape": tuple(t.forward_shape(tuple(x.shape))),
        "inverse_shape": tuple(t.inverse_shape(tuple(out["y"].shape))),
    }
    try:
        sign = t.sign
        facts["sign"] = sign if isinstance(sign, int) else sign.tolist()
    except NotImplementedError:
        facts["sign"] = "NotImplementedError"
    return t, x, out, facts


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transform_matches_torch(name, device):
    tt, tx, tout, tfacts = _run(torch, name, device)
    rt, rx, rout, rfacts = _run(rustgrad, name, device)
    assert rfacts == tfacts
    for k in tout:
        compare(tout[k], rout[k], f"{name}.{k}", np.float64, device)
    # gradients of every output with respect to x
    tl = sum((v * torch.tensor(np.random.default_rng(i).uniform(-1, 1, tuple(v.shape)))).sum()
             for i, v in enumerate(tout.values()) if isinstance(v, torch.Tensor))
    rl = sum((v * rustgrad.tensor(np.random.default_rng(i).uniform(-1, 1, tuple(v.shape)), device=device)).sum()
             for i, v in enumerate(rout.values()) if isinstance(v, rustgrad.Tensor))
    tl.backward()
    rl.backward()
    compare(tx.grad, rx.grad, f"{name}: grad of x", np.float64, device)


def test_inverse_and_cache_identities():
    t = RD.transforms.ExpTransform()
    assert t.inv.inv is t
    assert t.inv is t.inv  # the inverse is kept while referenced
    x = rustgrad.randn(3)
    cached = t.with_cache(1)
    y = cached(x)
    assert cached(x) is y and cached.inv(y) is x
    assert t.with_cache(0) is t
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        RD.transforms.ExpTransform(cache_size=2)
    # a transform without a cache computes the inverse anew
    assert t.inv(t(x)) is not x
    # a lossy inverse is exact through the cache: |x| remembers x's sign
    a = RD.transforms.AbsTransform(cache_size=1)
    neg = rustgrad.tensor([-2.0])
    assert a.inv(a(neg)) is neg
    compose = RD.transforms.ComposeTransform([RD.transforms.AffineTransform(1.0, 2.0), RD.transforms.ExpTransform()])
    assert compose.inv.inv is compose
    assert compose.with_cache(1).parts[1]._cache_size == 1


def test_transform_equality_matches_torch():
    for lib in (torch, rustgrad):
        T = (TD if lib is torch else RD).transforms
        assert T.ExpTransform() == T.ExpTransform()
        assert T.ExpTransform() != T.SigmoidTransform()
        assert T.ExpTransform().inv == T.ExpTransform().inv
        assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
        assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
        assert T.AffineTransform(lib.tensor([1.0]), 2.0) == T.AffineTransform(lib.tensor([1.0]), 2.0)
        assert T.PowerTransform(2.0) == T.PowerTransform(2.0)
        assert T.ComposeTransform([T.ExpTransform()]) == T.ComposeTransform([T.ExpTransform()])
        assert T.identity_transform == T.ComposeTransform([])


def test_event_dim_errors_match_torch():
    from ..parity import same_error

    same_error(lambda lib: lib.distributions.transforms.StickBreakingTransform().forward_shape(()),
               "Too few dimensions on input")
    same_error(lambda lib: lib.distributions.transforms.ReshapeTransform((2, 3), (6,)).event_dim,
               "Please use either .domain.event_dim or .codomain.event_dim")
    same_error(lambda lib: lib.distributions.TransformedDistribution(lib.distributions.Normal(0.0, 1.0), 3),
               "transforms must be a Transform or list")
    same_error(lambda lib: lib.distributions.TransformedDistribution(
        lib.distributions.Normal(0.0, 1.0), [lib.distributions.transforms.StickBreakingTransform()]),
        "base_distribution needs to have shape with size at least 1")


SHAPES = [
    # base batch shape, event ndims of the base (Independent), transforms -> batch/event shapes
    ((2, 3), 0, lambda T, L: [T.StickBreakingTransform()]),
    ((2, 3), 1, lambda T, L: [T.StickBreakingTransform()]),
    ((3,), 0, lambda T, L: [T.AffineTransform(L.zeros(4, 1, dtype=L.float64), 1.0)]),
    ((2, 3), 0, lambda T, L: [T.ReshapeTransform((2, 3), (6,))]),
    ((2, 3), 0, lambda T, L: [T.AffineTransform(0.0, 2.0, event_dim=1), T.ExpTransform()]),
    ((4, 3), 0, lambda T, L: [T.IndependentTransform(T.TanhTransform(), 2)]),
]


@pytest.mark.parametrize("base_shape,event_ndims,make", SHAPES)
def test_transformed_distribution_shapes_match_torch(base_shape, event_ndims, make):
    got = []
    for lib, D in ((torch, TD), (rustgrad, RD)):
        base = D.Normal(lib.zeros(base_shape, dtype=lib.float64), lib.ones(base_shape, dtype=lib.float64))
        if event_ndims:
            base = D.Independent(base, event_ndims)
        d = D.TransformedDistribution(base, make(D.transforms, lib))
        lib.manual_seed(0)
        x = d.sample((2,))
        got.append((tuple(d.batch_shape), tuple(d.event_shape), tuple(x.shape), repr(d.support),
                    tuple(d.log_prob(x).shape), tuple(d.expand((5,) + tuple(d.batch_shape)).batch_shape)))
    assert got[1] == got[0]


@pytest.mark.parametrize("constraint", [
    "real", "positive", "nonnegative", "greater_than(2.0)", "greater_than_eq(1.0)", "less_than(3.0)",
    "unit_interval", "interval(1.0, 3.0)", "half_open_interval(-1.0, 1.0)", "simplex", "real_vector",
    "independent(C.positive, 1)", "lower_cholesky", "positive_definite"])
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_constraint_registry_matches_torch(constraint, registry):
    outs = []
    for lib, D in ((torch, TD), (rustgrad, RD)):
        c = eval(f"C.{constraint}", {"C": D.constraints})  # noqa: S307  (the names above)
        try:
            t = getattr(D, registry)(c)
        except NotImplementedError as e:
            outs.append(("NotImplementedError", str(e)))
            continue
        x = lib.tensor(SQUARE if "cholesky" in constraint or "definite" in constraint else X, dtype=lib.float64)
        y = t(x)
        ladj = t.log_abs_det_jacobian(x, y) if t.bijective else None
        outs.append((repr(t), y.numpy(), None if ladj is None else ladj.numpy(), bool(c.check(y).all())))
    t, r = outs
    if t[0] == "NotImplementedError":
        assert r[0] == "NotImplementedError" and r[1] == t[1]
        return
    assert r[0] == t[0] and r[3] == t[3] is True
    np.testing.assert_allclose(r[1], t[1], rtol=1e-10)
    if t[2] is not None:
        np.testing.assert_allclose(r[2], t[2], rtol=1e-10)
