"""RNN, LSTM, GRU and their cells, as torch.nn's: same parameter names, shapes, initialization
and gate formulas, written from differentiable rustgrad ops (one linear for the input
projection of the whole sequence per layer and direction, then one step per time step).

A PackedSequence input runs step by step over its batch sizes (`_forward_packed`): each
sequence's final state is the one at its own last step, as torch's.
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple

from ... import _creation
from ..._ops.joins import cat, stack
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


# ---- one time step ------------------------------------------------------------------------
# `gi` is the input projection x @ W_ih.T + b_ih of this step; the formulas (and the order in
# which terms are added) are torch's CPU cells (aten/src/ATen/native/RNN.cpp).
def _rnn_step(mode: str, gi: Tensor, h: Tensor, w_hh: Tensor,
              b_hh: Optional[Tensor]) -> Tensor:
    pre = F.linear(h, w_hh, b_hh) + gi
    return pre.tanh() if mode == "RNN_TANH" else F.relu(pre)


def _gru_step(gi: Tensor, h: Tensor, w_hh: Tensor, b_hh: Optional[Tensor]) -> Tensor:
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r = (h_r + i_r).sigmoid()
    z = (h_z + i_z).sigmoid()
    n = (i_n + h_n * r).tanh()
    return (h - n) * z + n


def _lstm_step(gi: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Optional[Tensor],
               w_hr: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
    i, f, g, o = (F.linear(h, w_hh, b_hh) + gi).chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _direction(mode: str, x: Tensor, h: Tensor, c: Optional[Tensor], weights: List[Any],
               reverse: bool) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
    """Runs one layer in one direction over x (T, N, I) from (h, c); returns (out, h_n, c_n)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    steps = F.linear(x, w_ih, b_ih).unbind(0)
    order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
    outs: List[Any] = [None] * len(steps)
    for t in order:
        if mode == "LSTM":
            h, c = _lstm_step(steps[t], h, c, w_hh, b_hh, w_hr)
        elif mode == "GRU":
            h = _gru_step(steps[t], h, w_hh, b_hh)
        else:
            h = _rnn_step(mode, steps[t], h, w_hh, b_hh)
        outs[t] = h
    return stack(outs, 0), h, c


def _cell(mode: str, gi: Tensor, h: Tensor, c: Optional[Tensor],
          weights: List[Any]) -> Tuple[Tensor, Optional[Tensor]]:
    _, w_hh, _, b_hh, w_hr = weights
    if mode == "LSTM":
        return _lstm_step(gi, h, c, w_hh, b_hh, w_hr)
    if mode == "GRU":
        return _gru_step(gi, h, w_hh, b_hh), None
    return _rnn_step(mode, gi, h, w_hh, b_hh), None


def _packed_direction(mode: str, data: Tensor, h: Tensor, c: Optional[Tensor],
                      weights: List[Any], reverse: bool,
                      batch_sizes: List[int]) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
    """One layer in one direction over packed rows (sum(batch_sizes), I) from the states of
    the whole batch (N, H); returns (packed out, h_n, c_n)."""
    gis = F.linear(data, weights[0], weights[2])
    starts = [sum(batch_sizes[:t]) for t in range(len(batch_sizes))]
    outs: List[Any] = [None] * len(batch_sizes)
    if reverse:
        # sequences join the batch (at their last step) as the walk goes back in time
        h0, c0 = h, c
        live = batch_sizes[-1]
        h, c = h0[:live], (c0[:live] if c0 is not None else None)
        for t in range(len(batch_sizes) - 1, -1, -1):
            bs = batch_sizes[t]
            if bs > live:
                h = cat([h, h0[live:bs]], 0)
                c = cat([c, c0[live:bs]], 0) if c is not None and c0 is not None else c
                live = bs
            h, c = _cell(mode, gis[starts[t]:starts[t] + bs], h, c, weights)
            outs[t] = h
        return cat(outs, 0), h, c
    # sequences leave the batch after their last step, keeping that step's state
    done_h: List[Tensor] = []
    done_c: List[Tensor] = []
    for t, bs in enumerate(batch_sizes):
        if bs < h.size(0):
            done_h.insert(0, h[bs:])
            h = h[:bs]
            if c is not None:
                done_c.insert(0, c[bs:])
                c = c[:bs]
        h, c = _cell(mode, gis[starts[t]:starts[t] + bs], h, c, weights)
        outs[t] = h
    h_n = cat([h, *done_h], 0) if done_h else h
    c_n = cat([c, *done_c], 0) if done_c and c is not None else c
    return cat(outs, 0), h_n, c_n


def _mini_batch(rnn: Any, input: Tensor, batch_sizes: Any) -> int:
    if batch_sizes is not None:
        return int(batch_sizes[0])
    return input.size(0) if rnn.batch_first else input.size(1)


# ---- the sequence modules -----------------------------------------------------------------
class RNNBase(Module):
    """The shared base of :class:`RNN`, :class:`LSTM` and :class:`GRU`: their constructor,
    parameters (``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}``,
    with ``_reverse`` for the backward direction), initialization (uniform in
    ``(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``) and argument checks.
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1

        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
                or isinstance(dropout, bool)):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an "
                "element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                "dropout expects num_layers greater than 1, but got "
                f"dropout={dropout} and num_layers={num_layers}", UserWarning, stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(
                f"batch_first should be of type bool, got: {type(batch_first).__name__}"
            )
        if not isinstance(input_size, int):
            raise TypeError(
                f"input_size should be of type int, got: {type(input_size).__name__}"
            )
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(
                f"hidden_size should be of type int, got: {type(hidden_size).__name__}"
            )
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size

        def empty(*shape: int) -> Parameter:
            return Parameter(_creation.empty(shape, device=device, dtype=dtype))

        self._flat_weights_names: List[str] = []
        self._all_weights: List[List[str]] = []
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                params = [empty(gate_size, layer_input_size), empty(gate_size, real_hidden_size)]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    params += [empty(gate_size), empty(gate_size)]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    params.append(empty(proj_size, hidden_size))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, param in zip(names, params):
                    setattr(self, name, param)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> List[Optional[Tensor]]:
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> List[List[Parameter]]:
        """The parameters of each layer and direction, as a list of lists in torch's order."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op, as torch's on CPU (it packs weights for cuDNN)."""

    def reset_parameters(self) -> None:
        """Re-draws every parameter uniformly in ``(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    # ---- checks (torch's messages) --------------------------------------------------------
    def check_input(self, input: Tensor, batch_sizes: Any = None) -> None:
        """Raises if ``input`` does not fit the layer: its dtype differs from the weights', it does
        not have 3 dimensions (2 when packed, with ``batch_sizes``), or its last dimension is not
        ``input_size``.
        """
        w0 = self._flat_weights[0]
        if w0 is not None and input.dtype != w0.dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({w0.dtype}). "
                f"Convert input: input.to({w0.dtype}), or convert model: model.to({input.dtype})"
            )
        expected_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(
                "input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {input.size(-1)}"
            )

    def get_expected_hidden_size(self, input: Tensor,
                                 batch_sizes: Any = None) -> Tuple[int, int, int]:
        """The shape ``(num_layers * num_directions, N, H_out)`` the hidden state must have for ``input``.
        """
        mini_batch = _mini_batch(self, input, batch_sizes)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: Tuple[int, int, int],
                          msg: str = "Expected hidden size {}, got {}") -> None:
        """Raises a RuntimeError (with ``msg``) if ``hx`` does not have the shape ``expected_hidden_size``.
        """
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Any = None) -> None:
        """Checks ``input`` and the shape of the initial hidden state ``hidden``."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Any, permutation: Any) -> Any:
        """Returns ``hx`` reordered by ``permutation``; this base returns it unchanged."""
        return hx

    def extra_repr(self) -> str:
        """The sizes and the options that differ from their defaults."""
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ---- the computation ------------------------------------------------------------------
    def _layer_weights(self, layer: int, direction: int) -> List[Any]:
        suffix = "_reverse" if direction == 1 else ""

        def get(name: str) -> Any:
            return getattr(self, f"{name}_l{layer}{suffix}", None)

        return [get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"),
                get("weight_hr")]

    def _run(self, x: Tensor, h0: Tensor, c0: Optional[Tensor],
             direction: Callable[..., Any] = _direction
             ) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        """x: (T, N, I) (time first), or packed rows with _packed_direction; h0, c0:
        (layers * directions, N, H)."""
        if isinstance(x, Tensor) and x.dim() == 3 and x.size(0) == 0:
            raise RuntimeError(
                "Expected sequence length to be larger than 0 in RNN"
            )
        num_directions = 2 if self.bidirectional else 1
        hs: List[Tensor] = []
        cs: List[Tensor] = []
        h0s = h0.unbind(0)
        c0s = c0.unbind(0) if c0 is not None else None
        for layer in range(self.num_layers):
            outs = []
            for d in range(num_directions):
                i = layer * num_directions + d
                out, h, c = direction(self.mode, x, h0s[i], c0s[i] if c0s else None,
                                      self._layer_weights(layer, d), d == 1)
                outs.append(out)
                hs.append(h)
                if c is not None:
                    cs.append(c)
            x = outs[0] if num_directions == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, stack(hs, 0), (stack(cs, 0) if cs else None)

    def _forward_packed(self, input: PackedSequence, hx: Any) -> Tuple[PackedSequence, Any]:
        """forward for a PackedSequence: states in sorted order inside, caller's order out."""
        data, batch_sizes, sorted_indices, unsorted_indices = input
        sizes = [int(b) for b in batch_sizes.tolist()]
        lstm = self.mode == "LSTM"
        num_directions = 2 if self.bidirectional else 1

        def zeros(size: int) -> Tensor:
            return _creation.zeros((self.num_layers * num_directions, sizes[0], size),
                                   dtype=data.dtype, device=data.device)

        real = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            hx = (zeros(real), zeros(self.hidden_size)) if lstm else zeros(real)
        elif sorted_indices is not None:
            hx = (tuple(s.index_select(1, sorted_indices) for s in hx) if lstm
                  else hx.index_select(1, sorted_indices))
        self.check_forward_args(data, hx, batch_sizes)
        x, h_n, c_n = self._run(data, hx[0] if lstm else hx, hx[1] if lstm else None,
                                functools.partial(_packed_direction, batch_sizes=sizes))
        states = [h_n, *([c_n] if c_n is not None else [])]
        if unsorted_indices is not None:
            states = [s.index_select(1, unsorted_indices) for s in states]
        output = PackedSequence(x, batch_sizes, sorted_indices, unsorted_indices)
        return output, (tuple(states) if lstm else states[0])

    def _prepare(self, input: Tensor, name: str) -> Tuple[Tensor, bool, int]:
        if input.dim() not in (2, 3):
            raise ValueError(
                f"{name}: Expected input to be 2D or 3D, got {input.dim()}D"
                + (" tensor instead" if name == "RNN" else " instead")
            )
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        return input, is_batched, batch_dim

    def _zeros(self, input: Tensor, size: int) -> Tensor:
        num_directions = 2 if self.bidirectional else 1
        batch = input.size(0) if self.batch_first else input.size(1)
        return _creation.zeros((self.num_layers * num_directions, batch, size),
                               dtype=input.dtype, device=input.device)

    def _time_first(self, input: Tensor) -> Tensor:
        return input.transpose(0, 1) if self.batch_first else input

    def _finish(self, out: Tensor, is_batched: bool, batch_dim: int) -> Tensor:
        if self.batch_first:
            out = out.transpose(0, 1)
        return out if is_batched else out.squeeze(batch_dim)


class _SingleStateRNN(RNNBase):
    _name = "RNN"

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)  # type: ignore[return-value]
        input, is_batched, batch_dim = self._prepare(input, self._name)
        if hx is not None:
            if not is_batched and hx.dim() != 2:
                raise RuntimeError(
                    f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor"
                )
            if is_batched and hx.dim() != 3:
                raise RuntimeError(
                    f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor"
                )
            if not is_batched:
                hx = hx.unsqueeze(1)
        else:
            hx = self._zeros(input, self.hidden_size)
        self.check_forward_args(input, hx, None)
        out, h_n, _ = self._run(self._time_first(input), hx, None)
        out = self._finish(out, is_batched, batch_dim)
        return out, (h_n if is_batched else h_n.squeeze(1))

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class RNN(_SingleStateRNN):
    """Applies a multi-layer Elman RNN to a sequence: for each step ``t`` each layer computes
    ``h_t = tanh(x_t @ W_ih.T + b_ih + h_(t-1) @ W_hh.T + b_hh)`` (or ReLU).

    The input of layer ``k > 1`` is the output of layer ``k - 1``. The steps are recorded ops,
    so backward runs back through time.

    Args:
        input_size (int): the number of features of each input step.
        hidden_size (int): the number of features of the hidden state.
        num_layers (int): the number of stacked layers, each fed the output of the one
            before. Default: ``1``.
        bias (bool): whether the layers have the biases ``b_ih`` and ``b_hh``. Default: ``True``.
        batch_first (bool): take and return ``(N, L, *)`` instead of ``(L, N, *)`` (the hidden
            states stay ``(layers, N, H)``). Default: ``False``.
        dropout (float): the probability of dropout on the outputs of every layer but the
            last, in training mode. Default: ``0.0``.
        bidirectional (bool): run a second pass backwards in time and concatenate the two.
            Default: ``False``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.
        nonlinearity (str): ``'tanh'`` or ``'relu'``. Default: ``'tanh'``.

    Shape:
        - Input: ``(L, N, H_in)``, ``(N, L, H_in)`` with ``batch_first``, ``(L, H_in)``
          unbatched, or a ``PackedSequence``.
        - ``hx``: ``(D * num_layers, N, H_out)``, zeros if omitted (``D`` is 2 if
          bidirectional else 1).
        - Output: ``(output, h_n)``: ``output`` is ``(L, N, D * H_out)``, ``h_n`` the final
          hidden state of every layer.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> rnn = nn.RNN(4, 8)
        >>> output, h_n = rnn(torch.randn(6, 2, 4))
        >>> output.shape, h_n.shape
        (torch.Size([6, 2, 8]), torch.Size([1, 2, 8]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(mode, *args, **kwargs)


class GRU(_SingleStateRNN):
    """Applies a multi-layer gated recurrent unit RNN to a sequence (Cho et al., 2014).

    For each step ``t`` each layer computes, with the gates in torch's order (r, z, n)::

        r_t = sigmoid(W_ir x_t + b_ir + W_hr h_(t-1) + b_hr)
        z_t = sigmoid(W_iz x_t + b_iz + W_hz h_(t-1) + b_hz)
        n_t = tanh(W_in x_t + b_in + r_t * (W_hn h_(t-1) + b_hn))
        h_t = (1 - z_t) * n_t + z_t * h_(t-1)

    Args:
        input_size (int): the number of features of each input step.
        hidden_size (int): the number of features of the hidden state.
        num_layers (int): the number of stacked layers, each fed the output of the one
            before. Default: ``1``.
        bias (bool): whether the layers have the biases ``b_ih`` and ``b_hh``. Default: ``True``.
        batch_first (bool): take and return ``(N, L, *)`` instead of ``(L, N, *)`` (the hidden
            states stay ``(layers, N, H)``). Default: ``False``.
        dropout (float): the probability of dropout on the outputs of every layer but the
            last, in training mode. Default: ``0.0``.
        bidirectional (bool): run a second pass backwards in time and concatenate the two.
            Default: ``False``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.

    Shape:
        - Input: ``(L, N, H_in)``, ``(N, L, H_in)`` with ``batch_first``, ``(L, H_in)``
          unbatched, or a ``PackedSequence``.
        - ``hx``: ``(D * num_layers, N, H_out)``, zeros if omitted.
        - Output: ``(output, h_n)``: ``output`` is ``(L, N, D * H_out)``, ``h_n`` the final
          hidden state of every layer.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> gru = nn.GRU(4, 8, batch_first=True)
        >>> output, h_n = gru(torch.randn(2, 6, 4))
        >>> output.shape, h_n.shape
        (torch.Size([2, 6, 8]), torch.Size([1, 2, 8]))
    """

    _name = "GRU"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class LSTM(RNNBase):
    """Applies a multi-layer long short-term memory RNN to a sequence.

    For each step ``t`` each layer computes, with the gates in torch's order (i, f, g, o)::

        i_t = sigmoid(W_ii x_t + b_ii + W_hi h_(t-1) + b_hi)
        f_t = sigmoid(W_if x_t + b_if + W_hf h_(t-1) + b_hf)
        g_t = tanh(W_ig x_t + b_ig + W_hg h_(t-1) + b_hg)
        o_t = sigmoid(W_io x_t + b_io + W_ho h_(t-1) + b_ho)
        c_t = f_t * c_(t-1) + i_t * g_t
        h_t = o_t * tanh(c_t)

    The input of layer ``k > 1`` is the output ``h_t`` of layer ``k - 1``. The steps are
    recorded ops, so backward runs back through time.

    Args:
        input_size (int): the number of features of each input step.
        hidden_size (int): the number of features of the hidden state.
        num_layers (int): the number of stacked layers, each fed the output of the one
            before. Default: ``1``.
        bias (bool): whether the layers have the biases ``b_ih`` and ``b_hh``. Default: ``True``.
        batch_first (bool): take and return ``(N, L, *)`` instead of ``(L, N, *)`` (the hidden
            states stay ``(layers, N, H)``). Default: ``False``.
        dropout (float): the probability of dropout on the outputs of every layer but the
            last, in training mode. Default: ``0.0``.
        bidirectional (bool): run a second pass backwards in time and concatenate the two.
            Default: ``False``.
        device (rustgrad.device, optional): where the parameters are created.
        dtype (rustgrad.dtype, optional): the dtype of the parameters.
        proj_size (int): if > 0, ``h_t`` is projected to this size by ``weight_hr_l{k}``.
            Default: ``0``.

    Shape:
        - Input: ``(L, N, H_in)``, ``(N, L, H_in)`` with ``batch_first``, ``(L, H_in)``
          unbatched, or a ``PackedSequence``.
        - ``hx``: an optional ``(h_0, c_0)``, each ``(D * num_layers, N, H)`` (zeros if
          omitted), where ``D`` is 2 if bidirectional else 1.
        - Output: ``(output, (h_n, c_n))``: ``output`` is ``(L, N, D * H_out)`` (the last
          layer's ``h_t`` for every step), ``h_n`` and ``c_n`` the final states of every layer.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> lstm = nn.LSTM(10, 20, num_layers=2)
        >>> lstm
        LSTM(10, 20, num_layers=2)
        >>> output, (h_n, c_n) = lstm(torch.randn(5, 3, 10))
        >>> output.shape, h_n.shape, c_n.shape
        (torch.Size([5, 3, 20]), torch.Size([2, 3, 20]), torch.Size([2, 3, 20]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor,
                               batch_sizes: Any = None) -> Tuple[int, int, int]:
        """The shape ``(num_layers * num_directions, N, hidden_size)`` the cell state must have for ``input``.
        """
        mini_batch = _mini_batch(self, input, batch_sizes)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden: Any,  # type: ignore[override]
                           batch_sizes: Any = None) -> None:
        """Checks ``input`` and the shapes of ``hidden = (h_0, c_0)``."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def forward(self, input: Tensor,  # type: ignore[override]
                hx: Optional[Tuple[Tensor, Tensor]] = None
                ) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
        """Runs the LSTM over ``input`` from ``hx = (h_0, c_0)`` (zeros if None).

        Returns:
            ``(output, (h_n, c_n))``; ``output`` is a ``PackedSequence`` when ``input`` is one.
        """
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)  # type: ignore[return-value]
        input, is_batched, batch_dim = self._prepare(input, "LSTM")
        if hx is None:
            real = self.proj_size if self.proj_size > 0 else self.hidden_size
            hx = (self._zeros(input, real), self._zeros(input, self.hidden_size))
        elif is_batched:
            if hx[0].dim() != 3 or hx[1].dim() != 3:
                raise RuntimeError(
                    "For batched 3-D input, hx and cx should also be 3-D but got "
                    f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors"
                )
        else:
            if hx[0].dim() != 2 or hx[1].dim() != 2:
                raise RuntimeError(
                    "For unbatched 2-D input, hx and cx should also be 2-D but got "
                    f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors"
                )
            hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx, None)
        out, h_n, c_n = self._run(self._time_first(input), hx[0], hx[1])
        assert c_n is not None
        out = self._finish(out, is_batched, batch_dim)
        if not is_batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return out, (h_n, c_n)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


# ---- cells --------------------------------------------------------------------------------
class RNNCellBase(Module):
    """The shared base of :class:`RNNCell`, :class:`LSTMCell` and :class:`GRUCell`: parameters
    ``weight_ih`` ``(chunks * hidden_size, input_size)``, ``weight_hh``
    ``(chunks * hidden_size, hidden_size)`` and the biases ``bias_ih``, ``bias_hh``, all
    initialized uniformly in ``(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        kw = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(_creation.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(_creation.empty((num_chunks * hidden_size, hidden_size),
                                                   **kw))
        if bias:
            self.bias_ih = Parameter(_creation.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(_creation.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        """The sizes and the options that differ from their defaults."""
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        """Re-draws every parameter uniformly in ``(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check(self, name: str, input: Tensor, hx: Any, what: str = "hidden") -> bool:
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {hx.dim()}D instead")
        return input.dim() == 2

    def _zeros(self, input: Tensor) -> Tensor:
        return _creation.zeros((input.size(0), self.hidden_size), dtype=input.dtype,
                               device=input.device)


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = tanh(x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh)``
    (or ReLU).

    Args:
        input_size (int): the number of features of the input.
        hidden_size (int): the number of features of the hidden state.
        bias (bool): whether the cell has the biases. Default: ``True``.
        nonlinearity (str): ``'tanh'`` or ``'relu'``. Default: ``'tanh'``.

    Shape:
        - Input: ``(N, input_size)`` or ``(input_size)``.
        - ``hx``: ``(N, hidden_size)`` or ``(hidden_size)``; zeros if omitted.
        - Output: ``h'``, the shape of ``hx``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        """Returns the next hidden state from ``input`` and ``hx`` (zeros if None)."""
        is_batched = self._check("RNNCell", input, hx)
        if not is_batched:
            input = input.unsqueeze(0)
        hx = self._zeros(input) if hx is None else (hx if is_batched else hx.unsqueeze(0))
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        ret = _rnn_step(mode, F.linear(input, self.weight_ih, self.bias_ih), hx,
                        self.weight_hh, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class GRUCell(RNNCellBase):
    """One step of a gated recurrent unit, with the gates in torch's order (r, z, n)::

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
        z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
        h' = (1 - z) * n + z * h

    Args:
        input_size (int): the number of features of the input.
        hidden_size (int): the number of features of the hidden state.
        bias (bool): whether the cell has the biases. Default: ``True``.

    Shape:
        - Input: ``(N, input_size)`` or ``(input_size)``.
        - ``hx``: ``(N, hidden_size)`` or ``(hidden_size)``; zeros if omitted.
        - Output: ``h'``, the shape of ``hx``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        """Returns the next hidden state from ``input`` and ``hx`` (zeros if None)."""
        is_batched = self._check("GRUCell", input, hx)
        if not is_batched:
            input = input.unsqueeze(0)
        hx = self._zeros(input) if hx is None else (hx if is_batched else hx.unsqueeze(0))
        ret = _gru_step(F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh,
                        self.bias_hh)
        return ret if is_batched else ret.squeeze(0)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class LSTMCell(RNNCellBase):
    """One step of an LSTM (see :class:`LSTM` for the equations).

    Args:
        input_size (int): the number of features of the input.
        hidden_size (int): the number of features of the hidden and cell states.
        bias (bool): whether the cell has the biases. Default: ``True``.

    Shape:
        - Input: ``(N, input_size)`` or ``(input_size)``.
        - ``hx``: an optional ``(h, c)``, each ``(N, hidden_size)`` or ``(hidden_size)``.
        - Output: ``(h', c')``, the shapes of ``(h, c)``.

    Example::

        >>> _ = rustgrad.manual_seed(0)
        >>> cell = nn.LSTMCell(4, 6)
        >>> h, c = cell(torch.randn(3, 4))
        >>> h.shape, c.shape
        (torch.Size([3, 6]), torch.Size([3, 6]))
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor,
                hx: Optional[Tuple[Tensor, Tensor]] = None) -> Tuple[Tensor, Tensor]:
        """Returns the next ``(h, c)`` from ``input`` and ``hx = (h, c)`` (zeros if None)."""
        if input.dim() not in (1, 2):
            raise ValueError(
                f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead"
            )
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(
                        f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D "
                        "instead"
                    )
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = self._zeros(input)
            hx = (zeros, zeros)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = _lstm_step(F.linear(input, self.weight_ih, self.bias_ih), hx[0], hx[1],
                          self.weight_hh, self.bias_hh, None)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward
