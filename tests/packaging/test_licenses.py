"""docs/licenses.md lists every dependency's license and is current (tools/gen_licenses.py
regenerated here must reproduce it); what the wheel links is under permissive licenses."""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

from .artifacts import ROOT

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

PAGE = ROOT / "docs" / "licenses.md"


def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_licenses", ROOT / "tools" / "gen_licenses.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_licenses_page_is_current() -> None:
    assert PAGE.read_text() == gen().render(), "run: python tools/gen_licenses.py --write"


def test_every_locked_crate_and_runtime_dependency_is_listed() -> None:
    text = PAGE.read_text()
    lock = tomllib.loads((ROOT / "Cargo.lock").read_text())
    for pkg in lock["package"]:
        if "source" in pkg:  # workspace crates have none
            assert f"| {pkg['name']} | {pkg['version']} |" in text, pkg["name"]
    for req in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        assert f"| `{req}` |" in text, req


def test_linked_crates_allow_an_mit_wheel() -> None:
    linked, _ = gen().crates(gen().cargo_metadata())
    assert linked, "no crate found linked into the extension"
    permissive = {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "Unicode-3.0", "Zlib", "ISC"}
    for name, _, lic in linked:
        # each OR-alternative set must offer one permissive choice
        choices = [set(re.findall(r"[A-Za-z0-9.\-]+", alt)) - {"WITH", "AND"} for alt in lic.split(" OR ")]
        assert any(c and c <= permissive | {"LLVM-exception"} for c in choices), (name, lic)
