"""``rustgrad.multiprocessing``: torch.multiprocessing's names: the standard library's
``multiprocessing`` (``Process``, ``Queue``, ``get_context``, ...), re-exported as torch does,
plus ``spawn`` / ``start_processes``, whose processes form one MPI world (they are started by
``mpiexec``), so each may join a process group.

Example (the DDP tutorial's shape)::

    import rustgrad.distributed as dist
    import rustgrad.multiprocessing as mp

    def train(rank, world_size):
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
        ...
        dist.destroy_process_group()

    if __name__ == "__main__":
        mp.spawn(train, args=(2,), nprocs=2, join=True)
"""

from __future__ import annotations

from multiprocessing import *  # noqa: F401,F403  (torch.multiprocessing re-exports them too)
from multiprocessing import __all__ as _std_all

from .spawn import (
    ProcessContext,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = list(_std_all) + ["ProcessContext", "ProcessExitedException", "ProcessRaisedException",
                            "spawn", "start_processes"]
