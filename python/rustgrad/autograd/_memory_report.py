"""Graph memory: which saved tensors a graph holds, in bytes, and what keeps graphs alive.

A graph holds memory through the tensors its nodes saved for backward (inputs, outputs, masks).
:func:`saved_tensors` lists them, :func:`memory_report` sums them per node, per ``nn.Module``
and per device with each shared storage counted once, and :func:`live_graphs` names the Python
variables, attributes and list elements that keep graphs alive, such as a ``total_loss += loss``
accumulator that holds every training step's graph.

Example::

    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    >>> loss = model(rustgrad.randn(32, 4)).pow(2).mean()
    >>> print(memory_report(loss, model=model))     # doctest: +SKIP
    >>> print(*live_graphs(), sep="\\n")             # doctest: +SKIP
"""

from __future__ import annotations

import gc
import os
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple, Union

from .. import _bind, _core
from .._tensor import Tensor
from ._walk import graph_nodes

Node = _core.Node
Site = Tuple[str, int, str]

__all__ = ["SavedTensorInfo", "MemoryReport", "LiveGraph", "saved_tensors", "memory_report",
           "live_graphs"]

_NO_MODULE = "(no module)"


# ---- saved tensors ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SavedTensorInfo:
    """One tensor saved for backward by one node of a graph.

    ``name`` is torch's saved-attribute name (``grad_fn._saved_<name>``) where the op declares
    one, else ``saved[i]``; ``storage`` identifies the storage shared by views and ``detach()``es
    and ``nbytes`` is that whole storage's size. ``scope`` is the ``(id(module), class name)`` of
    the innermost ``nn.Module`` whose forward recorded the node, and ``site`` the user's
    ``(filename, lineno, function)`` of that forward op when node provenance was on.
    """

    node: Any
    node_name: str
    name: str
    tensor: Tensor
    shape: Tuple[int, ...]
    dtype: Any
    device: Any
    nbytes: int
    storage: int
    scope: Any
    site: Optional[Site]


def _as_int(value: Any) -> Any:
    # `_storage_id` / `_storage_nbytes` are properties in the contract; tolerate methods
    return value() if callable(value) else value


def _root_array(arr: Any) -> Any:
    base = getattr(arr, "base", None)
    while base is not None and hasattr(base, "nbytes"):
        arr = base
        base = getattr(arr, "base", None)
    return arr


def _storage_of(t: Tensor) -> Tuple[int, int]:
    """(storage key, bytes of the whole storage) of `t`."""
    nbytes = _as_int(getattr(t, "_storage_nbytes", None))
    sid = _as_int(getattr(t, "_storage_id", None))
    if nbytes is None or sid is None:  # a backend without storage accounting: its array's base
        root = _root_array(t._data)
        nbytes = root.nbytes if nbytes is None else nbytes
        sid = id(root) if sid is None else sid
    return int(sid), int(nbytes)


class _Slot:
    """Stands in for saved value `index` while a declared getter is probed for its slot."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _slot_names(node: Any, name: str, count: int) -> List[Optional[str]]:
    """torch's saved-attribute name of each saved slot, found by calling the op's declared
    getters on stand-ins (getters that compute rather than index raise and are skipped)."""
    names: List[Optional[str]] = [None] * count
    getters = _bind.saved_getters().get(name)
    if not getters or not count:
        return names
    probe = tuple(_Slot(i) for i in range(count))
    ctx = getattr(node, "_ctx", None)
    for attr, getter in getters.items():
        try:
            got = getter(probe, ctx)
        except Exception:
            continue
        if isinstance(got, _Slot):
            if names[got.index] is None:
                names[got.index] = attr
        elif isinstance(got, (tuple, list)):
            for j, g in enumerate(got):
                if isinstance(g, _Slot) and names[g.index] is None:
                    names[g.index] = f"{attr}[{j}]"
    return names


def _tensors_in(value: Any) -> List[Tensor]:
    # a saved_tensors_hooks pack may return a tensor or a small tuple holding one (save_on_cpu)
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if isinstance(v, Tensor)]
    return []


def _node_entries(node: Any) -> List[SavedTensorInfo]:
    values = node._saved_values_unchecked()  # no version check: a stale save still costs
    if not values:
        return []
    name = node.name()
    names = _slot_names(node, name, len(values))
    scope = getattr(node, "_scope", None)
    site = getattr(node, "_site", None)
    out: List[SavedTensorInfo] = []
    for i, value in enumerate(values):
        for k, t in enumerate(_tensors_in(value)):
            attr = names[i] or f"saved[{i}]"
            if k:
                attr = f"{attr}.packed[{k}]"
            sid, nbytes = _storage_of(t)
            out.append(SavedTensorInfo(node, name, attr, t, tuple(t.shape), t.dtype, t.device,
                                       nbytes, sid, scope, site))
    return out


def saved_tensors(*roots: Union[Tensor, Any]) -> List[SavedTensorInfo]:
    r"""Every tensor saved for backward by the graph behind ``roots``.

    Walks every node reachable from the roots' ``grad_fn`` (iteratively: any depth works) and
    lists each saved tensor once per node that saved it. Nodes whose saved tensors a backward
    already released contribute nothing.

    Args:
        *roots: tensors (their ``grad_fn`` is the start; leaves hold no graph) or grad_fn nodes.

    Example::

        >>> x = rustgrad.randn(3, requires_grad=True)
        >>> y = (x * x).exp().sum()
        >>> [(s.node_name, s.name) for s in rustgrad.autograd.graph.saved_tensors(y)]
        [('ExpBackward0', 'result'), ('MulBackward0', 'other'), ('MulBackward0', 'self')]
    """
    out: List[SavedTensorInfo] = []
    for node in graph_nodes(roots):
        out.extend(_node_entries(node))
    return out


# ---- the report ------------------------------------------------------------------------------

def format_bytes(n: float) -> str:
    """`n` bytes as B, KiB, MiB or GiB (binary units, as torch's memory summaries)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _scope_label(scope: Any, names: Dict[int, str]) -> Tuple[str, str]:
    """(key in by_module, class name) of a node's scope: the module's qualified name in the
    model when known (the model itself by its class name), else its class name."""
    if scope is None:
        return _NO_MODULE, ""
    if isinstance(scope, tuple) and len(scope) == 2 and isinstance(scope[0], int):
        mid, cls = scope
        qual = names.get(mid)
        return (qual or str(cls), str(cls)) if qual is not None else (str(cls), str(cls))
    return str(scope), ""


def _site_label(site: Optional[Site]) -> str:
    if not site:
        return ""
    filename, lineno, _ = site
    return f"{os.path.basename(filename)}:{lineno}"


@dataclass(slots=True)
class MemoryReport:
    """What a graph's saved tensors cost, from :func:`memory_report`.

    Each storage counts once: ``total_bytes`` is the sum over distinct storages, and in
    ``by_node``, ``by_module`` and ``by_device`` a storage saved by several nodes counts at the
    first of them in forward order (the lowest ``_sequence_nr``), so each breakdown sums to
    ``total_bytes``. ``entries`` lists every saved tensor (see :func:`saved_tensors`).
    """

    entries: List[SavedTensorInfo]
    total_bytes: int = 0
    storages: int = 0
    nodes: int = 0
    by_node: Dict[Any, int] = field(default_factory=dict)
    by_module: Dict[str, int] = field(default_factory=dict)
    by_device: Dict[str, int] = field(default_factory=dict)
    module_classes: Dict[str, str] = field(default_factory=dict)
    module_names: Dict[int, str] = field(default_factory=dict, repr=False)

    def __str__(self) -> str:
        lines = [f"saved tensors: {format_bytes(self.total_bytes)} in {self.storages} storage(s)"
                 f" ({len(self.entries)} saved tensor(s) on {self.nodes} node(s))"]

        def table(title: str, rows: List[Tuple[str, int]], limit: int = 20) -> None:
            if not rows:
                return
            rows = sorted(rows, key=lambda r: -r[1])
            width = max(len(r[0]) for r in rows[:limit])
            lines.append(f"by {title}:")
            for label, b in rows[:limit]:
                lines.append(f"  {label:<{width}}  {format_bytes(b):>10}")
            if len(rows) > limit:
                rest = sum(b for _, b in rows[limit:])
                lines.append(f"  {'... ' + str(len(rows) - limit) + ' more':<{width}}"
                             f"  {format_bytes(rest):>10}")

        classes = self.module_classes
        table("module", [(f"{k} ({classes[k]})" if classes.get(k) not in (None, "", k) else k, b)
                         for k, b in self.by_module.items()])
        table("device", list(self.by_device.items()))
        first: Dict[Any, SavedTensorInfo] = {}
        for e in self.entries:
            first.setdefault(e.node, e)
        node_rows = []
        for node, b in self.by_node.items():
            e = first[node]
            module, _ = _scope_label(e.scope, self.module_names)
            label = f"{e.node_name} #{node._sequence_nr}  {module}"
            site = _site_label(e.site)
            node_rows.append((f"{label}  {site}" if site else label, b))
        table("node", node_rows)
        return "\n".join(lines)


def _module_names(model: Any) -> Dict[int, str]:
    if model is None:
        return {}
    return {id(m): name for name, m in model.named_modules(remove_duplicate=False)}


def memory_report(*roots: Union[Tensor, Any], model: Any = None) -> MemoryReport:
    r"""Bytes of saved tensors held by the graph behind ``roots``: total, per node, per module
    and per device, with each shared storage (views, ``detach()``es, a tensor saved by several
    nodes) counted once.

    Nodes recorded inside an ``nn.Module``'s forward are attributed to the innermost module;
    with ``model`` given, modules are named by their qualified names in
    ``model.named_modules()`` (``"0"``, ``"encoder.layer.1"``), else by class name. Nodes
    recorded outside any module count under ``"(no module)"``.

    Args:
        *roots: tensors or grad_fn nodes whose graph to measure.
        model: the ``nn.Module`` whose submodule names label ``by_module``.

    Example::

        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        >>> report = rustgrad.autograd.graph.memory_report(model(rustgrad.randn(32, 4)).sum(), model=model)
        >>> report.total_bytes, sorted(report.by_module)
        (1568, ['0', '1', '2'])
        >>> print(report)       # doctest: +SKIP
    """
    names = _module_names(model)
    entries: List[SavedTensorInfo] = []
    nodes = 0
    for node in graph_nodes(roots):
        nodes += 1
        entries.extend(_node_entries(node))
    report = MemoryReport(entries, nodes=nodes, module_names=names)
    owner: Dict[int, SavedTensorInfo] = {}
    for e in entries:
        held = owner.get(e.storage)
        if held is None or e.node._sequence_nr < held.node._sequence_nr:
            owner[e.storage] = e
    for e in entries:
        report.by_node.setdefault(e.node, 0)
    for e in owner.values():
        report.total_bytes += e.nbytes
        report.by_node[e.node] += e.nbytes
        module, cls = _scope_label(e.scope, names)
        report.by_module[module] = report.by_module.get(module, 0) + e.nbytes
        report.module_classes[module] = cls
        device = str(e.device)
        report.by_device[device] = report.by_device.get(device, 0) + e.nbytes
    report.storages = len(owner)
    return report


# ---- what keeps graphs alive -----------------------------------------------------------------

@dataclass(slots=True)
class LiveGraph:
    """A live tensor that holds a graph, from :func:`live_graphs`: the names it is reachable by
    (``holders``), the graph's node count and the bytes of its saved tensors, and whether it
    looks like an accumulator (a tensor added to in place step after step)."""

    tensor: Tensor
    holders: List[str]
    nodes: int
    saved_bytes: int
    accumulator: bool

    def __str__(self) -> str:
        who = self.holders[0]
        if len(self.holders) > 1:
            who += " (also " + ", ".join(self.holders[1:]) + ")"
        msg = (f"{who} holds a graph of {self.nodes} node(s) and "
               f"{format_bytes(self.saved_bytes)} of saved tensors; ")
        if self.accumulator:
            return msg + "use loss.item() or loss.detach() to accumulate"
        return msg + "call backward() through it, or keep .detach() / .item() if only the " \
                     "value is needed"


def _is_accumulator(t: Tensor) -> bool:
    # `total += loss` on a tensor that requires grad is an in-place add recorded as AddBackward0
    fn = t.grad_fn
    return fn is not None and t._version > 0 and fn.name() in ("AddBackward0", "SubBackward0")


def _where(code: Any, lineno: Optional[int] = None) -> str:
    place = os.path.basename(code.co_filename)
    return f"{place}:{lineno}" if lineno is not None else place


_KEY, _END = "\0", "\1"  # brackets a dict key that may turn out to be an attribute name


def _as_attr(path: str) -> str:
    """A path that starts with a dict key, once that dict proved an instance __dict__."""
    if path.startswith(_KEY):
        key, _, rest = path[1:].partition(_END)
        return f".{key}{rest}"
    return path


def _tidy(path: str) -> str:
    """Dict keys never resolved to attributes read as subscripts."""
    out, rest = [], path
    while _KEY in rest:
        head, _, tail = rest.partition(_KEY)
        key, _, rest = tail.partition(_END)
        out.append(f"{head}[{key!r}]")
    return "".join(out) + rest


_MISSING = object()
Via = List[Tuple[int, str]]  # (target id, path from this object down to the target)


class _Finder:
    """Names under which objects are reachable from a module global, a live frame's local or
    a suspended generator's local, through up to `depth` attributes, list or dict elements.
    Containers this search makes are ignored by id."""

    def __init__(self, ignore: Set[int]) -> None:
        self.ignore = ignore
        self.globals = {id(vars(m)): m for m in list(sys.modules.values())
                        if isinstance(m, types.ModuleType)}
        me = globals()
        self.frames: List[types.FrameType] = []
        for top in sys._current_frames().values():
            f: Optional[types.FrameType] = top
            while f is not None:
                # module-level code's locals are its globals, found through the module
                if f.f_globals is not me and f.f_code.co_name != "<module>":
                    self.frames.append(f)
                f = f.f_back
        self.ignore.update((id(self.frames), id(self.globals)))

    def _module_file(self, d: Any) -> str:
        module = self.globals[id(d)]
        path = getattr(module, "__file__", None)
        return os.path.basename(path) if path else module.__name__

    def names(self, targets: Dict[int, Any], depth: int = 3) -> Dict[int, List[str]]:
        found: Dict[int, List[str]] = {k: [] for k in targets}
        objs: Dict[int, Any] = dict(targets)  # this level's objects, by id
        vias: Dict[int, Via] = {k: [(k, "")] for k in targets}
        for _ in range(depth):
            if not objs:
                break
            next_objs: Dict[int, Any] = {}
            next_vias: Dict[int, Via] = {}
            self.ignore.update((id(objs), id(next_objs)))

            def via_of(v: Any, objs: Dict[int, Any] = objs,
                       vias: Dict[int, Via] = vias) -> Optional[Via]:
                o = objs.get(id(v), _MISSING)
                return vias[id(v)] if o is v else None

            def reach(holder: Any, step: str, via: Via, next_objs: Dict[int, Any] = next_objs,
                      next_vias: Dict[int, Via] = next_vias) -> None:
                if id(holder) in self.ignore:
                    return
                next_objs[id(holder)] = holder
                next_vias.setdefault(id(holder), []).extend((t, step + p) for t, p in via)

            def final(name: str, via: Via, where: str) -> None:
                for t, p in via:
                    found[t].append(f"{_tidy(name + p)} ({where})")

            def scan_locals(frame: types.FrameType, where: str) -> None:
                for name, v in frame.f_locals.items():
                    via = via_of(v)
                    if via is not None:
                        final(name, via, where)

            for f in self.frames:
                scan_locals(f, f"local in {f.f_code.co_name}, "
                               f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}")
            level = list(objs.values())
            self.ignore.add(id(level))
            referrers = gc.get_referrers(*level)
            self.ignore.add(id(referrers))
            for ref in referrers:
                if id(ref) in self.ignore or \
                        issubclass(type(ref), (Tensor, Node, types.FrameType)):
                    continue
                if isinstance(ref, tuple) and len(ref) == len(level) and \
                        all(a is b for a, b in zip(ref, level)):
                    continue  # the argument tuple of this get_referrers call
                if isinstance(ref, dict):
                    for k, v in list(ref.items()):
                        via = via_of(v)
                        if via is None:
                            continue
                        if id(ref) in self.globals:
                            final(str(k), via, f"global in {self._module_file(ref)}")
                        elif isinstance(k, str):
                            reach(ref, f"{_KEY}{k}{_END}", via)
                        else:
                            reach(ref, f"[{k!r}]", via)
                elif isinstance(ref, (list, tuple)):
                    for i, v in enumerate(ref):
                        via = via_of(v)
                        if via is not None:
                            reach(ref, f"[{i}]", via)
                elif isinstance(ref, types.GeneratorType):
                    if ref.gi_frame is not None:
                        fr = ref.gi_frame
                        scan_locals(fr, f"local in suspended generator {fr.f_code.co_name}, "
                                        f"{os.path.basename(fr.f_code.co_filename)}")
                else:
                    try:
                        attrs = object.__getattribute__(ref, "__dict__")
                    except AttributeError:
                        continue
                    if not isinstance(attrs, dict):
                        continue
                    via = via_of(attrs)
                    if via is not None:  # its instance dict was found on the level before
                        reach(ref, "", [(t, _as_attr(p)) for t, p in via])
                    for k, v in list(attrs.items()):
                        via = via_of(v)
                        if via is not None:
                            reach(ref, f".{k}", via)
            objs, vias = next_objs, next_vias
        return {t: list(dict.fromkeys(labels)) for t, labels in found.items()}


def live_graphs(min_nodes: int = 1000) -> List[LiveGraph]:
    r"""The live tensors that keep an autograd graph alive, and who holds them.

    Scans the objects Python's garbage collector tracks for tensors with a ``grad_fn`` that
    are reachable by name: a module global, a local of a running function or a suspended
    generator, an attribute of an object, or an element of a list or dict held so. A tensor is
    reported when its graph still holds saved tensors, when it was accumulated in place (the
    classic ``total_loss += loss``, which chains every step's graph), or when its graph has
    ``min_nodes`` nodes or more. Records are sorted by saved bytes, then node count.

    Example::

        >>> total_loss = 0
        >>> for x, y in batches:                 # doctest: +SKIP
        ...     loss = F.mse_loss(model(x), y)
        ...     loss.backward()
        ...     total_loss += loss          # bug: keeps every step's graph
        >>> print(*rustgrad.autograd.graph.live_graphs(), sep="\n")  # doctest: +SKIP
        total_loss (global in train.py) holds a graph of 3000 node(s) and 0 B of saved
        tensors; use loss.item() or loss.detach() to accumulate
    """
    objects = gc.get_objects()
    # type(), not isinstance(): some objects warn when their __class__ is read
    candidates = {id(o): o for o in objects
                  if issubclass(type(o), Tensor) and o.grad_fn is not None}
    del objects
    # a tensor saved by a later node of a live graph is reported through that graph's holder;
    # dropping these first keeps the referrer search small (it costs heap size x targets)
    inner: Set[int] = set()
    seen: Set[Any] = set()
    for t in list(candidates.values()):
        for node in graph_nodes([t], seen):
            for value in node._saved_values_unchecked():
                for s in _tensors_in(value):
                    if s.grad_fn is not node:
                        inner.add(id(s))
    for k in inner:
        candidates.pop(k, None)
    ignore: Set[int] = {id(candidates)}
    named = _Finder(ignore).names(candidates)
    out: List[LiveGraph] = []
    for tid, holders in named.items():
        if not holders:
            continue
        t = candidates[tid]
        report = memory_report(t)
        acc = _is_accumulator(t)
        if report.total_bytes or acc or report.nodes >= min_nodes:
            out.append(LiveGraph(t, holders, report.nodes, report.total_bytes, acc))
    out.sort(key=lambda g: (not g.accumulator, -g.saved_bytes, -g.nodes))
    return out
