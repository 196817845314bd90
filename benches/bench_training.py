"""A real training step (forward, backward, optimizer step) for an MLP and a small CNN,
rustgrad and torch side by side in one run at the same thread count. Prints ms per step and
rustgrad/torch ratios, and the peak live bytes rustgrad's storage accounting saw in a step.

    python benches/bench_training.py [--steps 50] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable, Dict, Tuple


def _models(lib: Any) -> Dict[str, Tuple[Callable[[], Any], Tuple[int, ...]]]:
    nn = lib.nn
    return {
        "MLP 784-256-256-10, batch 64": (
            lambda: nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                                  nn.Linear(256, 10)),
            (64, 784),
        ),
        "CNN 2 conv + 2 fc on 1x16x16, batch 32": (
            lambda: nn.Sequential(
                nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10)),
            (32, 1, 16, 16),
        ),
    }


def _step_time(lib: Any, build: Callable[[], Any], shape: Tuple[int, ...], steps: int,
               init: Any = None) -> Tuple[float, Any]:
    import numpy as np

    lib.manual_seed(0)
    model = build()
    if init is not None:
        model.load_state_dict({k: lib.tensor(v) for k, v in init.items()})
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal(shape).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, shape[0]))
    loss_fn = lib.nn.functional.cross_entropy

    def step() -> None:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        best = min(best, (time.perf_counter() - t0) / steps)
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    return best * 1e3, state


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    import rustgrad

    try:
        import torch

        torch.set_num_threads(a.threads)
    except ImportError:
        torch = None
    print(f"training step (Adam), best of 5 x {a.steps} steps, {a.threads} thread(s); ms per step")
    print(f"{'model':42s} {'rustgrad':>9s} {'torch':>9s} {'ratio':>7s}")
    for name, (build, shape) in _models(rustgrad).items():
        rg, init = _step_time(rustgrad, build, shape, a.steps)
        if torch is not None:
            tbuild = _models(torch)[name][0]
            tt, _ = _step_time(torch, tbuild, shape, a.steps, init)
            print(f"{name:42s} {rg:9.3f} {tt:9.3f} {rg / tt:7.2f}")
        else:
            print(f"{name:42s} {rg:9.3f} {'-':>9s}")


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
