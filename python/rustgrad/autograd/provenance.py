"""Where things happened in a graph, and what ran during backward: rustgrad's additions to
torch.autograd for people learning and debugging autograd.

- Every in-place write records the op and the user's line in the tensor's version counter
  (always on: in-place ops are few). The "modified by an inplace operation" error names it,
  and `rustgrad.explain(t)` lists it.
- Node provenance (on by default; `set_provenance(False)` turns it off) also records, for every
  node, the line of the forward op that made it (`grad_fn._site`): the in-place error then
  names both lines. On CPython 3.11-3.13 the walk reads the running frames in place, about 2%
  of the small-tensor forward chain's instructions (see the README).
- `set_strict_data(True)`: a tensor from `.data` shares its source's version counter, so a write
  through `.data` to a tensor that backward needs fails backward instead of silently giving
  wrong gradients (torch's `.data` escapes the check).
- `trace_hooks()`: records every hook fired during backward, in order.
"""

from __future__ import annotations

# _thread, not threading: the same primitives, and `import rustgrad` skips threading
import _thread
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

from .. import _core
from .._dtype import float64
from .grad_mode import no_grad

# nn's modules push their scope through these (nodes keep the innermost: memory_report per module)
_push_scope = _core._push_scope
_pop_scope = _core._pop_scope

__all__ = ["set_provenance", "is_provenance_enabled", "set_strict_data", "is_strict_data",
           "trace_hooks", "HookEvent"]


class _Switch:
    """Sets a global flag now; as a context manager, restores the previous value on exit."""

    def __init__(self, setter: Any, mode: bool) -> None:
        self._setter = setter
        self.prev = bool(setter(bool(mode)))

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: object) -> None:
        self._setter(self.prev)

    def __bool__(self) -> bool:
        return self.prev


def set_provenance(mode: bool) -> _Switch:
    """Turns on (or off) recording where each node's forward op ran (`grad_fn._site`, used by
    `explain`, `who_gets_grad`, `viz`, `memory_report` and the in-place error). Usable as a
    context manager; `bool()` of the result is the previous setting.

    Example::

        >>> import rustgrad as torch
        >>> with torch.autograd.set_provenance(True):
        ...     y = torch.ones(2, requires_grad=True) * 2
        >>> y.grad_fn._site[2]
        '<module>'
    """
    return _Switch(_core.set_provenance, mode)


def is_provenance_enabled() -> bool:
    """Whether node sites are recorded (see `set_provenance`)."""
    return bool(_core.is_provenance_enabled())


def set_strict_data(mode: bool) -> _Switch:
    """Makes `.data` share the version counter of its tensor (while on), so writes through it
    are seen by the saved-tensor check. Usable as a context manager.

    Example::

        >>> import rustgrad as torch
        >>> x = torch.ones(2, requires_grad=True)
        >>> y = x.exp()
        >>> with torch.autograd.set_strict_data(True):
        ...     y.data.zero_()
        tensor([0., 0.])
        >>> y.sum().backward()
        Traceback (most recent call last):
        ...
        RuntimeError: one of the variables needed for gradient computation has been modified by ...
    """
    return _Switch(_core.set_strict_data, mode)


def is_strict_data() -> bool:
    """Whether `.data` shares version counters (see `set_strict_data`)."""
    return bool(_core.is_strict_data())


@dataclass
class HookEvent:
    """One hook call during backward: `kind` is "tensor", "retain_grad", "post_accumulate",
    "node_pre", "node", "module_pre", "module" or "module_legacy"; `name` the hook's name;
    `owner` the node or module name it belongs to, where known; `shapes` and `norms` describe
    the gradients it received (None for a missing gradient)."""

    kind: str
    name: str
    owner: str
    shapes: Tuple[Optional[Tuple[int, ...]], ...]
    norms: Tuple[Optional[float], ...]

    def __str__(self) -> str:
        grads = ", ".join(
            "None" if s is None else f"{list(s)} |{n:.4g}|" for s, n in zip(self.shapes, self.norms)
        )
        owner = f" on {self.owner}" if self.owner else ""
        return f"{self.kind:<15} {self.name}{owner}: {grads}"


_lock = _thread.allocate_lock()
_active: List[trace_hooks] = []


def _norm(g: Any) -> Optional[float]:
    if getattr(g, "_data", None) is None:
        return None
    with no_grad():
        return float(g.detach().abs().to(float64).norm())


def _describe(grads: Any) -> Tuple[Tuple[Any, ...], Tuple[Any, ...]]:
    items = grads if isinstance(grads, tuple) else (grads,)
    shapes = tuple(None if g is None else tuple(g.shape) for g in items)
    return shapes, tuple(None if g is None else _norm(g) for g in items)


def _hook_name(hook: Any) -> str:
    inner = getattr(hook, "hook", hook)  # a module's wrapped hook
    return str(getattr(inner, "__qualname__", None) or getattr(inner, "__name__", None)
               or type(inner).__name__)


def _emit(kind: str, hook: Any, grads: Any, owner: str = "") -> None:
    """Called by the binding before each Rust-run hook and by nn's module hooks."""
    if not _active:
        return
    name = _hook_name(hook)
    if kind == "tensor" and name.endswith("retain_grad.<locals>.retain"):
        kind, name = "retain_grad", "retain_grad"
    elif kind == "node_post" and hasattr(hook, "with_module"):
        kind = "module_legacy"
        module = hook.module() if getattr(hook, "with_module", False) else None
        owner = type(module).__name__ if module is not None else owner
    elif kind == "node_post":
        kind = "node"
    elif kind == "post_accumulate":
        grads = grads.grad  # the hook receives the tensor; its .grad is what was accumulated
    shapes, norms = _describe(grads)
    event = HookEvent(kind, name, owner, shapes, norms)
    for trace in list(_active):
        if trace._thread == _thread.get_ident():
            trace.events.append(event)


def emit_module(kind: str, module: Any, hook: Any, grads: Any) -> None:
    """nn's backward hooks report themselves here (they run in Python, not in the engine)."""
    if _active:
        _emit(kind, hook, grads, type(module).__name__)


class trace_hooks:
    """Within this context, every tensor, retain-grad, post-accumulate, node and module hook
    fired by backward on this thread is recorded, in order, with the shapes and norms of the
    gradients it received.

    Example::

        >>> import rustgrad as torch
        >>> x = torch.ones(3, requires_grad=True)
        >>> y = x * 2
        >>> _ = y.register_hook(lambda g: None)
        >>> with torch.autograd.trace_hooks() as trace:
        ...     y.sum().backward()
        >>> [e.kind for e in trace]
        ['tensor']
    """

    def __init__(self) -> None:
        self.events: List[HookEvent] = []
        self._thread = _thread.get_ident()

    def __enter__(self) -> trace_hooks:
        with _lock:
            if not _active:
                _core._set_hook_tracer(_emit)
            _active.append(self)
        return self

    def __exit__(self, *args: object) -> None:
        with _lock:
            _active.remove(self)
            if not _active:
                _core._set_hook_tracer(None)

    def __iter__(self) -> Any:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def __getitem__(self, i: int) -> HookEvent:
        return self.events[i]

    def __str__(self) -> str:
        return "\n".join(f"{i:>3}. {e}" for i, e in enumerate(self.events))
