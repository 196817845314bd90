"""``rustgrad.multiprocessing``: torch.multiprocessing's names (the standard library's
``multiprocessing``, re-exported) plus ``spawn``."""

from __future__ import annotations

from multiprocessing import *  # noqa: F401,F403  (torch.multiprocessing re-exports them too)
from multiprocessing import __all__ as _std_all

__all__ = list(_std_all)
