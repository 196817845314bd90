"""What the explainability tests share: the line a test statement runs on, and node provenance
switched on around a test."""

from __future__ import annotations

import inspect
from typing import Iterator

import pytest
import rustgrad


def next_line() -> int:
    """The line after the caller's: the statement whose site a test checks."""
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno + 1


@pytest.fixture
def provenance() -> Iterator[None]:
    """Node sites are recorded only with provenance on; restored after the test."""
    with rustgrad.autograd.set_provenance(True):
        yield
