"""Process-wide setup calls real programs make (backends flags, accelerator, default device and
dtype, determinism, matmul precision, threads, cuda seeding, amp, compile, dtype names), against
torch's types, defaults, warnings and errors."""

from __future__ import annotations

import warnings
from typing import Any, Iterator

import numpy as np
import pytest
import rustgrad
import torch

from .parity import same_error

NO_CUDA = not rustgrad.cuda.is_available()


def _warned(fn: Any) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message)) for w in caught]


# ---- backends -----------------------------------------------------------------------------------
BACKEND_FLAGS = [
    ("cudnn", "enabled"), ("cudnn", "benchmark"), ("cudnn", "deterministic"),
    ("cudnn", "allow_tf32"), ("cuda.matmul", "allow_tf32"),
    ("cuda.matmul", "allow_fp16_reduced_precision_reduction"),
    ("cuda.matmul", "allow_bf16_reduced_precision_reduction"),
]


def _resolve(lib: Any, path: str) -> Any:
    obj = lib.backends
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("path,flag", BACKEND_FLAGS)
def test_backend_flags_have_torchs_defaults_and_keep_what_is_set(path, flag):
    expected = getattr(_resolve(torch, path), flag)
    holder = _resolve(rustgrad, path)
    got = getattr(holder, flag)
    assert type(got) is type(expected) and got == expected
    try:
        setattr(holder, flag, not got)
        assert getattr(holder, flag) is (not got)
    finally:
        setattr(holder, flag, got)


def test_backend_queries_return_torchs_types():
    b = rustgrad.backends
    assert b.cudnn.is_available() is False  # rustgrad calls no cuDNN
    assert isinstance(torch.backends.cudnn.is_available(), bool)
    assert b.cuda.is_built() is rustgrad.backends.cuda.is_built()
    assert isinstance(b.cuda.is_built(), bool)
    assert b.mps.is_available() is torch.backends.mps.is_available() is False
    assert b.mps.is_built() is False
    assert isinstance(b.opt_einsum.enabled, bool)
    assert b.opt_einsum.strategy is None or isinstance(b.opt_einsum.strategy, str)
    assert isinstance(b.opt_einsum.is_available(), bool)


@pytest.mark.parametrize("kernel", ["flash", "mem_efficient", "math", "cudnn"])
def test_sdp_kernel_toggles(kernel, lib):
    b = lib.backends.cuda
    query = getattr(b, f"{kernel}_sdp_enabled")
    assert query() is True
    try:
        getattr(b, f"enable_{kernel}_sdp")(False)
        assert query() is False
    finally:
        getattr(b, f"enable_{kernel}_sdp")(True)


def test_cudnn_flags_context_restores(lib):
    cudnn = lib.backends.cudnn
    with cudnn.flags(enabled=False, deterministic=True):
        assert cudnn.enabled is False and cudnn.deterministic is True
    assert cudnn.enabled is True and cudnn.deterministic is False
    assert isinstance(lib.backends.mkldnn.enabled, bool)


def test_the_common_setup_lines_run():
    # the lines training scripts start with
    rustgrad.backends.cudnn.benchmark = True
    rustgrad.backends.cudnn.deterministic = True
    rustgrad.backends.cuda.matmul.allow_tf32 = True
    rustgrad.backends.cudnn.allow_tf32 = True
    try:
        x = rustgrad.ones(2, 2)
        assert (x @ x).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    finally:
        rustgrad.backends.cudnn.benchmark = False
        rustgrad.backends.cudnn.deterministic = False
        rustgrad.backends.cuda.matmul.allow_tf32 = False


# ---- accelerator ----------------------------------------------------------------------------------
def test_accelerator_reports_cuda_only_where_rustgrad_can_use_it():
    acc = rustgrad.accelerator
    assert acc.is_available() is rustgrad.cuda.is_available()
    assert isinstance(acc.device_count(), int)
    assert acc.device_count() == rustgrad.cuda.device_count()
    cur = acc.current_accelerator()
    if NO_CUDA:
        assert cur is None and acc.device_count() == 0
        assert torch.accelerator.is_available() is False  # the oracle agrees on this machine
    else:
        assert cur == rustgrad.device("cuda")


# ---- default device -------------------------------------------------------------------------------
@pytest.fixture
def _restore_device() -> Iterator[None]:
    yield
    rustgrad.set_default_device(None)
    torch.set_default_device(None)


def test_default_device_is_the_cpu(lib, _restore_device):
    assert lib.get_default_device() == lib.device("cpu")
    lib.set_default_device("cpu")
    assert lib.get_default_device() == lib.device("cpu")
    assert lib.zeros(2).device == lib.device("cpu")
    lib.set_default_device(lib.device("cpu"))
    lib.set_default_device(None)
    assert lib.ones(1).device.type == "cpu"


@pytest.mark.skipif(not NO_CUDA, reason="CUDA is usable here")
def test_default_device_cuda_without_cuda_raises_clearly(_restore_device):
    with pytest.raises(RuntimeError, match="not available"):
        rustgrad.set_default_device("cuda")
    assert rustgrad.get_default_device().type == "cpu"


def test_default_device_unknown_type_raises(lib, _restore_device):
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        lib.set_default_device("foo")


# ---- default dtype --------------------------------------------------------------------------------
CREATIONS = {
    "tensor_float": lambda lib: lib.tensor([1.5]),
    "tensor_int": lambda lib: lib.tensor([1]),
    "zeros": lambda lib: lib.zeros(2),
    "ones": lambda lib: lib.ones(2, 2),
    "empty": lambda lib: lib.empty(2),
    "full_float": lambda lib: lib.full((2,), 1.5),
    "full_int": lambda lib: lib.full((2,), 1),
    "arange_float": lambda lib: lib.arange(0.0, 1.0, 0.5),
    "arange_int": lambda lib: lib.arange(3),
    "linspace": lambda lib: lib.linspace(0, 1, 3),
    "eye": lambda lib: lib.eye(2),
    "rand": lambda lib: lib.rand(2),
    "randn": lambda lib: lib.randn(2),
    "randint": lambda lib: lib.randint(0, 3, (2,)),
    "as_tensor": lambda lib: lib.as_tensor([1.0]),
    "int_div": lambda lib: lib.tensor(2) / 2,
    "int_sin": lambda lib: lib.tensor([1, 2]).sin(),
    "int_times_float": lambda lib: lib.tensor([1, 2]) * 1.5,
    "linear_weight": lambda lib: lib.nn.Linear(2, 2).weight,
    "float_method": lambda lib: lib.tensor([1, 2]).float(),
}


def _dtype_under_float64(lib: Any, case: str) -> str:
    assert lib.get_default_dtype() is lib.float32
    lib.set_default_dtype(lib.float64)
    try:
        return str(CREATIONS[case](lib).dtype)
    finally:
        lib.set_default_dtype(lib.float32)


@pytest.mark.parametrize("case", sorted(CREATIONS))
def test_float64_default_dtype_flows_through_creation(case):
    assert _dtype_under_float64(rustgrad, case) == _dtype_under_float64(torch, case)


def test_set_default_dtype_refuses_integers():
    same_error(lambda lib: lib.set_default_dtype(lib.int64), "only floating-point types")


def test_set_default_dtype_bfloat16_is_refused_clearly():
    with pytest.raises(TypeError, match="bfloat16 is not supported"):
        rustgrad.set_default_dtype(rustgrad.bfloat16)
    assert rustgrad.get_default_dtype() is rustgrad.float32


# ---- determinism, matmul precision, threads -------------------------------------------------------
def test_deterministic_algorithms_flag(lib):
    assert lib.are_deterministic_algorithms_enabled() is False
    try:
        lib.use_deterministic_algorithms(True)
        assert lib.are_deterministic_algorithms_enabled() is True
        assert lib.is_deterministic_algorithms_warn_only_enabled() is False
        assert lib.get_deterministic_debug_mode() == 2
        lib.use_deterministic_algorithms(True, warn_only=True)
        assert lib.is_deterministic_algorithms_warn_only_enabled() is True
        assert lib.get_deterministic_debug_mode() == 1
        lib.set_deterministic_debug_mode("default")
        assert lib.are_deterministic_algorithms_enabled() is False
    finally:
        lib.use_deterministic_algorithms(False)


def test_deterministic_algorithms_wants_a_bool():
    same_error(lambda lib: lib.use_deterministic_algorithms(1), "must be bool, not int")


def test_float32_matmul_precision(lib):
    assert lib.get_float32_matmul_precision() == "highest"
    try:
        lib.set_float32_matmul_precision("high")
        assert lib.get_float32_matmul_precision() == "high"
        msgs = _warned(lambda: lib.set_float32_matmul_precision("bogus"))
        assert any(c is UserWarning and "bogus is not one of" in m for c, m in msgs), msgs
        assert lib.get_float32_matmul_precision() == "high"
    finally:
        lib.set_float32_matmul_precision("highest")


def test_float32_matmul_precision_wants_a_str():
    same_error(lambda lib: lib.set_float32_matmul_precision(3), "expects a str, but got int")


def test_num_threads(lib):
    before = lib.get_num_threads()
    assert isinstance(before, int) and before > 0
    try:
        lib.set_num_threads(1)
        assert lib.get_num_threads() == 1
    finally:
        lib.set_num_threads(before)
    assert isinstance(lib.get_num_interop_threads(), int)


def test_num_threads_must_be_positive():
    same_error(lambda lib: lib.set_num_threads(0), "set_num_threads expects a positive integer")


def test_interop_threads_are_set_once(monkeypatch):
    from rustgrad import _config

    monkeypatch.setitem(_config._state, "interop_threads", None)
    rustgrad.set_num_interop_threads(3)
    assert rustgrad.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
        rustgrad.set_num_interop_threads(4)


# ---- cuda seeding ---------------------------------------------------------------------------------
def test_cuda_seeding_calls_are_accepted(lib):
    assert lib.cuda.manual_seed(1) is None
    assert lib.cuda.manual_seed_all(1) is None
    assert isinstance(lib.cuda.is_available(), bool)
    assert isinstance(lib.cuda.device_count(), int)


def test_cuda_seeding_leaves_the_host_stream_alone():
    rustgrad.manual_seed(5)
    a = rustgrad.rand(4).tolist()
    rustgrad.manual_seed(5)
    rustgrad.cuda.manual_seed_all(123)
    assert rustgrad.rand(4).tolist() == a


# ---- compile --------------------------------------------------------------------------------------
def test_compile_returns_the_model_itself():
    model = rustgrad.nn.Linear(2, 1)
    assert rustgrad.compile(model) is model
    assert rustgrad.compile(model, mode="reduce-overhead", fullgraph=True) is model

    @rustgrad.compile
    def f(x):
        return x * 2

    @rustgrad.compile(dynamic=True)
    def g(x):
        return x + 1

    assert f(rustgrad.ones(2)).tolist() == [2.0, 2.0]
    assert g(rustgrad.ones(2)).tolist() == [2.0, 2.0]


# ---- dtype names ----------------------------------------------------------------------------------
DTYPE_NAMES = ["bfloat16", "complex32", "complex64", "complex128", "cfloat", "cdouble", "chalf",
               "half", "float", "double", "long", "int", "short", "bool", "float16", "float32",
               "float64", "uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_names_match_torchs(name):
    t, r = getattr(torch, name), getattr(rustgrad, name)
    assert repr(r) == repr(t)
    for attr in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
        assert getattr(r, attr) == getattr(t, attr), attr
    assert repr(r.to_real()) == repr(t.to_real())
    table = {r: name, rustgrad.float32: "f32"}
    assert table[r] in (name, "f32")


def test_dtype_aliases_are_the_same_objects(lib):
    assert lib.cfloat is lib.complex64 and lib.cdouble is lib.complex128
    assert lib.half is lib.float16 and lib.double is lib.float64 and lib.long is lib.int64


UNSUPPORTED_USES = {
    "zeros": lambda d: rustgrad.zeros(2, dtype=d),
    "tensor": lambda d: rustgrad.tensor([1.0], dtype=d),
    "to": lambda d: rustgrad.ones(2).to(d),
    "arange": lambda d: rustgrad.arange(3, dtype=d),
    "randn": lambda d: rustgrad.randn(2, dtype=d),
}


@pytest.mark.parametrize("use", sorted(UNSUPPORTED_USES))
@pytest.mark.parametrize("name", ["complex32"])
def test_unsupported_dtypes_refuse_data_with_a_clear_type_error(use, name):
    with pytest.raises(TypeError, match=f"torch.{name} is not supported"):
        UNSUPPORTED_USES[use](getattr(rustgrad, name))


BFLOAT16_USES = {
    "zeros": lambda lib: lib.zeros(2, dtype=lib.bfloat16),
    "tensor": lambda lib: lib.tensor([1.0, 1.3, -2.7e5], dtype=lib.bfloat16),
    "to": lambda lib: lib.tensor([1.0, 1.3, 3.14159, 1e-3]).to(lib.bfloat16),
    "arange": lambda lib: lib.arange(0, 1, 0.1, dtype=lib.bfloat16),
    "randn": lambda lib: lib.randn(2, 3, dtype=lib.bfloat16),
}


@pytest.mark.parametrize("use", sorted(BFLOAT16_USES))
def test_bfloat16_tensors_are_made_as_torchs(use):
    # bfloat16 is stored (ml_dtypes): the factories give torch's dtype, shape and rounded values
    t, r = BFLOAT16_USES[use](torch), BFLOAT16_USES[use](rustgrad)
    assert repr(r.dtype) == repr(t.dtype) == "torch.bfloat16"
    assert tuple(r.shape) == tuple(t.shape) and r.element_size() == t.element_size() == 2
    assert r.is_floating_point() and t.is_floating_point()
    if use != "randn":  # exact: both round to nearest even from the same float32 values
        assert r.tolist() == t.tolist()


def test_finfo_of_unsupported_dtypes_still_answers():
    for name in ("bfloat16", "complex64"):
        assert rustgrad.finfo(getattr(rustgrad, name)).eps == torch.finfo(getattr(torch, name)).eps


# ---- amp: GradScaler ------------------------------------------------------------------------------
@pytest.mark.skipif(not NO_CUDA, reason="CUDA is usable here")
def test_grad_scaler_for_cuda_without_cuda_warns_and_disables(lib):
    msgs = _warned(lambda: lib.amp.GradScaler())
    assert any("CUDA is not available.  Disabling." in m for _, m in msgs), msgs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = lib.amp.GradScaler()
    assert s.is_enabled() is False and s.get_scale() == 1.0 and s.state_dict() == {}


def test_cuda_amp_grad_scaler_is_deprecated_as_torchs(lib):
    msgs = _warned(lambda: lib.cuda.amp.GradScaler(enabled=False))
    assert any(c is FutureWarning and "torch.cuda.amp.GradScaler(args...)" in m
               for c, m in msgs), msgs


def _train(lib: Any, scaler_args: dict, steps: int, blowup_at: int = -1) -> Any:
    lib.manual_seed(0)
    model = lib.nn.Linear(3, 2)
    with lib.no_grad():
        model.weight.copy_(lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=lib.float32))
        model.bias.copy_(lib.tensor([0.1, -0.2]))
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = lib.amp.GradScaler(**scaler_args)
    x = lib.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    scales, returns = [], []
    for i in range(steps):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        if i == blowup_at:
            loss = loss * 1e36  # scaled by 65536 it overflows float32: the step is skipped
        scaler.scale(loss).backward()
        returns.append(scaler.step(opt))
        scaler.update()
        scales.append(scaler.get_scale())
    return (model.weight.detach().numpy().copy(), model.bias.detach().numpy().copy(), scales,
            [r is None for r in returns], scaler.state_dict())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's overflow warning (README)
@pytest.mark.parametrize("args", [
    {"device": "cpu"},
    {"device": "cpu", "init_scale": 4.0, "growth_interval": 2},
    {"device": "cuda", "enabled": False},
    {"device": "cpu", "enabled": False},
])
def test_grad_scaler_training_matches_torch(args):
    if args["device"] == "cuda" and not NO_CUDA:
        pytest.skip("CUDA is usable here: the scaler would really be enabled")
    t = _train(torch, args, 5, blowup_at=2)
    r = _train(rustgrad, args, 5, blowup_at=2)
    np.testing.assert_allclose(r[0], t[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r[1], t[1], rtol=1e-5, atol=1e-6)
    assert r[2] == t[2]
    assert r[3] == t[3]
    assert r[4] == t[4]


def test_disabled_grad_scaler_passes_the_loss_through():
    scaler = rustgrad.amp.GradScaler("cpu", enabled=False)
    loss = rustgrad.ones(1, requires_grad=True).sum()
    assert scaler.scale(loss) is loss
    assert scaler.get_scale() == 1.0 and scaler.is_enabled() is False
    scaler.update()
    scaler.load_state_dict({})  # ignored when disabled, as torch's


def test_grad_scaler_scale_keeps_the_graph(lib):
    scaler = lib.amp.GradScaler("cpu", init_scale=8.0)
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    out = scaler.scale((w * 3).sum())
    assert out.grad_fn.name() == "MulBackward0" and out.item() == 72.0
    out.backward()
    assert w.grad.tolist() == [24.0, 24.0]
    pair = scaler.scale([w.sum(), (w * 2).sum()])
    assert isinstance(pair, list) and [p.item() for p in pair] == [24.0, 48.0]


GRAD_SCALER_ERRORS = {
    "unscale_twice": ("unscale_() has already been called on this optimizer",
                      lambda lib, s, o: (s.unscale_(o), s.unscale_(o))),
    "unscale_after_step": ("unscale_() is being called after step().",
                           lambda lib, s, o: (s.step(o), s.unscale_(o))),
    "step_twice": ("step() has already been called since the last update().",
                   lambda lib, s, o: (s.step(o), s.step(o))),
    "closure": ("Closure use is not currently supported",
                lambda lib, s, o: s.step(o, closure=lambda: None)),
    "empty_state": ("The source state dict is empty",
                    lambda lib, s, o: s.load_state_dict({})),
}


@pytest.mark.parametrize("case", sorted(GRAD_SCALER_ERRORS))
def test_grad_scaler_errors_match_torch(case):
    phrase, fn = GRAD_SCALER_ERRORS[case]

    def program(lib: Any) -> None:
        w = lib.ones(2, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        s = lib.amp.GradScaler("cpu")
        s.scale(w.sum()).backward()
        fn(lib, s, opt)

    same_error(program, phrase)


def test_grad_scaler_state_dict_round_trip(lib):
    a = lib.amp.GradScaler("cpu", init_scale=16.0, growth_interval=7)
    b = lib.amp.GradScaler("cpu")
    b.load_state_dict(a.state_dict())
    assert b.state_dict() == a.state_dict()
    assert b.get_scale() == 16.0 and b.get_growth_interval() == 7


# ---- amp: autocast --------------------------------------------------------------------------------
def test_autocast_disabled_is_a_no_op(lib):
    x = lib.ones(2, 2)
    with lib.autocast("cpu", enabled=False):
        y = x @ x
        assert lib.amp.is_autocast_available("cpu") in (True, False)
    assert y.dtype is lib.float32

    @lib.autocast(device_type="cpu", enabled=False)
    def f(a: Any) -> Any:
        return a + 1

    assert f(x).dtype is lib.float32
    with lib.amp.autocast("cpu", enabled=False):
        pass


def test_autocast_cpu_float32_warns_and_disables_as_torch(lib):
    def enter() -> None:
        with lib.autocast("cpu", dtype=lib.float32):
            assert (lib.ones(2) * 2).dtype is lib.float32

    msgs = _warned(enter)
    assert any("In CPU autocast, but the target dtype is not supported" in m for _, m in msgs)


@pytest.mark.skipif(not NO_CUDA, reason="CUDA is usable here")
def test_autocast_cuda_without_cuda_warns_and_disables_as_torch(lib):
    def enter() -> None:
        with lib.autocast("cuda"):
            pass

    msgs = _warned(enter)
    assert any("CUDA is not available or torch_xla is imported. Disabling autocast." in m
               for _, m in msgs), msgs


def test_autocast_on_cpu_casts_to_bfloat16_by_default_as_torch(lib):
    a, b = lib.ones(2, 3), lib.ones(3, 2)
    with lib.autocast("cpu"):
        assert lib.get_autocast_dtype("cpu") is lib.bfloat16 and lib.is_autocast_enabled("cpu")
        assert (a @ b).dtype is lib.bfloat16
    with lib.autocast("cpu", dtype=lib.float16):
        assert (a @ b).dtype is lib.float16
    assert (a @ b).dtype is lib.float32

    @lib.autocast("cpu")  # a decorated function runs inside the region
    def f() -> Any:
        return (a @ b).dtype

    assert f() is lib.bfloat16 and not lib.is_autocast_enabled("cpu")


def test_autocast_wants_a_str_device_type():
    same_error(lambda lib: lib.autocast(1), "Expected `device_type` of type `str`")


def test_per_device_amp_modules_exist(lib):
    import importlib

    for name in (f"{lib.__name__}.cuda.amp", f"{lib.__name__}.cpu.amp"):
        mod = importlib.import_module(name)
        assert hasattr(mod, "GradScaler") and hasattr(mod, "autocast")
    msgs = _warned(lambda: lib.cpu.amp.autocast(enabled=False))
    assert any(c is FutureWarning for c, _ in msgs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.cuda.amp.autocast(enabled=False):
            pass
    assert lib.is_autocast_enabled() is False


def test_custom_fwd_bwd_decorate_functions(lib):
    class Double(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu")
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx: Any, g: Any) -> Any:
            return g * 2

    x = lib.ones(2, requires_grad=True)
    Double.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


AUTOCAST_STATE_FUNCTIONS = [
    "set_autocast_enabled", "set_autocast_dtype", "get_autocast_cpu_dtype", "get_autocast_gpu_dtype",
    "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "set_autocast_cpu_dtype",
    "set_autocast_gpu_dtype", "clear_autocast_cache", "is_autocast_cache_enabled",
    "set_autocast_cache_enabled", "autocast_increment_nesting", "autocast_decrement_nesting",
]


@pytest.mark.parametrize("name", AUTOCAST_STATE_FUNCTIONS)
def test_autocast_state_functions_are_top_level_as_torchs(name):
    from rustgrad.amp import autocast_mode

    assert callable(getattr(torch, name))
    assert getattr(rustgrad, name) is getattr(autocast_mode, name)
    assert name in rustgrad.__all__


def test_autocast_state_set_by_hand_casts_as_torch(lib):
    a, b = lib.ones(2, 3), lib.ones(3, 2)
    assert lib.autocast_increment_nesting() == 1
    lib.set_autocast_enabled("cpu", True)
    lib.set_autocast_dtype("cpu", lib.bfloat16)
    try:
        assert lib.is_autocast_enabled("cpu") and lib.get_autocast_dtype("cpu") is lib.bfloat16
        assert lib.is_autocast_cache_enabled()
        assert (a @ b).dtype is lib.bfloat16
    finally:
        lib.set_autocast_enabled("cpu", False)
        assert lib.autocast_decrement_nesting() == 0
        lib.clear_autocast_cache()
    assert (a @ b).dtype is lib.float32 and not lib.is_autocast_enabled("cpu")
