"""A tour of autograd with rustgrad: leaves, grad_fn chains, detach sharing memory,
retain_grad, hooks, version counters, no_grad, and a small model trained by gradient descent.

    make demo        (or: python examples/demo.py)
"""

from __future__ import annotations

import rustgrad as torch


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


def main() -> None:
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

    section("8. fitting y = 3x - 1 by gradient descent")
    torch.manual_seed(0)
    xs = torch.linspace(-1, 1, 64).reshape(64, 1)
    ys = 3 * xs - 1 + 0.05 * torch.randn(64, 1)
    weight = torch.zeros(1, 1, requires_grad=True)
    bias = torch.zeros(1, requires_grad=True)
    for step in range(201):
        pred = xs @ weight + bias
        mse = ((pred - ys) ** 2).mean()
        mse.backward()
        with torch.no_grad():
            weight -= 0.1 * weight.grad
            bias -= 0.1 * bias.grad
        weight.grad = None
        bias.grad = None
        if step % 50 == 0:
            print(f"  step {step:3d}: loss {mse.item():.5f}")
    print(f"learned weight {weight.item():.3f} (true 3), bias {bias.item():.3f} (true -1)")
    print(f"live storages on the CPU (Rust accounting): {torch.memory.live_storages()}")


if __name__ == "__main__":
    main()
