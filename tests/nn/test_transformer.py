"""nn.Transformer, TransformerEncoder/Decoder and their layers against torch: torch's weights
loaded through load_state_dict, the same float64 inputs and masks, then outputs and every
gradient (inputs and parameters) compared in eval mode; parameter names, the causal mask,
causal-mask detection, the nested-tensor zeros of torch's eval fast path, warnings and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import rustgrad
import torch

from ..devices import strict_cupy
from ..models import assert_close, copy_state
from ..parity import same_error

# bool padding with float attention masks warns in both libraries (checked on its own below)
pytestmark = pytest.mark.filterwarnings("ignore:Support for mismatched")
RTOL, ATOL = 1e-9, 1e-11
D, H, FF = 8, 2, 16


def _quiet(build):
    """Builds a model with torch's enable_nested_tensor warning silenced (tested on its own)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build()


def _twin(build, seed=0):
    torch.manual_seed(seed)
    tm = _quiet(lambda: build(torch)).eval()
    rm = _quiet(lambda: build(rustgrad)).eval()
    copy_state(tm, rm, rustgrad)
    return tm, rm


def _masks(lib, masks):
    return {k: (lib.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in masks.items()}


def _run(lib, m, arrays, masks):
    """Forward (arrays as leaves), a random-weighted-sum backward; outputs and gradients."""
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = m(*xs, **_masks(lib, masks))
    up = np.random.default_rng(3).standard_normal(tuple(out.shape))
    (out * lib.tensor(up)).sum().backward()
    return out, [x.grad for x in xs] + [p.grad for p in m.parameters()]


def _assert_parity(build, arrays, masks, rtol=RTOL, atol=ATOL):
    tm, rm = _twin(build)
    assert list(rm.state_dict()) == list(tm.state_dict())
    t_out, t_grads = _run(torch, tm, arrays, masks)
    r_out, r_grads = _run(rustgrad, rm, arrays, masks)
    assert_close(r_out, t_out, rtol, atol, "output")
    assert len(r_grads) == len(t_grads)
    names = ["input"] * len(arrays) + [n for n, _ in tm.named_parameters()]
    for name, r, t in zip(names, r_grads, t_grads):
        assert (r is None) == (t is None), name
        if t is not None:
            assert_close(r, t, rtol, atol, name)


_rng = np.random.default_rng(0)
S, T, N = 5, 4, 3
SRC = _rng.standard_normal((S, N, D))
TGT = _rng.standard_normal((T, N, D))
SRC_PAD = np.zeros((N, S), bool)
SRC_PAD[1, 3:] = True
SRC_PAD[2, 1] = True
TGT_PAD = np.zeros((N, T), bool)
TGT_PAD[0, 3] = True
CAUSAL_T = np.triu(np.full((T, T), -np.inf), 1)
FLOAT_SRC_MASK = _rng.standard_normal((S, S))


def _bf(a):
    return np.ascontiguousarray(a.transpose(1, 0, 2))


def _transformer(**kw):
    def build(L):
        return L.nn.Transformer(D, H, 2, 2, FF, dtype=L.float64, **kw)
    return build


TRANSFORMER_CASES = [
    ("post_norm_causal_and_padding", {}, [SRC, TGT],
     {"tgt_mask": CAUSAL_T, "src_key_padding_mask": SRC_PAD,
      "tgt_key_padding_mask": TGT_PAD, "memory_key_padding_mask": SRC_PAD}),
    ("pre_norm_batch_first", {"norm_first": True, "batch_first": True},
     [_bf(SRC), _bf(TGT)], {"tgt_mask": CAUSAL_T, "src_key_padding_mask": SRC_PAD}),
    ("gelu_no_bias_float_src_mask", {"activation": "gelu", "bias": False}, [SRC, TGT],
     {"src_mask": FLOAT_SRC_MASK, "tgt_mask": CAUSAL_T, "tgt_is_causal": True}),
    ("bool_memory_mask_layer_norm_eps", {"layer_norm_eps": 1e-3},
     [SRC, TGT], {"memory_mask": _rng.random((T, S)) > 0.7, "src_is_causal": False}),
    ("unbatched", {}, [SRC[:, 0], TGT[:, 0]],
     {"tgt_mask": CAUSAL_T, "src_key_padding_mask": SRC_PAD[1]}),
]


@pytest.mark.parametrize("case", TRANSFORMER_CASES, ids=[c[0] for c in TRANSFORMER_CASES])
def test_transformer_same_weights_matches_torch_outputs_and_all_grads(case):
    _, kw, arrays, masks = case

    _assert_parity(_transformer(**kw), arrays, masks)


def test_transformer_callable_activation_matches_torch():
    build = _transformer(activation="relu")

    def with_silu(L):
        return L.nn.Transformer(D, H, 1, 1, FF, activation=L.nn.functional.silu,
                                dtype=L.float64)

    _assert_parity(with_silu, [SRC, TGT], {"tgt_mask": CAUSAL_T})
    _assert_parity(build, [SRC, TGT], {})


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer_and_stack_match_torch(norm_first, batch_first):
    src = _bf(SRC) if batch_first else SRC

    def layer(L):
        return L.nn.TransformerEncoderLayer(D, H, FF, dropout=0.2, norm_first=norm_first,
                                            batch_first=batch_first, dtype=L.float64)

    def stack(L):
        return L.nn.TransformerEncoder(layer(L), 3, norm=L.nn.LayerNorm(D, dtype=L.float64),
                                       enable_nested_tensor=False)

    _assert_parity(layer, [src], {"src_key_padding_mask": SRC_PAD})
    _assert_parity(stack, [src], {"mask": FLOAT_SRC_MASK, "src_key_padding_mask": SRC_PAD})
    # a causal mask passed without a hint is detected as causal, as torch does
    _assert_parity(stack, [src], {"mask": np.triu(np.full((S, S), -np.inf), 1)})


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_and_stack_match_torch(norm_first):
    def layer(L):
        return L.nn.TransformerDecoderLayer(D, H, FF, activation="gelu", norm_first=norm_first,
                                            dtype=L.float64)

    def stack(L):
        return L.nn.TransformerDecoder(layer(L), 2)

    masks = {"tgt_mask": CAUSAL_T, "tgt_key_padding_mask": TGT_PAD,
             "memory_key_padding_mask": SRC_PAD}
    _assert_parity(layer, [TGT, SRC], masks)
    _assert_parity(stack, [TGT, SRC], masks)
    _assert_parity(stack, [TGT, SRC], {"tgt_mask": CAUSAL_T, "tgt_is_causal": True})


def test_state_dict_keys_shapes_and_attributes_equal_torch():
    tm, rm = _twin(lambda L: L.nn.Transformer(D, H, 2, 1, FF, bias=False, dtype=L.float64))

    assert [(k, tuple(v.shape)) for k, v in rm.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    assert (rm.d_model, rm.nhead, rm.batch_first) == (tm.d_model, tm.nhead, tm.batch_first)
    enc_t, enc_r = tm.encoder.layers[0], rm.encoder.layers[0]
    assert enc_r.activation_relu_or_gelu == enc_t.activation_relu_or_gelu == 1
    assert rm.encoder.num_layers == 2 and rm.decoder.num_layers == 1
    assert rm.encoder.layers[0] is not rm.encoder.layers[1]


def test_transformer_init_is_xavier_on_matrices_zero_on_biases():
    rustgrad.manual_seed(0)
    m = _quiet(lambda: rustgrad.nn.Transformer(16, 2, 1, 1, 32))

    w = m.encoder.layers[0].linear1.weight.detach().numpy()
    bound = np.sqrt(6.0 / (16 + 32))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert not m.encoder.layers[0].self_attn.in_proj_bias.detach().numpy().any()
    assert (m.encoder.norm.weight.detach().numpy() == 1).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_generate_square_subsequent_mask_matches_torch(dtype):
    t = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=getattr(torch, dtype))
    r = rustgrad.nn.Transformer.generate_square_subsequent_mask(4,
                                                               dtype=getattr(rustgrad, dtype))

    assert str(r.dtype) == str(t.dtype)
    np.testing.assert_array_equal(r.numpy(), t.numpy())


def _nested_zero_run(lib, m, src, pad):
    with lib.no_grad():
        return m(lib.tensor(src), src_key_padding_mask=lib.tensor(pad)).numpy()


@pytest.mark.parametrize("pad_rows", ["left_aligned", "holes"])
def test_encoder_eval_without_grad_pads_like_torch_nested_tensor_path(pad_rows):
    pad = np.zeros((N, S), bool)
    pad[0, 3:] = True
    if pad_rows == "holes":
        pad[2, 1] = True   # not left-aligned: torch takes the dense path
    tm, rm = _twin(lambda L: L.nn.TransformerEncoder(
        L.nn.TransformerEncoderLayer(D, H, FF, batch_first=True, dtype=L.float64), 2,
        norm=L.nn.LayerNorm(D, dtype=L.float64)))
    assert rm.use_nested_tensor and tm.use_nested_tensor
    src = _bf(SRC)

    t_out = _nested_zero_run(torch, tm, src, pad)
    r_out = _nested_zero_run(rustgrad, rm, src, pad)

    np.testing.assert_allclose(r_out, t_out, rtol=1e-7, atol=1e-9)
    bias = rm.norm.bias.detach().numpy()
    assert np.allclose(r_out[0, 3:], bias) == (pad_rows == "left_aligned")


def test_encoder_enable_nested_tensor_warning_matches_torch():
    def build(L, **kw):
        layer = L.nn.TransformerEncoderLayer(D, H, FF, **kw)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            enc = L.nn.TransformerEncoder(layer, 1)
        return enc.use_nested_tensor, [str(w.message) for w in caught]

    for kw in ({}, {"batch_first": True, "norm_first": True}, {"batch_first": True}):
        assert build(rustgrad, **kw) == build(torch, **kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rustgrad.nn.TransformerEncoder(rustgrad.nn.TransformerEncoderLayer(D, H), 1,
                                       enable_nested_tensor=False)
    assert not caught


def test_mismatched_mask_types_warn_as_torch():
    def run(L):
        enc = _quiet(lambda: L.nn.TransformerEncoder(L.nn.TransformerEncoderLayer(D, H, FF), 1))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            enc(L.zeros(S, N, D), mask=L.zeros(S, S), src_key_padding_mask=L.tensor(SRC_PAD))
        return sorted({str(w.message) for w in caught})

    assert run(rustgrad) == run(torch)
    assert run(torch)


def test_dropout_acts_in_training_mode_only():
    rustgrad.manual_seed(0)
    m = rustgrad.nn.TransformerEncoderLayer(D, H, FF, dropout=0.5, dtype=rustgrad.float64)
    x = rustgrad.tensor(SRC)

    a, b = m(x), m(x)
    m.eval()
    c, d = m(x), m(x)

    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    np.testing.assert_array_equal(c.detach().numpy(), d.detach().numpy())


def test_encoder_layer_passes_gradcheck():
    rustgrad.manual_seed(0)
    m = rustgrad.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, dtype=rustgrad.float64)
    x = rustgrad.randn(3, 2, 4, dtype=rustgrad.float64, requires_grad=True)
    pad = rustgrad.tensor([[False, False, True], [False, False, False]])

    assert rustgrad.autograd.gradcheck(lambda x: m(x, src_key_padding_mask=pad), (x,))


@pytest.mark.parametrize("call,phrase", [
    (lambda L: L.nn.Transformer(D, H, 1, 1, FF)(L.zeros(5, 2, D), L.zeros(4, 3, D)),
     "the batch number of src and tgt must be equal"),
    (lambda L: L.nn.Transformer(D, H, 1, 1, FF, batch_first=True)(L.zeros(2, 5, D),
                                                                    L.zeros(3, 4, D)),
     "the batch number of src and tgt must be equal"),
    (lambda L: L.nn.Transformer(D, H, 1, 1, FF)(L.zeros(5, 2, D), L.zeros(4, 2, 4)),
     "the feature number of src and tgt must be equal to d_model"),
    (lambda L: L.nn.TransformerEncoderLayer(D, H, activation="tanh"),
     "activation should be relu/gelu, not tanh"),
    (lambda L: L.nn.TransformerDecoderLayer(D, H, activation="elu"),
     "activation should be relu/gelu, not elu"),
    (lambda L: L.nn.TransformerEncoderLayer(D, 3), "embed_dim must be divisible by num_heads"),
    (lambda L: L.nn.TransformerEncoderLayer(D, H)(L.zeros(5, 2, D),
                                                  src_key_padding_mask=L.zeros(2, 5,
                                                                              dtype=L.int64)),
     "only bool and floating types of src_key_padding_mask are supported"),
])
def test_bad_arguments_raise_torch_error(call, phrase):
    same_error(lambda L: _quiet(lambda: call(L)), phrase)


def test_transformer_on_sim_cuda_device_keeps_arrays_there(sim_cuda):
    rustgrad.manual_seed(0)
    m = _quiet(lambda: rustgrad.nn.Transformer(D, H, 1, 1, FF)).to("cuda")
    src = rustgrad.randn(S, N, D).to("cuda").requires_grad_()
    tgt = rustgrad.randn(T, N, D).to("cuda")
    mask = rustgrad.nn.Transformer.generate_square_subsequent_mask(T, device="cuda")
    pad = rustgrad.tensor(SRC_PAD).to("cuda")

    out = m(src, tgt, tgt_mask=mask, src_key_padding_mask=pad)
    out.sum().backward()

    for t in (out, mask, src.grad, *(p.grad for p in m.parameters())):
        assert str(t.device) == "cuda:0" and isinstance(t._data, strict_cupy.ndarray)
