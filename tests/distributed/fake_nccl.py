"""A stand-in for CuPy's NCCL bindings, so the NCCL backend's code runs without a GPU: tensors
live on the strict CuPy double's simulated GPUs (tests/devices/strict_cupy.py), and the fake
NCCL communicator moves their bytes (read through CuPy's `.data.ptr`) with MPI between the ranks
of an `mpiexec` job.

Only for worker processes (`install()` replaces `cupy` in sys.modules for the process):
tests/distributed/mpi_collectives.py with `nccl cuda-sim`."""

from __future__ import annotations

import ctypes
import pathlib
import random
import shutil
import sys
import tempfile
import time
import types
from typing import Any, List, Optional

import numpy as np
from mpi4py import MPI

from tests.devices import strict_cupy

_DTYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 4: np.int64, 6: np.float16, 7: np.float32,
           8: np.float64}
_OPS = {0: MPI.SUM, 1: MPI.PROD, 2: MPI.MAX, 3: MPI.MIN}
_pending: List[Any] = []  # point-to-point requests not yet completed (NCCL runs them async)
_grouped: Optional[List[Any]] = None  # calls between groupStart and groupEnd
calls: List[str] = []  # what the backend asked NCCL for, in order (the test reads it)


def _array(ptr: int, count: int, code: int) -> np.ndarray:
    dtype = np.dtype(_DTYPES[code])
    raw = (ctypes.c_byte * (count * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(raw, dtype=dtype)


class Event:
    def __init__(self, requests: List[Any]) -> None:
        self.requests = requests

    @property
    def done(self) -> bool:
        return bool(MPI.Request.Testall(self.requests))

    def wait(self) -> None:
        MPI.Request.Waitall(self.requests)


class Stream:
    def __init__(self, non_blocking: bool = False) -> None:
        self.ptr = id(self)

    def record(self) -> Event:
        # point-to-point calls run on the backend's own stream, never on the current one
        return Event([] if self is _current_stream else list(_pending))

    def wait_event(self, event: Event) -> None:
        event.wait()  # the fake's streams are the host: waiting is blocking

    def synchronize(self) -> None:
        MPI.Request.Waitall(_pending)
        _pending.clear()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


_current_stream = Stream()


class NcclCommunicator:
    def __init__(self, ndev: int, uid: tuple, rank: int) -> None:
        # the members meet as NCCL's do, by the unique id alone: each leaves its world rank in a
        # file named by the id, then they make an MPI communicator of the ranks found there
        assert len(uid) == 128
        where = pathlib.Path(tempfile.gettempdir()) / f"fake_nccl_{abs(hash(uid))}"
        where.mkdir(exist_ok=True)
        (where / f"{rank}.tmp").write_text(str(MPI.COMM_WORLD.Get_rank()))
        (where / f"{rank}.tmp").rename(where / str(rank))
        deadline = time.monotonic() + 30
        while sum(f.name.isdigit() for f in where.iterdir()) < ndev:
            assert time.monotonic() < deadline, "the fake NCCL rendezvous timed out"
            time.sleep(0.01)
        world = [int((where / str(r)).read_text()) for r in range(ndev)]
        self.comm = MPI.COMM_WORLD.Create_group(MPI.COMM_WORLD.group.Incl(world))
        assert self.comm.Get_size() == ndev and self.comm.Get_rank() == rank, (ndev, rank)
        self.comm.Barrier()
        if rank == 0:
            shutil.rmtree(where, ignore_errors=True)
        calls.append("init")

    def _p2p(self, kind: str, ptr: int, count: int, code: int, peer: int) -> None:
        a = _array(ptr, count, code)
        call = (lambda: self.comm.Isend(a, peer)) if kind == "send" else (
            lambda: self.comm.Irecv(a, peer))
        if _grouped is not None:
            _grouped.append(call)
        else:
            _pending.append(call())

    def allReduce(self, s: int, r: int, count: int, code: int, op: int, stream: int) -> None:
        calls.append("allReduce")
        send = MPI.IN_PLACE if s == r else _array(s, count, code)
        self.comm.Allreduce(send, _array(r, count, code), _OPS[op])

    def broadcast(self, s: int, r: int, count: int, code: int, root: int, stream: int) -> None:
        calls.append("broadcast")
        out = _array(r, count, code)
        if self.comm.Get_rank() == root and s != r:
            out[...] = _array(s, count, code)
        self.comm.Bcast(out, root)

    def reduce(self, s: int, r: int, count: int, code: int, op: int, root: int,
               stream: int) -> None:
        calls.append("reduce")
        me = self.comm.Get_rank()
        send = MPI.IN_PLACE if s == r and me == root else _array(s, count, code)
        self.comm.Reduce(send, _array(r, count, code) if me == root else None, _OPS[op], root)

    def allGather(self, s: int, r: int, count: int, code: int, stream: int) -> None:
        calls.append("allGather")
        n = self.comm.Get_size()
        self.comm.Allgather(_array(s, count, code), _array(r, count * n, code))

    def reduceScatter(self, s: int, r: int, count: int, code: int, op: int,
                      stream: int) -> None:
        calls.append("reduceScatter")
        n = self.comm.Get_size()
        self.comm.Reduce_scatter_block(_array(s, count * n, code), _array(r, count, code),
                                       _OPS[op])

    def send(self, ptr: int, count: int, code: int, peer: int, stream: int) -> None:
        calls.append("send")
        self._p2p("send", ptr, count, code, peer)

    def recv(self, ptr: int, count: int, code: int, peer: int, stream: int) -> None:
        calls.append("recv")
        self._p2p("recv", ptr, count, code, peer)

    def destroy(self) -> None:
        calls.append("destroy")
        self.comm.Free()


def groupStart() -> None:
    global _grouped
    _grouped = []


def groupEnd() -> None:
    global _grouped
    grouped, _grouped = _grouped or [], None
    _pending.extend(call() for call in grouped)


def get_unique_id() -> tuple:
    return tuple(random.randrange(-128, 128) for _ in range(128))


def _module(name: str, **attrs: Any) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    return m


def install() -> None:
    """Puts the strict CuPy double, with this fake NCCL as `cupy.cuda.nccl`, into sys.modules and
    a fresh CUDA backend over it (its CUDA C kernels recorded, not run) for this process."""
    import pytest

    strict_cupy.install(pytest.MonkeyPatch())  # never undone: the worker ends with it
    nccl = _module(
        "cupy.cuda.nccl", available=True, NcclCommunicator=NcclCommunicator,
        get_unique_id=get_unique_id, groupStart=groupStart, groupEnd=groupEnd,
        NCCL_INT8=0, NCCL_UINT8=1, NCCL_INT32=2, NCCL_INT64=4, NCCL_FLOAT16=6,
        NCCL_FLOAT32=7, NCCL_FLOAT64=8, NCCL_SUM=0, NCCL_PROD=1, NCCL_MAX=2, NCCL_MIN=3)
    cuda = sys.modules["cupy"].cuda
    cuda.nccl, cuda.Stream = nccl, Stream
    cuda.get_current_stream = lambda: _current_stream
    sys.modules.update({"cupy.cuda": cuda, "cupy.cuda.nccl": nccl})
