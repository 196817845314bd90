"""rustgrad.func.vmap's batched path (func/_batching.py) against torch.func.vmap: elementwise ops,
reductions, matmul, views, an MLP through functional_call (per-sample gradients, gradients
through vmap), nesting, in_dims/out_dims, the per-op loop for ops without a rule, the
whole-function loop where the rules cannot follow, and that a batched call runs each op once."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import rustgrad
import torch
from rustgrad.func import _vmap

from ..parity import _assert_same_values, to_np

RNG = np.random.default_rng(24)
X = RNG.uniform(-1.5, 1.5, (5, 3))
Y = RNG.uniform(-1.5, 1.5, (5, 3))
M = RNG.uniform(-1.5, 1.5, (5, 3, 4))
W = RNG.uniform(-1.0, 1.0, (3, 4))
V4 = RNG.uniform(-1.0, 1.0, 4)
T52 = RNG.uniform(-1.0, 1.0, (5, 2))


def run(fn: Callable[[Any, Callable[..., Any]], Any], device: str, path: str = "batched",
        rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """`fn(lib, t)` under torch (cpu) and rustgrad (`device`), results compared; the last vmap
    call of the rustgrad run must have taken `path` ("batched" or "loop")."""
    def maker(lib: Any, dev: str) -> Callable[..., Any]:
        return lambda a, **kw: lib.tensor(np.asarray(a, dtype=np.float64), device=dev, **kw)

    expected = to_np(fn(torch, maker(torch, "cpu")))
    _vmap.last_path = ""
    got = to_np(fn(rustgrad, maker(rustgrad, device)))
    assert _vmap.last_path.split(" ")[0] == path, _vmap.last_path
    _assert_same_values(expected, got, rtol, atol)


# ---- elementwise ------------------------------------------------------------------------------
ELEMENTWISE = {
    "unary": lambda lib: lambda x, y: x.sin().exp() - x.abs().sqrt(),
    "binary-broadcast": lambda lib: lambda x, y: x * y + 2.0 - y / (1.0 + x ** 2),
    "unbatched-operand": lambda lib: lambda x, y: x[None, :] + lib.ones(2, 1, dtype=x.dtype,
                                                                          device=x.device),
    "compare-where": lambda lib: lambda x, y: lib.where(x > y, x, y * 3.0) + (x == x).double(),
    "activations": lambda lib: lambda x, y: (lib.nn.functional.relu(x) + lib.sigmoid(y)
                                             + lib.tanh(x) + lib.nn.functional.gelu(y)),
    "softmax": lambda lib: lambda x, y: lib.softmax(x * y, dim=0) + x.log_softmax(-1),
    # a 0-d float64 element times a float32 vector: float32, as for a 0-d tensor
    "0-d-promotion": lambda lib: lambda x, y: x.sum() * lib.ones(3, device=x.device),
    "clamp-minmax": lambda lib: lambda x, y: x.clamp(min=-0.5, max=0.5) + lib.maximum(x, y),
}


@pytest.mark.parametrize("case", sorted(ELEMENTWISE))
def test_elementwise_ops_batch_as_torch(device, case):
    run(lambda lib, t: lib.func.vmap(ELEMENTWISE[case](lib))(t(X), t(Y)), device)


# ---- reductions -----------------------------------------------------------------------------
REDUCTIONS = {
    "sum-all": lambda x: x.sum(),
    "sum-dim": lambda x: x.sum(0) + x.sum(-1, keepdim=True).sum(),
    "mean-tuple": lambda x: x.mean((0, 1)),
    "amax-amin": lambda x: x.amax(-1) - x.amin(dim=1),
    "max-dim": lambda x: x.max(dim=-1).values,
    "logsumexp-cumsum": lambda x: x.logsumexp(0) + x.cumsum(1)[-1],
    "argmax": lambda x: x.argmax(-1).double(),
}


@pytest.mark.parametrize("case", sorted(REDUCTIONS))
def test_reductions_shift_their_dims(device, case):
    run(lambda lib, t: lib.func.vmap(REDUCTIONS[case])(t(M)), device)


# ---- matmul -------------------------------------------------------------------------------------
MATMULS = {  # (func of lib, in_dims, inputs of t)
    "vec@mat": (lambda lib: lambda x, w: x @ w, (0, None), lambda t: (t(X), t(W))),
    "mat@vec": (lambda lib: lambda m, v: m @ v, (0, None), lambda t: (t(M), t(V4))),
    "both-batched": (lambda lib: lambda x, m: x @ m, (0, 0), lambda t: (t(X), t(M))),
    "mat@mat": (lambda lib: lambda m, w: m.transpose(0, 1) @ w, (0, None),
                lambda t: (t(M), t(W))),
    "mm-mv-dot": (lambda lib: lambda x, m: lib.mv(m.t(), x).sum() + lib.dot(x, x)
                  + lib.mm(x[None], m).sum(), (0, 0), lambda t: (t(X), t(M))),
    "linear-unbatched-w": (lambda lib: lambda x, w: lib.nn.functional.linear(x, w.t()),
                           (0, None), lambda t: (t(X), t(W))),
    "linear-batched-w": (lambda lib: lambda x, m: lib.nn.functional.linear(x[None], m.t(), m[0]),
                         (0, 0), lambda t: (t(X), t(M))),
}


@pytest.mark.parametrize("case", sorted(MATMULS))
def test_matmul_family_is_one_batched_matmul(device, case):
    make, dims, inputs = MATMULS[case]
    run(lambda lib, t: lib.func.vmap(make(lib), in_dims=dims)(*inputs(t)), device)


# ---- views and per-sample shapes --------------------------------------------------------------
VIEWS = {
    "reshape-view": lambda x: x.reshape(4, 3).view(-1) + x.flatten(),
    "transpose-permute": lambda x: x.transpose(0, 1).permute(1, 0) * x.t().t(),
    "unsqueeze-squeeze": lambda x: x.unsqueeze(-1).unsqueeze(0).squeeze(0).squeeze(-1),
    "index": lambda x: x[1:, ::2][..., None][0] + x[:, -1][:, None][:2].sum(),
    "expand": lambda x: x[:, :1].expand(3, 4) + x,
    "select-narrow-chunk": lambda x: x.select(1, 2) + x.narrow(-1, 1, 1)[:, 0]
    + x.chunk(2, dim=1)[0].sum(-1),
    "mT-T-movedim": lambda x: x.mT.mT + x.T.T + x.movedim(0, 1).movedim(-1, 0),
    "stack-cat": lambda x: rustgrad_or_torch(x).stack([x, x * 2], 1).sum(1)
    + rustgrad_or_torch(x).cat([x, x], -1)[:, :4],
}


def rustgrad_or_torch(x: Any) -> Any:
    return torch if isinstance(x, torch.Tensor) else rustgrad


@pytest.mark.parametrize("case", sorted(VIEWS))
def test_views_shift_shapes_and_dims(device, case):
    run(lambda lib, t: lib.func.vmap(VIEWS[case])(t(M)), device)


def test_func_sees_per_sample_shapes(device):
    def fn(lib, t):
        seen = []

        def f(m):
            seen.append([tuple(m.shape), tuple(m.size()), m.size(-1), m.dim(), m.ndim,
                         m.numel(), len(m)])
            return m.reshape(m.shape[0], -1).sum(-1)
        return lib.func.vmap(f)(t(M)), seen
    run(fn, device)


# ---- an MLP via functional_call ------------------------------------------------------------------
def _mlp(lib: Any) -> Any:
    nn = lib.nn
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2)).double()
    g = np.random.default_rng(5)
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(g.uniform(-0.5, 0.5, tuple(p.shape))))
    return model


def test_per_sample_gradients_of_an_mlp(device):
    def fn(lib, t):
        model = _mlp(lib).to(device if lib is rustgrad else "cpu")
        params = {k: v.detach() for k, v in model.named_parameters()}
        target = t(T52)

        def loss(p, x, y):
            out = lib.func.functional_call(model, p, (x.unsqueeze(0),))
            return lib.nn.functional.mse_loss(out, y.unsqueeze(0))
        return lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, t(X), target)
    run(fn, device)


def test_gradients_flow_through_a_batched_call(device):
    def fn(lib, t):
        model = _mlp(lib).to(device if lib is rustgrad else "cpu")
        params = {k: v.detach().requires_grad_() for k, v in model.named_parameters()}
        x = t(X, requires_grad=True)
        out = lib.func.vmap(lambda p, xi: lib.func.functional_call(model, p, (xi,)),
                            in_dims=(None, 0))(params, x)
        (out ** 2).sum().backward()
        return out, x.grad, {k: v.grad for k, v in params.items()}
    run(fn, device)


def test_vmap_of_grad_and_grad_of_vmap(device):
    def fn(lib, t):
        f = lambda x, y: (x.tanh() @ y.cos()).sum() * x.sum()  # noqa: E731
        per = lib.func.vmap(lib.func.grad(f, argnums=(0, 1)))(t(X), t(Y))
        outer = lib.func.grad(lambda x: lib.func.vmap(f, in_dims=(0, None))(x, t(Y[0])).sum())(
            t(X))
        return per, outer
    run(fn, device)


# ---- nesting, in_dims, out_dims --------------------------------------------------------------
def test_nested_vmap(device):
    def fn(lib, t):
        inner = lib.func.vmap(lambda a, b: (a * b).sum(), in_dims=(0, None))
        return lib.func.vmap(inner, in_dims=(0, 1))(t(M), t(M[:, 0, :].T))
    run(fn, device)


def test_in_dims_and_out_dims(device):
    def fn(lib, t):
        f = lambda d, w: ({"s": d["x"] @ w, "n": d["y"].norm(dim=-1)}, w.sum())  # noqa: E731
        data = {"x": t(M).transpose(0, 2), "y": t(Y)}
        return lib.func.vmap(f, in_dims=({"x": 2, "y": 0}, None),
                             out_dims=({"s": 1, "n": 0}, None))(data, t(X[0]))
    run(fn, device)


def test_unbatched_output_is_expanded(device):
    run(lambda lib, t: lib.func.vmap(lambda x, w: (x.sum(), w * 2), in_dims=(0, None))(
        t(X), t(W)), device)


# ---- the loops: per op, and for the whole function ---------------------------------------------
def test_an_op_without_a_rule_runs_per_element(device):
    # flip, sort and trace have no rule: the per-op loop, inside a batched call
    run(lambda lib, t: lib.func.vmap(
        lambda m: m[:, :3].flip(0)[0] + m.sort(dim=-1).values[:, 0] + m[:, :3].trace())(t(M)),
        device)


def test_a_view_op_without_a_rule_takes_the_loop(device):
    # a stacked copy of per-element diagonals would not write through to the input
    def fn(lib, t):
        x = t(M[:, :, :3])
        out = lib.func.vmap(lambda m: (m.diagonal().mul_(0), m * 2)[1])(x)
        return out, x
    run(fn, device, path="loop")


def test_data_dependent_control_flow_takes_the_loop():
    # torch raises for `if tensor` inside vmap; rustgrad reruns func per element
    x = rustgrad.tensor(X)
    out = rustgrad.func.vmap(lambda r: r * 2 if r.sum() > 0 else -r)(x)
    assert _vmap.last_path.startswith("loop")
    expected = np.stack([r * 2 if r.sum() > 0 else -r for r in X])
    np.testing.assert_allclose(out.numpy(), expected)


def test_a_captured_op_reference_takes_the_loop_or_its_wrapper():
    x = rustgrad.tensor(M)
    out = rustgrad.func.vmap(rustgrad.sum)(x)  # the op itself: its wrapped entry point runs
    assert _vmap.last_path == "batched"
    np.testing.assert_allclose(out.numpy(), M.sum((1, 2)))
    total = rustgrad.sum
    out = rustgrad.func.vmap(lambda m: total(m) * 2)(x)  # taken before the call: read as is
    np.testing.assert_allclose(out.numpy(), M.sum((1, 2)) * 2)


def test_batched_tensors_are_plain_after_the_call():
    kept = []
    rustgrad.func.vmap(lambda r: kept.append(r * 2) or r.sum())(rustgrad.tensor(X))
    assert type(kept[0]) is rustgrad.Tensor and tuple(kept[0].shape) == (5, 3)


# ---- each op runs once -----------------------------------------------------------------------
@pytest.mark.parametrize("batched", [True, False])
def test_a_batched_call_runs_each_op_once(monkeypatch, batched):
    calls = {"sin": 0, "func": 0}
    orig = rustgrad.Tensor.sin

    def sin(self, *args, **kwargs):
        calls["sin"] += 1
        return orig(self, *args, **kwargs)
    monkeypatch.setattr(rustgrad.Tensor, "sin", sin)
    monkeypatch.setattr(_vmap, "BATCHED", batched)

    def f(x):
        calls["func"] += 1
        return x.sin().sum()
    out = rustgrad.func.vmap(f)(rustgrad.tensor(RNG.uniform(-1, 1, (8, 3))))
    assert out.shape == (8,)
    assert calls == ({"sin": 1, "func": 1} if batched else {"sin": 8, "func": 8})


# ---- class-index losses -------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
def test_class_losses_run_once_over_the_merged_batch(device, loss, reduction):
    def fn(lib, t):
        def f(*args: Any, **kwargs: Any) -> Any:  # looked up in the call: the wrapped entry
            return getattr(lib.nn.functional, loss)(*args, **kwargs)
        # rows 0 and 2 of sample 1 ignored; sample 3 has every target ignored (mean: nan)
        target = lib.tensor([[0, 3, 1], [-1, 2, -1], [3, 3, 0], [-1, -1, -1], [2, 1, 0]],
                            device=device if lib is rustgrad else "cpu")
        x = t(M).requires_grad_()
        one = lib.func.vmap(lambda m, y: f(m, y, ignore_index=-1, reduction=reduction))(x, target)
        row = lib.func.vmap(lambda m, y: f(m[0], y[0], reduction=reduction),
                            in_dims=(0, None))(x, target[0].clamp(min=0))
        (one.nan_to_num().sum() + row.sum()).backward()
        return one, row, x.grad
    run(fn, device)
