"""Every test here needs a GPU that CuPy sees: they are marked `cuda` (pytest -m cuda selects
them; benches/gpu_check.sh runs them) and skipped elsewhere."""

from __future__ import annotations

import pytest
import rustgrad


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    for item in items:
        if "tests/cuda/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.cuda)


@pytest.fixture(autouse=True)
def _needs_gpu() -> None:
    if not rustgrad.cuda.is_available():
        pytest.skip("CuPy sees no GPU")
