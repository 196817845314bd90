"""Run by path inside each rank that `rustgrad.distributed.run` starts: sets torchrun's
environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK) from the MPI process
manager's (MPICH's hydra, Open MPI, PMIx), then replaces itself with the training script, which
keeps this process's id and its connection to the process manager.

Usage (by the launcher): python _rank_env.py [-m] script_or_module args...
"""

from __future__ import annotations

import os
import sys
from typing import Dict, List, Mapping

__all__ = ["torchrun_env", "main"]

# (torchrun's name, the process managers' names for it, first found wins)
_SOURCES = {
    "RANK": ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"),
    "WORLD_SIZE": ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"),
    "LOCAL_RANK": ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK"),
    "LOCAL_WORLD_SIZE": ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"),
}


def torchrun_env(env: Mapping[str, str]) -> Dict[str, str]:
    """torchrun's per-rank variables from a rank's MPI environment ({} outside mpiexec)."""
    out: Dict[str, str] = {}
    for name, sources in _SOURCES.items():
        for src in sources:
            if src in env:
                out[name] = env[src]
                break
    if "RANK" in out and "WORLD_SIZE" in out:
        out.setdefault("LOCAL_RANK", out["RANK"])
        out.setdefault("LOCAL_WORLD_SIZE", out["WORLD_SIZE"])
        out["GROUP_RANK"] = str(int(out["RANK"]) // max(int(out["LOCAL_WORLD_SIZE"]), 1))
        out["ROLE_RANK"], out["ROLE_WORLD_SIZE"] = out["RANK"], out["WORLD_SIZE"]
    return out


def main(argv: List[str]) -> None:
    """Sets the variables and execs ``python script args`` (or ``python -m module args``)."""
    os.environ.update(torchrun_env(os.environ))
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
