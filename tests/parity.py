"""Parity helpers: run one program under torch (on the CPU, the oracle) and under rustgrad (on the
device under test) and compare everything.

Op programs, `fn(lib, *inputs)` (lib is `torch` or `rustgrad`):

- `check(fn, *specs, device=...)` builds identical inputs for both libraries (rustgrad's on
  `device`), runs the program, compares the outputs (values, dtype, shape, device, grad_fn name,
  requires_grad, version counter, whether it is a view) and the inputs after it, back-propagates
  the same random upstream gradient and compares the input gradients (None-ness included).
- `check_error(fn, *specs, device=...)`: the program raises the same exception type under both,
  both messages hold a key phrase, and the inputs are unchanged.
- `check_double_backward(fn, *specs, device=...)`: first- and second-order gradients in float64.
- `grad_ok(fn, *specs)`: rustgrad.autograd.gradcheck of the program in float64 on the CPU.

An input spec is a shape tuple (random values uniform in [low, high)) or a NumPy array (used as
given; float arrays are cast to the dtype under test, unless that dtype is None: then arrays keep
their dtypes and random inputs are float64). Float inputs require grad. On a device other than
the CPU the program's `lib` is rustgrad with its factories defaulting to that device (as
torch.set_default_device makes them), so `lib.tensor(...)` inside a program lands beside the
inputs.

Whole programs, `fn(lib)`: `parity(fn)` compares the nested results of both runs, `same_error(fn,
phrase)` the exceptions they raise; `f64(lib, array)` is a float64 tensor of exact values.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np
import rustgrad
import torch

FLOATS = (np.float64, np.float32)
_TOL = {
    np.dtype(np.float64): (1e-7, 1e-9),
    np.dtype(np.float32): (1e-4, 1e-5),
    np.dtype(np.float16): (1e-2, 1e-2),
}
# the factories that take `device=`; tensors made from other tensors follow their device already
_FACTORIES = frozenset({
    "tensor", "as_tensor", "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "rand",
    "randn", "randint", "randperm",
})


# The torch release the suite's expectations are written against (the Makefile installs it). On a
# machine with another torch (the GPU machine has no registry), a program on a real GPU is
# compared with rustgrad's own CPU result instead, which `make test` checks against this release.
ORACLE_TORCH = "2.15.0"


def on_real_gpu(device: str) -> bool:
    """Whether `device` is a real GPU (CuPy's arrays), not the strict double's simulation."""
    return device.startswith("cuda") and rustgrad.cuda.is_available() and \
        type(rustgrad.ones(1, device=device)._data).__module__.startswith("cupy")


def oracle_for(device: str) -> Any:
    """The library a program on `device` is compared with: torch, or rustgrad on the CPU where
    the device is a real GPU and the installed torch is not ORACLE_TORCH."""
    if on_real_gpu(device) and torch.__version__.split("+")[0] != ORACLE_TORCH:
        return rustgrad
    return torch


def ints(x: Any) -> np.ndarray:
    """An int64 input spec (index tensors and the like)."""
    return np.array(x, dtype=np.int64)


def F(lib: Any) -> Any:
    """The program's torch.nn.functional: `lib.nn.functional`, as `import ... as F` names it."""
    return lib.nn.functional


def _with_device(factory: Callable[..., Any], device: str, *args: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("device", device)
    return factory(*args, **kwargs)


class _OnDevice:
    """rustgrad as a program sees it on a device other than the CPU."""

    def __init__(self, device: str) -> None:
        self._device = device

    def __getattr__(self, name: str) -> Any:
        attr = getattr(rustgrad, name)
        if name in _FACTORIES:
            return functools.partial(_with_device, attr, self._device)
        return attr


def rustgrad_on(device: str) -> Any:
    """The `lib` a program gets for rustgrad on `device` (rustgrad itself on the CPU)."""
    return rustgrad if device == "cpu" else _OnDevice(device)


def _arrays(specs: Sequence[Any], dtype: Any, low: float, high: float, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for s in specs:
        if isinstance(s, np.ndarray):
            out.append(s.astype(dtype) if s.dtype.kind == "f" and dtype is not None else s.copy())
        else:
            out.append(rng.uniform(low, high, size=tuple(s)).astype(dtype or np.float64))
    return out


def _make_inputs(arrays: Sequence[np.ndarray], requires_grad: bool,
                 device: str) -> Tuple[list, list]:
    tt, rt = [], []
    oracle = oracle_for(device)
    for a in arrays:
        rg = requires_grad and a.dtype.kind == "f"
        tt.append(oracle.tensor(a.copy(), requires_grad=rg))
        rt.append(rustgrad.tensor(a.copy(), device=device, requires_grad=rg))
    return tt, rt


def _as_outputs(out: Any) -> tuple:
    if isinstance(out, (tuple, list)):
        return tuple(out)
    return (out,)


def _np_of(t: Any) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


def _grad_fn_name(t: Any) -> Optional[str]:
    return None if t.grad_fn is None else t.grad_fn.name()


def assert_same_tensor(
    t: Any,
    r: Any,
    what: str,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    device: Optional[str] = None,
) -> None:
    """torch tensor `t` and rustgrad tensor `r` hold the same dtype, shape and values (the
    tolerance defaults to one for the dtype), and `r` is on `device` when one is given."""
    assert isinstance(r, rustgrad.Tensor), f"{what}: rustgrad gave {type(r).__name__}"
    assert str(r.dtype) == str(t.dtype), f"{what}: dtype {r.dtype} != torch's {t.dtype}"
    assert tuple(r.shape) == tuple(t.shape), f"{what}: shape {tuple(r.shape)} != {tuple(t.shape)}"
    if device is not None:
        assert r.device.type == device, f"{what}: on {r.device}, not on {device}"
    tv, rv = _np_of(t), _np_of(r)
    if tv.dtype.kind == "f":
        drtol, datol = _TOL[tv.dtype]
        np.testing.assert_allclose(rv, tv, rtol=rtol or drtol, atol=atol or datol, err_msg=what)
    else:
        np.testing.assert_array_equal(rv, tv, err_msg=what)


def check(
    fn: Callable[..., Any],
    *specs: Any,
    device: str = "cpu",
    dtypes: Sequence[Any] = FLOATS,
    low: float = -2.0,
    high: float = 2.0,
    requires_grad: bool = True,
    backward: bool = True,
    versions: bool = True,
    grad_fn: bool = True,
    views: bool = True,
    seed: int = 0,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
) -> None:
    """Runs `fn(lib, *inputs)` under torch and rustgrad (on `device`) for each dtype and compares
    them (`grad_fn=False` skips comparing grad_fn names, `versions=False` the version counters,
    `views=False` whether outputs are views)."""
    rt_, at_ = rtol, atol
    lib = rustgrad_on(device)
    oracle = oracle_for(device)
    for dt in dtypes:
        dt = None if dt is None else np.dtype(dt)
        name = "as given" if dt is None else dt.name
        arrays = _arrays(specs, dt, low, high, seed)
        tin, rin = _make_inputs(arrays, requires_grad, device)
        touts = _as_outputs(fn(oracle, *tin))
        routs = _as_outputs(fn(lib, *rin))
        assert len(routs) == len(touts), f"{len(routs)} outputs, torch gave {len(touts)}"
        for k, (t, r) in enumerate(zip(touts, routs)):
            what = f"[{name}] output {k}"
            assert_same_tensor(t, r, what, rt_, at_, device)
            assert not grad_fn or _grad_fn_name(r) == _grad_fn_name(t), (
                f"{what}: grad_fn {_grad_fn_name(r)} != torch's {_grad_fn_name(t)}"
            )
            assert r.requires_grad == t.requires_grad, f"{what}: requires_grad differs"
            if versions:
                assert r._version == t._version, (
                    f"{what}: _version {r._version} != torch's {t._version}"
                )
            if views:
                assert (r._base is None) == (t._base is None), (
                    f"{what}: view {r._base is not None}, torch {t._base is not None}"
                )
        for k, (t, r) in enumerate(zip(tin, rin)):
            assert_same_tensor(t, r, f"[{name}] input {k} after forward", rt_, at_, device)
            if versions:
                assert r._version == t._version, f"input {k}: _version {r._version} != {t._version}"
        if not backward:
            continue
        rng = np.random.default_rng(seed + 1)
        tb, tg, rb, rg_ = [], [], [], []
        for t, r in zip(touts, routs):
            if not t.requires_grad:
                continue
            g = rng.uniform(-1.0, 1.0, size=tuple(t.shape)).astype(_np_of(t).dtype)
            tb.append(t)
            tg.append(oracle.tensor(g))
            rb.append(r)
            rg_.append(rustgrad.tensor(g, device=device))
        if not tb:
            continue
        oracle.autograd.backward(tb, tg)
        rustgrad.autograd.backward(rb, rg_)
        for k, (t, r) in enumerate(zip(tin, rin)):
            what = f"[{name}] grad of input {k}"
            if t.grad is None or r.grad is None:
                assert (t.grad is None) == (r.grad is None), (
                    f"{what}: rustgrad {'None' if r.grad is None else 'a tensor'}, torch "
                    f"{'None' if t.grad is None else 'a tensor'}"
                )
                continue
            assert_same_tensor(t.grad, r.grad, what, rt_, at_, device)


def check_error(
    fn: Callable[..., Any],
    *specs: Any,
    device: str = "cpu",
    phrase: Optional[str] = None,
    dtype: Any = np.float64,
    requires_grad: bool = False,
    seed: int = 0,
) -> Tuple[BaseException, BaseException]:
    """`fn(lib, *inputs)` raises the same exception type under both libraries, both messages
    hold `phrase` (default: the first 40 characters of torch's), and the inputs are unchanged."""
    arrays = _arrays(specs, np.dtype(dtype), -2.0, 2.0, seed)
    tin, rin = _make_inputs(arrays, requires_grad, device)
    errors = []
    for lib, ins in ((oracle_for(device), tin), (rustgrad_on(device), rin)):
        try:
            fn(lib, *ins)
        except Exception as e:  # noqa: BLE001 - any exception is what is being compared
            errors.append(e)
        else:
            raise AssertionError(f"{lib.__name__}: no exception raised")
    et, er = errors
    assert type(er) is type(et), f"rustgrad raised {type(er).__name__}: {er}; torch {type(et)}"
    key = phrase if phrase is not None else str(et)[:40]
    assert key in str(et), f"phrase {key!r} not in torch's message {str(et)!r}"
    assert key in str(er), f"phrase {key!r} not in rustgrad's message {str(er)!r}"
    for k, (a, t, r) in enumerate(zip(arrays, tin, rin)):
        np.testing.assert_array_equal(_np_of(t), a, err_msg=f"torch input {k} changed")
        np.testing.assert_array_equal(_np_of(r), a, err_msg=f"rustgrad input {k} changed")
        assert r._version == t._version == 0, f"input {k}: version {r._version}, {t._version}"
        assert r.grad is None and t.grad is None
    return et, er


def check_double_backward(
    fn: Callable[..., Any],
    *specs: Any,
    device: str = "cpu",
    low: float = -2.0,
    high: float = 2.0,
    seed: int = 0,
    rtol: float = 1e-7,
    atol: float = 1e-9,
) -> None:
    """Second-order parity in float64: the gradients of `fn`'s first output taken with
    create_graph=True, then the gradient of a random projection of them, compared with torch's."""
    arrays = _arrays(specs, np.dtype(np.float64), low, high, seed)
    tin, rin = _make_inputs(arrays, True, device)
    tdiff = [x for x in tin if x.requires_grad]
    rdiff = [x for x in rin if x.requires_grad]
    firsts = []
    oracle = oracle_for(device)
    for lib, ins, diff in ((oracle, tin, tdiff), (rustgrad_on(device), rin, rdiff)):
        out = _as_outputs(fn(lib, *ins))[0]
        # the same upstream gradient for both
        g = np.random.default_rng(seed + 1).uniform(-1, 1, size=tuple(out.shape))
        go = oracle.tensor(g) if lib is oracle else rustgrad.tensor(g, device=device)
        firsts.append(lib.autograd.grad(out, diff, go, create_graph=True, allow_unused=True))
    rng = np.random.default_rng(seed + 2)
    projections = []
    for k, (gt, gr) in enumerate(zip(*firsts)):
        assert (gt is None) == (gr is None), f"first-order grad {k} None-ness differs"
        if gt is None:
            continue
        assert_same_tensor(gt, gr, f"first-order grad {k}", rtol, atol, device)
        assert gr.requires_grad == gt.requires_grad, f"first-order grad {k}: requires_grad"
        if gt.requires_grad:
            projections.append((gt, gr, rng.uniform(-1, 1, size=tuple(gt.shape))))
    if not projections:
        return
    loss_t = sum((gt * oracle.tensor(w)).sum() for gt, _, w in projections)
    loss_r = sum((gr * rustgrad.tensor(w, device=device)).sum() for _, gr, w in projections)
    second_t = oracle.autograd.grad(loss_t, tdiff, allow_unused=True)
    second_r = rustgrad.autograd.grad(loss_r, rdiff, allow_unused=True)
    for k, (t, r) in enumerate(zip(second_t, second_r)):
        if t is None or r is None:
            # an input whose second derivative is identically zero: None in one, zeros in the other
            zero = t if r is None else r
            assert zero is None or not np.any(_np_of(zero)), f"second-order grad {k}"
            continue
        assert_same_tensor(t, r, f"second-order grad {k}", rtol, atol, device)


def grad_ok(fn: Callable[..., Any], *specs: Any, low: float = -2.0, high: float = 2.0,
            seed: int = 0) -> bool:
    """rustgrad.autograd.gradcheck of `fn(rustgrad, *inputs)` in float64 on the CPU."""
    arrs = _arrays(specs, np.float64, low, high, seed)
    ins = tuple(rustgrad.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrs)
    return rustgrad.autograd.gradcheck(lambda *xs: fn(rustgrad, *xs), ins)


# ---- whole programs ----------------------------------------------------------------------------
def to_np(x: Any) -> Any:
    """Nested structures of tensors -> the same structures of NumPy arrays (None kept)."""
    if isinstance(x, (torch.Tensor, rustgrad.Tensor)):
        return _np_of(x)
    if isinstance(x, (tuple, list)):
        return type(x)(to_np(v) for v in x)
    if isinstance(x, dict):
        return {k: to_np(v) for k, v in x.items()}
    return x


def _assert_same_values(a: Any, b: Any, rtol: float, atol: float, path: str = "") -> None:
    """`a` (torch's) and `b` (rustgrad's), as NumPy structures, are equal within tolerance."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), f"{path}: {type(b).__name__} instead of an array"
        assert a.shape == b.shape, f"{path}: shape {b.shape} instead of {a.shape}"
        assert a.dtype == b.dtype, f"{path}: dtype {b.dtype} instead of {a.dtype}"
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=path)
    elif isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), f"{path}: {b!r} vs {a!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same_values(x, y, rtol, atol, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{path}: keys {b.keys()} vs {a.keys()}"
        for k in a:
            _assert_same_values(a[k], b[k], rtol, atol, f"{path}[{k!r}]")
    elif isinstance(a, float):
        assert np.isclose(b, a, rtol=rtol, atol=atol), f"{path}: {b} vs {a}"
    else:
        assert a == b, f"{path}: {b!r} vs {a!r}"


def parity(fn: Callable[[Any], Any], rtol: float = 1e-7, atol: float = 1e-9) -> Any:
    """Runs `fn(lib)` for torch and rustgrad; asserts the results match; returns torch's."""
    expected = to_np(fn(torch))
    got = to_np(fn(rustgrad))
    _assert_same_values(expected, got, rtol, atol)
    return expected


def _raised(fn: Callable[[], Any]) -> BaseException:
    try:
        fn()
    except BaseException as e:  # noqa: B036  (the caller inspects it)
        return e
    raise AssertionError("no exception raised")


def same_error(fn: Callable[[Any], Any], phrase: str) -> None:
    """`fn(lib)` raises the same exception type under both libraries, with `phrase` in both."""
    et = _raised(lambda: fn(torch))
    er = _raised(lambda: fn(rustgrad))
    assert phrase in str(et), f"torch: {et}"
    assert type(er).__name__ == type(et).__name__, f"{type(er).__name__}: {er}"
    assert phrase in str(er), f"rustgrad: {er}"


def f64(lib: Any, array: Any, requires_grad: bool = False) -> Any:
    """A float64 tensor of `array`'s exact values."""
    return lib.tensor(np.asarray(array, dtype=np.float64), requires_grad=requires_grad)

