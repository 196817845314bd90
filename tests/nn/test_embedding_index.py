"""Embedding indices must lie in [0, num_embeddings): a negative index raises torch's
IndexError instead of wrapping to a row counted from the end."""

from __future__ import annotations

from types import ModuleType
from typing import Any, Callable

import pytest

FORMS: dict[str, Callable[[ModuleType, Any, Any], Any]] = {
    "F.embedding": lambda lib, w, i: lib.nn.functional.embedding(i, w),
    "torch.embedding": lambda lib, w, i: lib.embedding(w, i),
    "F.embedding padding_idx=-1": lambda lib, w, i: lib.nn.functional.embedding(i, w, padding_idx=-1),
}


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("indices", [[-1], [0, -4], [[1, -1]], [4], [-5]])
def test_out_of_range_index_raises(lib: ModuleType, form: str, indices: list[Any]) -> None:
    w = lib.arange(12.0).reshape(4, 3).requires_grad_()
    with pytest.raises(IndexError, match=r"^index out of range in self$"):
        FORMS[form](lib, w, lib.tensor(indices))
    assert w.grad is None


def test_module_with_negative_index_raises(lib: ModuleType) -> None:
    emb = lib.nn.Embedding(4, 3)
    with pytest.raises(IndexError, match=r"^index out of range in self$"):
        emb(lib.tensor([2, -1]))


def test_in_range_indices_still_gather_and_backward(lib: ModuleType) -> None:
    w = lib.arange(12.0).reshape(4, 3).requires_grad_()
    out = lib.nn.functional.embedding(lib.tensor([[0, 3], [3, 3]]), w)
    assert out.tolist() == [[[0.0, 1.0, 2.0], [9.0, 10.0, 11.0]], [[9.0, 10.0, 11.0]] * 2]
    out.sum().backward()
    assert w.grad.tolist() == [[1.0] * 3, [0.0] * 3, [0.0] * 3, [3.0] * 3]
    assert tuple(lib.nn.functional.embedding(lib.tensor([], dtype=lib.long), w).shape) == (0, 3)
