"""The package's surface: reachable as `rustgrad.distributions` without costing `import
rustgrad`, the names torch has (and the documented ones it lacks), docstrings on every public
name, expand and enumerate_support as torch's."""

from __future__ import annotations

import inspect
import subprocess
import sys
import types

import numpy as np
import pytest
import rustgrad
import rustgrad.distributions as RD
import torch
import torch.distributions as TD

from ._cases import CASES
from ._util import compare, tensors

# torch.distributions names rustgrad does not have (yet)
MISSING: set = set()


def test_names_match_torch_but_the_documented_missing_ones():
    assert set(TD.__all__) - set(RD.__all__) == MISSING
    assert set(RD.__all__) - set(TD.__all__) == {"constraints", "transforms"}  # torch's are attributes only
    for name in RD.__all__:
        assert hasattr(RD, name), name
    for sub in ("constraints", "transforms", "kl", "utils", "constraint_registry", "normal", "categorical"):
        assert isinstance(getattr(RD, sub), types.ModuleType)


def test_reachable_after_import_rustgrad_and_deferred():
    code = ("import sys, rustgrad; assert 'rustgrad.distributions' not in sys.modules; "
            "d = rustgrad.distributions.Normal(0.0, 1.0); print(type(d).__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "rustgrad.distributions.normal"


def _public_objects():
    modules = [RD, RD.constraints, RD.transforms, RD.kl, RD.utils, RD.constraint_registry]
    seen = {}
    for m in modules:
        for name in getattr(m, "__all__", [n for n in dir(m) if not n.startswith("_")]):
            seen[f"{m.__name__}.{name}"] = getattr(m, name)
    return seen


def test_every_public_name_and_method_has_a_docstring():
    missing = []
    objs = _public_objects()
    assert len(objs) > 80
    for label, obj in objs.items():
        if isinstance(obj, (types.ModuleType, int, float, str)) or not (inspect.isclass(obj) or callable(obj)):
            continue
        if not (inspect.getdoc(obj) or "").strip():
            missing.append(label)
        if inspect.isclass(obj) and obj.__module__.startswith("rustgrad"):
            for attr, raw in vars(obj).items():
                if attr.startswith("_"):
                    continue
                target = getattr(raw, "__func__", raw)
                if callable(target) or isinstance(raw, property):
                    if not (getattr(target, "__doc__", None) or "").strip():
                        missing.append(f"{label}.{attr}")
    assert not missing, missing


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_expand_matches_torch(case, device):
    outs = []
    for lib, D in ((torch, TD), (rustgrad, RD)):
        d = case.make(D, **tensors(lib, case.params, np.float64, device, case.no_grad))
        new_batch = (3,) + tuple(d.batch_shape)
        e = d.expand(new_batch)
        kw = {"device": device} if lib is rustgrad else {}
        v = lib.tensor(case.value, dtype=lib.int64 if case.int_value else lib.float64, **kw)
        # a singleton dim before the batch dims meets the new leading batch dim
        n = len(d.batch_shape) + len(d.event_shape)
        if v.dim() < n:
            v = v.expand(tuple(d.batch_shape) + tuple(d.event_shape))
        lp = e.log_prob(v.unsqueeze(-n - 1))
        outs.append((type(e).__name__, tuple(e.batch_shape), tuple(e.event_shape), tuple(e.sample().shape), lp,
                     e._validate_args == d._validate_args))
    t, r = outs
    assert r[:4] == t[:4] and r[5] and t[5]
    compare(t[4], r[4], f"{case.name}.expand().log_prob", np.float64, device)


ENUMERABLE = [
    lambda L: L.distributions.Bernoulli(L.tensor([0.2, 0.7])),
    lambda L: L.distributions.Binomial(3, L.tensor([[0.2], [0.7]])),
    lambda L: L.distributions.Categorical(L.tensor([[0.2, 0.3, 0.5]])),
    lambda L: L.distributions.OneHotCategorical(L.tensor([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])),
    lambda L: L.distributions.Independent(L.distributions.Bernoulli(L.tensor([0.2, 0.7])), 0),
]


@pytest.mark.parametrize("make", ENUMERABLE)
@pytest.mark.parametrize("expand", [True, False])
def test_enumerate_support_matches_torch(make, expand):
    t, r = make(torch), make(rustgrad)
    assert r.has_enumerate_support and t.has_enumerate_support
    compare(t.enumerate_support(expand), r.enumerate_support(expand), "enumerate_support", np.float64, "cpu")
    compare(t.log_prob(t.enumerate_support(expand)), r.log_prob(r.enumerate_support(expand)), "log_prob",
            np.float32, "cpu")


def test_small_helpers_match_torch():
    for lib in (torch, rustgrad):
        D = lib.distributions
        d = D.Normal(lib.zeros(2), lib.ones(2))
        with pytest.warns(FutureWarning, match=r"`sample_n\(n\)` will be deprecated"):
            assert d.sample_n(3).shape == (3, 2)
        np.testing.assert_allclose(d.perplexity().numpy(), np.exp(d.entropy().numpy()), rtol=1e-6)
        assert not D.Independent(D.Bernoulli(lib.ones(2, 2) / 2), 1).has_enumerate_support
    p = np.array([[0.0, 0.2, 0.8], [0.5, 0.5, 1e-12]])
    for fn in (lambda L, x: L.distributions.utils.probs_to_logits(x),
               lambda L, x: L.distributions.utils.probs_to_logits(x, is_binary=True),
               lambda L, x: L.distributions.utils.logits_to_probs(x),
               lambda L, x: L.distributions.utils.logits_to_probs(x, is_binary=True),
               lambda L, x: L.distributions.utils.clamp_probs(x.float()),
               lambda L, x: L.distributions.utils.tril_matrix_to_vec(x[:, :2].reshape(1, 2, 2)),
               lambda L, x: L.distributions.utils.vec_to_tril_matrix(x),
               lambda L, x: L.distributions.utils.vec_to_tril_matrix(x, -1)):
        compare(fn(torch, torch.tensor(p)), fn(rustgrad, rustgrad.tensor(p)), "utils", np.float64, "cpu")
    lt, st = TD.utils.broadcast_all(torch.zeros(2, 1), 1.0)
    lr, sr = RD.utils.broadcast_all(rustgrad.zeros(2, 1), 1.0)
    assert tuple(sr.shape) == tuple(st.shape) and str(sr.dtype) == str(st.dtype)
