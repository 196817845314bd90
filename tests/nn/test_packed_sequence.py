"""nn.utils.rnn (pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence,
PackedSequence) and RNN/GRU/LSTM on packed input against torch: the same float64 sequences (and
torch's weights), then packed data, batch sizes, permutations, padded outputs, final states and
every gradient (sequences, initial states, parameters) compared; errors as torch's."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

from ..devices import strict_cupy
from ..models import assert_close, twin
from ..parity import parity, same_error

RTOL, ATOL = 1e-10, 1e-12
_rng = np.random.default_rng(0)
LENGTHS = [3, 5, 2, 5, 1]
SEQS = [_rng.standard_normal((n, 3)) for n in LENGTHS]
SORTED = sorted(SEQS, key=len, reverse=True)


def _leaves(lib, arrays):
    return [lib.tensor(a, requires_grad=True) for a in arrays]


def _weighted_backward(lib, outs, seed=1):
    rng = np.random.default_rng(seed)
    loss = 0
    for t in outs:
        loss = loss + (t * lib.tensor(rng.standard_normal(tuple(t.shape)))).sum()
    loss.backward()


# ---- padding and packing -------------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch_values_grad_fn_and_grads(batch_first, padding_side):
    def run(L):
        seqs = _leaves(L, SEQS)
        out = L.nn.utils.rnn.pad_sequence(seqs, batch_first=batch_first, padding_value=-2.5,
                                          padding_side=padding_side)
        _weighted_backward(L, [out])
        return out, out.grad_fn.name(), [s.grad for s in seqs]

    parity(run, RTOL, ATOL)


def test_pad_sequence_of_a_tensor_and_of_ints_matches_torch():
    parity(lambda L: (L.nn.utils.rnn.pad_sequence(L.tensor(SEQS[1])),
                      L.nn.utils.rnn.pad_sequence([L.tensor([1, 2, 3]), L.tensor([4])],
                                                  batch_first=True)))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_then_pad_round_trip_matches_torch(batch_first, enforce_sorted):
    arrays = SORTED if enforce_sorted else SEQS

    def run(L):
        R = L.nn.utils.rnn
        seqs = _leaves(L, arrays)
        padded = R.pad_sequence(seqs, batch_first=batch_first)
        lengths = [len(a) for a in arrays]
        packed = R.pack_padded_sequence(padded, lengths if batch_first else L.tensor(lengths),
                                        batch_first=batch_first, enforce_sorted=enforce_sorted)
        back, back_lengths = R.pad_packed_sequence(packed, batch_first=batch_first,
                                                   padding_value=0.5, total_length=7)
        _weighted_backward(L, [packed.data, back])
        return (packed.data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices,
                back, back_lengths, [s.grad for s in seqs])

    parity(run, RTOL, ATOL)


def test_pack_sequence_and_unpack_sequence_match_torch():
    def run(L):
        R = L.nn.utils.rnn
        seqs = _leaves(L, SEQS)
        packed = R.pack_sequence(seqs, enforce_sorted=False)
        pieces = R.unpack_sequence(packed)
        _weighted_backward(L, pieces)
        padded, lengths = R.pad_packed_sequence(packed)
        unpadded = R.unpad_sequence(padded, lengths)
        return (packed.data, packed.batch_sizes, pieces, unpadded, [s.grad for s in seqs],
                R.invert_permutation(L.tensor([2, 0, 3, 1])))

    parity(run, RTOL, ATOL)


def test_packed_sequence_tuple_fields_to_and_constructor_forms(sim_cuda):
    R = rustgrad.nn.utils.rnn
    packed = R.pack_sequence([rustgrad.tensor(a) for a in SEQS], enforce_sorted=False)

    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert isinstance(packed, tuple) and packed._fields == (
        "data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert packed.to(rustgrad.float64) is packed
    as32 = packed.to(rustgrad.float32)
    assert type(as32) is R.PackedSequence and as32.data.dtype == rustgrad.float32
    assert as32.batch_sizes is batch_sizes and as32.float().data.dtype == rustgrad.float32
    assert packed.double() is packed and not packed.is_cuda
    on_gpu = packed.to("cuda")
    assert str(on_gpu.data.device) == "cuda:0" and str(on_gpu.sorted_indices.device) == "cuda:0"
    assert str(on_gpu.batch_sizes.device) == "cpu"
    again = R.PackedSequence(data, batch_sizes, sorted_indices)
    np.testing.assert_array_equal(again.unsorted_indices.numpy(), unsorted_indices.numpy())
    pair = R.PackedSequence((data, batch_sizes))
    assert pair.sorted_indices is None and pair.unsorted_indices is None


@pytest.mark.parametrize("call,phrase", [
    (lambda L: L.nn.utils.rnn.pad_sequence([]), "received an empty list of sequences"),
    (lambda L: L.nn.utils.rnn.pad_sequence([L.zeros(2)], padding_side="middle"),
     "Expected padding_side to be one of left or right, but got middle."),
    (lambda L: L.nn.utils.rnn.pad_sequence(3),
     "pad_sequence: Expected iterable for input sequences, but got arg of type: <class 'int'>"),
    (lambda L: L.nn.utils.rnn.pack_sequence([L.zeros(1, 2), L.zeros(3, 2)]),
     "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True."),
    (lambda L: L.nn.utils.rnn.pack_padded_sequence(L.zeros(3, 2, 1), [3, 0]),
     "Length of all samples has to be greater than 0, but found an element in 'lengths' that "
     "is <= 0"),
    (lambda L: L.nn.utils.rnn.pack_padded_sequence(L.zeros(3, 2, 1), [3, 2, 1]),
     "Expected `len(lengths)` to be equal to batch_size, but got 3 (batch_size=2)"),
    (lambda L: L.nn.utils.rnn.pad_packed_sequence(
        L.nn.utils.rnn.pack_sequence([L.zeros(3, 1)]), total_length=2),
     "Expected total_length to be at least the length of the longest sequence in input, but "
     "got total_length=2 and max sequence length being 3"),
    (lambda L: L.nn.utils.rnn.PackedSequence(L.zeros(3), L.tensor([1, 1, 1]).to("cuda")),
     "batch_sizes should always be on CPU."),
])
def test_bad_arguments_raise_torch_error(call, phrase, sim_cuda):
    if "CPU" in phrase:
        # torch here has no GPU: the same check, on torch's meta device
        def torch_call(L):
            if L is torch:
                return L.nn.utils.rnn.PackedSequence(L.zeros(3), L.tensor([1, 1, 1],
                                                                          device="meta"))
            return call(L)
        same_error(torch_call, phrase)
        return
    same_error(call, phrase)


# ---- RNN, GRU, LSTM on packed input --------------------------------------------------------
def _run_packed(lib, m, arrays, state, lstm, enforce_sorted):
    R = lib.nn.utils.rnn
    seqs = _leaves(lib, arrays)
    packed = R.pack_sequence(seqs, enforce_sorted=enforce_sorted)
    leaves = [lib.tensor(s, requires_grad=True) for s in state] if state else []
    hx = (tuple(leaves) if lstm else leaves[0]) if leaves else None
    out, hn = m(packed, hx)
    assert isinstance(out, R.PackedSequence)
    finals = list(hn) if lstm else [hn]
    padded, lengths = R.pad_packed_sequence(out, batch_first=True)
    _weighted_backward(lib, [padded, *finals])
    grads = [s.grad for s in seqs] + [s.grad for s in leaves] + [p.grad for p in m.parameters()]
    return [out.data, out.batch_sizes, padded, lengths, *finals], grads


PACKED_CASES = [
    # id, builder, initial-state shapes (None: zeros), lstm, enforce_sorted
    ("rnn_tanh_sorted", lambda L: L.nn.RNN(3, 4, dtype=L.float64), None, False, True),
    ("rnn_relu_2layer_bidirectional_h0",
     lambda L: L.nn.RNN(3, 4, 2, "relu", bidirectional=True, dtype=L.float64),
     [(4, 5, 4)], False, False),
    ("gru_2layer_bidirectional",
     lambda L: L.nn.GRU(3, 4, num_layers=2, bidirectional=True, dtype=L.float64), None, False,
     False),
    ("gru_no_bias_h0_batch_first_ignored",
     lambda L: L.nn.GRU(3, 4, bias=False, batch_first=True, dtype=L.float64), [(1, 5, 4)],
     False, False),
    ("lstm_2layer_bidirectional_h0_c0",
     lambda L: L.nn.LSTM(3, 4, num_layers=2, bidirectional=True, dtype=L.float64),
     [(4, 5, 4), (4, 5, 4)], True, False),
    ("lstm_proj_bidirectional_sorted",
     lambda L: L.nn.LSTM(3, 5, proj_size=2, bidirectional=True, dtype=L.float64), None, True,
     True),
]


@pytest.mark.parametrize("case", PACKED_CASES, ids=[c[0] for c in PACKED_CASES])
def test_rnn_on_packed_input_matches_torch_outputs_states_and_grads(case):
    _, build, state_shapes, lstm, enforce_sorted = case
    arrays = SORTED if enforce_sorted else SEQS
    rng = np.random.default_rng(4)
    state = [rng.standard_normal(s) for s in state_shapes] if state_shapes else None
    tm, rm = twin(build)

    t_outs, t_grads = _run_packed(torch, tm, arrays, state, lstm, enforce_sorted)
    r_outs, r_grads = _run_packed(rustgrad, rm, arrays, state, lstm, enforce_sorted)

    for i, (r, t) in enumerate(zip(r_outs, t_outs)):
        assert_close(r, t, RTOL, ATOL, f"output {i}")
    assert r_outs[1].dtype == rustgrad.int64
    assert len(r_grads) == len(t_grads)
    for i, (r, t) in enumerate(zip(r_grads, t_grads)):
        assert_close(r, t, RTOL, ATOL, f"grad {i}")


def test_packed_final_state_is_the_state_at_each_sequence_length():
    rustgrad.manual_seed(0)
    m = rustgrad.nn.GRU(3, 4, dtype=rustgrad.float64)
    seqs = [rustgrad.tensor(a) for a in SEQS]

    _, h_packed = m(rustgrad.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False))

    for i, s in enumerate(seqs):
        _, h_alone = m(s.unsqueeze(1))
        assert_close(h_packed[:, i], h_alone[:, 0], RTOL, ATOL, f"sequence {i}")


def test_packed_input_dropout_between_layers_in_training_only():
    rustgrad.manual_seed(0)
    m = rustgrad.nn.LSTM(3, 4, num_layers=2, dropout=0.5, dtype=rustgrad.float64)
    packed = rustgrad.nn.utils.rnn.pack_sequence([rustgrad.tensor(a) for a in SORTED])

    a, b = m(packed)[0].data, m(packed)[0].data
    m.eval()
    c, d = m(packed)[0].data, m(packed)[0].data

    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    np.testing.assert_array_equal(c.detach().numpy(), d.detach().numpy())


@pytest.mark.parametrize("call,phrase", [
    (lambda L, p: L.nn.GRU(3, 4, dtype=L.float64)(p, L.zeros(1, 4, 4, dtype=L.float64)),
     "Expected hidden size (1, 5, 4), got [1, 4, 4]"),
    (lambda L, p: L.nn.RNN(2, 4, dtype=L.float64)(p),
     "input.size(-1) must be equal to input_size. Expected 2, got 3"),
    (lambda L, p: L.nn.RNN(3, 4)(p),
     "RNN input dtype (torch.float64) does not match weight dtype (torch.float32)"),
])
def test_rnn_on_packed_input_bad_arguments_raise_torch_error(call, phrase):
    def run(L):
        packed = L.nn.utils.rnn.pack_sequence([L.tensor(a) for a in SORTED])
        return call(L, packed)

    same_error(run, phrase)


def test_lstm_on_packed_input_wrong_state_size_raises_runtime_error():
    # torch's LSTM leaves this to its kernel ("got an incorrect number of RNN parameters");
    # rustgrad checks the sizes first, as torch does for RNN and GRU
    def run(L):
        packed = L.nn.utils.rnn.pack_sequence([L.tensor(a) for a in SORTED])
        hx = (L.zeros(1, 5, 4, dtype=L.float64), L.zeros(1, 5, 3, dtype=L.float64))
        return L.nn.LSTM(3, 4, dtype=L.float64)(packed, hx)

    same_error(run, "")
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(1, 5, 4\), got \[1, 5, 3\]"):
        run(rustgrad)


def test_packed_rnn_on_sim_cuda_device_keeps_arrays_there(sim_cuda):
    rustgrad.manual_seed(0)
    m = rustgrad.nn.LSTM(3, 4, bidirectional=True).to("cuda")
    seqs = [rustgrad.tensor(a, dtype=rustgrad.float32).to("cuda").requires_grad_()
            for a in SEQS]
    packed = rustgrad.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)

    out, (h, c) = m(packed)
    padded, _ = rustgrad.nn.utils.rnn.pad_packed_sequence(out)
    (padded.sum() + h.sum() + c.sum()).backward()

    assert str(out.batch_sizes.device) == "cpu"
    for t in (out.data, padded, h, c, seqs[0].grad, *(p.grad for p in m.parameters())):
        assert str(t.device) == "cuda:0" and isinstance(t._data, strict_cupy.ndarray)
