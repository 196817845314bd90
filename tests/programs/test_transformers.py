"""Transformers from torch's modules: a TransformerEncoder classifier with a padding mask, an
nn.Transformer translator, and MultiheadAttention/SDPA attention weights."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, data, grads_of, params_of, program, programs_in, seed_params


@program
def transformer_encoder_classifier(torch):
    nn = torch.nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(9, 8, padding_idx=0)
            layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                               batch_first=True, bias=False)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
            self.out = nn.Linear(8, 2)

        def forward(self, tokens):
            pad = tokens == 0
            h = self.encoder(self.embed(tokens), src_key_padding_mask=pad)
            keep = (~pad).unsqueeze(-1).float()
            pooled = (h * keep).sum(1) / keep.sum(1)
            return self.out(pooled)

    model = seed_params(torch, Classifier(), 13)
    tokens = torch.tensor([[3, 4, 5, 0], [1, 2, 0, 0], [6, 7, 8, 2]])
    labels = torch.tensor([1, 0, 1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(tokens), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        probs = model(tokens).softmax(-1)
    return {"losses": losses, "params": params_of(model), "probs": probs,
            "n_params": sum(p.numel() for p in model.parameters())}


@program
def transformer_seq2seq(torch):
    nn = torch.nn
    d, vocab = 8, 7

    class Translator(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_embed = nn.Embedding(vocab, d)
            self.tgt_embed = nn.Embedding(vocab, d)
            self.core = nn.Transformer(d_model=d, nhead=2, num_encoder_layers=1,
                                       num_decoder_layers=1, dim_feedforward=16, dropout=0.0,
                                       batch_first=True, norm_first=True, bias=False)
            self.generator = nn.Linear(d, vocab)

        def forward(self, src, tgt):
            mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
            h = self.core(self.src_embed(src), self.tgt_embed(tgt), tgt_mask=mask,
                          src_key_padding_mask=src == 0, memory_key_padding_mask=src == 0)
            return self.generator(h)

    model = seed_params(torch, Translator(), 84)
    src = torch.tensor([[1, 2, 3, 0], [4, 5, 6, 2]])
    tgt = torch.tensor([[1, 3, 2, 4], [2, 6, 5, 1]])
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    losses = []
    for _ in range(3):
        logits = model(src, tgt[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    return {"losses": losses, "params": params_of(model), "mask": mask}


@program
def attention_weights(torch):
    nn = torch.nn
    F = torch.nn.functional
    mha = seed_params(torch, nn.MultiheadAttention(6, 2, batch_first=True, kdim=4, vdim=5), 96)
    q = torch.from_numpy(data((2, 3, 6), 97))
    k = torch.from_numpy(data((2, 4, 4), 98))
    v = torch.from_numpy(data((2, 4, 5), 99))
    pad = torch.tensor([[False, False, False, True], [False, False, False, False]])
    out, avg = mha(q, k, v, key_padding_mask=pad)
    _, per_head = mha(q, k, v, key_padding_mask=pad, average_attn_weights=False)
    out.sum().backward()
    qs = torch.from_numpy(data((1, 2, 3, 4), 100)).requires_grad_()
    additive = torch.from_numpy(data((3, 3), 101))
    sdpa = F.scaled_dot_product_attention(qs, qs, qs, attn_mask=additive, scale=0.3)
    sdpa.sum().backward()
    return {"out": out, "avg": avg, "per_head": per_head, "grads": grads_of(mha),
            "sdpa": sdpa, "qs_grad": qs.grad}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
