"""nn.MultiheadAttention and F.scaled_dot_product_attention against torch: torch's initial
weights copied through NumPy, the same float64 inputs and masks, then outputs, attention
weights and every gradient compared; masks (bool, float, key padding, causal, fully masked
rows), warnings, errors, parameter names, init and repr."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import rustgrad
import torch

from ..devices import strict_cupy
from ..models import assert_close, twin

RTOL, ATOL = 1e-10, 1e-12


def _close_with_nan(r, t, what):
    rv, tv = r.detach().numpy(), t.detach().numpy()
    assert rv.shape == tv.shape, what
    np.testing.assert_array_equal(np.isnan(rv), np.isnan(tv), err_msg=what)
    np.testing.assert_allclose(np.nan_to_num(rv), np.nan_to_num(tv), RTOL, ATOL, err_msg=what)


def _mha_run(lib, m, arrays, sharing, kwargs):
    q = lib.tensor(arrays[0], requires_grad=True)
    if sharing == "self":
        k = v = q
    elif sharing == "kv":
        k = v = lib.tensor(arrays[1], requires_grad=True)
    else:
        k = lib.tensor(arrays[1], requires_grad=True)
        v = lib.tensor(arrays[2], requires_grad=True)
    kw = {n: lib.tensor(a) if isinstance(a, np.ndarray) else a for n, a in kwargs.items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, weights = m(q, k, v, **kw)
    up = np.random.default_rng(5).standard_normal(tuple(out.shape))
    loss = (out * lib.tensor(up)).sum()
    if weights is not None:
        wup = np.random.default_rng(6).standard_normal(tuple(weights.shape))
        loss = loss + (weights * lib.tensor(wup)).sum()
    loss.backward()
    grads = [q.grad, k.grad, v.grad] + [p.grad for p in m.parameters()]
    messages = [str(w.message) for w in caught if not issubclass(w.category, RuntimeWarning)]
    return out, weights, grads, messages


_rng = np.random.default_rng(0)
KPM = np.zeros((3, 5), bool)
KPM[0, 3:] = True
KPM[2, 1] = True
CAUSAL = np.triu(np.ones((5, 5), bool), 1)


def _mha(**kw):
    return lambda L: L.nn.MultiheadAttention(8, 2, dtype=L.float64, **kw)


MHA_CASES = [
    # id, builder, shapes (q, k, v), sharing, forward kwargs
    ("self_attention", _mha(), [(5, 3, 8)], "self", {}),
    ("batch_first_no_weights", _mha(batch_first=True), [(3, 5, 8)], "self",
     {"need_weights": False}),
    ("unbatched", _mha(), [(5, 8)], "self", {}),
    ("cross_attention_per_head_weights", _mha(), [(5, 3, 8), (6, 3, 8)], "kv",
     {"average_attn_weights": False}),
    ("kdim_vdim", _mha(kdim=4, vdim=6), [(5, 3, 8), (6, 3, 4), (6, 3, 6)], "none", {}),
    ("no_bias_bias_kv_zero_attn", _mha(bias=False, add_bias_kv=True, add_zero_attn=True),
     [(5, 3, 8), (6, 3, 8), (6, 3, 8)], "none", {}),
    ("key_padding_mask", _mha(), [(5, 3, 8)], "self", {"key_padding_mask": KPM}),
    ("key_padding_mask_no_weights", _mha(), [(5, 3, 8)], "self",
     {"key_padding_mask": KPM, "need_weights": False}),
    ("bool_attn_mask", _mha(), [(5, 3, 8)], "self", {"attn_mask": CAUSAL}),
    ("causal_hint_no_weights", _mha(), [(5, 3, 8)], "self",
     {"attn_mask": CAUSAL, "need_weights": False, "is_causal": True}),
    ("float_3d_mask_float_padding", _mha(), [(5, 3, 8)], "self",
     {"attn_mask": _rng.standard_normal((6, 5, 5)),
      "key_padding_mask": np.where(KPM, -np.inf, 0.0)}),
    ("batch_first_cross_mask", _mha(batch_first=True), [(3, 5, 8), (3, 4, 8)], "kv",
     {"attn_mask": _rng.standard_normal((5, 4))}),
]


@pytest.mark.parametrize("case", MHA_CASES, ids=[c[0] for c in MHA_CASES])
def test_multihead_attention_same_weights_matches_torch_outputs_weights_and_grads(case):
    _, build, shapes, sharing, kwargs = case
    tm, rm = twin(build)
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in shapes]

    t_out, t_w, t_grads, t_msgs = _mha_run(torch, tm, arrays, sharing, kwargs)
    r_out, r_w, r_grads, r_msgs = _mha_run(rustgrad, rm, arrays, sharing, kwargs)

    assert_close(r_out, t_out, RTOL, ATOL, "output")
    assert (r_w is None) == (t_w is None)
    if t_w is not None:
        assert_close(r_w, t_w, RTOL, ATOL, "attention weights")
    names = ["query", "key", "value", *(n for n, _ in tm.named_parameters())]
    for n, r, t in zip(names, r_grads, t_grads):
        if t is None:
            assert r is None, n
        else:
            assert_close(r, t, RTOL, ATOL, n)
    assert r_msgs == t_msgs


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_fully_padded_batch_matches_torch_nan_or_zero(need_weights):
    tm, rm = twin(_mha())
    x = np.random.default_rng(2).standard_normal((5, 3, 8))
    kpm = KPM.copy()
    kpm[1] = True     # batch 1 attends to nothing
    kw = {"key_padding_mask": kpm, "need_weights": need_weights}

    t_out, t_w, t_grads, _ = _mha_run(torch, tm, [x], "self", kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # NumPy's NaN arithmetic
        r_out, r_w, r_grads, _ = _mha_run(rustgrad, rm, [x], "self", kw)

    _close_with_nan(r_out, t_out, "output")
    assert np.isnan(t_out.detach().numpy()).any() == need_weights   # torch: NaN, sdpa: 0
    if need_weights:
        _close_with_nan(r_w, t_w, "weights")
    for i, (r, t) in enumerate(zip(r_grads, t_grads)):
        if t is not None:
            _close_with_nan(r, t, f"grad {i}")


def test_multihead_attention_mismatched_mask_types_warn_as_torch(lib):
    m = lib.nn.MultiheadAttention(4, 1)
    x = lib.zeros(3, 1, 4)

    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask "
                                         "is deprecated. Use same type for both instead."):
        m(x, x, x, key_padding_mask=lib.zeros(1, 3, dtype=lib.bool),
          attn_mask=lib.zeros(3, 3))


@pytest.mark.parametrize("kw", [dict(), dict(kdim=3, vdim=5), dict(bias=False),
                                dict(add_bias_kv=True, batch_first=True)])
def test_multihead_attention_parameters_names_shapes_repr_equal_torch(kw):
    tm = torch.nn.MultiheadAttention(6, 3, **kw)
    rm = rustgrad.nn.MultiheadAttention(6, 3, **kw)

    assert [(n, tuple(p.shape)) for n, p in rm.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    assert list(rm.state_dict()) == list(tm.state_dict())
    assert repr(rm) == repr(tm)
    assert rm.head_dim == tm.head_dim == 2


def test_multihead_attention_init_xavier_weights_zero_biases():
    rustgrad.manual_seed(0)
    m = rustgrad.nn.MultiheadAttention(16, 4, add_bias_kv=True)
    bound = (6 / (16 + 48)) ** 0.5    # xavier_uniform_ on the (3E, E) in_proj_weight

    w = m.in_proj_weight.detach().numpy()

    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not m.in_proj_bias.detach().numpy().any()
    assert not m.out_proj.bias.detach().numpy().any()
    assert m.bias_k.detach().numpy().std() > 0


def test_multihead_attention_dropout_train_differs_eval_exact():
    tm, rm = twin(_mha(dropout=0.5))
    x = np.random.default_rng(3).standard_normal((5, 3, 8))
    tm.eval()
    rm.eval()
    assert_close(rm(*[rustgrad.tensor(x)] * 3)[0], tm(*[torch.tensor(x)] * 3)[0], RTOL, ATOL)

    rm.train()
    rustgrad.manual_seed(0)
    out, weights = rm(*[rustgrad.tensor(x)] * 3)

    eval_out = rm.eval()(*[rustgrad.tensor(x)] * 3)[0]
    assert not np.allclose(out.detach().numpy(), eval_out.detach().numpy())


@pytest.mark.parametrize("call,exc,msg", [
    (lambda L, x: L.nn.MultiheadAttention(6, 4), AssertionError,
     "embed_dim must be divisible by num_heads"),
    (lambda L, x: L.nn.MultiheadAttention(0, 1), ValueError,
     "embed_dim and num_heads must be greater than 0"),
    (lambda L, x: L.nn.MultiheadAttention(4, 2)(x, x, x, is_causal=True), RuntimeError,
     "Need attn_mask if specifying the is_causal hint."),
    (lambda L, x: L.nn.MultiheadAttention(4, 2)(x, x, x, attn_mask=L.zeros(2, 3)),
     RuntimeError, "The shape of the 2D attn_mask is torch.Size([2, 3]), but should be (3, 3)."),
    (lambda L, x: L.nn.MultiheadAttention(4, 2)(x, x, x, attn_mask=L.zeros(3, 3,
                                                                          dtype=L.int64)),
     AssertionError, "only bool and floating types of attn_mask are supported"),
    (lambda L, x: L.nn.MultiheadAttention(4, 2)(x, x, x[:, :1]), AssertionError,
     "key shape torch.Size([3, 2, 4]) does not match value shape torch.Size([3, 1, 4])"),
])
def test_multihead_attention_bad_arguments_raise_torch_error(lib, call, exc, msg):
    x = lib.zeros(3, 2, 4)

    with pytest.raises(exc) as info:
        call(lib, x)

    assert msg in str(info.value)


# ---- scaled_dot_product_attention ---------------------------------------------------------
_MASK = np.random.default_rng(4).random((4, 5)) > 0.4
_MASK[1] = False      # a fully masked row: torch gives 0 (and 0 gradients), not NaN

SDPA_CASES = [
    ("plain", [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], None, {}),
    ("causal", [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], None, {"is_causal": True}),
    ("bool_mask_fully_masked_row", [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], _MASK, {}),
    ("float_mask_broadcast_with_grad_and_scale", [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)],
     np.random.default_rng(5).standard_normal((3, 4, 5)), {"scale": 0.7}),
    ("float_mask_neg_inf_row", [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)],
     np.where(_MASK, 0.0, -np.inf), {}),
    ("unbatched", [(4, 8), (5, 8), (5, 6)], None, {}),
    ("grouped_query", [(2, 6, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)], None, {"enable_gqa": True}),
]


def _sdpa_run(lib, arrays, mask, kw):
    ts = [lib.tensor(a, requires_grad=True) for a in arrays]
    m = None
    if mask is not None:
        m = lib.tensor(mask) if mask.dtype == bool else lib.tensor(mask, requires_grad=True)
    out = lib.nn.functional.scaled_dot_product_attention(*ts, attn_mask=m, **kw)
    up = np.random.default_rng(8).standard_normal(tuple(out.shape))
    (out * lib.tensor(up)).sum().backward()
    grads = [t.grad for t in ts] + ([m.grad] if m is not None and m.requires_grad else [])
    return out, grads


@pytest.mark.parametrize("case", SDPA_CASES, ids=[c[0] for c in SDPA_CASES])
def test_sdpa_matches_torch_output_and_grads(case):
    _, shapes, mask, kw = case
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal(s) for s in shapes]

    t_out, t_grads = _sdpa_run(torch, arrays, mask, kw)
    r_out, r_grads = _sdpa_run(rustgrad, arrays, mask, kw)

    assert_close(r_out, t_out, RTOL, ATOL, "output")
    assert len(r_grads) == len(t_grads)
    for i, (r, t) in enumerate(zip(r_grads, t_grads)):
        assert_close(r, t, RTOL, ATOL, f"grad {i}")
    if mask is not None and mask.dtype == bool:
        assert not r_out.detach().numpy()[:, :, 1].any()


def test_sdpa_dropout_changes_output_and_keeps_shape():
    rustgrad.manual_seed(0)
    q = rustgrad.randn(2, 4, 8, dtype=rustgrad.float64)

    plain = rustgrad.nn.functional.scaled_dot_product_attention(q, q, q)
    dropped = rustgrad.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.5)

    assert tuple(dropped.shape) == (2, 4, 8)
    assert not np.allclose(plain.numpy(), dropped.numpy())


@pytest.mark.parametrize("call,msg", [
    (lambda L, q: L.nn.functional.scaled_dot_product_attention(
        q, q, q, attn_mask=L.ones(4, 4, dtype=L.bool), is_causal=True),
     "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"),
    (lambda L, q: L.nn.functional.scaled_dot_product_attention(
        q, q, q, attn_mask=L.ones(4, 4, dtype=L.int64)),
     "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
     "attn_mask.dtype: long int and  query.dtype: double instead."),
    (lambda L, q: L.nn.functional.scaled_dot_product_attention(q.float(), q, q),
     "Expected query, key, and value to have the same dtype, but got query.dtype: float "
     "key.dtype: double and value.dtype: double instead."),
])
def test_sdpa_bad_arguments_raise_torch_error(lib, call, msg):
    q = lib.zeros(2, 4, 8, dtype=lib.float64, requires_grad=True)

    with pytest.raises(RuntimeError) as info:
        call(lib, q)

    assert msg in str(info.value)


def test_attention_on_sim_cuda_device_keeps_arrays_there(sim_cuda):
    rustgrad.manual_seed(0)
    m = rustgrad.nn.MultiheadAttention(8, 2).to("cuda")
    x = rustgrad.randn(5, 2, 8).to("cuda").requires_grad_()
    causal = rustgrad.ones(5, 5, dtype=rustgrad.bool).triu(1).to("cuda")
    pad = rustgrad.zeros(2, 5, dtype=rustgrad.bool).to("cuda")

    out, w = m(x, x, x, key_padding_mask=pad, attn_mask=causal)
    fast, _ = m(x, x, x, attn_mask=causal, need_weights=False)
    sdpa = rustgrad.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True)
    (out.sum() + w.sum() + fast.sum() + sdpa.sum()).backward()

    for t in (out, w, fast, sdpa, x.grad, *(p.grad for p in m.parameters())):
        assert str(t.device) == "cuda:0" and isinstance(t._data, strict_cupy.ndarray)
