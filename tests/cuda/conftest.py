"""Every test here needs a GPU that CuPy sees: each module is marked `cuda` (pytest -m cuda selects
them; benches/gpu_check.sh runs them), and they skip elsewhere."""

from __future__ import annotations

import pytest
import rustgrad


@pytest.fixture(autouse=True)
def _needs_gpu() -> None:
    if not rustgrad.cuda.is_available():
        pytest.skip("CuPy sees no GPU")
