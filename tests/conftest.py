"""Fixtures of the whole suite: `lib` runs a test once under torch (the oracle) and once under
rustgrad; `device` runs it once per device (cpu, the NumPy-backed fake device of
tests/fake_backend.py, and cuda where CuPy sees a GPU; `@pytest.mark.xfail_device("fake",
reason=...)` marks a known failure on one device only); process-wide modes are restored after
every test."""

from __future__ import annotations

import importlib
import pathlib
from types import ModuleType
from typing import Iterator

import pytest
import rustgrad

from . import fake_backend  # noqa: F401  (registers the "fake" device)

DEVICES = ["cpu", "fake", pytest.param("cuda", marks=pytest.mark.cuda)]


@pytest.fixture(params=["torch", "rustgrad"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


@pytest.fixture
def rg() -> ModuleType:
    return rustgrad


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "xfail_device(*devices, reason): a known failure on those devices only (strict)"
    )


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    if request.param == "cuda" and not rustgrad.cuda.is_available():
        pytest.skip("CuPy sees no GPU")
    for mark in request.node.iter_markers("xfail_device"):
        if request.param in mark.args:
            request.applymarker(pytest.mark.xfail(strict=True, reason=mark.kwargs["reason"]))
    return request.param


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """rustgrad's abi3 wheel: dist/'s when it is current, else one built once per session (the
    packaging tests and the GPU check's install share it)."""
    from .packaging import artifacts

    return artifacts.wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(autouse=True)
def _modes_restored() -> Iterator[None]:
    """A test that fails inside a grad-mode or anomaly block must not leak the mode."""
    yield
    for m in (importlib.import_module("torch"), rustgrad):
        m.set_grad_enabled(True)
        m.autograd.set_detect_anomaly(False)
