"""Fixtures of the whole suite: `lib` runs a test once under torch (the oracle) and once under
rustgrad; `device` runs it once per device: cpu; "cuda-sim", rustgrad's CUDA backend over the
strict CuPy double (tests/devices/strict_cupy.py, two GPUs, on every machine); and cuda, a real
GPU, where CuPy sees one (marked `cuda`). `@pytest.mark.xfail_device("cuda-sim", reason=...)`
marks a known failure on one device only; `sim_cuda` installs the double for a test of its own.
Process-wide modes are restored after every test."""

from __future__ import annotations

import importlib
import pathlib
from types import ModuleType
from typing import Iterator

import pytest
import rustgrad

from .devices import strict_cupy

DEVICES = ["cpu", "cuda-sim", pytest.param("cuda", marks=pytest.mark.cuda)]
# for a test about CUDA only: `@pytest.mark.parametrize("device", GPU_DEVICES, indirect=True)`
GPU_DEVICES = DEVICES[1:]


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
def device(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The device a test runs on, as rustgrad names it ("cpu" or "cuda")."""
    if request.param == "cuda" and not rustgrad.cuda.is_available():
        pytest.skip("CuPy sees no GPU")
    for mark in request.node.iter_markers("xfail_device"):
        if request.param in mark.args:
            request.applymarker(pytest.mark.xfail(strict=True, reason=mark.kwargs["reason"]))
    if request.param == "cuda-sim":
        strict_cupy.install(monkeypatch)
        return "cuda"
    return request.param


@pytest.fixture
def sim_cuda(monkeypatch: pytest.MonkeyPatch) -> object:
    """rustgrad's CUDA backend over the strict CuPy double (two GPUs) for this test."""
    return strict_cupy.install(monkeypatch)


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
