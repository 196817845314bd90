"""rustgrad.utils: activation checkpointing (`rustgrad.utils.checkpoint`) and hook handles
(`rustgrad.utils.hooks.RemovableHandle`), as torch.utils."""

from . import checkpoint, data, dlpack, hooks  # noqa: F401
