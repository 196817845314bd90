"""What a recorded node costs in memory: a long chain's live graph stays under issue 11's
400 bytes per node (torch's is ~880), measured as the bytes glibc's malloc has handed out."""

from __future__ import annotations

import ctypes
import gc
import sys

import pytest
import rustgrad

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="glibc's mallinfo2 measures the allocations")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _in_use() -> int:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    return int(libc.mallinfo2().uordblks)


def _bytes_per_node(step, n: int = 50_000) -> float:
    x = rustgrad.ones(1, requires_grad=True)
    y = x
    gc.collect()
    before = _in_use()
    for _ in range(n):
        y = step(y)
    gc.collect()
    per_node = (_in_use() - before) / n
    y.sum().backward()  # the graph is still whole
    assert x.grad is not None
    return per_node


@pytest.mark.parametrize("name,step", [
    ("add a scalar (no saved slot)", lambda y: y + 0.001),
    ("mul by a scalar (one saved slot)", lambda y: y * 1.0001),
    ("the bench's chain y * 1.0001 + 0.001 (two nodes a step)", lambda y: y * 1.0001 + 0.001),
])
def test_a_node_costs_under_400_bytes(name: str, step) -> None:
    per_node = _bytes_per_node(step)
    if "two nodes" in name:
        per_node /= 2
    assert per_node < 400, f"{name}: {per_node:.0f} bytes per node"
