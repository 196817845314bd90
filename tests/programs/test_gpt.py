"""A tiny GPT trained with AdamW, weight-decay groups and gradient clipping, its attention
written with scaled_dot_product_attention or nn.MultiheadAttention."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import numpy as np
import pytest

from ._common import assert_matches_torch, params_of, program, programs_in, seed_params


class _GPTParts:
    """Builds a tiny GPT from a library; attention is chosen per program."""

    @staticmethod
    def build(torch, vocab, d, heads, block, layers, use_mha):
        nn = torch.nn
        F = torch.nn.functional

        class SelfAttention(nn.Module):
            def __init__(self):
                super().__init__()
                # no qkv bias: the key bias has an exactly zero gradient, and Adam would turn
                # its rounding noise into visible steps
                self.qkv = nn.Linear(d, 3 * d, bias=False)
                self.proj = nn.Linear(d, d)

            def forward(self, x):
                b, t, c = x.shape
                q, k, v = self.qkv(x).split(d, dim=2)
                q = q.view(b, t, heads, c // heads).transpose(1, 2)
                k = k.view(b, t, heads, c // heads).transpose(1, 2)
                v = v.view(b, t, heads, c // heads).transpose(1, 2)
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

        class MHA(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = nn.MultiheadAttention(d, heads, bias=False, batch_first=True)

            def forward(self, x):
                t = x.shape[1]
                mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
                y, _ = self.attn(x, x, x, attn_mask=mask, need_weights=False)
                return y

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1 = nn.LayerNorm(d)
                self.attn = MHA() if use_mha else SelfAttention()
                self.ln2 = nn.LayerNorm(d)
                self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

            def forward(self, x):
                x = x + self.attn(self.ln1(x))
                return x + self.mlp(self.ln2(x))

        class GPT(nn.Module):
            def __init__(self):
                super().__init__()
                self.tok = nn.Embedding(vocab, d)
                self.pos = nn.Embedding(block, d)
                self.blocks = nn.ModuleList([Block() for _ in range(layers)])
                self.ln_f = nn.LayerNorm(d)
                self.head = nn.Linear(d, vocab, bias=False)

            def forward(self, idx, targets=None):
                t = idx.shape[1]
                x = self.tok(idx) + self.pos(torch.arange(t))
                for blk in self.blocks:
                    x = blk(x)
                logits = self.head(self.ln_f(x))
                loss = None
                if targets is not None:
                    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
                return logits, loss

        return GPT()


def _train_gpt(torch, use_mha):
    vocab, block = 11, 6
    model = _GPTParts.build(torch, vocab, d=8, heads=2, block=block, layers=2, use_mha=use_mha)
    seed_params(torch, model, 11)
    tokens = np.random.default_rng(12).integers(0, vocab, size=(4, block + 1))
    idx = torch.from_numpy(tokens[:, :-1].copy())
    targets = torch.from_numpy(tokens[:, 1:].copy())
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=3e-3, betas=(0.9, 0.95))
    losses, norms = [], []
    for _ in range(4):
        _, loss = model(idx, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5).item())
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        logits, _ = model(idx[:1, :3])
        nxt = torch.argmax(logits[:, -1, :], dim=-1)
    return {"losses": losses, "norms": norms, "params": params_of(model), "next": nxt}


@program
def gpt_sdpa(torch):
    return _train_gpt(torch, use_mha=False)


@program
def gpt_multihead_attention(torch):
    return _train_gpt(torch, use_mha=True)


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
