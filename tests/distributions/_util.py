"""Building the same distribution under torch (the oracle, on the CPU) and rustgrad (on the
device under test) and comparing what they compute."""

from __future__ import annotations

from typing import Any, Dict, Tuple

import numpy as np
import rustgrad
import rustgrad.distributions as RD
import torch
import torch.distributions as TD

from ._cases import PROPERTIES, QUANTILES, VALUE_METHODS, Case

TOL = {np.dtype(np.float64): (1e-9, 1e-11), np.dtype(np.float32): (2e-5, 2e-6)}
# torch computes the incomplete gamma function (Gamma.cdf) to about 1e-9 (rustgrad to 1e-14);
# the gradients of the special functions (trigamma, from SciPy here) agree to about 1e-9
LOOSE = {"Gamma.cdf", "Chi2.cdf"}


def tensors(lib: Any, arrays: Dict[str, np.ndarray], dtype: Any, device: str,
            no_grad: Tuple[str, ...] = ()) -> Dict[str, Any]:
    """Tensors of `lib` from float arrays, in `dtype`, float ones requiring grad."""
    out = {}
    for k, a in arrays.items():
        kw: Dict[str, Any] = {"dtype": getattr(lib, np.dtype(dtype).name)}
        if lib is rustgrad:
            kw["device"] = device
        out[k] = lib.tensor(np.asarray(a, dtype=dtype), requires_grad=k not in no_grad, **kw)
    return out


def value(lib: Any, array: np.ndarray, dtype: Any, device: str) -> Any:
    kw: Dict[str, Any] = {"dtype": getattr(lib, np.dtype(dtype).name)}
    if lib is rustgrad:
        kw["device"] = device
    return lib.tensor(np.asarray(array, dtype=dtype), **kw)


def evaluate(lib: Any, case: Case, dtype: Any, device: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(params, results): every method and property of the case's distribution, each a tensor
    or the name of the exception it raised."""
    D = TD if lib is torch else RD
    params = tensors(lib, case.params, dtype, device, case.no_grad)
    dist = case.make(D, **params)
    results: Dict[str, Any] = {"batch_shape": tuple(dist.batch_shape), "event_shape": tuple(dist.event_shape)}
    v = value(lib, case.value, np.int64 if case.int_value else dtype, device)
    for name in VALUE_METHODS:
        results[name] = _call(lambda n=name: getattr(dist, n)(v))
    if case.icdf:
        results["icdf"] = _call(lambda: dist.icdf(value(lib, QUANTILES, dtype, device)))
    if case.entropy:
        results["entropy"] = _call(dist.entropy)
    for name in PROPERTIES:
        results[name] = _call(lambda n=name: getattr(dist, n))
    return params, results


def _call(fn: Any) -> Any:
    try:
        return fn()
    except NotImplementedError:
        return "NotImplementedError"


def weights(t: Any, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, size=tuple(t.shape))


def compare(expected: Any, got: Any, what: str, dtype: Any, device: str, loose: bool = False) -> None:
    """torch's tensor (or exception name) against rustgrad's: dtype, shape, device, values."""
    if isinstance(expected, str) or isinstance(got, str):
        assert expected == got, f"{what}: rustgrad {got!r}, torch {expected!r}"
        return
    assert isinstance(got, rustgrad.Tensor), f"{what}: rustgrad gave {type(got).__name__}"
    assert str(got.dtype) == str(expected.dtype), f"{what}: dtype {got.dtype} vs {expected.dtype}"
    assert tuple(got.shape) == tuple(expected.shape), f"{what}: shape {tuple(got.shape)} vs {tuple(expected.shape)}"
    assert got.device.type == rustgrad.device(device).type, f"{what}: on {got.device}"
    e = expected.detach().numpy()
    g = got.detach().cpu().numpy()
    if e.dtype.kind == "f":
        rtol, atol = TOL[np.dtype(dtype)]
        if loose or what in LOOSE:
            rtol, atol = max(rtol, 1e-8), max(atol, 1e-9)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, e, err_msg=what)


def backward_both(touts: Dict[str, Any], routs: Dict[str, Any], device: str, skip: Tuple[str, ...] = ()) -> bool:
    """Back-propagates the same weighted sum of every differentiable output (but those named in
    skip) under both libraries; False when nothing is differentiable."""
    tl, rl = [], []
    for k, name in enumerate(touts):
        t, r = touts[name], routs[name]
        if name in skip:
            continue
        if isinstance(t, torch.Tensor) and t.requires_grad and t.dtype.is_floating_point:
            w = weights(t, k)
            finite = np.isfinite(t.detach().numpy())
            w = np.where(finite, w, 0.0)
            tt = torch.where(torch.tensor(finite), t, torch.zeros_like(t))
            rr = rustgrad.where(rustgrad.tensor(finite, device=device), r, rustgrad.zeros_like(r))
            tl.append((tt * torch.tensor(w, dtype=t.dtype)).sum())
            rl.append((rr * rustgrad.tensor(w, dtype=r.dtype, device=device)).sum())
    if not tl:
        return False
    sum(tl).backward()
    sum(rl).backward()
    return True
