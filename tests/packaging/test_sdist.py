"""The sdist: everything a build from source needs (manifests, Cargo.lock, every Rust and Python
source, LICENSE), nothing of a working tree (target/, .venv, built extensions), the same version
and license metadata as the wheel, and pip builds a wheel from it."""

from __future__ import annotations

import email.parser
import email.policy
import pathlib
import subprocess
import sys
import tarfile
import zipfile
from typing import Set

from .artifacts import ROOT, build_env, cargo_version, run


def members(sdist: pathlib.Path) -> Set[str]:
    """Member paths relative to the sdist's top folder, which must be rustgrad-<version>/."""
    top = f"rustgrad-{cargo_version()}/"
    with tarfile.open(sdist) as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
    assert all(n.startswith(top) for n in names), names
    return {n[len(top) :] for n in names}


def tracked(*paths: str) -> Set[str]:
    out = subprocess.run(["git", "ls-files", *paths], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_sdist_holds_what_a_build_needs(sdist: pathlib.Path) -> None:
    have = members(sdist)
    for name in ("LICENSE", "README.md", "pyproject.toml", "Cargo.toml", "Cargo.lock", "PKG-INFO"):
        assert name in have, name
    # every tracked Rust source and manifest, every module of the package
    assert tracked("rust") <= have
    assert tracked("python/rustgrad") <= have
    with tarfile.open(sdist) as tar:
        license_text = tar.extractfile(f"rustgrad-{cargo_version()}/LICENSE").read()  # type: ignore[union-attr]
    assert license_text == (ROOT / "LICENSE").read_bytes()


def test_sdist_leaves_the_working_tree_out(sdist: pathlib.Path) -> None:
    for name in members(sdist):
        parts = pathlib.PurePosixPath(name).parts
        assert parts[0] not in ("target", ".venv", "dist", "site", ".git"), name
        assert "__pycache__" not in parts, name
        assert not name.endswith((".so", ".pyd", ".pyc", ".whl")), name


def test_sdist_metadata_matches_the_wheel(sdist: pathlib.Path) -> None:
    with tarfile.open(sdist) as tar:
        pkg_info = tar.extractfile(f"rustgrad-{cargo_version()}/PKG-INFO").read().decode()  # type: ignore[union-attr]
    meta = email.parser.Parser(policy=email.policy.compat32).parsestr(pkg_info)
    assert meta["Version"] == cargo_version()
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]


def test_pip_builds_a_wheel_from_the_sdist(sdist: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """What `pip install rustgrad` does on a platform without a wheel (here with the installed
    maturin, no download: --no-build-isolation)."""
    env = build_env()
    # its own target folder: the sdist builds from a temporary path, natively (no zig)
    env["CARGO_TARGET_DIR"] = str(ROOT / "target" / "sdist-check")
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
    run([*cmd, "--disable-pip-version-check", "-w", str(tmp_path), str(sdist)], env=env)
    (built,) = tmp_path.glob("rustgrad-*.whl")
    assert built.name.startswith(f"rustgrad-{cargo_version()}-cp39-abi3-")
    with zipfile.ZipFile(built) as whl:
        names = whl.namelist()
    assert "rustgrad/_core.abi3.so" in names
    assert f"rustgrad-{cargo_version()}.dist-info/licenses/LICENSE" in names
