"""Issue 11's small GPT training step, rustgrad and torch side by side in one run: 2 blocks,
n_embd 128, 4 heads, block 64, batch 16, exact GELU, AdamW. Prints ms per step (best of
rounds) and the rustgrad/torch ratio (bar: at most 1.0).

    python benches/bench_gpt.py [--steps 5] [--rounds 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from typing import Any, Callable

from children import child_env
from libraries import libraries  # benches/ is on sys.path when a bench runs

VOCAB, BLOCK, N_EMBD, N_HEAD, N_LAYER, BATCH = 256, 64, 128, 4, 2, 16


def _gpt(lib: Any) -> Any:
    nn, F = lib.nn, lib.nn.functional

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(N_EMBD, 3 * N_EMBD)
            self.proj = nn.Linear(N_EMBD, N_EMBD)
            self.register_buffer("mask", lib.tril(lib.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))

        def forward(self, x: Any) -> Any:
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(N_EMBD, dim=2)
            q, k, v = (z.view(b, t, N_HEAD, c // N_HEAD).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // N_HEAD))
            att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
            return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(N_EMBD), nn.LayerNorm(N_EMBD)
            self.attn = Attention()
            self.fc, self.out = nn.Linear(N_EMBD, 4 * N_EMBD), nn.Linear(4 * N_EMBD, N_EMBD)

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln1(x))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))  # exact (erf) GELU

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok, self.pos = nn.Embedding(VOCAB, N_EMBD), nn.Embedding(BLOCK, N_EMBD)
            self.blocks = nn.Sequential(*[Block() for _ in range(N_LAYER)])
            self.ln = nn.LayerNorm(N_EMBD)
            self.head = nn.Linear(N_EMBD, VOCAB, bias=False)

        def forward(self, idx: Any, targets: Any) -> Any:
            pos = lib.arange(idx.shape[1])
            x = self.blocks(self.tok(idx) + self.pos(pos))
            logits = self.head(self.ln(x))
            return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))

    return GPT()


def make_step(lib: Any) -> Callable[[], Any]:
    """One AdamW training step of the small GPT on a fixed random batch, as a closure."""
    import numpy as np

    lib.manual_seed(0)
    model = _gpt(lib)
    opt = lib.optim.AdamW(model.parameters(), lr=3e-4)
    rng = np.random.default_rng(0)
    idx = lib.tensor(rng.integers(0, VOCAB, (BATCH, BLOCK)))
    targets = lib.tensor(rng.integers(0, VOCAB, (BATCH, BLOCK)))

    def step() -> None:
        opt.zero_grad()
        model(idx, targets).backward()
        opt.step()

    return step


def step_ms(lib: Any, steps: int, rounds: int) -> float:
    """Best ms per step over `rounds` runs of `steps` steps."""
    step = make_step(lib)
    step()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        best = min(best, (time.perf_counter() - t0) / steps)
    return best * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    # NumPy's BLAS and Rayon read their thread counts when NumPy and rustgrad load (below)
    os.environ.update(child_env(args.threads))
    libs = libraries(args.threads)
    times = {name: step_ms(lib, args.steps, args.rounds) for name, lib in libs.items()}
    line = f"GPT step (2 blocks, n_embd 128, batch 16x64, AdamW): rustgrad {times['rustgrad']:.1f} ms"
    if "torch" in times:
        ratio = times["rustgrad"] / times["torch"]
        line += f", torch {times['torch']:.1f} ms, ratio {ratio:.2f} ({'met' if ratio <= 1.0 else 'not met'})"
    print(line)


if __name__ == "__main__":
    main()
