"""Helpers of the ops_ext tests: run one program under torch and under rustgrad and compare.

`check(fn, *specs)`: for float64 and float32, builds identical inputs for both libraries, runs
`fn(lib, *inputs)` (lib is torch or rustgrad), compares every output (values, dtype, shape,
grad_fn name, requires_grad, version counter, whether it is a view), checks the inputs were not
changed, back-propagates the same random upstream gradients and compares the input gradients
(None-ness included).

`check_error(fn, *specs, phrase=...)`: the program raises the same exception type under both,
both messages hold the phrase, and the inputs are unchanged (values, version, no grad).

`grad_ok(fn, *specs)`: rustgrad.autograd.gradcheck of `fn(rustgrad, *inputs)` in float64.

An input spec is a shape tuple (uniform values in [low, high)) or a NumPy array (float arrays
take the dtype under test; integer and bool arrays are used as given). Float inputs require
grad unless `requires_grad=False`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np
import rustgrad
import torch

from ..parity.helpers import _arrays as arrays
from ..parity.helpers import _as_outputs as outputs
from ..parity.helpers import _grad_fn_name as grad_fn_name
from ..parity.helpers import _make_inputs as make_inputs
from ..parity.helpers import _np_of as np_of

FLOATS = (np.float64, np.float32)
_TOL = {np.dtype(np.float64): (1e-7, 1e-9), np.dtype(np.float32): (1e-4, 1e-5)}


def assert_same(t: Any, r: Any, what: str, rtol: float, atol: float) -> None:
    """torch tensor t and rustgrad tensor r hold the same dtype, shape and values."""
    assert isinstance(r, rustgrad.Tensor), f"{what}: rustgrad gave {type(r).__name__}"
    assert str(r.dtype) == str(t.dtype), f"{what}: dtype {r.dtype} != torch's {t.dtype}"
    assert tuple(r.shape) == tuple(t.shape), f"{what}: shape {tuple(r.shape)} != {tuple(t.shape)}"
    tv, rv = np_of(t), np_of(r)
    if tv.dtype.kind == "f":
        np.testing.assert_allclose(rv, tv, rtol=rtol, atol=atol, err_msg=what)
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
    seed: int = 0,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
) -> None:
    for dt in dtypes:
        dt = np.dtype(dt)
        drtol, datol = _TOL.get(dt, (1e-7, 1e-9))
        rt_, at_ = rtol or drtol, atol or datol
        arrs = arrays(specs, dt, low, high, seed)
        tin, rin = make_inputs(arrs, requires_grad)
        touts = outputs(fn(torch, *tin))
        routs = outputs(fn(rustgrad, *rin))
        assert len(routs) == len(touts), f"{len(routs)} outputs, torch gave {len(touts)}"
        for k, (t, r) in enumerate(zip(touts, routs)):
            what = f"[{dt.name}] output {k}"
            assert_same(t, r, what, rt_, at_)
            assert grad_fn_name(r) == grad_fn_name(t), (
                f"{what}: grad_fn {grad_fn_name(r)} != torch's {grad_fn_name(t)}"
            )
            assert r.requires_grad == t.requires_grad, f"{what}: requires_grad differs"
            assert r._version == t._version, f"{what}: _version {r._version} != {t._version}"
            assert (r._base is None) == (t._base is None), (
                f"{what}: view {r._base is not None}, torch {t._base is not None}"
            )
        for k, (a, t, r) in enumerate(zip(arrs, tin, rin)):
            np.testing.assert_array_equal(np_of(r), a, err_msg=f"input {k} changed by forward")
            assert r._version == t._version, f"input {k}: _version {r._version} != {t._version}"
        if not backward:
            continue
        rng = np.random.default_rng(seed + 1)
        tb, tg, rb, rg_ = [], [], [], []
        for t, r in zip(touts, routs):
            if not t.requires_grad:
                continue
            g = rng.uniform(-1.0, 1.0, size=tuple(t.shape)).astype(np_of(t).dtype)
            tb.append(t)
            tg.append(torch.tensor(g))
            rb.append(r)
            rg_.append(rustgrad.tensor(g))
        if not tb:
            continue
        torch.autograd.backward(tb, tg)
        rustgrad.autograd.backward(rb, rg_)
        for k, (t, r) in enumerate(zip(tin, rin)):
            what = f"[{dt.name}] grad of input {k}"
            if t.grad is None or r.grad is None:
                assert (t.grad is None) == (r.grad is None), (
                    f"{what}: rustgrad {'None' if r.grad is None else 'a tensor'}, torch "
                    f"{'None' if t.grad is None else 'a tensor'}"
                )
                continue
            assert_same(t.grad, r.grad, what, rt_, at_)


def check_double_backward(fn: Callable[..., Any], *specs: Any, low: float = -2.0,
                          high: float = 2.0, seed: int = 0) -> None:
    """Second derivatives: grad of (first gradients . w) w.r.t. the inputs, float64."""
    arrs = arrays(specs, np.float64, low, high, seed)
    tin, rin = make_inputs(arrs, True)
    results = []
    for lib, ins in ((torch, tin), (rustgrad, rin)):
        out = outputs(fn(lib, *ins))[0]
        rng = np.random.default_rng(seed + 1)
        go = lib.tensor(rng.uniform(-1, 1, size=tuple(out.shape)))
        diff = [x for x in ins if x.requires_grad]
        firsts = lib.autograd.grad(out, diff, go, create_graph=True)
        total = None
        for f in firsts:
            w = lib.tensor(rng.uniform(-1, 1, size=tuple(f.shape)))
            term = (f * w).sum()
            total = term if total is None else total + term
        seconds = lib.autograd.grad(total, diff, allow_unused=True)
        results.append(([np_of(f) for f in firsts],
                        [None if s is None else np_of(s) for s in seconds]))
    (tf, ts), (rf, rs) = results
    for k, (a, b) in enumerate(zip(tf, rf)):
        np.testing.assert_allclose(b, a, rtol=1e-7, atol=1e-9, err_msg=f"first grad {k}")
    for k, (a, b) in enumerate(zip(ts, rs)):
        if a is None or b is None:
            # an unused input: torch may say None where rustgrad has zeros, or the reverse
            other = b if a is None else a
            assert other is None or not np.any(other), f"second grad {k}: {a} vs {b}"
            continue
        np.testing.assert_allclose(b, a, rtol=1e-7, atol=1e-9, err_msg=f"second grad {k}")


def check_error(
    fn: Callable[..., Any],
    *specs: Any,
    phrase: Optional[str] = None,
    requires_grad: bool = False,
    seed: int = 0,
) -> None:
    arrs = arrays(specs, np.dtype(np.float64), -2.0, 2.0, seed)
    tin, rin = make_inputs(arrs, requires_grad)
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
    for k, (a, t, r) in enumerate(zip(arrs, tin, rin)):
        np.testing.assert_array_equal(np_of(t), a, err_msg=f"torch input {k} changed")
        np.testing.assert_array_equal(np_of(r), a, err_msg=f"rustgrad input {k} changed")
        assert r._version == t._version == 0, f"input {k}: version {r._version}, {t._version}"
        assert r.grad is None and t.grad is None


def grad_ok(fn: Callable[..., Any], *specs: Any, low: float = -2.0, high: float = 2.0,
            seed: int = 0) -> bool:
    arrs = arrays(specs, np.float64, low, high, seed)
    ins = tuple(rustgrad.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrs)
    return rustgrad.autograd.gradcheck(lambda *xs: fn(rustgrad, *xs), ins)
