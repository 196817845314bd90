"""Parity of matmul / @ / mm with torch: every rank combination and grad_fn name."""

from __future__ import annotations

import pytest

from .helpers import check

MATMUL_SHAPES = [
    ((4,), (4,)),  # dot
    ((3, 4), (4,)),  # mv
    ((4,), (4, 5)),  # vector @ matrix
    ((3, 4), (4, 5)),  # mm
    ((2, 3, 4), (2, 4, 5)),  # bmm
    ((2, 3, 4), (4, 5)),  # batched @ matrix
    ((3, 4), (2, 4, 5)),  # matrix @ batched
    ((2, 1, 3, 4), (5, 4, 2)),  # broadcast batch
    ((4,), (2, 4, 5)),  # vector @ batched
    ((2, 3, 4), (4,)),  # batched @ vector
    ((1, 4), (4, 1)),
    ((0, 4), (4, 3)),
    ((3, 0), (0, 2)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_rank_combinations_match_torch(shapes):
    check(lambda lib, a, b: lib.matmul(a, b), *shapes)
    check(lambda lib, a, b: a @ b, *shapes)


def test_mm_method_and_function_match_torch():
    check(lambda lib, a, b: (a.mm(b), lib.mm(a, b), a.matmul(b)), (3, 4), (4, 2))


def test_matmul_chain_with_transposed_operand_matches_torch():
    check(lambda lib, a, b: (a @ b.t()) @ a, (3, 3), (3, 3))


def test_matmul_only_one_operand_requires_grad_other_grad_none():
    check(lambda lib, a, b: a @ b.detach(), (2, 3, 4), (4, 2))
    check(lambda lib, a, b: a.detach() @ b, (4,), (4, 2))
