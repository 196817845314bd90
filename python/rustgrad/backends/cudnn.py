"""rustgrad.backends.cudnn: cuDNN flags (recorded; rustgrad calls no cuDNN)."""

from __future__ import annotations

import contextlib
import sys
from typing import Iterator, Optional

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


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10,
          deterministic: bool = False, allow_tf32: bool = True,
          fp32_precision: str = "none") -> Iterator[None]:
    """The cuDNN flags set for the duration of a with block, then restored.

    Args:
        enabled, benchmark, benchmark_limit, deterministic, allow_tf32: the values the module's
            flags of those names take inside the block.
        fp32_precision (str): accepted for torch compatibility.
    """
    mod = sys.modules[__name__]
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    old = {n: getattr(mod, n) for n in names}
    new = (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)
    for n, v in zip(names, new):
        setattr(mod, n, v)
    try:
        yield
    finally:
        for n, v in old.items():
            setattr(mod, n, v)
