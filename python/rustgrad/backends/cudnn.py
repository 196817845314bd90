"""rustgrad.backends.cudnn: cuDNN flags (recorded; rustgrad calls no cuDNN)."""

from __future__ import annotations

from typing import Optional

enabled: bool = True
benchmark: bool = False
deterministic: bool = False
allow_tf32: bool = True
benchmark_limit: int = 10


def is_available() -> bool:
    """False: rustgrad does not use cuDNN."""
    return False


def version() -> Optional[int]:
    """None: no cuDNN is loaded."""
    return None
