"""Issue 11's training steps (forward, backward, optimizer step), rustgrad, torch and a
hand-written NumPy floor side by side in one process at one thread count.

- MLP 784-512-512-10, batch 128, cross-entropy; SGD (lr 0.01) and Adam (torch's defaults).
  The floor is the same network written directly in NumPy (float32): addmm with bias, ReLU,
  log-softmax cross-entropy mean, the backward by hand, and the optimizer update in place into
  preallocated buffers. It is the reference for what NumPy itself can do per step.
- CNN, batch 32, 1x28x28 (the classic MNIST example): Conv2d(1, 16, 3, padding=1), ReLU,
  MaxPool2d(2), Conv2d(16, 32, 3, padding=1), ReLU, MaxPool2d(2), Flatten, Linear(32*7*7, 128),
  ReLU, Linear(128, 10), cross-entropy; SGD lr 0.01, momentum 0.9.

    OPENBLAS_NUM_THREADS=1 python benches/bench_steps.py [--steps 10] [--rounds 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable, Dict, List, Sequence

import numpy as np
from libraries import libraries  # benches/ is on sys.path when a bench runs

MLP_SIZES = (784, 512, 512, 10)
MLP_BATCH = 128
CNN_BATCH = 32
SGD_LR = 0.01
ADAM = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8}  # torch's defaults


def mlp_model(lib: Any, sizes: Sequence[int] = MLP_SIZES) -> Any:
    """Linear/ReLU stack with the given layer widths."""
    nn = lib.nn
    layers: List[Any] = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        if i:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(fan_in, fan_out))
    return nn.Sequential(*layers)


def cnn_model(lib: Any, side: int = 28) -> Any:
    """Two 3x3 conv (1->16->32, padding 1) + ReLU + 2x2 max-pool, then Linear(32*(side/4)^2, 128),
    ReLU, Linear(128, 10)."""
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * (side // 4) ** 2, 128), nn.ReLU(), nn.Linear(128, 10))


def _optimizer(lib: Any, params: Any, name: str) -> Any:
    if name == "sgd":
        return lib.optim.SGD(params, lr=SGD_LR)
    if name == "sgd-momentum":
        return lib.optim.SGD(params, lr=SGD_LR, momentum=0.9)
    return lib.optim.Adam(params, **ADAM)


def library_step(lib: Any, build: Callable[[Any], Any], init: Dict[str, np.ndarray], x: np.ndarray,
                 y: np.ndarray, optimizer: str) -> Callable[[], float]:
    """One training step of `build(lib)` started from the weights `init`, as a closure."""
    model = build(lib)
    model.load_state_dict({k: lib.tensor(v) for k, v in init.items()})
    opt = _optimizer(lib, model.parameters(), optimizer)
    xt, yt = lib.tensor(x), lib.tensor(y)
    loss_fn = lib.nn.functional.cross_entropy

    def step() -> float:
        opt.zero_grad()
        loss = loss_fn(model(xt), yt)
        loss.backward()
        opt.step()
        return loss

    return step


class MLPFloor:
    """The MLP's step in NumPy alone: every activation, gradient and optimizer buffer is
    preallocated and written in place (float32 throughout, torch's formulas)."""

    def __init__(self, init: Dict[str, np.ndarray], x: np.ndarray, y: np.ndarray,
                 optimizer: str) -> None:
        n = len([k for k in init if k.endswith("weight")])
        self.w = self._layer_order(init, "weight", n)
        self.b = self._layer_order(init, "bias", n)
        batch = x.shape[0]
        self.x, self.y, self.rows = x, y, np.arange(batch)
        self.h = [np.empty((batch, w.shape[0]), np.float32) for w in self.w]  # layer outputs
        self.dh = [np.empty_like(h) for h in self.h]
        self.mask = [np.empty(h.shape, bool) for h in self.h[:-1]]
        self.gw = [np.empty_like(w) for w in self.w]
        self.gb = [np.empty_like(b) for b in self.b]
        self.params = self.w + self.b
        self.grads = self.gw + self.gb
        self.scratch = [np.empty_like(p) for p in self.params]
        self.optimizer = optimizer
        if optimizer == "adam":
            self.m = [np.zeros_like(p) for p in self.params]
            self.v = [np.zeros_like(p) for p in self.params]
            self.t = 0

    @staticmethod
    def _layer_order(init: Dict[str, np.ndarray], suffix: str, n: int) -> List[np.ndarray]:
        keys = sorted((k for k in init if k.endswith(suffix)), key=lambda k: int(k.split(".")[0]))
        assert len(keys) == n
        return [init[k].copy() for k in keys]

    def step(self) -> float:
        """Forward, backward and the optimizer update; returns the loss."""
        h, dh, w, b = self.h, self.dh, self.w, self.b
        inp = self.x
        last = len(w) - 1
        for i in range(len(w)):
            np.matmul(inp, w[i].T, out=h[i])
            h[i] += b[i]
            if i < last:
                np.maximum(h[i], 0, out=h[i])
            inp = h[i]
        # log-softmax cross-entropy, mean over the batch
        z, dz = h[last], dh[last]
        z -= z.max(axis=1, keepdims=True)
        np.exp(z, out=dz)
        s = dz.sum(axis=1, keepdims=True)
        loss = float(np.log(s).sum() - z[self.rows, self.y].sum()) / len(self.y)
        # d loss / d logits = (softmax - onehot) / batch
        dz *= 1.0 / s
        dz[self.rows, self.y] -= 1.0
        dz *= np.float32(1.0 / len(self.y))
        for i in range(last, -1, -1):
            below = h[i - 1] if i else self.x
            np.matmul(dh[i].T, below, out=self.gw[i])
            np.sum(dh[i], axis=0, out=self.gb[i])
            if i:
                np.matmul(dh[i], w[i], out=dh[i - 1])
                np.greater(h[i - 1], 0, out=self.mask[i - 1])
                np.multiply(dh[i - 1], self.mask[i - 1], out=dh[i - 1])
        if self.optimizer == "adam":
            self._adam()
        else:
            self._sgd()
        return loss

    def _sgd(self) -> None:
        for p, g, tmp in zip(self.params, self.grads, self.scratch):
            np.multiply(g, np.float32(SGD_LR), out=tmp)
            p -= tmp

    def _adam(self) -> None:
        lr, (b1, b2), eps = ADAM["lr"], ADAM["betas"], ADAM["eps"]
        self.t += 1
        step_size = np.float32(lr / (1 - b1 ** self.t))
        inv_bc2_sqrt = np.float32(1 / (1 - b2 ** self.t) ** 0.5)
        for p, g, m, v, tmp in zip(self.params, self.grads, self.m, self.v, self.scratch):
            # m.lerp_(g, 1 - b1); v.mul_(b2).addcmul_(g, g, 1 - b2)
            np.subtract(g, m, out=tmp)
            tmp *= np.float32(1 - b1)
            m += tmp
            np.multiply(g, g, out=tmp)
            tmp *= np.float32(1 - b2)
            v *= np.float32(b2)
            v += tmp
            # p.addcdiv_(m, sqrt(v) / sqrt(bc2) + eps, value=-lr / bc1)
            np.sqrt(v, out=tmp)
            tmp *= inv_bc2_sqrt
            tmp += np.float32(eps)
            np.divide(m, tmp, out=tmp)
            tmp *= step_size
            p -= tmp


def _state(lib: Any, build: Callable[[Any], Any]) -> Dict[str, np.ndarray]:
    lib.manual_seed(0)
    return {k: v.detach().numpy().copy() for k, v in build(lib).state_dict().items()}


def _ms_per_step(step: Callable[[], Any], steps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps * 1e3


def interleaved(steps_by_name: Dict[str, Callable[[], Any]], steps: int, rounds: int
                ) -> Dict[str, List[float]]:
    """ms per step of each closure, `rounds` times, the order rotated each round so that no
    one of them always runs first or last."""
    for fn in steps_by_name.values():
        fn()  # warm up: first-call allocations, lazy imports, optimizer state
        fn()
    names = list(steps_by_name)
    out: Dict[str, List[float]] = {n: [] for n in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            out[n].append(_ms_per_step(steps_by_name[n], steps))
    return out


def measure(threads: int, steps: int, rounds: int, quick: bool = False,
            groups: Sequence[str] = ("mlp", "cnn")) -> Dict[str, Dict[str, List[float]]]:
    """{"mlp sgd": {"rustgrad": [ms, ...], "torch": [...], "numpy": [...]}, "mlp adam": ...,
    "cnn sgd-momentum": {...}} at `threads` threads (the caller set OPENBLAS_NUM_THREADS)."""
    libs = libraries(threads)
    first = next(iter(libs.values()))
    rng = np.random.default_rng(0)
    results: Dict[str, Dict[str, List[float]]] = {}
    if "mlp" in groups:
        sizes = (64, 32, 32, 10) if quick else MLP_SIZES
        batch = 8 if quick else MLP_BATCH
        init = _state(first, lambda lib: mlp_model(lib, sizes))
        x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
        y = rng.integers(0, sizes[-1], batch)
        for opt in ("sgd", "adam"):
            fns: Dict[str, Callable[[], Any]] = {
                name: library_step(lib, lambda lb: mlp_model(lb, sizes), init, x, y, opt)
                for name, lib in libs.items()}
            fns["numpy"] = MLPFloor(init, x, y, opt).step
            results[f"mlp {opt}"] = interleaved(fns, steps, rounds)
    if "cnn" in groups:
        side = 8 if quick else 28
        batch = 4 if quick else CNN_BATCH
        init = _state(first, lambda lib: cnn_model(lib, side))
        x = rng.standard_normal((batch, 1, side, side)).astype(np.float32)
        y = rng.integers(0, 10, batch)
        fns = {name: library_step(lib, lambda lb: cnn_model(lb, side), init, x, y, "sgd-momentum")
               for name, lib in libs.items()}
        results["cnn sgd-momentum"] = interleaved(fns, steps, rounds)
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    res = measure(a.threads, a.steps, a.rounds)
    print(f"{a.threads} thread(s), median of {a.rounds} rounds x {a.steps} steps; ms per step")
    for label, by_impl in res.items():
        med = {k: statistics.median(v) for k, v in by_impl.items()}
        line = f"{label:18s} " + "  ".join(f"{k} {v:8.2f}" for k, v in med.items())
        for ref in ("torch", "numpy"):
            if ref in med:
                line += f"  rustgrad/{ref} {med['rustgrad'] / med[ref]:5.2f}"
        print(line)


if __name__ == "__main__":
    main()
