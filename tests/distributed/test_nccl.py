"""The NCCL backend (CuPy's NCCL): the collectives worker on CUDA tensors, one rank per GPU
(a world of one on a machine with one GPU, two ranks where two exist)."""

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
