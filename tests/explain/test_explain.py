"""rustgrad.explain(t) on the tutorial programs (a detach branch, retain_grad, hooks, in-place
writes, views, no_grad, .data, a frozen feature extractor): the exact text, with the user's
file:line checked against the real line of each statement, and the facts it states checked
against torch running the same program."""

from __future__ import annotations

import pytest
import rustgrad
import torch
from rustgrad import nn
from rustgrad._explain import explain

from .sites import next_line, provenance  # noqa: F401  (the fixture)

FILE = "test_explain.py"


pytestmark = pytest.mark.usefixtures("provenance")


def test_detach_branch() -> None:
    x = rustgrad.ones(3, requires_grad=True)
    ly = next_line()
    y = x * 2
    ld = next_line()
    y_detached = y.detach()
    w = y_detached * 3

    assert str(explain(y_detached)) == "\n".join([
        "Tensor of shape [3], dtype torch.float32, device cpu",
        f"  is_leaf: True — no grad_fn: its history was cut by detach() at {FILE}:{ld} (from "
        "the output of MulBackward0)",
        f"  requires_grad: False — its history was cut by detach() at {FILE}:{ld}",
        "  grad_fn: None",
        "  version: 0 (never modified in place)",
        "  view: not a view",
        "  hooks: 0 tensor hooks, 0 post-accumulate-grad hooks",
        "  retains_grad: False",
        "  grad: None (it does not require grad)",
        "  is_inference: False",
    ])
    assert str(explain(y)) == "\n".join([
        "Tensor of shape [3], dtype torch.float32, device cpu",
        f"  is_leaf: False — the output of MulBackward0 at {FILE}:{ly}",
        "  requires_grad: True — inherited through MulBackward0 from its inputs: leaf of shape [3]",
        "  grad_fn:",
        f"    MulBackward0 at {FILE}:{ly}",
        "    └─ AccumulateGrad -> leaf of shape [3]",
        "  version: 0 (never modified in place)",
        "  view: not a view",
        "  hooks: 0 tensor hooks, 0 post-accumulate-grad hooks",
        "  retains_grad: False",
        "  grad: None (not a leaf: backward() fills .grad only after retain_grad())",
        "  is_inference: False",
    ])
    e = explain(w)  # computed from the cut tensor: the same cut explains it
    assert (e.is_leaf, e.requires_grad) == (True, False)
    assert (e.cut, e.leaf_reason) == (explain(y_detached).cut, explain(y_detached).leaf_reason)
    assert explain(rustgrad.ones(1) * 3).leaf_reason == (
        "it has no grad_fn: created by the user, or by ops on tensors that don't require grad")

    # the facts stated, by torch's own answer
    tx = torch.ones(3, requires_grad=True)
    ty = tx * 2
    td = ty.detach()
    tw = td * 3
    for t, r in ((td, y_detached), (ty, y), (tw, w)):
        assert (t.is_leaf, t.requires_grad, t.retains_grad, t._version) == (
            r.is_leaf, r.requires_grad, r.retains_grad, r._version)
    assert ty.grad_fn.name() == explain(y).grad_fn


def test_graph_shows_where_an_input_was_cut() -> None:
    rustgrad.manual_seed(0)
    G, D = nn.Linear(2, 2), nn.Linear(2, 1)
    fake = G(rustgrad.randn(4, 2))
    line = next_line()
    d_fake = D(fake.detach())
    assert explain(d_fake).graph == [
        f"AddmmBackward0 at {FILE}:{line}",
        "├─ AccumulateGrad -> Parameter of shape [1]",
        f"├─ (input 1 cut by detach() at {FILE}:{line}: no gradient flows there)",
        f"└─ TBackward0 at {FILE}:{line}",
        "   └─ AccumulateGrad -> Parameter of shape [1, 2]",
    ]
    tG, tD = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
    t_fake = tD(tG(torch.randn(4, 2)).detach())
    assert [n.name() if n else None for n, _ in t_fake.grad_fn.next_functions] == [
        "torch::autograd::AccumulateGrad", None, "TBackward0"]


def test_leaf_created_by_user() -> None:
    x = rustgrad.zeros(2, 3, requires_grad=True)
    x.sum().backward()
    assert str(explain(x)) == "\n".join([
        "Tensor of shape [2, 3], dtype torch.float32, device cpu",
        "  is_leaf: True — created by the user with requires_grad; backward() fills its .grad "
        "through AccumulateGrad",
        "  requires_grad: True — set by the user on a leaf (requires_grad=True or requires_grad_())",
        "  grad_fn: None",
        "  version: 0 (never modified in place)",
        "  view: not a view",
        "  hooks: 0 tensor hooks, 0 post-accumulate-grad hooks",
        "  retains_grad: False",
        "  grad: populated, shape [2, 3]",
        "  is_inference: False",
    ])


def test_retain_grad_on_intermediate() -> None:
    a = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    b = rustgrad.tensor([3.0, 4.0], requires_grad=True)
    lc = next_line()
    c = a * b
    c.retain_grad()
    ld = next_line()
    d = c + a
    d.sum().backward()

    e = explain(c)
    assert (e.retains_grad, e.grad_shape) == (True, (2,))
    assert str(e).splitlines()[1:] == [
        f"  is_leaf: False — the output of MulBackward0 at {FILE}:{lc}",
        "  requires_grad: True — inherited through MulBackward0 from its inputs: leaf of shape [2]",
        "  grad_fn:",
        f"    MulBackward0 at {FILE}:{lc}",
        "    ├─ AccumulateGrad -> leaf of shape [2]",
        "    └─ AccumulateGrad -> leaf of shape [2]",
        "  version: 0 (never modified in place)",
        "  view: not a view",
        "  hooks: 0 tensor hooks, 0 post-accumulate-grad hooks",
        "  retains_grad: True",
        "  grad: populated, shape [2]",
        "  is_inference: False",
    ]
    # a node met twice is shown once, then named "(see above)"
    assert explain(d).graph == [
        f"AddBackward0 at {FILE}:{ld}",
        f"├─ MulBackward0 at {FILE}:{lc}",
        "│  ├─ AccumulateGrad -> leaf of shape [2]",
        "│  └─ AccumulateGrad -> leaf of shape [2]",
        "└─ AccumulateGrad -> leaf of shape [2] (see above)",
    ]
    ta = torch.tensor([1.0, 2.0], requires_grad=True)
    tb = torch.tensor([3.0, 4.0], requires_grad=True)
    tc = ta * tb
    tc.retain_grad()
    (tc + ta).sum().backward()
    assert (tc.retains_grad, list(tc.grad.shape)) == (True, list(e.grad_shape))
    assert [n.name().rsplit("::", 1)[-1] for n, _ in tc.grad_fn.next_functions] == [
        "AccumulateGrad", "AccumulateGrad"]


def test_hooks_are_counted() -> None:
    x = rustgrad.ones(2, requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: g * 2)
    y.register_hook(lambda g: None)
    x.register_post_accumulate_grad_hook(lambda t: None)
    ey, ex = explain(y), explain(x)
    assert (ey.tensor_hooks, ey.post_accumulate_grad_hooks) == (2, 0)
    assert (ex.tensor_hooks, ex.post_accumulate_grad_hooks) == (0, 1)
    assert "  hooks: 2 tensor hooks, 0 post-accumulate-grad hooks" in str(ey).splitlines()
    assert "  hooks: 0 tensor hooks, 1 post-accumulate-grad hook" in str(ex).splitlines()
    h = y.register_hook(lambda g: g)
    h.remove()
    assert explain(y).tensor_hooks == 2


def test_version_history_names_each_write() -> None:
    a = rustgrad.zeros(4)
    l1 = next_line()
    a.add_(1)
    l2 = next_line()
    a.mul_(2)
    v = a[1:]
    l3 = next_line()
    v.zero_()

    e = explain(a)
    assert e.version == 3
    assert str(e).splitlines()[4] == (
        f"  version: 3: add_ at {FILE}:{l1}, mul_ at {FILE}:{l2}, zero_ at {FILE}:{l3}")
    ev = explain(v)  # a view shares its base's version counter and its history
    assert str(ev).splitlines()[4] == str(e).splitlines()[4]
    assert ev.view == ("a view of a tensor of shape [4] (they share storage and version counter: "
                       "writes to either show up in the other)")
    ta = torch.zeros(4)
    ta.add_(1)
    ta.mul_(2)
    tv = ta[1:]
    tv.zero_()
    assert (ta._version, tv._version, tv._base is ta) == (e.version, ev.version, v._base is a)


def test_version_history_keeps_the_last_eight() -> None:
    a = rustgrad.zeros(2)
    lines = []
    for _ in range(10):
        lines.append(next_line())
        a.add_(1)
    e = explain(a)
    assert e.version == 10
    assert [b.version for b in e.version_history] == list(range(3, 11))
    assert str(e).splitlines()[4] == (
        "  version: 10: " + ", ".join(f"add_ at {FILE}:{lines[0]}" for _ in range(8))
        + " (2 earlier bumps not shown)")


def test_no_grad_result_names_the_cut() -> None:
    x = rustgrad.ones(3, requires_grad=True)
    with rustgrad.no_grad():
        ln = next_line()
        y = x * 2
    e = explain(y)
    assert str(e).splitlines()[1:3] == [
        f"  is_leaf: True — no grad_fn: its history was cut by no_grad at {FILE}:{ln} (from a "
        "leaf of shape [3])",
        f"  requires_grad: False — its history was cut by no_grad at {FILE}:{ln}",
    ]
    assert e.view == "not a view"
    with torch.no_grad():
        ty = torch.ones(3, requires_grad=True) * 2
    assert (ty.is_leaf, ty.requires_grad) == (e.is_leaf, e.requires_grad)


def test_data_names_the_cut() -> None:
    x = rustgrad.ones(3, requires_grad=True)
    y = x * 2
    ld = next_line()
    d = y.data
    e = explain(d)
    assert str(e).splitlines()[1:3] == [
        f"  is_leaf: True — no grad_fn: its history was cut by .data at {FILE}:{ld} (from the "
        "output of MulBackward0)",
        f"  requires_grad: False — its history was cut by .data at {FILE}:{ld}",
    ]
    assert e.view == "not a view"
    ld = next_line()
    xd = x.detach()
    assert str(explain(xd)).splitlines()[1:6] == [
        f"  is_leaf: True — no grad_fn: its history was cut by detach() at {FILE}:{ld} (from a "
        "leaf of shape [3])",
        f"  requires_grad: False — its history was cut by detach() at {FILE}:{ld}",
        "  grad_fn: None",
        "  version: 0 (never modified in place)",
        "  view: not a view, but the detach() of a leaf of shape [3]: they share storage, so "
        "writes to either show up in the other",
    ]
    xd.add_(1)  # and so does the version counter (torch's tutorial: writes through detach())
    assert x._version == explain(xd).version == 1
    ld = next_line()
    gone = (x * 2).detach()  # nothing holds MulBackward0 any more
    assert explain(gone).leaf_reason == (
        f"no grad_fn: its history was cut by detach() at {FILE}:{ld} (what it was cut from is "
        "already freed)")


def test_inference_tensor() -> None:
    with rustgrad.inference_mode():
        t = rustgrad.ones(2)
    e = explain(t)
    assert str(e).splitlines()[1:] == [
        "  is_leaf: True — made in inference_mode, so no grad_fn was recorded",
        "  requires_grad: False — made in inference_mode",
        "  grad_fn: None",
        "  version: not tracked (an inference tensor has no version counter)",
        "  view: not a view",
        "  hooks: 0 tensor hooks, 0 post-accumulate-grad hooks",
        "  retains_grad: False",
        "  grad: None (it does not require grad)",
        "  is_inference: True",
    ]
    with torch.inference_mode():
        tt = torch.ones(2)
    assert tt.is_inference() is e.is_inference


def test_frozen_feature_extractor() -> None:
    rustgrad.manual_seed(0)
    features = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
    head = nn.Linear(8, 2)
    features.requires_grad_(False)
    lf = next_line()
    h = features(rustgrad.randn(5, 4))
    lo = next_line()
    out = head(h)

    ew = explain(features[0].weight)
    assert (ew.is_leaf, ew.requires_grad) == (True, False)
    assert ew.requires_grad_reason == "switched off by the user (requires_grad_(False)): frozen"
    eh = explain(h)
    assert (eh.is_leaf, eh.requires_grad) == (True, False)
    assert eh.cut is None  # frozen parameters are not a cut: nothing required grad
    eo = explain(out)
    assert eo.requires_grad_reason == (
        "inherited through AddmmBackward0 from its inputs: Parameter of shape [2], "
        f"TBackward0 at {FILE}:{lo}")
    assert eo.graph == [
        f"AddmmBackward0 at {FILE}:{lo}",
        "├─ AccumulateGrad -> Parameter of shape [2]",
        f"└─ TBackward0 at {FILE}:{lo}",
        "   └─ AccumulateGrad -> Parameter of shape [2, 8]",
    ]
    assert lf < lo
    tf = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
    tf.requires_grad_(False)
    tout = torch.nn.Linear(8, 2)(tf(torch.randn(5, 4)))
    assert tout.grad_fn.name() == eo.grad_fn
    assert [n.name() if n else None for n, _ in tout.grad_fn.next_functions] == [
        "torch::autograd::AccumulateGrad", None, "TBackward0"]


def test_depth_limit_counts_the_rest() -> None:
    x = rustgrad.ones(1, requires_grad=True)
    y = x
    line = next_line()
    for _ in range(10):
        y = y * 2
    e = explain(y, max_depth=3)
    assert e.graph == [
        f"MulBackward0 at {FILE}:{line + 1}",
        f"└─ MulBackward0 at {FILE}:{line + 1}",
        f"   └─ MulBackward0 at {FILE}:{line + 1}",
        f"      └─ MulBackward0 at {FILE}:{line + 1}",
        "         └─ ...",
        "... and 7 more nodes not shown",
    ]


def test_deep_graph_is_walked_iteratively() -> None:
    x = rustgrad.ones(1, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y + 1
    e = explain(y, max_depth=2, max_nodes=3)
    assert e.graph[-1] == "... and 4998 more nodes not shown"
    assert len(e.graph) == 5


def test_explain_refuses_a_non_tensor() -> None:
    with pytest.raises(TypeError, match="explain\\(\\) expects a Tensor, got list"):
        explain([1.0])  # type: ignore[arg-type]


def test_repr_is_the_report() -> None:
    e = explain(rustgrad.ones(1))
    assert repr(e) == str(e)
