"""rustgrad against torch on one device (a GPU by default): a per-op chain on (1,), (16,) and
(4096, 4096); an MLP 4096-4096-4096-10 SGD step at batch 1024; a scaled-up GPT AdamW step.
Both libraries run the same program on the same device; every timing is bracketed by the
device's synchronize. Prints one table: ms per iteration, best of rounds, and rustgrad/torch.

    python benches/bench_gpu.py                  # cuda, full sizes (benches/gpu_check.sh runs it)
    python benches/bench_gpu.py --device cpu --quick   # small sizes, any machine (tested)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np


def _sync(lib: Any, device: str) -> Callable[[], None]:
    if not device.startswith("cuda"):
        return lambda: None
    return lib.cuda.synchronize


def best_ms(fn: Callable[[], Any], sync: Callable[[], None], iters: int, rounds: int,
            budget_s: float) -> float:
    """Best ms per call over `rounds` runs of `iters` calls, after one warm-up call; stops
    early once `budget_s` seconds are spent (at least one round always runs)."""
    fn()
    sync()
    best, start = math.inf, time.perf_counter()
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / iters)
        if time.perf_counter() - start > budget_s:
            break
    return best * 1e3


# ---- the workloads: each builds its state on `device` and returns one iteration ----------
def op_chain(lib: Any, device: str, shape: Tuple[int, ...]) -> Callable[[], Any]:
    """Ten elementwise ops and a sum, forward and backward."""
    x = lib.rand(*shape, device=device, requires_grad=True)

    def it() -> Any:
        y = ((x * 2 + 1).exp().log() - x).sigmoid() * x
        y = (y.tanh() + y.relu()).mul(0.5).sqrt()
        y.sum().backward()
        x.grad = None
        return y

    return it


def mlp(lib: Any, device: str, width: int, batch: int) -> Callable[[], Any]:
    """One SGD step of Linear(width, width)-ReLU-Linear(width, width)-ReLU-Linear(width, 10)."""
    return mlp_of(lib, device, [width, width, width, 10], batch, "SGD")


def mlp_of(lib: Any, device: str, sizes: List[int], batch: int, optimizer: str) -> Callable[[], Any]:
    """One step of `optimizer` (lr 1e-3) on an MLP of these layer sizes (ReLU between),
    cross-entropy loss."""
    nn = lib.nn
    lib.manual_seed(0)
    layers: List[Any] = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers += [nn.Linear(a, b)] + ([nn.ReLU()] if i < len(sizes) - 2 else [])
    model = nn.Sequential(*layers).to(device)
    opt = getattr(lib.optim, optimizer)(model.parameters(), lr=1e-3)
    x = lib.randn(batch, sizes[0], device=device)
    y = lib.randint(0, sizes[-1], (batch,), device=device)

    def it() -> Any:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return it


def gpt(lib: Any, device: str, cfg: Dict[str, int]) -> Callable[[], Any]:
    """One AdamW step of a GPT (pre-norm blocks, causal attention, exact GELU)."""
    nn, F = lib.nn, lib.nn.functional
    vocab, block, n_embd, n_head = cfg["vocab"], cfg["block"], cfg["n_embd"], cfg["n_head"]

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
            self.qkv, self.proj = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd)
            self.fc, self.out = nn.Linear(n_embd, 4 * n_embd), nn.Linear(4 * n_embd, n_embd)
            self.register_buffer("mask", lib.tril(lib.ones(block, block)).view(1, 1, block, block))

        def forward(self, x: Any) -> Any:
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(n_embd, dim=2)
            q, k, v = (z.view(b, t, n_head, c // n_head).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // n_head))
            att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
            y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, c)
            x = x + self.proj(y)
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, n_embd), nn.Embedding(block, n_embd)
            self.blocks = nn.Sequential(*[Block() for _ in range(cfg["n_layer"])])
            self.ln, self.head = nn.LayerNorm(n_embd), nn.Linear(n_embd, vocab, bias=False)
            self.register_buffer("positions", lib.arange(block))

        def forward(self, idx: Any, targets: Any) -> Any:
            x = self.blocks(self.tok(idx) + self.pos(self.positions[: idx.shape[1]]))
            logits = self.head(self.ln(x))
            return F.cross_entropy(logits.view(-1, vocab), targets.view(-1))

    lib.manual_seed(0)
    model = GPT().to(device)
    opt = lib.optim.AdamW(model.parameters(), lr=3e-4)
    rng = np.random.default_rng(0)
    idx = lib.tensor(rng.integers(0, vocab, (cfg["batch"], block)), device=device)
    targets = lib.tensor(rng.integers(0, vocab, (cfg["batch"], block)), device=device)

    def it() -> Any:
        opt.zero_grad()
        loss = model(idx, targets)
        loss.backward()
        opt.step()
        return loss

    return it


FULL = {"chain": [(1,), (16,), (4096, 4096)], "mlp": (4096, 1024),
        "gpt": {"vocab": 8192, "block": 256, "n_embd": 512, "n_head": 8, "n_layer": 4,
                "batch": 16}}
QUICK = {"chain": [(1,), (16,), (64, 64)], "mlp": (64, 32),
         "gpt": {"vocab": 64, "block": 16, "n_embd": 32, "n_head": 2, "n_layer": 1, "batch": 2}}


def workloads(sizes: Dict[str, Any]) -> List[Tuple[str, Callable[[Any, str], Callable[[], Any]], int]]:
    """(name, builder(lib, device), iterations per round) for every row of the table."""
    rows: List[Tuple[str, Callable[[Any, str], Callable[[], Any]], int]] = []
    for shape in sizes["chain"]:
        n = 1 if len(shape) == 1 else shape[0] * shape[1]
        rows.append((f"op chain {tuple(shape)}", lambda lib, d, s=shape: op_chain(lib, d, s),
                     20 if n > 1 << 20 else 200))
    w, b = sizes["mlp"]
    rows.append((f"MLP {w}-{w}-{w}-10 batch {b} step", lambda lib, d: mlp(lib, d, w, b), 10))
    g = sizes["gpt"]
    rows.append((f"GPT {g['n_layer']}x{g['n_embd']} ctx {g['block']} batch {g['batch']} step",
                 lambda lib, d: gpt(lib, d, g), 3))
    return rows


def main(argv: List[str] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--budget", type=float, default=20.0, help="seconds per row and library")
    p.add_argument("--only", default=None, help="rustgrad or torch alone")
    args = p.parse_args(argv)
    import rustgrad

    libs: Dict[str, Any] = {"rustgrad": rustgrad}
    try:
        import torch

        libs["torch"] = torch
        if args.device == "cpu":
            torch.set_num_threads(1)  # rustgrad's NumPy ops run on one core too
    except ImportError:
        print("torch is not installed: rustgrad alone")
    if args.only:
        libs = {args.only: libs[args.only]}
    if args.device.startswith("cuda"):
        names = [rustgrad.cuda.get_device_name()]
        if "torch" in libs:
            names.append(libs["torch"].cuda.get_device_name())
        print("device:", " / ".join(sorted(set(names))))
    print(f"{'workload':44} {'rustgrad ms':>12} {'torch ms':>10} {'ratio':>7}")
    for name, build, iters in workloads(QUICK if args.quick else FULL):
        ms: Dict[str, float] = {}
        for lib_name, lib in libs.items():
            try:
                ms[lib_name] = best_ms(build(lib, args.device), _sync(lib, args.device),
                                       iters, args.rounds, args.budget)
            except Exception as e:  # one failing row must not hide the others
                print(f"  {name}: {lib_name} failed: {type(e).__name__}: {e}", file=sys.stderr)
        r, t = ms.get("rustgrad"), ms.get("torch")
        ratio = f"{r / t:7.2f}" if r and t else f"{'-':>7}"
        print(f"{name:44} {r if r else float('nan'):12.3f} {t if t else float('nan'):10.3f} {ratio}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
