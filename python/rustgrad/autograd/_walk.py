"""The one graph walk the explainability tools share (memory_report, explain, viz): every node
reachable from some roots, once, depth first and without recursion (graphs can be 10^5 deep);
and how they name nodes, sites and cuts (explain, who_gets_grad)."""

from __future__ import annotations

import os
from typing import Any, Iterator, List, Optional, Sequence, Set, Tuple

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


# ---- how the tools name nodes, sites and cuts ----------------------------------------------
Site = Tuple[str, int, str]

# how each cut kind of the core reads in a sentence
_CUT_WORDS = {
    "detach": "detach()",
    "no_grad": "no_grad",
    "inference": "inference_mode",
    "inference_mode": "inference_mode",
    "data": ".data",
}


def format_site(site: Optional[Sequence[Any]]) -> Optional[str]:
    """``(filename, lineno, function)`` as ``file.py:12``; None when no site was recorded."""
    if not site:
        return None
    return f"{os.path.basename(str(site[0]))}:{site[1]}"


def node_name(node: Any) -> str:
    """A node's torch name without the C++ namespace (``AccumulateGrad``, ``MulBackward0``)."""
    return str(node.name()).rsplit("::", 1)[-1]


def node_site(node: Any) -> Optional[Site]:
    """The (file, line, function) where the user's code created ``node``, or None when no site
    was recorded (sites are recorded under ``rustgrad.autograd.set_provenance(True)``)."""
    site = getattr(node, "_site", None)
    return tuple(site) if site else None  # type: ignore[return-value]


def shape_str(t: Any) -> str:
    """A tensor's shape as the reports write it: ``[2, 3]``."""
    return str(list(t.shape))


def cut_words(kind: str) -> str:
    """How a cut kind of the core reads in a sentence (``"detach"`` -> ``detach()``); an
    unknown kind is returned as it is."""
    return _CUT_WORDS.get(kind, kind)


def describe_cut(kind: str, site: Optional[Sequence[Any]]) -> str:
    """``detach() at gan.py:42`` (the site left out when none was recorded)."""
    where = format_site(site)
    return f"{cut_words(kind)} at {where}" if where else cut_words(kind)


def cut_sources(raw: Any) -> List[Any]:
    """The sources of a cut record as a list of grad_fns and leaf tensors: the core gives a
    tuple of them (the ones still alive); a single node or None is accepted too."""
    if raw is None:
        return []
    if isinstance(raw, (tuple, list)):
        return [x for x in raw if x is not None]
    return [raw]
