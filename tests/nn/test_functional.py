"""nn.functional against torch: values, input gradients, grad_fn names; finite-difference
checks of first and second derivatives of the primitives; torch's errors."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as RF
import torch
import torch.nn.functional as TF

from ..parity import parity

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 5))
Y = rng.standard_normal((4, 5))
T = np.array([0, 2, 4, 1])
IMG = rng.standard_normal((2, 4, 7, 7))
CW = rng.standard_normal((6, 4, 3, 3))
CB = rng.standard_normal(6)
P = 1 / (1 + np.exp(-X))
Q = 1 / (1 + np.exp(-Y))
W5 = np.abs(rng.standard_normal(5)) + 0.1


def _run(fn: Callable[..., Any], lib: Any, arrays: tuple, ints: tuple, dtype: Any) -> tuple:
    xs = [lib.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    ix = [lib.tensor(i) for i in ints]
    out = fn(lib, *xs, *ix)
    up = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(dtype)
    (out * lib.tensor(up)).sum().backward()
    name = None if out.grad_fn is None else out.grad_fn.name()
    return out, [x.grad for x in xs], name


# (id, fn(lib, *tensors), float arrays, int arrays, grad_fn name checked against torch's)
CASES = [
    ("linear", lambda L, x, w, b: L.nn.functional.linear(x, w, b), (X, W5[None].repeat(3, 0),
                                                                     W5[:3]), (), True),
    ("linear_nobias", lambda L, x, w: L.nn.functional.linear(x, w), (X, X[:3]), (), True),
    ("linear_3d", lambda L, x, w: L.nn.functional.linear(x, w), (IMG[0, :, :, :5], X[:3]),
     (), True),
    ("conv2d", lambda L, x, w, b: L.nn.functional.conv2d(x, w, b), (IMG, CW, CB), (), True),
    ("conv2d_stride_pad", lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, 2, 1),
     (IMG, CW, CB), (), True),
    ("conv2d_dilation", lambda L, x, w: L.nn.functional.conv2d(x, w, None, 1, 2, 2),
     (IMG, CW), (), True),
    ("conv2d_groups", lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, 1, 1, 1, 2),
     (IMG, CW[:, :2], CB), (), True),
    ("conv2d_same", lambda L, x, w: L.nn.functional.conv2d(x, w, padding="same"),
     (IMG, CW), (), True),
    ("conv2d_unbatched", lambda L, x, w: L.nn.functional.conv2d(x, w), (IMG[0], CW), (), False),
    ("conv1d", lambda L, x, w: L.nn.functional.conv1d(x, w, padding=1),
     (IMG[:, :, 0], CW[:3, :, 0]), (), False),
    ("max_pool2d", lambda L, x: L.nn.functional.max_pool2d(x, 2), (IMG,), (), True),
    ("max_pool2d_overlap", lambda L, x: L.nn.functional.max_pool2d(x, 3, 2, 1), (IMG,), (),
     True),
    ("max_pool2d_ceil", lambda L, x: L.nn.functional.max_pool2d(x, 2, ceil_mode=True), (IMG,),
     (), True),
    ("max_pool2d_dilation", lambda L, x: L.nn.functional.max_pool2d(x, 2, 1, 0, 2), (IMG,), (),
     True),
    ("avg_pool2d", lambda L, x: L.nn.functional.avg_pool2d(x, 2), (IMG,), (), True),
    ("avg_pool2d_pad", lambda L, x: L.nn.functional.avg_pool2d(x, 3, 2, 1), (IMG,), (), True),
    ("avg_pool2d_exclude_pad",
     lambda L, x: L.nn.functional.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (IMG,), (),
     True),
    ("avg_pool2d_ceil", lambda L, x: L.nn.functional.avg_pool2d(x, 2, ceil_mode=True), (IMG,),
     (), True),
    ("adaptive_avg_pool2d_1", lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 1), (IMG,),
     (), True),
    ("adaptive_avg_pool2d_3", lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 3), (IMG,),
     (), False),
    ("unfold", lambda L, x: L.nn.functional.unfold(x, 3, padding=1, stride=2), (IMG,), (), True),
    ("fold", lambda L, x: L.nn.functional.fold(x, (7, 7), 3, padding=1),
     (rng.standard_normal((2, 36, 49)),), (), True),
    ("pad_constant", lambda L, x: L.nn.functional.pad(x, (1, 2, 0, 1)), (IMG,), (), True),
    ("pad_negative", lambda L, x: L.nn.functional.pad(x, (-1, 2, 1, -2), value=3.0), (IMG,), (),
     True),
    ("pad_reflect", lambda L, x: L.nn.functional.pad(x, (1, 2, 2, 1), mode="reflect"), (IMG,),
     (), False),
    ("pad_replicate", lambda L, x: L.nn.functional.pad(x, (1, 2, 2, 1), mode="replicate"),
     (IMG,), (), False),
    ("pad_circular", lambda L, x: L.nn.functional.pad(x, (1, 2, 2, 1), mode="circular"),
     (IMG,), (), False),
    ("softmax", lambda L, x: L.nn.functional.softmax(x, 1), (X,), (), True),
    ("log_softmax", lambda L, x: L.nn.functional.log_softmax(x, -1), (X * 30,), (), True),
    ("softmin", lambda L, x: L.nn.functional.softmin(x, 0), (X,), (), True),
    ("cross_entropy", lambda L, x, t: L.nn.functional.cross_entropy(x, t), (X,), (T,), True),
    ("cross_entropy_sum_ignore",
     lambda L, x, t: L.nn.functional.cross_entropy(x, t, reduction="sum", ignore_index=2),
     (X,), (T,), True),
    ("cross_entropy_weight",
     lambda L, x, t: L.nn.functional.cross_entropy(x, t, weight=L.tensor(W5)), (X,), (T,),
     True),
    ("cross_entropy_label_smoothing",
     lambda L, x, t: L.nn.functional.cross_entropy(x, t, label_smoothing=0.1), (X,), (T,),
     True),
    ("cross_entropy_smoothing_weight_ignore",
     lambda L, x, t: L.nn.functional.cross_entropy(x, t, weight=L.tensor(W5),
                                                   label_smoothing=0.2, ignore_index=4),
     (X,), (T,), True),
    ("cross_entropy_none", lambda L, x, t: L.nn.functional.cross_entropy(x, t, reduction="none"),
     (X,), (T,), True),
    ("cross_entropy_probs",
     lambda L, x, y: L.nn.functional.cross_entropy(x, L.nn.functional.softmax(y, 1)), (X, Y),
     (), False),
    ("cross_entropy_4d", lambda L, x, t: L.nn.functional.cross_entropy(x, t),
     (rng.standard_normal((2, 3, 4, 5)),), (rng.integers(0, 3, (2, 4, 5)),), True),
    ("cross_entropy_unbatched", lambda L, x, t: L.nn.functional.cross_entropy(x, t),
     (X[0],), (np.array(3),), True),
    ("nll_loss", lambda L, x, t: L.nn.functional.nll_loss(x, t), (X,), (T,), True),
    ("mse_loss", lambda L, x, y: L.nn.functional.mse_loss(x, y), (X, Y), (), True),
    ("mse_loss_none", lambda L, x, y: L.nn.functional.mse_loss(x, y, reduction="none"), (X, Y),
     (), True),
    ("l1_loss", lambda L, x, y: L.nn.functional.l1_loss(x, y), (X, Y), (), True),
    ("smooth_l1_loss", lambda L, x, y: L.nn.functional.smooth_l1_loss(x, y, beta=0.5), (X, Y),
     (), True),
    ("huber_loss", lambda L, x, y: L.nn.functional.huber_loss(x, y, delta=0.7), (X, Y), (),
     True),
    ("binary_cross_entropy",
     lambda L, x, y: L.nn.functional.binary_cross_entropy(x.sigmoid(), y.detach()), (X, Q), (),
     True),
    ("binary_cross_entropy_weight",
     lambda L, x, y: L.nn.functional.binary_cross_entropy(x, y.detach(),
                                                          weight=L.tensor(W5)), (P, Q), (),
     True),
    ("bce_with_logits", lambda L, x, y: L.nn.functional.binary_cross_entropy_with_logits(x, y),
     (X * 5, Q), (), True),
    ("bce_with_logits_pos_weight",
     lambda L, x, y: L.nn.functional.binary_cross_entropy_with_logits(
         x, y, pos_weight=L.tensor(W5), weight=L.tensor(W5[::-1].copy())), (X, Q), (), True),
    ("kl_div_batchmean",
     lambda L, x, y: L.nn.functional.kl_div(L.nn.functional.log_softmax(x, 1),
                                            L.nn.functional.softmax(y, 1),
                                            reduction="batchmean"), (X, Y), (), True),
    ("kl_div_log_target",
     lambda L, x, y: L.nn.functional.kl_div(x, y, reduction="sum", log_target=True), (X, Y), (),
     True),
    ("layer_norm", lambda L, x, w, b: L.nn.functional.layer_norm(x, (5,), w, b), (X, W5, W5),
     (), True),
    ("layer_norm_2d_no_affine", lambda L, x: L.nn.functional.layer_norm(x, (7, 7)), (IMG,), (),
     True),
    ("batch_norm_train",
     lambda L, x, w, b: L.nn.functional.batch_norm(x, None, None, w, b, training=True),
     (IMG, W5[:4], W5[1:]), (), True),
    ("batch_norm_eval",
     lambda L, x, w, b: L.nn.functional.batch_norm(x, L.tensor(W5[:4]), L.tensor(W5[1:]), w, b),
     (IMG, W5[:4], W5[1:]), (), True),
    ("batch_norm_1d_no_affine",
     lambda L, x: L.nn.functional.batch_norm(x, None, None, training=True), (X,), (), True),
    ("group_norm", lambda L, x, w, b: L.nn.functional.group_norm(x, 2, w, b),
     (IMG, W5[:4], W5[1:]), (), False),
    ("embedding_padding_idx",
     lambda L, w, i: L.nn.functional.embedding(i, w, padding_idx=1),
     (rng.standard_normal((6, 3)),), (np.array([[1, 2, 2], [5, 0, 1]]),), True),
    ("normalize", lambda L, x: L.nn.functional.normalize(x), (X,), (), True),
    ("cosine_similarity", lambda L, x, y: L.nn.functional.cosine_similarity(x, y), (X, Y), (),
     True),
    ("adaptive_avg_pool2d_divides",
     lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, (2, 3)), (IMG[:, :, :6, :6],), (), True),
]
for _act in ["relu", "relu6", "elu", "selu", "celu", "leaky_relu", "gelu", "silu", "mish",
             "softplus", "hardtanh", "hardsigmoid", "hardswish", "logsigmoid", "softsign",
             "tanhshrink", "sigmoid", "tanh"]:
    CASES.append((_act, lambda L, x, a=_act: getattr(L.nn.functional, a)(x), (X * 3,), (),
                  True))
CASES += [
    ("gelu_tanh", lambda L, x: L.nn.functional.gelu(x, approximate="tanh"), (X,), (), True),
    ("softplus_beta_threshold", lambda L, x: L.nn.functional.softplus(x, 2, 1), (X,), (), True),
    ("leaky_relu_slope", lambda L, x: L.nn.functional.leaky_relu(x, 0.3), (X,), (), True),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_functional_float64_matches_torch_values_grads_names(case):
    _, fn, arrays, ints, check_name = case
    to, tg, tn = _run(fn, torch, arrays, ints, np.float64)
    ro, rgr, rn = _run(fn, rustgrad, arrays, ints, np.float64)

    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-9, atol=1e-10)
    for a, b in zip(rgr, tg):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-8, atol=1e-10)
    assert str(ro.dtype) == str(to.dtype)
    if check_name:
        assert rn == tn


@pytest.mark.parametrize("name", ["conv2d_groups", "max_pool2d_overlap", "cross_entropy",
                                  "bce_with_logits", "gelu", "layer_norm"])
def test_functional_float32_matches_torch(name):
    _, fn, arrays, ints, _ = next(c for c in CASES if c[0] == name)
    to, tg, _ = _run(fn, torch, arrays, ints, np.float32)
    ro, rgr, _ = _run(fn, rustgrad, arrays, ints, np.float32)

    assert str(ro.dtype) == "torch.float32"
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-5)
    for a, b in zip(rgr, tg):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_max_pool2d_return_indices_equal_torch():
    x = IMG.astype(np.float32)
    tv, ti = TF.max_pool2d(torch.tensor(x), 3, 2, 1, return_indices=True)
    rv, ri = RF.max_pool2d(rustgrad.tensor(x), 3, 2, 1, return_indices=True)

    np.testing.assert_array_equal(ri.numpy(), ti.numpy())
    np.testing.assert_array_equal(rv.numpy(), tv.numpy())
    assert ri.dtype == rustgrad.int64


def test_dropout_train_zeroes_and_scales_eval_is_identity():
    rustgrad.manual_seed(0)
    x = rustgrad.ones(2000, requires_grad=True)

    y = RF.dropout(x, 0.25, training=True)
    y.sum().backward()
    vals = np.unique(y.detach().numpy())

    np.testing.assert_array_equal(vals, np.array([0, 1 / 0.75], dtype=np.float32))
    assert 0.2 < float((y.detach().numpy() == 0).mean()) < 0.3
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())
    assert RF.dropout(x, 0.25, training=False) is x
    assert y.grad_fn.name() == "MulBackward0"


def test_dropout_is_reproducible_with_manual_seed():
    rustgrad.manual_seed(3)
    a = RF.dropout(rustgrad.ones(50), 0.5).numpy()
    rustgrad.manual_seed(3)
    b = RF.dropout(rustgrad.ones(50), 0.5).numpy()

    np.testing.assert_array_equal(a, b)


def test_dropout_invalid_probability_raises_value_error(lib):
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        lib.nn.functional.dropout(lib.ones(2), 1.5)


def test_one_hot_equals_torch():
    t = np.array([0, 3, 1])

    r = RF.one_hot(rustgrad.tensor(t), 5)

    np.testing.assert_array_equal(r.numpy(), TF.one_hot(torch.tensor(t), 5).numpy())
    assert r.dtype == rustgrad.int64


def test_softmax_is_stable_for_huge_logits(lib):
    x = lib.tensor([[1000.0, 0.0, -1000.0]])

    p = lib.nn.functional.softmax(x, 1)
    lp = lib.nn.functional.log_softmax(x, 1)

    assert p.tolist() == [[1.0, 0.0, 0.0]]
    assert lp[0, 0].item() == 0.0 and lp[0, 2].item() == -2000.0


def test_cross_entropy_all_ignored_mean_is_nan(lib):
    x = lib.zeros(2, 3, requires_grad=True)

    loss = lib.nn.functional.cross_entropy(x, lib.tensor([-100, -100]))

    assert np.isnan(loss.item())


def test_cross_entropy_target_out_of_bounds_raises_index_error(lib):
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        lib.nn.functional.cross_entropy(lib.zeros(2, 3), lib.tensor([0, 5]))


@pytest.mark.parametrize("dtype", ["int32", "float32", "int8", "bool"])
def test_cross_entropy_target_dtype_not_long_raises_runtime_error(lib, dtype):
    target = lib.tensor([0, 1], dtype=getattr(lib, dtype))

    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got"):
        lib.nn.functional.cross_entropy(lib.zeros(2, 3), target)


@pytest.mark.parametrize("spatial", [False, True])
def test_byte_targets_match_torch(spatial):
    # torch's 1-d kernel takes uint8 class indices; its 2-d kernel (spatial inputs) takes Long only
    def prog(lib):
        x = lib.tensor(np.linspace(-1.0, 1.0, 24).reshape(3, 4, 2)[..., : 2 if spatial else 1])
        x = x if spatial else x[..., 0]
        t = lib.tensor([[0, 3], [1, 2], [3, 3]], dtype=lib.uint8)
        t = t if spatial else t[:, 0]
        try:
            return lib.nn.functional.cross_entropy(x, t, reduction="none")
        except RuntimeError as e:
            return str(e)

    parity(prog)


def test_cross_entropy_batch_size_mismatch_raises_value_error(lib):
    with pytest.raises(ValueError, match=r"Expected input batch_size \(2\) to match target "
                                         r"batch_size \(3\)"):
        lib.nn.functional.cross_entropy(lib.zeros(2, 3), lib.tensor([0, 1, 2]))


def test_linear_shape_mismatch_raises_runtime_error(lib):
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 "
                                           r"and 4x5\)"):
        lib.nn.functional.linear(lib.zeros(2, 3), lib.zeros(5, 4))


def test_linear_dtype_mismatch_raises_runtime_error(lib):
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but "
                                           "got: double != float"):
        lib.nn.functional.linear(lib.zeros(2, 3, dtype=lib.float64), lib.zeros(5, 3))


def test_conv2d_channel_mismatch_raises_runtime_error(lib):
    with pytest.raises(RuntimeError, match="to have 4 channels, but got 3 channels instead"):
        lib.nn.functional.conv2d(lib.zeros(1, 3, 5, 5), lib.zeros(2, 4, 3, 3))


def test_binary_cross_entropy_input_out_of_range_raises(lib):
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        lib.nn.functional.binary_cross_entropy(lib.tensor([1.5]), lib.tensor([1.0]))


def test_mse_loss_broadcast_warns_like_torch(lib):
    with pytest.warns(UserWarning, match="Using a target size"):
        lib.nn.functional.mse_loss(lib.zeros(3, 1), lib.zeros(3))


def test_relu_inplace_writes_input_and_bumps_version(lib):
    x = lib.tensor([-1.0, 2.0], requires_grad=True)
    y = x * 1
    v = y._version

    out = lib.nn.functional.relu(y, inplace=True)

    assert out is y and y.tolist() == [0.0, 2.0] and y._version > v
    out.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0]


def test_relu_inplace_on_leaf_requiring_grad_raises(lib):
    x = lib.tensor([-1.0, 2.0], requires_grad=True)

    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        lib.nn.functional.relu(x, inplace=True)


# ---- finite differences (float64), first and second order ----------------------------------
GRADCHECK = [
    ("linear", lambda x, w, b: RF.linear(x, w, b), [(3, 4), (2, 4), (2,)]),
    ("conv2d", lambda x, w, b: RF.conv2d(x, w, b, 2, 1), [(1, 2, 5, 5), (3, 2, 3, 3), (3,)]),
    ("conv2d_groups", lambda x, w: RF.conv2d(x, w, None, 1, 1, 2, 2),
     [(1, 4, 5, 5), (2, 2, 2, 2)]),
    ("unfold", lambda x: RF.unfold(x, 2, padding=1, stride=2), [(1, 2, 4, 4)]),
    ("fold", lambda x: RF.fold(x, (3, 3), 2), [(1, 8, 4)]),
    ("max_pool2d", lambda x: RF.max_pool2d(x, 2, 1), [(1, 2, 4, 4)]),
    ("avg_pool2d", lambda x: RF.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
     [(1, 2, 5, 5)]),
    ("log_softmax", lambda x: RF.log_softmax(x, 1), [(3, 4)]),
    ("softmax", lambda x: RF.softmax(x, 0), [(3, 4)]),
    ("mse_loss", lambda x, y: RF.mse_loss(x, y), [(3, 4), (3, 4)]),
    ("huber_loss", lambda x, y: RF.huber_loss(x, y, delta=0.3), [(3, 4), (3, 4)]),
    ("bce_with_logits", lambda x, y: RF.binary_cross_entropy_with_logits(x, y.sigmoid()),
     [(3, 4), (3, 4)]),
    ("gelu", lambda x: RF.gelu(x), [(3, 4)]),
    ("silu", lambda x: RF.silu(x), [(3, 4)]),
    ("elu", lambda x: RF.elu(x, 0.7), [(3, 4)]),
    ("softplus", lambda x: RF.softplus(x, 2.0, 1.0), [(3, 4)]),
    ("mish", lambda x: RF.mish(x), [(3, 4)]),
    ("layer_norm", lambda x, w, b: RF.layer_norm(x, (4,), w, b), [(3, 4), (4,), (4,)]),
    ("batch_norm", lambda x, w, b: RF.batch_norm(x, None, None, w, b, training=True),
     [(4, 3, 2), (3,), (3,)]),
    ("batch_norm_eval", lambda x, w: RF.batch_norm(x, rustgrad.ones(3, dtype=rustgrad.float64),
                                                   rustgrad.ones(3, dtype=rustgrad.float64) * 2,
                                                   w), [(4, 3), (3,)]),
]


def _inputs(shapes: list, seed: int = 0) -> list:
    g = np.random.default_rng(seed)
    return [rustgrad.tensor(g.uniform(-1.5, 1.5, s) + 0.0123, requires_grad=True)
            for s in shapes]


@pytest.mark.parametrize("case", GRADCHECK, ids=[c[0] for c in GRADCHECK])
def test_primitive_gradcheck_first_order(case):
    _, fn, shapes = case
    assert rustgrad.autograd.gradcheck(fn, tuple(_inputs(shapes)), eps=1e-6, atol=1e-5)


def _vjp(fn: Callable[..., Any], n: int, out_shape: tuple) -> Callable[..., Any]:
    def f(*args: Any) -> Any:
        xs, v = args[:n], args[n]
        with rustgrad.enable_grad():  # gradcheck's finite differences run under no_grad
            out = fn(*xs)
            return rustgrad.autograd.grad(out, xs, v.reshape(out_shape), create_graph=True)

    return f


@pytest.mark.parametrize("case", GRADCHECK, ids=[c[0] for c in GRADCHECK])
def test_primitive_gradcheck_second_order(case):
    _, fn, shapes = case
    xs = _inputs(shapes)
    out_shape = tuple(fn(*xs).shape)
    v = rustgrad.tensor(np.random.default_rng(2).standard_normal(out_shape),
                        requires_grad=True)

    assert rustgrad.autograd.gradcheck(_vjp(fn, len(xs), out_shape), tuple(xs + [v]), eps=1e-6,
                                       atol=1e-4)


def test_functional_module_classes_use_same_math(lib):
    nn = lib.nn
    x = lib.tensor(X)
    t = lib.tensor(T)

    assert nn.CrossEntropyLoss(label_smoothing=0.1)(x, t).item() == \
        lib.nn.functional.cross_entropy(x, t, label_smoothing=0.1).item()
    assert nn.MSELoss(reduction="sum")(x, x * 2).item() == \
        lib.nn.functional.mse_loss(x, x * 2, reduction="sum").item()


@pytest.mark.parametrize("shape,with_bias", [((4,), True), ((3, 4), False), ((3, 4), True),
                                             ((2, 3, 4), False), ((2, 3, 4), True),
                                             ((1, 2, 3, 4), True)])
def test_linear_graph_names_match_torch(shape, with_bias):
    # torch >= 2.15 ends a folded linear with a bias on _unsafe_view too
    def names(lib):
        x = lib.ones(shape, requires_grad=True)
        w = lib.ones(5, 4, requires_grad=True)
        b = lib.ones(5, requires_grad=True) if with_bias else None
        fn = lib.nn.functional.linear(x, w, b).grad_fn
        return fn.name(), [n[0].name() if n[0] is not None else None for n in fn.next_functions]

    assert names(rustgrad) == names(torch)
