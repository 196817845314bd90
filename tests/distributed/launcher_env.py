"""Script for tests/distributed/test_launcher.py, started by `python -m rustgrad.distributed.run`:
torchrun's variables are set and agree with MPI's ranks; the arguments reach the script."""

from __future__ import annotations

import os
import sys

import rustgrad as torch
import rustgrad.distributed as dist

if __name__ == "__main__":
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("gloo", init_method="env://", rank=int(os.environ["RANK"]),
                            world_size=int(os.environ["WORLD_SIZE"]))
    rank, size = dist.get_rank(), dist.get_world_size()
    assert int(os.environ["RANK"]) == rank and local_rank == rank, (os.environ["RANK"], rank)
    assert int(os.environ["WORLD_SIZE"]) == size == int(os.environ["LOCAL_WORLD_SIZE"])
    assert os.environ["GROUP_RANK"] == "0"
    assert os.environ["MASTER_ADDR"] == "127.0.0.1" and os.environ["MASTER_PORT"] == "29533"
    assert __name__ == "__main__" and sys.argv[1:] == ["--lr", "0.5", "extra"], sys.argv
    t = torch.tensor([float(rank)])
    dist.all_reduce(t)
    assert t.item() == sum(range(size))
    dist.destroy_process_group()
    print(f"OK {rank}/{size}", flush=True)
