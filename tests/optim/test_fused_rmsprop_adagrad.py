"""The fused CUDA kernels of RMSprop, Adagrad and GradScaler.unscale_ (one launch per parameter
or gradient, `_backends/cuda_kernels.py`), checked without a GPU three ways:

- their CUDA C bodies, compiled as C++ on the CPU (a stand-in for CuPy's ElementwiseKernel that
  runs the same parameter lists, preamble and body over NumPy arrays, without FMA contraction),
  plugged into the CPU backend's kernel table: the optimizers' fused paths then give exactly
  the values of their array formulation, and torch's single-tensor update;
- on the strict CuPy double (where CUDA C cannot run), with NumPy models of the kernels as the
  double's references: one launch per parameter and nothing else, and no host sync in
  unscale_; without references the array formulation runs and still matches torch;
- on a real GPU (the `cuda` parameter of `device`) against torch."""

from __future__ import annotations

import ctypes
import hashlib
import pathlib
import shutil
import subprocess
import sys
import types
from typing import Any, Dict, List

import numpy as np
import pytest
import rustgrad
import torch
from rustgrad._backends import cpu, cuda_kernels

from ..devices import strict_cupy

RMSPROP_CASES: List[Dict[str, Any]] = [
    {},
    {"centered": True},
    {"momentum": 0.9},
    {"centered": True, "momentum": 0.5, "weight_decay": 0.1},
    {"alpha": 0.3, "centered": True, "maximize": True},  # lerp's far-end formula
    {"alpha": 0.3, "centered": True, "momentum": 0.9, "weight_decay": 0.01, "maximize": True},
]
ADAGRAD_CASES: List[Dict[str, Any]] = [
    {},
    {"lr_decay": 0.1},
    {"weight_decay": 0.1, "initial_accumulator_value": 0.5},
    {"maximize": True, "eps": 1e-3, "lr_decay": 0.05, "weight_decay": 0.01},
]
STEPS = 5
SHAPES = [(7, 5), (5,), (3, 2, 4)]
TOL = {np.float32: dict(rtol=2e-5, atol=1e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}


def _case_id(case: Dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in case.items()) or "defaults"


# ---- CuPy's ElementwiseKernel on the CPU: the kernel's C body compiled with g++ --------------
_CTYPES = {"float64": "double", "float32": "float", "bool": "bool", "int32": "int",
           "int64": "long long"}
_CXX_PRELUDE = "#include <cmath>\nusing std::sqrt;\nusing std::isfinite;\n"
_LIBS: Dict[str, Any] = {}


class _CpuElementwiseKernel:
    """CuPy's ElementwiseKernel(in_params, out_params, operation, name, preamble) over C-contiguous
    NumPy float32/float64 arrays of one size: each "T x" parameter is element i of its array
    (a const reference for inputs), "raw" ones are pointers, the others scalars; the loop
    variable is `i`, as in CuPy's generated code."""

    build_dir: pathlib.Path

    def __init__(self, in_params: str, out_params: str, operation: str, name: str,
                 preamble: str = "") -> None:
        self.name = name
        self.params = []  # (kind: "array" | "raw" | "scalar", ctype, name)
        setup, element = [], []
        arrays = scalars = 0
        for spec, const in ((in_params, "const "), (out_params, "")):
            for param in spec.split(","):
                words = param.split()
                raw = words[0] == "raw"
                typ, var = words[-2:]
                ctype = "T" if typ == "T" else _CTYPES[typ]
                if raw:
                    setup.append(f"{ctype}* {var} = ({ctype}*)_a[{arrays}];")
                    arrays += 1
                    self.params.append(("raw", ctype, var))
                elif typ == "T":
                    setup.append(f"T* _p_{var} = (T*)_a[{arrays}];")
                    element.append(f"{const}T& {var} = _p_{var}[i];")
                    arrays += 1
                    self.params.append(("array", ctype, var))
                else:
                    setup.append(f"{ctype} {var} = ({ctype})_s[{scalars}];")
                    scalars += 1
                    self.params.append(("scalar", ctype, var))
        source = "\n".join([
            _CXX_PRELUDE, preamble,
            f"template <typename T> void {name}(long long _n, void** _a, const double* _s) {{",
            *setup, "for (long long i = 0; i < _n; ++i) {", *element, "{", operation, "}}}",
            *(f'extern "C" void {name}_{c}(long long n, void** a, const double* s) '
              f"{{ {name}<{c}>(n, a, s); }}" for c in ("float", "double"))])
        key = hashlib.sha256(source.encode()).hexdigest()[:16]
        if key not in _LIBS:
            src = self.build_dir / f"{name}_{key}.cpp"
            lib = src.with_suffix(".so")
            src.write_text(source)
            subprocess.run(["g++", "-std=c++14", "-O1", "-ffp-contract=off", "-shared", "-fPIC",
                            "-o", str(lib), str(src)], check=True, capture_output=True)
            _LIBS[key] = ctypes.CDLL(str(lib))
        self.lib = _LIBS[key]

    def __call__(self, *args: Any) -> None:
        assert len(args) == len(self.params), (self.name, len(args))
        arrays, scalars, sizes, dtypes = [], [], set(), set()
        for (kind, _, var), a in zip(self.params, args):
            if kind == "scalar":
                scalars.append(float(a))
                continue
            assert isinstance(a, np.ndarray) and a.flags.c_contiguous, var
            if kind == "array":
                sizes.add(a.size)
                dtypes.add(a.dtype)
            arrays.append(a.ctypes.data)
        assert len(sizes) == 1 and len(dtypes) == 1, (sizes, dtypes)
        dtype = dtypes.pop()
        fn = getattr(self.lib, f"{self.name}_{'double' if dtype == np.float64 else 'float'}")
        assert dtype in (np.float32, np.float64), dtype
        fn(ctypes.c_longlong(sizes.pop()), (ctypes.c_void_p * len(arrays))(*arrays),
           (ctypes.c_double * max(1, len(scalars)))(*scalars))


@pytest.fixture(scope="module")
def cxx_kernels(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """cuda_kernels' fused-step functions with their kernels built by _CpuElementwiseKernel."""
    if shutil.which("g++") is None:
        pytest.skip("no C++ compiler to build the kernels' bodies on the CPU")
    _CpuElementwiseKernel.build_dir = tmp_path_factory.mktemp("kernels")
    fake_cupy = types.ModuleType("cupy")
    fake_cupy.ElementwiseKernel = _CpuElementwiseKernel  # type: ignore[attr-defined]
    built: Dict[Any, Any] = {}
    saved = sys.modules.get("cupy")
    sys.modules["cupy"] = fake_cupy
    try:
        for key in [("rmsprop", c, m) for c in (False, True) for m in (False, True)] + [
                ("adagrad", False, False), ("unscale", False, False)]:
            built[key] = cuda_kernels._optim_kernel.__wrapped__(*key)
    finally:
        if saved is None:
            del sys.modules["cupy"]
        else:
            sys.modules["cupy"] = saved
    return lambda name, centered=False, momentum=False: built[name, centered, momentum]


@pytest.fixture
def cpu_fused(cxx_kernels: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU backend's kernel table with the CUDA entries, running the compiled bodies."""
    monkeypatch.setattr(cuda_kernels, "_optim_kernel", cxx_kernels)
    for name in ("rmsprop_step", "adagrad_step", "non_finite_check_and_unscale"):
        monkeypatch.setattr(cpu.kernels, name, getattr(cuda_kernels, name))


# ---- NumPy models of the kernels: the strict double's references -----------------------------
def _rmsprop_model(p: np.ndarray, g: np.ndarray, sq: np.ndarray, ga: Any, buf: Any,
                   a: Any) -> None:
    gg = -g if a.maximize else g
    if a.weight_decay != 0:
        gg = a.weight_decay * p + gg
    sq[...] = (1 - a.alpha) * gg * gg + sq * a.alpha
    if ga is not None:
        w = 1 - a.alpha
        ga[...] = w * (gg - ga) + ga if abs(w) < 0.5 else -(1 - w) * (gg - ga) + gg
        avg = np.sqrt(-ga * ga + sq)
    else:
        avg = np.sqrt(sq)
    avg = avg + a.eps
    if buf is not None:
        buf[...] = buf * a.momentum + gg / avg
        p[...] = -a.lr * buf + p
    else:
        p[...] = p + (-a.lr * gg) / avg


def _adagrad_model(p: np.ndarray, g: np.ndarray, s: np.ndarray, a: Any) -> None:
    gg = -g if a.maximize else g
    if a.weight_decay != 0:
        gg = a.weight_decay * p + gg
    s[...] = gg * gg + s
    p[...] = p + (-a.clr * gg) / (np.sqrt(s) + a.eps)


def _unscale_model(g: np.ndarray, found: np.ndarray, inv_scale: float) -> None:
    if not np.isfinite(g).all():
        found[0] = 1
    if inv_scale != 1:
        g *= inv_scale  # in the gradient's dtype, as the kernel's float (double for float64)


def _on_double(model: Any) -> Any:
    """A reference for the strict double's recorder: the model on the arrays underneath."""
    def reference(*args: Any) -> bool:
        model(*[a._a if isinstance(a, strict_cupy.ndarray) else a for a in args])
        return True

    return reference


@pytest.fixture
def double_references(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, model in (("rmsprop_step", _rmsprop_model), ("adagrad_step", _adagrad_model),
                        ("non_finite_check_and_unscale", _unscale_model)):
        monkeypatch.setitem(strict_cupy._REFERENCES, name, _on_double(model))


# ---- training runs -----------------------------------------------------------------------
def _grads(dtype: Any) -> List[List[np.ndarray]]:
    rng = np.random.default_rng(1)
    return [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(STEPS)]


def _start(dtype: Any) -> List[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(dtype) for s in SHAPES]


def _run(lib: Any, cls: str, case: Dict[str, Any], dtype: Any, device: str = "cpu") -> Any:
    """The parameters and the optimizer's state after STEPS steps on fixed gradients."""
    kw = {"foreach": False} if lib is torch else {}
    ps = [lib.tensor(p, device=device, requires_grad=True) for p in _start(dtype)]
    opt = getattr(lib.optim, cls)(ps, lr=0.05, **case, **kw)
    for gs in _grads(dtype):
        for p, g in zip(ps, gs):
            p.grad = lib.tensor(g, device=device)
        opt.step()
    state = [{k: v.detach().cpu().numpy() for k, v in opt.state[p].items() if k != "step"}
             for p in ps]
    return [p.detach().cpu().numpy() for p in ps], state


def _assert_same(got: Any, want: Any, tol: Any = None) -> None:
    for gp, wp in zip(got[0], want[0]):
        assert gp.dtype == wp.dtype
        if tol is None:
            np.testing.assert_array_equal(gp, wp)
        else:
            np.testing.assert_allclose(gp, wp, **tol)
    for gs, ws in zip(got[1], want[1]):
        assert sorted(gs) == sorted(ws)
        for k in ws:
            if tol is None:
                np.testing.assert_array_equal(gs[k], ws[k], err_msg=k)
            else:
                np.testing.assert_allclose(gs[k], ws[k], err_msg=k, **tol)


# ---- the kernels' bodies on the CPU ------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", RMSPROP_CASES, ids=_case_id)
def test_rmsprop_kernel_equals_the_array_formulation_and_torch(
        request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, dtype: Any,
        case: Dict[str, Any]) -> None:
    plain = _run(rustgrad, "RMSprop", case, dtype)
    request.getfixturevalue("cpu_fused")
    calls: List[Any] = []
    kernel = cpu.kernels.rmsprop_step
    monkeypatch.setattr(cpu.kernels, "rmsprop_step", lambda *a: calls.append(a) or kernel(*a))
    fused = _run(rustgrad, "RMSprop", case, dtype)
    assert len(calls) == STEPS * len(SHAPES)
    _assert_same(fused, plain)
    _assert_same(fused, _run(torch, "RMSprop", case, dtype), TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ADAGRAD_CASES, ids=_case_id)
def test_adagrad_kernel_equals_the_array_formulation_and_torch(
        request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, dtype: Any,
        case: Dict[str, Any]) -> None:
    plain = _run(rustgrad, "Adagrad", case, dtype)
    request.getfixturevalue("cpu_fused")
    calls: List[Any] = []
    kernel = cpu.kernels.adagrad_step
    monkeypatch.setattr(cpu.kernels, "adagrad_step", lambda *a: calls.append(a) or kernel(*a))
    fused = _run(rustgrad, "Adagrad", case, dtype)
    assert len(calls) == STEPS * len(SHAPES)
    _assert_same(fused, plain)
    _assert_same(fused, _run(torch, "Adagrad", case, dtype), TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_models_equal_the_compiled_kernels(cxx_kernels: Any, dtype: Any) -> None:
    """The double's references compute what the CUDA C computes, bit for bit."""
    rng = np.random.default_rng(3)
    for case in RMSPROP_CASES:
        args = types.SimpleNamespace(lr=0.05, alpha=case.get("alpha", 0.99), eps=1e-8,
                                     weight_decay=case.get("weight_decay", 0.0),
                                     momentum=case.get("momentum", 0.0),
                                     maximize=case.get("maximize", False))
        arrays = [rng.standard_normal(40).astype(dtype) for _ in range(2)] + [
            rng.random(40).astype(dtype) + 1, rng.standard_normal(40).astype(dtype) * 0.1,
            rng.standard_normal(40).astype(dtype)]
        centered, momentum = case.get("centered", False), args.momentum > 0
        a = [x.copy() for x in arrays]
        b = [x.copy() for x in arrays]
        for x in (a, b):
            if not centered:
                x[3] = None
            if not momentum:
                x[4] = None
        for _ in range(3):
            _rmsprop_model(*a, args)
            kernel = cxx_kernels("rmsprop", centered, momentum)
            kernel(b[1], args.lr, args.alpha, args.eps, args.weight_decay, args.momentum,
                   args.maximize, *[x for x in (b[0], b[2], b[3], b[4]) if x is not None])
        for x, y in zip(a, b):
            if x is not None:
                np.testing.assert_array_equal(x, y)
    for case in ADAGRAD_CASES:
        args = types.SimpleNamespace(clr=0.05 / 1.1, eps=case.get("eps", 1e-10),
                                     weight_decay=case.get("weight_decay", 0.0),
                                     maximize=case.get("maximize", False))
        p, g, s = (rng.standard_normal(40).astype(dtype), rng.standard_normal(40).astype(dtype),
                   rng.random(40).astype(dtype))
        a, b = [p.copy(), g, s.copy()], [p.copy(), g, s.copy()]
        _adagrad_model(*a, args)
        cxx_kernels("adagrad")(g, args.clr, args.eps, args.weight_decay, args.maximize,
                               b[0], b[2])
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[2], b[2])
    g = rng.standard_normal(40).astype(dtype) * 1e4
    for bad in (None, np.inf, np.nan):
        for inv in (1.0, float(np.float32(1 / 65536)), 3.0):
            x = g.copy()
            if bad is not None:
                x[7] = bad
            y, fx, fy = x.copy(), np.zeros(1, np.float32), np.zeros(1, np.float32)
            _unscale_model(x, fx, inv)
            cxx_kernels("unscale")(y, inv, y, fy)
            np.testing.assert_array_equal(x, y)
            assert fx[0] == fy[0] == (bad is not None)


def _scaler_run(lib: Any, blowup_at: int, dtype: Any = np.float32) -> Any:
    """Unscaled grads, parameters and scales of a GradScaler("cpu") loop with inf/NaN at one
    step."""
    ps = [lib.tensor(p, requires_grad=True) for p in _start(dtype)]
    opt = lib.optim.SGD(ps, lr=0.01)
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)
    out = []
    for k, gs in enumerate(_grads(dtype)):
        opt.zero_grad()
        scaled = scaler.scale(sum((p * lib.tensor(g)).sum() for p, g in zip(ps, gs)))
        scaled.backward()
        if k == blowup_at:
            ps[1].grad[2] = float("inf") if k % 2 else float("nan")
        scaler.unscale_(opt)
        grads = [p.grad.detach().numpy().copy() for p in ps]
        scaler.step(opt)
        scaler.update()
        out.append((grads, [p.detach().numpy().copy() for p in ps], scaler.get_scale()))
    return out, [p.detach().numpy() for p in ps]


@pytest.mark.parametrize("blowup_at", [-1, 1, 2])
@pytest.mark.parametrize("fused", [False, True])
def test_grad_scaler_unscale_matches_torch(request: pytest.FixtureRequest, fused: bool,
                                           blowup_at: int) -> None:
    if fused:
        request.getfixturevalue("cpu_fused")
    got, got_ps = _scaler_run(rustgrad, blowup_at)
    want, want_ps = _scaler_run(torch, blowup_at)
    for (gg, gp, gscale), (wg, wp, wscale) in zip(got, want):
        for a, b in zip(gg, wg):  # the unscaled gradients: the same float32 products
            np.testing.assert_array_equal(a, b)
        for a, b in zip(gp, wp):  # torch's SGD step rounds once (an FMA)
            np.testing.assert_allclose(a, b, **TOL[np.float32])
        assert gscale == wscale
    for a, b in zip(got_ps, want_ps):
        np.testing.assert_allclose(a, b, **TOL[np.float32])


def test_unscale_checks_the_gradient_before_scaling_as_torch(request: pytest.FixtureRequest) -> None:
    """A finite gradient that overflows when unscaled (a scale below 1) is not an inf for torch."""
    for fused in (False, True):
        if fused:
            request.getfixturevalue("cpu_fused")
        results = []
        for lib in (rustgrad, torch):
            w = lib.tensor([1.0, 2.0], requires_grad=True)
            opt = lib.optim.SGD([w], lr=0.1)
            scaler = lib.amp.GradScaler("cpu", init_scale=2.0**-10)
            scaler.scale(w.sum())
            w.grad = lib.tensor([3e38, 1.0])  # finite, inf once multiplied by 1024
            scaler.unscale_(opt)
            ret = scaler.step(opt)
            scaler.update()
            results.append((w.grad.tolist(), scaler.get_scale(), ret is None))
        assert results[0] == results[1]


# ---- the strict CuPy double: launches and host syncs -----------------------------------
def _host_reads(monkeypatch: pytest.MonkeyPatch) -> List[str]:
    reads: List[str] = []
    check = strict_cupy._no_host_transfer
    monkeypatch.setattr(strict_cupy, "_no_host_transfer",
                        lambda what: reads.append(what) or check(what))
    return reads


@pytest.mark.parametrize("cls,case", [("RMSprop", c) for c in RMSPROP_CASES] +
                         [("Adagrad", c) for c in ADAGRAD_CASES],
                         ids=lambda v: v if isinstance(v, str) else _case_id(v))
def test_one_launch_per_parameter_on_the_double(sim_cuda: Any, double_references: None,
                                                cls: str, case: Dict[str, Any]) -> None:
    ps = [rustgrad.tensor(p, device="cuda", requires_grad=True) for p in _start(np.float32)]
    opt = getattr(rustgrad.optim, cls)(ps, lr=0.05, **case)
    for gs in _grads(np.float32):
        for p, g in zip(ps, gs):
            p.grad = rustgrad.tensor(g, device="cuda")
        strict_cupy.KERNELS.clear()
        first = not opt.state or cls == "Adagrad"
        opt.step()
        launches = dict(strict_cupy.KERNELS)
        if first:  # RMSprop's state is allocated by its first step
            launches.pop("zeros", None)
        assert launches == {cls.lower() + "_step": len(ps)}
    # the models' numbers are the array formulation's (the references stand for the kernel)
    got = ([p.detach().cpu().numpy() for p in ps],
           [{k: v.cpu().numpy() for k, v in opt.state[p].items() if k != "step"} for p in ps])
    _assert_same(got, _run(rustgrad, cls, case, np.float32), TOL[np.float32])


@pytest.mark.parametrize("references", [False, True])
def test_unscale_launches_and_host_syncs_on_the_double(
        request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, sim_cuda: Any,
        references: bool) -> None:
    if references:
        request.getfixturevalue("double_references")
    ps = [rustgrad.tensor(p, device=f"cuda:{i % 2}", requires_grad=True)
          for i, p in enumerate(_start(np.float32) * 2)]  # 6 params on two GPUs
    opt = rustgrad.optim.SGD(ps, lr=0.1)
    scaler = rustgrad.amp.GradScaler("cuda", init_scale=4.0)
    for bad in (False, True):
        for p in ps:
            p.grad = rustgrad.full(p.shape, 8.0, device=p.device)
        if bad:
            ps[2].grad[0] = float("inf")  # (on cuda:0: setitem on cuda:1 is not device-guarded)
        before = [p.detach().cpu().numpy() for p in ps]
        scaler.scale(ps[0].sum())
        strict_cupy.KERNELS.clear()
        reads = _host_reads(monkeypatch)
        scaler.unscale_(opt)
        assert reads == []  # nothing read back per gradient
        if references:
            assert dict(strict_cupy.KERNELS) == {"non_finite_check_and_unscale": 6, "zeros": 2}
        scaler.step(opt)
        assert len(reads) <= 2  # one read of found_inf per device
        scaler.update()
        after = [p.detach().cpu().numpy() for p in ps]
        for b, a in zip(before, after):
            if bad:
                np.testing.assert_array_equal(a, b)
            else:
                np.testing.assert_array_equal(a, b - 0.1 * 2.0)  # grads unscaled from 8 to 2
        assert scaler.get_scale() == (2.0 if bad else 4.0)


# ---- every device: cpu, the double (array formulation), a real GPU (the kernels) -----------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls,case", [("RMSprop", RMSPROP_CASES[-1]), ("RMSprop", {}),
                                      ("Adagrad", ADAGRAD_CASES[-1])],
                         ids=lambda v: v if isinstance(v, str) else _case_id(v))
def test_steps_match_torch_on_every_device(device: str, dtype: Any, cls: str,
                                           case: Dict[str, Any]) -> None:
    tol = dict(TOL[dtype])
    if device == "cuda" and dtype == np.float32:  # the GPU contracts a * b + c into one FMA
        tol = dict(rtol=1e-4, atol=1e-5)
    _assert_same(_run(rustgrad, cls, case, dtype, device), _run(torch, cls, case, dtype), tol)


def test_grad_scaler_on_every_device(device: str) -> None:
    w = rustgrad.tensor([1.0, -2.0, 3.0], device=device, requires_grad=True)
    opt = rustgrad.optim.SGD([w], lr=0.5)
    scaler = rustgrad.amp.GradScaler(device, init_scale=16.0)
    scaler.scale((w * w).sum()).backward()
    scaler.unscale_(opt)
    assert w.grad.cpu().tolist() == [2.0, -4.0, 6.0]
    scaler.step(opt)
    scaler.update()
    assert w.detach().cpu().tolist() == [0.0, 0.0, 0.0]
    w.grad = rustgrad.tensor([1.0, float("nan"), 1.0], device=device)
    scaler.unscale_(opt)
    assert scaler.step(opt) is None
    scaler.update()
    assert scaler.get_scale() == 8.0
