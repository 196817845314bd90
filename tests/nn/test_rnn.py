"""RNN, GRU, LSTM and their cells against torch: torch's initial weights copied through
NumPy, the same float64 input (and initial state), then outputs, final states and every
gradient (input, initial state, parameters) compared; parameter names, shapes, init, repr,
errors and warnings."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import rustgrad
import torch

from ..devices import strict_cupy
from ..models import assert_close, twin

RTOL, ATOL = 1e-10, 1e-12


def _run_seq(lib, m, x, state, lstm):
    """Forward and a weighted-sum backward; returns (outputs, grads) as lists of tensors."""
    xi = lib.tensor(x, requires_grad=True)
    leaves = []
    hx = None
    if state is not None:
        leaves = [lib.tensor(s, requires_grad=True) for s in state]
        hx = tuple(leaves) if lstm else leaves[0]
    out, hn = m(xi, hx)
    finals = list(hn) if lstm else [hn]
    rng = np.random.default_rng(7)
    loss = 0
    for t in [out, *finals]:
        loss = loss + (t * lib.tensor(rng.standard_normal(tuple(t.shape)))).sum()
    loss.backward()
    return [out, *finals], [xi.grad, *(s.grad for s in leaves), *(p.grad for p in m.parameters())]


SEQ_CASES = [
    # id, module builder, input shape, initial-state shapes (None: zeros), lstm
    ("rnn_tanh_2layer", lambda L: L.nn.RNN(3, 5, num_layers=2, dtype=L.float64), (4, 2, 3),
     None, False),
    ("rnn_relu_bidirectional_batch_first",
     lambda L: L.nn.RNN(3, 5, nonlinearity="relu", batch_first=True, bidirectional=True,
                        dtype=L.float64), (2, 4, 3), [(2, 2, 5)], False),
    ("rnn_no_bias_unbatched", lambda L: L.nn.RNN(3, 4, 1, "tanh", False, dtype=L.float64),
     (5, 3), [(1, 4)], False),
    ("gru_2layer_bidirectional_h0",
     lambda L: L.nn.GRU(3, 5, num_layers=2, bidirectional=True, dtype=L.float64), (4, 2, 3),
     [(4, 2, 5)], False),
    ("gru_no_bias_unbatched", lambda L: L.nn.GRU(3, 5, bias=False, dtype=L.float64), (4, 3),
     None, False),
    ("lstm_2layer_bidirectional_h0_c0",
     lambda L: L.nn.LSTM(3, 5, num_layers=2, bidirectional=True, dtype=L.float64), (4, 2, 3),
     [(4, 2, 5), (4, 2, 5)], True),
    ("lstm_proj_bidirectional_batch_first",
     lambda L: L.nn.LSTM(3, 5, num_layers=2, batch_first=True, proj_size=2, bidirectional=True,
                         dtype=L.float64), (2, 4, 3), [(4, 2, 2), (4, 2, 5)], True),
    ("lstm_unbatched_zero_state", lambda L: L.nn.LSTM(3, 4, dtype=L.float64), (6, 3), None,
     True),
]


@pytest.mark.parametrize("case", SEQ_CASES, ids=[c[0] for c in SEQ_CASES])
def test_recurrent_module_same_weights_matches_torch_outputs_states_and_grads(case):
    _, build, shape, state_shapes, lstm = case
    tm, rm = twin(build)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    state = None if state_shapes is None else [rng.standard_normal(s) for s in state_shapes]

    t_outs, t_grads = _run_seq(torch, tm, x, state, lstm)
    r_outs, r_grads = _run_seq(rustgrad, rm, x, state, lstm)

    for i, (r, t) in enumerate(zip(r_outs, t_outs)):
        assert_close(r, t, RTOL, ATOL, f"output {i}")
    names = ["input", *(f"state {i}" for i in range(len(state or []))),
             *(n for n, _ in tm.named_parameters())]
    assert len(r_grads) == len(t_grads) == len(names)
    for n, r, t in zip(names, r_grads, t_grads):
        assert_close(r, t, RTOL, ATOL, n)


CELL_CASES = [
    ("rnn_cell_tanh", lambda L: L.nn.RNNCell(3, 4, dtype=L.float64), (2, 3), False),
    ("rnn_cell_relu_no_bias", lambda L: L.nn.RNNCell(3, 4, False, "relu", dtype=L.float64),
     (2, 3), False),
    ("gru_cell", lambda L: L.nn.GRUCell(3, 4, dtype=L.float64), (2, 3), False),
    ("gru_cell_unbatched", lambda L: L.nn.GRUCell(3, 4, dtype=L.float64), (3,), False),
    ("lstm_cell", lambda L: L.nn.LSTMCell(3, 4, dtype=L.float64), (2, 3), True),
    ("lstm_cell_unbatched_no_bias", lambda L: L.nn.LSTMCell(3, 4, bias=False,
                                                            dtype=L.float64), (3,), True),
]


def _run_cell(lib, cell, xs, lstm):
    """Three steps: the first from the default zero state, the next from the previous one."""
    leaves = [lib.tensor(x, requires_grad=True) for x in xs]
    hx = None
    outs = []
    for x in leaves:
        hx = cell(x, hx)
        outs.extend(hx if lstm else [hx])
    loss = sum((o * (i + 1.5)).tanh().sum() for i, o in enumerate(outs))
    loss.backward()
    return outs, [x.grad for x in leaves] + [p.grad for p in cell.parameters()]


@pytest.mark.parametrize("case", CELL_CASES, ids=[c[0] for c in CELL_CASES])
def test_recurrent_cell_three_steps_matches_torch_states_and_grads(case):
    _, build, shape, lstm = case
    tm, rm = twin(build)
    xs = [np.random.default_rng(i).standard_normal(shape) for i in range(3)]

    t_outs, t_grads = _run_cell(torch, tm, xs, lstm)
    r_outs, r_grads = _run_cell(rustgrad, rm, xs, lstm)

    assert len(r_outs) == len(t_outs)
    for i, (r, t) in enumerate(zip(r_outs, t_outs)):
        assert_close(r, t, RTOL, ATOL, f"state {i}")
    for i, (r, t) in enumerate(zip(r_grads, t_grads)):
        assert_close(r, t, RTOL, ATOL, f"grad {i}")


NAME_CASES = [
    lambda L: L.nn.RNN(3, 5, num_layers=3, bidirectional=True),
    lambda L: L.nn.GRU(3, 5, num_layers=2, bias=False),
    lambda L: L.nn.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2),
    lambda L: L.nn.LSTM(3, 6, bias=False, proj_size=4),
    lambda L: L.nn.LSTMCell(3, 4),
    lambda L: L.nn.RNNCell(3, 4, bias=False),
]


@pytest.mark.parametrize("build", NAME_CASES)
def test_recurrent_parameters_names_shapes_and_repr_equal_torch(build):
    tm, rm = build(torch), build(rustgrad)

    assert [(n, tuple(p.shape)) for n, p in rm.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    assert list(rm.state_dict()) == list(tm.state_dict())
    assert repr(rm) == repr(tm)
    if hasattr(tm, "all_weights"):
        assert rm._flat_weights_names == tm._flat_weights_names
        assert [[tuple(p.shape) for p in ps] for ps in rm.all_weights] == \
            [[tuple(p.shape) for p in ps] for ps in tm.all_weights]


@pytest.mark.parametrize("build", [lambda L: L.nn.GRU(4, 25, num_layers=2),
                                   lambda L: L.nn.LSTMCell(4, 16)])
def test_recurrent_init_uniform_within_inverse_sqrt_hidden(build):
    rustgrad.manual_seed(0)
    m = build(rustgrad)
    bound = 1 / math.sqrt(m.hidden_size)

    values = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])

    assert np.abs(values).max() <= bound
    assert np.abs(values).max() > 0.95 * bound        # spread over the whole interval
    assert abs(values.mean()) < 0.1 * bound
    assert all(p.requires_grad and p.is_leaf for p in m.parameters())


def test_rnn_default_dtype_float32_matches_torch_outputs():
    tm, rm = twin(lambda L: L.nn.LSTM(3, 4, num_layers=2))
    x = np.random.default_rng(3).standard_normal((5, 2, 3)).astype(np.float32)

    to, (th, tc) = tm(torch.tensor(x))
    ro, (rh, rc) = rm(rustgrad.tensor(x))

    assert ro.dtype == rustgrad.float32
    for r, t in ((ro, to), (rh, th), (rc, tc)):
        assert_close(r, t, 1e-5, 1e-6)


def test_rnn_dropout_between_layers_train_differs_eval_matches_torch():
    tm, rm = twin(lambda L: L.nn.GRU(3, 8, num_layers=3, dropout=0.5, dtype=L.float64))
    x = np.random.default_rng(4).standard_normal((6, 2, 3))
    tm.eval()
    rm.eval()
    assert_close(rm(rustgrad.tensor(x))[0], tm(torch.tensor(x))[0], RTOL, ATOL)

    rm.train()
    rustgrad.manual_seed(0)
    train_out = rm(rustgrad.tensor(x))[0]

    eval_out = rm.eval()(rustgrad.tensor(x))[0]
    assert not np.allclose(train_out.detach().numpy(), eval_out.detach().numpy())


def test_rnn_dropout_with_one_layer_warns(lib):
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1, "
                                         "but got dropout=0.3 and num_layers=1"):
        lib.nn.LSTM(2, 3, dropout=0.3)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda L: L.nn.GRU(2, 3, proj_size=1), ValueError,
     "proj_size argument is only supported for LSTM, not RNN or GRU"),
    (lambda L: L.nn.RNN(2, 3, nonlinearity="gelu"), ValueError,
     "Unknown nonlinearity 'gelu'. Select from 'tanh' or 'relu'."),
    (lambda L: L.nn.LSTM(2, 3, proj_size=3), ValueError,
     "proj_size has to be smaller than hidden_size"),
    (lambda L: L.nn.GRU(2, 3, dropout=1.5), ValueError, "dropout should be a number in range"),
    (lambda L: L.nn.RNN(2, 3)(L.zeros(1, 2, 3, 2)), ValueError,
     "RNN: Expected input to be 2D or 3D, got 4D tensor instead"),
    (lambda L: L.nn.LSTM(2, 3)(L.zeros(4)), ValueError,
     "LSTM: Expected input to be 2D or 3D, got 1D instead"),
    (lambda L: L.nn.GRU(2, 3)(L.zeros(4, 1, 5)), RuntimeError,
     "input.size(-1) must be equal to input_size. Expected 2, got 5"),
    (lambda L: L.nn.GRU(2, 3)(L.zeros(4, 1, 2), L.zeros(2, 1, 3)), RuntimeError,
     "Expected hidden size (1, 1, 3), got [2, 1, 3]"),
    (lambda L: L.nn.RNN(2, 3)(L.zeros(4, 1, 2), L.zeros(1, 3)), RuntimeError,
     "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
    (lambda L: L.nn.LSTM(2, 3)(L.zeros(4, 1, 2), (L.zeros(1, 1, 3), L.zeros(1, 1, 4))),
     RuntimeError, "Expected hidden[1] size (1, 1, 3), got [1, 1, 4]"),
    (lambda L: L.nn.LSTM(2, 3)(L.zeros(4, 2), (L.zeros(1, 1, 3), L.zeros(1, 1, 3))),
     RuntimeError, "For unbatched 2-D input, hx and cx should also be 2-D but got (3-D, 3-D)"),
    (lambda L: L.nn.RNN(2, 3)(L.zeros(4, 1, 2, dtype=L.float64)), ValueError,
     "RNN input dtype (torch.float64) does not match weight dtype (torch.float32). Convert "
     "input: input.to(torch.float32), or convert model: model.to(torch.float64)"),
    (lambda L: L.nn.RNN(0, 3), ValueError, "input_size must be greater than zero"),
    (lambda L: L.nn.LSTM(2.0, 3), TypeError, "input_size should be of type int, got: float"),
    (lambda L: L.nn.GRU(2, 3, bias=1), TypeError, "bias should be of type bool, got: int"),
    (lambda L: L.nn.RNN(2, 3, batch_first=None), TypeError,
     "batch_first should be of type bool, got: NoneType"),
    (lambda L: L.nn.GRU(2, 3)(L.zeros(0, 1, 2)), RuntimeError,
     "Expected sequence length to be larger than 0 in RNN"),
    (lambda L: L.nn.GRUCell(2, 3)(L.zeros(1, 1, 2)), ValueError,
     "GRUCell: Expected input to be 1D or 2D, got 3D instead"),
    (lambda L: L.nn.LSTMCell(2, 3)(L.zeros(1, 2), (L.zeros(1, 1, 3), L.zeros(1, 3))),
     ValueError, "LSTMCell: Expected hx[0] to be 1D or 2D, got 3D instead"),
])
def test_recurrent_bad_arguments_raise_torch_error(lib, call, exc, msg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as info:
            call(lib)

    assert msg in str(info.value)


def test_rnn_double_converts_parameters_and_runs_float64(lib):
    m = lib.nn.GRU(2, 3, num_layers=2).double()

    out, h = m(lib.zeros(4, 1, 2, dtype=lib.float64))

    assert out.dtype == h.dtype == lib.float64
    assert tuple(out.shape) == (4, 1, 3) and tuple(h.shape) == (2, 1, 3)


def test_recurrent_modules_on_sim_cuda_device_keep_arrays_there(sim_cuda):
    rustgrad.manual_seed(0)
    for m in (rustgrad.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2),
              rustgrad.nn.GRU(3, 4, num_layers=2, dropout=0.2), rustgrad.nn.RNNCell(3, 4)):
        m = m.to("cuda")
        x = rustgrad.randn(5, 2, 3).to("cuda").requires_grad_()
        out = m(x[0]) if isinstance(m, rustgrad.nn.RNNCell) else m(x)[0]
        out.sum().backward()

        assert str(out.device) == "cuda:0" and isinstance(out._data, strict_cupy.ndarray)
        assert str(x.grad.device) == "cuda:0"
        assert all(str(p.grad.device) == "cuda:0" for p in m.parameters())
