"""The real programs (tests/programs/test_<program>.py, each registered with `_common.program`)
as one suite."""

from __future__ import annotations

import importlib
import pathlib

from ._common import PROGRAMS

# every test file of this folder, so that PROGRAMS holds all the programs whichever files pytest
# was given
for _path in sorted(pathlib.Path(__file__).parent.glob("test_*.py")):
    importlib.import_module(f"{__package__}.{_path.stem}")


def test_suite_is_large_enough() -> None:
    assert len(PROGRAMS) >= 20
