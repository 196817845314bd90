"""Fetchers: turn one index (or one list of indices) from the index sampler into a collated
batch, for map-style datasets (index lookups) and iterable ones (next() on the stream). The
same code runs in the main process and in worker processes."""

from __future__ import annotations

from typing import Any, Callable


class _MapDatasetFetcher:
    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable[[Any], Any],
                 drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, possibly_batched_index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[possibly_batched_index])
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems:
            data = getitems(possibly_batched_index)
        else:
            data = [self.dataset[i] for i in possibly_batched_index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable[[Any], Any],
                 drop_last: bool) -> None:
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, possibly_batched_index: Any) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in possibly_batched_index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(possibly_batched_index)):
            raise StopIteration
        return self.collate_fn(data)


class _DatasetKind:
    """Which fetcher a dataset gets: Map (indexable) or Iterable (a stream)."""

    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind: int, dataset: Any, auto_collation: bool,
                       collate_fn: Callable[[Any], Any], drop_last: bool) -> Any:
        """The fetcher for a dataset of this kind."""
        cls = _MapDatasetFetcher if kind == _DatasetKind.Map else _IterableDatasetFetcher
        return cls(dataset, auto_collation, collate_fn, drop_last)
