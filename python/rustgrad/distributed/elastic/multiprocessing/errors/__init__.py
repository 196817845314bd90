"""``record``: the decorator torchrun's docs put on a script's entry point. An exception it
lets through is written, as torchelastic's JSON error file, to ``TORCHELASTIC_ERROR_FILE``
when that is set, then re-raised unchanged."""

from __future__ import annotations

import functools
import json
import os
import time
import traceback
from typing import Any, Callable, Optional, TypeVar

__all__ = ["record"]

_R = TypeVar("_R")


def _write_error_file(e: BaseException) -> None:
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path:
        return
    data = {"message": {"message": f"{type(e).__name__}: {e}",
                        "extraInfo": {"py_callstack": traceback.format_exc(),
                                      "timestamp": str(int(time.time()))}}}
    with open(path, "w") as f:
        json.dump(data, f)


def record(fn: Callable[..., _R], error_handler: Any = None) -> Callable[..., Optional[_R]]:
    """Wraps ``fn`` so an exception it raises is recorded, then re-raised unchanged
    (torchelastic's ``record``); ``SystemExit(0)`` returns None, as torch's.

    Args:
        fn (callable): the entry point, usually ``main``.
        error_handler: accepted for torch compatibility; the error file is always
            ``TORCHELASTIC_ERROR_FILE``'s.

    Example::

        >>> from rustgrad.distributed.elastic.multiprocessing.errors import record
        >>> @record
        ... def main():
        ...     return 3
        >>> main()
        3
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Optional[_R]:
        try:
            return fn(*args, **kwargs)
        except SystemExit as e:
            if e.code == 0:
                return None
            raise
        except Exception as e:
            _write_error_file(e)
            raise

    return wrapper
