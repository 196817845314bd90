"""`Work`: the handle an ``async_op=True`` collective returns."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

__all__ = ["InFlight", "Work"]


class Work:
    """A collective or point-to-point operation that may still be running (torch's ``Work``).

    ``wait()`` blocks until it has completed and its results are in the output tensors;
    ``is_completed()`` asks without blocking. The tensors the operation reads or writes must
    not be read or changed before ``wait()`` (or ``is_completed()``) says it is done: the
    Work keeps their buffers alive until then.

    Example::

        >>> from rustgrad import distributed as dist
        >>> dist.init_process_group("mpi")
        >>> t = torch.ones(3)
        >>> work = dist.all_reduce(t, async_op=True)
        >>> work.wait()
        True
        >>> work.is_completed(), t
        (True, tensor([1., 1., 1.]))
        >>> dist.destroy_process_group()
    """

    __slots__ = ("_wait", "_test", "_finish", "_result", "_done", "_what", "_timeout",
                 "_watchdog", "_source", "_keep")

    def __init__(self, what: str = "", *, wait: Optional[Callable[[], Any]] = None,
                 test: Optional[Callable[[], bool]] = None,
                 finish: Sequence[Callable[[], Any]] = (), result: Sequence[Any] = (),
                 timeout: Optional[float] = None, watchdog: Any = None,
                 keep: Any = None) -> None:
        self._what = what
        self._wait, self._test = wait, test
        self._finish: List[Callable[[], Any]] = list(finish)
        self._result = list(result)
        self._timeout, self._watchdog = timeout, watchdog
        self._keep = keep  # arrays the backend reads or writes until completion
        self._source: Optional[int] = None
        self._done = wait is None
        if self._done:
            self._complete()

    def _complete(self) -> None:
        self._done = True
        finish, self._finish = self._finish, []
        for f in finish:
            out = f()
            if isinstance(out, int):  # a recv's finish names the sender's global rank
                self._source = out
        self._wait = self._test = None
        self._keep = None

    def wait(self, timeout: Any = None) -> bool:
        """Blocks until the operation has completed and its outputs are written; returns True.

        Args:
            timeout (datetime.timedelta, optional): abort the job if it takes longer (default:
                the group's timeout).
        """
        if self._done:
            return True
        limit = self._timeout if timeout is None else _seconds(timeout)
        wd = self._watchdog
        if wd is not None:
            wd.arm(self._what, limit)
        try:
            assert self._wait is not None
            self._wait()
        finally:
            if wd is not None:
                wd.disarm()
        self._complete()
        return True

    def is_completed(self) -> bool:
        """Whether the operation has completed (then its outputs are written); never blocks."""
        if not self._done and self._test is not None and self._test():
            self._complete()
        return self._done

    def is_success(self) -> bool:
        """Whether the operation completed without error (it raises otherwise)."""
        return self.is_completed()

    def exception(self) -> None:
        """The error of a failed operation: none here (a failed collective ends the job)."""
        return None

    def synchronize(self) -> None:
        """Waits for the operation (torch's synchronize on CPU backends)."""
        self.wait()

    def result(self) -> List[Any]:
        """The output tensors of the operation (after waiting for it)."""
        self.wait()
        return list(self._result)

    def source_rank(self) -> int:
        """The global rank a completed ``irecv`` from any source received from."""
        self.wait()
        if self._source is None:
            raise RuntimeError("source_rank() is only available for a recv from any source")
        return self._source

    def __repr__(self) -> str:
        state = "completed" if self._done else "pending"
        return f"<Work {self._what} {state}>"


class InFlight:
    """The async Works a backend started and nobody has seen complete: holding them keeps
    their buffers alive even when the caller drops a Work without waiting (as torch, the
    operation still runs to its end). Completed ones are let go as new ones start."""

    __slots__ = ("works",)

    def __init__(self) -> None:
        self.works: List[Work] = []

    def add(self, work: Work) -> None:
        """Holds ``work`` until it is seen complete."""
        if work._done:
            return
        works = self.works
        if len(works) >= 32:  # asking completes those done, whoever holds them
            works[:] = [w for w in works if not w.is_completed()]
        works.append(work)


def _seconds(timeout: Any) -> Optional[float]:
    if timeout is None:
        return None
    if hasattr(timeout, "total_seconds"):
        return float(timeout.total_seconds())
    return float(timeout)
