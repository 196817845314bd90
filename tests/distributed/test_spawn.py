"""`rustgrad.multiprocessing`: torch.multiprocessing's names, and `spawn` in the DDP tutorial's
shape (tests/distributed/spawn_worker.py, a main script whose function each spawned process
imports as `__mp_main__`): the processes form one MPI world, DDP trains as torch does on the
union of the ranks' batches, and a process's exception reaches the parent as torch's
ProcessRaisedException."""

from __future__ import annotations

import json
import multiprocessing
import pathlib
import subprocess
import sys
import time
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest
import rustgrad

pytest.importorskip("mpi4py")
torch = pytest.importorskip("torch")

HERE = pathlib.Path(__file__).resolve().parent
WORKER = HERE / "spawn_worker.py"


def _has_mpiexec() -> bool:
    from rustgrad.distributed.run import find_mpiexec

    try:
        find_mpiexec()
    except RuntimeError:
        return False
    return True


needs_mpiexec = pytest.mark.skipif(not _has_mpiexec(), reason="no mpiexec (make test installs "
                                   "mpich)")


def _run(out: pathlib.Path, *mode: str) -> Tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, str(WORKER), str(out), *mode], capture_output=True,
                          text=True, timeout=120, cwd=str(out))
    return proc, time.monotonic() - start


def _reports(out: pathlib.Path) -> List[Dict[str, Any]]:
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def _torch_step(r0: Dict[str, Any], r1: Dict[str, Any]) -> List[np.ndarray]:
    model = torch.nn.Linear(4, 2)
    with torch.no_grad():
        for p, v in zip(model.parameters(), r0["initial"]):
            p.copy_(torch.tensor(v).reshape(p.shape))
    x = torch.tensor(r0["x"] + r1["x"])
    y = torch.tensor(r0["y"] + r1["y"])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    return [p.detach().reshape(-1).numpy() for p in model.parameters()]


@needs_mpiexec
def test_spawned_processes_form_one_world_and_train_like_torch(tmp_path: pathlib.Path) -> None:
    proc, _ = _run(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "spawned and joined" in proc.stdout
    r0, r1 = _reports(tmp_path)
    assert [r0["rank"], r1["rank"]] == [0, 1] and r0["world_size"] == r1["world_size"] == 2
    assert r0["module"] == r1["module"] == "__mp_main__"  # the script's guard did not rerun
    assert r0["initial"] == r1["initial"]
    assert r0["final"] == r1["final"]
    for got, want in zip(r0["final"], _torch_step(r0, r1)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@needs_mpiexec
def test_join_false_returns_a_context_to_join(tmp_path: pathlib.Path) -> None:
    proc, _ = _run(tmp_path, "nojoin")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "joined" in proc.stdout
    assert [r["rank"] for r in _reports(tmp_path)] == [0, 1]


@needs_mpiexec
def test_an_exception_ends_every_process_and_is_raised_in_the_parent(
        tmp_path: pathlib.Path) -> None:
    proc, seconds = _run(tmp_path, "fail")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["error_index"] == 1 and report["pid_ok"]
    assert report["type"] == "ProcessRaisedException"
    msg = report["msg"]
    assert msg.startswith("\n\n-- Process 1 terminated with the following error:\nTraceback")
    assert "ValueError: rank 1 gave up" in msg and "spawn_worker.py" in msg
    assert seconds < 60  # rank 0, left waiting in a barrier, was ended
    assert not (tmp_path / "rank0.json").exists()


@needs_mpiexec
def test_a_non_zero_exit_is_torchs_process_exited_exception(tmp_path: pathlib.Path) -> None:
    proc, seconds = _run(tmp_path, "exit")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["type"] == "ProcessExitedException"
    assert (report["error_index"], report["exit_code"]) == (1, 4)
    assert report["msg"] == "process 1 terminated with exit code 4"
    assert seconds < 60


def test_the_standard_librarys_names_are_reexported_as_torch_does() -> None:
    mp = rustgrad.multiprocessing
    import torch.multiprocessing as tmp

    for name in multiprocessing.__all__:
        assert getattr(mp, name) is getattr(multiprocessing, name), name
        assert hasattr(tmp, name), name
    for name in ("spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
                 "ProcessExitedException"):
        assert callable(getattr(mp, name)) and hasattr(tmp, name), name
    from rustgrad.multiprocessing.spawn import ProcessException

    assert issubclass(mp.ProcessRaisedException, ProcessException)
    e = mp.ProcessExitedException("m", 1, 2, 3, "SIGTERM")
    assert (e.error_index, e.error_pid, e.exit_code, e.signal_name) == (1, 2, 3, "SIGTERM")


def _module_level(rank: int) -> None:
    pass


def test_spawn_argument_errors() -> None:
    mp = rustgrad.multiprocessing
    with pytest.raises(ValueError, match="nprocs"):
        mp.spawn(_module_level, nprocs=0)
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        with pytest.raises(ValueError):
            mp.spawn(_module_level, nprocs=0, start_method="fork")
    with pytest.raises((AttributeError, TypeError, __import__("pickle").PicklingError)):
        mp.spawn(lambda rank: None, nprocs=1)  # not importable: pickled by reference
