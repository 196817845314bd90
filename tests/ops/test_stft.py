"""torch.stft / torch.istft (and Tensor.stft / Tensor.istft) against torch, on every device:
values, dtypes and shapes (float32/float64 signals, 1-d and batched 2-d, real and complex,
windows shorter than n_fft, every pad mode, normalized, one- and two-sided, the deprecated real
output), the grad_fn names of the composed graph, gradients of real losses (of the signal and of
the window), gradcheck in float64, the istft(stft(x)) round trip, and torch's errors."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import check_double_backward, check_error, oracle_for, rustgrad_on

_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-10), "complex64": (1e-4, 1e-5),
        "complex128": (1e-9, 1e-10)}


@pytest.fixture(autouse=True)
def _quiet():
    """stft's once-per-process warnings (no window, return_complex=False) are not under test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def _np(t: Any) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        t = t.resolve_conj()
    return np.asarray(t.detach().cpu().numpy())


def _same(t: Any, r: Any, what: str, device: str, scale: float = 1.0) -> None:
    assert isinstance(r, rustgrad.Tensor), f"{what}: rustgrad gave {type(r).__name__}"
    assert str(r.dtype) == str(t.dtype), f"{what}: dtype {r.dtype} != torch's {t.dtype}"
    assert tuple(r.shape) == tuple(t.shape), f"{what}: shape {tuple(r.shape)} != {tuple(t.shape)}"
    assert r.device.type == device, f"{what}: on {r.device}"
    rtol, atol = _TOL[str(t.dtype).replace("torch.", "")]
    np.testing.assert_allclose(_np(r), _np(t), rtol=rtol * scale, atol=atol * scale, err_msg=what)


def _loss(lib: Any, y: Any) -> Any:
    """A real loss of y with weights per entry that reads both parts of a complex y."""
    w = np.linspace(0.3, 1.7, max(y.numel(), 1)).reshape(tuple(y.shape))
    mod = torch if isinstance(y, torch.Tensor) else rustgrad
    w = mod.tensor(w, dtype=y.real.dtype if y.is_complex() else y.dtype, device=y.device)
    if y.is_complex():
        return (y.abs() * w).sum() + (y.real * w).sum() - (y.imag * w * w).sum()
    return (y * w).sum()


def run(fn: Callable[..., Any], *shapes: Sequence[int], device: str,
        dtypes: Sequence[Any] = (np.float32, np.float64), seed: int = 0) -> None:
    """fn(lib, *inputs) under torch and rustgrad on `device`: values, dtype, shape, grad_fn
    name, and the gradients of every input for the real loss `_loss` of the output."""
    oracle = oracle_for(device)
    lib = rustgrad_on(device)
    for dt in dtypes:
        rng = np.random.default_rng(seed)
        arrays = [rng.uniform(-2, 2, size=tuple(s)).astype(dt) for s in shapes]
        tin = [oracle.tensor(a.copy(), requires_grad=True) for a in arrays]
        rin = [rustgrad.tensor(a.copy(), device=device, requires_grad=True) for a in arrays]
        t, r = fn(oracle, *tin), fn(lib, *rin)
        what = f"[{np.dtype(dt).name}]"
        _same(t, r, f"{what} output", device)
        tn = None if t.grad_fn is None else t.grad_fn.name()
        rn = None if r.grad_fn is None else r.grad_fn.name()
        assert rn == tn, f"{what}: grad_fn {rn} != torch's {tn}"
        _loss(oracle, t).backward()
        _loss(lib, r).backward()
        for k, (a, b) in enumerate(zip(tin, rin)):
            assert (a.grad is None) == (b.grad is None), f"{what} grad {k}: None-ness differs"
            if a.grad is not None:
                _same(a.grad, b.grad, f"{what} grad of input {k}", device, 10)


def _hann(L: Any, n: int, like: Any) -> Any:
    return L.hann_window(n, dtype=like.dtype.to_real(), device=like.device)


# ---- stft ------------------------------------------------------------------------------------
# programs of a (2, 40) signal x and, where they take one, an 8-entry window w
STFT = {
    "rectangular": lambda L, x: L.stft(x, 8, return_complex=True),
    "hann": lambda L, x: L.stft(x, 8, window=_hann(L, 8, x), return_complex=True),
    "one_d": lambda L, x: L.stft(x[1], 8, window=_hann(L, 8, x), return_complex=True),
    "hop_3": lambda L, x: L.stft(x, 8, hop_length=3, window=_hann(L, 8, x), return_complex=True),
    "not_centered": lambda L, x: L.stft(x, 8, hop_length=3, center=False, return_complex=True),
    "not_centered_1d": lambda L, x: L.stft(x[0], 10, hop_length=4, center=False,
                                           return_complex=True),
    "constant_pad": lambda L, x: L.stft(x, 8, pad_mode="constant", return_complex=True),
    "replicate_pad": lambda L, x: L.stft(x, 8, pad_mode="replicate", return_complex=True),
    "circular_pad": lambda L, x: L.stft(x, 8, pad_mode="circular", return_complex=True),
    "normalized": lambda L, x: L.stft(x, 8, window=_hann(L, 8, x), normalized=True,
                                      return_complex=True),
    "two_sided": lambda L, x: L.stft(x, 8, window=_hann(L, 8, x), onesided=False,
                                     return_complex=True),
    "odd_n_fft": lambda L, x: L.stft(x, 7, hop_length=2, window=_hann(L, 7, x),
                                     return_complex=True),
    "short_window": lambda L, x: L.stft(x, 8, win_length=5, window=_hann(L, 5, x),
                                        return_complex=True),
    "short_rectangular": lambda L, x: L.stft(x, 8, win_length=6, return_complex=True),
    "align_to_window": lambda L, x: L.stft(x, 8, win_length=5, center=False,
                                           align_to_window=True, return_complex=True),
    "real_output": lambda L, x: L.stft(x, 8, window=_hann(L, 8, x), return_complex=False),
    "real_output_1d": lambda L, x: L.stft(x[0], 8, return_complex=False),
    "complex_input": lambda L, x: L.stft(L.complex(x, x.flip(-1)), 8, window=_hann(L, 8, x)),
    "complex_input_1d": lambda L, x: L.stft(L.complex(x[0], x[1]), 6, hop_length=2,
                                            return_complex=True),
    "complex_window": lambda L, x: L.stft(x, 8, window=_hann(L, 8, x).to(x.dtype.to_complex())),
    "n_fft_is_length": lambda L, x: L.stft(x, 40, center=False, return_complex=True),
    "strided_input": lambda L, x: L.stft(x.t().contiguous().t()[:, 3:], 8, center=False,
                                         return_complex=True),
    "strided_input_1d": lambda L, x: L.stft(x[1, ::2], 4, hop_length=1, return_complex=True),
    "method": lambda L, x: x.stft(8, 2, window=_hann(L, 8, x), return_complex=True),
    "positional": lambda L, x: L.stft(x, 8, 2, 8, _hann(L, 8, x), True, "reflect", False, True,
                                      True),
    "abs_sum": lambda L, x: L.stft(x, 8, window=_hann(L, 8, x), return_complex=True).abs().sum(),
}


@pytest.mark.parametrize("name", sorted(STFT))
def test_stft_matches_torch(name, device):
    run(STFT[name], (2, 40), device=device)


def test_stft_float32_signal_with_float64_window_promotes(device):
    run(lambda L, x, w: L.stft(x.float(), 8, window=w.double(), return_complex=True),
        (2, 30), (8,), device=device, dtypes=(np.float32,))
    run(lambda L, x, w: L.stft(x.double(), 8, window=w.float(), return_complex=True),
        (2, 30), (8,), device=device, dtypes=(np.float32,))


WINDOWED = {
    "window_grad": lambda L, x, w: L.stft(x, 8, window=w, return_complex=True),
    "short_window_grad": lambda L, x, w: L.stft(x, 8, win_length=6, window=w[:6],
                                                return_complex=True),
    "complex_window_grad": lambda L, x, w: L.stft(x, 8, window=L.complex(w, w.flip(0))),
    "istft_window_grad": lambda L, x, w: L.istft(
        L.stft(x, 8, hop_length=2, window=w + 2, return_complex=True), 8, hop_length=2,
        window=w + 2),
}


@pytest.mark.parametrize("name", sorted(WINDOWED))
def test_stft_gradient_of_the_window_matches_torch(name, device):
    run(WINDOWED[name], (2, 30), (8,), device=device)


def test_stft_output_layout_and_dtype(device):
    x = rustgrad.randn(3, 50, device=device)
    s = rustgrad.stft(x, 16, hop_length=4, window=rustgrad.hann_window(16, device=device),
                      return_complex=True)
    assert s.shape == (3, 9, 13) and s.dtype == rustgrad.complex64
    assert s.device.type == device and s.is_leaf and s._base is None
    r = rustgrad.stft(x.double(), 16, center=False, onesided=False, return_complex=False)
    assert r.shape == (3, 16, 9, 2) and r.dtype == rustgrad.float64


# ---- istft -------------------------------------------------------------------------------------
def _spec(L: Any, x: Any, n_fft: int = 8, **kw: Any) -> Any:
    kw.setdefault("window", _hann(L, n_fft, x))
    return L.stft(x, n_fft, return_complex=True, **kw)


ISTFT = {
    "round_trip": lambda L, x: L.istft(_spec(L, x), 8, window=_hann(L, 8, x)),
    "round_trip_1d": lambda L, x: L.istft(_spec(L, x[0]), 8, window=_hann(L, 8, x)),
    "length_equal": lambda L, x: L.istft(_spec(L, x), 8, window=_hann(L, 8, x), length=40),
    "length_longer": lambda L, x: L.istft(_spec(L, x), 8, window=_hann(L, 8, x), length=47),
    "length_shorter": lambda L, x: L.istft(_spec(L, x), 8, window=_hann(L, 8, x), length=25),
    "rectangular": lambda L, x: L.istft(L.stft(x, 8, return_complex=True), 8),
    "hop_3": lambda L, x: L.istft(_spec(L, x, hop_length=3), 8, hop_length=3,
                                  window=_hann(L, 8, x)),
    "not_centered": lambda L, x: L.istft(L.stft(x, 8, center=False, return_complex=True), 8,
                                         center=False),
    "not_centered_length": lambda L, x: L.istft(
        L.stft(x, 8, hop_length=3, center=False, return_complex=True), 8, hop_length=3,
        center=False, length=36),
    "normalized": lambda L, x: L.istft(_spec(L, x, normalized=True), 8, window=_hann(L, 8, x),
                                       normalized=True),
    "two_sided": lambda L, x: L.istft(_spec(L, x, onesided=False), 8, window=_hann(L, 8, x)),
    "two_sided_explicit": lambda L, x: L.istft(_spec(L, x, onesided=False), 8,
                                               window=_hann(L, 8, x), onesided=False),
    "complex_result": lambda L, x: L.istft(_spec(L, L.complex(x, -x)), 8, window=_hann(L, 8, x),
                                           return_complex=True),
    "complex_window": lambda L, x: L.istft(
        _spec(L, x, window=_hann(L, 8, x).to(x.dtype.to_complex()) + 1j), 8,
        window=_hann(L, 8, x).to(x.dtype.to_complex()) + 1j, return_complex=True),
    "short_window": lambda L, x: L.istft(
        _spec(L, x, win_length=6, window=_hann(L, 6, x)), 8, win_length=6,
        window=_hann(L, 6, x)),
    "odd_n_fft": lambda L, x: L.istft(_spec(L, x, 7, hop_length=2), 7, hop_length=2,
                                      window=_hann(L, 7, x)),
    "method": lambda L, x: _spec(L, x).istft(8, window=_hann(L, 8, x)),
    "positional": lambda L, x: L.istft(_spec(L, x), 8, 2, 8, _hann(L, 8, x), True, False, None,
                                       40, False),
    "of_a_spectrum": lambda L, x: L.istft(L.complex(x[:, :35].reshape(2, 5, 7),
                                                    x[:, 5:].reshape(2, 5, 7)), 8,
                                          window=_hann(L, 8, x) + 0.5),
}


@pytest.mark.parametrize("name", sorted(ISTFT))
def test_istft_matches_torch(name, device):
    run(ISTFT[name], (2, 40), device=device)


@pytest.mark.parametrize("center", [True, False])
def test_istft_inverts_stft(center, device):
    x = rustgrad.randn(2, 64, dtype=rustgrad.float64, device=device)
    w = rustgrad.hann_window(16, dtype=rustgrad.float64, device=device)
    if not center:
        w = w + 0.1  # a window that is not zero at the ends passes the NOLA check uncentred
    s = rustgrad.stft(x, 16, hop_length=4, window=w, center=center, return_complex=True)
    y = rustgrad.istft(s, 16, hop_length=4, window=w, center=center, length=64)
    assert y.shape == (2, 64) and y.dtype == rustgrad.float64 and y.device.type == device
    np.testing.assert_allclose(_np(y), _np(x), rtol=1e-10, atol=1e-10)


# ---- gradcheck ---------------------------------------------------------------------------------
GRADCHECK = {
    "stft": lambda L, x, w: L.view_as_real(L.stft(x, 6, hop_length=2, window=w,
                                                   return_complex=True)),
    "stft_1d_normalized": lambda L, x, w: L.view_as_real(
        L.stft(x[0], 6, hop_length=3, window=w, normalized=True, onesided=False,
               return_complex=True)),
    "stft_complex": lambda L, x, w: L.view_as_real(
        L.stft(L.complex(x, x * x), 6, hop_length=2, window=w, pad_mode="constant")),
    "istft": lambda L, x, w: L.istft(L.complex(x[:, :12].reshape(2, 4, 3),
                                               x[:, 3:15].reshape(2, 4, 3)), 6, hop_length=2,
                                     window=w + 3),
    "round_trip": lambda L, x, w: L.istft(
        L.stft(x, 6, hop_length=2, window=w + 3, return_complex=True), 6, hop_length=2,
        window=w + 3, length=15),
    "istft_complex": lambda L, x, w: L.view_as_real(L.istft(
        L.complex(x[:, :12].reshape(2, 6, 2), x[:, 2:14].reshape(2, 6, 2)), 6, hop_length=2,
        window=w + 3, return_complex=True, normalized=True)),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK))
def test_stft_gradcheck(name, device):
    rng = np.random.default_rng(3)
    x = rustgrad.tensor(rng.uniform(-2, 2, (2, 16)), device=device, requires_grad=True)
    w = rustgrad.tensor(rng.uniform(0.5, 1.5, 6), device=device, requires_grad=True)
    assert rustgrad.autograd.gradcheck(lambda a, b: GRADCHECK[name](rustgrad, a, b), (x, w))


DOUBLE = {
    "stft": lambda L, x, w: L.view_as_real(L.stft(x, 6, hop_length=2, window=w,
                                                   return_complex=True)).pow(2),
    "round_trip": lambda L, x, w: L.istft(
        L.stft(x, 6, hop_length=2, window=w + 3, return_complex=True), 6, hop_length=2,
        window=w + 3).pow(2),
}


@pytest.mark.parametrize("name", sorted(DOUBLE))
def test_stft_double_backward_matches_torch(name, device):
    check_double_backward(DOUBLE[name], (2, 16), (6,), device=device)


@pytest.mark.parametrize("case", ["stft", "istft", "real_output"])
def test_stft_warns_as_torch(case):
    progs = {
        "stft": lambda L, x: L.stft(x, 8, return_complex=True),
        "istft": lambda L, x: L.istft(L.stft(x, 8, window=L.ones(8), return_complex=True), 8),
        "real_output": lambda L, x: L.stft(x, 8, window=L.ones(8), return_complex=False),
    }
    messages = []
    for L in (torch, rustgrad):
        L.set_warn_always(True)
        try:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                progs[case](L, L.ones(20))
        finally:
            L.set_warn_always(False)
        messages.append([str(w.message).split(" (Triggered internally")[0] for w in seen
                         if issubclass(w.category, UserWarning)])
    assert messages[0] and messages[1] == messages[0]


# ---- errors --------------------------------------------------------------------------------------
STFT_ERRORS = {
    "return_complex_missing": (lambda L, x: L.stft(x, 8),
                               "stft requires the return_complex parameter be given for real "
                               "inputs"),
    "n_fft_too_big": (lambda L, x: L.stft(x, 30, center=False, return_complex=True),
                      "expected 0 < n_fft < 20, but got n_fft=30"),
    "n_fft_zero": (lambda L, x: L.stft(x, 0, return_complex=True),
                   "expected 0 < n_fft < 20, but got n_fft=0"),
    "hop_zero": (lambda L, x: L.stft(x, 8, hop_length=0, return_complex=True),
                 "expected hop_length > 0, but got hop_length=0"),
    "win_length_too_big": (lambda L, x: L.stft(x, 8, win_length=9, return_complex=True),
                           "expected 0 < win_length <= n_fft, but got win_length=9"),
    "win_length_zero": (lambda L, x: L.stft(x, 8, win_length=0, return_complex=True),
                        "expected 0 < win_length <= n_fft, but got win_length=0"),
    "window_size": (lambda L, x: L.stft(x, 8, window=L.ones(7, dtype=x.dtype),
                                        return_complex=True),
                    "expected a 1D window tensor of size equal to win_length=8, but got window "
                    "with size [7]"),
    "window_2d": (lambda L, x: L.stft(x, 8, window=L.ones(2, 4, dtype=x.dtype),
                                      return_complex=True),
                  "but got window with size [2, 4]"),
    "window_win_length": (lambda L, x: L.stft(x, 8, win_length=6,
                                              window=L.ones(8, dtype=x.dtype),
                                              return_complex=True),
                          "size equal to win_length=6, but got window with size [8]"),
    "three_d": (lambda L, x: L.stft(x.reshape(2, 2, 10), 4, return_complex=True),
                "expected a 1D or 2D tensor"),
    "zero_d": (lambda L, x: L.stft(x[0, 0], 8, return_complex=True),
               "Padding size should be less than the corresponding input dimension"),
    "reflect_too_short": (lambda L, x: L.stft(x[:, :4], 8, return_complex=True),
                          "Padding size should be less than the corresponding input dimension"),
    "integer_input": (lambda L, x: L.stft(x.long(), 8, return_complex=True),
                      "expected a tensor of floating point or complex values"),
    "half_input": (lambda L, x: L.stft(x.half(), 8, return_complex=True),
                   "doesn't support tensors of type: Half"),
    "bad_pad_mode": (lambda L, x: L.stft(x, 8, pad_mode="foo", return_complex=True),
                     "Unrecognised padding mode foo"),
    "onesided_complex": (lambda L, x: L.stft(L.complex(x, x), 8, onesided=True,
                                             return_complex=True),
                         "Cannot have onesided output if window or input is complex"),
    "onesided_complex_window": (lambda L, x: L.stft(x, 8, onesided=True, return_complex=True,
                                                    window=L.ones(8, dtype=x.dtype.to_complex())),
                                "Cannot have onesided output if window or input is complex"),
    "align_when_centered": (lambda L, x: L.stft(x, 8, align_to_window=True, return_complex=True),
                            "stft align_to_window should only be set when center = false"),
}


@pytest.mark.parametrize("case", sorted(STFT_ERRORS))
def test_stft_errors_match_torch(case, device):
    fn, phrase = STFT_ERRORS[case]
    check_error(fn, (2, 20), device=device, phrase=phrase, requires_grad=True)


def test_stft_error_names_the_call_as_torch():
    fn = STFT_ERRORS["n_fft_too_big"][0]
    _, er = check_error(fn, (2, 20), phrase="stft(torch.DoubleTensor[2, 20], n_fft=30, "
                        "hop_length=7, win_length=30, window=None, normalized=0, onesided=None, "
                        "return_complex=1, align_to_window=None) : expected")
    assert isinstance(er, RuntimeError)


def _S(L: Any, x: Any, n_fft: int = 8) -> Any:
    """A (2, n_fft // 2 + 1, 11) spectrum of the (2, 20) input."""
    return L.stft(x, n_fft, window=L.ones(n_fft, dtype=x.dtype),
                  return_complex=True)


ISTFT_ERRORS = {
    "real_input": (lambda L, x: L.istft(x, 8),
                   "istft requires a complex-valued input tensor matching the output from stft "
                   "with return_complex=True."),
    "empty": (lambda L, x: L.istft(_S(L, x)[..., :0], 8), "input tensor cannot be empty."),
    "empty_batch": (lambda L, x: L.istft(_S(L, x)[:0], 8), "input tensor cannot be empty."),
    "one_d": (lambda L, x: L.istft(_S(L, x)[0, 0], 8),
              "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    "four_d": (lambda L, x: L.istft(_S(L, x)[None], 8),
               "expected a tensor with 3 or 4 dimensions, but got 5"),
    "frequencies_onesided": (lambda L, x: L.istft(_S(L, x), 10),
                             "expected the frequency dimension (3rd to the last) of the input "
                             "tensor to match n_fft / 2 + 1 when onesided=True, but got 5"),
    "frequencies_twosided": (lambda L, x: L.istft(_S(L, x), 8, onesided=False),
                             "to match n_fft when onesided=False, but got 5"),
    "hop_zero": (lambda L, x: L.istft(_S(L, x), 8, hop_length=0),
                 "expected 0 < hop_length <= win_length"),
    "hop_over_win_length": (lambda L, x: L.istft(_S(L, x), 8, hop_length=9),
                            "expected 0 < hop_length <= win_length"),
    "win_length_too_big": (lambda L, x: L.istft(_S(L, x), 8, win_length=9),
                           "expected 0 < win_length <= n_fft"),
    "window_size": (lambda L, x: L.istft(_S(L, x), 8, window=L.ones(7, dtype=x.dtype)),
                    "Invalid window shape. window has to be 1D and length of `win_length`"),
    "complex_window_real_result": (lambda L, x: L.istft(
        _S(L, x), 8, window=L.ones(8, dtype=x.dtype.to_complex())),
        "Complex windows are incompatible with return_complex=False"),
    "onesided_complex_result": (lambda L, x: L.istft(_S(L, x), 8, return_complex=True),
                                "Cannot have onesided output if window or input is complex"),
    "nola_uncentred_hann": (lambda L, x: L.istft(
        L.stft(x, 8, window=L.hann_window(8, dtype=x.dtype, device=x.device),
               return_complex=True), 8, window=L.hann_window(8, dtype=x.dtype, device=x.device),
        center=False), "window overlap add min"),
    "nola_zero_window": (lambda L, x: L.istft(_S(L, x), 8, window=L.zeros(8, dtype=x.dtype)),
                         "window overlap add min"),
    "nola_gaps": (lambda L, x: L.istft(_S(L, x), 8, hop_length=8, win_length=8,
                                       window=L.hann_window(8, dtype=x.dtype, device=x.device)),
                  "window overlap add min"),
}


@pytest.mark.parametrize("case", sorted(ISTFT_ERRORS))
def test_istft_errors_match_torch(case, device):
    fn, phrase = ISTFT_ERRORS[case]
    check_error(fn, (2, 20), device=device, phrase=phrase, requires_grad=True)
