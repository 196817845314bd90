"""Layers against torch with the same weights: outputs, parameter gradients, buffers
(BatchNorm running statistics), train/eval behaviour, containers, default initialization; PReLU,
the padding layers, PixelShuffle and PixelUnshuffle, InstanceNorm1d/2d/3d, RMSNorm,
MultiLabelSoftMarginLoss, Conv1d/Conv2d with padding='same' and a non-zeros padding_mode,
Embedding(scale_grad_by_freq=True)."""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
import rustgrad
import torch

from ..models import assert_close, assert_states_close, copy_state, twin
from ..parity import check, check_double_backward, grad_ok, parity, same_error

rng = np.random.default_rng(0)


def _forward_backward(tm, rm, x, train=True):
    tm.train(train)
    rm.train(train)
    tx = torch.tensor(x, requires_grad=True)
    rx = rustgrad.tensor(x, requires_grad=True)
    to, ro = tm(tx), rm(rx)
    up = np.random.default_rng(1).standard_normal(tuple(to.shape)).astype(x.dtype)
    (to * torch.tensor(up)).sum().backward()
    (ro * rustgrad.tensor(up)).sum().backward()
    return to, ro, tx, rx


LAYERS = [
    ("linear", lambda L: L.nn.Linear(5, 3), (4, 5)),
    ("linear_no_bias_3d", lambda L: L.nn.Linear(5, 3, bias=False), (2, 4, 5)),
    ("conv2d", lambda L: L.nn.Conv2d(3, 4, 3, stride=2, padding=1), (2, 3, 7, 7)),
    ("conv2d_groups_dilation", lambda L: L.nn.Conv2d(4, 6, 3, padding=2, dilation=2, groups=2),
     (2, 4, 6, 6)),
    ("conv2d_padding_same", lambda L: L.nn.Conv2d(2, 3, 3, padding="same"), (1, 2, 5, 5)),
    ("conv2d_reflect", lambda L: L.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
     (1, 2, 5, 5)),
    ("conv1d", lambda L: L.nn.Conv1d(3, 2, 3, padding=1), (2, 3, 9)),
    ("maxpool2d", lambda L: L.nn.MaxPool2d(3, 2, 1), (2, 3, 7, 7)),
    ("avgpool2d", lambda L: L.nn.AvgPool2d(2), (2, 3, 6, 6)),
    ("adaptive_avgpool2d", lambda L: L.nn.AdaptiveAvgPool2d((2, 3)), (2, 3, 6, 6)),
    ("layernorm", lambda L: L.nn.LayerNorm([4, 5]), (3, 4, 5)),
    ("groupnorm", lambda L: L.nn.GroupNorm(2, 4), (3, 4, 5)),
    ("groupnorm_no_bias", lambda L: L.nn.GroupNorm(2, 4, bias=False), (3, 4, 5)),
    ("batchnorm_no_bias", lambda L: L.nn.BatchNorm2d(3, bias=False), (2, 3, 4, 4)),
    ("layernorm_no_bias", lambda L: L.nn.LayerNorm(5, bias=False), (3, 5)),
    ("flatten", lambda L: L.nn.Flatten(), (2, 3, 4)),
    ("unflatten", lambda L: L.nn.Unflatten(1, (2, 6)), (3, 12)),
    ("bilinear_free_sequential", lambda L: L.nn.Sequential(L.nn.Linear(4, 4), L.nn.GELU(),
                                                           L.nn.Linear(4, 2), L.nn.LogSoftmax(1)),
     (5, 4)),
]


@pytest.mark.parametrize("case", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_torch_output_and_grads(case):
    _, build, shape = case
    tm, rm = twin(build)
    x = rng.standard_normal(shape).astype(np.float32)

    to, ro, tx, rx = _forward_backward(tm, rm, x)

    assert_close(ro, to, 1e-5, 1e-5, "output")
    assert_close(rx.grad, tx.grad, 1e-4, 1e-5, "input grad")
    for (n, tp), rp in zip(tm.named_parameters(), rm.parameters()):
        assert_close(rp.grad, tp.grad, 1e-4, 1e-5, n)


@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (8, 3)), ("BatchNorm1d", (8, 3, 4)),
                                       ("BatchNorm2d", (4, 3, 5, 5))])
def test_batchnorm_train_updates_running_stats_like_torch(cls, shape):
    tm, rm = twin(lambda L: getattr(L.nn, cls)(3, momentum=0.3))
    for step in range(3):
        x = rng.standard_normal(shape).astype(np.float32) * (step + 1) + step
        to, ro, tx, rx = _forward_backward(tm, rm, x)
        assert_close(ro, to, 1e-4, 1e-5, "output")
        assert_close(rx.grad, tx.grad, 1e-4, 1e-5, "input grad")

    assert_states_close(rm, tm, 1e-5, 1e-6)
    assert rm.num_batches_tracked.item() == 3


def test_batchnorm_eval_uses_running_stats_like_torch():
    tm, rm = twin(lambda L: L.nn.BatchNorm2d(3))
    _forward_backward(tm, rm, rng.standard_normal((4, 3, 2, 2)).astype(np.float32))
    x = rng.standard_normal((2, 3, 2, 2)).astype(np.float32)

    to, ro, tx, rx = _forward_backward(tm, rm, x, train=False)

    assert_close(ro, to, 1e-5, 1e-6, "eval output")
    assert_close(rx.grad, tx.grad, 1e-5, 1e-6, "eval input grad")
    assert rm.num_batches_tracked.item() == 1


def test_batchnorm_momentum_none_is_cumulative_average_like_torch():
    tm, rm = twin(lambda L: L.nn.BatchNorm1d(2, momentum=None, affine=False))
    for _ in range(3):
        _forward_backward(tm, rm, rng.standard_normal((6, 2)).astype(np.float32))

    assert_states_close(rm, tm, 1e-5, 1e-6)


def test_batchnorm_wrong_input_dim_raises_value_error(lib):
    with pytest.raises(ValueError, match=r"expected 4D input \(got 2D input\)"):
        lib.nn.BatchNorm2d(3)(lib.zeros(2, 3))


def test_batchnorm_training_with_one_value_per_channel_raises(lib):
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        lib.nn.BatchNorm1d(3)(lib.zeros(1, 3))


def test_embedding_padding_idx_row_zero_and_no_grad(lib):
    emb = lib.nn.Embedding(5, 3, padding_idx=2)
    idx = lib.tensor([[2, 1], [2, 4]])

    emb(idx).sum().backward()

    assert emb.weight[2].tolist() == [0.0, 0.0, 0.0]
    assert emb.weight.grad[2].tolist() == [0.0, 0.0, 0.0]
    assert emb.weight.grad[1].tolist() == [1.0, 1.0, 1.0]
    assert emb.weight.grad[0].tolist() == [0.0, 0.0, 0.0]


def test_embedding_repeated_indices_accumulate_grad_like_torch():
    tm, rm = twin(lambda L: L.nn.Embedding(6, 2))
    idx = np.array([[1, 1, 3], [5, 1, 0]])
    up = rng.standard_normal((2, 3, 2)).astype(np.float32)

    (tm(torch.tensor(idx)) * torch.tensor(up)).sum().backward()
    (rm(rustgrad.tensor(idx)) * rustgrad.tensor(up)).sum().backward()

    assert_close(rm.weight.grad, tm.weight.grad, 1e-6, 1e-6)


def test_embedding_from_pretrained_is_frozen(lib):
    emb = lib.nn.Embedding.from_pretrained(lib.eye(3))

    assert not emb.weight.requires_grad
    assert emb(lib.tensor([1])).tolist() == [[0.0, 1.0, 0.0]]


def test_embedding_out_of_range_index_raises_index_error(lib):
    with pytest.raises(IndexError, match="index out of range in self"):
        lib.nn.Embedding(3, 2)(lib.tensor([3]))


def test_dropout_module_train_drops_eval_is_identity():
    rustgrad.manual_seed(0)
    d = rustgrad.nn.Dropout(0.5)
    x = rustgrad.ones(1000)

    dropped = float((d(x).numpy() == 0).mean())
    d.eval()

    assert 0.4 < dropped < 0.6
    assert d(x) is x


def test_dropout2d_zeroes_whole_channels():
    rustgrad.manual_seed(1)
    y = rustgrad.nn.Dropout2d(0.5)(rustgrad.ones(4, 8, 3, 3)).numpy()

    per_channel = y.reshape(4, 8, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert (per_channel == 0).all(-1).any()


def test_linear_default_init_bounds_like_torch():
    rustgrad.manual_seed(0)
    lin = rustgrad.nn.Linear(100, 50)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    bound = 1 / math.sqrt(100)  # kaiming_uniform_(a=sqrt(5)) gives the same bound as the bias

    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound


def test_conv2d_default_init_bounds_like_torch():
    rustgrad.manual_seed(0)
    conv = rustgrad.nn.Conv2d(4, 8, 3)
    bound = 1 / math.sqrt(4 * 9)

    assert np.abs(conv.weight.detach().numpy()).max() <= bound
    assert np.abs(conv.bias.detach().numpy()).max() <= bound
    assert tuple(conv.weight.shape) == (8, 4, 3, 3)


def test_layer_parameter_dtype_and_shapes_equal_torch():
    for build in (lambda L: L.nn.Linear(3, 2, dtype=L.float64),
                  lambda L: L.nn.Conv2d(2, 4, (3, 1), groups=2),
                  lambda L: L.nn.LayerNorm(4, elementwise_affine=False),
                  lambda L: L.nn.BatchNorm2d(3, affine=False, track_running_stats=False)):
        t, r = build(torch), build(rustgrad)
        assert [(n, tuple(p.shape), str(p.dtype)) for n, p in r.named_parameters()] == \
            [(n, tuple(p.shape), str(p.dtype)) for n, p in t.named_parameters()]
        assert list(r.state_dict()) == list(t.state_dict())


# ---- containers ---------------------------------------------------------------------------
def test_sequential_indexing_slicing_and_len(lib):
    nn = lib.nn
    s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))

    assert len(s) == 3 and isinstance(s[-1], nn.Linear)
    assert isinstance(s[1:], nn.Sequential) and len(s[1:]) == 2
    assert [n for n, _ in s[1:].named_children()] == ["1", "2"]


def test_sequential_from_ordered_dict_uses_names(lib):
    nn = lib.nn
    s = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.Tanh())]))

    assert [n for n, _ in s.named_parameters()] == ["fc.weight", "fc.bias"]
    assert isinstance(s.act, nn.Tanh)


def test_sequential_append_insert_delete_renumbers(lib):
    nn = lib.nn
    s = nn.Sequential(nn.ReLU(), nn.Tanh())
    s.append(nn.Sigmoid())
    s.insert(0, nn.Identity())
    del s[1]

    assert [type(m).__name__ for m in s] == ["Identity", "Tanh", "Sigmoid"]
    assert [n for n, _ in s.named_children()] == ["0", "1", "2"]


def test_sequential_index_out_of_range_raises_index_error(lib):
    with pytest.raises(IndexError, match="index 5 is out of range"):
        lib.nn.Sequential(lib.nn.ReLU())[5]


def test_modulelist_registers_and_extends(lib):
    nn = lib.nn
    ml = nn.ModuleList([nn.Linear(2, 2)])
    ml.append(nn.Linear(2, 2))
    ml.extend([nn.ReLU()])
    ml += [nn.Tanh()]

    assert len(ml) == 4 and len(list(ml.parameters())) == 4
    assert [n for n, _ in ml.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_moduledict_registers_by_key(lib):
    nn = lib.nn
    md = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    md["c"] = nn.Linear(1, 2)

    assert list(md.keys()) == ["a", "b", "c"] and "b" in md
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]


def test_twin_models_copy_state_through_numpy():
    tm, rm = twin(lambda L: L.nn.Linear(3, 2))
    copy_state(rm, tm, torch)

    assert_states_close(rm, tm, 0, 0)


def test_groupnorm_channels_not_divisible_raises_torch_message(lib):
    with pytest.raises(ValueError,
                       match=r"^num_channels \(5\) must be divisible by num_groups \(2\)$"):
        lib.nn.GroupNorm(2, 5)


@pytest.mark.parametrize("build", [
    lambda L: L.nn.Softmax(dim=1.0),
    lambda L: L.nn.LogSoftmax(dim=True),
    lambda L: L.nn.HuberLoss(delta="1"),
])
def test_constructor_argument_types_checked_as_torch(build):
    messages = []
    for lib in (torch, rustgrad):
        with pytest.raises(TypeError) as info:
            build(lib)
        messages.append(str(info.value))
    assert messages[1] == messages[0]


def test_softmin_takes_any_dim_as_torch():
    for lib in (torch, rustgrad):
        assert lib.nn.Softmin(dim=1.0).dim == 1.0


def test_bilinear_without_in1_features_raises_torch_error(lib):
    with pytest.raises(ValueError, match=r"^in1_features must be > 0, but got \(in1_features=0\)$"):
        lib.nn.Bilinear(0, 2, 3)


# ---- the layers below: run from a seeded init, output and gradients against torch's ----------
def _x(shape: tuple, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _run(lib: Any, make: Any, x: np.ndarray, dtype: str = "float64") -> Any:
    """Module `make(lib)` with parameters copied from a seeded init, applied to x; returns the
    output and the gradients of the input and every parameter after a weighted sum."""
    dt = getattr(lib, dtype)
    m = make(lib).to(dt)
    rng = np.random.default_rng(7)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.uniform(-1.0, 1.0, tuple(p.shape))))
    xt = lib.tensor(x, dtype=dt, requires_grad=True)
    out = m(xt)
    w = lib.tensor(np.random.default_rng(9).uniform(-1, 1, tuple(out.shape)), dtype=dt)
    (out * w).sum().backward()
    return (out, out.grad_fn.name() if out.grad_fn else None, xt.grad,
            [p.grad for p in m.parameters()], repr(m))


def _same(make: Any, x: np.ndarray, dtype: str = "float64", rtol: float = 1e-7) -> None:
    parity(lambda L: _run(L, make, x, dtype), rtol=rtol, atol=1e-6 if dtype == "float32" else 1e-9)


# ---- PReLU ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3, 4, 4), (4, 3), (5,)])
def test_prelu_module_matches_torch(shape):
    _same(lambda L: L.nn.PReLU(), _x(shape))
    if len(shape) > 1:
        _same(lambda L: L.nn.PReLU(3, init=0.1), _x(shape))
        _same(lambda L: L.nn.PReLU(3), _x(shape), "float32", 1e-5)


def test_prelu_functional_gradients():
    check(lambda L, x, w: L.nn.functional.prelu(x, w), (2, 3, 4), (3,))
    check(lambda L, x, w: L.prelu(x, w), (4,), (1,))
    check(lambda L, x, w: x.prelu(w), (), (1,))
    check_double_backward(lambda L, x, w: L.nn.functional.prelu(x, w) ** 2, (2, 3), (3,))
    assert grad_ok(lambda L, x, w: L.nn.functional.prelu(x, w), (2, 3, 2), (3,))
    same_error(lambda L: L.nn.functional.prelu(L.ones(2, 3, 4), L.ones(2)),
               "Mismatch of parameter numbers and input channel size")
    same_error(lambda L: L.nn.functional.prelu(L.ones(2, 3), L.ones(1, 3)),
               "Expected `weight` to be a scalar or 1D tensor")


# ---- padding layers --------------------------------------------------------------------------
PADS = [
    ("ZeroPad2d", (1, 2, 0, 1), (2, 3, 4, 5)),
    ("ZeroPad2d", 2, (3, 4, 5)),
    ("ZeroPad1d", (2, 1), (2, 3, 4)),
    ("ReflectionPad1d", 2, (2, 3, 5)),
    ("ReflectionPad1d", (3, 1), (3, 5)),
    ("ReflectionPad2d", 1, (2, 3, 4, 5)),
    ("ReflectionPad2d", (1, 2, 2, 0), (3, 4, 5)),
    ("ReplicationPad1d", (2, 3), (2, 3, 4)),
    ("ReplicationPad2d", 2, (1, 2, 3, 4)),
    ("ReplicationPad2d", (0, 1, 3, 2), (2, 3, 4)),
    ("CircularPad1d", 2, (2, 3, 4)),
    ("CircularPad2d", (1, 0, 2, 1), (1, 2, 3, 4)),
    ("ZeroPad3d", (1, 0, 2, 1, 0, 1), (1, 2, 3, 4, 2)),
    ("ReflectionPad3d", 1, (1, 2, 3, 4, 2)),
    ("ReplicationPad3d", (1, 0, 2, 1, 0, 1), (2, 3, 4, 2)),
    ("CircularPad3d", 1, (1, 1, 3, 4, 2)),
]


@pytest.mark.parametrize("name,padding,shape", PADS, ids=[f"{n}-{p}" for n, p, _ in PADS])
def test_padding_layers_match_torch(name, padding, shape):
    _same(lambda L: getattr(L.nn, name)(padding), _x(shape))


@pytest.mark.parametrize("name,n", [("ConstantPad1d", 1), ("ConstantPad2d", 2), ("ConstantPad3d", 3)])
def test_constant_pad_matches_torch(name, n):
    shape = (2, 3, 4, 5)
    _same(lambda L: getattr(L.nn, name)(2, 3.5), _x(shape))
    _same(lambda L: getattr(L.nn, name)((1, 2) * n, -1.0), _x(shape))


def test_reflection_pad_too_large_raises_like_torch():
    same_error(lambda L: L.nn.ReflectionPad1d(4)(L.ones(1, 2, 3)), "Padding size should be less")


# ---- PixelShuffle / PixelUnshuffle ------------------------------------------------------------
@pytest.mark.parametrize("shape,r", [((2, 8, 3, 4), 2), ((9, 2, 2), 3), ((2, 1, 4, 3, 2), 1)])
def test_pixel_shuffle_matches_torch(shape, r):
    _same(lambda L: L.nn.PixelShuffle(r), _x(shape))
    check(lambda L, x: L.nn.functional.pixel_shuffle(x, r), shape)
    assert grad_ok(lambda L, x: L.pixel_shuffle(x, r), shape)


@pytest.mark.parametrize("shape,r", [((2, 2, 4, 6), 2), ((1, 6, 3), 3)])
def test_pixel_unshuffle_matches_torch(shape, r):
    _same(lambda L: L.nn.PixelUnshuffle(r), _x(shape))
    check(lambda L, x: L.nn.functional.pixel_unshuffle(x, r), shape)
    check_double_backward(lambda L, x: L.pixel_unshuffle(x * x, r), shape)
    parity(lambda L: L.pixel_shuffle(L.pixel_unshuffle(L.tensor(_x(shape)), r), r))


def test_pixel_shuffle_errors_match_torch():
    F = "nn.functional"
    del F
    same_error(lambda L: L.nn.functional.pixel_shuffle(L.ones(1, 3, 2, 2), 2),
               "divisible by the square of upscale_factor")
    same_error(lambda L: L.nn.functional.pixel_unshuffle(L.ones(1, 3, 3, 3), 2),
               "pixel_unshuffle expects height to be divisible")
    same_error(lambda L: L.nn.functional.pixel_shuffle(L.ones(3, 2), 2),
               "expects input to have at least 3 dimensions")


# ---- InstanceNorm ---------------------------------------------------------------------------------
@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm2d", (2, 3, 4, 5)),
                                       ("InstanceNorm1d", (3, 6)), ("InstanceNorm2d", (3, 4, 5)),
                                       ("InstanceNorm3d", (2, 3, 2, 3, 2))])
@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_matches_torch(cls, shape, affine):
    _same(lambda L: getattr(L.nn, cls)(3, affine=affine), _x(shape))
    _same(lambda L: getattr(L.nn, cls)(3, affine=affine), _x(shape), "float32", 1e-4)


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm2d", (2, 3, 4, 5))])
def test_instance_norm_running_stats_match_torch(cls, shape):
    def prog(L: Any) -> Any:
        m = getattr(L.nn, cls)(3, affine=True, track_running_stats=True).double()
        outs = [m(L.tensor(_x(shape, seed=k))) for k in range(3)]
        m.eval()
        outs.append(m(L.tensor(_x(shape, seed=5))))
        return outs, m.running_mean, m.running_var, m.num_batches_tracked, m.state_dict()
    parity(prog)


def test_instance_norm_functional_and_errors():
    check(lambda L, x: L.nn.functional.instance_norm(x), (2, 3, 4))
    check(lambda L, x, w, b: L.nn.functional.instance_norm(x, weight=w, bias=b), (2, 3, 4, 2),
          (3,), (3,))
    assert grad_ok(lambda L, x, w, b: L.nn.functional.instance_norm(x, weight=w, bias=b),
                   (2, 3, 4), (3,), (3,))
    same_error(lambda L: L.nn.functional.instance_norm(L.ones(2, 4, 1)),
               "Expected more than 1 spatial element when training")
    same_error(lambda L: L.nn.functional.instance_norm(L.ones(2, 4, 3), use_input_stats=False),
               "Expected running_mean and running_var to be defined")
    same_error(lambda L: L.nn.InstanceNorm1d(4)(L.ones(2, 3, 5, 6)), "expected 2D or 3D input")
    same_error(lambda L: L.nn.InstanceNorm2d(4, affine=True)(L.ones(2, 3, 5, 6)),
               "to match num_features (4), but got: 3")


def test_instance_norm_warns_on_feature_mismatch(lib):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        lib.nn.InstanceNorm1d(5)(lib.ones(2, 4, 3))
    assert any("does not match num_features" in str(x.message) for x in w)


# ---- RMSNorm ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,norm", [((2, 3, 4), 4), ((2, 3, 4), (3, 4)), ((5,), [5])])
def test_rms_norm_matches_torch(shape, norm):
    _same(lambda L: L.nn.RMSNorm(norm), _x(shape))
    _same(lambda L: L.nn.RMSNorm(norm, eps=1e-3, elementwise_affine=False), _x(shape))
    _same(lambda L: L.nn.RMSNorm(norm), _x(shape), "float32", 1e-5)


def test_rms_norm_functional():
    check(lambda L, x, w: L.nn.functional.rms_norm(x, [3], w, eps=1e-6), (2, 3), (3,))
    check(lambda L, x: L.nn.functional.rms_norm(x, (2, 3)), (4, 2, 3))
    assert grad_ok(lambda L, x, w: L.nn.functional.rms_norm(x, [3], w), (2, 3), (3,))
    same_error(lambda L: L.nn.functional.rms_norm(L.ones(2, 4, 3), (4,)),
               "Given normalized_shape=[4], expected input with shape [*")
    same_error(lambda L: L.nn.functional.rms_norm(L.ones(2, 3), (3,), weight=L.ones(2)),
               "Expected weight to be of same shape as normalized_shape")


# ---- MultiLabelSoftMarginLoss ---------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_soft_margin_loss_matches_torch(reduction):
    target = (np.random.default_rng(3).uniform(size=(4, 5)) > 0.5).astype(np.float64)
    check(lambda L, x, t: L.nn.functional.multilabel_soft_margin_loss(x, t, reduction=reduction),
          (4, 5), target, requires_grad=True)
    check(lambda L, x, t, w: L.nn.MultiLabelSoftMarginLoss(weight=w, reduction=reduction)(x, t),
          (4, 5), target, (5,))
    assert grad_ok(lambda L, x: L.nn.functional.multilabel_soft_margin_loss(
        x, L.tensor(target), reduction=reduction), (4, 5))


def test_multilabel_soft_margin_loss_1d_and_errors():
    parity(lambda L: L.nn.functional.multilabel_soft_margin_loss(
        L.tensor([0.3, -1.2, 2.0]), L.tensor([1.0, 0.0, 1.0])))
    same_error(lambda L: L.nn.functional.multilabel_soft_margin_loss(L.ones(2, 4), L.ones(2, 3)),
               "must match the size of tensor b")


# ---- Conv2d padding='same' / padding_mode ------------------------------------------------------
CONVS = [
    dict(kernel_size=3, padding="same", padding_mode="reflect"),
    dict(kernel_size=(2, 4), padding="same", padding_mode="circular", dilation=(1, 2)),
    dict(kernel_size=(3, 2), padding="same", padding_mode="replicate"),
    dict(kernel_size=4, padding="same", padding_mode="zeros"),
    dict(kernel_size=3, padding="valid", padding_mode="reflect"),
    dict(kernel_size=3, padding=(1, 2), padding_mode="replicate", stride=2),
]


@pytest.mark.parametrize("kw", CONVS, ids=[f"{k['padding']}-{k['padding_mode']}" for k in CONVS])
def test_conv2d_padding_modes_match_torch(kw):
    _same(lambda L: L.nn.Conv2d(2, 3, **kw), _x((2, 2, 6, 9)))


def test_conv1d_same_padding_mode_matches_torch():
    _same(lambda L: L.nn.Conv1d(2, 3, 4, padding="same", padding_mode="reflect"), _x((2, 2, 7)))


# ---- Embedding(scale_grad_by_freq=True) ------------------------------------------------------------
@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_scale_grad_by_freq_matches_torch(padding_idx):
    idx = np.array([[0, 1, 2, 0], [2, 0, 4, 1]])

    def prog(L: Any) -> Any:
        e = L.nn.Embedding(5, 3, padding_idx=padding_idx, scale_grad_by_freq=True).double()
        with L.no_grad():
            e.weight.copy_(L.tensor(np.arange(15.0).reshape(5, 3)))
        out = e(L.tensor(idx))
        (out * L.tensor(np.arange(24.0).reshape(2, 4, 3))).sum().backward()
        return out, e.weight.grad, repr(e)
    parity(prog)
    parity(lambda L: L.nn.functional.embedding(
        L.tensor([3, 3, 1]), L.ones(4, 2, requires_grad=True), scale_grad_by_freq=True)
        .sum().backward() or 0)


def test_new_layers_exported():
    for name in ("PReLU", "ZeroPad2d", "PixelShuffle", "InstanceNorm2d", "RMSNorm",
                 "MultiLabelSoftMarginLoss"):
        assert name in rustgrad.nn.__all__ and hasattr(rustgrad.nn, name)
