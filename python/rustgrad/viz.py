"""rustgrad.viz: pictures of the autograd graph.

Three views of the graph that a backward from some tensors would walk:

- :func:`to_dot` gives Graphviz DOT text, with no dependency;
- :func:`to_svg` renders it with Graphviz's ``dot`` program when that is installed;
- :func:`to_text` gives a tree for terminals, one node per line.

The colours are torchviz's, the convention people know: output tensors are dark olive green,
grad_fn nodes light grey, leaves (reached through ``AccumulateGrad``) light blue and saved
tensors orange. rustgrad adds what it records beyond torch: where the graph was cut (a tensor
made by ``detach()``, under ``no_grad`` or through ``.data``, with the user's file:line when
rustgrad knows it), which saved tensors are views and of what, and which outputs retain their
gradient.

Example::

    >>> import rustgrad as torch
    >>> from rustgrad import viz
    >>> x = torch.ones(3, requires_grad=True)
    >>> y = (x * 2).sum()
    >>> print(viz.to_text(y, params={"x": x}))
    output ()
    └─ SumBackward0
       └─ MulBackward0
          └─ leaf x (3,)
    saved tensors: 0, 0 B

Nodes and tensors with registered hooks say how many (`hooks: 1 pre, 1 post`; `hooks: 2 tensor`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _bind
from ._tensor import Tensor
from .autograd._walk import graph_nodes

__all__ = ["to_dot", "to_svg", "to_text"]

Params = Union[Mapping[str, Tensor], Iterable[Tuple[str, Tensor]], Any]
Roots = Union[Tensor, Sequence[Tensor]]

_CUT_KINDS = {"detach": "detach()", "no_grad": "no_grad", "inference_mode": "inference_mode", "data": ".data"}
_MAX_SOURCES_SHOWN = 3


# ---- labels ---------------------------------------------------------------------------------

def _node_name(node: Any) -> str:
    return node.name().replace("torch::autograd::", "")


def _is_leaf_node(node: Any) -> bool:
    return node.name().endswith("AccumulateGrad")


def _shape(t: Tensor) -> str:
    return str(tuple(t.shape))


def _nbytes(t: Tensor) -> int:
    return t.numel() * t.element_size()


def _fmt_bytes(n: int) -> str:
    """256 KiB, 1.5 MiB, 12 B: binary units, one decimal where it is not zero."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return _strip_zero(f"{value:.1f}") + f" {unit}"
    raise AssertionError("unreachable")


def _strip_zero(s: str) -> str:
    return s[:-2] if s.endswith(".0") else s


def _site(site: Any) -> str:
    if not site:
        return ""
    filename, lineno = site[0], site[1]
    return f" at {os.path.basename(str(filename))}:{lineno}"


def _sources(sources: Any) -> Tuple[Any, ...]:
    """A cut's sources (grad_fns and leaf tensors still alive) as a tuple."""
    if sources is None:
        return ()
    return tuple(sources) if isinstance(sources, (tuple, list)) else (sources,)


def _source_name(source: Any, names: Dict[int, str]) -> str:
    if isinstance(source, Tensor):
        return names.get(id(source)) or "leaf " + _shape(source)
    return _node_name(source)


def _cut_label(kind: str, site: Any, sources: Any, names: Dict[int, str]) -> str:
    """`detach() at file.py:12 (from MulBackward0)`: what cut the graph, where, from what."""
    label = _CUT_KINDS.get(kind, kind) + _site(site)
    srcs = _sources(sources)
    if srcs:
        shown = [_source_name(s, names) for s in srcs[:_MAX_SOURCES_SHOWN]]
        more = len(srcs) - len(shown)
        label += " (from " + ", ".join(shown) + (f" and {more} more" if more else "") + ")"
    return label


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def _dot_quote(text: str) -> str:
    """A DOT string literal: backslashes and quotes escaped, newlines as DOT's centred \\n."""
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n")
    return f'"{body}"'


def _param_names(params: Optional[Params]) -> Tuple[Dict[int, str], List[Tensor]]:
    """id(tensor) -> name, and the tensors (held so that their ids stay theirs)."""
    if params is None:
        return {}, []
    if hasattr(params, "named_parameters"):
        items: Iterable[Tuple[str, Tensor]] = params.named_parameters()
    elif isinstance(params, Mapping):
        items = params.items()
    else:
        items = params
    names: Dict[int, str] = {}
    held: List[Tensor] = []
    for name, t in items:
        held.append(t)
        names.setdefault(id(t), name)
    return names, held


def _flatten(roots: Tuple[Any, ...]) -> List[Tensor]:
    out: List[Tensor] = []
    seen: set = set()
    for r in roots:
        for t in (r if isinstance(r, (list, tuple)) else (r,)):
            if not isinstance(t, Tensor):
                raise TypeError(f"viz: expected tensors as roots, got {type(t).__name__}")
            if id(t) not in seen:
                seen.add(id(t))
                out.append(t)
    if not out:
        raise ValueError("viz: no root tensors given")
    return out


# ---- what a node holds ----------------------------------------------------------------------

class _Slot:
    """Stands for saved value i when asking a node kind's getters which slot each name reads."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _slot_names(name: str, n: int, ctx: Any) -> Dict[int, str]:
    """Saved slot -> torch's saved-attribute name, where the op declares one that reads it."""
    markers = tuple(_Slot(i) for i in range(n))
    found: Dict[int, str] = {}
    for key, getter in _bind.saved_getters().get(name, {}).items():
        try:
            value = getter(markers, ctx)
        except Exception:  # a getter that computes on its values names no slot
            continue
        if isinstance(value, _Slot):
            found.setdefault(value.index, key)
    return found


def _unchecked(node: Any) -> Tuple[Any, ...]:
    # without the version check: a graph whose saved tensor was since modified is still drawn
    return tuple(node._saved_values_unchecked())


def _saved(node: Any) -> List[Tuple[Union[str, int], Any]]:
    """The node's saved values as (torch's attribute name, else the slot's index, value): a
    tensor, or what a saved_tensors_hooks pack hook returned; none once backward released them."""
    if _is_leaf_node(node):
        return []
    values = _unchecked(node)
    if not values:
        return []
    names = _slot_names(node.name(), len(values), node._ctx)
    return [(names.get(i, i), v) for i, v in enumerate(values) if v is not None]


def _saved_label(attr: str, value: Any) -> str:
    if isinstance(value, Tensor):
        return f"{attr} {_shape(value)} {_fmt_bytes(_nbytes(value))}"
    return f"{attr} packed by a hook ({type(value).__name__})"  # its size is the hook's business


def _attrs(node: Any, limit: int) -> List[str]:
    """The node's non-tensor saved attributes (dim, exponent...), as `name: value` lines."""
    getters: Mapping[str, Callable[..., Any]] = _bind.saved_getters().get(node.name(), {})
    if not getters:
        return []
    values = _unchecked(node)
    lines = []
    for key, getter in getters.items():
        try:
            value = getter(values, node._ctx)
        except Exception:  # reads a released slot
            continue
        if value is None or isinstance(value, Tensor):
            continue
        lines.append(_short(f"{key}: {value!r}", limit))
    return lines


def _cuts(node: Any) -> Dict[int, List[Tuple[str, Any, Any]]]:
    """input_nr -> the cuts (kind, site, sources) feeding that input."""
    out: Dict[int, List[Tuple[str, Any, Any]]] = {}
    for input_nr, kind, site, source in getattr(node, "_cuts", ()) or ():
        out.setdefault(input_nr, []).append((kind, site, source))
    return out


def _inputs(node: Any) -> List[Tuple[str, Any]]:
    """The node's inputs in order: ("node", next function), ("cut", (kind, site, source)) or
    ("none", input_nr) for an input that needs no gradient and was not cut."""
    if _is_leaf_node(node):
        return []
    cuts = _cuts(node)
    out: List[Tuple[str, Any]] = []
    for i, (child, _) in enumerate(node.next_functions):
        if child is not None:
            out.append(("node", child))
        elif i in cuts:
            out.extend(("cut", c) for c in cuts.pop(i))
        else:
            out.append(("none", i))
    for i in sorted(cuts):  # a cut past the edges (not expected): still shown
        out.extend(("cut", c) for c in cuts[i])
    return out


# ---- DOT --------------------------------------------------------------------------------------

class _Dot:
    def __init__(self) -> None:
        self.nodes: List[str] = []
        self.edges: List[str] = []
        self.counts: Dict[str, int] = {}
        self.held: List[Any] = []  # every object whose id() names a DOT node stays alive

    def new(self, prefix: str, label: str, attrs: str = "") -> str:
        n = self.counts.get(prefix, 0)
        self.counts[prefix] = n + 1
        name = f"{prefix}{n}"
        self.nodes.append(f"\t{name} [label={_dot_quote(label)}{' ' + attrs if attrs else ''}]")
        return name

    def edge(self, a: str, b: str, attrs: str = "") -> None:
        self.edges.append(f"\t{a} -> {b}{' [' + attrs + ']' if attrs else ''}")

    def text(self) -> str:
        head = [
            "digraph {",
            "\tgraph [ranksep=0.3]",
            "\tnode [shape=box style=filled fillcolor=lightgrey fontname=monospace fontsize=10 height=0.2]",
            "\tedge [fontname=monospace fontsize=8]",
        ]
        return "\n".join(head + self.nodes + self.edges + ["}"]) + "\n"


def _tensor_label(t: Tensor, names: Dict[int, str]) -> str:
    name = names.get(id(t))
    label = f"{name}\n{_shape(t)}" if name else _shape(t)
    hooks = _hooks_note(t)
    return f"{label}\n{hooks}" if hooks else label


def _hooks_note(obj: Any) -> str:
    """`hooks: 1 pre, 2 post` for a node, `hooks: 1 tensor, 1 post-accumulate` for a tensor;
    empty without hooks."""
    first, second = getattr(obj, "_hook_counts", (0, 0))
    kinds = ("tensor", "post-accumulate") if isinstance(obj, Tensor) else ("pre", "post")
    parts = [f"{n} {k}" for n, k in zip((first, second), kinds) if n]
    return "hooks: " + ", ".join(parts) if parts else ""


def to_dot(
    *roots: Roots,
    params: Optional[Params] = None,
    show_saved: bool = True,
    show_attrs: bool = False,
    max_attr_chars: int = 50,
) -> str:
    r"""Returns the autograd graph behind ``roots`` as Graphviz DOT text.

    The graph is drawn from the leaves (top) to the outputs (bottom), in torchviz's colours:
    outputs dark olive green (``retains_grad`` noted), grad_fn nodes light grey, leaves light
    blue (named from ``params``, with their shape), saved tensors orange (torch's saved-attribute
    name where the op declares one, else ``saved[i]``; shape and bytes, or the type of what a
    saved_tensors_hooks pack hook made of the tensor; none after backward released them). A
    tensor that is a view has a dashed ``view of`` edge to its base, and a saved tensor that is
    a leaf or an output drawn here a dotted ``is`` edge to it. Where an
    input was cut from a graph (by ``detach()``, ``no_grad`` or ``.data``) a red box with the
    user's file:line and what the cut was made from feeds the node through a dashed red edge;
    when that source is drawn too, a dotted red edge joins it to the box. The walk is
    iterative, so graphs of any depth work; the output is the same text for the same graph.

    Args:
        roots: output tensors, or lists/tuples of them.
        params: names for leaves: a dict name -> tensor, an iterable of (name, tensor) such as
            ``model.named_parameters()``, or a Module.
        show_saved: draw the saved tensors.
        show_attrs: list each node's non-tensor saved attributes (``dim``, ``exponent``...).
        max_attr_chars: longest attribute line shown.

    Example::

        >>> from rustgrad import viz
        >>> w = torch.ones(2, 3, requires_grad=True)
        >>> loss = (w * 2).sum()
        >>> dot = viz.to_dot(loss, params={"w": w})
        >>> print(dot)  # write it to graph.dot, then: dot -Tsvg graph.dot -o graph.svg
        digraph {
        ...
            n0 [label="SumBackward0"]
            n1 [label="MulBackward0"]
            n2 [label="w\n(2, 3)" fillcolor=lightblue]
            n0 -> t0
            n1 -> n0
            n2 -> n1
        }
        <BLANKLINE>
    """
    outs = _flatten(roots)
    names, held_params = _param_names(params)
    g = _Dot()
    g.held.extend(held_params)
    known: Dict[int, str] = {}  # id(tensor) -> its DOT node, for view edges
    views: List[Tuple[str, Tensor]] = []
    saved_boxes: List[Tuple[str, Tensor]] = []
    node_ids: Dict[int, str] = {}

    def sight(node: Any, fresh: List[Any]) -> str:
        """The node's DOT name, made on first sight (and the node added to `fresh`)."""
        key = id(node)
        if key not in node_ids:
            g.held.append(node)
            if _is_leaf_node(node):
                var = node.variable
                g.held.append(var)
                node_ids[key] = g.new("n", _tensor_label(var, names), "fillcolor=lightblue")
                known.setdefault(id(var), node_ids[key])
                if var._is_view():
                    views.append((node_ids[key], var))
            else:
                lines = [_node_name(node)] + (_attrs(node, max_attr_chars) if show_attrs else [])
                hooks = _hooks_note(node)
                node_ids[key] = g.new("n", "\n".join(lines + ([hooks] if hooks else [])),
                                      "penwidth=2" if hooks else "")
            fresh.append(node)
        return node_ids[key]

    cut_sources: List[Tuple[str, Any]] = []

    def cut_box(into: str, kind: str, site: Any, sources: Any) -> None:
        c = g.new("c", _cut_label(kind, site, sources, names), "fillcolor=white color=red fontcolor=red fontsize=8")
        g.edge(c, into, "style=dashed color=red")
        for src in _sources(sources):
            g.held.append(src)
            cut_sources.append((c, src))

    for out in outs:
        label = _tensor_label(out, names) + ("\nretains_grad" if out.retains_grad else "")
        o = g.new("t", label, "fillcolor=darkolivegreen1")
        g.held.append(out)
        known.setdefault(id(out), o)
        if out._is_view():
            views.append((o, out))
        fn = out.grad_fn
        stack: List[Any] = []
        if fn is not None:
            g.edge(sight(fn, stack), o)
        else:
            cut = getattr(out, "_cut", None)
            if cut is not None:
                cut_box(o, cut[0], cut[1], cut[2])
        while stack:
            node = stack.pop()
            me = node_ids[id(node)]
            if show_saved:
                for attr, t in _saved(node):
                    g.held.append(t)
                    s = g.new("s", _saved_label(attr if isinstance(attr, str) else f"saved[{attr}]", t),
                              "fillcolor=orange")
                    g.edge(s, me, "dir=none")
                    if isinstance(t, Tensor):
                        saved_boxes.append((s, t))
                        if t._is_view():
                            views.append((s, t))
            fresh: List[Any] = []
            for kind, item in _inputs(node):
                if kind == "node":
                    g.edge(sight(item, fresh), me)
                elif kind == "cut":
                    cut_box(me, *item)
            stack.extend(reversed(fresh))  # pre-order: the first input is walked first

    for c, src in cut_sources:  # what a cut was made from, where it is drawn too
        drawn = known.get(id(src)) if isinstance(src, Tensor) else node_ids.get(id(src))
        if drawn is not None:
            g.edge(drawn, c, "style=dotted color=red constraint=false")
    for name, t in saved_boxes:  # a saved input that is itself a leaf or an output drawn here
        if id(t) in known:
            g.edge(name, known[id(t)], 'style=dotted label="is" constraint=false')
    bases: Dict[int, str] = {}
    for name, t in views:
        base = t._base
        if id(base) in known:  # drawn already: the edge leaves the layout as it is
            g.edge(name, known[id(base)], 'style=dashed label="view of" constraint=false')
            continue
        if id(base) not in bases:  # a base box of its own, placed by its view
            g.held.append(base)
            bases[id(base)] = g.new("b", f"base {_shape(base)}", 'fillcolor=white style="filled,dashed"')
        g.edge(name, bases[id(base)], 'style=dashed label="view of"')
    return g.text()


def to_svg(*roots: Roots, **kwargs: Any) -> str:
    """Returns the graph of :func:`to_dot` rendered as SVG text by Graphviz's ``dot``.

    Takes the same arguments as :func:`to_dot`. Raises ``RuntimeError`` when Graphviz is not
    installed: install it (``apt-get install graphviz``, ``brew install graphviz``) or write
    :func:`to_dot`'s text to a file and render it elsewhere.

    Example::

        >>> from rustgrad import viz
        >>> model = torch.nn.Linear(3, 1)
        >>> loss = model(torch.ones(2, 3)).sum()
        >>> try:
        ...     svg = viz.to_svg(loss, params=model)  # write it to graph.svg
        ... except RuntimeError:  # Graphviz is not installed here
        ...     svg = "<svg/>"
        >>> "<svg" in svg
        True
    """
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError(
            "rustgrad.viz.to_svg needs Graphviz's `dot` program, which is not on PATH: install "
            "Graphviz (apt-get install graphviz, or brew install graphviz), or use "
            "rustgrad.viz.to_dot() and render its text with any Graphviz viewer"
        )
    dot = to_dot(*roots, **kwargs)
    proc = subprocess.run([exe, "-Tsvg"], input=dot.encode("utf-8"), capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"dot -Tsvg failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode("utf-8")


def _saved_totals(fn: Any) -> Tuple[int, int]:
    """How many tensors the graph below `fn` saves, and their bytes."""
    count = total = 0
    for node in graph_nodes([fn]):
        saved = [t for _, t in _saved(node) if isinstance(t, Tensor)]
        count += len(saved)
        total += sum(_nbytes(t) for t in saved)
    return count, total


def _text_node(node: Any, names: Dict[int, str], show_saved: bool) -> str:
    """A node's line, without the tree."""
    if _is_leaf_node(node):
        var = node.variable
        name = names.get(id(var))
        hooks = _hooks_note(var)
        return "leaf " + (f"{name} " if name else "") + _shape(var) + (f"  {hooks}" if hooks else "")
    line = _node_name(node)
    hooks = _hooks_note(node)
    if hooks:
        line += f"  {hooks}"
    saved = _saved(node) if show_saved else []
    if saved:
        parts = []
        for attr, t in saved:
            part = _saved_label(attr if isinstance(attr, str) else f"[{attr}]", t)
            if isinstance(t, Tensor) and id(t) in names:
                part += f" (is {names[id(t)]})"
            elif isinstance(t, Tensor) and t._is_view():
                base = t._base
                part += " (view of " + (names.get(id(base)) or _shape(base)) + ")"
            parts.append(part)
        line += "  saved: " + ", ".join(parts)
    return line


def to_text(
    root: Tensor,
    params: Optional[Params] = None,
    show_saved: bool = True,
    max_depth: Optional[int] = 64,
) -> str:
    """Returns the autograd graph behind ``root`` as a tree for a terminal.

    The first line is the output tensor; below it, its grad_fn and then each node's inputs in
    order, one node per line, drawn with ``├─`` and ``└─``. A node reached a second time is
    written once more with ``(see above)`` and not expanded again. Leaves show their name from
    ``params`` (as in :func:`to_dot`) and shape; nodes list their saved tensors (torch's
    attribute name, else the slot ``[i]``) with shapes and bytes (or the type of what a
    saved_tensors_hooks pack hook made of them); an input cut from a graph
    shows the cut (``cut: detach() at file:line``); other inputs that need no gradient are
    left out. With ``show_saved``, the last line totals the saved tensors of the whole graph,
    shown or not (each saved slot counted, so a tensor saved twice counts twice).

    Args:
        root: the output tensor.
        params: names for leaves (a dict, ``model.named_parameters()`` or a Module).
        show_saved: list saved tensors.
        max_depth: levels below the output shown (deeper branches end in ``...``); None: all.

    Example::

        >>> from rustgrad import viz
        >>> x = torch.ones(3, requires_grad=True)
        >>> print(viz.to_text((x.exp() * 2).sum(), params={"x": x}))
        output ()
        └─ SumBackward0
           └─ MulBackward0
              └─ ExpBackward0  saved: result (3,) 12 B
                 └─ leaf x (3,)
        saved tensors: 1, 12 B
    """
    if not isinstance(root, Tensor):
        raise TypeError(f"viz.to_text: expected a tensor, got {type(root).__name__}")
    names, held = _param_names(params)
    first = "output " + _tensor_label(root, names).replace("\n", " ")
    if root.retains_grad:
        first += "  retains_grad"
    lines = [first]
    printed: Dict[int, Any] = {}  # id -> node, held so that ids stay theirs
    # (item kind, item, prefix of its line, whether it is its parent's last input, depth)
    stack: List[Tuple[str, Any, str, bool, int]] = []
    fn = root.grad_fn
    if fn is not None:
        stack.append(("node", fn, "", True, 1))
    else:
        cut = getattr(root, "_cut", None)
        if cut is not None:
            stack.append(("cut", cut[:3], "", True, 1))
    while stack:
        kind, item, prefix, last, depth = stack.pop()
        branch = prefix + ("└─ " if last else "├─ ")
        below = prefix + ("   " if last else "│  ")
        if kind == "cut":
            lines.append(branch + "cut: " + _cut_label(*item, names))
            continue
        if max_depth is not None and depth > max_depth:
            lines.append(branch + "...")
            continue
        if id(item) in printed:
            lines.append(branch + _text_node(item, names, False) + " (see above)")
            continue
        printed[id(item)] = item
        lines.append(branch + _text_node(item, names, show_saved))
        inputs = [(k, it) for k, it in _inputs(item) if k != "none"]
        for i in reversed(range(len(inputs))):
            k, it = inputs[i]
            stack.append((k, it, below, i == len(inputs) - 1, depth + 1))
    del held
    if show_saved:
        count, total = _saved_totals(fn)
        lines.append(f"saved tensors: {count}, {_fmt_bytes(total)}" + (f" ({total} bytes)" if total >= 1024 else ""))
    return "\n".join(lines) + "\n"
