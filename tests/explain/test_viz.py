"""rustgrad.viz: DOT text, SVG and the text tree of small graphs, checked line by line.

The expected texts are written from what each graph must be: its nodes in pre-order (the first
input first), DOT names numbered per kind in the order they are first seen (t: outputs, n: grad_fn
nodes and leaves, s: saved tensors, c: cut points, b: view bases). Node names and wiring are also
checked against torch's graph of the same program, and saved bytes against the saved arrays.
"""

from __future__ import annotations

import html
import pathlib
import re
import shutil
import sys
import traceback
from collections import Counter
from typing import Any, List, Tuple

import pytest
import rustgrad
import torch
from rustgrad import viz
from rustgrad._ops._declare import SAVED

HEAD = [
    "digraph {",
    "\tgraph [ranksep=0.3]",
    "\tnode [shape=box style=filled fillcolor=lightgrey fontname=monospace fontsize=10 height=0.2]",
    "\tedge [fontname=monospace fontsize=8]",
]
OUT = "fillcolor=darkolivegreen1"
LEAF = "fillcolor=lightblue"
SAVE = "fillcolor=orange"
CUT = "fillcolor=white color=red fontcolor=red fontsize=8"
CUT_EDGE = "[style=dashed color=red]"
VIEW_EDGE = '[style=dashed label="view of" constraint=false]'
SRC_EDGE = "[style=dotted color=red constraint=false]"
IS_EDGE = '[style=dotted label="is" constraint=false]'


def dot(*lines: str) -> str:
    return "\n".join(HEAD + list(lines) + ["}"]) + "\n"


def line() -> int:
    """The caller's line number."""
    return sys._getframe(1).f_lineno


def slot(node: str, i: int, torch_name: str) -> str:
    """A saved tensor's DOT name: torch's attribute name where rustgrad declares it, else saved[i]."""
    return torch_name if torch_name in SAVED.get(node, {}) else f"saved[{i}]"


def preorder_names(root_fn: Any) -> List[str]:
    """Node names in the order viz draws them: pre-order, first input first, each node once."""
    names, seen, stack = [], set(), [root_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        names.append(fn.name().replace("torch::autograd::", ""))
        stack.extend(child for child, _ in reversed(fn.next_functions))
    return names


def saved_nbytes(root_fn: Any) -> int:
    """Bytes of every saved array in the graph, from the arrays themselves."""
    total, seen, stack = 0, set(), [root_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if not fn.name().endswith("AccumulateGrad"):
            total += sum(v._data.nbytes for v in fn._saved_values_unchecked() if isinstance(v, rustgrad.Tensor))
        stack.extend(child for child, _ in fn.next_functions)
    return total


# ---- DOT ------------------------------------------------------------------------------------

def test_detach_branch():
    a = rustgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 2
    c, at = b.detach(), line()
    loss = (c * b).sum()
    # c * b: only `other` needs a gradient, so the node saves `self` (c), torch's slot 1
    expected = dot(
        f'\tt0 [label="()" {OUT}]',
        '\tn0 [label="SumBackward0"]',
        '\tn1 [label="MulBackward0"]',
        f'\ts0 [label="self (3,) 12 B" {SAVE}]',
        f'\tc0 [label="detach() at test_viz.py:{at} (from MulBackward0)" {CUT}]',
        '\tn2 [label="MulBackward0"]',
        f'\tn3 [label="a\\n(3,)" {LEAF}]',
        "\tn0 -> t0",
        "\tn1 -> n0",
        "\ts0 -> n1 [dir=none]",
        f"\tc0 -> n1 {CUT_EDGE}",
        "\tn2 -> n1",
        "\tn3 -> n2",
        f"\tn2 -> c0 {SRC_EDGE}",  # the detached tensor's grad_fn is drawn: joined to the cut
    )
    assert viz.to_dot(loss, params={"a": a}) == expected
    assert viz.to_dot(loss, params={"a": a}) == expected  # the same text every time


def test_detach_branch_matches_torch_graph():
    def program(m):
        a = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = a * 2
        return (b.detach() * b).sum()

    t_names = preorder_names(program(torch).grad_fn)
    r_names = preorder_names(program(rustgrad).grad_fn)
    assert r_names == t_names == ["SumBackward0", "MulBackward0", "MulBackward0", "AccumulateGrad"]


def test_cut_output_and_no_grad_and_data():
    a = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    d, at_d = a.detach(), line()
    # cut from a leaf: the leaf is the source (not drawn here: no edge to it)
    assert viz.to_dot(d) == dot(
        f'\tt0 [label="(2,)" {OUT}]',
        f'\tc0 [label="detach() at test_viz.py:{at_d} (from leaf (2,))" {CUT}]',
        f"\tc0 -> t0 {CUT_EDGE}",
    )
    assert f'\tc0 [label="detach() at test_viz.py:{at_d} (from a)" {CUT}]' in viz.to_dot(d, params={"a": a})
    b = a.exp()
    with rustgrad.no_grad():
        h, at_h = b * 3, line()
    e, at_e = b.data, line()
    loss = h * b + e * b
    # h * b and e * b: only `other` (b) needs a gradient, so each saves `self` and has its
    # input 0 cut from b's ExpBackward0
    expected = dot(
        f'\tt0 [label="(2,)" {OUT}]',
        '\tn0 [label="AddBackward0"]',
        '\tn1 [label="MulBackward0"]',
        '\tn2 [label="MulBackward0"]',
        f'\ts0 [label="self (2,) 8 B" {SAVE}]',
        f'\tc0 [label="no_grad at test_viz.py:{at_h} (from ExpBackward0)" {CUT}]',
        '\tn3 [label="ExpBackward0"]',
        f'\ts1 [label="result (2,) 8 B" {SAVE}]',
        f'\tn4 [label="(2,)" {LEAF}]',
        f'\ts2 [label="self (2,) 8 B" {SAVE}]',
        f'\tc1 [label=".data at test_viz.py:{at_e} (from ExpBackward0)" {CUT}]',
        "\tn0 -> t0",
        "\tn1 -> n0",
        "\tn2 -> n0",
        "\ts0 -> n1 [dir=none]",
        f"\tc0 -> n1 {CUT_EDGE}",
        "\tn3 -> n1",
        "\ts1 -> n3 [dir=none]",
        "\tn4 -> n3",
        "\ts2 -> n2 [dir=none]",
        f"\tc1 -> n2 {CUT_EDGE}",
        "\tn3 -> n2",
        f"\tn3 -> c0 {SRC_EDGE}",
        f"\tn3 -> c1 {SRC_EDGE}",
    )
    assert viz.to_dot(loss) == expected


def test_retain_grad_and_release():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.retain_grad()
    before = dot(
        f'\tt0 [label="(2,)\\nretains_grad" {OUT}]',
        '\tn0 [label="ExpBackward0"]',
        f'\ts0 [label="result (2,) 8 B" {SAVE}]',
        f'\tn1 [label="x\\n(2,)" {LEAF}]',
        "\tn0 -> t0",
        "\ts0 -> n0 [dir=none]",
        "\tn1 -> n0",  # the saved result is another tensor object than y (as torch's): no `is` edge
    )
    assert viz.to_dot(y, params={"x": x}) == before
    y.backward(rustgrad.ones(2))
    assert viz.to_dot(y, params={"x": x}) == dot(  # released: no saved tensors any more
        f'\tt0 [label="(2,)\\nretains_grad" {OUT}]',
        '\tn0 [label="ExpBackward0"]',
        f'\tn1 [label="x\\n(2,)" {LEAF}]',
        "\tn0 -> t0",
        "\tn1 -> n0",
    )


def _mlp(m: Any) -> Any:
    m.manual_seed(0)
    model = m.nn.Sequential(m.nn.Linear(4, 3), m.nn.ReLU(), m.nn.Linear(3, 2))
    x = m.randn(5, 4)
    return model, m.nn.functional.mse_loss(model(x), m.zeros(5, 2))


def test_two_layer_mlp_with_named_parameters():
    model, loss = _mlp(rustgrad)
    mse, mm = "MseLossBackward0", "AddmmBackward0"
    # Linear is addmm(bias, input, weight.t()): mat1 (the layer input) and mat2 (a view of weight),
    # the latter only when the input needs a gradient (not the first layer's), as torch's
    expected = dot(
        f'\tt0 [label="()" {OUT}]',
        f'\tn0 [label="{mse}"]',
        f'\ts0 [label="{slot(mse, 0, "self")} (5, 2) 40 B" {SAVE}]',
        f'\ts1 [label="{slot(mse, 1, "target")} (5, 2) 40 B" {SAVE}]',
        f'\tn1 [label="{mm}"]',
        f'\ts2 [label="{slot(mm, 0, "mat1")} (5, 3) 60 B" {SAVE}]',
        f'\ts3 [label="{slot(mm, 1, "mat2")} (3, 2) 24 B" {SAVE}]',
        f'\tn2 [label="2.bias\\n(2,)" {LEAF}]',
        '\tn3 [label="ReluBackward0"]',
        '\tn4 [label="TBackward0"]',
        f'\ts4 [label="result (5, 3) 60 B" {SAVE}]',
        f'\tn5 [label="{mm}"]',
        f'\ts5 [label="{slot(mm, 0, "mat1")} (5, 4) 80 B" {SAVE}]',
        f'\tn6 [label="0.bias\\n(3,)" {LEAF}]',
        '\tn7 [label="TBackward0"]',
        f'\tn8 [label="0.weight\\n(3, 4)" {LEAF}]',
        f'\tn9 [label="2.weight\\n(2, 3)" {LEAF}]',
        "\tn0 -> t0",
        "\ts0 -> n0 [dir=none]",
        "\ts1 -> n0 [dir=none]",
        "\tn1 -> n0",
        "\ts2 -> n1 [dir=none]",
        "\ts3 -> n1 [dir=none]",
        "\tn2 -> n1",
        "\tn3 -> n1",
        "\tn4 -> n1",
        "\ts4 -> n3 [dir=none]",
        "\tn5 -> n3",
        "\ts5 -> n5 [dir=none]",
        "\tn6 -> n5",
        "\tn7 -> n5",
        "\tn8 -> n7",
        "\tn9 -> n4",
        f"\ts3 -> n9 {VIEW_EDGE}",
    )
    assert viz.to_dot(loss, params=model) == expected
    assert viz.to_dot(loss, params=dict(model.named_parameters())) == expected
    assert viz.to_dot(loss, params=model.named_parameters()) == expected
    # the same nodes, in the same order, as torch's graph of the same program
    assert preorder_names(loss.grad_fn) == preorder_names(_mlp(torch)[1].grad_fn)


def test_without_saved_and_with_attrs():
    x = rustgrad.ones(2, 3, requires_grad=True)
    y = x.pow(3).sum(0)
    tx = torch.ones(2, 3, requires_grad=True)
    ty = tx.pow(3).sum(0)
    pow_fn, sum_fn = ty.grad_fn.next_functions[0][0], ty.grad_fn
    # the attribute values torch itself reports for these nodes
    sum_attrs = [f"{k}: {getattr(sum_fn, '_saved_' + k)!r}" for k in SAVED["SumBackward1"]]
    pow_attrs = [f"exponent: {pow_fn._saved_exponent!r}"]
    assert sum_attrs == ["dim: (0,)", "keepdim: False", "self_sym_sizes: (2, 3)"]
    text = viz.to_dot(y, show_saved=False, show_attrs=True)
    assert text == dot(
        f'\tt0 [label="(3,)" {OUT}]',
        '\tn0 [label="' + "\\n".join(["SumBackward1"] + sum_attrs) + '"]',
        '\tn1 [label="' + "\\n".join(["PowBackward0"] + pow_attrs) + '"]',
        f'\tn2 [label="(2, 3)" {LEAF}]',
        "\tn0 -> t0",
        "\tn1 -> n0",
        "\tn2 -> n1",
    )
    short = viz.to_dot(y, show_saved=False, show_attrs=True, max_attr_chars=12)
    assert "\\nkeepdim: ...\\nself_sym_...\"" in short  # 9 characters and "..."


def test_multiple_roots_share_nodes_and_views_of_outputs():
    a = rustgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = a * a
    v = b[0]  # a view of the output b
    expected = dot(
        f'\tt0 [label="(2, 2)" {OUT}]',
        '\tn0 [label="MulBackward0"]',
        f'\ts0 [label="other (2, 2) 16 B" {SAVE}]',
        f'\ts1 [label="self (2, 2) 16 B" {SAVE}]',
        f'\tn1 [label="w\\n(2, 2)" {LEAF}]',
        f'\tt1 [label="(2,)" {OUT}]',
        '\tn2 [label="SelectBackward0"]',
        "\tn0 -> t0",
        "\ts0 -> n0 [dir=none]",
        "\ts1 -> n0 [dir=none]",
        "\tn1 -> n0",
        "\tn1 -> n0",  # a * a: two edges from one leaf
        "\tn2 -> t1",
        "\tn0 -> n2",
        f"\ts0 -> n1 {IS_EDGE}",
        f"\ts1 -> n1 {IS_EDGE}",
        f"\tt1 -> t0 {VIEW_EDGE}",
    )
    assert viz.to_dot(b, v, params={"w": a}) == expected
    assert viz.to_dot([b, v], params={"w": a}) == expected
    assert viz.to_dot(b, (v, b), params={"w": a}) == expected  # a root given twice is drawn once


def test_views_of_tensors_not_drawn_share_one_base_box():
    w = rustgrad.ones(2, 3, requires_grad=True)
    b = w * 2
    out = b.t() * b.t()  # two views of b, each saved by the product; b itself is no root
    assert viz.to_dot(out, params={"w": w}) == dot(
        f'\tt0 [label="(3, 2)" {OUT}]',
        '\tn0 [label="MulBackward0"]',
        f'\ts0 [label="other (3, 2) 24 B" {SAVE}]',
        f'\ts1 [label="self (3, 2) 24 B" {SAVE}]',
        '\tn1 [label="TBackward0"]',
        '\tn2 [label="TBackward0"]',
        '\tn3 [label="MulBackward0"]',
        f'\tn4 [label="w\\n(2, 3)" {LEAF}]',
        '\tb0 [label="base (2, 3)" fillcolor=white style="filled,dashed"]',
        "\tn0 -> t0",
        "\ts0 -> n0 [dir=none]",
        "\ts1 -> n0 [dir=none]",
        "\tn1 -> n0",
        "\tn2 -> n0",
        "\tn3 -> n1",
        "\tn4 -> n3",
        "\tn3 -> n2",
        '\ts0 -> b0 [style=dashed label="view of"]',
        '\ts1 -> b0 [style=dashed label="view of"]',
    )


def test_labels_are_escaped():
    w = rustgrad.ones(2, requires_grad=True)
    text = viz.to_dot(w * 1.0, params={'we"ird\\name': w})
    assert f'\tn1 [label="we\\"ird\\\\name\\n(2,)" {LEAF}]' in text.splitlines()


def test_bad_roots():
    with pytest.raises(TypeError, match="expected tensors"):
        viz.to_dot(3.0)
    with pytest.raises(ValueError, match="no root"):
        viz.to_dot()


def test_deep_chain_is_walked_without_recursion():
    n = 20_000
    x = rustgrad.ones(1, requires_grad=True)
    y = x
    for _ in range(n):
        y = y + 1
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(traceback.extract_stack()) + 100)  # a recursive walker could not get far
    try:
        text = viz.to_dot(y, params={"x": x})
        tree = viz.to_text(y, params={"x": x})
    finally:
        sys.setrecursionlimit(limit)
    lines = text.splitlines()
    assert sum('[label="AddBackward0"]' in s for s in lines) == n
    assert sum(" -> " in s for s in lines) == n + 1  # n node edges + the leaf's
    assert lines[-3:-1] == [f"\tn{n - 1} -> n{n - 2}", f"\tn{n} -> n{n - 1}"]
    assert f'\tn{n} [label="x\\n(1,)" {LEAF}]' in lines
    # the tree stops at max_depth (64 levels below the output), each level indented 3 more
    tlines = tree.splitlines()
    assert len(tlines) == 1 + 64 + 1 + 1
    assert tlines[64] == " " * (3 * 63) + "└─ AddBackward0"
    assert tlines[65] == " " * (3 * 64) + "└─ ..."


# ---- text -----------------------------------------------------------------------------------

def test_text_tree_of_the_mlp():
    model, loss = _mlp(rustgrad)
    mse, mm = "MseLossBackward0", "AddmmBackward0"

    def name(node: str, i: int, torch_name: str) -> str:
        return torch_name if torch_name in SAVED.get(node, {}) else f"[{i}]"

    assert viz.to_text(loss, params=model) == "\n".join([
        "output ()",
        f"└─ {mse}  saved: {name(mse, 0, 'self')} (5, 2) 40 B, {name(mse, 1, 'target')} (5, 2) 40 B",
        f"   └─ {mm}  saved: {name(mm, 0, 'mat1')} (5, 3) 60 B, {name(mm, 1, 'mat2')} (3, 2) 24 B"
        " (view of 2.weight)",
        "      ├─ leaf 2.bias (2,)",
        "      ├─ ReluBackward0  saved: result (5, 3) 60 B",
        f"      │  └─ {mm}  saved: {name(mm, 0, 'mat1')} (5, 4) 80 B",
        "      │     ├─ leaf 0.bias (3,)",
        "      │     └─ TBackward0",
        "      │        └─ leaf 0.weight (3, 4)",
        "      └─ TBackward0",
        "         └─ leaf 2.weight (2, 3)",
        "saved tensors: 6, 304 B",  # 40 + 40 + 60 + 24 + 60 + 80
        "",
    ])
    assert viz.to_text(loss, params=model, show_saved=False).splitlines()[1] == f"└─ {mse}"


def test_text_tree_shared_nodes_and_cuts():
    a = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    b = a.exp()
    loss = (b * b + b).sum()
    # b * b saves both operands, in torch's slots (other, self); exp is reached three times
    assert viz.to_text(loss, params={"a": a}) == "\n".join([
        "output ()",
        "└─ SumBackward0",
        "   └─ AddBackward0",
        "      ├─ MulBackward0  saved: other (2,) 8 B, self (2,) 8 B",
        "      │  ├─ ExpBackward0  saved: result (2,) 8 B",
        "      │  │  └─ leaf a (2,)",
        "      │  └─ ExpBackward0 (see above)",
        "      └─ ExpBackward0 (see above)",
        "saved tensors: 3, 24 B",
        "",
    ])
    c, at = b.detach(), line()
    b.retain_grad()
    out = c * b
    assert viz.to_text(out) == "\n".join([
        "output (2,)",
        "└─ MulBackward0  saved: self (2,) 8 B",
        f"   ├─ cut: detach() at test_viz.py:{at} (from ExpBackward0)",
        "   └─ ExpBackward0  saved: result (2,) 8 B",
        "      └─ leaf (2,)",
        "saved tensors: 2, 16 B",
        "",
    ])
    assert viz.to_text(b).splitlines()[0] == "output (2,)  retains_grad"


def test_values_packed_by_saved_tensors_hooks():
    x = rustgrad.ones(3, requires_grad=True)
    with rustgrad.autograd.graph.saved_tensors_hooks(lambda v: ("packed", v), lambda p: p[1]):
        y = x.exp()
    assert viz.to_text(y, params={"x": x}) == "\n".join([
        "output (3,)",
        "└─ ExpBackward0  saved: result packed by a hook (tuple)",  # no bytes: the hook's object
        "   └─ leaf x (3,)",
        "saved tensors: 0, 0 B",
        "",
    ])
    assert f'\ts0 [label="result packed by a hook (tuple)" {SAVE}]' in viz.to_dot(y).splitlines()


def test_saved_bytes_are_the_saved_arrays_nbytes():
    rustgrad.manual_seed(0)
    model = rustgrad.nn.Sequential(
        rustgrad.nn.Linear(64, 32), rustgrad.nn.Tanh(), rustgrad.nn.Linear(32, 16), rustgrad.nn.Sigmoid()
    )
    x = rustgrad.randn(8, 64)
    loss = (model(x) ** 2).mean()
    expected = saved_nbytes(loss.grad_fn)
    assert expected > 1024
    last = viz.to_text(loss, params=model).splitlines()[-1]
    assert last.endswith(f" ({expected} bytes)"), last


# ---- SVG ------------------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_svg_is_rendered_by_graphviz():
    model, loss = _mlp(rustgrad)
    svg = viz.to_svg(loss, params=model)
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    for text in ("MseLossBackward0", "0.weight", "2.bias", "ReluBackward0", "view of"):
        assert text in svg


def test_svg_without_graphviz_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    x = rustgrad.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="install Graphviz .apt-get install graphviz, or brew install graphviz"):
        viz.to_svg(x * 2)


# ---- the README's picture of the demo model ---------------------------------------------------

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _demo_graph() -> Tuple[Any, Any]:
    """The demo's CNN and a loss of it on a batch shaped as the demo's (examples/demo.py draws
    the same graph)."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import train_digits
    finally:
        sys.path.remove(str(ROOT / "examples"))
    rustgrad.manual_seed(0)
    model = train_digits.cnn(rustgrad)
    x, y = rustgrad.randn(64, 1, 8, 8), rustgrad.randint(0, 10, (64,))
    return model, rustgrad.nn.functional.cross_entropy(model(x), y)


def _dot_parts(text: str) -> Tuple[Counter, Counter]:
    """DOT text's node and edge names (a, a->b) and its label lines."""
    names: Counter = Counter()
    labels: Counter = Counter()
    for s in text.splitlines()[len(HEAD):-1]:
        stmt = s.strip()
        head = stmt.split(" [", 1)[0]
        names[head.replace(" -> ", "->")] += 1
        m = re.search(r'label="((?:[^"\\]|\\.)*)"', stmt)
        if m:
            labels.update(m.group(1).replace('\\"', '"').split("\\n"))
    return names, labels


def _svg_parts(svg: str) -> Tuple[Counter, Counter]:
    """An SVG's node and edge titles and its text lines, as Graphviz wrote them."""
    names = Counter(html.unescape(t) for t in re.findall(r'class="(?:node|edge)">\s*<title>(.*?)</title>', svg))
    labels = Counter(html.unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg))
    return names, labels


def test_demo_graph_picture_is_current():
    """docs/demo_graph.svg (in the README) shows the demo model's graph as viz draws it today."""
    model, loss = _demo_graph()
    names, labels = _dot_parts(viz.to_dot(loss, params=model))
    assert _svg_parts((ROOT / "docs" / "demo_graph.svg").read_text()) == (names, labels)
    # what the picture must contain: the layers' parameters, their nodes and the saved inputs
    for label in ("0.weight", "(16, 1, 3, 3)", "9.bias", "ConvolutionBackward0", "AddmmBackward0",
                  "MaxPool2DWithIndicesBackward0", "NllLossBackward0", "result (64, 16, 8, 8) 256 KiB"):
        assert labels[label] >= 1, label
    assert labels["ConvolutionBackward0"] == 2 and labels["AddmmBackward0"] == 2


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_demo_graph_renders_as_committed():
    model, loss = _demo_graph()
    assert _svg_parts(viz.to_svg(loss, params=model)) == _svg_parts((ROOT / "docs" / "demo_graph.svg").read_text())


def test_hooks_are_marked_on_nodes_and_leaves() -> None:
    x = rustgrad.ones(2, requires_grad=True)
    x.register_hook(lambda g: g)
    x.register_post_accumulate_grad_hook(lambda t: None)
    y = x.exp()
    y.grad_fn.register_prehook(lambda g: None)
    y.grad_fn.register_hook(lambda gi, go: None)
    y.grad_fn.register_hook(lambda gi, go: None)
    text = viz.to_text(y.sum()).splitlines()
    assert text[2] == "   └─ ExpBackward0  hooks: 1 pre, 2 post  saved: result (2,) 8 B"
    assert text[3] == "      └─ leaf (2,)  hooks: 1 tensor, 1 post-accumulate"
    dot = viz.to_dot(y.sum())
    assert 'label="ExpBackward0\\nhooks: 1 pre, 2 post" penwidth=2' in dot
    assert 'label="(2,)\\nhooks: 1 tensor, 1 post-accumulate" fillcolor=lightblue' in dot
    h = y.grad_fn.register_prehook(lambda g: None)
    h.remove()  # removed hooks are not counted
    assert y.grad_fn._hook_counts == (1, 2)
