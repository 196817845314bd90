"""Autograd walkthroughs as tutorials write them: leaves, retain_grad, grad_fn and
next_functions, detach and no_grad, version counters and the in-place errors, accumulation,
autograd.grad (allow_unused, materialize_grads), CopySlices, inference mode, anomaly detection."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, err, err_head, program, programs_in


@program
def autograd_walkthrough(torch):
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x * w
    y.retain_grad()
    z = y.exp().sum()
    print(x.is_leaf, y.is_leaf, z.grad_fn.name(), y.grad_fn.name())
    print([f[0].name() if f[0] is not None else None for f in z.grad_fn.next_functions])
    z.backward()
    print(x.grad)
    print(y.grad)

    d = y.detach()
    print(d.requires_grad, d.is_leaf, d.grad_fn)
    with torch.no_grad():
        u = x * 2
    print(u.requires_grad, torch.is_grad_enabled())

    # an in-place op on a tensor saved for backward bumps its version counter
    a = torch.tensor([0.1, 0.2, 0.3], requires_grad=True)
    s = a.sigmoid()
    v0 = s._version
    s.mul_(2)
    stale = err_head(lambda: s.sum().backward())

    # in-place on a leaf that requires grad
    leaf_inplace = err(lambda: a.add_(1))

    # backward twice without retain_graph
    b = torch.tensor([2.0], requires_grad=True)
    c = (b * b).sum()
    c.backward()
    twice = err_head(lambda: c.backward(), 10)

    # gradients accumulate until zeroed
    g = torch.tensor([1.0, -1.0], requires_grad=True)
    for _ in range(3):
        (g ** 2).sum().backward()
    acc = g.grad.clone()
    g.grad.zero_()

    with torch.enable_grad():
        on = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    off = (g * 2).requires_grad
    torch.set_grad_enabled(True)
    return {"x_grad": x.grad, "y_grad": y.grad, "w_grad": w.grad, "version": [v0, s._version],
            "stale": stale, "leaf_inplace": leaf_inplace, "twice": twice, "acc": acc,
            "on": on, "off": off, "d": d}


@program
def autograd_grad_tour(torch):
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    unused = torch.tensor([1.0], requires_grad=True)
    y = x ** 2
    gx, gu = torch.autograd.grad(y.sum(), (x, unused), allow_unused=True, retain_graph=True)
    # the wording differs between torch releases (2.15 names the index); the cause is what counts
    e = err(lambda: torch.autograd.grad(y.sum(), (x, unused), retain_graph=True))
    missing = (e[0], "appears to not have been used in the graph" in e[1])
    gm = torch.autograd.grad(y.sum(), (x, unused), retain_graph=True, materialize_grads=True)
    y.backward(torch.tensor([1.0, 0.1, 0.01]))
    nonscalar = err(lambda: (x * 2).backward())

    # writing into a view of a non-leaf records CopySlices on the base
    base = x * 1
    base[1] = base[1] * 10
    view_fn = base.grad_fn.name()
    x.grad = None
    base.sum().backward()

    @torch.no_grad()
    def evaluate(t):
        return t * 3

    frozen = evaluate(x)
    x.requires_grad_(False)
    off = (x * 2).requires_grad
    x.requires_grad_(True)
    with torch.inference_mode():
        inf = x * 2
    inf_err = err_head(lambda: (inf * x).sum().backward(), 6)
    nonleaf_err = err(lambda: (x * 2).requires_grad_(False))
    return {"gx": gx, "gu": gu, "missing": missing, "gm": list(gm), "x_grad": x.grad,
            "nonscalar": nonscalar, "view_fn": view_fn, "frozen": frozen, "off": off,
            "inf_is_inference": inf.is_inference(), "inf_err": inf_err, "nonleaf_err": nonleaf_err}


@program
def anomaly_detection(torch):
    x = torch.tensor([0.0, 4.0], requires_grad=True)
    with torch.autograd.detect_anomaly():
        y = x.sqrt() * 0
        e = err(lambda: y.sum().backward())
    ok = torch.tensor([1.0, 4.0], requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        ok.sqrt().sum().backward()
    return {"e": e, "ok": ok.grad, "enabled": torch.is_anomaly_enabled()}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
