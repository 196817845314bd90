"""Differential fixtures for the advanced autograd features: `lib` runs a test once under torch
(the oracle) and once under rustgrad; process-wide modes are restored after every test."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest


@pytest.fixture(params=["torch", "rustgrad"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


@pytest.fixture
def rg() -> ModuleType:
    return importlib.import_module("rustgrad")


@pytest.fixture(autouse=True)
def _modes_restored():
    """A test that fails inside a grad-mode or anomaly block must not leak the mode."""
    yield
    for name in ("torch", "rustgrad"):
        m = importlib.import_module(name)
        m.set_grad_enabled(True)
        m.autograd.set_detect_anomaly(False)
