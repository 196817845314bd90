"""Recurrent networks: an LSTM over packed padded sequences and a GRU over packed ones,
bidirectional/projected LSTM, GRU and RNN variants, and a GRU/LSTMCell seq2seq with teacher
forcing."""

from __future__ import annotations

from types import ModuleType
from typing import Callable

import pytest

from ._common import assert_matches_torch, data, grads_of, params_of, program, programs_in, seed_params


@program
def lstm_packed(torch):
    nn = torch.nn
    rnn_utils = torch.nn.utils.rnn
    lstm = seed_params(torch, nn.LSTM(3, 4, num_layers=2, batch_first=True), 7)
    head = seed_params(torch, nn.Linear(4, 1), 8)
    lengths = torch.tensor([2, 5, 3])
    padded = torch.from_numpy(data((3, 5, 3), 9))
    for i, n in enumerate([2, 5, 3]):
        padded[i, n:] = 0
    packed = rnn_utils.pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
    print(packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
    out_packed, (h_n, c_n) = lstm(packed)
    out, out_lengths = rnn_utils.pad_packed_sequence(out_packed, batch_first=True)
    pred = head(h_n[-1]).squeeze(1)
    loss = ((pred - torch.tensor([0.5, -0.5, 1.0])) ** 2).mean() + out.abs().mean()
    loss.backward()

    gru = seed_params(torch, nn.GRU(3, 2), 10)
    seqs = [torch.from_numpy(data((n, 3), 20 + n)) for n in (4, 2, 1)]
    packed_gru = rnn_utils.pack_sequence(seqs)
    gout, gh = gru(packed_gru)
    return {"packed_data": packed.data, "out": out, "out_lengths": out_lengths, "h_n": h_n,
            "c_n": c_n, "loss": loss, "lstm_grads": grads_of(lstm), "head_grads": grads_of(head),
            "gru_data": gout.data, "gru_h": gh}


@program
def rnn_variants(torch):
    nn = torch.nn
    rnn_utils = nn.utils.rnn
    bi = seed_params(torch, nn.LSTM(3, 4, batch_first=True, bidirectional=True, proj_size=2), 91)
    x = torch.from_numpy(data((3, 4, 3), 92))
    lengths = torch.tensor([4, 2, 3])
    packed = rnn_utils.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, (h, c) = bi(packed)
    padded, lens = rnn_utils.pad_packed_sequence(out, batch_first=True, total_length=5,
                                                padding_value=-1.0)
    gru = seed_params(torch, nn.GRU(3, 4, num_layers=2), 93)
    h0 = torch.from_numpy(data((2, 4, 4), 94))
    gout, gh = gru(x, h0)  # seq-first: x read as (seq=3, batch=4, feature=3)
    plain = seed_params(torch, nn.RNN(3, 2, nonlinearity="relu", batch_first=True), 95)
    rout, rh = plain(x)
    loss = padded.clamp(min=0).sum() + gout.mean() + rout.pow(2).mean()
    loss.backward()
    return {"padded": padded, "lens": lens, "h": h, "c": c, "gout": gout, "gh": gh, "rout": rout,
            "grads": [grads_of(bi), grads_of(gru), grads_of(plain)]}


@program
def seq2seq_teacher_forcing(torch):
    nn = torch.nn
    F = torch.nn.functional
    vocab, hidden, pad = 7, 6, 0

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, 5, padding_idx=pad)
            self.encoder = nn.GRU(5, hidden, batch_first=True)
            self.cell = nn.LSTMCell(5, hidden)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, src, tgt_in):
            _, h = self.encoder(self.embed(src))
            h = h[0]
            c = torch.zeros_like(h)
            logits = []
            for t in range(tgt_in.shape[1]):
                h, c = self.cell(self.embed(tgt_in[:, t]), (h, c))
                logits.append(self.out(h))
            return torch.stack(logits, dim=1)

    model = seed_params(torch, Seq2Seq(), 50)
    src = torch.tensor([[1, 2, 3, 4], [5, 6, 2, 0]])
    tgt = torch.tensor([[1, 4, 3, 2, 0], [2, 6, 5, 0, 0]])
    opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        logits = model(src, tgt[:, :-1])
        loss = F.nll_loss(F.log_softmax(logits, -1).reshape(-1, vocab), tgt[:, 1:].reshape(-1),
                          ignore_index=pad)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0, norm_type=2.0)
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "params": params_of(model), "pad_row_grad": model.embed.weight.grad[pad]}


@pytest.mark.parametrize("fn", programs_in(__name__), ids=lambda fn: fn.__name__)
def test_program_matches_torch(fn: Callable[[ModuleType], dict]) -> None:
    assert_matches_torch(fn)
