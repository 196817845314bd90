"""RemovableHandle, the handle every `register_*hook` returns (torch.utils.hooks.RemovableHandle).

One class for every hook: a handle of a hook kept in Python dicts (module and optimizer hooks)
removes it from those dicts; a handle of a hook the engine runs (tensor, post-accumulate-grad and
grad_fn hooks) is made by `rustgrad._core`, whose base class holds the engine's hook list weakly.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable, Optional, Tuple

from .. import _core

__all__ = ["RemovableHandle"]

_ids = itertools.count()


def _no_dict() -> None:
    return None


class RemovableHandle(_core.HookHandleBase):
    """A handle that removes a hook from the dict(s) or engine hook list it was registered in."""

    id: int
    next_id: int = 0
    # What a handle made by the engine keeps (it has no dicts): `__init__` replaces both.
    hooks_dict_ref: Callable[[], Any] = staticmethod(_no_dict)
    extra_dict_ref: Tuple[Callable[[], Any], ...] = ()

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(_ids)
        RemovableHandle.next_id = self.id + 1
        extra: Tuple[Any, ...]
        if extra_dict is None:
            extra = ()
        elif isinstance(extra_dict, (list, tuple)):
            extra = tuple(extra_dict)
        else:
            extra = (extra_dict,)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra)

    def remove(self) -> None:
        """Removes the hook; removing twice, or after its owner is gone, does nothing."""
        self._remove_from_engine()
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            d: Optional[Any] = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *args: Any) -> None:
        self.remove()
