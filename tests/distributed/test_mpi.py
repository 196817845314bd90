"""`mpiexec -n 2` jobs: every collective against NumPy (the assertions run inside the ranks:
tests/distributed/mpi_collectives.py), and a failing rank ends the whole job instead of
hanging it."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time
from typing import Dict, Optional, Tuple

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


def mpiexec(n: int, script: str, *args: str, limit: float = LIMIT_S,
            env: Optional[Dict[str, str]] = None) -> Tuple[int, str, float]:
    """(return code, output, seconds) of `mpiexec -n n python script args` (run from the repo),
    with `env` added to the environment."""
    assert MPIEXEC.exists(), "mpiexec is missing: `.venv/bin/pip install mpich mpi4py`"
    start = time.monotonic()
    proc = subprocess.run([str(MPIEXEC), "-n", str(n), sys.executable, str(HERE / script), *args],
                          cwd=HERE.parents[1], capture_output=True, text=True, timeout=limit,
                          env={**os.environ, **(env or {})})
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


@pytest.mark.timeout(90)
def test_collectives_that_differ_across_ranks_raise_on_every_rank():
    """all_reduce of (3,) on rank 0 and (4,) on rank 1 reduced mismatched buffers silently (torch's
    gloo: rank 0 silent; torch raises like this only under TORCH_DISTRIBUTED_DEBUG=DETAIL): every
    rank now raises, naming both ranks and calls, and the group stays usable. The assertions run
    in the ranks (tests/distributed/mpi_checks.py)."""
    rc, out, _ = mpiexec(2, "mpi_checks.py", "on", env={"RUSTGRAD_DISTRIBUTED_CHECKS": "auto"})
    assert rc == 0, out
    assert "OK 0" in out and "OK 1" in out, out


@pytest.mark.timeout(90)
def test_collective_checks_off():
    rc, out, _ = mpiexec(2, "mpi_checks.py", "off", env={"RUSTGRAD_DISTRIBUTED_CHECKS": "0"})
    assert rc == 0, out
    assert "OK 0" in out and "OK 1" in out, out


@pytest.mark.parametrize("value, size, on", [
    (None, 2, True), (None, 8, True), (None, 9, False), (None, 1, False), ("auto", 8, True),
    ("auto", 9, False), ("0", 2, False), ("off", 2, False), ("1", 64, True), ("ON", 64, True),
    ("1", 1, False),
])
def test_which_groups_check_their_collectives(value, size, on):
    from rustgrad.distributed import _checks

    env = {} if value is None else {"RUSTGRAD_DISTRIBUTED_CHECKS": value}
    assert _checks.wanted(size, env) is on


def test_torch_detail_debug_mode_turns_the_collective_checks_on():
    from rustgrad.distributed import _checks

    detail = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}
    assert _checks.wanted(64, detail)
    assert not _checks.wanted(64, {**detail, "RUSTGRAD_DISTRIBUTED_CHECKS": "0"})
    assert not _checks.wanted(64, {**detail, "RUSTGRAD_DISTRIBUTED_CHECKS": "auto"})
    assert not _checks.wanted(64, {"TORCH_DISTRIBUTED_DEBUG": "INFO"})


def test_a_bad_collective_checks_value_is_refused():
    from rustgrad.distributed import _checks

    with pytest.raises(ValueError, match="RUSTGRAD_DISTRIBUTED_CHECKS='maybe'"):
        _checks.wanted(2, {"RUSTGRAD_DISTRIBUTED_CHECKS": "maybe"})


def test_trusted_collectives_skip_the_check_and_others_do_not():
    from rustgrad.distributed import _checks

    asked = []

    class Mpi:
        def allgather_fingerprint(self, mine, op):
            asked.append(op)
            return mine.reshape(1, -1)

    pg = type("PG", (), {"_checked": True, "_check_seq": 0, "_impl": Mpi()})()
    with _checks.trusted():
        _checks.check(pg, "ALLREDUCE")  # DDP's buckets: shapes verified at construction
    assert asked == [] and pg._check_seq == 0
    _checks.check(pg, "ALLREDUCE")
    assert asked == ["ALLREDUCE"] and pg._check_seq == 1
