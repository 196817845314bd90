"""bfloat16 tensors (ml_dtypes' NumPy type) through common ops, against torch's CPU bfloat16: the
output and gradient dtypes equal torch's, the values agree to bfloat16's precision (torch's CPU
kernels compute in float32 and round once, so rustgrad's must not accumulate in bfloat16)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pytest
import rustgrad
import torch

RTOL, ATOL = 1.6e-2, 1e-2  # two bfloat16 ulps: one rounding on each side may differ


def F(lib: Any) -> Any:
    return lib.nn.functional


def _inputs(lib: Any, arrays: Sequence[np.ndarray], grad: bool) -> list:
    out = []
    for a in arrays:
        if a.dtype.kind == "f":
            out.append(lib.tensor(a).to(lib.bfloat16).requires_grad_(grad))
        else:
            out.append(lib.tensor(a))
    return out


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _values(t: Any) -> np.ndarray:
    if t.dtype in (torch.bfloat16, rustgrad.bfloat16):
        t = t.float()
    return np.asarray(t.detach().numpy())


def assert_close(r: Any, t: Any, what: str, rtol: float = RTOL, atol: float = ATOL) -> None:
    assert repr(r.dtype) == repr(t.dtype), f"{what}: dtype {r.dtype} != torch's {t.dtype}"
    assert tuple(r.shape) == tuple(t.shape), f"{what}: shape {tuple(r.shape)} != {tuple(t.shape)}"
    np.testing.assert_allclose(_values(r), _values(t), rtol=rtol, atol=atol, err_msg=what)


def check_bf16(fn: Callable[..., Any], *specs: Any, grad: bool = True, seed: int = 0,
               rtol: float = RTOL, atol: float = ATOL) -> None:
    """Runs fn(lib, *inputs) on bfloat16 inputs under torch and rustgrad; compares the outputs,
    then back-propagates the same upstream gradient and compares the input gradients."""
    rng = np.random.default_rng(seed)
    arrays = [s if isinstance(s, np.ndarray) else rng.uniform(-2, 2, s).astype(np.float32)
              for s in specs]
    ti, ri = _inputs(torch, arrays, grad), _inputs(rustgrad, arrays, grad)
    touts, routs = _as_tuple(fn(torch, *ti)), _as_tuple(fn(rustgrad, *ri))
    assert len(touts) == len(routs)
    for i, (t, r) in enumerate(zip(touts, routs)):
        assert_close(r, t, f"output {i}", rtol, atol)
    if not grad:
        return
    diff = [(t, r) for t, r in zip(touts, routs) if t.requires_grad]
    assert [r.requires_grad for r in routs] == [t.requires_grad for t in touts]
    if not diff:
        return
    ups = [rng.uniform(-1, 1, tuple(t.shape)).astype(np.float32) for t, _ in diff]
    torch.autograd.backward([t for t, _ in diff],
                            [torch.tensor(u).to(t.dtype) for u, (t, _) in zip(ups, diff)])
    rustgrad.autograd.backward([r for _, r in diff],
                               [rustgrad.tensor(u).to(r.dtype) for u, (_, r) in zip(ups, diff)])
    for i, (t, r) in enumerate(zip(ti, ri)):
        if t.grad is None:
            assert r.grad is None, f"input {i}: rustgrad has a grad, torch none"
            continue
        assert r.grad is not None, f"input {i}: no grad"
        assert_close(r.grad, t.grad, f"grad of input {i}", rtol, atol)


PROGRAMS = {
    "add_float": (lambda lib, x: x + 2.5, [(3, 4)]),
    "radd_int": (lambda lib, x: 3 + x, [(3, 4)]),
    "mul_float": (lambda lib, x: x * 2.5, [(3, 4)]),
    "rsub_float": (lambda lib, x: 1.5 - x, [(3, 4)]),
    "div_float": (lambda lib, x: x / 3.0, [(3, 4)]),
    "pow_float": (lambda lib, x: x.abs() ** 1.5, [(3, 4)]),
    "mul_tensors": (lambda lib, x, y: x * y, [(3, 4), (4,)]),
    "add_float32_tensor": (lambda lib, x: x + lib.ones(4), [(3, 4)]),
    "add_0dim_float32": (lambda lib, x: x + lib.tensor(2.0), [(3, 4)]),
    "matmul": (lambda lib, x, y: x @ y, [(5, 8), (8, 3)]),
    "bmm": (lambda lib, x, y: lib.bmm(x, y), [(2, 5, 8), (2, 8, 3)]),
    "mv": (lambda lib, x, y: lib.mv(x, y), [(5, 8), (8,)]),
    "linear": (lambda lib, x, w, b: F(lib).linear(x, w, b), [(4, 6), (3, 6), (3,)]),
    "sum": (lambda lib, x: x.sum(), [(64, 64)]),
    "sum_dim": (lambda lib, x: x.sum(1), [(8, 300)]),
    "mean": (lambda lib, x: x.mean(), [(64, 64)]),
    "mean_dim": (lambda lib, x: x.mean(0, keepdim=True), [(300, 5)]),
    "var": (lambda lib, x: x.var(1), [(4, 50)]),
    "std": (lambda lib, x: x.std(), [(4, 50)]),
    "amax": (lambda lib, x: x.amax(1), [(4, 7)]),
    "max_dim": (lambda lib, x: x.max(1)[0], [(4, 7)]),
    "softmax": (lambda lib, x: F(lib).softmax(x, -1), [(4, 10)]),
    "log_softmax": (lambda lib, x: F(lib).log_softmax(x, 1), [(4, 10)]),
    "cross_entropy": (lambda lib, x, y: F(lib).cross_entropy(x, y),
                      [(6, 5), np.array([0, 1, 4, 2, 3, 1])]),
    "mse_loss": (lambda lib, x, y: F(lib).mse_loss(x, y), [(6, 5), (6, 5)]),
    "gelu": (lambda lib, x: F(lib).gelu(x), [(4, 10)]),
    "gelu_tanh": (lambda lib, x: F(lib).gelu(x, approximate="tanh"), [(4, 10)]),
    "relu": (lambda lib, x: F(lib).relu(x), [(4, 10)]),
    "silu": (lambda lib, x: F(lib).silu(x), [(4, 10)]),
    "tanh": (lambda lib, x: x.tanh(), [(4, 10)]),
    "sigmoid": (lambda lib, x: x.sigmoid(), [(4, 10)]),
    "exp_log": (lambda lib, x: x.exp().log(), [(4, 10)]),
    "sqrt_rsqrt": (lambda lib, x: x.abs().add(0.5).sqrt() + x.abs().add(0.5).rsqrt(), [(4, 10)]),
    "clamp": (lambda lib, x: x.clamp(-0.5, 0.5), [(4, 10)]),
    "where": (lambda lib, x: lib.where(x > 0, x, 0.5 * x), [(4, 10)]),
    "layer_norm": (lambda lib, x, w, b: F(lib).layer_norm(x, (10,), w, b), [(4, 10), (10,), (10,)]),
    "dropout_eval": (lambda lib, x: F(lib).dropout(x, 0.5, training=False), [(4, 10)]),
    "cat_stack": (lambda lib, x, y: (lib.cat([x, y]), lib.stack([x, y])), [(2, 3), (2, 3)]),
    "views": (lambda lib, x: (x.t().reshape(-1)[::2], x.unsqueeze(0).expand(2, 3, 4)), [(3, 4)]),
    "norm": (lambda lib, x: x.norm(), [(4, 10)]),
    "logsumexp": (lambda lib, x: x.logsumexp(1), [(4, 10)]),
    "softplus_logsigmoid": (lambda lib, x: F(lib).softplus(x) + F(lib).logsigmoid(x), [(4, 10)]),
    "hardswish": (lambda lib, x: F(lib).hardswish(x), [(4, 10)]),
    "conv1d": (lambda lib, x, w, b: F(lib).conv1d(x, w, b, padding=1), [(2, 3, 7), (4, 3, 3), (4,)]),
    "conv2d": (lambda lib, x, w: F(lib).conv2d(x, w, stride=2), [(1, 2, 6, 6), (3, 2, 3, 3)]),
    "interpolate_linear": (lambda lib, x: F(lib).interpolate(x, scale_factor=2, mode="linear"),
                           [(1, 2, 5)]),
    "median": (lambda lib, x: (x.median(), x.median(1)[0]), [(3, 5)]),
    "sort_topk": (lambda lib, x: (x.sort(1)[0], x.topk(2)[0]), [(3, 5)]),
    "cumsum_prod": (lambda lib, x: (x.cumsum(1), x.prod(1)), [(3, 5)]),
    "addmm": (lambda lib, b, x, y: lib.addmm(b, x, y), [(3,), (4, 5), (5, 3)]),
    "einsum": (lambda lib, x, y: lib.einsum("ij,jk->ik", x, y), [(3, 16), (16, 5)]),
    "dot_outer": (lambda lib, x, y: (lib.dot(x, y), lib.outer(x, y)), [(30,), (30,)]),
    "baddbmm": (lambda lib, b, x, y: lib.baddbmm(b, x, y), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    "bce_with_logits": (lambda lib, x, y: F(lib).binary_cross_entropy_with_logits(x, y.abs() / 2),
                        [(4, 5), (4, 5)]),
    "batch_norm": (lambda lib, x, w, b: F(lib).batch_norm(x, None, None, w, b, training=True),
                   [(8, 3), (3,), (3,)]),
    "embedding": (lambda lib, i, w: F(lib).embedding(i, w), [np.array([1, 0, 2]), (4, 3)]),
    "max_avg_pool2d": (lambda lib, x: (F(lib).max_pool2d(x, 2), F(lib).avg_pool2d(x, 2)),
                       [(1, 2, 4, 4)]),
    "sdpa": (lambda lib, q, k, v: F(lib).scaled_dot_product_attention(q, k, v),
             [(1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_bfloat16_op_matches_torch(name):
    fn, specs = PROGRAMS[name]
    check_bf16(fn, *specs)


def test_dropout_in_training_keeps_bfloat16():
    for lib in (torch, rustgrad):
        x = lib.ones(200, dtype=lib.bfloat16, requires_grad=True)
        y = F(lib).dropout(x, 0.5, training=True)
        assert repr(y.dtype) == "torch.bfloat16"
        kept = y.float()[y.float() != 0]
        assert (kept == 2.0).all()
        y.sum().backward()
        assert repr(x.grad.dtype) == "torch.bfloat16"


def test_bitwise_ops_refuse_bfloat16_as_torch():
    for lib in (torch, rustgrad):
        x = lib.ones(2, dtype=lib.bfloat16)
        with pytest.raises(NotImplementedError, match="\"bitwise_and_cpu\" not implemented for "
                           "'BFloat16'"):
            _ = x & x
        with pytest.raises(TypeError, match="only implemented on integer and Boolean"):
            _ = ~x


def test_autograd_function_bfloat16_output_is_differentiable():
    for lib in (torch, rustgrad):
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x * 2

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g * 2

        x = lib.ones(3, dtype=lib.bfloat16, requires_grad=True)
        y = Twice.apply(x)
        assert y.requires_grad
        y.sum().backward()
        assert repr(x.grad.dtype) == "torch.bfloat16" and x.grad.float().tolist() == [2.0] * 3


def test_requires_grad_on_bfloat16_leaves():
    for lib in (torch, rustgrad):
        a = lib.zeros(2, dtype=lib.bfloat16).requires_grad_()
        b = lib.zeros(2, dtype=lib.bfloat16)
        b.requires_grad = True
        c = lib.ones(2, dtype=lib.bfloat16, requires_grad=True)
        assert a.requires_grad and b.requires_grad and c.requires_grad
        assert lib.nn.Parameter(lib.ones(2, dtype=lib.bfloat16)).requires_grad


def test_tensor_bfloat16_method_is_to_bfloat16():
    t = torch.tensor([1.0, 1.3, -0.7]).bfloat16()
    r = rustgrad.tensor([1.0, 1.3, -0.7]).bfloat16()
    assert_close(r, t, "bfloat16()", rtol=0, atol=0)
    assert r.bfloat16() is r  # the same dtype: no copy, as torch's
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x.bfloat16()
    assert y.grad_fn.name() == "ToCopyBackward0"
    y.sum().backward()
    assert x.grad.dtype is rustgrad.float32


def test_python_scalars_keep_bfloat16_as_torch():
    for lib in (torch, rustgrad):
        x = lib.ones(3, dtype=lib.bfloat16)
        for y in (x * 2.5, 2.5 * x, x + 1, x / 3, x * True, x - 1, x ** 2.0, x.mul(0.1), x > 0.5):
            assert repr(y.dtype) == ("torch.bool" if y is not None and y.dtype == lib.bool
                                     else "torch.bfloat16"), (lib.__name__, y.dtype)
        assert repr((x + lib.ones(3, dtype=lib.float16)).dtype) == "torch.float32"
        assert repr((x + lib.ones(3, dtype=lib.float64)).dtype) == "torch.float64"
        assert repr((x + lib.ones(3, dtype=lib.int64)).dtype) == "torch.bfloat16"


def test_fused_pointwise_ops_round_once_as_torch():
    # torch computes addcmul/addcdiv and a float scalar's product in float32 and rounds once
    vals = [1.3, -2.2, 0.5, 0.123, 7.7, -0.031]
    for fn in (lambda lib, x: x.clone().addcmul_(x, x, value=0.5),
               lambda lib, x: lib.addcdiv(x, x, x + 3, value=0.3),
               lambda lib, x: x * 0.1, lambda lib, x: x / 0.3, lambda lib, x: x + 0.01):
        t = fn(torch, torch.tensor(vals).bfloat16())
        r = fn(rustgrad, rustgrad.tensor(vals).bfloat16())
        assert_close(r, t, "fused op", rtol=0, atol=0)


def test_sum_accumulates_in_float32_as_torch():
    # 4096 ones plus small values: a bfloat16 accumulator stalls at 256, torch's float32 does not
    for fn in (lambda lib, x: x.sum(), lambda lib, x: x.mean(), lambda lib, x: x.sum(0)):
        t = fn(torch, torch.ones(4096, dtype=torch.bfloat16))
        r = fn(rustgrad, rustgrad.ones(4096, dtype=rustgrad.bfloat16))
        assert_close(r, t, "sum of ones", rtol=0, atol=0)


def _linear_step(lib: Any, w0: np.ndarray, b0: np.ndarray, x0: np.ndarray,
                 y0: np.ndarray) -> tuple:
    model = lib.nn.Linear(4, 3)
    with lib.no_grad():
        model.weight.copy_(lib.tensor(w0))
        model.bias.copy_(lib.tensor(b0))
    model = model.to(lib.bfloat16)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    loss = F(lib).cross_entropy(model(lib.tensor(x0).to(lib.bfloat16)), lib.tensor(y0))
    opt.zero_grad()
    loss.backward()
    grads = (model.weight.grad.clone(), model.bias.grad.clone())
    opt.step()
    return loss, grads, model.weight, model.bias


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_optimizer_steps_keep_bfloat16_parameters(name):
    def steps(lib: Any) -> list:
        p = lib.tensor(np.linspace(-1, 1, 6, dtype=np.float32)).to(lib.bfloat16)
        p.requires_grad_()
        opt = getattr(lib.optim, name)([p], lr=0.01)
        for _ in range(3):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
        return [p]

    (t,), (r,) = steps(torch), steps(rustgrad)
    assert_close(r, t, f"{name} parameter")


def test_linear_training_step_in_bfloat16():
    rng = np.random.default_rng(1)
    w0 = rng.uniform(-0.5, 0.5, (3, 4)).astype(np.float32)
    b0 = rng.uniform(-0.5, 0.5, 3).astype(np.float32)
    x0 = rng.uniform(-1, 1, (8, 4)).astype(np.float32)
    y0 = rng.integers(0, 3, 8)
    t_loss, t_grads, t_w, t_b = _linear_step(torch, w0, b0, x0, y0)
    r_loss, r_grads, r_w, r_b = _linear_step(rustgrad, w0, b0, x0, y0)
    assert_close(r_loss, t_loss, "loss")
    for i, (r, t) in enumerate(zip(r_grads, t_grads)):
        assert_close(r, t, f"grad {i}")
    assert_close(r_w, t_w, "weight after step")
    assert_close(r_b, t_b, "bias after step")


def test_median_and_sort_put_nan_as_torch():
    def program(lib: Any) -> tuple:
        x = lib.tensor([[1.3, float("nan"), 0.5], [2.0, 1.0, 3.0]]).to(lib.bfloat16)
        return x.median(), x.median(1)[0], x.median(1)[1], x.sort(1)[0]

    for i, (r, t) in enumerate(zip(program(rustgrad), program(torch))):
        assert repr(r.dtype) == repr(t.dtype), i
        np.testing.assert_array_equal(_values(r), _values(t), err_msg=str(i))


@pytest.mark.parametrize("name", ["gelu", "softmax"])
def test_gradients_round_once_as_torch(name):
    # torch's CPU backward kernels compute in float32 and round the gradient once
    v = np.linspace(-3, 3, 200, dtype=np.float32)
    up = np.cos(np.arange(200, dtype=np.float32))
    grads = []
    for lib in (torch, rustgrad):
        x = lib.tensor(v).to(lib.bfloat16).requires_grad_()
        y = F(lib).gelu(x) if name == "gelu" else F(lib).softmax(x.reshape(10, 20), 1).reshape(-1)
        y.backward(lib.tensor(up).to(lib.bfloat16))
        grads.append(x.grad)
    assert_close(grads[1], grads[0], f"{name} grad", rtol=0, atol=0)
