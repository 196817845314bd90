"""rustgrad.utils: activation checkpointing (`rustgrad.utils.checkpoint`) and hook handles
(`rustgrad.utils.hooks.RemovableHandle`), as torch.utils."""

import importlib
from typing import TYPE_CHECKING, Any

from . import hooks  # noqa: F401

if TYPE_CHECKING:  # imported on first attribute use (below); type checkers see them as here
    from . import checkpoint, data, dlpack  # noqa: F401

# `rustgrad.utils.data` etc. stay reachable as attributes, as torch.utils.data is after
# `import torch`, but `import rustgrad` does not pay for them (data alone is ~12 ms)
_LAZY_SUBMODULES = frozenset({"checkpoint", "data", "dlpack"})


def __getattr__(name: str) -> Any:
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
