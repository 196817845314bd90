"""The CPU backend's add_at: rows at a 1-D int64 index go through a Rust loop (embedding's
gradient); it must equal NumPy's add.at bit for bit, raise where add.at raises, and leave the
other index forms to add.at."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
from rustgrad import _core
from rustgrad._backends import cpu

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7,), (7, 3), (7, 2, 5)])
def test_rows_at_repeated_and_negative_indices_match_add_at_bits(dtype: type, shape: tuple) -> None:
    rng = np.random.default_rng(0)
    target = rng.standard_normal(shape).astype(dtype)
    index = rng.integers(-7, 7, 40)
    values = (rng.standard_normal((40,) + shape[1:]) * 1e-3).astype(dtype)
    want = target.copy()
    np.add.at(want, index, values)
    got = target.copy()
    assert _core._index_add_rows(got, index, values)
    np.testing.assert_array_equal(got, want)
    got = target.copy()
    cpu.add_at(got, (index,), values[::-1].copy()[::-1])  # a strided values array
    np.testing.assert_array_equal(got, want)


def test_an_out_of_range_index_raises_numpys_error_and_writes_nothing() -> None:
    target = np.zeros((4, 2), np.float32)
    with pytest.raises(IndexError):
        cpu.add_at(target, np.array([0, 4]), np.ones((2, 2), np.float32))
    assert not target.any()


@pytest.mark.parametrize("case", ["int32 index", "2-d index", "broadcast values", "int target",
                                  "overlap", "0-d target"])
def test_other_forms_are_declined(case: str) -> None:
    t = np.zeros((4, 2), np.float32)
    i = np.array([1, 1])
    v = np.ones((2, 2), np.float32)
    if case == "int32 index":
        i = i.astype(np.int32)
    elif case == "2-d index":
        i, v = i.reshape(1, 2), v.reshape(1, 2, 2)
    elif case == "broadcast values":
        v = np.ones(2, np.float32)
    elif case == "int target":
        t = t.astype(np.int64)
    elif case == "overlap":
        v = t[:2]
    else:
        t = np.zeros((), np.float32)
    before = t.copy()
    assert not _core._index_add_rows(t, i, v)
    np.testing.assert_array_equal(t, before)


def test_embedding_gradient_matches_torch() -> None:
    rng = np.random.default_rng(1)
    w = rng.standard_normal((10, 4)).astype(np.float32)
    idx = rng.integers(0, 10, (3, 6))
    g = rng.standard_normal((3, 6, 4)).astype(np.float32)
    grads = []
    for lib in (rustgrad, torch):
        wt = lib.tensor(w, requires_grad=True)
        lib.nn.functional.embedding(lib.tensor(idx), wt).backward(lib.tensor(g))
        grads.append(wt.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
