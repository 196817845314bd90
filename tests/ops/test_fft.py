"""torch.fft's real-valued helpers against torch: fftfreq, rfftfreq, fftshift and ifftshift
(values, dtypes, devices, gradients, grad_fn names, errors). The transforms are tested in
test_complex_fft.py."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import assert_same_tensor, check, check_error, grad_ok, rustgrad_on

FREQ = [
    ("fftfreq", (5,), {}),
    ("fftfreq", (4,), {"d": 0.5}),
    ("fftfreq", (1,), {}),
    ("fftfreq", (0,), {}),
    ("fftfreq", (6, 2.0), {"dtype": "float64"}),
    ("fftfreq", (3,), {"d": 0.0}),
    ("rfftfreq", (5,), {}),
    ("rfftfreq", (6,), {"d": 2.0}),
    ("rfftfreq", (1,), {"dtype": "float64"}),
    ("rfftfreq", (0,), {}),
    ("rfftfreq", (-1,), {}),
    ("rfftfreq", (-3,), {}),
    ("fftfreq", (2,), {"d": -0.0}),
]


@pytest.mark.parametrize("name, args, kwargs", FREQ, ids=str)
def test_frequencies_match_torch(name, args, kwargs, device):
    lib = rustgrad_on(device)
    kw = dict(kwargs)
    if "dtype" in kw:
        kw["dtype"] = getattr(torch, kw["dtype"])
    t = getattr(torch.fft, name)(*args, **kw)
    if "dtype" in kw:
        kw["dtype"] = getattr(rustgrad, kwargs["dtype"])
    r = getattr(lib.fft, name)(*args, **kw, **({"device": device} if device != "cpu" else {}))
    assert_same_tensor(t, r, name, device=device.split(":")[0])


def test_frequencies_follow_the_default_dtype_and_make_leaves(device):
    kw = {} if device == "cpu" else {"device": device}
    r = rustgrad.fft.fftfreq(4, requires_grad=True, **kw)
    t = torch.fft.fftfreq(4, requires_grad=True)
    assert r.is_leaf and r.requires_grad and r.grad_fn is None and t.is_leaf and t.requires_grad
    (r * r).sum().backward()
    np.testing.assert_allclose(r.grad.cpu().numpy(), 2 * r.detach().cpu().numpy())
    rustgrad.set_default_dtype(rustgrad.float64)
    try:
        assert rustgrad.fft.rfftfreq(3, **kw).dtype == rustgrad.float64
    finally:
        rustgrad.set_default_dtype(rustgrad.float32)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequency_errors_match_torch(name):
    for lib in (torch, rustgrad):
        with pytest.raises(RuntimeError, match=f"{name} requires a floating point or complex dtype"):
            getattr(lib.fft, name)(4, dtype=lib.int64)
        with pytest.raises(RuntimeError, match="Trying to create tensor with negative dimension -1"):
            getattr(lib.fft, name)(-1 if name == "fftfreq" else -4)


SHIFTS = {
    "fftshift_1d_odd": (lambda lib, a: lib.fft.fftshift(a), (5,)),
    "fftshift_1d_even": (lambda lib, a: lib.fft.fftshift(a), (6,)),
    "fftshift_all_dims": (lambda lib, a: lib.fft.fftshift(a), (3, 4, 5)),
    "fftshift_one_dim": (lambda lib, a: lib.fft.fftshift(a, dim=-1), (3, 5)),
    "fftshift_dims": (lambda lib, a: lib.fft.fftshift(a, dim=(0, 2)), (3, 4, 5)),
    "ifftshift_1d_odd": (lambda lib, a: lib.fft.ifftshift(a), (5,)),
    "ifftshift_dims": (lambda lib, a: lib.fft.ifftshift(a, dim=[1]), (3, 5)),
    "round_trip": (lambda lib, a: lib.fft.ifftshift(lib.fft.fftshift(a, dim=(0, 1)), dim=(0, 1)), (3, 5)),
    "empty": (lambda lib, a: lib.fft.fftshift(a), (0, 3)),
}


@pytest.mark.parametrize("case", sorted(SHIFTS))
def test_shifts_match_torch(case, device):
    fn, shape = SHIFTS[case]
    check(fn, shape, device=device)


def test_shifts_of_integers_match_torch(device):
    check(lambda lib, a: (lib.fft.fftshift(a), lib.fft.ifftshift(a, dim=0)),
          np.arange(12, dtype=np.int64).reshape(3, 4), dtypes=(None,), device=device)


@pytest.mark.parametrize("fn, spec", [
    (lambda lib, a: lib.fft.fftshift(a), np.array(3.0)),
    (lambda lib, a: lib.fft.fftshift(a, dim=2), (4,)),
    (lambda lib, a: lib.fft.ifftshift(a, dim=(0, -3)), (2, 2)),
])
def test_shift_errors_match_torch(fn, spec, device):
    check_error(fn, spec, device=device)


def test_shift_gradcheck_passes():
    assert grad_ok(lambda lib, a: lib.fft.fftshift(a, dim=(0, 1)) * a, (3, 4))
    assert grad_ok(lambda lib, a: lib.fft.ifftshift(a) ** 2, (5,))


def test_transforms_are_bound_and_unknown_names_say_so():
    # the transforms themselves are tested in test_complex_fft.py
    for name in ("fft", "ifft", "rfft", "irfft", "fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2",
                 "rfft2", "irfft2", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"):
        assert hasattr(torch.fft, name)
        assert callable(getattr(rustgrad.fft, name)), name
    with pytest.raises(AttributeError, match="module 'rustgrad.fft' has no attribute 'nope'"):
        rustgrad.fft.nope  # noqa: B018


def test_every_fft_name_is_torchs_and_bound_to_its_op():
    from rustgrad import _bind

    declared = {n: d for d in _bind.declared() for n in d.fft}
    public = {n for n in dir(torch.fft) if not n.startswith("_") and callable(getattr(torch.fft, n))}
    assert set(declared) == public - {"Tensor"}, set(declared) ^ public
    for name, d in declared.items():
        assert getattr(rustgrad.fft, name) is d.fn and hasattr(torch.fft, name)
        assert name in rustgrad.fft.__all__
