"""rustgrad.backends.opt_einsum: einsum contraction-order flags (einsum uses NumPy's own)."""

from __future__ import annotations

from typing import Optional

enabled: bool = False
strategy: Optional[str] = None


def is_available() -> bool:
    """False: rustgrad's einsum does not call the opt_einsum package."""
    return False


def get_opt_einsum() -> None:
    """None: the opt_einsum package is not used."""
    return None
