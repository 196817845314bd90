"""rustgrad.amp: torch's automatic mixed precision API (GradScaler, autocast); see the two
modules for how much of it rustgrad can honour.

GradScaler's loss scaling is computed for real (on the cpu, and on cuda with a GPU). autocast
cannot be honoured, since rustgrad runs each op in its inputs' dtype: a disabled region is a
no-op, and a region torch would autocast raises a RuntimeError rather than silently computing
in float32. To train in half precision, cast the model and inputs explicitly.
"""

from __future__ import annotations

from .autocast_mode import (
    autocast,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
)
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "get_autocast_dtype",
           "is_autocast_available", "is_autocast_enabled"]
