"""fractional_max_pool2d/3d (and *_with_indices), lp_pool3d, max_unpool3d, linear_cross_entropy,
assert_int_or_pair, and the modules FractionalMaxPool2d/3d, LPPool3d, MaxUnpool3d,
CrossMapLRN2d and LinearCrossEntropyLoss against torch: values, indices, grad_fn names,
gradients, double backward, gradcheck, errors and reprs, on every device. Fractional pooling is
compared with the same `_random_samples` given to both libraries; without them rustgrad draws
them from its own generator (checked against the samples it draws)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import F, check, check_double_backward, check_error, grad_ok, ints, parity, same_error

_RNG = np.random.default_rng(24)


def _samples(*shape: int) -> np.ndarray:
    """Uniform samples in [0, 1) (the float spec is cast to the dtype under test)."""
    return _RNG.uniform(0.0, 1.0, size=shape)


S2 = _samples(2, 3, 2)
S3 = _samples(2, 3, 3)


def _fmp2(**kw):
    return lambda L, x, s: F(L).fractional_max_pool2d(x, _random_samples=s.detach(), **kw)


def _fmp3(**kw):
    return lambda L, x, s: F(L).fractional_max_pool3d(x, _random_samples=s.detach(), **kw)


# name -> (program, input shape, samples)
FRACTIONAL = {
    "2d": (_fmp2(kernel_size=2, output_size=(4, 5)), (2, 3, 9, 11), S2),
    "2d_indices": (_fmp2(kernel_size=(2, 3), output_size=(5, 4), return_indices=True),
                   (2, 3, 9, 11), S2),
    "2d_overlapping": (_fmp2(kernel_size=3, output_size=(6, 8), return_indices=True),
                       (2, 3, 9, 11), S2),
    "2d_ratio": (_fmp2(kernel_size=2, output_ratio=(0.5, 0.4), return_indices=True),
                 (2, 3, 9, 11), S2),
    "2d_one_output": (_fmp2(kernel_size=(2, 1), output_size=1), (2, 3, 5, 6), S2),
    "2d_unit_step": (_fmp2(kernel_size=2, output_size=(8, 10)), (2, 3, 9, 11), S2),
    "2d_kernel_1": (_fmp2(kernel_size=1, output_size=(3, 7)), (2, 3, 9, 11), S2),
    "2d_empty_output": (_fmp2(kernel_size=2, output_size=(0, 3)), (2, 3, 5, 6), S2),
    "2d_unbatched": (lambda L, x, s: F(L).fractional_max_pool2d(
        x[0], 2, output_size=3, return_indices=True, _random_samples=s.detach()[1:]),
        (2, 3, 7, 8), S2),
    "2d_more_samples": (lambda L, x, s: F(L).fractional_max_pool2d(
        x[:1], 2, output_size=3, _random_samples=s.detach()), (2, 3, 7, 8), S2),
    "2d_empty_batch": (lambda L, x, s: F(L).fractional_max_pool2d(
        x[:0], 2, output_size=3, _random_samples=s.detach()[:0]), (2, 3, 7, 8), S2),
    "2d_with_indices": (lambda L, x, s: F(L).fractional_max_pool2d_with_indices(
        x, 3, (4, 4), _random_samples=s.detach()), (2, 3, 8, 9), S2),
    "3d": (_fmp3(kernel_size=2, output_size=(3, 4, 5)), (2, 3, 7, 9, 8), S3),
    "3d_indices": (_fmp3(kernel_size=(2, 3, 1), output_size=(4, 5, 3), return_indices=True),
                   (2, 3, 7, 9, 8), S3),
    "3d_ratio": (_fmp3(kernel_size=2, output_ratio=0.5, return_indices=True),
                 (2, 3, 7, 9, 8), S3),
    "3d_one_output": (_fmp3(kernel_size=(1, 2, 3), output_size=1), (2, 3, 4, 5, 6), S3),
    "3d_unbatched": (lambda L, x, s: F(L).fractional_max_pool3d(
        x[1], 2, output_size=(2, 3, 3), return_indices=True, _random_samples=s.detach()[1:]),
        (2, 3, 5, 6, 7), S3),
    "3d_with_indices": (lambda L, x, s: F(L).fractional_max_pool3d_with_indices(
        x, 3, 2, _random_samples=s.detach()), (2, 3, 5, 6, 7), S3),
    "module_2d": (lambda L, x, s: L.nn.FractionalMaxPool2d(
        (3, 2), output_ratio=0.6, return_indices=True, _random_samples=s.detach())(x),
        (2, 3, 7, 8), S2),
    "module_3d": (lambda L, x, s: L.nn.FractionalMaxPool3d(
        2, output_size=(2, 3, 4), _random_samples=s.detach())(x), (2, 3, 5, 6, 7), S3),
}


@pytest.mark.parametrize("name", sorted(FRACTIONAL))
def test_fractional_max_pool_matches_torch(name, device):
    program, shape, samples = FRACTIONAL[name]
    check(program, shape, samples, device=device)


# samples where float16's roundings place some windows elsewhere than float32's would
HALF_CASES = {
    2: ((1, 2, 61, 53), (23, 19), np.array([[[0.805, 0.808], [0.515, 0.286]]])),
    3: ((1, 2, 29, 31, 27), (11, 13, 10),
        np.array([[[0.054, 0.383, 0.408], [0.045, 0.049, 0.999]]])),
}


@pytest.mark.parametrize("n", [2, 3])
def test_fractional_max_pool_half_windows_match_torch(n, device):
    # the window starts are computed in the input's dtype with torch's roundings
    shape, out, samples = HALF_CASES[n]
    # integers float16 holds exactly
    x = (np.random.default_rng(1).permutation(math.prod(shape)).reshape(shape) % 2000) * 1.0

    def program(L, a, s):
        fn = F(L).fractional_max_pool2d if n == 2 else F(L).fractional_max_pool3d
        return fn(a, 2, output_size=out, return_indices=True, _random_samples=s.detach())

    check(program, x, samples, device=device, dtypes=(np.float16,))
    # (the test would not pass with float32's window starts)
    t16 = program(torch, torch.tensor(x, dtype=torch.float16),
                  torch.tensor(samples, dtype=torch.float16))[1]
    t32 = program(torch, torch.tensor(x, dtype=torch.float32),
                  torch.tensor(samples, dtype=torch.float16).float())[1]
    assert not torch.equal(t16, t32)


def test_fractional_max_pool_bfloat16_matches_torch():
    x = _RNG.permutation(2 * 3 * 40 * 37).reshape(2, 3, 40, 37).astype(np.float32)
    s = _samples(2, 3, 2).astype(np.float32)

    def program(lib):
        v, i = F(lib).fractional_max_pool2d(
            lib.tensor(x).to(lib.bfloat16), 2, output_size=(13, 11), return_indices=True,
            _random_samples=lib.tensor(s).to(lib.bfloat16))
        return v.float(), i

    parity(program)


def test_fractional_max_pool_ties_nan_and_inf_match_torch(device):
    x = np.array([[[[1.0, np.nan, 3.0, np.nan], [0.0, 0.0, 0.0, 0.0],
                    [-np.inf, -np.inf, 2.0, 2.0], [-np.inf, -np.inf, 2.0, 2.0]]]])
    check(lambda L, a, s: F(L).fractional_max_pool2d(a, 2, output_size=2, return_indices=True,
                                                     _random_samples=s.detach()),
          x, np.zeros((1, 1, 2)), device=device)


@pytest.mark.parametrize("name", ["2d_overlapping", "3d_indices", "2d_unbatched"])
def test_fractional_max_pool_double_backward_and_gradcheck(name, device):
    program, shape, samples = FRACTIONAL[name]
    first = lambda L, x, s: program(L, x, s)[0]  # noqa: E731
    check_double_backward(first, shape, samples, device=device)
    if device == "cpu":
        assert grad_ok(first, shape, samples)


def test_fractional_max_pool_saved_values_match_torch():
    def program(lib):
        x = lib.tensor(np.arange(2 * 3 * 6 * 7, dtype=np.float64).reshape(2, 3, 6, 7),
                       requires_grad=True)
        y, i = F(lib).fractional_max_pool2d(x, (2, 3), output_size=(3, 4), return_indices=True,
                                            _random_samples=lib.tensor(S2))
        node = y.grad_fn
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        return (node.name(), node._saved_kernel_size, node._saved_output_size,
                node._saved_result1, node._saved_self, g.grad_fn.name(), g.grad_fn._saved_indices,
                g.requires_grad)

    parity(program)


@pytest.mark.parametrize("n", [2, 3])
def test_fractional_max_pool_draws_its_samples_from_the_generator(n, device):
    fn = F(rustgrad).fractional_max_pool2d if n == 2 else F(rustgrad).fractional_max_pool3d
    shape = (2, 3) + (7, 8, 9)[:n]
    x = rustgrad.randn(*shape, device=device, dtype=rustgrad.float64)
    for batched in (True, False):
        a = x if batched else x[0]
        rustgrad.manual_seed(7)
        drawn = fn(a, 2, output_size=3, return_indices=True)
        rustgrad.manual_seed(7)
        u = rustgrad.rand(2 if batched else 1, 3, n, dtype=rustgrad.float64, device=device)
        given = fn(a, 2, output_size=3, return_indices=True, _random_samples=u)
        assert rustgrad.equal(drawn[0], given[0]) and rustgrad.equal(drawn[1], given[1])
        # those samples place torch's windows the same way
        tfn = F(torch).fractional_max_pool2d if n == 2 else F(torch).fractional_max_pool3d
        expected = tfn(torch.tensor(a.cpu().numpy()), 2, output_size=3, return_indices=True,
                       _random_samples=torch.tensor(u.cpu().numpy()))[1]
        assert drawn[1].cpu().tolist() == expected.tolist()
    # a float32 input draws float32 samples (torch's: the input's dtype)
    y = fn(x.float(), 2, output_size=3)
    assert y.dtype == rustgrad.float32


FRACTIONAL_ERRORS = [
    (lambda L, x, s: F(L).fractional_max_pool2d(x, 2), (2, 3, 7, 8), S2,
     "fractional_max_pool2d requires specifying either an output_size or an output_ratio"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5, 0.5)),
     (2, 3, 7, 8), S2, "fractional_max_pool2d requires output_ratio to either be a single Int"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, 2, output_ratio=0.5), (2, 3, 7, 8), S2,
     "object of type 'float' has no len()"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, 3, output_size=(6, 5), _random_samples=s),
     (2, 3, 7, 8), S2, "fractional_max_pool2d(): pool height 3 too large relative to input "
                       "height 7"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, 3, output_size=(5, 7), _random_samples=s),
     (2, 3, 7, 8), S2, "fractional_max_pool2d(): pool width 3 too large relative to input "
                       "width 8"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, (2, 0), output_size=3, _random_samples=s),
     (2, 3, 7, 8), S2, "fractional_max_pool2d(): kernel size should be greater than zero, but "
                       "got 2x0"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, 2, output_size=(2, 5, 4), _random_samples=s),
     (2, 3, 7, 8), S2, "fractional_max_pool2d: output_size must either be a single Int or "
                       "tuple of Ints"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, [2], output_size=3, _random_samples=s),
     (2, 3, 7, 8), S2, "fractional_max_pool2d: kernel_size must either be a single Int or "
                       "tuple of Ints"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, 2, output_size=(-1, 2), _random_samples=s),
     (2, 3, 7, 8), S2, "Trying to create tensor with negative dimension -1: [2, 3, -1, 2]"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, 2, output_size=3, _random_samples=s[:1]),
     (2, 3, 7, 8), S2, "Expect _random_samples.size(0) no less then input batch size."),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, 2, output_size=3, _random_samples=s[:, :2]),
     (2, 3, 7, 8), S2, "Expect _random_samples.size(1) equals to input channel size."),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, 2, output_size=3, _random_samples=s[..., :1]),
     (2, 3, 7, 8), S2, "Expect _random_samples.size(2) equals to 2; got 1."),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, 2, output_size=3, _random_samples=s[0]),
     (2, 3, 7, 8), S2, "Expect _random_samples to have 3 dimensions, got 2"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, 2, output_size=3,
                                                _random_samples=s.float()),
     (2, 3, 7, 8), S2, "Expect _random_samples to have the same dtype as input"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x[0, 0], 2, output_size=3, _random_samples=s),
     (2, 3, 7, 8), S2, "fractional_max_pool2d(): Expected 3D or 4D tensor, but got: [7, 8]"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x[0, 0], 2, output_size=3), (2, 3, 7, 8), S2,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x[:, :0], 2, output_size=3), (2, 3, 7, 8), S2,
     "fractional_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
     "but got[2, 0, 7, 8] with dimension 1 being empty."),
    (lambda L, x, s: F(L).fractional_max_pool2d(x.long(), 2, output_size=3,
                                                _random_samples=s.long()),
     (2, 3, 7, 8), S2, "\"fractional_max_pool2d_out_frame\" not implemented for 'Long'"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x.long(), 2, output_size=3), (2, 3, 7, 8), S2,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda L, x, s: F(L).fractional_max_pool2d(x, 2, output_size=3,
                                                _random_samples=s.clone().requires_grad_()),
     (2, 3, 7, 8), S2, "The function 'fractional_max_pool2d' is not differentiable with "
                       "respect to argument 'random_samples'."),
    (lambda L, x, s: F(L).fractional_max_pool3d(x, 2), (2, 3, 5, 6, 7), S3,
     "fractional_max_pool3d requires specifying either an output_size or an output_ratio"),
    (lambda L, x, s: F(L).fractional_max_pool3d(x, 2, output_ratio=(0.5, 0.5)), (2, 3, 5, 6, 7),
     S3, "tuple index out of range"),
    (lambda L, x, s: F(L).fractional_max_pool3d(x, 2, output_size=(4, 3, 3), _random_samples=s),
     (2, 3, 5, 6, 7), S3, "fractional_max_pool3d_out(): pool time 2 too large relative to "
                          "input time 5"),
    (lambda L, x, s: F(L).fractional_max_pool3d(x, 2, output_size=(3, 5, 3), _random_samples=s),
     (2, 3, 5, 6, 7), S3, "fractional_max_pool3d_out(): pool height 2 too large relative to "
                          "input height 6"),
    (lambda L, x, s: F(L).fractional_max_pool3d(x, 2, output_size=(3, 3, 6), _random_samples=s),
     (2, 3, 5, 6, 7), S3, "fractional_max_pool3d_out(): pool width 2 too large relative to "
                          "input width 7"),
    (lambda L, x, s: F(L).fractional_max_pool3d(x, (2, 0, 1), output_size=3, _random_samples=s),
     (2, 3, 5, 6, 7), S3, "fractional_max_pool3d(): kernel size should be greater than zero, "
                          "but got 2x0x1"),
    (lambda L, x, s: F(L).fractional_max_pool3d(x, 2, output_size=(3, 3), _random_samples=s),
     (2, 3, 5, 6, 7), S3, "fractional_max_pool3d: output_size must either be a single Int or "
                          "tuple of three Ints"),
    (lambda L, x, s: F(L).fractional_max_pool3d(x, (2, 2), output_size=3, _random_samples=s),
     (2, 3, 5, 6, 7), S3, "fractional_max_pool3d: kernel_size must either be a single Int or "
                          "tuple of three Ints"),
    (lambda L, x, s: F(L).fractional_max_pool3d(x, 2, output_size=3, _random_samples=s[..., :2]),
     (2, 3, 5, 6, 7), S3, "Expect _random_samples.size(2) equals to 3; got 2."),
    (lambda L, x, s: F(L).fractional_max_pool3d(x[0, 0], 2, output_size=3, _random_samples=s),
     (2, 3, 5, 6, 7), S3, "fractional_max_pool3d_out(): Expected 4D or 5D tensor, but got: "
                          "[5, 6, 7]"),
    (lambda L, x, s: F(L).fractional_max_pool3d(x[:, :, :0], 2, output_size=3), (2, 3, 5, 6, 7),
     S3, "fractional_max_pool3d_out(): Expected input to have non-zero size for non-batch "
         "dimensions, but got[2, 3, 0, 6, 7] with dimension 2 being empty."),
]


@pytest.mark.parametrize("k", range(len(FRACTIONAL_ERRORS)))
def test_fractional_max_pool_errors_match_torch(k, device):
    program, shape, samples, phrase = FRACTIONAL_ERRORS[k]
    check_error(program, shape, samples, device=device, phrase=phrase)


FRACTIONAL_MODULES = {
    "2d": lambda nn, s: nn.FractionalMaxPool2d(2, output_size=(3, 4), _random_samples=s),
    "2d_ratio_indices": lambda nn, s: nn.FractionalMaxPool2d((2, 3), output_ratio=0.5,
                                                             return_indices=True,
                                                             _random_samples=s),
    "3d": lambda nn, s: nn.FractionalMaxPool3d(2, output_size=(2, 3, 2), _random_samples=s),
    "3d_ratio_indices": lambda nn, s: nn.FractionalMaxPool3d(
        (1, 2, 2), output_ratio=(0.5, 0.6, 0.5), return_indices=True, _random_samples=s),
}


@pytest.mark.parametrize("name", sorted(FRACTIONAL_MODULES))
def test_fractional_max_pool_modules_match_torch(name):
    three = name.startswith("3d")

    def program(lib):
        s = lib.tensor(S3 if three else S2)
        m = FRACTIONAL_MODULES[name](lib.nn, s)
        shape = (2, 3, 5, 6, 7) if three else (2, 3, 7, 8)
        x = lib.tensor(np.linspace(-2, 3, math.prod(shape)).reshape(shape) ** 2,
                       requires_grad=True)
        y = m(x)
        y0 = y[0] if isinstance(y, tuple) else y
        (y0 * lib.arange(float(y0.numel())).reshape(y0.shape)).sum().backward()
        return (repr(m), list(m.state_dict()), m.kernel_size, m.output_size, m.output_ratio,
                y, x.grad)

    parity(program)


def test_fractional_max_pool_module_errors_match_torch():
    for nn_cls, kw, phrase in [
        ("FractionalMaxPool2d", {}, "FractionalMaxPool2d requires specifying either an output "
                                    "size, or a pooling ratio"),
        ("FractionalMaxPool3d", {}, "FractionalMaxPool3d requires specifying either an output "
                                    "size, or a pooling ratio"),
        ("FractionalMaxPool2d", {"output_size": 2, "output_ratio": 0.5},
         "only one of output_size and output_ratio may be specified"),
        ("FractionalMaxPool2d", {"output_ratio": (0.5, 1.0)},
         "output_ratio must be between 0 and 1 (got (0.5, 1.0))"),
        ("FractionalMaxPool3d", {"output_ratio": 0.0}, "output_ratio must be between 0 and 1"),
    ]:
        same_error(lambda lib, c=nn_cls, kw=kw: getattr(lib.nn, c)(2, **kw), phrase)
    same_error(lambda lib: lib.nn.FractionalMaxPool3d((2, 0, 1), output_size=2),
               "kernel_size must be greater than 0, but got (2, 0, 1)")
    same_error(lambda lib: lib.nn.FractionalMaxPool3d(0, output_size=2),
               "kernel_size must be greater than 0, but got 0")
    # the 2-d module leaves the kernel to the op
    same_error(lambda lib: lib.nn.FractionalMaxPool2d(0, output_size=2)(lib.ones(1, 1, 4, 4)),
               "kernel size should be greater than zero, but got 0x0")


# ---- lp_pool3d ----------------------------------------------------------------------------------
LP = {
    "p2": lambda L, x: F(L).lp_pool3d(x, 2, 2),
    "p3_stride": lambda L, x: F(L).lp_pool3d(x.abs() + 0.1, 3.0, (2, 3, 2), stride=1),
    "p1_5_stride_tuple": lambda L, x: F(L).lp_pool3d(x.abs() + 0.1, 1.5, 2, stride=(1, 2, 1)),
    "ceil": lambda L, x: F(L).lp_pool3d(x, 2.0, 2, ceil_mode=True),
    "odd_p_negative_mean": lambda L, x: F(L).lp_pool3d(x, 1, (1, 2, 2)),
    "inf": lambda L, x: F(L).lp_pool3d(x, math.inf, 2),
    "minus_inf": lambda L, x: F(L).lp_pool3d(x, -math.inf, (2, 1, 2)),
    "unbatched": lambda L, x: F(L).lp_pool3d(x[0], 2, 3, 2),
    "module": lambda L, x: L.nn.LPPool3d(2, (2, 3, 2), stride=(1, 2, 1))(x),
    "module_inf": lambda L, x: L.nn.LPPool3d(math.inf, 2)(x),
    # the 1-d and 2-d forms share the code, and its -inf branch
    "lp2d_minus_inf": lambda L, x: F(L).lp_pool2d(x[0], -math.inf, 2),
    "lp1d_minus_inf": lambda L, x: F(L).lp_pool1d(x[0, 0], -math.inf, 2),
}


@pytest.mark.parametrize("name", sorted(LP))
def test_lp_pool3d_matches_torch(name, device):
    check(LP[name], (2, 3, 4, 5, 6), device=device)


def test_lp_pool3d_double_backward_and_gradcheck(device):
    check_double_backward(LP["p3_stride"], (1, 2, 4, 5, 4), device=device)
    check_double_backward(LP["p2"], (1, 2, 4, 4, 4), low=0.2, device=device)
    if device == "cpu":
        assert grad_ok(LP["p3_stride"], (1, 2, 3, 4, 3))
        assert grad_ok(LP["minus_inf"], (1, 2, 2, 3, 4))


def test_lp_pool_zero_norm_errors_match_torch(device):
    phrase = "norm_type must be a non-zero value, but got 0"
    check_error(lambda L, x: F(L).lp_pool3d(x, 0, 2), (1, 1, 2, 2, 2), device=device,
                phrase=phrase)
    check_error(lambda L, x: F(L).lp_pool2d(x, 0.0, 2), (1, 1, 2, 2), device=device,
                phrase=phrase + ".0")
    check_error(lambda L, x: F(L).lp_pool1d(x, 0, 2), (1, 1, 2), device=device, phrase=phrase)
    for name in ("LPPool1d", "LPPool2d", "LPPool3d"):
        same_error(lambda lib, c=name: getattr(lib.nn, c)(0, 2), phrase)
    check_error(lambda L, x: F(L).lp_pool3d(x, 2, (2, 2)), (1, 1, 2, 2, 2), device=device,
                phrase="not enough values to unpack (expected 3, got 2)")


def test_lp_pool3d_module_reprs_match_torch():
    parity(lambda lib: (repr(lib.nn.LPPool3d(2, 3)),
                        repr(lib.nn.LPPool3d(1.5, (3, 2, 1), stride=1, ceil_mode=True)),
                        list(lib.nn.LPPool3d(2, 2).state_dict())))


# ---- max_unpool3d -------------------------------------------------------------------------------
def _pooled3(L, x, *args):
    return F(L).max_pool3d(x, *args, return_indices=True)


UNPOOL3 = {
    "default": lambda L, x: F(L).max_unpool3d(*_pooled3(L, x, 2), 2),
    "output_size": lambda L, x: F(L).max_unpool3d(*_pooled3(L, x, 2), 2, output_size=(5, 7, 5)),
    "long_output_size": lambda L, x: F(L).max_unpool3d(*_pooled3(L, x, 2), 2,
                                                       output_size=[2, 3, 5, 7, 5]),
    "stride_padding": lambda L, x: F(L).max_unpool3d(*_pooled3(L, x, 3, 2, 1), 3, 2, 1,
                                                     output_size=(5, 7, 5)),
    "tuples": lambda L, x: F(L).max_unpool3d(*_pooled3(L, x, (1, 2, 2), (1, 2, 1)), (1, 2, 2),
                                             (1, 2, 1), output_size=(5, 7, 5)),
    "unbatched": lambda L, x: F(L).max_unpool3d(*_pooled3(L, x[0], 2), 2,
                                                output_size=(5, 7, 5)),
    "module": lambda L, x: L.nn.MaxUnpool3d(2)(*L.nn.MaxPool3d(2, return_indices=True)(x),
                                             output_size=(5, 7, 5)),
    "empty_batch": lambda L, x: F(L).max_unpool3d(*_pooled3(L, x[:0], 2), 2),
}


@pytest.mark.parametrize("name", sorted(UNPOOL3))
def test_max_unpool3d_matches_torch(name, device):
    # without output_size, windows that tile the input (each index within the default size)
    tiled = name in ("default", "empty_batch")
    check(UNPOOL3[name], (2, 3, 4, 6, 4) if tiled else (2, 3, 5, 7, 5), device=device)


def test_max_unpool3d_gradients_double_backward_and_gradcheck(device):
    idx = ints([[[[[0, 3]], [[13, 31]]], [[[4, 6]], [[9, 10]]]]])  # (1, 2, 2, 1, 2)
    program = lambda L, x, i: F(L).max_unpool3d(x, i, 2)  # noqa: E731  (into (4, 2, 4))
    check(program, (1, 2, 2, 1, 2), idx, device=device)
    check_double_backward(program, (1, 2, 2, 1, 2), idx, device=device)
    if device == "cpu":
        assert grad_ok(program, (1, 2, 2, 1, 2), idx)
        assert grad_ok(UNPOOL3["default"], (1, 2, 4, 6, 4))

    def saved(lib):
        x = lib.tensor(np.arange(16.0).reshape(1, 2, 2, 2, 2), requires_grad=True)
        y = F(lib).max_unpool3d(*F(lib).max_pool3d(x, 2, return_indices=True), 2)
        return y.grad_fn.name(), y.grad_fn._saved_indices

    parity(saved)


UNPOOL_ERRORS = [
    (lambda L, v, i: F(L).max_unpool3d(v, i, 2, output_size=(9, 6, 4)),
     'invalid output_size "(9, 6, 4)" (dim 0 must be between 2 and 6)'),
    (lambda L, v, i: F(L).max_unpool3d(v, i, 2, output_size=[9, 6, 4]),
     'invalid output_size "[9, 6, 4]" (dim 0 must be between 2 and 6)'),
    (lambda L, v, i: F(L).max_unpool3d(v, i, 2, output_size=(4, 6)),
     "output_size should be a sequence containing 3 or 5 elements, but it has a length of '2'"),
    (lambda L, v, i: F(L).max_unpool3d(v, i, 2, output_size=(3, 5, 4)),
     "Found an invalid max index: "),
    (lambda L, v, i: F(L).max_unpool3d(v, i * 100, 2), "Found an invalid max index: "),
    (lambda L, v, i: F(L).max_unpool3d(v, i.int(), 2),
     "elements in indices should be type int64 but got: Int"),
    (lambda L, v, i: F(L).max_unpool3d(v, i[..., :1], 2),
     "Expected shape of indices to be same as that of the input tensor ([2, 3, 2, 3, 2]) but "
     "got indices tensor with shape: [2, 3, 2, 3, 1]"),
    (lambda L, v, i: F(L).max_unpool3d(v[0, 0], i[0, 0], 2),
     "Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor with 3 "
     "dimensions."),
    (lambda L, v, i: F(L).max_unpool3d(v, i, 2, stride=0),
     "strides should be greater than zero, but got stride: [0, 0, 0]"),
    (lambda L, v, i: F(L).max_unpool3d(v, i, -1),
     "max_unpooling: output_size must contain non-negative spatial dimensions, but got "
     "output_size[0]=-2"),
    (lambda L, v, i: F(L).max_unpool3d(v, i, (2, 2)),
     "There should be exactly three elements (depth, height, width) in output_size, but got 2 "
     "elements."),
    (lambda L, v, i: F(L).max_unpool3d(v, i, 2, stride=(1, 2)), "tuple index out of range"),
    (lambda L, v, i: F(L).max_unpool3d(v.long(), i, 2),
     "\"max_unpool3d\" not implemented for 'Long'"),
    (lambda L, v, i: F(L).max_unpool3d(v[:, :0], i[:, :0], 2),
     "max_unpooling3d_forward_out_cpu(): Expected input to have non-zero size for non-batch "
     "dimensions, but input has sizes [2, 0, 2, 3, 2] with dimension 1 being empty"),
    # the 1-d and 2-d forms share these checks now
    (lambda L, v, i: F(L).max_unpool2d(v[..., 0], i[..., 0], -1),
     "max_unpooling: output_size must contain non-negative spatial dimensions, but got "
     "output_size[0]=-2"),
    (lambda L, v, i: F(L).max_unpool2d(v[..., 0].long(), i[..., 0], 2),
     "\"max_unpool2d\" not implemented for 'Long'"),
    (lambda L, v, i: F(L).max_unpool1d(v[0, 0].bool(), i[0, 0], 2),
     "\"max_unpool2d\" not implemented for 'Bool'"),
    (lambda L, v, i: F(L).max_unpool2d(v[:, :, :0, :, 0], i[:, :, :0, :, 0], 2),
     "max_unpooling2d_forward_out_cpu(): Expected input to have non-zero size for non-batch "
     "dimensions, but input has sizes [2, 3, 0, 3] with dimension 2 being empty"),
]


@pytest.mark.parametrize("k", range(len(UNPOOL_ERRORS)))
def test_max_unpool_errors_match_torch(k, device):
    program, phrase = UNPOOL_ERRORS[k]
    # indices of a max_pool3d of a (2, 3, 4, 6, 4) input by 2: all within the default size
    idx = ints(_RNG.integers(0, 96, size=(2, 3, 2, 3, 2)))
    check_error(program, (2, 3, 2, 3, 2), idx, device=device, phrase=phrase)


def test_max_unpool_empty_inputs_match_torch(device):
    zeros = lambda *s: ints(np.zeros(s, dtype=np.int64))  # noqa: E731
    check(lambda L, v, i: F(L).max_unpool2d(v, i, 2), (0, 3, 2, 2), zeros(0, 3, 2, 2),
          device=device)
    check(lambda L, v, i: F(L).max_unpool2d(v, i, 2), (0, 2, 2), zeros(0, 2, 2), device=device)
    check(lambda L, v, i: F(L).max_unpool3d(v, i, 2), (0, 2, 2, 2), zeros(0, 2, 2, 2),
          device=device)
    # an empty output takes nothing: no index is checked (torch's backward of it fails)
    check(lambda L, v, i: F(L).max_unpool2d(v, i, 0), (2, 3, 2, 2), zeros(2, 3, 2, 2),
          device=device, backward=False)


def test_max_unpool3d_module_reprs_match_torch():
    parity(lambda lib: (repr(lib.nn.MaxUnpool3d(2)),
                        repr(lib.nn.MaxUnpool3d((1, 2, 3), stride=1, padding=(0, 1, 0))),
                        lib.nn.MaxUnpool3d(2, stride=(1, 2, 1)).stride))


# ---- CrossMapLRN2d ------------------------------------------------------------------------------
LRN = {
    "size3": lambda L, x: L.nn.CrossMapLRN2d(3)(x),
    "size2_args": lambda L, x: L.nn.CrossMapLRN2d(2, alpha=0.5, beta=0.6, k=2.0)(x),
    "size4": lambda L, x: L.nn.CrossMapLRN2d(4, alpha=1.0, beta=0.75, k=1.0)(x),
    "size5": lambda L, x: L.nn.CrossMapLRN2d(5, 2.0, 1.5, 0.5)(x),
    "wider_than_channels": lambda L, x: L.nn.CrossMapLRN2d(9, 1.0, 0.75, 1.0)(x),
    "one_channel": lambda L, x: L.nn.CrossMapLRN2d(3, 1.0, 0.5, 1.0)(x[:, :1]),
}


@pytest.mark.parametrize("name", sorted(LRN))
def test_cross_map_lrn2d_matches_torch(name, device):
    # torch's own backward (its node is CrossMapLRN2dBackward): the gradients are torch's
    # (torch's forward writes its output in place, four times: its _version is 4)
    check(LRN[name], (2, 7, 3, 4), device=device, versions=False)


def test_cross_map_lrn2d_backward_is_torchs_not_the_derivative():
    # torch's legacy backward is not its forward's derivative: gradcheck fails in both
    x = np.random.default_rng(0).standard_normal((1, 4, 2, 2))
    for lib in (torch, rustgrad):
        a = lib.tensor(x, requires_grad=True)
        m = lib.nn.CrossMapLRN2d(3, 0.5, 0.75, 1.0)
        ok = lib.autograd.gradcheck(m, (a,), raise_exception=False)
        assert ok is False, lib.__name__
    # and with beta = 0 it is exact (the output is input / k**0)
    assert grad_ok(lambda L, t: L.nn.CrossMapLRN2d(3, 0.5, 0.0, 1.0)(t), (1, 4, 2, 2))


def test_cross_map_lrn2d_errors_and_repr_match_torch(device):
    check_error(lambda L, x: L.nn.CrossMapLRN2d(3)(x), (5, 3, 3), device=device,
                phrase="CrossMapLRN2d: Expected input to be 4D, got 3D instead.")
    # a window of 1 fails in torch's backward (its narrow of the padded buffer)
    check_error(lambda L, x: L.nn.CrossMapLRN2d(1)(x).sum().backward(), (2, 7, 3, 3),
                device=device, requires_grad=True,
                phrase="start (1) + length (7) exceeds dimension size (7).")
    parity(lambda lib: (repr(lib.nn.CrossMapLRN2d(3)),
                        repr(lib.nn.CrossMapLRN2d(5, alpha=0.5, beta=1.0, k=2.0)),
                        list(lib.nn.CrossMapLRN2d(3).state_dict())))


# ---- linear_cross_entropy -----------------------------------------------------------------------
T4 = ints([0, 2, 1, 2])
LCE = {
    "mean": (lambda L, x, w, t: F(L).linear_cross_entropy(x, w, t), ((4, 5), (3, 5), T4)),
    "none": (lambda L, x, w, t: F(L).linear_cross_entropy(x, w, t, reduction="none"),
             ((4, 5), (3, 5), T4)),
    "sum_smoothing": (lambda L, x, w, t: F(L).linear_cross_entropy(
        x, w, t, reduction="sum", label_smoothing=0.1), ((4, 5), (3, 5), T4)),
    "bias_weight": (lambda L, x, w, t, b: F(L).linear_cross_entropy(
        x, w, t, linear_bias=b, weight=L.tensor([0.5, 1.0, 2.0], dtype=x.dtype)),
        ((4, 5), (3, 5), T4, (3,))),
    "ignore_index": (lambda L, x, w, t: F(L).linear_cross_entropy(x, w, t, ignore_index=2),
                     ((4, 5), (3, 5), T4)),
    "unbatched": (lambda L, x, w, t: F(L).linear_cross_entropy(x[0], w, t[0]),
                  ((4, 5), (3, 5), T4)),
    "probabilities": (lambda L, x, w, p: F(L).linear_cross_entropy(x, w, p.softmax(1)),
                      ((4, 5), (3, 5), (4, 3))),
    "probabilities_smoothing": (lambda L, x, w, p: F(L).linear_cross_entropy(
        x, w, p.softmax(1), label_smoothing=0.2, reduction="none"), ((4, 5), (3, 5), (4, 3))),
    "k_dimensional": (lambda L, x, w, t, b: F(L).linear_cross_entropy(x, w, t, linear_bias=b),
                      ((4, 5), (3, 2, 3, 5), ints(_RNG.integers(0, 3, (4, 2, 3))), (3, 2, 3))),
    "k_dimensional_none": (lambda L, x, w, t: F(L).linear_cross_entropy(
        x, w, t, reduction="none", label_smoothing=0.3),
        ((4, 5), (3, 2, 5), ints(_RNG.integers(0, 3, (4, 2))))),
    "options_ignored": (lambda L, x, w, t: F(L).linear_cross_entropy(x, w, t, options=None),
                        ((4, 5), (3, 5), T4)),
}


@pytest.mark.parametrize("name", sorted(LCE))
def test_linear_cross_entropy_matches_torch(name, device):
    program, specs = LCE[name]
    # (the mean over class probabilities ends on DivBackward1 in torch, a division by a
    # number that rustgrad records as DivBackward0)
    check(program, *specs, device=device, grad_fn=name != "probabilities")


@pytest.mark.parametrize("name", ["mean", "bias_weight", "probabilities", "k_dimensional"])
def test_linear_cross_entropy_double_backward_and_gradcheck(name, device):
    program, specs = LCE[name]
    check_double_backward(program, *specs, device=device)
    if device == "cpu":
        assert grad_ok(program, *specs)


LCE_ERRORS = [
    (lambda L, x, w, t: F(L).linear_cross_entropy(x[None], w, t),
     "expected input with dimensionality 1 or 2, got 3"),
    (lambda L, x, w, t: F(L).linear_cross_entropy(x[0, 0], w, t),
     "expected input with dimensionality 1 or 2, got 0"),
    (lambda L, x, w, t: F(L).linear_cross_entropy(x, w[0], t),
     "expected linear_weight with dimensionality at least 2, got 1"),
    (lambda L, x, w, t: F(L).linear_cross_entropy(x, w[:, :4], t),
     "expected equal input and linear_weight last dimensions (in_features), got 5 and 4, "
     "respectively"),
    (lambda L, x, w, t: F(L).linear_cross_entropy(x, w, t, linear_bias=w[0, :4]),
     "expected linear_bias shape (3,), got (4,)"),
    (lambda L, x, w, t: F(L).linear_cross_entropy(x[0], w.reshape(3, 1, 5), t),
     "K-dimensional loss defined by linear_weight shape (3, 1, 5) requires batched input, "
     "(N, 5), got unbatched input with shape (5,)"),
    (lambda L, x, w, t: F(L).linear_cross_entropy(x, w, x[:, :3].softmax(1), ignore_index=1),
     "ignore_index cannot be specified when target contains probabilities"),
    (lambda L, x, w, t: F(L).linear_cross_entropy(x, w, t, label_smoothing=1.5),
     "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    (lambda L, x, w, t: F(L).linear_cross_entropy(x, w, t + 5), "Target 5 is out of bounds."),
    (lambda L, x, w, t: F(L).linear_cross_entropy(x, w, t, reduction="bad"),
     "bad is not a valid value for reduction"),
]


@pytest.mark.parametrize("k", range(len(LCE_ERRORS)))
def test_linear_cross_entropy_errors_match_torch(k, device):
    program, phrase = LCE_ERRORS[k]
    check_error(program, (4, 5), (3, 5), T4, device=device, phrase=phrase)


LCE_MODULES = {
    "plain": dict(),
    "bias_k_dimensional": dict(out_features=(2,), bias=True),
    "options": dict(reduction="sum", ignore_index=1, label_smoothing=0.25),
    "class_weight": dict(weight=np.array([0.5, 1.0, 2.0]), reduction="none"),
}


@pytest.mark.parametrize("name", sorted(LCE_MODULES))
def test_linear_cross_entropy_loss_module_matches_torch(name):
    kw = dict(LCE_MODULES[name])

    def program(lib):
        args = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        m = lib.nn.LinearCrossEntropyLoss(5, 3, dtype=lib.float64, **args)
        rows = m.linear.weight.shape[0]
        with lib.no_grad():
            m.linear.weight.copy_(lib.tensor(np.linspace(-1, 1, rows * 5).reshape(rows, 5)))
            if m.linear.bias is not None:
                m.linear.bias.copy_(lib.tensor(np.linspace(-0.5, 0.5, rows)))
        x = lib.tensor(np.linspace(-2, 2, 20).reshape(4, 5), requires_grad=True)
        shape = (4,) + tuple(kw.get("out_features", ()))
        t = lib.tensor(np.arange(math.prod(shape)).reshape(shape) % 3)
        loss = m(x, t)
        loss.sum().backward()
        return (repr(m), list(m.state_dict()), tuple(m.linear.weight.shape), loss, x.grad,
                m.linear.weight.grad, m.num_classes, m.out_features, m.ignore_index)

    parity(program)


# (out_features of two dims: torch's loss of 3-d logits ends on a ViewBackward0 of its nll_loss2d,
# which rustgrad's nll_loss does not record)
@pytest.mark.parametrize("kw", [dict(), dict(out_features=(2, 2), bias=True, reduction="none")])
def test_linear_cross_entropy_loss_module_on_each_device_matches_torch(kw, device):
    def program(L, x):
        m = L.nn.LinearCrossEntropyLoss(5, 3, device=x.device, dtype=x.dtype, **kw)
        rows = m.linear.weight.shape[0]
        with L.no_grad():
            m.linear.weight.copy_(L.tensor(np.linspace(-1, 1, rows * 5).reshape(rows, 5)))
            if m.linear.bias is not None:
                m.linear.bias.copy_(L.tensor(np.linspace(-0.5, 0.5, rows)))
        shape = (4,) + tuple(kw.get("out_features", ()))
        return m(x, L.tensor(np.arange(math.prod(shape)).reshape(shape) % 3))

    check(program, (4, 5), device=device)


def test_linear_cross_entropy_loss_module_errors_match_torch():
    same_error(lambda lib: lib.nn.LinearCrossEntropyLoss(5, 3, weight=lib.ones(4)),
               "expected weight shape to be (3,), got (4,)")
    same_error(lambda lib: lib.nn.LinearCrossEntropyLoss(5, 3, label_smoothing=2),
               "expected label_smoothing to be in range [0, 1], got 2")
    same_error(lambda lib: lib.nn.LinearCrossEntropyLoss(5, 3, 2), "takes 3 positional arguments")


# ---- assert_int_or_pair -------------------------------------------------------------------------
def test_assert_int_or_pair_matches_torch():
    parity(lambda lib: (F(lib).assert_int_or_pair(3, "k", "{} bad"),
                        F(lib).assert_int_or_pair((1, 2), "k", "{} bad"),
                        F(lib).assert_int_or_pair([1, 2], "k", "{} bad")))
    same_error(lambda lib: F(lib).assert_int_or_pair((1, 2, 3), "kernel_size",
                                                     "{} must be an int or a pair"),
               "kernel_size must be an int or a pair")
    same_error(lambda lib: F(lib).assert_int_or_pair(2.0, "k", "{}"), "has no len()")
