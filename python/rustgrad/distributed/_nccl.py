"""The NCCL backend: collectives on CUDA tensors through CuPy's NCCL bindings.

The communicator of a group is made at the group's first collective on a CUDA tensor, on
that tensor's GPU (so ``torch.cuda.set_device(local_rank)`` may come after
``init_process_group``, as in torch), from a unique id that rank 0 sends over the group's MPI
communicator. Operations run on a communication stream of their own: each waits for the
work already queued on the current stream, and ``Work.wait()`` makes the current stream wait
for it, without blocking the host (torch's NCCL semantics), so communication overlaps the
kernels queued after it. CPU tensors go to the MPI backend, as torch's default
``"cpu:gloo,cuda:nccl"`` sends them to gloo.

CuPy is imported when the first NCCL collective runs, never at import.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

from .._creation import ones
from ._buffers import stage, write_into
from ._reduce_op import RedOpType
from ._work import Work

__all__ = ["NCCLBackend"]


def _cupy() -> Any:
    import cupy  # optional dependency

    return cupy


def _nccl() -> Any:
    from cupy.cuda import nccl  # optional dependency

    return nccl


def _dtype_code(a: Any) -> int:
    nccl = _nccl()
    codes = {"float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32,
             "float64": nccl.NCCL_FLOAT64, "int8": nccl.NCCL_INT8, "uint8": nccl.NCCL_UINT8,
             "int32": nccl.NCCL_INT32, "int64": nccl.NCCL_INT64}
    name = str(a.dtype)
    if name not in codes:
        raise RuntimeError(f"the NCCL backend does not support tensors of dtype {name}")
    return codes[name]


def _wire(a: Any) -> Any:
    """The array as NCCL moves it: bools as bytes, complex numbers as pairs of reals."""
    cp = _cupy()
    if a.dtype == cp.bool_:
        return a.view(cp.uint8)
    if a.dtype.kind == "c":
        return a.view(cp.float32 if a.dtype == cp.complex64 else cp.float64)
    return a


def _op_code(a: Any, op: RedOpType) -> int:
    nccl = _nccl()
    if a.dtype.kind == "b":
        if op == RedOpType.AVG:
            raise RuntimeError("Cannot use ReduceOp.AVG with boolean inputs")
        op = {RedOpType.SUM: RedOpType.MAX, RedOpType.PRODUCT: RedOpType.MIN}.get(op, op)
    if a.dtype.kind == "c" and op not in (RedOpType.SUM, RedOpType.AVG):
        raise RuntimeError(f"ReduceOp.{op.name} is not supported for complex tensors")
    codes = {RedOpType.SUM: nccl.NCCL_SUM, RedOpType.AVG: nccl.NCCL_SUM,
             RedOpType.PRODUCT: nccl.NCCL_PROD, RedOpType.MIN: nccl.NCCL_MIN,
             RedOpType.MAX: nccl.NCCL_MAX}
    if op not in codes:
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with NCCL")
    return codes[op]


def _average(a: Any, n: int) -> Callable[[], None]:
    def divide() -> None:
        cp = _cupy()
        if a.dtype.kind in "iu":  # truncating, as NCCL's integer average does
            a[...] = cp.sign(a) * (cp.abs(a) // n)
        else:
            cp.true_divide(a, n, out=a)
    return divide


class NCCLBackend:
    """One process group's NCCL communicator (made lazily) over its MPI communicator."""

    name = "nccl"

    def __init__(self, mpi: Any, device_id: Any = None) -> None:
        self.mpi = mpi  # the MPI backend of the same ranks: ids, objects, CPU tensors
        self.rank, self.size = mpi.rank, mpi.size
        self.timeout, self.watchdog = mpi.timeout, mpi.watchdog
        self.global_ranks: List[int] = []
        self._device: Optional[int] = None
        self._device_type = "cuda"
        self._comm: Any = None
        self._stream: Any = None
        index = getattr(device_id, "index", device_id)
        if index is not None:  # torch's device_id=: bind the communicator now
            self._communicator(int(index))

    def _communicator(self, index: int) -> Any:
        if self._comm is not None:
            if index != self._device:
                raise RuntimeError(
                    f"this process group's NCCL communicator is on cuda:{self._device}, the "
                    f"tensor on cuda:{index}: one GPU per rank (torch.cuda.set_device("
                    "local_rank) before the first collective)")
            return self._comm
        cp, nccl = _cupy(), _nccl()
        uid = self.mpi.bcast_object(nccl.get_unique_id() if self.rank == 0 else None, 0)
        with cp.cuda.Device(index):
            self._comm = nccl.NcclCommunicator(self.size, uid, self.rank)
            self._stream = cp.cuda.Stream(non_blocking=True)
        self._device = index
        return self._comm

    def _launch(self, what: str, tensors: Sequence[Any], body: Callable[[Any, Any], None],
                finish: Sequence[Callable[[], Any]], result: Sequence[Any], keep: Any,
                async_op: bool) -> Work:
        """Runs ``body(comm, stream)`` on the communication stream after the current
        stream's queued work; the Work's wait() orders the current stream after it."""
        cp = _cupy()
        index = tensors[0].device.index or 0
        self._device_type = tensors[0].device.type
        comm = self._communicator(index)
        with cp.cuda.Device(index):
            current = cp.cuda.get_current_stream()
            self._stream.wait_event(current.record())
            body(comm, self._stream)
            done = self._stream.record()

        def wait() -> None:
            with cp.cuda.Device(index):
                cp.cuda.get_current_stream().wait_event(done)

        work = Work(what, wait=wait, test=lambda: bool(done.done), finish=finish, result=result,
                    timeout=None, watchdog=None, keep=keep)
        if async_op:
            self.mpi.inflight.add(work)
        else:
            work.wait()
        return work

    def _dispatch(self, name: str, t: Any, *args: Any) -> Work:
        """CPU tensors to the MPI backend; CUDA ones to ``_<name>`` on their GPU."""
        if t.device.type == "cpu":
            return getattr(self.mpi, name)(*args)
        with _cupy().cuda.Device(t.device.index or 0):
            return getattr(self, "_" + name)(*args)

    # ---- the operations (the collectives layer's interface, as MPIBackend's) --------------
    def allreduce(self, t: Any, op: RedOpType, async_op: bool) -> Work:
        """all_reduce of t, in place."""
        return self._dispatch("allreduce", t, t, op, async_op)

    def broadcast(self, t: Any, root: int, async_op: bool) -> Work:
        """broadcast of t from the group's rank root."""
        return self._dispatch("broadcast", t, t, root, async_op)

    def reduce(self, t: Any, root: int, op: RedOpType, async_op: bool) -> Work:
        """reduce of t into t on the group's rank root."""
        return self._dispatch("reduce", t, t, root, op, async_op)

    def allgather(self, outputs: Sequence[Any], t: Any, async_op: bool) -> Work:
        """all_gather of t into outputs."""
        return self._dispatch("allgather", t, outputs, t, async_op)

    def allgather_into(self, output: Any, t: Any, async_op: bool) -> Work:
        """all_gather_into_tensor of t into output."""
        return self._dispatch("allgather_into", t, output, t, async_op)

    def reduce_scatter(self, output: Any, t: Any, op: RedOpType, async_op: bool) -> Work:
        """reduce_scatter_tensor of t into output."""
        return self._dispatch("reduce_scatter", t, output, t, op, async_op)

    def gather(self, t: Any, outputs: Optional[Sequence[Any]], root: int,
               async_op: bool) -> Work:
        """gather of t into outputs on the group's rank root."""
        return self._dispatch("gather", t, t, outputs, root, async_op)

    def scatter(self, t: Any, inputs: Optional[Sequence[Any]], root: int,
                async_op: bool) -> Work:
        """scatter of inputs on the group's rank root into t."""
        return self._dispatch("scatter", t, t, inputs, root, async_op)

    def alltoall(self, output: Any, t: Any, out_counts: Sequence[int],
                 in_counts: Sequence[int], async_op: bool) -> Work:
        """all_to_all_single of t into output (element counts per rank)."""
        return self._dispatch("alltoall", t, output, t, out_counts, in_counts, async_op)

    def send(self, t: Any, dst: int, tag: int, async_op: bool) -> Work:
        """send of t to the group's rank dst."""
        return self._dispatch("send", t, t, dst, tag, async_op)

    def recv(self, t: Any, src: Optional[int], tag: int, async_op: bool) -> Work:
        """recv into t from the group's rank src."""
        return self._dispatch("recv", t, t, src, tag, async_op)

    # ---- on a GPU -----------------------------------------------------------------------
    def _allreduce(self, t: Any, op: RedOpType, async_op: bool) -> Work:
        s = stage(t, host=False)
        a = _wire(s.array)
        code, dtype = _op_code(s.array, op), _dtype_code(a)

        def body(comm: Any, stream: Any) -> None:
            comm.allReduce(a.data.ptr, a.data.ptr, a.size, dtype, code, stream.ptr)
        finish: List[Callable[[], Any]] = []
        if op == RedOpType.AVG:
            finish.append(_average(s.array, self.size))
        finish.append(s.writeback)
        return self._launch("ALLREDUCE", [t], body, finish, [t], s, async_op)

    def _broadcast(self, t: Any, root: int, async_op: bool) -> Work:
        s = stage(t, host=False)
        a = _wire(s.array)
        dtype = _dtype_code(a)

        def body(comm: Any, stream: Any) -> None:
            comm.broadcast(a.data.ptr, a.data.ptr, a.size, dtype, root, stream.ptr)
        finish = [s.writeback] if self.rank != root else []
        return self._launch("BROADCAST", [t], body, finish, [t], s, async_op)

    def _reduce(self, t: Any, root: int, op: RedOpType, async_op: bool) -> Work:
        s = stage(t, host=False)
        a = _wire(s.array)
        code, dtype = _op_code(s.array, op), _dtype_code(a)
        if self.rank == root:  # the others keep their values, as with MPI
            out = a
        else:
            out = _cupy().empty_like(a)

        def body(comm: Any, stream: Any) -> None:
            comm.reduce(a.data.ptr, out.data.ptr, a.size, dtype, code, root, stream.ptr)
        finish: List[Callable[[], Any]] = []
        if self.rank == root:
            if op == RedOpType.AVG:
                finish.append(_average(s.array, self.size))
            finish.append(s.writeback)
        return self._launch("REDUCE", [t], body, finish, [t], (s, out), async_op)

    def _allgather(self, outputs: Sequence[Any], t: Any, async_op: bool) -> Work:
        s = stage(t, host=False)
        a = _wire(s.array)
        dtype = _dtype_code(a)
        recv = _cupy().empty((self.size, s.array.size), s.array.dtype)
        r = _wire(recv)

        def body(comm: Any, stream: Any) -> None:
            comm.allGather(a.data.ptr, r.data.ptr, a.size, dtype, stream.ptr)

        def scatter_out() -> None:
            for i, out in enumerate(outputs):
                write_into(out, recv[i])
        return self._launch("ALLGATHER", [t], body, [scatter_out], [list(outputs)], (s, recv),
                            async_op)

    def _allgather_into(self, output: Any, t: Any, async_op: bool) -> Work:
        s, o = stage(t, host=False), stage(output, host=False)
        a, r = _wire(s.array), _wire(o.array)
        dtype = _dtype_code(a)

        def body(comm: Any, stream: Any) -> None:
            comm.allGather(a.data.ptr, r.data.ptr, a.size, dtype, stream.ptr)
        return self._launch("_ALLGATHER_BASE", [t], body, [o.writeback], [output], (s, o),
                            async_op)

    def _reduce_scatter(self, output: Any, t: Any, op: RedOpType, async_op: bool) -> Work:
        s, o = stage(t, host=False), stage(output, host=False)
        a, r = _wire(s.array), _wire(o.array)
        code, dtype = _op_code(s.array, op), _dtype_code(a)

        def body(comm: Any, stream: Any) -> None:
            comm.reduceScatter(a.data.ptr, r.data.ptr, r.size, dtype, code, stream.ptr)
        finish: List[Callable[[], Any]] = []
        if op == RedOpType.AVG:
            finish.append(_average(o.array, self.size))
        finish.append(o.writeback)
        return self._launch("_REDUCE_SCATTER_BASE", [t], body, finish, [output], (s, o),
                            async_op)

    def _gather(self, t: Any, outputs: Optional[Sequence[Any]], root: int,
               async_op: bool) -> Work:
        nccl = _nccl()
        s = stage(t, host=False)
        a = _wire(s.array)
        dtype = _dtype_code(a)
        recv = (_cupy().empty((self.size, s.array.size), s.array.dtype)
                if self.rank == root else None)
        me, size = self.rank, self.size

        def body(comm: Any, stream: Any) -> None:
            nccl.groupStart()
            try:
                if recv is None:
                    comm.send(a.data.ptr, a.size, dtype, root, stream.ptr)
                    return
                r = _wire(recv)
                for peer in range(size):
                    if peer != me:
                        comm.recv(r[peer].data.ptr, a.size, dtype, peer, stream.ptr)
            finally:
                nccl.groupEnd()
            _copy_on(stream, r[me], a)

        def scatter_out() -> None:
            if recv is not None:
                for i, out in enumerate(outputs or ()):
                    write_into(out, recv[i])
        return self._launch("GATHER", [t], body, [scatter_out], [list(outputs or ())],
                            (s, recv), async_op)

    def _scatter(self, t: Any, inputs: Optional[Sequence[Any]], root: int,
                async_op: bool) -> Work:
        nccl = _nccl()
        o = stage(t, host=False)
        r = _wire(o.array)
        dtype = _dtype_code(r)
        send = None
        if self.rank == root:
            send = _cupy().stack([stage(x, host=False).array for x in inputs or ()])
        me, size = self.rank, self.size

        def body(comm: Any, stream: Any) -> None:
            nccl.groupStart()
            try:
                if send is None:
                    comm.recv(r.data.ptr, r.size, dtype, root, stream.ptr)
                    return
                w = _wire(send)
                for peer in range(size):
                    if peer != me:
                        comm.send(w[peer].data.ptr, r.size, dtype, peer, stream.ptr)
            finally:
                nccl.groupEnd()
            _copy_on(stream, r, _wire(send)[me])
        return self._launch("SCATTER", [t], body, [o.writeback], [t], (o, send), async_op)

    def _alltoall(self, output: Any, t: Any, out_counts: Sequence[int],
                  in_counts: Sequence[int], async_op: bool) -> Work:
        nccl = _nccl()
        s, o = stage(t, host=False), stage(output, host=False)
        a, r = _wire(s.array), _wire(o.array)
        dtype = _dtype_code(a)
        per = a.size // max(s.array.size, 1) if s.array.size else 1  # complex: 2 reals each
        me = self.rank

        def block(x: Any, counts: Sequence[int], i: int) -> Any:
            start = sum(counts[:i]) * per
            return x[start:start + counts[i] * per]

        def body(comm: Any, stream: Any) -> None:
            nccl.groupStart()
            try:
                for peer in range(self.size):
                    if peer == me:
                        continue
                    if in_counts[peer]:
                        x = block(a, in_counts, peer)
                        comm.send(x.data.ptr, x.size, dtype, peer, stream.ptr)
                    if out_counts[peer]:
                        y = block(r, out_counts, peer)
                        comm.recv(y.data.ptr, y.size, dtype, peer, stream.ptr)
            finally:
                nccl.groupEnd()
            _copy_on(stream, block(r, out_counts, me), block(a, in_counts, me))
        return self._launch("ALLTOALL_BASE", [t], body, [o.writeback], [output], (s, o),
                            async_op)

    def barrier(self, async_op: bool) -> Work:
        """Every rank meets: an all_reduce of one number on the GPU, waited by the host."""
        if self._comm is None:  # no GPU chosen yet: the ranks meet over MPI
            return self.mpi.barrier(async_op)

        flag = ones(1, device=f"{self._device_type}:{self._device}")
        work = self.allreduce(flag, RedOpType.SUM, True)
        if async_op:
            return work
        self.watchdog.arm("BARRIER", self.timeout)
        try:
            work.wait()
            self._stream.synchronize()
        finally:
            self.watchdog.disarm()
        return work

    def _send(self, t: Any, dst: int, tag: int, async_op: bool) -> Work:
        s = stage(t, host=False)
        a = _wire(s.array)
        dtype = _dtype_code(a)

        def body(comm: Any, stream: Any) -> None:
            comm.send(a.data.ptr, a.size, dtype, dst, stream.ptr)
        return self._launch("SEND", [t], body, [], [t], s, async_op)

    def _recv(self, t: Any, src: Optional[int], tag: int, async_op: bool) -> Work:
        if src is None:
            raise RuntimeError("the NCCL backend cannot receive from any source: give src=")
        s = stage(t, host=False)
        a = _wire(s.array)
        dtype = _dtype_code(a)
        sender = self.global_ranks[src] if self.global_ranks else src

        def body(comm: Any, stream: Any) -> None:
            comm.recv(a.data.ptr, a.size, dtype, src, stream.ptr)

        def finish() -> int:
            s.writeback()
            return sender
        return self._launch("RECV", [t], body, [finish], [t], s, async_op)

    # ---- groups and objects ---------------------------------------------------------------
    def bcast_object(self, obj: Any, root: int) -> Any:
        """A picklable object from root to every rank (over MPI)."""
        return self.mpi.bcast_object(obj, root)

    def allgather_object(self, obj: Any) -> List[Any]:
        """Every rank's picklable object, in rank order (over MPI)."""
        return self.mpi.allgather_object(obj)

    def destroy(self) -> None:
        """Frees the NCCL communicator, then the MPI one."""
        if self._comm is not None:
            self._stream.synchronize()
            self._comm.destroy()
            self._comm = None
        self.mpi.destroy()


def _copy_on(stream: Any, dst: Any, src: Any) -> None:
    """dst[...] = src queued on the communication stream (a rank's own block)."""
    with stream:
        dst[...] = src
