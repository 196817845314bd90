"""rustgrad's demo: train an MLP and a small CNN on scikit-learn's digits (torch's numbers
beside them when torch is installed), then a tour of autograd on the trained model: leaves,
grad_fn chains, detach sharing memory, retain_grad, hooks watching each layer's gradient,
frozen layers, version counters and no_grad; last, a picture of the model's graph
(rustgrad.viz), written as SVG when Graphviz's `dot` is installed, else as DOT text.

    make demo        (or: python examples/demo.py [--epochs N] [--no-torch] [--graph-svg PATH])
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Optional

# small matrices: one BLAS thread per process avoids oversubscribing the cores
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rustgrad as torch  # noqa: E402
import rustgrad.viz  # noqa: E402
import train_digits  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def section(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 60 - len(title)))


def walk(fn: object, depth: int = 0) -> None:
    """Prints a grad_fn chain, one node per line (iteratively, as rustgrad's engine does)."""
    stack = [(fn, depth)]
    while stack:
        node, d = stack.pop()
        if node is None:
            continue
        label = node.name().replace("torch::autograd::", "")
        if label == "AccumulateGrad":
            label += f" -> leaf of shape {list(node.variable.shape)}"
        print("    " + "  " * d + label)
        for child, _ in reversed(node.next_functions):
            stack.append((child, d + 1))


def tour() -> None:
    section("1. leaves and grad_fn")
    x = torch.tensor([2.0], requires_grad=True)
    y = x * 3
    print(f"x = {x}")
    print(f"  x.is_leaf = {x.is_leaf}, x.grad_fn = {x.grad_fn}")
    print(f"y = x * 3 = {y}")
    print(f"  y.is_leaf = {y.is_leaf}, y.grad_fn.name() = {y.grad_fn.name()}")

    section("2. a grad_fn chain and backward")
    w = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    b = torch.tensor(0.5, requires_grad=True)
    inp = torch.tensor([0.5, 1.0, -1.5])
    loss = ((inp * w).sum() + b).sigmoid()
    print(f"loss = sigmoid(sum(inp * w) + b) = {loss}")
    print("  the graph, from the loss back to the leaves:")
    walk(loss.grad_fn)
    loss.backward()
    print(f"  w.grad = {w.grad}")
    print(f"  b.grad = {b.grad}")

    section("3. detach() shares memory and the version counter")
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = a.detach()
    d[0] = 5.0
    print(f"d = a.detach(); d[0] = 5.0  ->  a = {a}")
    print(f"  a._version = {a._version}, d._version = {d._version} (one shared counter)")
    c = a.detach().clone()
    c[1] = -1.0
    print(f"a.detach().clone() is a copy: after writing into it, a = {a}")

    section("4. retain_grad() on a non-leaf")
    p = torch.tensor([1.0], requires_grad=True)
    q = p * 2
    q.retain_grad()
    r = q * 3
    r.backward()
    print("q = p * 2 (retain_grad); r = q * 3; r.backward()")
    print(f"  p.grad = {p.grad}, q.grad = {q.grad}")

    section("5. hooks see (and may replace) gradients")
    h = torch.tensor([1.0], requires_grad=True)
    u = h * 1
    seen = []
    handle = u.register_hook(lambda g: seen.append(g.tolist()))
    (u * 3).backward()
    print(f"hook on u for z = u * 3 saw {seen[0]}")
    handle.remove()
    u2 = h * 1
    u2.register_hook(lambda g: g * 10)
    h.grad = None
    (u2 * 3).backward()
    print(f"a hook returning g * 10 makes h.grad = {h.grad}")

    section("6. in-place ops and saved tensors")
    s = torch.tensor([1.0, 2.0], requires_grad=True)
    e = s.exp()
    print(f"e = s.exp(); e._version = {e._version}")
    e.add_(1)
    print(f"e.add_(1) -> e._version = {e._version}")
    try:
        e.sum().backward()
    except RuntimeError as err:
        print(f"  backward refuses: {str(err)[:110]}...")

    section("7. no_grad")
    with torch.no_grad():
        k = s * 2
    print(f"under no_grad, s * 2 = {k} (requires_grad={k.requires_grad}, leaf={k.is_leaf})")

    print(f"live storages on the CPU (Rust accounting): {torch.memory.live_storages()}")


def trained_model_tour(model: object, x: object, y: object) -> None:
    """The same concepts on the CNN just trained."""
    F = torch.nn.functional
    section("8. hooks watching each layer's gradient norm")
    norms = {}
    handles = [
        p.register_hook(lambda g, name=name: norms.__setitem__(name, g.norm().item()))
        for name, p in model.named_parameters()
        if name.endswith("weight")
    ]
    model.zero_grad()
    F.cross_entropy(model(x), y).backward()
    for name, n in norms.items():
        print(f"  |grad {name:10s}| = {n:.5f}")
    for h in handles:
        h.remove()

    section("9. freezing the convolutions")
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    for m in convs:
        m.requires_grad_(False)
    before = [m.weight.detach().clone() for m in convs]
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    model.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
    same = all(bool((m.weight == b).all()) for m, b in zip(convs, before))
    print(f"  conv weights require grad: {[m.weight.requires_grad for m in convs]}")
    print(f"  their .grad after backward: {[m.weight.grad for m in convs]}")
    print(f"  unchanged, bit for bit, after an SGD step: {same}")
    for m in convs:
        m.requires_grad_(True)

    section("10. detached features feed a new head")
    body, head = model[:-1], torch.nn.Linear(64, 10)
    feats = body(x).detach()
    print(f"  features: shape {list(feats.shape)}, requires_grad={feats.requires_grad}, "
          f"grad_fn={feats.grad_fn}, is_leaf={feats.is_leaf}")
    model.zero_grad()
    F.cross_entropy(head(feats), y).backward()
    print(f"  head.weight.grad is set: {head.weight.grad is not None}; "
          f"body grads stay None: {all(p.grad is None for p in body.parameters())}")

    section("11. the graph is freed after backward")
    n0 = torch.memory.live_storages()
    loss = F.cross_entropy(model(x), y)
    n1 = torch.memory.live_storages()
    loss.backward()
    del loss
    n2 = torch.memory.live_storages()
    print(f"  live storages: {n0} before forward, {n1} with the graph, {n2} after backward "
          f"(+ the new .grad tensors)")


def graph_picture(model: object, x: object, y: object, path: Optional[str]) -> None:
    """The trained model's graph, as a terminal tree and as a picture."""
    section("12. a picture of the graph")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    print(rustgrad.viz.to_text(loss, params=model), end="")
    path = path or os.path.join(HERE, "demo_graph.svg")
    if shutil.which("dot"):
        with open(path, "w", encoding="utf-8") as f:
            f.write(rustgrad.viz.to_svg(loss, params=model))
        print(f"  the graph as SVG (Graphviz): {path}")
    else:
        dot_path = os.path.splitext(path)[0] + ".dot"
        with open(dot_path, "w", encoding="utf-8") as f:
            f.write(rustgrad.viz.to_dot(loss, params=model))
        print(f"  Graphviz is not installed: the graph is DOT text in {dot_path};")
        print(f"  render it with `dot -Tsvg {dot_path} -o {path}` (apt-get/brew install graphviz)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--no-torch", action="store_true", help="skip the torch comparison")
    parser.add_argument("--graph-svg", metavar="PATH", default=None,
                        help="where to write the model's graph (default: examples/demo_graph.svg)")
    args = parser.parse_args()
    with_torch = train_digits.torch is not None and not args.no_torch
    section("0. training on scikit-learn's digits")
    model, (xte, yte) = train_digits.main_with(args.epochs, with_torch)
    tour()
    x, y = torch.tensor(xte[:64]), torch.tensor(yte[:64])
    trained_model_tour(model, x, y)
    graph_picture(model, x, y, args.graph_svg)


if __name__ == "__main__":
    main()
