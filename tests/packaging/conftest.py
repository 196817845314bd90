from __future__ import annotations

import pathlib

import pytest

from . import artifacts


@pytest.fixture(scope="session")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return artifacts.sdist(tmp_path_factory.mktemp("sdist"))
