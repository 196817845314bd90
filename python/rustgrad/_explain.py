"""`rustgrad.explain(t)`: why a tensor is what it is, in autograd's terms.

For one tensor it answers the questions people ask when a gradient is missing or wrong: is it a
leaf and why, does it require grad and why (set by the user, inherited from which input, or cut
from a graph by ``detach()``, ``no_grad`` or ``.data`` at which line), its ``grad_fn`` chain down
to the ``AccumulateGrad`` of each leaf, its version counter and the in-place ops that bumped it,
the base of a view, its hooks, whether it retains its grad, what ``.grad`` holds now, and whether
it is an inference tensor.

Everything is read from what the Rust core records (``t._cut``, ``t._version_history``,
``node._site``, ``node._cuts``); where a record is missing (node sites are off unless
``rustgrad.autograd.set_provenance(True)``) the text says less instead of guessing. Nothing here
changes the tensor or its graph, and every walk is iterative, so a graph of any depth is fine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Set, Tuple

from ._tensor import Tensor
from .autograd._walk import (
    Site,
    cut_sources,
    describe_cut,
    format_site,
    graph_nodes,
    node_name,
    node_site,
    shape_str,
)
from .nn.parameter import Parameter

__all__ = ["explain", "Explanation", "VersionBump", "Cut"]

@dataclass(frozen=True)
class Cut:
    """How a tensor was cut from a graph: ``kind`` is ``"detach"``, ``"data"``, ``"no_grad"``
    or ``"inference_mode"``; ``site`` the user's line; ``sources`` what it was cut from, as
    far as it is still alive: ``"MulBackward0"`` for a grad_fn, ``"leaf of shape [3]"`` for a
    leaf."""

    kind: str
    site: Optional[Site]
    sources: Tuple[str, ...]

    def __str__(self) -> str:
        return describe_cut(self.kind, self.site)


@dataclass(frozen=True)
class VersionBump:
    """One in-place write that bumped a version counter: the version it made, the op the user
    called and the user's line."""

    version: int
    op: str
    site: Optional[Site]

    def __str__(self) -> str:
        where = format_site(self.site)
        return f"{self.op} at {where}" if where else self.op


@dataclass
class Explanation:
    """What :func:`explain` found about one tensor; ``str()`` (and ``repr()``) is the report."""

    shape: Tuple[int, ...]
    dtype: str
    device: str
    is_leaf: bool
    leaf_reason: str
    requires_grad: bool
    requires_grad_reason: str
    grad_fn: Optional[str]
    grad_fn_site: Optional[Site]
    graph: List[str]
    cut: Optional[Cut]
    version: Optional[int]
    version_history: List[VersionBump]
    view: str
    tensor_hooks: Optional[int]
    post_accumulate_grad_hooks: Optional[int]
    retains_grad: bool
    grad_shape: Optional[Tuple[int, ...]]
    grad_note: str
    is_inference: bool
    notes: List[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"Tensor of shape {list(self.shape)}, dtype {self.dtype}, device {self.device}"]
        lines.append(f"  is_leaf: {self.is_leaf} — {self.leaf_reason}")
        lines.append(f"  requires_grad: {self.requires_grad} — {self.requires_grad_reason}")
        if self.graph:
            lines.append("  grad_fn:")
            lines.extend("    " + g for g in self.graph)
        else:
            lines.append("  grad_fn: None")
        lines.append(f"  version: {_version_text(self.version, self.version_history)}")
        lines.append(f"  view: {self.view}")
        hooks = _hooks_text(self.tensor_hooks, self.post_accumulate_grad_hooks)
        if hooks:
            lines.append(f"  hooks: {hooks}")
        lines.append(f"  retains_grad: {self.retains_grad}")
        grad = "None" if self.grad_shape is None else f"populated, shape {list(self.grad_shape)}"
        lines.append(f"  grad: {grad}" + (f" ({self.grad_note})" if self.grad_note else ""))
        lines.append(f"  is_inference: {self.is_inference}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    __repr__ = __str__


def _version_text(version: Optional[int], history: Sequence[VersionBump]) -> str:
    if version is None:
        return "not tracked (an inference tensor has no version counter)"
    if version == 0:
        return "0 (never modified in place)"
    if not history:
        return f"{version} (the writes that bumped it were not recorded)"
    text = f"{version}: " + ", ".join(str(b) for b in history)
    earlier = version - len(history)
    if earlier > 0:
        text += f" ({earlier} earlier {'bump' if earlier == 1 else 'bumps'} not shown)"
    return text


def _hooks_text(tensor_hooks: Optional[int], post: Optional[int]) -> str:
    if tensor_hooks is None and post is None:
        return ""  # the core exposes no hook counts: say nothing rather than guess
    parts = []
    if tensor_hooks is not None:
        parts.append(f"{tensor_hooks} tensor {'hook' if tensor_hooks == 1 else 'hooks'}")
    if post is not None:
        parts.append(f"{post} post-accumulate-grad {'hook' if post == 1 else 'hooks'}")
    return ", ".join(parts)


def _hook_counts(t: Tensor) -> Tuple[Optional[int], Optional[int]]:
    """(tensor hooks, post-accumulate-grad hooks) where the core exposes them."""
    counts = getattr(t, "_hook_counts", None)
    if counts is None:
        return None, None
    if callable(counts):
        counts = counts()
    return int(counts[0]), int(counts[1])


def _source_label(source: Any) -> str:
    if isinstance(source, Tensor):
        return _leaf_label(source)
    return node_name(source)


def _cut_of(t: Tensor) -> Optional[Cut]:
    raw = getattr(t, "_cut", None)
    if raw is None:
        return None
    kind, site = raw[0], raw[1]
    sources = tuple(_source_label(x) for x in cut_sources(raw[2]))
    return Cut(str(kind), tuple(site) if site else None, sources)


def _leaf_label(leaf: Any) -> str:
    kind = "Parameter" if isinstance(leaf, Parameter) else "leaf"
    return f"{kind} of shape {shape_str(leaf)}"


def _node_label(node: Any) -> str:
    name = node_name(node)
    if name == "AccumulateGrad":
        return f"AccumulateGrad -> {_leaf_label(node.variable)}"
    where = format_site(node_site(node))
    return f"{name} at {where}" if where else name


def _children(node: Any) -> List[Tuple[str, Any]]:
    """A node's inputs in order: ("node", Node) for an edge, ("cut", text) for an input that was
    cut from its graph (no edge, but the core remembers the cut)."""
    cuts = {int(c[0]): c for c in getattr(node, "_cuts", ()) or ()}
    out: List[Tuple[str, Any]] = []
    for i, (n, _) in enumerate(node.next_functions):
        if n is not None:
            out.append(("node", n))
        elif i in cuts:
            text = describe_cut(str(cuts[i][1]), cuts[i][2])
            out.append(("cut", f"(input {i} cut by {text}: no gradient flows there)"))
    return out


def count_nodes(root: Any) -> int:
    """The number of distinct nodes reachable from `root`."""
    return sum(1 for _ in graph_nodes([root]))


def graph_tree(root: Any, max_depth: int = 6, max_nodes: int = 24) -> List[str]:
    """The graph below `root` as the lines of a tree, depth first in input order. A node met
    again is shown once more as ``(see above)``; past `max_depth` levels or `max_nodes` distinct
    nodes the rest is summarised as a count."""
    lines: List[str] = []
    shown: Set[Any] = set()
    # (item kind, item, prefix of this line, prefix of its children, depth)
    stack: List[Tuple[str, Any, str, str, int]] = [("node", root, "", "", 0)]
    while stack:
        kind, item, head, tail, depth = stack.pop()
        if kind == "cut":
            lines.append(head + item)
            continue
        if item in shown:
            lines.append(head + f"{_node_label(item)} (see above)")
            continue
        if len(shown) >= max_nodes:
            continue  # counted in the summary below
        shown.add(item)
        lines.append(head + _node_label(item))
        kids = _children(item)
        if not kids:
            continue
        if depth + 1 > max_depth:
            lines.append(tail + "└─ ...")
            continue
        for i in range(len(kids) - 1, -1, -1):
            last = i == len(kids) - 1
            k, v = kids[i]
            stack.append((k, v, tail + ("└─ " if last else "├─ "),
                          tail + ("   " if last else "│  "), depth + 1))
    rest = count_nodes(root) - len(shown)
    if rest > 0:
        lines.append(f"... and {rest} more {'node' if rest == 1 else 'nodes'} not shown")
    return lines


def _version_history(t: Tensor) -> List[VersionBump]:
    raw = getattr(t, "_version_history", None) or ()
    # a bump made with no user frame on the stack (from a thread's bare C call) has no site
    return [VersionBump(int(v), str(op), (str(f), int(ln), str(fn)) if f is not None else None)
            for v, op, f, ln, fn in raw]


def _is_parameter(t: Tensor) -> bool:
    return isinstance(t, Parameter)


def _leaf_reason(t: Tensor, cut: Optional[Cut], inference: bool) -> str:
    if not t.is_leaf:
        fn = t.grad_fn
        where = format_site(node_site(fn))
        text = f"the output of {node_name(fn)}"
        if t.output_nr:
            text = f"output {t.output_nr} of {node_name(fn)}"
        return text + (f" at {where}" if where else "")
    if t.requires_grad:
        what = "an nn.Parameter" if _is_parameter(t) else "created by the user with requires_grad"
        return f"{what}; backward() fills its .grad through AccumulateGrad"
    if cut is not None:
        # the core gives a cut to the tensor made at the cut and to all computed from it
        return f"no grad_fn: its history was cut by {describe_cut(cut.kind, cut.site)}" + (
            _from_text(cut.sources))
    if inference:
        return "made in inference_mode, so no grad_fn was recorded"
    return ("it has no grad_fn: created by the user, or by ops on tensors that don't require "
            "grad")


def _from_text(sources: Sequence[str]) -> str:
    """`` (from the output of MulBackward0)``, `` (from a leaf of shape [3])``, or for several
    `` (from 2 tensors that require grad)``; the core holds them weakly, so none is left once
    the graph cut off is freed."""
    if not sources:
        return " (what it was cut from is already freed)"
    if len(sources) > 1:
        return f" (from {len(sources)} tensors that require grad)"
    src = sources[0]
    if src.startswith(("leaf ", "Parameter ")):
        return f" (from a {src})"
    return f" (from the output of {src})"


def _input_label(node: Any) -> str:
    name = node_name(node)
    if name == "AccumulateGrad":
        return _leaf_label(node.variable)
    where = format_site(node_site(node))
    return f"{name} at {where}" if where else name


def _requires_grad_reason(t: Tensor, cut: Optional[Cut], inference: bool) -> str:
    if t.requires_grad:
        if t.is_leaf:
            if _is_parameter(t):
                return "an nn.Parameter requires grad unless switched off"
            return "set by the user on a leaf (requires_grad=True or requires_grad_())"
        fn = t.grad_fn
        inputs = [n for n, _ in fn.next_functions if n is not None]
        labels: List[str] = []
        for n in inputs:
            label = _input_label(n)
            if label not in labels:
                labels.append(label)
        return f"inherited through {node_name(fn)} from its inputs: " + ", ".join(labels)
    if cut is not None:
        return f"its history was cut by {describe_cut(cut.kind, cut.site)}"
    if inference:
        return "made in inference_mode"
    if _is_parameter(t):
        return "switched off by the user (requires_grad_(False)): frozen"
    return "not set by the user, and not inherited: no input required grad"


def _view_text(t: Tensor) -> str:
    base = t._base if t._is_view() else None
    if base is not None:
        return (f"a view of a tensor of shape {shape_str(base)} (they share storage and version "
                "counter: writes to either show up in the other)")
    raw = getattr(t, "_cut", None)
    if raw is not None and raw[0] in ("detach", "data"):
        # a detach()/.data of a leaf names the leaf: same storage means it is that cut itself
        for src in cut_sources(raw[2]):
            if isinstance(src, Tensor) and src._storage_id() == t._storage_id():
                how = "detach()" if raw[0] == "detach" else ".data"
                return (f"not a view, but the {how} of a {_leaf_label(src)}: they share "
                        "storage, so writes to either show up in the other")
    return "not a view"


def _grad_note(t: Tensor, has_grad: bool) -> str:
    if has_grad:
        return ""
    if not t.requires_grad:
        return "it does not require grad"
    if not t.is_leaf and not t.retains_grad:
        return "not a leaf: backward() fills .grad only after retain_grad()"
    return "no backward has reached it yet"


def explain(t: Tensor, max_depth: int = 6, max_nodes: int = 24) -> Explanation:
    r"""Explains a tensor's place in autograd: leaf or not and why, requires_grad and why, its
    ``grad_fn`` chain to the leaves, its version and what bumped it, its view base, hooks,
    ``retain_grad`` and ``.grad``, and whether it is an inference tensor.

    Args:
        t (Tensor): the tensor to explain.
        max_depth (int): levels of the ``grad_fn`` tree shown; deeper nodes are counted.
        max_nodes (int): distinct nodes shown; the rest are counted.

    Returns:
        An :class:`Explanation`: its fields hold each answer and ``print()`` shows them all.

    Example::

        >>> x = rustgrad.ones(3, requires_grad=True)
        >>> y = x.detach()
        >>> print(rustgrad.explain(y))  # "at file:line" names the detach() call
        Tensor of shape [3], dtype torch.float32, device cpu
          is_leaf: True — no grad_fn: its history was cut by detach()... (from a leaf of shape [3])
          requires_grad: False — its history was cut by detach()...
          grad_fn: None
          version: 0 (never modified in place)
          ...
          grad: None (it does not require grad)
          is_inference: False
    """
    if not isinstance(t, Tensor):
        raise TypeError(f"explain() expects a Tensor, got {type(t).__name__}")
    inference = bool(t.is_inference())
    cut = _cut_of(t)
    fn = t.grad_fn
    try:
        version: Optional[int] = int(t._version)
    except RuntimeError:
        version = None  # inference tensors have no version counter
    grad = t._grad
    hooks, post = _hook_counts(t)
    notes: List[str] = []
    if fn is not None and getattr(fn, "_site", None) is None and node_name(fn) != "AccumulateGrad":
        notes.append("forward lines are not recorded; turn them on with "
                     "rustgrad.autograd.set_provenance(True)")
    return Explanation(
        shape=tuple(t.shape),
        dtype=str(t.dtype),
        device=str(t.device),
        is_leaf=bool(t.is_leaf),
        leaf_reason=_leaf_reason(t, cut, inference),
        requires_grad=bool(t.requires_grad),
        requires_grad_reason=_requires_grad_reason(t, cut, inference),
        grad_fn=node_name(fn) if fn is not None else None,
        grad_fn_site=node_site(fn) if fn is not None else None,
        graph=graph_tree(fn, max_depth, max_nodes) if fn is not None else [],
        cut=cut,
        version=version,
        version_history=_version_history(t) if version is not None else [],
        view=_view_text(t),
        tensor_hooks=hooks,
        post_accumulate_grad_hooks=post,
        retains_grad=bool(t.retains_grad),
        grad_shape=tuple(grad.shape) if grad is not None else None,
        grad_note=_grad_note(t, grad is not None),
        is_inference=inference,
        notes=notes,
    )
