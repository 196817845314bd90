"""rustgrad.utils: activation checkpointing (`rustgrad.utils.checkpoint`), as torch.utils."""

from . import checkpoint  # noqa: F401
