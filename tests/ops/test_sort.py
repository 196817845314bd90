"""Searches in sorted sequences against torch: searchsorted (left/right, side=, sorter=, batched
boundaries, out_int32) and bucketize, with torch's errors."""

from __future__ import annotations

from ..parity import parity, same_error


def test_searchsorted_matches_torch():
    seq = [1, 3, 5, 7, 9]
    vals = [3, 6, 9, 0, 10]
    parity(lambda L: L.searchsorted(L.tensor(seq), L.tensor(vals)))
    parity(lambda L: L.searchsorted(L.tensor(seq), L.tensor(vals), right=True))
    parity(lambda L: L.searchsorted(L.tensor(seq), L.tensor(vals), side="right"))
    parity(lambda L: L.searchsorted(L.tensor(seq), L.tensor([[3, 4], [8, 1]])))
    parity(lambda L: L.searchsorted(L.tensor(seq), 5))
    parity(lambda L: L.searchsorted(L.tensor(seq), L.tensor(vals), out_int32=True))
    parity(lambda L: L.searchsorted(L.tensor([[1.0, 3, 5], [2, 4, 6]]), L.tensor([[3.0, 7], [3, 0]])))
    parity(lambda L: L.searchsorted(L.tensor([5.0, 1, 3]), L.tensor([2.0, 4.0]),
                                    sorter=L.tensor([1, 2, 0])))
    same_error(lambda L: L.searchsorted(L.tensor(seq), L.tensor([3]), side="left", right=True),
               "side and right can't be set to opposites")
    same_error(lambda L: L.searchsorted(L.tensor(seq), L.tensor([3]), side="x"),
               "side can only be 'left' or 'right'")
    same_error(lambda L: L.searchsorted(L.tensor([[1, 3, 5], [2, 4, 6]]), L.tensor([3])),
               "boundaries tensor should be 1 dimension or the first N-1 dimensions")


def test_bucketize_matches_torch():
    b = [1.0, 3.0, 5.0, 7.0]
    parity(lambda L: L.bucketize(L.tensor([[0.5, 3.0], [6.0, 9.0]]), L.tensor(b)))
    parity(lambda L: L.bucketize(L.tensor([0.5, 3.0, 7.0]), L.tensor(b), right=True))
    parity(lambda L: L.bucketize(L.tensor([3.0]), L.tensor(b), out_int32=True))
    parity(lambda L: L.bucketize(3, L.tensor(b)))
    same_error(lambda L: L.bucketize(L.tensor([1]), L.tensor([[1, 2]])), "must be 1 dimension")
