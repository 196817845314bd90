"""Parity helpers: run one program under torch and under rustgrad and compare everything.

`check(fn, *specs)` builds identical inputs for both libraries, runs `fn(lib, *inputs)` (lib is
`torch` or `rustgrad`), compares the outputs (values, dtype, shape, grad_fn name, requires_grad,
version counter), back-propagates the same random upstream gradient and compares the input
gradients (None-ness included).

`check_error(fn, *specs)` runs a program that must raise under both and compares the exception
type and a key phrase, then checks the inputs were left unchanged.

An input spec is a shape tuple (random values uniform in [low, high)) or a NumPy array (used as
given; float arrays are cast to the dtype under test, unless that dtype is None: then arrays keep
their dtypes and random inputs are float64). Float inputs require grad.
"""

from __future__ import annotations

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


def _arrays(specs: Sequence[Any], dtype: Any, low: float, high: float, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for s in specs:
        if isinstance(s, np.ndarray):
            out.append(s.astype(dtype) if s.dtype.kind == "f" and dtype is not None else s.copy())
        else:
            out.append(rng.uniform(low, high, size=tuple(s)).astype(dtype or np.float64))
    return out


def _make_inputs(arrays: Sequence[np.ndarray], requires_grad: bool) -> Tuple[list, list]:
    tt, rt = [], []
    for a in arrays:
        rg = requires_grad and a.dtype.kind == "f"
        tt.append(torch.tensor(a.copy(), requires_grad=rg))
        rt.append(rustgrad.tensor(a.copy(), requires_grad=rg))
    return tt, rt


def _as_outputs(out: Any) -> tuple:
    if isinstance(out, (tuple, list)):
        return tuple(out)
    return (out,)


def _np_of(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def _grad_fn_name(t: Any) -> Optional[str]:
    return None if t.grad_fn is None else t.grad_fn.name()


def assert_same_tensor(
    t: Any, r: Any, what: str, rtol: Optional[float] = None, atol: Optional[float] = None
) -> None:
    """torch tensor `t` and rustgrad tensor `r` hold the same dtype, shape and values (the
    tolerance defaults to one for the dtype)."""
    assert isinstance(r, rustgrad.Tensor), f"{what}: rustgrad gave {type(r).__name__}"
    assert str(r.dtype) == str(t.dtype), f"{what}: dtype {r.dtype} != torch's {t.dtype}"
    assert tuple(r.shape) == tuple(t.shape), f"{what}: shape {tuple(r.shape)} != {tuple(t.shape)}"
    tv, rv = _np_of(t), _np_of(r)
    if tv.dtype.kind == "f":
        drtol, datol = _TOL[tv.dtype]
        np.testing.assert_allclose(rv, tv, rtol=rtol or drtol, atol=atol or datol, err_msg=what)
    else:
        np.testing.assert_array_equal(rv, tv, err_msg=what)


def check(
    fn: Callable[..., Any],
    *specs: Any,
    dtypes: Sequence[Any] = FLOATS,
    low: float = -2.0,
    high: float = 2.0,
    requires_grad: bool = True,
    backward: bool = True,
    versions: bool = True,
    grad_fn: bool = True,
    seed: int = 0,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
) -> None:
    """Runs `fn(lib, *inputs)` under torch and rustgrad for each dtype and compares them
    (`grad_fn=False` skips comparing grad_fn names, `versions=False` the version counters)."""
    rt_, at_ = rtol, atol
    for dt in dtypes:
        dt = None if dt is None else np.dtype(dt)
        name = "as given" if dt is None else dt.name
        arrays = _arrays(specs, dt, low, high, seed)
        tin, rin = _make_inputs(arrays, requires_grad)
        touts = _as_outputs(fn(torch, *tin))
        routs = _as_outputs(fn(rustgrad, *rin))
        assert len(routs) == len(touts), f"{len(routs)} outputs, torch gave {len(touts)}"
        for k, (t, r) in enumerate(zip(touts, routs)):
            what = f"[{name}] output {k}"
            assert_same_tensor(t, r, what, rt_, at_)
            assert not grad_fn or _grad_fn_name(r) == _grad_fn_name(t), (
                f"{what}: grad_fn {_grad_fn_name(r)} != torch's {_grad_fn_name(t)}"
            )
            assert r.requires_grad == t.requires_grad, f"{what}: requires_grad differs"
            if versions:
                assert r._version == t._version, (
                    f"{what}: _version {r._version} != torch's {t._version}"
                )
        for k, (t, r) in enumerate(zip(tin, rin)):
            assert_same_tensor(t, r, f"[{name}] input {k} after forward", rt_, at_)
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
            tg.append(torch.tensor(g))
            rb.append(r)
            rg_.append(rustgrad.tensor(g))
        if not tb:
            continue
        torch.autograd.backward(tb, tg)
        rustgrad.autograd.backward(rb, rg_)
        for k, (t, r) in enumerate(zip(tin, rin)):
            what = f"[{name}] grad of input {k}"
            if t.grad is None or r.grad is None:
                assert (t.grad is None) == (r.grad is None), (
                    f"{what}: rustgrad {'None' if r.grad is None else 'a tensor'}, torch "
                    f"{'None' if t.grad is None else 'a tensor'}"
                )
                continue
            assert_same_tensor(t.grad, r.grad, what, rt_, at_)


def check_error(
    fn: Callable[..., Any],
    *specs: Any,
    phrase: Optional[str] = None,
    dtype: Any = np.float64,
    requires_grad: bool = False,
    seed: int = 0,
) -> Tuple[BaseException, BaseException]:
    """`fn(lib, *inputs)` raises the same exception type under both libraries, both messages
    hold `phrase` (default: the first 40 characters of torch's), and the inputs are unchanged."""
    arrays = _arrays(specs, np.dtype(dtype), -2.0, 2.0, seed)
    tin, rin = _make_inputs(arrays, requires_grad)
    errors = []
    for lib, ins in ((torch, tin), (rustgrad, rin)):
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
    low: float = -2.0,
    high: float = 2.0,
    seed: int = 0,
    rtol: float = 1e-7,
    atol: float = 1e-9,
) -> None:
    """Second-order parity in float64: the gradients of `fn` taken with create_graph=True,
    then the gradient of a random projection of them, compared with torch's."""
    arrays = _arrays(specs, np.dtype(np.float64), low, high, seed)
    tin, rin = _make_inputs(arrays, True)
    results = []
    for lib, ins in ((torch, tin), (rustgrad, rin)):
        out = fn(lib, *ins)
        rng = np.random.default_rng(seed + 1)  # the same upstream gradient for both
        go = lib.tensor(rng.uniform(-1, 1, size=tuple(out.shape)))
        grads = lib.autograd.grad(out, ins, go, create_graph=True, allow_unused=True)
        results.append(grads)
    rng = np.random.default_rng(seed + 2)
    projections = []
    for k, (gt, gr) in enumerate(zip(*results)):
        assert (gt is None) == (gr is None), f"first-order grad {k} None-ness differs"
        if gt is None:
            continue
        assert_same_tensor(gt, gr, f"first-order grad {k}", rtol, atol)
        assert gr.requires_grad == gt.requires_grad, f"first-order grad {k}: requires_grad"
        if gt.requires_grad:
            projections.append((gt, gr, rng.uniform(-1, 1, size=tuple(gt.shape))))
    if not projections:
        return
    loss_t = sum((gt * torch.tensor(w)).sum() for gt, _, w in projections)
    loss_r = sum((gr * rustgrad.tensor(w)).sum() for _, gr, w in projections)
    second_t = torch.autograd.grad(loss_t, tin, allow_unused=True)
    second_r = rustgrad.autograd.grad(loss_r, rin, allow_unused=True)
    for k, (t, r) in enumerate(zip(second_t, second_r)):
        if t is None or r is None:
            # torch may drop an input whose second derivative is identically zero
            zero = t if r is None else r
            assert zero is None or not np.any(_np_of(zero)), f"second-order grad {k}"
            continue
        assert_same_tensor(t, r, f"second-order grad {k}", rtol, atol)
