"""Differential fixtures: `lib` runs a test once under torch (the oracle) and once under
rustgrad, so every asserted value is checked to be torch's own."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest


@pytest.fixture(params=["torch", "rustgrad"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


@pytest.fixture(autouse=True)
def _grad_mode_restored():
    yield
    for name in ("torch", "rustgrad"):
        importlib.import_module(name).set_grad_enabled(True)
