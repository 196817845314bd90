"""rustgrad.autograd.graph: the Node type of grad_fn objects, saved-tensor hooks.

`Node` is the Rust grad_fn object (`rust/python/src/node.rs`): `name()`, `next_functions`,
`register_hook(fn(grad_inputs, grad_outputs))`, `register_prehook(fn(grad_outputs))`, and, by
`_node_getattr` below, torch's per-op `_saved_<name>` attributes and a custom Function's ctx
attributes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Tuple

from .. import (
    _bind,  # torch's `_saved_<name>` getters, declared with each op (saved_getters)
    _core,
)
from .function import FunctionCtx

if TYPE_CHECKING:  # imported on first use (__getattr__ below); type checkers see them here
    from ._memory_report import live_graphs, memory_report, saved_tensors

Node = _core.Node

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "memory_report", "saved_tensors",
           "live_graphs"]


class saved_tensors_hooks:
    """Within this context, every tensor an op saves for backward is passed to `pack_hook`
    when saved, and what it returned to `unpack_hook` when backward needs the tensor back
    (which must return a tensor with the same content). Applies on this thread; the innermost
    pair wins. Saved this way, tensors are not version-checked (as torch)."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        _core._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args: object) -> None:
        _core._pop_saved_tensors_hooks()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device in backward (a no-op
    for CPU tensors, as torch's)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor: Any) -> Tuple[Any, Any]:
            return (tensor.device, tensor.cpu())

        def unpack_from_cpu(packed: Tuple[Any, Any]) -> Any:
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class _LazySaved:
    """A node's saved values, unpacked on first use: a getter of a non-tensor attribute (an
    exponent, a dim) reads only the node's ctx, and works after backward freed the tensors."""

    def __init__(self, node: Any) -> None:
        self._node = node
        self._values: Any = None

    def _get(self) -> Any:
        if self._values is None:
            self._values = self._node._saved_values()
        return self._values

    def __getitem__(self, i: Any) -> Any:
        return self._get()[i]

    def __len__(self) -> int:
        return len(self._get())

    def __iter__(self) -> Any:
        return iter(self._get())


def _node_getattr(node: Any, attr: str) -> Any:
    """Attributes of grad_fn objects beyond the Rust ones (called by Node.__getattr__)."""
    name = node.name()
    ctx = node._ctx
    if isinstance(ctx, FunctionCtx):
        if attr in ("saved_tensors", "saved_variables"):
            return node._saved_values()
        if not attr.startswith("__"):
            try:
                return getattr(ctx, attr)
            except AttributeError:
                pass
    elif attr.startswith("_saved_") or attr.startswith("_raw_saved_"):
        key = attr[len("_raw_saved_"):] if attr.startswith("_raw") else attr[len("_saved_"):]
        getter = _bind.saved_getters().get(name, {}).get(key)
        if getter is not None:
            return getter(_LazySaved(node), ctx)
    raise AttributeError(f"'{name}' object has no attribute '{attr}'")


_FROM_MEMORY_REPORT = frozenset({"live_graphs", "memory_report", "saved_tensors"})


def __getattr__(name: str) -> Any:
    """memory_report, saved_tensors and live_graphs, imported on first use: their module
    (dataclasses, ~3 ms) is not needed by `import rustgrad`."""
    if name in _FROM_MEMORY_REPORT:
        from . import _memory_report  # import-time cost: see above

        globals()[name] = value = getattr(_memory_report, name)  # later uses find it directly
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
