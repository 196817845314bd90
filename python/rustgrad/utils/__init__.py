"""rustgrad.utils: activation checkpointing (`rustgrad.utils.checkpoint`) and hook handles
(`rustgrad.utils.hooks.RemovableHandle`), as torch.utils."""

from . import checkpoint, dlpack, hooks  # noqa: F401
from . import data  # noqa: F401  (torch.utils.data)
