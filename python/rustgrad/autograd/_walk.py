"""The one graph walk the explainability tools share (memory_report, explain, viz): every node
reachable from some roots, once, depth first and without recursion (graphs can be 10^5 deep)."""

from __future__ import annotations

from typing import Any, Iterator, List, Optional, Sequence, Set

from .. import _core
from .._tensor import Tensor


def graph_roots(roots: Sequence[Any]) -> List[Any]:
    """The grad_fn nodes of `roots`: tensors (those with a grad_fn), nodes, or nested lists of
    them."""
    out: List[Any] = []
    for r in roots:
        if isinstance(r, Tensor):
            if r.grad_fn is not None:
                out.append(r.grad_fn)
        elif isinstance(r, _core.Node):
            out.append(r)
        elif isinstance(r, (list, tuple)):
            out.extend(graph_roots(r))
        elif r is not None:
            raise TypeError(f"expected Tensors or grad_fn Nodes, got {type(r).__name__}")
    return out


def graph_nodes(roots: Sequence[Any], seen: Optional[Set[Any]] = None) -> Iterator[Any]:
    """Every node reachable from `roots` once (and not already in `seen`, which it fills)."""
    seen = set() if seen is None else seen
    stack = [n for n in graph_roots(roots) if n not in seen]
    seen.update(stack)
    while stack:
        node = stack.pop()
        yield node
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
