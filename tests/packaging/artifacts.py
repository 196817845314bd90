"""The wheel and sdist under test: those `make wheel` left in dist/ when they are current, else
built here into a temporary folder with the same commands (slow: a release build of the
extension)."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
from typing import Dict, List, Optional

from packaging.version import Version

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
BIN = pathlib.Path(sys.executable).parent
# the wheel build keeps its own target folder: `make build`'s stays untouched
WHEEL_TARGET = ROOT / "target" / "wheel"
# what `make wheel` runs (after `-o <folder>`)
WHEEL_ARGS = ["build", "--release", "--locked", "--strip", "--compatibility", "manylinux2014", "--zig"]
WHEEL_TAGS = {"cp39-abi3-manylinux2014_x86_64", "cp39-abi3-manylinux_2_17_x86_64"}
# what the wheel and the sdist are built from: an artifact older than any of these is stale
SOURCES = ["pyproject.toml", "Cargo.toml", "Cargo.lock", "LICENSE", "README.md", "rust", "python/rustgrad"]


def cargo_version() -> str:
    """The workspace version, as PEP 440 spells it (what the wheel's metadata must carry)."""
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    return str(Version(cargo["workspace"]["package"]["version"]))


def build_env() -> Dict[str, str]:
    env = dict(os.environ)
    # maturin finds zig as `python -m ziglang` through the venv's python on PATH
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["CARGO_TARGET_DIR"] = str(WHEEL_TARGET)
    return env


def maturin() -> str:
    found = shutil.which("maturin", path=str(BIN)) or shutil.which("maturin")
    assert found, "maturin is not installed (pip install 'maturin>=1.9.4,<2')"
    return found


def newest_source_mtime() -> float:
    newest = 0.0
    for name in SOURCES:
        p = ROOT / name
        paths = [p] if p.is_file() else [q for q in p.rglob("*") if q.is_file()]
        for q in paths:
            if "__pycache__" not in q.parts and q.suffix not in (".so", ".pyd", ".pyc"):
                newest = max(newest, q.stat().st_mtime)
    return newest


def current(pattern: str) -> Optional[pathlib.Path]:
    """The artifact in dist/ for the current version, if it is newer than every source."""
    found = sorted(DIST.glob(pattern)) if DIST.is_dir() else []
    if len(found) == 1 and found[0].stat().st_mtime >= newest_source_mtime():
        return found[0]
    return None


def run(cmd: List[str], **kw: object) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def wheel(tmp: pathlib.Path) -> pathlib.Path:
    ver = cargo_version()
    found = current(f"rustgrad-{ver}-*manylinux*.whl")
    if found is not None:
        return found
    run([maturin(), *WHEEL_ARGS, "-o", str(tmp)], cwd=ROOT, env=build_env())
    (built,) = tmp.glob(f"rustgrad-{ver}-*.whl")
    return built


def sdist(tmp: pathlib.Path) -> pathlib.Path:
    ver = cargo_version()
    found = current(f"rustgrad-{ver}.tar.gz")
    if found is not None:
        return found
    run([maturin(), "sdist", "-o", str(tmp)], cwd=ROOT, env=build_env())
    return tmp / f"rustgrad-{ver}.tar.gz"
