"""`python -m rustgrad.distributed.run`: torchrun's command line over mpiexec."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
from rustgrad.distributed import _rank_env, run

HERE = pathlib.Path(__file__).resolve().parent


def test_the_launcher_runs_a_torchrun_script_on_two_ranks():
    proc = subprocess.run(
        [sys.executable, "-m", "rustgrad.distributed.run", "--nproc_per_node", "2",
         "--master-port", "29533", str(HERE / "launcher_env.py"), "--lr", "0.5", "extra"],
        capture_output=True, text=True, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "OK 0/2" in out and "OK 1/2" in out, out


@pytest.mark.parametrize("spelling", ["--nproc-per-node", "--nproc_per_node"])
def test_both_spellings_build_the_mpiexec_line(spelling):
    args = run.parse_args([spelling, "3", "--mpiexec", "/x/mpiexec", "-m", "pkg.train", "-a"])
    cmd = run.mpiexec_command(args)
    assert cmd[:3] == ["/x/mpiexec", "-n", "3"]
    assert cmd[-3:] == ["-m", "pkg.train", "-a"]
    assert cmd[cmd.index(sys.executable) + 2].endswith("_rank_env.py")


def test_many_nodes_need_their_hosts():
    args = run.parse_args(["--nnodes", "2", "--nproc-per-node", "4", "--mpiexec", "m", "t.py"])
    with pytest.raises(ValueError, match="--hostfile"):
        run.mpiexec_command(args)
    args = run.parse_args(["--nnodes", "2", "--nproc-per-node", "4", "--hosts", "a,b",
                           "--mpiexec", "m", "t.py"])
    cmd = run.mpiexec_command(args)
    assert cmd[:7] == ["m", "-n", "8", "-hosts", "a,b", "-ppn", "4"]


def test_no_mpiexec_names_the_install(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match="pip install mpich mpi4py"):
        run.find_mpiexec()


def test_rank_environment_from_each_process_manager():
    hydra = {"PMI_RANK": "3", "PMI_SIZE": "4", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"}
    assert _rank_env.torchrun_env(hydra) == {
        "RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
        "GROUP_RANK": "1", "ROLE_RANK": "3", "ROLE_WORLD_SIZE": "4"}
    ompi = {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "3",
            "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "1"}
    assert _rank_env.torchrun_env(ompi)["GROUP_RANK"] == "2"
    assert _rank_env.torchrun_env({}) == {}
