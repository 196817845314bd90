"""The watchdog: a blocking collective (or `Work.wait()`) past the group's timeout ends the job.

One daemon thread per process, started by the first guarded wait with a timeout. Arming it
costs the waiting thread two attribute writes: the thread polls the deadline instead of being
woken, so an op that completes in time pays no lock or notify.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, Optional

__all__ = ["Watchdog"]


class Watchdog:
    """Aborts the job (``abort()``) with torch's timeout message when an armed wait overruns."""

    def __init__(self, rank: int, abort: Callable[[], None]) -> None:
        self.rank = rank
        self.abort = abort
        self._deadline: Optional[float] = None
        self._what = ""
        self._timeout_s = 0.0
        self._started = 0.0
        self._thread: Optional[threading.Thread] = None
        self._stop = False

    def arm(self, what: str, timeout_s: Optional[float]) -> None:
        """Expect the wait for ``what`` to end within ``timeout_s`` seconds (None: forever)."""
        if timeout_s is None:
            return
        now = time.monotonic()
        self._what, self._timeout_s, self._started = what, timeout_s, now
        self._deadline = now + timeout_s
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="rustgrad-dist-watchdog",
                                            daemon=True)
            self._thread.start()

    def disarm(self) -> None:
        """The armed wait has ended."""
        self._deadline = None

    def stop(self) -> None:
        """Ends the thread (destroy_process_group)."""
        self._stop, self._deadline = True, None

    def _watch(self) -> None:
        while not self._stop:
            deadline = self._deadline
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                ms = int(self._timeout_s * 1000)
                ran = int((now - self._started) * 1000)
                print(f"[Rank {self.rank}] Watchdog caught collective operation timeout: "
                      f"Work(OpType={self._what}, Timeout(ms)={ms}) ran for {ran} milliseconds "
                      "before timing out.", file=sys.stderr, flush=True)
                time.sleep(0.2)  # for mpiexec to pass the line on before it ends the job
                self.abort()
                return
            wait = 1.0 if deadline is None else min(1.0, max(deadline - now, 0.001))
            time.sleep(wait)
