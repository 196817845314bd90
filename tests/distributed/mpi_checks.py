"""Worker for tests/distributed/test_mpi.py, run as `mpiexec -n 2 python mpi_checks.py MODE`:
collectives whose ranks disagree (shape, dtype, reduce op, root, the collective itself) raise
the same RuntimeError on every rank, before anything is sent, and the group stays usable.
`on`: the default (a group of two is checked); `off`: RUSTGRAD_DISTRIBUTED_CHECKS=0 in the
environment, no check runs. Asserts on every rank; prints "OK <rank>" at the end."""

from __future__ import annotations

import re
import sys
from typing import Any, Callable

import numpy as np
import rustgrad as torch
import rustgrad.distributed as dist


def mismatch(call: Callable[[], Any], *phrases: str) -> str:
    """call() raises torch's mismatch RuntimeError holding every phrase; returns its message."""
    try:
        call()
    except RuntimeError as e:
        msg = str(e)
    else:
        raise AssertionError(f"rank {dist.get_rank()}: no error")
    assert msg.startswith("Detected mismatch between collectives on ranks. "), msg
    for phrase in phrases:
        assert phrase in msg, (phrase, msg)
    return msg


def main(mode: str) -> None:
    dist.init_process_group("gloo")
    rank, other = dist.get_rank(), 1 - dist.get_rank()
    assert dist.get_world_size() == 2
    world = dist.group.WORLD
    if mode == "off":
        assert not world._checked

        def refuse(*args: Any) -> Any:
            raise AssertionError("the check ran although RUSTGRAD_DISTRIBUTED_CHECKS=0")

        mpi = getattr(world._impl, "mpi", world._impl)
        mpi.allgather_fingerprint = refuse
        t = torch.ones(3)
        dist.all_reduce(t)
        dist.barrier()
        assert t.tolist() == [2.0, 2.0, 2.0]
        print(f"OK {rank}", flush=True)
        dist.destroy_process_group()
        return
    assert world._checked

    # the case: (3,) and (4,), which MPI reduced silently into wrong values
    t = torch.ones(3 if rank == 0 else 4)
    mine, theirs = ("(3,)", "(4,)") if rank == 0 else ("(4,)", "(3,)")
    msg = mismatch(lambda: dist.all_reduce(t),
                   f"Rank {rank} is running collective: ALLREDUCE(SequenceNumber=0, "
                   f"shape={mine}, dtype=float32, device=cpu, reduce op=SUM), but Rank {other} "
                   f"is running collective: ALLREDUCE(SequenceNumber=0, shape={theirs}, ",
                   f"Collectives differ in: shapes {mine} vs {theirs}.",
                   "RUSTGRAD_DISTRIBUTED_CHECKS=0")
    assert t.tolist() == [1.0] * t.numel(), (msg, t.tolist())  # nothing was sent

    # dtypes, reduce ops, roots, different collectives, an async one, a sub-group
    t = torch.ones(3, dtype=torch.float32 if rank == 0 else torch.float64)
    pair = ["float32", "float64"][rank], ["float32", "float64"][other]
    mismatch(lambda: dist.all_reduce(t), f"dtypes {pair[0]} vs {pair[1]}")
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.MAX]
    mismatch(lambda: dist.all_reduce(torch.ones(2), op=ops[rank]),
             f"reduce ops {ops[rank].name} vs {ops[other].name}")
    mismatch(lambda: dist.broadcast(torch.ones(2), src=rank), f"roots {rank} vs {other}")
    calls = [lambda: dist.all_reduce(torch.ones(2)), lambda: dist.broadcast(torch.ones(2), 0)]
    names = ["ALLREDUCE", "BROADCAST"]
    mismatch(calls[rank], f"collectives {names[rank]} vs {names[other]}")
    mismatch(lambda: dist.all_reduce(torch.ones(2, 2 + rank), async_op=True),
             f"shapes (2, {2 + rank}) vs (2, {2 + other})")
    sub = dist.new_group([0, 1])
    assert not isinstance(sub, int)
    mismatch(lambda: dist.all_gather_into_tensor(torch.zeros(4 + 2 * rank),
                                                 torch.ones(2 + rank), group=sub),
             "_ALLGATHER_BASE(SequenceNumber=0, ", f"shapes ({2 + rank},) vs ({2 + other},)")
    mismatch(lambda: dist.barrier() if rank == 0 else dist.all_reduce(torch.ones(1)),
             f"collectives {['BARRIER', 'ALLREDUCE'][rank]} vs {['BARRIER', 'ALLREDUCE'][other]}")

    # the group is usable after all of these: a matching all_reduce sums, sequence numbers agree
    t = torch.tensor([1.0, 2.0, 3.0]) * (rank + 1)
    dist.all_reduce(t)
    assert t.tolist() == [3.0, 6.0, 9.0], t.tolist()
    seq = world._check_seq
    msg = mismatch(lambda: dist.all_reduce(torch.ones(1 + rank)))
    assert re.search(rf"ALLREDUCE\(SequenceNumber={seq}, .*ALLREDUCE\(SequenceNumber={seq}, ",
                     msg), msg
    # all_to_all_single's first dimensions may differ (its splits do): no false alarm
    rows = 2 + 2 * rank
    out = torch.zeros(3, 2)
    dist.all_to_all_single(out, torch.from_numpy(np.full((rows, 2), rank, np.float32)),
                           output_split_sizes=[1, 2], input_split_sizes=[rows // 2] * 2)
    assert out.tolist() == [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]], out.tolist()
    print(f"OK {rank}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
