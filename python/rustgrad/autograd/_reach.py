"""`rustgrad.autograd.who_gets_grad(loss, params)`: which leaves a backward from `loss` reaches.

``loss.backward()`` fills ``.grad`` of exactly the leaves whose ``AccumulateGrad`` node lies in
the graph below ``loss.grad_fn``. This module walks that graph (iteratively, without running
any backward) and, for each parameter it is asked about, says whether it is reached, and if not,
why: it does not require grad (frozen), the graph was cut on the way to it (``detach()``,
``no_grad`` or ``.data``, with the user's line, from ``node._cuts``), or the loss simply does not
use it. A cut is followed into the graph it cut off, while that graph is alive, so the
parameters behind it are named: the check a GAN discriminator step (``D(G(z).detach())``) or a
DQN target computed under ``no_grad`` needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple, Union

from .._tensor import Tensor
from ._walk import cut_sources, describe_cut, format_site, node_name, node_site, shape_str

__all__ = ["who_gets_grad", "Reach", "ReachEntry"]

Params = Union[None, Any, Mapping[str, Tensor], Iterable[Any]]


@dataclass(frozen=True)
class ReachEntry:
    """One tensor's answer: ``status`` is ``"reached"``, ``"unreachable"`` or ``"also reached"``
    (a leaf reached that is not among the parameters asked about); ``reason`` says through which
    node it is reached or why it is not."""

    name: str
    shape: Tuple[int, ...]
    status: str
    reason: str


@dataclass
class Reach:
    """What :func:`who_gets_grad` found; ``str()`` (and ``repr()``) is a table of it."""

    loss: str
    entries: List[ReachEntry] = field(default_factory=list)
    cuts: List[str] = field(default_factory=list)
    freed: List[str] = field(default_factory=list)

    @property
    def reached(self) -> Dict[str, str]:
        """name -> the node that would pass it a gradient, for the parameters reached."""
        return {e.name: e.reason for e in self.entries if e.status == "reached"}

    @property
    def unreachable(self) -> Dict[str, str]:
        """name -> why no gradient reaches it."""
        return {e.name: e.reason for e in self.entries if e.status == "unreachable"}

    @property
    def also_reached(self) -> Dict[str, str]:
        """name -> node, for leaves reached that were not among the parameters asked about."""
        return {e.name: e.reason for e in self.entries if e.status == "also reached"}

    def __str__(self) -> str:
        lines = [f"who gets grad from {self.loss}:"]
        if not self.entries:
            lines.append("  no leaf is reached")
        width = max((len(e.name) for e in self.entries), default=0)
        swidth = max((len(str(list(e.shape))) for e in self.entries), default=0)
        for e in self.entries:
            shape = f"{str(list(e.shape)):<{swidth}}"
            if e.status == "unreachable":
                lines.append(f"  {e.name:<{width}}  {shape}  {e.reason}")
            else:
                lines.append(f"  {e.name:<{width}}  {shape}  {e.status} {e.reason}")
        for c in self.cuts:
            gone = "; what it cut off is already freed" if c in self.freed else ""
            lines.append(f"  (the graph is {c}{gone})")
        return "\n".join(lines)

    __repr__ = __str__


def _named(params: Params) -> Optional[List[Tuple[str, Tensor]]]:
    """The parameters asked about as (name, tensor) pairs, in the order given; a module given by
    name stands for its parameters, named ``name.weight`` and so on."""
    if params is None:
        return None
    if _is_module(params):
        return [(str(n), p) for n, p in params.named_parameters()]
    if isinstance(params, Tensor):
        return [("[0]", params)]
    items: List[Tuple[str, Any]] = []
    if isinstance(params, Mapping):
        items = [(str(n), v) for n, v in params.items()]
    else:
        for i, item in enumerate(params):
            if isinstance(item, tuple) and len(item) == 2:
                items.append((str(item[0]), item[1]))
            else:
                items.append((f"[{i}]", item))
    out: List[Tuple[str, Tensor]] = []
    for name, v in items:
        if isinstance(v, Tensor):
            out.append((name, v))
        elif _is_module(v):
            out.extend((f"{name}.{n}", p) for n, p in v.named_parameters())
        else:
            raise TypeError(
                "who_gets_grad(): params must be an nn.Module, a dict of name -> Tensor (or "
                "Module), or an iterable of Tensors or (name, Tensor) pairs; got an item of type "
                f"{type(v).__name__}"
            )
    return out


# nn.Module, which this module cannot import (nn sits above autograd): nn/modules/module.py sets it
# when imported, and until then nothing is a Module
module_types: Tuple[type, ...] = ()


def _is_module(x: Any) -> bool:
    return isinstance(x, module_types)


def _via(node: Any) -> str:
    """``through AddmmBackward0 at gan.py:40``: the node that passes a leaf its gradient."""
    where = format_site(node_site(node))
    return f"through {node_name(node)}" + (f" at {where}" if where else "")


@dataclass
class _Walk:
    leaves: Dict[int, Tuple[Tensor, str]] = field(default_factory=dict)  # id -> (leaf, via)
    nodes: Set[Any] = field(default_factory=set)  # every node of the loss's graph
    behind: Dict[int, Tuple[Tensor, str]] = field(default_factory=dict)  # id -> (leaf, cut)
    cuts: List[str] = field(default_factory=list)  # every cut met, outermost first
    freed: List[str] = field(default_factory=list)  # cuts whose cut-off graph is already freed


def _walk(loss: Tensor) -> _Walk:
    """The loss's graph first (its leaves are reached), then, breadth first, the graphs each
    cut was made from (their leaves lie behind that cut; the first cut met wins)."""
    w = _Walk()
    # (node, the cut it lies behind, or None for the loss's own graph)
    queue: List[Tuple[Any, Optional[str]]] = []
    # (the cut's text, what it was cut from: grad_fns and leaves)
    pending: List[Tuple[str, List[Any]]] = []

    def note_cut(kind: Any, site: Any, sources: Any, behind: Optional[str]) -> None:
        text = f"cut by {describe_cut(str(kind), site)}"
        if behind is None and text not in w.cuts:
            w.cuts.append(text)
        # a cut met behind another cut: what it cut off lies behind the outer one
        alive = cut_sources(sources)
        if not alive and (behind or text) not in w.freed:
            w.freed.append(behind or text)
        pending.append((behind or text, alive))

    fn = loss.grad_fn
    if fn is not None:
        queue.append((fn, None))
        w.nodes.add(fn)
    elif loss.requires_grad:
        w.leaves[id(loss)] = (loss, "as the loss itself (a leaf)")
    elif getattr(loss, "_cut", None) is not None:
        kind, site, sources = loss._cut[:3]
        note_cut(kind, site, sources, None)

    seen: Set[Any] = set(w.nodes)
    head = 0
    while True:
        while head < len(queue):
            node, behind = queue[head]
            head += 1
            for child, _ in node.next_functions:
                if child is None:
                    continue
                if node_name(child) == "AccumulateGrad":
                    leaf = child.variable
                    if behind is None:
                        w.leaves.setdefault(id(leaf), (leaf, _via(node)))
                    else:
                        w.behind.setdefault(id(leaf), (leaf, behind))
                if child not in seen:
                    seen.add(child)
                    if behind is None:
                        w.nodes.add(child)
                    queue.append((child, behind))
            for cut in getattr(node, "_cuts", ()) or ():
                note_cut(cut[1], cut[2], cut[3], behind)
        if not pending:
            break
        # the loss's own graph is complete before any graph behind a cut is walked
        text, sources = pending.pop(0)
        for source in sources:
            if isinstance(source, Tensor):
                w.behind.setdefault(id(source), (source, text))
                cut = getattr(source, "_cut", None)  # a leaf made by an earlier cut
                if cut is not None:
                    pending.append((text, cut_sources(cut[2])))
            elif source not in seen:
                seen.add(source)
                if node_name(source) == "AccumulateGrad":
                    v = source.variable
                    w.behind.setdefault(id(v), (v, text))
                else:
                    queue.append((source, text))
    return w


def _describe_loss(loss: Tensor) -> str:
    fn = loss.grad_fn
    if fn is None:
        return f"a tensor of shape {shape_str(loss)} with no grad_fn"
    where = format_site(node_site(fn))
    return f"{node_name(fn)}" + (f" at {where}" if where else "")


def who_gets_grad(loss: Tensor, params: Params = None) -> Reach:
    r"""Which leaves a backward from ``loss`` would give a ``.grad``, without running it.

    Walks ``loss.grad_fn`` down to every ``AccumulateGrad`` node. For each parameter asked
    about, the answer is ``reached`` (through which node), or ``unreachable`` with the reason:
    ``requires_grad=False (frozen)``, ``cut by detach() at file:line`` (or ``no_grad`` or
    ``.data``: the graph that would reach it was cut there), or ``not used by this loss``.
    Leaves reached that are not among ``params`` are listed as ``also reached``.

    Args:
        loss (Tensor): the tensor ``backward()`` would start from.
        params: None (list every leaf reached), an ``nn.Module`` (its ``named_parameters()``),
            a dict of name -> Tensor or Module (``{"G": G, "D": D}`` names ``G.0.weight``), or
            an iterable of Tensors or (name, Tensor) pairs.

    Returns:
        A :class:`Reach`: ``.reached`` and ``.unreachable`` map names to reasons, ``.entries``
        holds every row, and ``print()`` shows the table.

    Example::

        >>> G, D = nn.Linear(2, 2), nn.Linear(2, 1)
        >>> fake = G(rustgrad.randn(4, 2))
        >>> d_loss = D(fake.detach()).sum()
        >>> print(rustgrad.autograd.who_gets_grad(d_loss, {"G": G, "D": D}))  # doctest: +SKIP
        who gets grad from SumBackward0 at gan.py:3:
          G.weight  [2, 2]  unreachable: cut by detach() at gan.py:3
          G.bias    [2]     unreachable: cut by detach() at gan.py:3
          D.weight  [1, 2]  reached through TBackward0 at gan.py:3
          D.bias    [1]     reached through AddmmBackward0 at gan.py:3
          (the graph is cut by detach() at gan.py:3)
    """
    if not isinstance(loss, Tensor):
        raise TypeError(f"who_gets_grad() expects a Tensor as loss, got {type(loss).__name__}")
    named = _named(params)
    w = _walk(loss)
    reach = Reach(loss=_describe_loss(loss), cuts=list(w.cuts), freed=list(w.freed))
    if named is None:
        for i, (leaf, via) in enumerate(w.leaves.values()):
            reach.entries.append(ReachEntry(f"leaf {i}", tuple(leaf.shape), "reached", via))
        return reach
    asked: Set[int] = set()
    for name, p in named:
        asked.add(id(p))
        reach.entries.append(ReachEntry(name, tuple(p.shape), *_status(p, w)))
    extra = [(leaf, via) for i, (leaf, via) in w.leaves.items() if i not in asked]
    for j, (leaf, via) in enumerate(extra):
        reach.entries.append(ReachEntry(f"leaf {j}", tuple(leaf.shape), "also reached", via))
    return reach


def _status(p: Tensor, w: _Walk) -> Tuple[str, str]:
    if not p.requires_grad:  # AccumulateGrad skips a leaf frozen after the forward too
        return "unreachable", "unreachable: requires_grad=False (frozen)"
    if id(p) in w.leaves:
        return "reached", w.leaves[id(p)][1]
    fn = p.grad_fn
    if fn is not None and fn in w.nodes:
        return "reached", ("as a non-leaf (its .grad is filled only after retain_grad()) "
                           f"{_via(fn)}")
    if id(p) in w.behind:  # reached leaves were answered above
        return "unreachable", f"unreachable: {w.behind[id(p)][1]}"
    if w.freed:  # it may lie behind a cut whose graph is gone: say so rather than guess
        cuts = " or ".join(w.freed)
        return "unreachable", (f"unreachable: not used by this loss, or {cuts} (what was cut off "
                               "is already freed, so it cannot be told)")
    return "unreachable", "unreachable: not used by this loss"
