"""rustgrad.backends.mkldnn: oneDNN flags (recorded; rustgrad's cpu kernels are NumPy's)."""

from __future__ import annotations

enabled: bool = True


def is_available() -> bool:
    """False: rustgrad does not call oneDNN."""
    return False
