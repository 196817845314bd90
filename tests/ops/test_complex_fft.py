"""Complex tensors as far as torch.fft needs them, and the transforms, against torch: the
complex64/complex128 dtypes (attributes, promotion, creation, repr), real/imag, conj, abs, angle,
view_as_real/view_as_complex, complex, polar, cfloat/cdouble, the arithmetic gradients under
torch's convention (conjugate Wirtinger), and every torch.fft transform (values, dtypes, n/s,
dim, norm, grad_fn names, gradients, gradcheck, double backward, errors), on every device.

Programs take real float inputs and build complex tensors with `complex(re, im)` where they need
them, so that gradients are compared on real leaves as well as on the complex intermediate."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check_error, grad_ok, oracle_for, rustgrad_on

_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-10), "complex64": (1e-4, 1e-5),
        "complex128": (1e-9, 1e-10)}


def _np(t: Any) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        t = t.resolve_conj()
    return np.asarray(t.detach().cpu().numpy())


def _same(t: Any, r: Any, what: str, scale: float = 1.0, device: str = "cpu") -> None:
    assert isinstance(r, rustgrad.Tensor), f"{what}: rustgrad gave {type(r).__name__}"
    assert str(r.dtype) == str(t.dtype), f"{what}: dtype {r.dtype} != torch's {t.dtype}"
    assert tuple(r.shape) == tuple(t.shape), f"{what}: shape {tuple(r.shape)} != {tuple(t.shape)}"
    assert r.device.type == device, f"{what}: on {r.device}"
    tv, rv = _np(t), _np(r)
    if tv.dtype.kind in "fc":
        rtol, atol = _TOL[tv.dtype.name]
        np.testing.assert_allclose(rv, tv, rtol=rtol * scale, atol=atol * scale, err_msg=what)
    else:
        np.testing.assert_array_equal(rv, tv, err_msg=what)


def _loss(lib: Any, y: Any) -> Any:
    """A real loss of y that reads both parts of a complex y, with weights per entry."""
    n = max(y.numel(), 1)
    w = np.linspace(0.3, 1.7, n).reshape(tuple(y.shape))
    w = lib.tensor(w, dtype=y.real.dtype if y.is_complex() else y.dtype)
    if y.is_complex():
        return (y.abs() * w).sum() + (y.real * w).sum() - (y.imag * w * w).sum()
    return (y * w).sum()


def run(fn: Callable[..., Any], *shapes: Sequence[int], device: str = "cpu",
        dtypes: Sequence[Any] = (np.float32, np.float64), seed: int = 0, backward: bool = True,
        grad_fn: bool = True, scale: float = 1.0) -> None:
    """fn(lib, *inputs) under torch and rustgrad on `device`: values, dtype, grad_fn name, and
    the gradients of the inputs for the real loss `_loss` of the output."""
    oracle = oracle_for(device)
    lib = rustgrad_on(device)
    for dt in dtypes:
        rng = np.random.default_rng(seed)
        arrays = [rng.uniform(-2, 2, size=tuple(s)).astype(dt) for s in shapes]
        tin = [oracle.tensor(a.copy(), requires_grad=backward) for a in arrays]
        rin = [rustgrad.tensor(a.copy(), device=device, requires_grad=backward) for a in arrays]
        t, r = fn(oracle, *tin), fn(lib, *rin)
        what = f"[{np.dtype(dt).name}]"
        _same(t, r, f"{what} output", scale, device)
        if grad_fn:
            tn = None if t.grad_fn is None else t.grad_fn.name()
            rn = None if r.grad_fn is None else r.grad_fn.name()
            assert rn == tn, f"{what}: grad_fn {rn} != torch's {tn}"
        if not backward:
            continue
        _loss(oracle, t).backward()
        _loss(lib, r).backward()
        for k, (a, b) in enumerate(zip(tin, rin)):
            assert (a.grad is None) == (b.grad is None), f"{what} grad {k}: None-ness differs"
            if a.grad is not None:
                _same(a.grad, b.grad, f"{what} grad of input {k}", scale * 10, device)


def C(lib: Any, a: Any, b: Any) -> Any:
    """The complex tensor a + i b."""
    return lib.complex(a, b)


# ---- dtypes --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["complex64", "complex128", "cfloat", "cdouble"])
def test_complex_dtypes_have_torchs_attributes(name):
    t, r = getattr(torch, name), getattr(rustgrad, name)
    assert repr(r) == repr(t)
    for attr in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
        assert getattr(r, attr) == getattr(t, attr), attr
    assert repr(r.to_real()) == repr(t.to_real())
    assert repr(r.to_complex()) == repr(t.to_complex())
    assert repr(rustgrad.float32.to_complex()) == repr(torch.float32.to_complex())


NAMES = ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64", "complex64",
         "complex128"]


@pytest.mark.parametrize("a", NAMES)
@pytest.mark.parametrize("b", ["complex64", "complex128"])
def test_complex_promotion_matches_torch(a, b):
    t = torch.promote_types(getattr(torch, a), getattr(torch, b))
    r = rustgrad.promote_types(getattr(rustgrad, a), getattr(rustgrad, b))
    assert repr(r) == repr(t)
    r = rustgrad.promote_types(getattr(rustgrad, b), getattr(rustgrad, a))
    assert repr(r) == repr(t)


@pytest.mark.parametrize("dt", ["int64", "float32", "float64", "complex64", "complex128"])
def test_result_type_with_complex_scalars_and_0d_tensors(dt):
    for default in ("float32", "float64"):
        torch.set_default_dtype(getattr(torch, default))
        rustgrad.set_default_dtype(getattr(rustgrad, default))
        try:
            for L in (torch, rustgrad):
                x = L.ones(2, dtype=getattr(L, dt))
                got = [L.result_type(x, 1j), L.result_type(x, L.tensor(1j, dtype=L.complex128)),
                       L.tensor([1 + 2j]).dtype, L.tensor(1j).dtype]
                if L is torch:
                    want = [repr(g) for g in got]
                else:
                    assert [repr(g) for g in got] == want, (dt, default)
        finally:
            torch.set_default_dtype(torch.float32)
            rustgrad.set_default_dtype(rustgrad.float32)


# ---- creation and repr ---------------------------------------------------------------------
CREATIONS = {
    "list": lambda L: L.tensor([1 + 2j, 3 - 1j]),
    "mixed": lambda L: L.tensor([[1, 2j], [0.5, -1.25 - 3j]]),
    "scalar": lambda L: L.tensor(2 - 1j),
    "cdouble": lambda L: L.tensor([1.5 + 2j, 3], dtype=L.complex128),
    "real_as_complex": lambda L: L.tensor([1.0, 2.5], dtype=L.cfloat),
    "numpy": lambda L: L.from_numpy(np.array([1 + 1j, 1e-5 + 300j], dtype=np.complex64)),
    "numpy128": lambda L: L.tensor(np.array([[1e10j, 0.1 + 0.2j]])),
    "zeros": lambda L: L.zeros(3, dtype=L.cfloat),
    "ones_cdouble": lambda L: L.ones(2, 2, dtype=L.cdouble),
    "to": lambda L: L.arange(3.0).to(L.complex64),
    "cfloat": lambda L: L.arange(3.0).cfloat(),
    "cdouble_method": lambda L: L.tensor([1.0, -2.0]).cdouble(),
    "empty": lambda L: L.zeros(0, dtype=L.cfloat),
    "special_values": lambda L: L.tensor([complex(float("nan"), -0.0), complex(float("inf"), 1)]),
    "long": lambda L: L.from_numpy(np.exp(1j * np.arange(30.0)).astype(np.complex64)),
    "requires_grad": lambda L: L.tensor([1 + 1j], requires_grad=True) * 2,
}


@pytest.mark.parametrize("name", sorted(CREATIONS))
def test_complex_creation_and_repr_match_torch(name, device):
    t = CREATIONS[name](torch)
    r = CREATIONS[name](rustgrad)
    _same(t, r, name)
    assert repr(r) == repr(t)
    assert r.is_complex() and t.is_complex()
    if device != "cpu":
        moved = r.to(device)
        assert moved.dtype == r.dtype and moved.device.type == device
        np.testing.assert_array_equal(_np(moved), _np(r))


def test_complex_repr_follows_the_default_dtype():
    torch.set_default_dtype(torch.float64)
    rustgrad.set_default_dtype(rustgrad.float64)
    try:
        for f in (lambda L: L.tensor([1 + 1j]), lambda L: L.tensor([1 + 1j], dtype=L.cfloat)):
            assert repr(f(rustgrad)) == repr(f(torch))
            assert str(f(rustgrad).dtype) == str(f(torch).dtype)
    finally:
        torch.set_default_dtype(torch.float32)
        rustgrad.set_default_dtype(rustgrad.float32)


@pytest.mark.parametrize("case", ["float", "int", "view_as_complex_int", "view_as_complex_shape",
                                  "view_as_real_real", "complex_mixed", "complex_int",
                                  "polar_mixed", "inplace_into_real"])
def test_complex_creation_errors_match_torch(case, device):
    fns = {
        "float": lambda L: L.tensor([1 + 2j, 3], dtype=L.float32),
        "int": lambda L: L.tensor([[1, 2j]], dtype=L.int64),
        "view_as_complex_int": lambda L: L.view_as_complex(L.ones(2, dtype=L.int64)),
        "view_as_complex_shape": lambda L: L.view_as_complex(L.ones(2, 3)),
        "view_as_real_real": lambda L: L.view_as_real(L.ones(2)),
        "complex_mixed": lambda L: L.complex(L.ones(2), L.ones(2, dtype=L.float64)),
        "complex_int": lambda L: L.complex(L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64)),
        "polar_mixed": lambda L: L.polar(L.ones(2), L.ones(2, dtype=L.float64)),
        "inplace_into_real": lambda L: L.ones(2).add_(L.tensor([1 + 1j])),
    }
    check_error(lambda L: fns[case](L), device=device)


# ---- the complex API: values, grad_fn names and gradients ------------------------------------
PROGRAMS = {
    "real": lambda L, a, b: C(L, a, b).real * 2,
    "imag": lambda L, a, b: C(L, a, b).imag * 3,
    "conj": lambda L, a, b: C(L, a, b).conj() * C(L, b, a),
    "conj_physical": lambda L, a, b: L.conj_physical(C(L, a, b)) * a,
    "abs": lambda L, a, b: C(L, a, b).abs(),
    "abs_function": lambda L, a, b: L.abs(C(L, a, b) * b),
    "angle": lambda L, a, b: C(L, a, b).angle(),
    "view_as_real": lambda L, a, b: L.view_as_real(C(L, a, b)),
    "view_as_complex": lambda L, a, b: L.view_as_complex(L.stack([a, b], -1)),
    "complex": lambda L, a, b: L.complex(a, b),
    "polar": lambda L, a, b: L.polar(a.abs(), b),
    "cfloat": lambda L, a, b: (a.cdouble() if a.dtype == L.float64 else a.cfloat()) * C(L, b, a),
    "mul": lambda L, a, b: C(L, a, b) * C(L, b, a * a),
    "mul_real": lambda L, a, b: C(L, a, b) * b,
    "div": lambda L, a, b: C(L, a, b) / C(L, b + 3, a),
    "div_real": lambda L, a, b: a / C(L, b + 3, a) + C(L, a, b) / (b + 3),
    "add_sub_neg": lambda L, a, b: -(C(L, a, b) + a - C(L, b, b)),
    "sum": lambda L, a, b: C(L, a, b).sum(0) * C(L, b, a).sum(),
    "mean": lambda L, a, b: C(L, a, b).mean() * C(L, b, a),
    "broadcast": lambda L, a, b: C(L, a, b) * C(L, b[:1], a[:1]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_complex_api_values_and_gradients_match_torch(name, device):
    run(PROGRAMS[name], (3, 4), (3, 4), device=device)


def test_real_and_imag_are_views_of_the_complex_tensor(device):
    for L in (torch, rustgrad_on(device)):
        z = L.tensor([1 + 2j, 3 - 1j])
        z.real[0] = 7.0
        z.imag[1] = 5.0
        z.real.mul_(2)
        assert z.tolist() == [14 + 2j, 6 + 5j]
        assert z._version == 3 and z.real._base is z and z.imag._base is z


@pytest.mark.parametrize("part", ["real", "imag"])
def test_real_and_imag_views_follow_writes_to_their_base(part, device):
    oracle, lib = oracle_for(device), rustgrad_on(device)
    out = []
    for L in (oracle, lib):
        z = L.tensor([1 + 2j, 3 - 1j, 0.5 + 0.5j], requires_grad=True)
        y = z * (2 + 1j)
        r = getattr(y, part)
        y.mul_(L.tensor([2.0, 1j, 3.0]))  # r's history is remade over y's new one
        (r * L.tensor([1.0, 2.0, 3.0])).sum().backward()
        out.append((r, z.grad, r.grad_fn.name()))
    (rt, gt, nt), (rr, gr, nr) = out
    _same(rt, rr, "part", device=device)
    _same(gt, gr, "grad", device=device)
    assert nr == nt == "AsStridedBackward0"


def test_in_place_writes_through_a_part_under_autograd_are_refused_clearly():
    z = rustgrad.tensor([1 + 2j], requires_grad=True)
    y = z * 2
    with pytest.raises(RuntimeError, match="another item size"):
        y.real.mul_(3)


def test_complex_gradients_pass_gradcheck():
    assert grad_ok(lambda L, a, b: (C(L, a, b) * C(L, b, a)).abs(), (3,), (3,))
    assert grad_ok(lambda L, a, b: (C(L, a, b) / C(L, b, a + 3)).angle(), (3,), (3,))
    assert grad_ok(lambda L, a, b: L.view_as_real(L.polar(a.abs() + 0.5, b).conj()), (4,), (4,))


@pytest.mark.parametrize("name", ["mH", "adjoint"])
def test_conjugate_transposes_conjugate_complex_tensors(name):
    run(lambda L, a, b: getattr(C(L, a, b), name)() if name == "adjoint" else C(L, a, b).mH,
        (2, 3), (2, 3))


REFUSED_FORWARD = {
    "sin": lambda z: z.sin(),
    "sigmoid": lambda z: z.sigmoid(),
    "logsumexp": lambda z: z.logsumexp(0),
}
# forward values as torch's; the derivative (which would need conjugates) is refused
REFUSED_BACKWARD = {
    "exp": lambda z: z.exp(),
    "log": lambda z: z.log(),
    "sqrt": lambda z: z.sqrt(),
    "pow": lambda z: z ** 2,
    "reciprocal": lambda z: z.reciprocal(),
    "tanh": lambda z: z.tanh(),
    "matmul": lambda z: z @ z,
    "prod": lambda z: z.prod(),
    "einsum": lambda z: rustgrad.einsum("ij,jk->ik", z, z) if isinstance(z, rustgrad.Tensor)
    else torch.einsum("ij,jk->ik", z, z),
}


@pytest.mark.parametrize("name", sorted(REFUSED_FORWARD))
def test_complex_ops_without_a_complex_form_refuse_clearly(name):
    z = rustgrad.tensor([[1 + 1j, 2 - 1j], [0.5j, 3]])
    with pytest.raises(NotImplementedError, match=f"{name} does not support complex tensors"):
        REFUSED_FORWARD[name](z)


@pytest.mark.parametrize("name", sorted(REFUSED_BACKWARD))
def test_complex_derivatives_not_written_yet_are_refused(name):
    data = np.array([[1 + 1j, 2 - 1j], [0.5j, 3]])
    t = REFUSED_BACKWARD[name](torch.tensor(data))
    z = rustgrad.tensor(data, requires_grad=True)
    r = REFUSED_BACKWARD[name](z)
    _same(t, r, name)
    with pytest.raises(NotImplementedError, match="for complex tensors is not implemented"):
        r.abs().sum().backward()
    assert z.grad is None


# ---- torch.fft -----------------------------------------------------------------------------
NORMS = [None, "backward", "ortho", "forward"]
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}


def _transform(name: str, complex_input: bool, **kw: Any) -> Callable[..., Any]:
    def program(L: Any, a: Any, b: Any) -> Any:
        x = C(L, a, b) if complex_input else a * b
        return getattr(L.fft, name)(x, **kw)

    return program


def _inputs(names: Sequence[str]) -> list:
    """(transform, complex_input) pairs: the real-input transforms take real input only."""
    return [(n, c) for n in names for c in (False, True) if not (c and n in REAL_ONLY)]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 5, 8, 11])
@pytest.mark.parametrize("name, complex_input", _inputs(ONE_D))
def test_one_dim_transforms_match_torch(name, complex_input, n, norm, device):
    run(_transform(name, complex_input, n=n, norm=norm), (6, 7), (6, 7), device=device)
    run(_transform(name, complex_input, n=n, dim=0, norm=norm), (6, 7), (6, 7), device=device)


ND = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn",
      "hfftn", "ihfftn"]
ND_ARGS = [{}, {"s": (4, 5)}, {"dim": (0, 2)}, {"s": (3, 6), "dim": (2, 0)},
           {"s": (-1, 5), "dim": (1, 2)}, {"s": (5,)}, {"dim": (1,)}]


# the 2-d transforms' default dims are two: a one-entry s without dim is an error, tested as one
ND_CASES = [(name, complex_input, kw) for name, complex_input in _inputs(ND) for kw in ND_ARGS
            if not (name.endswith("2") and "dim" not in kw and len(kw.get("s", (0, 0))) != 2)]


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("name, complex_input, kw", ND_CASES, ids=str)
def test_n_dim_transforms_match_torch(name, complex_input, kw, norm, device):
    run(_transform(name, complex_input, norm=norm, **kw), (4, 5, 6), (4, 5, 6), device=device)


FILTERS = {
    "rfft_abs": lambda L, a, b: L.fft.rfft(a).abs().sum(-1),
    "lowpass": lambda L, a, b: L.fft.irfft(L.fft.rfft(a) * C(L, b, b * 0)[..., :5], n=8),
    "complex_filter": lambda L, a, b: L.fft.irfft(L.fft.rfft(a, norm="ortho") * L.fft.rfft(b),
                                                  n=8, norm="ortho"),
    "power_spectrum": lambda L, a, b: (L.fft.fft2(a * b) * L.fft.fft2(a).conj()).real,
    "roundtrip": lambda L, a, b: L.fft.ifftn(L.fft.fftn(C(L, a, b), dim=(0, 1))).imag,
    "shifted": lambda L, a, b: L.fft.fftshift(L.fft.fft(a, dim=0), dim=0).angle(),
    "int_input": lambda L, a, b: L.fft.rfft((a * 3).long()).abs() * b[..., :5],
}


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_fft_programs_match_torch(name, device):
    # an integer signal is transformed in the default float32, whatever b's dtype
    dtypes = (np.float32,) if name == "int_input" else (np.float32, np.float64)
    run(FILTERS[name], (3, 8), (3, 8), device=device, dtypes=dtypes)


def test_transform_dtypes_follow_torch(device):
    lib = rustgrad_on(device)
    for L in (torch, lib):
        got = [L.fft.fft(L.arange(4)).dtype, L.fft.rfft(L.ones(4, dtype=L.float64)).dtype,
               L.fft.irfft(L.ones(3, dtype=L.complex64)).dtype, L.fft.irfft(L.ones(3)).dtype,
               L.fft.hfft(L.ones(3, dtype=L.float64)).dtype, L.fft.ifft(L.ones(2, dtype=L.bool)).dtype]
        if L is torch:
            want = [repr(d) for d in got]
        else:
            assert [repr(d) for d in got] == want


@pytest.mark.parametrize("program", [
    lambda L, a, b: L.fft.fft(C(L, a, b), n=6, norm="ortho").abs(),
    lambda L, a, b: L.fft.rfft(a * b, n=7).abs(),
    lambda L, a, b: L.fft.irfft(C(L, a, b), n=7),
    lambda L, a, b: L.fft.irfft(C(L, a, b)),
    lambda L, a, b: L.fft.hfft(C(L, a, b), norm="forward"),
    lambda L, a, b: L.view_as_real(L.fft.ihfft(a * b)),
    lambda L, a, b: L.fft.irfft2(C(L, a, b).reshape(2, 3)),
    lambda L, a, b: L.fft.hfftn(C(L, a, b).reshape(2, 3), s=(3, 5)),
    lambda L, a, b: L.view_as_real(L.fft.ihfftn(a.reshape(2, 3) - b.reshape(2, 3))),
    lambda L, a, b: L.view_as_real(L.fft.ifft(a + b)),
])
def test_transforms_pass_gradcheck(program):
    assert grad_ok(program, (6,), (6,))


def test_transforms_pass_gradgradcheck():
    rng = np.random.default_rng(5)
    a, b = (rustgrad.tensor(rng.uniform(-2, 2, 6), requires_grad=True) for _ in range(2))
    for f in (lambda a, b: rustgrad.fft.rfft(a * b, n=8).abs(),
              lambda a, b: rustgrad.fft.hfft(rustgrad.complex(a, b), n=9, norm="ortho"),
              lambda a, b: rustgrad.view_as_real(rustgrad.fft.ihfftn(a.reshape(2, 3) * b.reshape(2, 3),
                                                                    s=(3, 5))),
              lambda a, b: rustgrad.fft.irfftn(rustgrad.complex(a, b).reshape(2, 3), s=(3, 4)),
              lambda a, b: (rustgrad.complex(a, b) * rustgrad.complex(b, a)).angle()):
        assert rustgrad.autograd.gradgradcheck(f, (a, b))


@pytest.mark.parametrize("program", [
    lambda L, a, b: L.fft.rfft(a * b).abs() ** 2,
    lambda L, a, b: L.fft.irfft(L.fft.rfft(a) * L.fft.rfft(b)),
    lambda L, a, b: (L.fft.fft(L.complex(a, b)) * L.fft.fft(L.complex(b, a))).real,
])
def test_transforms_double_backward_matches_torch(program, device):
    oracle, lib = oracle_for(device), rustgrad_on(device)
    rng = np.random.default_rng(3)
    arrays = [rng.uniform(-2, 2, size=6) for _ in range(2)]
    grads = []
    for L in (oracle, lib):
        ins = [L.tensor(a, requires_grad=True) for a in arrays]
        out = program(L, *ins)
        first = L.autograd.grad(out.sum(), ins, create_graph=True)
        second = L.autograd.grad(sum((g * g).sum() for g in first), ins)
        grads.append([*first, *second])
    for k, (t, r) in enumerate(zip(*grads)):
        _same(t, r, f"grad {k}", device=device)


FFT_ERRORS = {
    "half": lambda L: L.fft.fft(L.ones(4, dtype=L.half)),
    "norm": lambda L: L.fft.fft(L.ones(4), norm="bad"),
    "n0": lambda L: L.fft.fft(L.ones(4), n=0),
    "n_negative": lambda L: L.fft.rfft(L.ones(2, 3), n=-1),
    "dim": lambda L: L.fft.fft(L.ones(4), dim=2),
    "rfft_complex": lambda L: L.fft.rfft(L.ones(4, dtype=L.cfloat)),
    "ihfft_complex": lambda L: L.fft.ihfft(L.ones(4, dtype=L.cfloat)),
    "irfft_one": lambda L: L.fft.irfft(L.ones(1)),
    "fft2_1d": lambda L: L.fft.fft2(L.ones(4)),
    "s_dim_lengths": lambda L: L.fft.fftn(L.ones(4, 4), s=(2,), dim=(0, 1)),
    "s_too_long": lambda L: L.fft.fftn(L.ones(4), s=(2, 2)),
    "scalar": lambda L: L.fft.fft(L.tensor(1.0)),
    "dims_unique": lambda L: L.fft.fftn(L.ones(4, 4), dim=(0, 0)),
    "empty": lambda L: L.fft.fft(L.ones(0)),
    "no_axis": lambda L: L.fft.rfftn(L.ones(3), dim=()),
    "not_a_tensor": lambda L: L.fft.fft([1.0, 2.0]),
}


@pytest.mark.parametrize("case", sorted(FFT_ERRORS))
def test_fft_errors_match_torch(case, device):
    check_error(lambda L: FFT_ERRORS[case](L), device=device)


def test_every_transform_is_bound():
    for name in ONE_D + ND:
        assert callable(getattr(rustgrad.fft, name)), name
        assert name in rustgrad.fft.__all__


def test_complex_tensors_round_trip_and_load_from_torch_checkpoints(tmp_path):
    import io

    buf = io.BytesIO()
    torch.save({"a": torch.tensor([1 + 2j], dtype=torch.cdouble),
                "b": torch.tensor([[1 + 1j, 2], [3j, -4]]).t()}, buf)
    buf.seek(0)
    loaded = rustgrad.load(buf)
    assert loaded["a"].dtype == rustgrad.complex128 and loaded["a"].tolist() == [1 + 2j]
    assert loaded["b"].tolist() == [[1 + 1j, 3j], [2, -4]]
    rustgrad.save(loaded, tmp_path / "c.pt")
    again = rustgrad.load(tmp_path / "c.pt")
    assert again["b"].dtype == rustgrad.complex64 and again["b"].tolist() == loaded["b"].tolist()


@pytest.mark.parametrize("program", [
    lambda L, z: L.fft.fft(z, n=9, norm="ortho"),
    lambda L, z: L.fft.ifft2(z),
    lambda L, z: L.fft.irfft(z, n=11),
    lambda L, z: L.fft.hfftn(z, s=(3, 6)),
    lambda L, z: (z * (0.5 - 2j) - 1j / (z + 3)).conj() * z.abs(),
    lambda L, z: L.fft.fftn(z.mT, dim=0).angle(),
], ids=["fft", "ifft2", "irfft", "hfftn", "arith", "strided_fftn"])
def test_complex_leaves_get_torchs_gradients(program, device):
    oracle, lib = oracle_for(device), rustgrad_on(device)
    rng = np.random.default_rng(7)
    data = rng.uniform(-2, 2, (4, 5)) + 1j * rng.uniform(-2, 2, (4, 5))
    for dt in (np.complex64, np.complex128):
        res = []
        for L in (oracle, lib):
            z = L.tensor(data.astype(dt), requires_grad=True)
            y = program(L, z)
            _loss(L, y).backward()
            res.append((y, z.grad))
        (yt, gt), (yr, gr) = res
        _same(yt, yr, f"[{np.dtype(dt).name}] output", device=device)
        _same(gt, gr, f"[{np.dtype(dt).name}] grad", 10.0, device=device)
