"""affine_grid and grid_sample (2-d and 3-d) against torch: values, grid_fn names, gradients of
the input and the grid, double backward, gradcheck, warnings and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import F, check, check_double_backward, check_error, grad_ok, parity

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")


def _sample(mode, padding, align):
    return lambda L, x, g: F(L).grid_sample(x, g, mode=mode, padding_mode=padding,
                                            align_corners=align)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_2d_matches_torch(mode, padding, align, device):
    # grid values in [-1.5, 1.5): points inside, on the way out and outside the input
    check(_sample(mode, padding, align), (2, 3, 4, 5), (2, 3, 6, 2), device=device, low=-1.5,
          high=1.5)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", ("bilinear", "nearest"))
def test_grid_sample_3d_matches_torch(mode, padding, align, device):
    check(_sample(mode, padding, align), (2, 2, 3, 4, 5), (2, 2, 3, 2, 3), device=device,
          low=-1.5, high=1.5)


def test_grid_sample_input_or_grid_alone_requires_grad(device):
    check(lambda L, x, g: F(L).grid_sample(x, g.detach(), align_corners=False), (1, 2, 3, 4),
          (1, 2, 2, 2), device=device)
    check(lambda L, x, g: F(L).grid_sample(x.detach(), g, mode="bicubic", align_corners=True),
          (1, 2, 3, 4), (1, 2, 2, 2), device=device)


AFFINE = {
    "2d": lambda L, th: F(L).affine_grid(th, (2, 3, 4, 5), align_corners=False),
    "2d_align": lambda L, th: F(L).affine_grid(th, [2, 3, 4, 5], align_corners=True),
    "3d": lambda L, th: F(L).affine_grid(th.reshape(2, 3, 2)[:, :, :1].expand(2, 3, 4).contiguous()
                                         * th.sum(), (2, 1, 3, 4, 5), align_corners=False),
    "3d_align": lambda L, th: F(L).affine_grid(th.repeat(1, 2, 2)[:, :3, :4], (2, 1, 2, 3, 4),
                                               align_corners=True),
    "unit_size": lambda L, th: F(L).affine_grid(th, (2, 3, 1, 3), align_corners=False),
}


@pytest.mark.parametrize("name", sorted(AFFINE))
def test_affine_grid_matches_torch(name, device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(AFFINE[name], (2, 2, 3), device=device)


def test_spatial_transformer_matches_torch(device):
    # affine_grid then grid_sample: the gradient reaches theta through the grid
    def program(L, x, th):
        grid = F(L).affine_grid(th, tuple(x.shape), align_corners=False)
        return F(L).grid_sample(x, grid, padding_mode="border", align_corners=False)

    check(program, (2, 3, 4, 5), (2, 2, 3), device=device, low=-1.0, high=1.0)


@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_double_backward_matches_torch(mode):
    check_double_backward(_sample(mode, "zeros", False), (1, 2, 3, 4), (1, 2, 3, 2), low=-1.2,
                          high=1.2)


def test_grid_sample_gradcheck():
    for mode in MODES:
        for padding in PADDINGS:
            assert grad_ok(_sample(mode, padding, mode != "nearest"), (1, 2, 3, 4), (1, 2, 2, 2),
                           low=-1.2, high=1.2)
    assert grad_ok(_sample("bilinear", "reflection", False), (1, 1, 2, 3, 2), (1, 2, 1, 2, 3),
                   low=-1.2, high=1.2)
    assert grad_ok(lambda L, th: F(L).affine_grid(th, (1, 1, 3, 2), align_corners=True),
                   (1, 2, 3))


def test_grid_sample_saved_attributes_match_torch():
    def program(lib):
        x = lib.ones(1, 1, 2, 2, dtype=lib.float64, requires_grad=True)
        g = lib.zeros(1, 1, 1, 2, dtype=lib.float64)
        y = F(lib).grid_sample(x, g, mode="nearest", padding_mode="reflection",
                               align_corners=True)
        th = lib.zeros(1, 2, 3, dtype=lib.float64, requires_grad=True)
        a = F(lib).affine_grid(th, (1, 1, 2, 2), align_corners=False)
        return (y.grad_fn._saved_interpolation_mode, y.grad_fn._saved_padding_mode,
                y.grad_fn._saved_align_corners, y.grad_fn._saved_grid,
                a.grad_fn._saved_size, a.grad_fn._saved_align_corners)

    parity(program)


@pytest.mark.parametrize("lib", [torch, rustgrad], ids=["torch", "rustgrad"])
def test_align_corners_none_warns_as_torch_at_the_callers_line(lib):
    x = lib.zeros(1, 1, 2, 2)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior") as rec:
        grid = lib.nn.functional.affine_grid(lib.zeros(1, 2, 3), (1, 1, 2, 2))
    assert rec[0].filename == __file__
    with pytest.warns(UserWarning, match="to align_corners=False since 1.3.0") as rec:
        lib.nn.functional.grid_sample(x, grid)
    assert rec[0].filename == __file__
    with pytest.warns(UserWarning, match="unit-size grids when align_corners=True"):
        lib.nn.functional.affine_grid(lib.zeros(1, 2, 3), (1, 1, 1, 2), align_corners=True)


def test_grid_sample_errors_match_torch(device):
    def gs(shape_x, shape_g, **kw):
        kw.setdefault("align_corners", False)
        return lambda L: F(L).grid_sample(L.zeros(*shape_x), L.zeros(*shape_g), **kw)

    cases = [
        (gs((1, 2, 3, 4), (1, 2, 2, 3)), "expected grid to have size 2 in last dimension"),
        (gs((1, 2, 3, 4), (2, 2, 2, 2)), "expected grid and input to have same batch size"),
        (gs((1, 2, 3, 4), (1, 2, 2, 2, 2)), "expected 4D input and grid with same number"),
        (gs((1, 2, 3), (1, 2, 1)), "expected 5D input and grid with same number of dimensions"),
        (gs((1, 2, 0, 4), (1, 2, 2, 2)), "with dimension 2 being empty"),
        (gs((1, 2, 3, 4), (1, 2, 2, 2), mode="linear"), "expected mode to be 'bilinear', "),
        (gs((1, 2, 3, 4), (1, 2, 2, 2), padding_mode="edge"), "expected padding_mode to be"),
        (lambda L: F(L).grid_sample(L.zeros(1, 2, 3, 4, dtype=L.float64), L.zeros(1, 2, 2, 2),
                                    align_corners=True), "expected scalar type Double but found "
                                                         "Float"),
        (lambda L: F(L).grid_sample(L.zeros(1, 2, 3, 4, dtype=L.int64),
                                    L.zeros(1, 2, 2, 2, dtype=L.int64), align_corners=True),
         "not implemented for 'Long'"),
        (lambda L: F(L).affine_grid(L.zeros(2, 2, 3), (2, 3, 4), align_corners=False),
         "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
         "respectively. Got size (2, 3, 4)."),
        (lambda L: F(L).affine_grid(L.zeros(2, 3, 3), (2, 3, 4, 5), align_corners=False),
         "Expected a batch of 2D affine matrices of shape Nx2x3 for size (2, 3, 4, 5). Got "
         "torch.Size([2, 3, 3])."),
        (lambda L: F(L).affine_grid(L.zeros(2, 2, 3), [2, 3, 4, 5, 6], align_corners=False),
         "Expected a batch of 3D affine matrices of shape Nx3x4 for size [2, 3, 4, 5, 6]."),
        (lambda L: F(L).affine_grid(L.zeros(2, 2, 3, dtype=L.int64), (2, 3, 4, 5),
                                    align_corners=False),
         "Expected theta to have floating point type, but got torch.int64"),
        (lambda L: F(L).affine_grid(L.zeros(2, 2, 3), (2, 3, 0, 5), align_corners=False),
         "Expected non-zero, positive output size. Got (2, 3, 0, 5)"),
        (lambda L: F(L).affine_grid(L.zeros(2, 2, 3), (3, 3, 4, 5), align_corners=False),
         "Expected size for first two dimensions of batch2 tensor to be: [3, 3] but got: [2, 3]."),
    ]
    for program, phrase in cases:
        check_error(program, device=device, phrase=phrase)


def test_grid_sample_empty_batch_and_channels_match_torch(device):
    check(_sample("bilinear", "zeros", False), np.zeros((0, 2, 3, 4)), np.zeros((0, 2, 2, 2)),
          device=device)
    check(_sample("bicubic", "border", True), np.zeros((1, 0, 3, 4)), (1, 2, 2, 2),
          device=device)
