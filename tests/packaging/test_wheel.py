"""The wheel `make wheel` builds: an abi3 manylinux2014 x86_64 wheel (auditwheel agrees), PEP 639
license metadata with LICENSE inside, Cargo's version, a stripped extension, every module of the
package, and an install into a fresh venv that imports and runs."""

from __future__ import annotations

import email.parser
import email.policy
import importlib.metadata
import os
import pathlib
import re
import struct
import subprocess
import sys
import zipfile
from email.message import Message
from typing import List

from .artifacts import ROOT, WHEEL_TAGS, cargo_version, run

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]


def dist_info(whl: zipfile.ZipFile) -> str:
    (name,) = {n.split("/")[0] for n in whl.namelist() if n.split("/")[0].endswith(".dist-info")}
    return name


def headers(text: str) -> Message:
    return email.parser.Parser(policy=email.policy.compat32).parsestr(text)


def metadata(whl: zipfile.ZipFile) -> Message:
    return headers(whl.read(f"{dist_info(whl)}/METADATA").decode())


def elf_sections(data: bytes) -> List[str]:
    """Section names of a 64-bit little-endian ELF file (read here: no binutils needed)."""
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not a 64-bit little-endian ELF"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i: int) -> tuple:
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size
        return struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)

    strtab_off, strtab_size = header(shstrndx)[4:6]
    strtab = data[strtab_off : strtab_off + strtab_size]
    return [strtab[header(i)[0] : strtab.index(b"\0", header(i)[0])].decode() for i in range(shnum)]


def test_tags_name_abi3_manylinux2014_x86_64(wheel: pathlib.Path) -> None:
    ver = cargo_version()
    name, version, *tags = wheel.name[: -len(".whl")].split("-")
    assert (name, version) == ("rustgrad", ver)
    py, abi, plat = tags
    assert {f"{py}-{abi}-{p}" for p in plat.split(".")} == WHEEL_TAGS
    with zipfile.ZipFile(wheel) as whl:
        info = headers(whl.read(f"{dist_info(whl)}/WHEEL").decode())
    assert set(info.get_all("Tag")) == WHEEL_TAGS
    assert info["Root-Is-Purelib"] == "false"


def test_auditwheel_finds_it_manylinux2014(wheel: pathlib.Path) -> None:
    out = run([sys.executable, "-m", "auditwheel", "show", str(wheel)]).stdout
    flat = " ".join(out.split())
    # manylinux2014 is manylinux_2_17: the extension needs nothing newer than glibc 2.17
    m = re.search(r'is consistent with the following platform tag: "([^"]+)"', flat)
    assert m, out
    assert m.group(1) == "manylinux_2_17_x86_64", out
    for lib in re.findall(r"(\S+\.so[.\d]*) with versions", flat):
        assert lib.startswith(("libc.", "libm.", "libpthread.", "libdl.", "librt.", "libgcc_s.")), out


def test_metadata_carries_pep639_license_and_cargo_version(wheel: pathlib.Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        meta = metadata(whl)
        info = dist_info(whl)
        licenses = [n for n in whl.namelist() if n.startswith(f"{info}/licenses/")]
        shipped = whl.read(f"{info}/licenses/LICENSE")
    assert tuple(int(p) for p in meta["Metadata-Version"].split(".")) >= (2, 4)
    assert meta["Version"] == cargo_version()
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert meta["License"] is None  # PEP 639 replaces the free-text field
    assert licenses == [f"{info}/licenses/LICENSE"]
    assert shipped == (ROOT / "LICENSE").read_bytes()
    assert b"MIT License" in shipped
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["Requires-Python"] == project["requires-python"]
    runtime = [r for r in meta.get_all("Requires-Dist") if "extra ==" not in r]
    assert runtime == project["dependencies"]


def test_extension_is_stripped(wheel: pathlib.Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        (ext,) = [n for n in whl.namelist() if n.startswith("rustgrad/_core.") and not n.endswith(".pyi")]
        assert ext == "rustgrad/_core.abi3.so"
        sections = elf_sections(whl.read(ext))
    assert ".dynsym" in sections and ".text" in sections  # the parser read the table
    assert ".symtab" not in sections
    assert [s for s in sections if s.startswith((".debug", ".zdebug"))] == []


def test_wheel_holds_every_module_of_the_package(wheel: pathlib.Path) -> None:
    src = ROOT / "python"
    want = {
        p.relative_to(src).as_posix()
        for p in (src / "rustgrad").rglob("*")
        if p.is_file() and p.suffix in (".py", ".pyi", ".typed") and "__pycache__" not in p.parts
    }
    with zipfile.ZipFile(wheel) as whl:
        have = {n for n in whl.namelist() if n.startswith("rustgrad/") and not n.endswith(".so")}
    assert have == want


def _expose(dist: str, site: pathlib.Path) -> None:
    """Make an installed distribution importable from `site` (links, no copy, no network)."""
    d = importlib.metadata.distribution(dist)
    base = pathlib.Path(str(d.locate_file("")))
    for top in sorted({pathlib.PurePath(str(f)).parts[0] for f in d.files or []} - {".."}):
        (site / top).symlink_to(base / top)


def test_installs_into_a_fresh_venv(wheel: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The wheel alone (no source tree, no editable install) imports, runs and reports its version."""
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(py), "--disable-pip-version-check"]
    wheelhouse = os.environ.get("RUSTGRAD_WHEELHOUSE")
    if wheelhouse:
        # a folder of numpy/safetensors/scipy wheels: a real resolution, offline
        run([*pip, "install", "--no-index", "--find-links", wheelhouse, str(wheel)])
    else:
        # the runtime dependencies this interpreter has, linked in; the wheel installed by pip
        purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
        site = pathlib.Path(run([str(py), "-c", purelib]).stdout.strip())
        for dep in ("numpy", "safetensors", "scipy"):
            _expose(dep, site)
        run([*pip, "install", "--no-index", "--no-deps", str(wheel)])
    run([*pip, "check"])
    program = (
        "import importlib.metadata, rustgrad\n"
        "x = rustgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
        "(x * x).sum().backward()\n"
        "print(rustgrad.__version__, importlib.metadata.version('rustgrad'), rustgrad.__file__, x.grad.tolist())\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    out = subprocess.run([str(py), "-c", program], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    version, dist_version, file, grad = out.stdout.split(" ", 3)
    assert version == dist_version == cargo_version()
    assert pathlib.Path(file).is_relative_to(venv)
    assert grad.strip() == "[2.0, 4.0, 6.0]"
