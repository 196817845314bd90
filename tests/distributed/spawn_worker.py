"""Worker for tests/distributed/test_spawn.py, run as `python spawn_worker.py OUT [MODE]`: the
DDP tutorial's shape (`mp.spawn(demo, args=(world_size,), nprocs=world_size)`, each process
calling `init_process_group("gloo", rank=rank, world_size=world_size)` after setting
MASTER_ADDR/MASTER_PORT), written with rustgrad under torch's names. Each rank writes what it
saw to OUT/rank{r}.json. MODE "fail": rank 1 raises after the first collectives; "exit":
rank 1 calls sys.exit(4) there; "nojoin": spawn(join=False), then join() on the context."""

from __future__ import annotations

import json
import os
import pathlib
import sys
from typing import Any, Dict

import rustgrad as torch
import rustgrad.distributed as dist
import rustgrad.multiprocessing as mp
import rustgrad.nn as nn
import rustgrad.optim as optim
from rustgrad.nn.parallel import DistributedDataParallel as DDP


def setup(rank: int, world_size: int) -> None:
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("gloo", rank=rank, world_size=world_size)


def demo_basic(rank: int, world_size: int, out: str, mode: str) -> None:
    setup(rank, world_size)
    report: Dict[str, Any] = {"rank": dist.get_rank(), "world_size": dist.get_world_size(),
                              "module": __name__}
    torch.manual_seed(rank)  # DDP's broadcast makes rank 0's parameters everyone's
    model = nn.Linear(4, 2)
    ddp_model = DDP(model)
    report["initial"] = [p.detach().reshape(-1).tolist() for p in ddp_model.parameters()]
    torch.manual_seed(100 + rank)
    x, y = torch.randn(5, 4), torch.randn(5, 2)
    report["x"], report["y"] = x.tolist(), y.tolist()
    opt = optim.SGD(ddp_model.parameters(), lr=0.1)
    opt.zero_grad()
    nn.MSELoss()(ddp_model(x), y).backward()
    opt.step()
    report["final"] = [p.detach().reshape(-1).tolist() for p in ddp_model.parameters()]
    if mode == "fail" and rank == 1:
        raise ValueError("rank 1 gave up")
    if mode == "exit" and rank == 1:
        sys.exit(4)
    dist.barrier()  # rank 0 waits here for a rank 1 that never comes, in "fail"
    dist.destroy_process_group()
    pathlib.Path(out, f"rank{rank}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    out, mode = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
    world_size = 2
    if mode == "nojoin":
        context = mp.spawn(demo_basic, args=(world_size, out, mode), nprocs=world_size,
                           join=False)
        assert context is not None
        while not context.join():
            pass
        print("joined", len(context.pids()))
    else:
        try:
            mp.spawn(demo_basic, args=(world_size, out, mode), nprocs=world_size, join=True)
        except (mp.ProcessRaisedException, mp.ProcessExitedException) as e:
            print(json.dumps({"error_index": e.error_index, "msg": e.msg, "type": type(e).__name__,
                              "exit_code": getattr(e, "exit_code", None),
                              "pid_ok": e.error_pid > 0}))
            raise SystemExit(3) from None
        print("spawned and joined")
