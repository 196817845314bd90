"""Worker for tests/distributed/test_mpi.py and test_nccl.py, run as
`mpiexec -n N python mpi_collectives.py [BACKEND DEVICE]` (default: gloo cpu, i.e. MPI):
every collective against NumPy, asserted on every rank (a failed assert ends the whole job
through the excepthook that init_process_group installs). Prints "OK <rank>" at the end."""

from __future__ import annotations

import datetime
import operator
import sys
from functools import reduce as fold
from typing import Any, Callable, Dict, List

import numpy as np
import rustgrad as torch
import rustgrad.distributed as dist

NP_OPS: Dict[Any, Callable[[Any, Any], Any]] = {
    dist.ReduceOp.SUM: operator.add, dist.ReduceOp.PRODUCT: operator.mul,
    dist.ReduceOp.MIN: np.minimum, dist.ReduceOp.MAX: np.maximum,
    dist.ReduceOp.BAND: operator.and_, dist.ReduceOp.BOR: operator.or_,
    dist.ReduceOp.BXOR: operator.xor,
}
DTYPES = {torch.float32: np.float32, torch.float64: np.float64, torch.int64: np.int64,
          torch.int32: np.int32, torch.bool: np.bool_}


def values(rank: int, dtype: Any, n: int = 5) -> np.ndarray:
    """Rank-dependent test values of a dtype (the same on every rank for a given rank)."""
    base = np.arange(n) - 2 + 3 * rank
    if dtype is np.bool_:
        return (base + rank) % 2 == 0
    return (base * (1.5 if np.dtype(dtype).kind == "f" else 1)).astype(dtype)


BACKEND, DEVICE = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else ("gloo", "cpu")
SIMULATED = DEVICE == "cuda-sim"
if SIMULATED:  # NCCL's code on the strict CuPy double's GPUs, its bytes moved by MPI: fake_nccl.py
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    from tests.distributed import fake_nccl

    fake_nccl.install()
    DEVICE = "cuda"
BITWISE = (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR)


def T(a: np.ndarray) -> Any:
    """A tensor on DEVICE with a's values."""
    return torch.from_numpy(np.array(a)).to(DEVICE)


def check(got: Any, want: np.ndarray, what: str) -> None:
    arr = got.detach().cpu().numpy() if hasattr(got, "numpy") else got
    assert arr.dtype == want.dtype, (what, arr.dtype, want.dtype)
    assert arr.shape == want.shape, (what, arr.shape, want.shape)
    assert np.array_equal(arr, want), (what, arr, want)


def main() -> None:
    try:
        dist.all_reduce(torch.ones(1))
        raise AssertionError("a collective before init must raise")
    except ValueError as e:
        assert "Default process group has not been initialized" in str(e), e
    dist.init_process_group(BACKEND, timeout=datetime.timedelta(seconds=60))
    try:
        dist.init_process_group("mpi")
        raise AssertionError("a second init must raise")
    except ValueError as e:
        assert "twice" in str(e), e
    rank, n = dist.get_rank(), dist.get_world_size()
    global DEVICE
    if DEVICE == "cuda":  # one GPU per rank, as NCCL needs, made the rank's current device
        torch.cuda.set_device(rank % torch.cuda.device_count())
        DEVICE = f"cuda:{rank % torch.cuda.device_count()}"
    assert dist.get_backend() == BACKEND and dist.is_initialized()
    assert n >= 2 or DEVICE.startswith("cuda"), "the CPU checks need 2 ranks or more"
    everyone = range(n)

    # all_reduce: every op on every dtype it applies to
    for tdt, ndt in DTYPES.items():
        for op, f in NP_OPS.items():
            if op in BITWISE and (np.dtype(ndt).kind == "f" or BACKEND == "nccl"):
                continue
            t = T(values(rank, ndt))
            v = t._version
            dist.all_reduce(t, op=op)
            if ndt is np.bool_:  # or / and as torch's NCCL
                f = {dist.ReduceOp.SUM: operator.or_, dist.ReduceOp.PRODUCT: operator.and_}.get(
                    op, f)
            check(t, fold(f, [values(r, ndt) for r in everyone]).astype(ndt), f"{op} {tdt}")
            assert t._version > v, "a collective's write bumps the version"
    # AVG: float; integers truncated by NCCL, refused as torch's gloo does on MPI
    t = T(values(rank, np.float64))
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    check(t, sum(values(r, np.float64) for r in everyone) / n, "avg f64")
    t = T(values(rank, np.int64))
    if BACKEND == "nccl":
        dist.all_reduce(t, dist.ReduceOp.AVG)
        s = sum(values(r, np.int64) for r in everyone)
        check(t, (np.sign(s) * (np.abs(s) // n)).astype(np.int64), "avg i64")
    else:
        for op_call in (lambda: dist.all_reduce(t, dist.ReduceOp.AVG),
                        lambda: dist.reduce(t, 0, dist.ReduceOp.AVG),
                        lambda: dist.reduce_scatter_tensor(
                            torch.zeros(1, dtype=torch.int64),
                            torch.zeros(n, dtype=torch.int64), dist.ReduceOp.AVG)):
            try:
                op_call()
                raise AssertionError("an integer AVG must raise on MPI")
            except RuntimeError as e:
                assert str(e) == ("result type Float can't be cast to the desired output "
                                  "type Long"), e
        check(t, values(rank, np.int64), "a refused AVG leaves the tensor")
    # a non-contiguous view writes through to its base; 0-d tensors
    base = torch.arange(6.0, device=DEVICE).reshape(2, 3) * (rank + 1)
    dist.all_reduce(base.t())
    check(base, (np.arange(6.0).reshape(2, 3) * sum(r + 1 for r in everyone)).astype(np.float32),
          "view")
    z = torch.tensor(float(rank), device=DEVICE)
    dist.all_reduce(z, op=dist.ReduceOp.MAX)
    check(z, np.array(n - 1.0, dtype=np.float32), "0-d")
    # a leaf that requires grad: torch writes its values outside autograd too
    w = torch.ones(2, requires_grad=True, device=DEVICE)
    dist.all_reduce(w)
    check(w.detach(), np.full(2, float(n), np.float32), "leaf")

    # async: several in flight, then waited
    ts = [torch.full((4,), float(rank + i), device=DEVICE) for i in range(3)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    assert all(isinstance(wk, dist.Work) for wk in works)
    for wk in works:
        assert wk.wait() is True and wk.is_completed()
    for i, t in enumerate(ts):
        check(t, np.full(4, float(sum(r + i for r in everyone)), np.float32), f"async {i}")
    t = torch.ones(3, device=DEVICE)
    wk = dist.all_reduce(t, async_op=True)
    while not wk.is_completed():
        pass
    check(t, np.full(3, float(n), np.float32), "is_completed")
    assert wk.result()[0] is t
    kept = [torch.full((1000,), float(rank), device=DEVICE) for _ in range(40)]
    for x in kept:  # dropped without a wait: the backend holds them until they complete
        dist.all_reduce(x, async_op=True)
    t = torch.ones(2, device=DEVICE)
    dist.all_reduce(t)
    check(t, np.full(2, float(n), np.float32), "after dropped Works")

    # broadcast from every rank, sync and async
    for src in everyone:
        t = T(values(rank, np.int32))
        dist.broadcast(t, src=src)
        check(t, values(src, np.int32), f"broadcast {src}")
        t = T(values(rank, np.bool_))
        dist.broadcast(t, src=src, async_op=True).wait()
        check(t, values(src, np.bool_), f"broadcast bool {src}")

    # reduce to the last rank: others keep their values
    last = n - 1
    t = T(values(rank, np.float32))
    dist.reduce(t, dst=last, op=dist.ReduceOp.MIN)
    want = fold(np.minimum, [values(r, np.float32) for r in everyone])
    check(t, want if rank == last else values(rank, np.float32), "reduce")

    # all_gather, all_gather_into_tensor (concatenated and stacked)
    outs = [torch.zeros(5, dtype=torch.int64, device=DEVICE) for _ in everyone]
    dist.all_gather(outs, T(values(rank, np.int64)))
    for r in everyone:
        check(outs[r], values(r, np.int64), f"all_gather {r}")
    cat = torch.zeros(5 * n, device=DEVICE)
    dist.all_gather_into_tensor(cat, T(values(rank, np.float32)))
    check(cat, np.concatenate([values(r, np.float32) for r in everyone]), "gather cat")
    stacked = torch.zeros(n, 5, device=DEVICE)
    dist.all_gather_into_tensor(stacked, T(values(rank, np.float32)),
                                async_op=True).wait()
    check(stacked, np.stack([values(r, np.float32) for r in everyone]), "gather stack")

    # reduce_scatter_tensor: rank r gets the r-th block of the reduction
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.AVG):
        inp = T(np.concatenate([values(rank + 7 * b, np.float64) for b in everyone]))
        out = torch.zeros(5, dtype=torch.float64, device=DEVICE)
        dist.reduce_scatter_tensor(out, inp, op=op)
        blocks = [values(r + 7 * rank, np.float64) for r in everyone]
        want = {dist.ReduceOp.SUM: sum(blocks), dist.ReduceOp.MAX: fold(np.maximum, blocks),
                dist.ReduceOp.AVG: sum(blocks) / n}[op]
        check(out, np.asarray(want), f"reduce_scatter {op}")

    # reduce_scatter of a list
    out = torch.zeros(5, dtype=torch.float64, device=DEVICE)
    dist.reduce_scatter(out, [T(values(rank + 7 * b, np.float64)) for b in everyone])
    check(out, np.asarray(sum(values(r + 7 * rank, np.float64) for r in everyone)), "rs list")

    # all_to_all_single: equal splits, then uneven ones (rank r sends (r + i) % 2 + 1 rows of 3
    # to rank i, each row holding 100 r + i)
    inp = T(np.arange(2 * n, dtype=np.int64) + 100 * rank)
    out = torch.zeros(2 * n, dtype=torch.int64, device=DEVICE)
    dist.all_to_all_single(out, inp)
    check(out, np.concatenate([np.arange(2 * rank, 2 * rank + 2) + 100 * r for r in everyone]),
          "all_to_all equal")
    sizes = [(rank + i) % 2 + 1 for i in everyone]
    inp = T(np.concatenate([np.full((k, 3), 100.0 * rank + i) for i, k in enumerate(sizes)]))
    out = torch.zeros(sum(sizes), 3, dtype=torch.float64, device=DEVICE)
    dist.all_to_all_single(out, inp, output_split_sizes=sizes, input_split_sizes=sizes,
                           async_op=True).wait()
    check(out, np.concatenate([np.full((k, 3), 100.0 * i + rank) for i, k in enumerate(sizes)]),
          "all_to_all uneven")
    dist.monitored_barrier()

    # gather to and scatter from the last rank
    glist: Any = [torch.zeros(5, device=DEVICE) for _ in everyone] if rank == last else None
    dist.gather(T(values(rank, np.float32)), glist, dst=last)
    if rank == last:
        for r in everyone:
            check(glist[r], values(r, np.float32), f"gather {r}")
    slist: Any = [T(values(10 + r, np.int64)) for r in everyone] if rank == last else None
    got = torch.zeros(5, dtype=torch.int64, device=DEVICE)
    dist.scatter(got, slist, src=last)
    check(got, values(10 + rank, np.int64), "scatter")

    if n >= 2:
        point_to_point_and_groups(rank, n)
    # objects (over MPI with every backend)
    objs: List[Any] = [{"from": rank}, rank] if rank == last else [None, None]
    dist.broadcast_object_list(objs, src=last)
    assert objs == [{"from": last}, last], objs
    gathered: List[Any] = [None] * n
    dist.all_gather_object(gathered, ("r", rank))
    assert gathered == [("r", r) for r in everyone], gathered
    # gather_object: only dst receives (its list's first n slots); the others pass None
    at_last: Any = [None] * (n + 1) if rank == last else None
    dist.gather_object({"r": rank}, at_last, dst=last)
    if rank == last:
        assert at_last == [{"r": r} for r in everyone] + [None], at_last
    else:
        assert at_last is None

    dist.barrier()
    dist.barrier(async_op=True).wait()
    dist.destroy_process_group()
    assert not dist.is_initialized()
    dist.init_process_group(BACKEND)  # again, after destroy
    t = torch.ones(1, device=DEVICE)
    dist.all_reduce(t)
    check(t, np.full(1, float(n), np.float32), "after re-init")
    dist.destroy_process_group()
    if SIMULATED:  # the fake NCCL, not MPI, moved the tensors
        used = set(fake_nccl.calls)
        want = {"init", "allReduce", "broadcast", "reduce", "allGather", "reduceScatter",
                "destroy"} | ({"send", "recv"} if n > 1 else set())  # all_to_all: send/recv
        assert want <= used, want - used
    print(f"OK {rank}", flush=True)


def point_to_point_and_groups(rank: int, n: int) -> None:
    """A ring of sends, blocking then async (recv from any source names the sender, except on
    NCCL, which cannot), and collectives on sub-groups."""
    everyone = range(n)
    right, left = (rank + 1) % n, (rank - 1) % n
    if rank % 2 == 0:
        dist.send(T(values(rank, np.float64)), dst=right)
        t = torch.zeros(5, dtype=torch.float64, device=DEVICE)
        assert dist.recv(t, src=left) == left
    else:
        t = torch.zeros(5, dtype=torch.float64, device=DEVICE)
        assert dist.recv(t, src=left if BACKEND == "nccl" else None) == left
        dist.send(T(values(rank, np.float64)), dst=right)
    check(t, values(left, np.float64), "send/recv")
    t = torch.zeros(5, dtype=torch.int32, device=DEVICE)
    works = [dist.irecv(t, src=left, tag=3), dist.isend(T(values(rank, np.int32)), dst=right, tag=3)]
    for wk in works:
        wk.wait()
    check(t, values(left, np.int32), "isend/irecv")

    # groups: a sub-group without rank 0, and the world reversed
    sub = dist.new_group(list(range(1, n)))
    if rank == 0:
        assert sub == dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(sub) == -1
    else:
        assert dist.get_rank(sub) == rank - 1 and dist.get_world_size(sub) == n - 1
        t = torch.full((2,), float(rank), device=DEVICE)
        dist.all_reduce(t, group=sub)
        check(t, np.full(2, float(sum(range(1, n))), np.float32), "sub all_reduce")
        t = torch.full((2,), float(rank), device=DEVICE)
        dist.broadcast(t, src=n - 1, group=sub)  # a global rank
        check(t, np.full(2, float(n - 1), np.float32), "sub broadcast")
        assert dist.get_process_group_ranks(sub) == list(range(1, n))
    rev = dist.new_group(list(reversed(everyone)), sort_ranks=False)
    assert dist.get_rank(rev) == n - 1 - rank
    assert dist.get_global_rank(rev, 0) == n - 1
    t = torch.full((1,), float(rank), device=DEVICE)
    dist.broadcast(t, group_src=0, group=rev)
    check(t, np.full(1, float(n - 1), np.float32), "reversed group broadcast")


if __name__ == "__main__":
    main()
