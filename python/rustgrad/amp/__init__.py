"""rustgrad.amp: torch's automatic mixed precision: `autocast` regions, in which the ops of
torch's autocast lists cast their inputs (bfloat16 on the cpu through the optional `ml_dtypes`
package, float16 on cuda), and `GradScaler`'s loss scaling; see the two modules.

The module-level functions torch has at ``torch.*`` (``set_autocast_enabled``,
``get_autocast_dtype``, the deprecated ``get_autocast_gpu_dtype``, ...) are in
`rustgrad.amp.autocast_mode`.
"""

from __future__ import annotations

from . import _cuda_amp  # noqa: F401  (sets rustgrad.cuda.amp)
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
