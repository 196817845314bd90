"""Runs pytest's `cuda` tests with rustgrad's CUDA backend over a CuPy of NumPy arrays
(fake_cupy.numpy_cupy), so the `device` fixture's cuda parameter runs on any machine:

    python -m tests.devices.sim_cuda tests/ops tests/nn      # from the repository root

What it proves is the backend's wiring (dispatch, placement, transfers, every function the ops
ask of a backend), not CuPy's kernels; the CUDA C kernels (im2col, GELU, max-pool) are left out (they need a GPU), and
DLPack exchange reports the CPU (the arrays are NumPy's)."""

from __future__ import annotations

import sys

import pytest


def main(argv: list) -> int:
    from . import fake_cupy

    mp = pytest.MonkeyPatch()
    try:
        fake_cupy.install_numpy_cupy(mp)  # without the CUDA C kernels (they need a GPU)
        import rustgrad

        assert rustgrad.cuda.is_available()
        return int(pytest.main(["-m", "cuda", "-p", "no:cacheprovider", *argv]))
    finally:
        mp.undo()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
