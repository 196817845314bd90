"""autocast against torch: for ops of each of torch's cast policies, the output dtype, the
gradients' dtypes and values under `autocast("cpu", dtype=bfloat16)` (and float16) equal
torch's; regions nest, turn off, decorate and stay per thread as torch's."""

from __future__ import annotations

import threading
import warnings
from types import ModuleType
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest
import rustgrad
import torch

pytest.importorskip("ml_dtypes")

Case = Callable[[ModuleType, List[Any]], Any]


def _inputs(lib: ModuleType, shapes: List[Tuple[int, ...]], seed: int = 0) -> List[Any]:
    rng = np.random.default_rng(seed)
    return [lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
            for s in shapes]


def _np(t: Any) -> np.ndarray:
    return np.asarray(t.detach().float().cpu().numpy(), dtype=np.float64)


def _run(lib: ModuleType, case: Case, shapes: List[Tuple[int, ...]], dtype_name: str,
         device: str = "cpu") -> Tuple[Any, List[Any]]:
    xs = _inputs(lib, shapes)
    if device != "cpu":
        xs = [x.detach().to(device).requires_grad_() for x in xs]
    with lib.autocast(device if lib is rustgrad else "cpu", dtype=getattr(lib, dtype_name)):
        out = case(lib, xs)
    out.float().sum().backward()
    return out, xs


def _check(case: Case, shapes: List[Tuple[int, ...]], dtype_name: str = "bfloat16",
           device: str = "cpu", tol: float = 2e-2) -> None:
    t_out, t_xs = _run(torch, case, shapes, dtype_name)
    r_out, r_xs = _run(rustgrad, case, shapes, dtype_name, device)
    assert repr(r_out.dtype) == repr(t_out.dtype)
    assert tuple(r_out.shape) == tuple(t_out.shape)
    np.testing.assert_allclose(_np(r_out), _np(t_out), rtol=tol, atol=tol)
    for r, t in zip(r_xs, t_xs):
        assert (r.grad is None) == (t.grad is None)
        if t.grad is not None:
            assert repr(r.grad.dtype) == repr(t.grad.dtype)
            np.testing.assert_allclose(_np(r.grad), _np(t.grad), rtol=tol, atol=tol)


def _nll(lib: ModuleType, x: List[Any]) -> Any:
    logp = (x[0] @ x[1]) - 1.0
    return lib.nn.functional.nll_loss(logp, lib.tensor([0, 2, 1, 0]).to(x[0].device))


# name -> (case, input shapes): each runs one op of one policy on float32 leaves (or on the
# lower precision output of an earlier op, where the policy's interest is in its casting back)
CASES: Dict[str, Tuple[Case, List[Tuple[int, ...]]]] = {
    # lower precision
    "mm": (lambda lib, x: lib.mm(x[0], x[1]), [(4, 3), (3, 5)]),
    "matmul_operator": (lambda lib, x: x[0] @ x[1], [(2, 4, 3), (3, 5)]),
    "bmm": (lambda lib, x: lib.bmm(x[0], x[1]), [(2, 4, 3), (2, 3, 5)]),
    "addmm": (lambda lib, x: lib.addmm(x[0], x[1], x[2]), [(5,), (4, 3), (3, 5)]),
    "baddbmm": (lambda lib, x: lib.baddbmm(x[0], x[1], x[2]), [(2, 4, 5), (2, 4, 3), (2, 3, 5)]),
    "linear": (lambda lib, x: lib.nn.functional.linear(x[0], x[1], x[2]), [(4, 3), (5, 3), (5,)]),
    "linear_no_bias": (lambda lib, x: lib.nn.functional.linear(x[0], x[1]), [(4, 3), (5, 3)]),
    "conv1d": (lambda lib, x: lib.nn.functional.conv1d(x[0], x[1], x[2]),
               [(2, 3, 8), (4, 3, 3), (4,)]),
    "conv2d": (lambda lib, x: lib.nn.functional.conv2d(x[0], x[1], padding=1),
               [(2, 3, 6, 6), (4, 3, 3, 3)]),
    "conv_transpose2d": (lambda lib, x: lib.nn.functional.conv_transpose2d(x[0], x[1]),
                         [(1, 3, 4, 4), (3, 2, 3, 3)]),
    "prelu": (lambda lib, x: lib.nn.functional.prelu(x[0], x[1]), [(4, 3), (3,)]),
    # float32
    "mse_loss_of_lower": (lambda lib, x: lib.nn.functional.mse_loss(x[0] @ x[1], x[2]),
                          [(4, 3), (3, 5), (4, 5)]),
    "nll_loss_of_lower": (_nll, [(4, 3), (3, 5)]),
    "bce_with_logits": (lambda lib, x: lib.nn.functional.binary_cross_entropy_with_logits(
        x[0] @ x[1], lib.ones(4, 5) * 0.5), [(4, 3), (3, 5)]),
    "smooth_l1_loss": (lambda lib, x: lib.nn.functional.smooth_l1_loss(x[0] @ x[1], x[2]),
                       [(4, 3), (3, 5), (4, 5)]),
    "huber_loss": (lambda lib, x: lib.nn.functional.huber_loss(x[0] @ x[1], x[2]),
                   [(4, 3), (3, 5), (4, 5)]),
    "prod_of_lower": (lambda lib, x: (x[0] @ x[1]).prod(), [(2, 3), (3, 2)]),
    "cdist_of_lower": (lambda lib, x: lib.cdist(x[0] @ x[1], x[2]), [(4, 3), (3, 5), (2, 5)]),
    "trace_of_lower": (lambda lib, x: lib.trace(x[0] @ x[1]), [(4, 3), (3, 4)]),
    # promote
    "cat_lower_and_float": (lambda lib, x: lib.cat([x[0] @ x[1], x[2]]), [(4, 3), (3, 5), (2, 5)]),
    "cat_lower_only": (lambda lib, x: lib.cat([x[0] @ x[1], x[0] @ x[1]], 1), [(4, 3), (3, 5)]),
    "stack_lower_and_float": (lambda lib, x: lib.stack([x[0] @ x[1], x[2]]),
                              [(4, 3), (3, 5), (4, 5)]),
    # on no list: run in their inputs' dtype
    "relu_of_lower": (lambda lib, x: lib.relu(x[0] @ x[1]), [(4, 3), (3, 5)]),
    "sum_of_lower": (lambda lib, x: (x[0] @ x[1]).sum(), [(4, 3), (3, 5)]),
    "add_float_to_lower": (lambda lib, x: (x[0] @ x[1]) + x[2], [(4, 3), (3, 5), (4, 5)]),
    "sum_of_float": (lambda lib, x: x[0].sum(0), [(4, 3)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cpu_bfloat16_dtypes_and_grads_match_torch(name: str) -> None:
    case, shapes = CASES[name]
    _check(case, shapes)


@pytest.mark.parametrize("name", ["mm", "linear", "conv2d", "mse_loss_of_lower", "cat_lower_and_float",
                                  "stack_lower_and_float", "nll_loss_of_lower", "sum_of_lower"])
def test_cpu_float16_dtypes_and_grads_match_torch(name: str) -> None:
    case, shapes = CASES[name]
    _check(case, shapes, "float16", tol=5e-3)


# the simulated GPU uses cuda's lists; these ops have the same policy on cpu and cuda
@pytest.mark.parametrize("name", ["mm", "linear", "conv2d", "mse_loss_of_lower",
                                  "nll_loss_of_lower", "relu_of_lower"])
def test_simulated_gpu_float16_uses_the_lists(name: str, sim_cuda: object) -> None:
    case, shapes = CASES[name]
    _check(case, shapes, "float16", device="cuda", tol=5e-3)


def test_simulated_gpu_sum_and_softmax_run_in_float32_as_on_cuda(sim_cuda) -> None:
    x = rustgrad.ones(2, 3, device="cuda", requires_grad=True)
    with rustgrad.autocast("cuda", dtype=rustgrad.float16):
        h = x @ x.t()
        s, p = h.sum(), rustgrad.softmax(h, 1)
        e = rustgrad.exp(h)
    assert (h.dtype, s.dtype, p.dtype, e.dtype) == (rustgrad.float16,) + (rustgrad.float32,) * 3
    assert h.device.type == "cuda"


def test_promote_of_float16_and_bfloat16_is_torchs_error(lib: ModuleType) -> None:
    a = lib.ones(2, dtype=lib.float16)
    b = lib.ones(2).to(lib.bfloat16)
    with lib.autocast("cpu", dtype=lib.bfloat16):
        with pytest.raises(RuntimeError, match="Unexpected floating ScalarType"):
            lib.cat([b, a])


def test_float64_inputs_are_left_alone(lib: ModuleType) -> None:
    a = lib.ones(2, 2, dtype=lib.float64)
    with lib.autocast("cpu", dtype=lib.bfloat16):
        assert (a @ a).dtype is lib.float64
        assert lib.cat([a, lib.ones(1, 2)]).dtype is lib.float64


# ---- a training step --------------------------------------------------------------------------
def _mlp_step(lib: ModuleType, loss_name: str) -> Tuple[Any, Any, List[Any]]:
    lib.manual_seed(0)
    rng = np.random.default_rng(1)
    model = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.ReLU(), lib.nn.Linear(16, 4))
    for p, v in zip(model.parameters(), [rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3
                                         for p in model.parameters()]):
        with lib.no_grad():
            p.copy_(lib.tensor(v))
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    scaler = lib.amp.GradScaler("cpu")
    x = lib.tensor(rng.standard_normal((6, 8)).astype(np.float32))
    with lib.autocast("cpu", dtype=lib.bfloat16):
        out = model(x)
        if loss_name == "cross_entropy":
            loss = lib.nn.functional.cross_entropy(out, lib.tensor([0, 1, 2, 3, 0, 1]))
        else:
            loss = lib.nn.functional.mse_loss(out, lib.zeros(6, 4))
    scaler.scale(loss).backward()
    grads = [p.grad for p in model.parameters()]
    scaler.step(opt)
    scaler.update()
    return out, loss, grads


@pytest.mark.parametrize("loss_name", ["mse_loss", "cross_entropy"])
def test_mlp_training_step_under_cpu_autocast_with_grad_scaler(loss_name: str) -> None:
    t_out, t_loss, t_grads = _mlp_step(torch, loss_name)
    r_out, r_loss, r_grads = _mlp_step(rustgrad, loss_name)
    assert repr(r_out.dtype) == repr(t_out.dtype) == "torch.bfloat16"
    assert repr(r_loss.dtype) == repr(t_loss.dtype)
    np.testing.assert_allclose(float(r_loss), float(t_loss), rtol=2e-2)
    for r, t in zip(r_grads, t_grads):
        assert repr(r.dtype) == repr(t.dtype) == "torch.float32"
        np.testing.assert_allclose(_np(r), _np(t), rtol=5e-2, atol=5e-2)


def test_detach_float_of_an_autocast_output(lib: ModuleType) -> None:
    a = lib.ones(2, 3, requires_grad=True)
    with lib.autocast("cpu", dtype=lib.bfloat16):
        y = a @ a.t()
    z = y.detach().float()
    assert z.dtype is lib.float32 and not z.requires_grad
    assert z.tolist() == [[3.0, 3.0], [3.0, 3.0]]


# ---- the region ---------------------------------------------------------------------------------
def test_nested_regions_and_enabled_false_inside(lib: ModuleType) -> None:
    a = lib.ones(2, 2)
    with lib.autocast("cpu", dtype=lib.bfloat16):
        assert lib.is_autocast_enabled("cpu") and not lib.is_autocast_enabled()
        assert lib.get_autocast_dtype("cpu") is lib.bfloat16
        with lib.autocast("cpu", dtype=lib.float16):
            assert (a @ a).dtype is lib.float16
            with lib.autocast("cpu", enabled=False):
                assert not lib.is_autocast_enabled("cpu")
                assert (a @ a).dtype is lib.float32
            assert (a @ a).dtype is lib.float16
        assert lib.get_autocast_dtype("cpu") is lib.bfloat16
        assert (a @ a).dtype is lib.bfloat16
    assert not lib.is_autocast_enabled("cpu") and (a @ a).dtype is lib.float32


def test_decorator_form(lib: ModuleType) -> None:
    @lib.autocast("cpu", dtype=lib.bfloat16)
    def f(a: Any) -> Any:
        return a @ a

    a = lib.ones(2, 2)
    assert f(a).dtype is lib.bfloat16
    assert (a @ a).dtype is lib.float32


def test_region_is_per_thread(lib: ModuleType) -> None:
    a = lib.ones(2, 2)
    seen: List[Any] = []
    with lib.autocast("cpu", dtype=lib.bfloat16):
        th = threading.Thread(target=lambda: seen.append(
            ((a @ a).dtype, lib.is_autocast_enabled("cpu"))))
        th.start()
        th.join()
        assert (a @ a).dtype is lib.bfloat16
    assert seen == [(lib.float32, False)]


def test_deprecated_spellings_warn_and_answer(lib: ModuleType) -> None:
    mod = lib if lib is torch else rustgrad.amp.autocast_mode
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert mod.get_autocast_gpu_dtype() is lib.float16
        assert mod.get_autocast_cpu_dtype() is lib.bfloat16
        assert mod.is_autocast_cpu_enabled() is False
    msgs = [str(m.message) for m in w if m.category is DeprecationWarning]
    assert any("get_autocast_gpu_dtype() is deprecated. Please use "
               "torch.get_autocast_dtype('cuda') instead." in m for m in msgs)
    assert any("is_autocast_cpu_enabled() is deprecated" in m for m in msgs)


def test_unknown_device_type_is_refused(lib: ModuleType) -> None:
    with pytest.raises(RuntimeError, match="device type at start of device string: nope"):
        lib.autocast("nope")


# ---- custom autograd Functions ------------------------------------------------------------------
def _custom(lib: ModuleType, cast_inputs: Any) -> Tuple[Any, Any]:
    seen: Dict[str, Any] = {}

    class MyMM(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx: Any, a: Any, b: Any) -> Any:
            ctx.save_for_backward(a, b)
            seen["fwd"] = (a.dtype, lib.is_autocast_enabled("cpu"))
            return a.mm(b)

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx: Any, g: Any) -> Any:
            a, b = ctx.saved_tensors
            seen["bwd"] = lib.is_autocast_enabled("cpu")
            return g.mm(b.t()), a.t().mm(g)

    a = lib.ones(2, 3, requires_grad=True)
    b = lib.ones(3, 2, requires_grad=True)
    with lib.autocast("cpu", dtype=lib.bfloat16):
        h = a.mm(b)  # bfloat16
        y = MyMM.apply(h, h)
    y.float().sum().backward()
    return (y.dtype, seen["fwd"], seen["bwd"]), (a.grad.dtype, b.grad.dtype)


def test_custom_fwd_cast_inputs_runs_forward_outside_autocast() -> None:
    assert repr(_custom(rustgrad, rustgrad.float32)) == repr(_custom(torch, torch.float32))


def test_custom_fwd_without_cast_inputs_keeps_the_region_for_backward() -> None:
    r, t = _custom(rustgrad, None), _custom(torch, None)
    assert repr(r) == repr(t)


# ---- cost and cache ---------------------------------------------------------------------------
def test_outside_regions_ops_are_untouched() -> None:
    from rustgrad._ops import _declare, arith

    assert _declare.autocast_dispatch is None  # the entry points' one flag
    # the arithmetic hot path is on no list: bound as the op functions themselves
    assert rustgrad.Tensor.__mul__ is arith.mul and rustgrad.Tensor.__add__ is arith.add
    with rustgrad.autocast("cpu"):
        assert _declare.autocast_dispatch is not None
    assert _declare.autocast_dispatch is None


def test_weight_casts_are_cached_within_a_region() -> None:
    from rustgrad.amp import autocast_mode

    a = rustgrad.ones(3, 3, requires_grad=True)
    w = rustgrad.ones(3, 3, requires_grad=True)
    with rustgrad.autocast("cpu"):
        a @ w
        a @ w
        (a * 1) @ w  # a non-leaf: never cached
        assert len(autocast_mode._state.cache) == 2
        with rustgrad.autocast("cpu", cache_enabled=False):
            b = rustgrad.ones(3, 3, requires_grad=True)
            b @ b
            assert len(autocast_mode._state.cache) == 2
    assert len(autocast_mode._state.cache) == 0


def test_cuda_amp_custom_fwd_bwd_spellings_warn_as_torch(lib: ModuleType) -> None:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fwd = lib.cuda.amp.custom_fwd(lambda ctx, x: x)
        bwd = lib.cuda.amp.custom_bwd(lambda ctx, g: g)
    msgs = [(m.category, str(m.message)) for m in w]
    assert (FutureWarning, "`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
            "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.") in msgs
    assert any(c is FutureWarning and "torch.cuda.amp.custom_bwd(args...)" in m for c, m in msgs)

    class Ctx:
        pass

    ctx = Ctx()
    assert fwd(ctx, 3) == 3 and bwd(ctx, 4) == 4  # backward reads what forward recorded
