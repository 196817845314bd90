"""F.interpolate and nn.Upsample* against torch: values, gradients and grad_fn names over a grid
of modes, sizes, scale factors, align_corners, recompute_scale_factor and antialias (3-D, 4-D and
5-D input),
torch's own index quirks (its nearest backward is not always its forward's transpose), double
backward, gradcheck, torch's errors and warnings, module repr and state_dict."""

from __future__ import annotations

import warnings
from typing import Any, Dict, List

import numpy as np
import pytest
import rustgrad
import torch

from ..models import assert_close
from ..parity import F, check, check_double_backward, check_error, grad_ok, same_error

MODES = {  # mode -> the input shapes it takes
    "nearest": [(2, 3, 4), (2, 2, 3, 5), (1, 2, 3, 2, 4)],
    "nearest-exact": [(2, 3, 7), (1, 2, 4, 3), (1, 1, 2, 3, 3)],
    "linear": [(2, 3, 4), (1, 2, 7)],
    "bilinear": [(2, 2, 3, 5), (1, 2, 4, 4)],
    "bicubic": [(2, 2, 3, 5), (1, 2, 4, 4)],
    "trilinear": [(1, 2, 3, 2, 4)],
}
SPECS: List[Dict[str, Any]] = (
    [{"size": n} for n in (1, 3, 6, 8)]
    + [{"scale_factor": s} for s in (0.5, 1.1, 2.0, 2.3, 1 / 3)]
    + [{"scale_factor": s, "recompute_scale_factor": True} for s in (0.7, 2.3)]
)
CASES = [
    (mode, shape, spec, ac)
    for mode, shapes in MODES.items()
    for shape in shapes
    for spec in SPECS
    for ac in ([None] if mode.startswith("nearest") else [False, True])
    # (torch's error for an empty output is tested below)
    if all(int(n * spec.get("scale_factor", 1)) > 0 for n in shape[2:])
]


def _id(case: Any) -> str:
    mode, shape, spec, ac = case
    vals = "-".join(str(v) if isinstance(v, tuple) else f"{v:.3g}" for v in spec.values())
    return f"{mode}-{len(shape)}d-{shape[2]}-{vals}-{ac}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_interpolate_matches_torch(case: Any) -> None:
    mode, shape, spec, ac = case
    check(lambda lib, x: F(lib).interpolate(x, mode=mode, align_corners=ac, **spec), shape)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
def test_per_dim_sizes_and_factors(mode: str) -> None:
    check(lambda lib, x: F(lib).interpolate(x, size=(5, 2), mode=mode), (2, 2, 3, 4))
    check(lambda lib, x: F(lib).interpolate(x, size=[1, 7], mode=mode), (1, 2, 3, 4))
    check(lambda lib, x: F(lib).interpolate(x, scale_factor=(2.0, 0.6), mode=mode),
          (1, 2, 3, 5))
    check(lambda lib, x: F(lib).interpolate(x, scale_factor=[1.5, 3], mode=mode,
                                            recompute_scale_factor=True), (1, 1, 4, 3))


AA_CASES = [(mode, shape, spec, ac) for mode in ("bilinear", "bicubic")
            for shape in ((1, 2, 9, 7), (2, 1, 3, 8))
            for spec in ({"size": (4, 2)}, {"size": (3, 11)}, {"scale_factor": 0.3},
                         {"scale_factor": 1.3}, {"scale_factor": (0.6, 2.0)})
            for ac in (False, True)
            if spec != {"scale_factor": 0.3} or shape[2] > 3]
# (torch 2.9's antialiased output of width 1 and height > 1 repeats the first row: not followed)


@pytest.mark.parametrize("case", AA_CASES, ids=[_id(c) for c in AA_CASES])
def test_antialias_matches_torch(case: Any) -> None:
    # 1.3 keeps a 3-long dim: torch's forward skips it, its backward does not
    mode, shape, spec, ac = case
    check(lambda lib, x: F(lib).interpolate(x, mode=mode, align_corners=ac, antialias=True,
                                            **spec), shape)


def test_nearest_backward_follows_torch_kernel() -> None:
    # torch's nearest backward copies when sizes are equal and halves the index at twice the
    # size, whatever the scale factor; its 1-d forward uses the scale (so the two disagree)
    for shape, sf in (((1, 2, 3), 2.3), ((1, 2, 2), 1.1), ((1, 1, 3, 3), 2.3),
                      ((1, 1, 5, 4), 1.1), ((1, 1, 2, 3, 3), 2.3)):
        check(lambda lib, x, sf=sf: F(lib).interpolate(x, scale_factor=sf), shape)


def test_bicubic_backward_same_size_copies() -> None:
    check(lambda lib, x: F(lib).interpolate(x, scale_factor=1.1, mode="bicubic"), (1, 2, 4, 4))
    check(lambda lib, x: F(lib).interpolate(x, scale_factor=(1.1, 2), mode="bicubic"),
          (1, 2, 4, 4))


def test_empty_batch_and_uint8() -> None:
    check(lambda lib, x: F(lib).interpolate(x, size=3, mode="bilinear"), (0, 2, 4, 4))
    img = np.arange(2 * 3 * 4 * 5, dtype=np.uint8).reshape(2, 3, 4, 5)
    for mode in ("nearest", "nearest-exact"):
        check(lambda lib, x, mode=mode: F(lib).interpolate(x, scale_factor=1.7, mode=mode), img,
              dtypes=[None], backward=False)


@pytest.mark.parametrize("mode,shape", [("nearest", (1, 2, 3, 3)), ("linear", (2, 2, 4)),
                                        ("bicubic-aa", (1, 1, 5, 4)),
                                        ("bilinear", (1, 2, 3, 4)), ("bicubic", (1, 1, 3, 3)),
                                        ("trilinear", (1, 1, 2, 3, 2)),
                                        ("nearest-exact", (1, 2, 5))])
def test_double_backward_and_gradcheck(mode: str, shape: Any) -> None:
    kw = {"mode": mode.replace("-aa", ""), "antialias": mode.endswith("-aa")}

    def fn(lib: Any, x: Any) -> Any:
        y = F(lib).interpolate(x, scale_factor=0.6 if kw["antialias"] else 1.7, **kw)
        return y * y  # so the first-order gradient depends on x

    check_double_backward(fn, shape)
    assert grad_ok(lambda lib, x: F(lib).interpolate(x, size=5, **kw), shape)
    x = rustgrad.randn(*shape, dtype=rustgrad.float64, requires_grad=True)
    assert rustgrad.autograd.gradgradcheck(lambda x: fn(rustgrad, x), (x,))


def test_backward_node_names(lib: Any) -> None:
    x = lib.ones(1, 1, 2, 2, requires_grad=True)
    y = F(lib).interpolate(x, scale_factor=2, mode="bilinear")
    (g,) = lib.autograd.grad(y, x, lib.ones(1, 1, 4, 4, requires_grad=True), create_graph=True)
    assert g.grad_fn.name() == "UpsampleBilinear2DBackwardBackward0"


def test_area_downsampling() -> None:
    check(lambda lib, x: F(lib).interpolate(x, size=2, mode="area"), (2, 3, 6))
    check(lambda lib, x: F(lib).interpolate(x, scale_factor=0.5, mode="area"), (1, 2, 6, 4))


def test_device(device: str) -> None:
    for mode, shape in (("bilinear", (2, 2, 3, 4)), ("nearest", (1, 2, 5)),
                        ("bicubic", (1, 1, 4, 3))):
        check(lambda lib, x, mode=mode: F(lib).interpolate(x, scale_factor=1.6, mode=mode),
              shape, device=device)


ERRORS = [
    ("both", lambda lib, x: F(lib).interpolate(x, size=2, scale_factor=2.0),
     ValueError, "only one of size or scale_factor should be defined"),
    ("neither", lambda lib, x: F(lib).interpolate(x),
     ValueError, "either size or scale_factor should be defined"),
    ("size_len", lambda lib, x: F(lib).interpolate(x, size=(2, 3, 4)),
     ValueError, "Input and output must have the same number of spatial dimensions, but got "
     "input with spatial dimensions of [4, 5] and output size of (2, 3, 4)"),
    ("scale_len", lambda lib, x: F(lib).interpolate(x, scale_factor=[2.0]),
     ValueError, "Input and scale_factor must have the same number of spatial dimensions"),
    ("size_float", lambda lib, x: F(lib).interpolate(x, size=(2.0, 3)),
     TypeError, "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
     "Tuple[int, int, int], but got size with types [<class 'float'>, <class 'int'>]"),
    ("recompute_size", lambda lib, x: F(lib).interpolate(x, size=3, recompute_scale_factor=True),
     ValueError, "recompute_scale_factor is not meaningful with an explicit size."),
    ("align_nearest", lambda lib, x: F(lib).interpolate(x, size=3, align_corners=True),
     ValueError, "align_corners option can only be set with the interpolating modes: linear | "
     "bilinear | bicubic | trilinear"),
    ("antialias", lambda lib, x: F(lib).interpolate(x[0], size=3, mode="linear", antialias=True),
     ValueError, "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
     "requires a 4-D tensor as input"),
    ("lanczos_without_antialias", lambda lib, x: F(lib).interpolate(x, size=3, mode="lanczos"),
     ValueError, "Lanczos mode requires antialias=True"),
    ("bilinear_3d", lambda lib, x: F(lib).interpolate(x[0], size=3, mode="bilinear"),
     NotImplementedError, "Got 3D input, but bilinear mode needs 4D input"),
    ("linear_4d", lambda lib, x: F(lib).interpolate(x, size=3, mode="linear"),
     NotImplementedError, "Got 4D input, but linear mode needs 3D input"),
    ("trilinear_4d", lambda lib, x: F(lib).interpolate(x, size=3, mode="trilinear"),
     NotImplementedError, "Got 4D input, but trilinear mode needs 5D input"),
    ("bad_mode", lambda lib, x: F(lib).interpolate(x, size=3, mode="cubic"),
     NotImplementedError, "Input Error: Only 3D, 4D and 5D input Tensors supported (got 4D) for "
     "the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
     "nearest-exact (got cubic)"),
    ("bicubic_3d", lambda lib, x: F(lib).interpolate(x[0], size=3, mode="bicubic"),
     NotImplementedError, "Input Error: Only 3D, 4D and 5D input Tensors supported (got 3D)"),
    ("input_2d", lambda lib, x: F(lib).interpolate(x[0, 0], size=3),
     NotImplementedError, "Input Error: Only 3D, 4D and 5D input Tensors supported (got 2D)"),
    ("size_zero", lambda lib, x: F(lib).interpolate(x, size=(0, 2)),
     RuntimeError, "Input and output sizes should be greater than 0, but got input (H: 4, W: 5) "
     "output (H: 0, W: 2)"),
    ("scale_small", lambda lib, x: F(lib).interpolate(x, scale_factor=0.1, mode="bilinear"),
     RuntimeError, "output (H: 0, W: 0)"),
    ("size_zero_1d", lambda lib, x: F(lib).interpolate(x[0], size=0, mode="linear"),
     RuntimeError, "Input and output sizes should be greater than 0, but got input (W: 5) and "
     "output (W: 0)"),
    ("size_zero_3d", lambda lib, x: F(lib).interpolate(x[None], size=(1, 0, 2)),
     RuntimeError, "but got input (D: 3, H: 4, W: 5) output (D: 1, H: 0, W: 2)"),
    ("no_channels", lambda lib, x: F(lib).interpolate(x[:, :0], size=3),
     RuntimeError, "Non-empty 4D data tensor expected but got a tensor with sizes [2, 0, 4, 5]"),
    ("long", lambda lib, x: F(lib).interpolate(x.long(), size=3),
     NotImplementedError, "\"upsample_nearest2d_channels_last\" not implemented for 'Long'"),
    ("long_linear", lambda lib, x: F(lib).interpolate(x[0].long(), size=3, mode="linear"),
     NotImplementedError, "\"compute_indices_weights_linear\" not implemented for 'Long'"),
    ("int_bicubic", lambda lib, x: F(lib).interpolate(x.int(), size=3, mode="bicubic"),
     NotImplementedError, "\"compute_indices_weights_cubic\" not implemented for 'Int'"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors(case: Any) -> None:
    _, fn, kind, phrase = case
    et, _ = check_error(fn, (2, 3, 4, 5), phrase=phrase)
    assert type(et) is kind


@pytest.mark.parametrize("name,kw", [("upsample", {"mode": "bilinear"}),
                                     ("upsample_nearest", {}), ("upsample_bilinear", {})])
def test_deprecated_upsample_warns(name: str, kw: Dict[str, Any]) -> None:
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3))
    got = {}
    for lib in (torch, rustgrad):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = getattr(F(lib), name)(lib.tensor(x), scale_factor=2, **kw)
        got[lib.__name__] = (out, [(w.category, str(w.message)) for w in caught])
    assert got["rustgrad"][1] == got["torch"][1]
    assert f"`nn.functional.{name}` is deprecated" in got["torch"][1][0][1]
    assert_close(got["rustgrad"][0], got["torch"][0], rtol=1e-10, atol=1e-12)


# ---- modules ----------------------------------------------------------------------------------
MODULES = [
    ("upsample_scale", lambda L: L.nn.Upsample(scale_factor=2), (1, 2, 3, 3)),
    ("upsample_size", lambda L: L.nn.Upsample(size=(5, 4), mode="bilinear"), (1, 2, 3, 3)),
    ("upsample_tuple", lambda L: L.nn.Upsample(scale_factor=(2, 3), mode="bicubic",
                                               align_corners=True), (1, 1, 3, 2)),
    ("upsample_linear", lambda L: L.nn.Upsample(scale_factor=1.5, mode="linear",
                                                recompute_scale_factor=True), (2, 2, 5)),
    ("upsample_exact", lambda L: L.nn.Upsample(size=7, mode="nearest-exact"), (1, 2, 3)),
    ("nearest2d", lambda L: L.nn.UpsamplingNearest2d(scale_factor=3), (1, 2, 2, 3)),
    ("nearest2d_size", lambda L: L.nn.UpsamplingNearest2d(size=5), (1, 2, 2, 3)),
    ("bilinear2d", lambda L: L.nn.UpsamplingBilinear2d(scale_factor=2), (1, 2, 3, 3)),
    ("bilinear2d_size", lambda L: L.nn.UpsamplingBilinear2d(size=(4, 7)), (1, 2, 3, 3)),
]


@pytest.mark.parametrize("case", MODULES, ids=[c[0] for c in MODULES])
def test_modules_match_torch(case: Any) -> None:
    _, build, shape = case
    tm, rm = build(torch), build(rustgrad)
    assert repr(rm) == repr(tm)
    assert list(rm.state_dict()) == list(tm.state_dict()) == []
    for attr in ("name", "size", "scale_factor", "mode", "align_corners",
                 "recompute_scale_factor"):
        assert getattr(rm, attr) == getattr(tm, attr), attr
    x = np.random.default_rng(0).standard_normal(shape)
    tx, rx = torch.tensor(x, requires_grad=True), rustgrad.tensor(x, requires_grad=True)
    to, ro = tm(tx), rm(rx)
    assert ro.grad_fn.name() == to.grad_fn.name()
    assert_close(ro, to, rtol=1e-10, atol=1e-12)
    up = np.random.default_rng(1).standard_normal(tuple(to.shape))
    (to * torch.tensor(up)).sum().backward()
    (ro * rustgrad.tensor(up)).sum().backward()
    assert_close(rx.grad, tx.grad, rtol=1e-10, atol=1e-12)


def test_module_scale_factor_zero_is_none(lib: Any) -> None:
    m = lib.nn.Upsample(size=3, scale_factor=0)
    assert m.scale_factor is None
    assert repr(m) == "Upsample(size=3, mode='nearest')"


def test_module_errors() -> None:
    same_error(lambda L: L.nn.Upsample(size=3, scale_factor=2)(L.ones(1, 1, 2, 2)),
               "only one of size or scale_factor should be defined")
    same_error(lambda L: L.nn.UpsamplingBilinear2d(scale_factor=2)(L.ones(1, 1, 2)),
               "Got 3D input, but bilinear mode needs 4D input")
