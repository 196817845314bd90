"""Worker for tests/distributed/test_mpi.py: a job whose ranks fail must end, not hang.

`raise`: rank 1 raises while rank 0 waits in a barrier (the excepthook aborts the job);
`timeout`: rank 1 sleeps while rank 0 waits in an all_reduce past a 1 s timeout (the watchdog
aborts the job with torch's message)."""

from __future__ import annotations

import datetime
import sys
import time

import rustgrad as torch
import rustgrad.distributed as dist


def main(mode: str) -> None:
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=1 if mode == "timeout"
                                                              else 600))
    if dist.get_rank() == 1:
        if mode == "raise":
            raise RuntimeError("rank 1 fails on purpose")
        time.sleep(120)
    t = torch.ones(2)
    dist.barrier() if mode == "raise" else dist.all_reduce(t)
    print("rank 0 got past a collective it should never finish", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
