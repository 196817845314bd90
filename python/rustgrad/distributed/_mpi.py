"""The MPI backend: collectives on host (NumPy) buffers through mpi4py.

Every operation starts MPI's nonblocking form (``Iallreduce``, ``Ibcast``, ...) and returns a
`Work`; a blocking call is the same Work waited at once under the watchdog. Tensors on a GPU
are staged through host memory. mpi4py is imported here only, on ``init_process_group``.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, List, Optional, Sequence

import numpy as np
from mpi4py import MPI

from ._buffers import stage, write_into
from ._reduce_op import RedOpType
from ._watchdog import Watchdog
from ._work import InFlight, Work

__all__ = ["MPIBackend", "abort_world", "install_excepthook", "restore_excepthook", "world"]

_OPS = {RedOpType.SUM: MPI.SUM, RedOpType.AVG: MPI.SUM, RedOpType.PRODUCT: MPI.PROD,
        RedOpType.MIN: MPI.MIN, RedOpType.MAX: MPI.MAX, RedOpType.BAND: MPI.BAND,
        RedOpType.BOR: MPI.BOR, RedOpType.BXOR: MPI.BXOR}
# bool tensors travel as bytes: SUM is a logical or and PRODUCT a logical and (torch's NCCL)
_BOOL_OPS = {RedOpType.SUM: MPI.MAX, RedOpType.MAX: MPI.MAX, RedOpType.PRODUCT: MPI.MIN,
             RedOpType.MIN: MPI.MIN, RedOpType.BAND: MPI.BAND, RedOpType.BOR: MPI.BOR,
             RedOpType.BXOR: MPI.BXOR}


def world() -> Any:
    """MPI's world communicator (MPI is initialised by importing this module)."""
    return MPI.COMM_WORLD


def abort_world() -> None:
    """Ends every rank of the job."""
    MPI.COMM_WORLD.Abort(1)


_previous_hook: Optional[Callable[..., Any]] = None


def install_excepthook() -> None:
    """An uncaught exception on one rank prints its traceback, then ends the whole job, so the
    other ranks do not wait forever in their next collective."""
    global _previous_hook
    if _previous_hook is not None:
        return
    _previous_hook = sys.excepthook

    def hook(kind: Any, value: Any, tb: Any) -> None:
        assert _previous_hook is not None
        _previous_hook(kind, value, tb)
        sys.stderr.flush()
        sys.stdout.flush()
        time.sleep(0.2)  # for mpiexec to pass the traceback on before it ends the job
        abort_world()

    sys.excepthook = hook


def restore_excepthook() -> None:
    """Undoes install_excepthook (destroy_process_group)."""
    global _previous_hook
    if _previous_hook is not None:
        sys.excepthook, _previous_hook = _previous_hook, None


# torch's names of the dtypes an average cannot be written back into
_SCALAR_NAMES = {"b": "Bool", "i1": "Char", "i2": "Short", "i4": "Int", "i8": "Long",
                 "u1": "Byte", "u2": "UInt16", "u4": "UInt32", "u8": "UInt64"}


def _mpi_buffer(a: np.ndarray, op: RedOpType) -> tuple:
    """The array as MPI sees it and the MPI op for ``op`` on its dtype."""
    if op == RedOpType.AVG and a.dtype.kind in "biu":  # torch's gloo: no integer averages
        name = _SCALAR_NAMES.get(f"{a.dtype.kind}{a.dtype.itemsize}" if a.dtype.kind != "b"
                                 else "b", str(a.dtype))
        raise RuntimeError(f"result type Float can't be cast to the desired output type {name}")
    if a.dtype == np.bool_:
        return a.view(np.uint8), _BOOL_OPS[op]
    if op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR) and a.dtype.kind not in "iu":
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    if op not in _OPS:
        raise RuntimeError(f"ReduceOp.{op.name} is not supported by the MPI backend")
    return a, _OPS[op]


def _average(a: np.ndarray, n: int) -> Callable[[], None]:
    def divide() -> None:
        np.true_divide(a, n, out=a)
    return divide


class MPIBackend:
    """One process group's communicator and the operations on it."""

    name = "mpi"

    def __init__(self, comm: Any, timeout: Optional[float], watchdog: Watchdog) -> None:
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout
        self.watchdog = watchdog
        self.global_ranks: List[int] = []  # set by the process group
        self.inflight = InFlight()

    # ---- plumbing -----------------------------------------------------------------------
    def _work(self, what: str, requests: List[Any], finish: Sequence[Callable[[], Any]],
              result: Sequence[Any], keep: Any, async_op: bool,
              statuses: Optional[List[Any]] = None) -> Work:
        def wait() -> None:
            MPI.Request.Waitall(requests, statuses)

        def test() -> bool:
            return bool(MPI.Request.Testall(requests, statuses))

        work = Work(what, wait=wait, test=test, finish=finish, result=result,
                    timeout=self.timeout, watchdog=self.watchdog, keep=keep)
        if async_op:
            self.inflight.add(work)
        else:
            work.wait()
        return work

    # ---- collectives --------------------------------------------------------------------
    def allreduce(self, t: Any, op: RedOpType, async_op: bool) -> Work:
        s = stage(t, host=True)
        buf, mop = _mpi_buffer(s.array, op)
        req = self.comm.Iallreduce(MPI.IN_PLACE, buf, mop)
        finish: List[Callable[[], Any]] = []
        if op == RedOpType.AVG:
            finish.append(_average(s.array, self.size))
        finish.append(s.writeback)
        return self._work("ALLREDUCE", [req], finish, [t], s, async_op)

    def broadcast(self, t: Any, root: int, async_op: bool) -> Work:
        s = stage(t, host=True)
        req = self.comm.Ibcast(_raw(s.array), root)
        finish = [s.writeback] if self.rank != root else []
        return self._work("BROADCAST", [req], finish, [t], s, async_op)

    def reduce(self, t: Any, root: int, op: RedOpType, async_op: bool) -> Work:
        s = stage(t, host=True)
        buf, mop = _mpi_buffer(s.array, op)
        finish: List[Callable[[], Any]] = []
        if self.rank == root:
            req = self.comm.Ireduce(MPI.IN_PLACE, buf, mop, root)
            if op == RedOpType.AVG:
                finish.append(_average(s.array, self.size))
            finish.append(s.writeback)
        else:
            req = self.comm.Ireduce(buf, None, mop, root)
        return self._work("REDUCE", [req], finish, [t], s, async_op)

    def allgather(self, outputs: Sequence[Any], t: Any, async_op: bool) -> Work:
        s = stage(t, host=True)
        recv = np.empty((self.size, s.array.size), s.array.dtype)
        req = self.comm.Iallgather(_raw(s.array), _raw(recv))

        def scatter_out() -> None:
            for i, out in enumerate(outputs):
                write_into(out, recv[i])
        return self._work("ALLGATHER", [req], [scatter_out], [list(outputs)], (s, recv),
                          async_op)

    def allgather_into(self, output: Any, t: Any, async_op: bool) -> Work:
        s = stage(t, host=True)
        o = stage(output, host=True)
        req = self.comm.Iallgather(_raw(s.array), _raw(o.array))
        return self._work("_ALLGATHER_BASE", [req], [o.writeback], [output], (s, o), async_op)

    def reduce_scatter(self, output: Any, t: Any, op: RedOpType, async_op: bool) -> Work:
        s = stage(t, host=True)
        o = stage(output, host=True)
        sbuf, mop = _mpi_buffer(s.array, op)
        obuf, _ = _mpi_buffer(o.array, op)
        req = self.comm.Ireduce_scatter_block(sbuf, obuf, mop)
        finish: List[Callable[[], Any]] = []
        if op == RedOpType.AVG:
            finish.append(_average(o.array, self.size))
        finish.append(o.writeback)
        return self._work("_REDUCE_SCATTER_BASE", [req], finish, [output], (s, o), async_op)

    def gather(self, t: Any, outputs: Optional[Sequence[Any]], root: int,
               async_op: bool) -> Work:
        s = stage(t, host=True)
        if self.rank != root:
            req = self.comm.Igather(_raw(s.array), None, root)
            return self._work("GATHER", [req], [], [], s, async_op)
        recv = np.empty((self.size, s.array.size), s.array.dtype)
        req = self.comm.Igather(_raw(s.array), _raw(recv), root)

        def scatter_out() -> None:
            for i, out in enumerate(outputs or ()):
                write_into(out, recv[i])
        return self._work("GATHER", [req], [scatter_out], [list(outputs or ())], (s, recv),
                          async_op)

    def scatter(self, t: Any, inputs: Optional[Sequence[Any]], root: int,
                async_op: bool) -> Work:
        o = stage(t, host=True)
        send = None
        if self.rank == root:
            send = np.empty((self.size, o.array.size), o.array.dtype)
            for i, x in enumerate(inputs or ()):
                send[i] = stage(x, host=True).array
        req = self.comm.Iscatter(None if send is None else _raw(send), _raw(o.array), root)
        return self._work("SCATTER", [req], [o.writeback], [t], (o, send), async_op)

    def alltoall(self, output: Any, t: Any, out_counts: Sequence[int],
                 in_counts: Sequence[int], async_op: bool) -> Work:
        """all_to_all_single: block i of t (in_counts[i] elements) to rank i; output gets
        rank i's block for this rank at its i-th place (out_counts[i] elements)."""
        s, o = stage(t, host=True), stage(output, host=True)
        send = [_raw(s.array), (list(in_counts), _offsets(in_counts))]
        recv = [_raw(o.array), (list(out_counts), _offsets(out_counts))]
        req = self.comm.Ialltoallv(send, recv)
        return self._work("ALLTOALL_BASE", [req], [o.writeback], [output], (s, o), async_op)

    def barrier(self, async_op: bool) -> Work:
        return self._work("BARRIER", [self.comm.Ibarrier()], [], [], None, async_op)

    def send(self, t: Any, dst: int, tag: int, async_op: bool) -> Work:
        s = stage(t, host=True)
        req = self.comm.Isend(_raw(s.array), dst, tag)
        return self._work("SEND", [req], [], [t], s, async_op)

    def recv(self, t: Any, src: Optional[int], tag: int, async_op: bool) -> Work:
        s = stage(t, host=True)
        source = MPI.ANY_SOURCE if src is None else src
        req = self.comm.Irecv(_raw(s.array), source, tag)
        status = MPI.Status()
        ranks = self.global_ranks

        def sender() -> int:
            s.writeback()
            return ranks[status.Get_source()]
        return self._work("RECV", [req], [sender], [t], s, async_op, statuses=[status])

    # ---- groups and objects ---------------------------------------------------------------
    def split(self, ranks: Sequence[int], timeout: Optional[float]) -> Optional[MPIBackend]:
        """The backend of a new group of these (this group's) ranks; None on the others.
        Every rank of this group calls it, as MPI's Comm_split needs."""
        me = self.rank
        color = 0 if me in ranks else MPI.UNDEFINED
        key = list(ranks).index(me) if me in ranks else 0
        comm = self.comm.Split(color, key)
        if comm == MPI.COMM_NULL:
            return None
        return MPIBackend(comm, timeout, self.watchdog)

    def bcast_object(self, obj: Any, root: int) -> Any:
        """A picklable object from root to every rank."""
        self.watchdog.arm("BROADCAST", self.timeout)
        try:
            return self.comm.bcast(obj, root)
        finally:
            self.watchdog.disarm()

    def allgather_fingerprint(self, row: np.ndarray, what: str) -> np.ndarray:
        """Every rank's `row` (int64, the same length on every rank) as the rows of an array,
        in rank order: the cross-rank check of collective `what` (_checks.py), whose name the
        watchdog gives if it hangs."""
        rows = np.empty((self.size, row.size), np.int64)
        self.watchdog.arm(what, self.timeout)
        try:
            self.comm.Allgather(np.ascontiguousarray(row, np.int64), rows)
        finally:
            self.watchdog.disarm()
        return rows

    def allgather_object(self, obj: Any, what: str = "ALLGATHER") -> List[Any]:
        """Every rank's picklable object, in rank order."""
        self.watchdog.arm(what, self.timeout)
        try:
            return list(self.comm.allgather(obj))
        finally:
            self.watchdog.disarm()

    def gather_object(self, obj: Any, root: int) -> Optional[List[Any]]:
        """Every rank's picklable object on root, in rank order (None elsewhere)."""
        self.watchdog.arm("GATHER", self.timeout)
        try:
            gathered = self.comm.gather(obj, root)
        finally:
            self.watchdog.disarm()
        return None if gathered is None else list(gathered)

    def destroy(self) -> None:
        """Completes the Works still in flight, then frees the communicator (not the world's)."""
        works, self.inflight.works = self.inflight.works, []
        for w in works:
            w.wait()
        if self.comm != MPI.COMM_WORLD and self.comm != MPI.COMM_NULL:
            self.comm.Free()


def _offsets(counts: Sequence[int]) -> List[int]:
    out, at = [], 0
    for c in counts:
        out.append(at)
        at += c
    return out


def _raw(a: np.ndarray) -> Any:
    """A buffer MPI reduces nothing on: bools travel as bytes (MPI has no ops on C_BOOL to pick
    and some MPIs lack the type)."""
    return a.view(np.uint8) if a.dtype == np.bool_ else a
