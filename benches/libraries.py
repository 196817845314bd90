"""The libraries a benchmark compares: rustgrad, and torch beside it when it is installed."""

from __future__ import annotations

from typing import Any, Dict


def libraries(threads: int = 1) -> Dict[str, Any]:
    """{"rustgrad": rustgrad, "torch": torch} (torch at `threads` intra-op threads), or rustgrad
    alone, saying so, where torch is not installed."""
    import rustgrad

    libs: Dict[str, Any] = {"rustgrad": rustgrad}
    try:
        import torch

        torch.set_num_threads(threads)
        libs["torch"] = torch
    except ImportError:
        print("torch is not installed: printing rustgrad alone")
    return libs
