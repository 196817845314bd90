"""The NCCL backend (CuPy's NCCL): the collectives worker on CUDA tensors, one rank per GPU
(a world of one on a machine with one GPU, two ranks where two exist); and everywhere, the
backend's code on the strict CuPy double's simulated GPUs with a fake NCCL over MPI."""

from __future__ import annotations

import pytest
import rustgrad

from .test_mpi import mpiexec


@pytest.mark.cuda
def test_nccl_collectives_on_cuda_tensors_match_numpy():
    if not rustgrad.cuda.is_available():
        pytest.skip("CuPy sees no GPU")
    assert rustgrad.distributed.is_nccl_available()
    n = min(2, rustgrad.cuda.device_count())
    rc, out, _ = mpiexec(n, "mpi_collectives.py", "nccl", "cuda", limit=180)
    assert rc == 0, out
    assert all(f"OK {r}" in out for r in range(n)), out


def test_nccl_backend_code_on_simulated_gpus_over_mpi():
    """Without a GPU: the NCCL backend's own code (streams, events, grouped point-to-point,
    lazy communicators on sub-groups, staging and write-back) on the strict CuPy double's GPUs,
    with a fake CuPy NCCL that moves the bytes with MPI (fake_nccl.py)."""
    rc, out, _ = mpiexec(2, "mpi_collectives.py", "nccl", "cuda-sim")
    assert rc == 0, out
    assert "OK 0" in out and "OK 1" in out, out
