"""`mpiexec -n 2` jobs: every collective against NumPy (the assertions run inside the ranks:
tests/distributed/mpi_collectives.py), and a failing rank ends the whole job instead of
hanging it."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time
from typing import Tuple

import pytest
from rustgrad.distributed.run import find_mpiexec

HERE = pathlib.Path(__file__).resolve().parent
def _mpiexec() -> pathlib.Path:
    """The launcher's mpiexec (beside this Python, else on PATH: the GPU check installs MPICH's
    wheel into a private folder); a path that does not exist when there is none."""
    try:
        return pathlib.Path(find_mpiexec())
    except RuntimeError:
        return pathlib.Path(sys.executable).parent / "mpiexec"


MPIEXEC = _mpiexec()
LIMIT_S = 60


def mpiexec(n: int, script: str, *args: str, limit: float = LIMIT_S) -> Tuple[int, str, float]:
    """(return code, output, seconds) of `mpiexec -n n python script args` (run from the repo)."""
    assert MPIEXEC.exists(), "mpiexec is missing: `.venv/bin/pip install mpich mpi4py`"
    start = time.monotonic()
    proc = subprocess.run([str(MPIEXEC), "-n", str(n), sys.executable, str(HERE / script), *args],
                          cwd=HERE.parents[1], capture_output=True, text=True, timeout=limit)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start


def test_collectives_on_two_ranks_match_numpy():
    rc, out, _ = mpiexec(2, "mpi_collectives.py")
    assert rc == 0, out
    assert "OK 0" in out and "OK 1" in out, out
    assert "pending" not in out, out  # MPICH's word for requests never completed at exit


def test_a_rank_that_raises_ends_the_job():
    rc, out, elapsed = mpiexec(2, "mpi_failures.py", "raise")
    assert rc != 0, out
    assert "rank 1 fails on purpose" in out, out
    assert "got past" not in out, out
    assert elapsed < 20, elapsed


@pytest.mark.timeout(60)
def test_a_collective_past_its_timeout_ends_the_job():
    rc, out, elapsed = mpiexec(2, "mpi_failures.py", "timeout")
    assert rc != 0, out
    assert "[Rank 0] Watchdog caught collective operation timeout: Work(OpType=ALLREDUCE, " \
           "Timeout(ms)=1000)" in out, out
    assert "got past" not in out, out
    assert elapsed < 20, elapsed  # rank 1 sleeps 120 s: the watchdog, not rank 1, ended it
