"""What the real-program tests (tests/programs/test_<program>.py) share.

Programs of the kinds torch users run (training loops, custom Functions, hooks, GPT, GAN, DQN,
checkpoints, LBFGS, higher-order gradients), each run once with `torch` and once with `rustgrad`
bound as the library.

Every program is `def program(torch) -> dict`: weights come from a seeded NumPy RNG (module
constructors draw from each library's own generator, so every parameter is overwritten), and the
returned observables (losses per step, final parameters, gradients, flags, error captures) plus
everything printed must agree, floats within a tolerance. A file registers its programs with
`@program` and runs them with

    @pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
    def test_program_matches_torch(fn): assert_matches_torch(fn)
"""

from __future__ import annotations

import contextlib
import io
import warnings
from types import ModuleType
from typing import Any, Callable

import numpy as np
import rustgrad
import torch as real_torch

PROGRAMS: list[Callable[[ModuleType], dict]] = []


def program(fn: Callable[[ModuleType], dict]) -> Callable[[ModuleType], dict]:
    PROGRAMS.append(fn)
    return fn


def programs_in(module: str) -> list[Callable[[ModuleType], dict]]:
    """The programs the module named `module` registered, in the order it defines them."""
    return [fn for fn in PROGRAMS if fn.__module__ == module]


# ---- helpers shared by the programs -------------------------------------------------------------
def seed_params(torch: ModuleType, model: Any, seed: int, scale: float = 0.3) -> Any:
    """Overwrite every parameter with values from a seeded NumPy RNG (same in both libraries)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            values = rng.uniform(-scale, scale, tuple(p.shape)).astype(np.float32)
            p.copy_(torch.from_numpy(values))
    return model


def data(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def params_of(model: Any) -> dict:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def grads_of(model: Any) -> dict:
    return {name: None if p.grad is None else p.grad.clone() for name, p in model.named_parameters()}


def err(fn: Callable[[], Any]) -> tuple[str, str] | None:
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the type and message are what is compared)
        return (type(e).__name__, str(e))
    return None


def err_head(fn: Callable[[], Any], words: int = 12) -> tuple[str, str] | None:
    """The exception type and the message's first words (tails name library-specific types)."""
    e = err(fn)
    return None if e is None else (e[0], " ".join(e[1].split()[:words]))


# ---- comparison ---------------------------------------------------------------------------------
def plain(value: Any, lib: ModuleType) -> Any:
    if isinstance(value, lib.Tensor):
        return ("tensor", str(value.dtype).split(".")[-1], np.array(value.detach().numpy()))
    if isinstance(value, dict):
        return {k: plain(v, lib) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, lib) for v in value]
    return value


def assert_same(expected: Any, got: Any, path: str, rtol: float, atol: float) -> None:
    if isinstance(expected, dict):
        assert isinstance(got, dict), path
        assert list(expected) == list(got), f"{path}: keys {list(expected)} vs {list(got)}"
        for k in expected:
            assert_same(expected[k], got[k], f"{path}.{k}", rtol, atol)
    elif isinstance(expected, tuple) and expected[:1] == ("tensor",):
        assert isinstance(got, tuple) and got[0] == "tensor", f"{path}: {got!r} is no tensor"
        assert expected[1] == got[1], f"{path}: dtype {expected[1]} vs {got[1]}"
        assert expected[2].shape == got[2].shape, f"{path}: shape {expected[2].shape} vs {got[2].shape}"
        np.testing.assert_allclose(got[2], expected[2], rtol=rtol, atol=atol, err_msg=path)
    elif isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), f"{path}: {expected!r} vs {got!r}"
        for i, (e, g) in enumerate(zip(expected, got)):
            assert_same(e, g, f"{path}[{i}]", rtol, atol)
    elif isinstance(expected, float) and not isinstance(expected, bool):
        assert isinstance(got, (float, int)), f"{path}: {got!r}"
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=path)
    else:
        assert expected == got, f"{path}: {expected!r} vs {got!r}"


def run_program(fn: Callable[[ModuleType], dict], lib: ModuleType) -> tuple[Any, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fn(lib)
    return plain(result, lib), out.getvalue()


def assert_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    """Runs the program under torch and under rustgrad: the same printed output, the same
    observables (floats within rtol=2e-4, atol=2e-5)."""
    expected, expected_out = run_program(fn, real_torch)
    got, got_out = run_program(fn, rustgrad)
    assert got_out == expected_out
    assert_same(expected, got, fn.__name__, rtol=2e-4, atol=2e-5)
