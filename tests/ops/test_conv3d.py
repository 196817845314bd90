"""F.conv3d / F.conv_transpose3d and nn.Conv3d / ConvTranspose3d / LazyConv3d /
LazyConvTranspose3d against torch: values and every gradient (float32 and float64) on every
device, grad_fn names, double backward, gradcheck, torch's errors, module reprs and padding
modes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import rustgrad
import torch

from ..models import assert_close, twin
from ..parity import F, check, check_double_backward, check_error, grad_ok

# (stride, padding, dilation, groups, bias)
CONV = [
    (1, 0, 1, 1, True),
    (2, 1, 1, 1, False),
    ((1, 2, 1), (1, 1, 2), (2, 1, 1), 2, True),
    (1, "same", (1, 2, 1), 1, True),
    (1, "same", 1, 2, False),  # an even kernel dim: the extra 'same' element at the high end
    (1, "valid", 1, 1, True),
    ([2], [1], [1], 1, True),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's note on its extra copy
@pytest.mark.parametrize("args", CONV, ids=[str(a) for a in CONV])
def test_conv3d_matches_torch(args: Any, device: str) -> None:
    s, p, d, g, bias = args
    specs = [(2, 4, 4, 5, 5), (6, 4 // g, 3, 2, 3)] + ([(6,)] if bias else [])
    check(lambda lib, x, w, *b: F(lib).conv3d(x, w, b[0] if b else None, s, p, d, g), *specs,
          device=device)


def test_conv3d_unbatched_and_torch_namespace(device: str) -> None:
    check(lambda lib, x, w, b: lib.conv3d(x, w, b, padding=1), (2, 3, 4, 3), (3, 2, 2, 2, 2),
          (3,), device=device)
    # 1x1x1 kernel, one output position, only some inputs requiring grad
    check(lambda lib, x, w: F(lib).conv3d(x.detach(), w, stride=5), (1, 2, 2, 2, 2),
          (3, 2, 1, 1, 1), device=device)


# (stride, padding, output_padding, groups, dilation, bias)
TRANSPOSE = [
    (1, 0, 0, 1, 1, True),
    (2, 1, 1, 1, 1, False),
    ((1, 2, 3), (0, 1, 0), (0, 1, 2), 2, (2, 1, 1), True),
    (2, 0, 1, 1, 2, True),  # output_padding >= stride is allowed below the dilation
]


@pytest.mark.parametrize("args", TRANSPOSE, ids=[str(a) for a in TRANSPOSE])
def test_conv_transpose3d_matches_torch(args: Any, device: str) -> None:
    s, p, o, g, d, bias = args
    specs = [(2, 4, 3, 2, 3), (4, 6 // g, 2, 3, 2)] + ([(6,)] if bias else [])
    check(lambda lib, x, w, *b: F(lib).conv_transpose3d(x, w, b[0] if b else None, s, p, o, g,
                                                         d), *specs, device=device)


def test_conv_transpose3d_unbatched(device: str) -> None:
    check(lambda lib, x, w: lib.conv_transpose3d(x, w, None, 2), (2, 2, 3, 2), (2, 3, 2, 2, 1),
          device=device)


def test_grad_fn_names(lib: Any) -> None:
    x = lib.ones(1, 2, 3, 3, 3, requires_grad=True)
    w = lib.ones(2, 2, 2, 2, 2)
    assert F(lib).conv3d(x, w).grad_fn.name() == "ConvolutionBackward0"
    assert F(lib).conv_transpose3d(x, w).grad_fn.name() == "ConvolutionBackward0"
    assert F(lib).conv3d(x[0], w).grad_fn.name() == "SqueezeBackward1"
    out = F(lib).conv3d(x, w)
    assert out.grad_fn._saved_input is x if lib is rustgrad else True
    with lib.no_grad():
        assert F(lib).conv3d(x, w).grad_fn is None


def test_double_backward(device: str) -> None:
    # (no bias: torch's bias gradient requires grad under create_graph through its node's
    # other inputs; rustgrad's, a sum of the incoming gradient, only where that does)
    check_double_backward(lambda lib, x, w: F(lib).conv3d(
        x, w, stride=(1, 2, 1), padding=1, groups=2), (1, 4, 3, 4, 3), (4, 2, 2, 2, 2),
        device=device)
    check_double_backward(lambda lib, x, w: F(lib).conv_transpose3d(
        x, w, stride=2, padding=1, output_padding=1), (1, 2, 2, 3, 2), (2, 3, 2, 2, 2),
        device=device)


def test_gradcheck() -> None:
    assert grad_ok(lambda lib, x, w, b: F(lib).conv3d(x, w, b, 2, (1, 0, 1), (1, 1, 2), 2),
                   (1, 4, 4, 3, 5), (2, 2, 2, 2, 2), (2,))
    assert grad_ok(lambda lib, x, w, b: F(lib).conv3d(x, w, b, padding="same"),
                   (1, 2, 3, 3, 3), (2, 2, 2, 3, 2), (2,))
    assert grad_ok(lambda lib, x, w, b: F(lib).conv_transpose3d(x, w, b, 2, 1, (1, 0, 1)),
                   (1, 2, 2, 3, 2), (2, 2, 2, 2, 3), (2,))


ERRORS = {
    "input_3d": (lambda L, x, w: F(L).conv3d(x[0, 0], w), (1, 4, 5, 5, 5), (6, 4, 3, 3, 3)),
    "input_6d": (lambda L, x, w: F(L).conv3d(x[..., None], w), (1, 4, 5, 5, 5), (6, 4, 3, 3, 3)),
    "channels": (lambda L, x, w: F(L).conv3d(x, w), (1, 4, 5, 5, 5), (6, 2, 3, 3, 3)),
    "groups_channels": (lambda L, x, w: F(L).conv3d(x, w, groups=3), (1, 4, 5, 5, 5),
                        (6, 2, 3, 3, 3)),
    "groups_zero": (lambda L, x, w: F(L).conv3d(x, w, groups=0), (1, 4, 5, 5, 5),
                    (6, 4, 3, 3, 3)),
    "stride_zero": (lambda L, x, w: F(L).conv3d(x, w, stride=0), (1, 4, 5, 5, 5),
                    (6, 4, 3, 3, 3)),
    "negative_padding": (lambda L, x, w: F(L).conv3d(x, w, padding=-1), (1, 4, 5, 5, 5),
                         (6, 4, 3, 3, 3)),
    "kernel_too_big": (lambda L, x, w: F(L).conv3d(x, w), (1, 4, 5, 5, 5), (6, 4, 7, 3, 3)),
    "dilation_zero": (lambda L, x, w: F(L).conv3d(x, w, dilation=0), (1, 4, 5, 5, 5),
                      (6, 4, 3, 3, 3)),
    "dtypes": (lambda L, x, w: F(L).conv3d(x, w.float()), (1, 4, 5, 5, 5), (6, 4, 3, 3, 3)),
    "same_strided": (lambda L, x, w: F(L).conv3d(x, w, padding="same", stride=2),
                     (1, 4, 5, 5, 5), (6, 4, 3, 3, 3)),
    "bad_string": (lambda L, x, w: F(L).conv3d(x, w, padding="full"), (1, 4, 5, 5, 5),
                   (6, 4, 3, 3, 3)),
    "weight_4d": (lambda L, x, w: F(L).conv3d(x, w[..., 0]), (1, 4, 5, 5, 5), (6, 4, 3, 3, 3)),
    "stride_pair": (lambda L, x, w: F(L).conv3d(x, w, stride=(1, 2)), (1, 4, 5, 5, 5),
                    (6, 4, 3, 3, 3)),
    "padding_pair": (lambda L, x, w: F(L).conv3d(x, w, padding=(1, 1)), (1, 4, 5, 5, 5),
                     (6, 4, 3, 3, 3)),
    "bias_size": (lambda L, x, w, b: F(L).conv3d(x, w, b), (1, 4, 5, 5, 5), (6, 4, 3, 3, 3),
                  (5,)),
    "no_filters": (lambda L, x, w: F(L).conv3d(x, w), (1, 4, 5, 5, 5), (0, 4, 3, 3, 3)),
    "transpose_channels": (lambda L, x, w: F(L).conv_transpose3d(x, w), (1, 4, 3, 3, 3),
                           (2, 3, 2, 2, 2)),
    "transpose_output_padding": (lambda L, x, w: F(L).conv_transpose3d(x, w, output_padding=1),
                                 (1, 2, 3, 3, 3), (2, 3, 2, 2, 2)),
    "transpose_input_3d": (lambda L, x, w: F(L).conv_transpose3d(x[0, 0], w), (1, 2, 3, 3, 3),
                           (2, 3, 2, 2, 2)),
    "transpose_bias": (lambda L, x, w, b: F(L).conv_transpose3d(x, w, b), (1, 2, 3, 3, 3),
                       (2, 3, 2, 2, 2), (2,)),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_torch(case: str, device: str) -> None:
    fn, *specs = ERRORS[case]
    check_error(fn, *specs, device=device)


MODULES = [
    ("conv", lambda L: L.nn.Conv3d(4, 6, 3, stride=(1, 2, 1), padding=1, groups=2), (2, 4, 4, 5, 4)),
    ("conv_same_nobias", lambda L: L.nn.Conv3d(2, 3, (2, 3, 2), padding="same", bias=False),
     (1, 2, 3, 4, 4)),
    ("conv_reflect", lambda L: L.nn.Conv3d(2, 3, 3, padding=1, padding_mode="reflect"),
     (1, 2, 4, 4, 4)),
    ("conv_replicate_same", lambda L: L.nn.Conv3d(2, 3, 2, padding="same",
                                                  padding_mode="replicate"), (1, 2, 3, 4, 3)),
    ("conv_circular_unbatched", lambda L: L.nn.Conv3d(2, 2, 3, padding=(1, 0, 1),
                                                      padding_mode="circular"), (2, 4, 4, 4)),
    ("transpose", lambda L: L.nn.ConvTranspose3d(4, 2, 3, stride=2, padding=1, output_padding=1,
                                                 groups=2), (2, 4, 2, 3, 2)),
    ("transpose_dilated_nobias", lambda L: L.nn.ConvTranspose3d(2, 3, 2, dilation=2, bias=False),
     (2, 3, 2, 2)),
]


@pytest.mark.parametrize("case", MODULES, ids=[c[0] for c in MODULES])
def test_modules_match_torch(case: Any) -> None:
    _, build, shape = case
    tm, rm = twin(build)
    assert repr(rm) == repr(tm)
    assert list(rm.state_dict()) == list(tm.state_dict())
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    tx, rx = torch.tensor(x, requires_grad=True), rustgrad.tensor(x, requires_grad=True)
    to, ro = tm(tx), rm(rx)
    assert_close(ro, to)
    assert ro.grad_fn.name() == to.grad_fn.name()
    up = np.random.default_rng(1).standard_normal(tuple(to.shape)).astype(np.float32)
    (to * torch.tensor(up)).sum().backward()
    (ro * rustgrad.tensor(up)).sum().backward()
    assert_close(rx.grad, tx.grad, what="input grad")
    for (name, tp), (_, rp) in zip(tm.named_parameters(), rm.named_parameters()):
        assert_close(rp.grad, tp.grad, rtol=1e-4, atol=1e-5, what=name)  # float32 sums


def test_transpose_module_output_size() -> None:
    tm, rm = twin(lambda L: L.nn.ConvTranspose3d(2, 2, 3, stride=2))
    x = np.random.default_rng(0).standard_normal((1, 2, 2, 3, 2)).astype(np.float32)
    to = tm(torch.tensor(x), output_size=[6, 7, 5])
    ro = rm(rustgrad.tensor(x), output_size=[6, 7, 5])
    assert_close(ro, to)


@pytest.mark.parametrize("make", [
    lambda L: L.nn.LazyConv3d(4, 2, stride=(1, 2, 1), groups=2),
    lambda L: L.nn.LazyConvTranspose3d(3, 2, stride=2, bias=False),
])
def test_lazy_modules_materialize_as_torch(make: Any, device: str) -> None:
    tm = make(torch).double()
    rm = make(rustgrad).to(device).double()
    assert repr(rm) == repr(tm)
    x = np.random.default_rng(0).standard_normal((2, 4, 3, 4, 3))
    tm(torch.tensor(x))
    rm(rustgrad.tensor(x, device=device))
    assert type(rm).__name__ == type(tm).__name__ in ("Conv3d", "ConvTranspose3d")
    assert repr(rm) == repr(tm)
    assert [tuple(p.shape) for p in rm.parameters()] == [tuple(p.shape) for p in tm.parameters()]
    rm.load_state_dict({k: rustgrad.tensor(v.numpy(), device=device)
                        for k, v in tm.state_dict().items()})
    tx = torch.tensor(x, requires_grad=True)
    rx = rustgrad.tensor(x, device=device, requires_grad=True)
    to, ro = tm(tx), rm(rx)
    np.testing.assert_allclose(ro.detach().cpu().numpy(), to.detach().numpy(), rtol=1e-9,
                               atol=1e-10)
    to.sum().backward()
    ro.sum().backward()
    np.testing.assert_allclose(rx.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-10)
