"""Python ints with integer tensors, as torch's: an int out of the tensor dtype's range wraps
around (uint8: 250 + 10 is 4, + 300 is 38) where NumPy would raise OverflowError, in the
operator, method, reflected and in-place forms; an alpha or an exponent that the dtype cannot
hold is refused with torch's RuntimeError."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import torch

from ..parity import parity, same_error

INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]

PROGRAMS = {
    "add": lambda x, s: x + s,
    "radd": lambda x, s: s + x,
    "sub": lambda x, s: x - s,
    "rsub": lambda x, s: s - x,
    "mul": lambda x, s: x * s,
    "rmul": lambda x, s: s * x,
    "add_alpha": lambda x, s: x.add(s, alpha=2),
    "sub_alpha": lambda x, s: x.sub(s, alpha=3),
    "floordiv": lambda x, s: x // s if s % 256 else x,
    "div": lambda x, s: x / s,
    "add_": lambda x, s: x.clone().add_(s),
    "iadd": lambda x, s: x.clone().__iadd__(s),
    "sub_": lambda x, s: x.clone().sub_(s),
    "mul_": lambda x, s: x.clone().mul_(s),
    "add_alpha_": lambda x, s: x.clone().add_(s, alpha=2),
}

SCALARS = [10, 300, -1, -300, 1000, 70000, 2**40, 2**63 - 1, 2**63, -(2**63)]


@pytest.mark.parametrize("prog", sorted(PROGRAMS))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_int_scalar_wraps_to_the_tensors_dtype(prog, dtype):
    values = [0, 5, 100, 250] if dtype == "uint8" else [-100, -5, 0, 5, 100]

    def run(lib):
        x = lib.tensor(values, dtype=getattr(lib, dtype))
        return [PROGRAMS[prog](x, s) for s in SCALARS]

    parity(run)


def test_uint8_examples():
    parity(lambda lib: (lib.tensor([250], dtype=lib.uint8) + 10,
                        lib.tensor([250], dtype=lib.uint8) + 300))
    assert parity(lambda lib: lib.tensor([250], dtype=lib.uint8) + 10).tolist() == [4]


def test_int_beyond_64_bits_is_refused():
    same_error(lambda lib: lib.tensor([2], dtype=lib.uint8) + 2**64, "")


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32"])
@pytest.mark.parametrize("form", ["add", "sub", "add_scalar", "add_"])
def test_alpha_the_dtype_cannot_hold_is_refused(dtype, form):
    def prog(lib):
        x = lib.tensor([3], dtype=getattr(lib, dtype))
        alpha = 2**40
        if form == "add":
            return x.add(x, alpha=alpha)
        if form == "sub":
            return x.sub(x, alpha=alpha)
        if form == "add_scalar":
            return x.add(3, alpha=alpha)
        return x.add_(3, alpha=alpha)

    same_error(prog, "value cannot be converted to type")


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("exponent", [300, 2**40, 2**63])
def test_integer_power_by_an_int_the_dtype_cannot_hold(dtype, exponent):
    def prog(lib):
        return lib.tensor([3], dtype=getattr(lib, dtype)) ** exponent

    if np.iinfo(dtype).max >= exponent:
        parity(prog)
    else:
        same_error(prog, "value cannot be converted to type")


def test_float_and_bool_scalars_keep_their_rules():
    def prog(lib):
        x = lib.tensor([250], dtype=lib.uint8)
        return x + True, x * 2.5, x + 300.0, lib.tensor([1.5]) + 300
    parity(prog)


CREATION = {
    "list": lambda lib, dt, v: lib.tensor([v, 1], dtype=dt),
    "number": lambda lib, dt, v: lib.tensor(v, dtype=dt),
    "tensor_in_list": lambda lib, dt, v: lib.tensor([lib.tensor(v)], dtype=dt),
    "full": lambda lib, dt, v: lib.full((2,), v, dtype=dt),
}


@pytest.mark.parametrize("form", sorted(CREATION))
@pytest.mark.parametrize("dtype", INT_DTYPES + ["bool"])
@pytest.mark.parametrize("value", [300, -1, -255, -256, 70000, 2**40])
def test_creating_a_narrow_integer_tensor_checks_the_range(form, dtype, value):
    def prog(lib):
        return CREATION[form](lib, getattr(lib, dtype), value)

    try:
        import torch

        prog(torch)
    except RuntimeError:
        same_error(prog, "value cannot be converted to type")
    else:
        parity(prog)


def test_numpy_arrays_are_cast_without_a_check():
    parity(lambda lib: lib.tensor(np.array([300, -1]), dtype=lib.uint8))


# ---- comparisons and writes of out-of-range Python ints ---------------------------------
# comparisons wrap the int into the dtype as arithmetic does (uint8 < 300 compares with 44);
# writes (fill_, clamp bounds, item assignment, where, masked_fill) take torch's checked
# conversion: out of range is a RuntimeError, but an unsigned dtype takes negatives down to
# -max, wrapped (uint8.fill_(-1) is 255).
COMPARES = {
    "lt": lambda x, s: x < s,
    "eq": lambda x, s: x == s,
    "gt": lambda x, s: x > s,
    "ge_method": lambda x, s: x.ge(s),
    "ne_function": lambda x, s: x.__ne__(s),
    "remainder": lambda x, s: x % s if s % 256 else x,
}


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16"])
@pytest.mark.parametrize("scalar", [300, 256, -1, -6, 1000, -129])
@pytest.mark.parametrize("name", list(COMPARES))
def test_comparison_with_an_out_of_range_int_wraps_as_torch(dtype, scalar, name):
    values = [0, 5, 44, 100, 127] + ([250, 255] if dtype == "uint8" else [-3, -24, -128])
    parity(lambda lib: COMPARES[name](lib.tensor(values, dtype=getattr(lib, dtype)), scalar))


WRITES = {
    "fill_": lambda lib, x, s: x.clone().fill_(s),
    "setitem": lambda lib, x, s: x.clone().__setitem__(0, s),
    "where": lambda lib, x, s: lib.where(x > 3, x, s),
    "masked_fill": lambda lib, x, s: x.masked_fill(x > 3, s),
    "full": lambda lib, x, s: lib.full((2,), s, dtype=x.dtype),
}


@pytest.mark.parametrize("dtype,scalar", [("uint8", 300), ("uint8", -256), ("int8", 128),
                                          ("int8", -129), ("int16", 40000)])
@pytest.mark.parametrize("name", list(WRITES))
def test_writing_an_int_the_dtype_cannot_hold_is_refused(dtype, scalar, name):
    same_error(lambda lib: WRITES[name](lib, lib.tensor([1, 5, 9], dtype=getattr(lib, dtype)),
                                        scalar),
               "value cannot be converted to type")


@pytest.mark.parametrize("dtype,scalar", [("uint8", -1), ("uint8", -255), ("int8", -128),
                                          ("uint8", 255)])
@pytest.mark.parametrize("name", ["fill_", "setitem", "masked_fill", "where"])
def test_writing_an_int_in_torchs_checked_range_matches(dtype, scalar, name):
    def fn(lib):
        x = lib.tensor([1, 5, 9], dtype=getattr(lib, dtype))
        out = WRITES[name](lib, x, scalar)
        return x if out is None else out

    parity(fn)


CLAMPS = {
    "clamp_min": lambda x, s: x.clamp(min=s),
    "clamp_max": lambda x, s: x.clamp(max=s),
    "clamp_both": lambda x, s: x.clamp(s, s),
    "clamp_": lambda x, s: x.clone().clamp_(min=s),
    "clamp_max_": lambda x, s: x.clone().clamp_(max=s),
}


@pytest.mark.parametrize("dtype,scalar", [("uint8", 300), ("uint8", 256), ("uint8", 255),
                                          ("uint8", -1), ("uint8", -256), ("int8", 128),
                                          ("int8", -129), ("int8", -128), ("int16", 40000),
                                          ("int16", -40000), ("int32", 2**40)])
@pytest.mark.parametrize("name", list(CLAMPS))
def test_clamp_int_bound_outside_the_dtype_as_torch(dtype, scalar, name):
    # torch's range check: a min above the dtype's range (a max below it) is refused with the
    # bound and the dtype named; a bound on the far side of the range clamps nothing
    def fn(lib):
        return CLAMPS[name](lib.tensor([1, 5, 9], dtype=getattr(lib, dtype)), scalar)

    try:
        fn(torch)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as info:
            fn(rustgrad)
        assert str(info.value) == str(e)
    else:
        parity(fn)
