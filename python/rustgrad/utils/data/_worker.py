"""The DataLoader's worker processes: the loop each one runs (index lists in, collated batches
out, each tagged with its task number so the main process can put them back in order), the
per-worker seeding, and `get_worker_info()`."""

from __future__ import annotations

import os
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

import rustgrad

from ._fetch import _DatasetKind

# how often (seconds) a blocked worker or main process checks that its peer is still alive
MP_STATUS_CHECK_INTERVAL = 5.0


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker process knows about itself: id, num_workers, seed and its dataset copy
    (frozen, as torch's)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any
    rng: Any = None
    worker_method: Optional[str] = "multiprocessing"


_worker_info: Optional[WorkerInfo] = None


def get_worker_info() -> Optional[WorkerInfo]:
    """In a DataLoader worker process, its WorkerInfo; in the main process, None."""
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's iterable dataset copy is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Persistent workers: start a new pass (a fresh fetcher, hence a fresh dataset iterator)."""


class _ExceptionWrapper:
    """An exception raised in a worker, carried to the main process and raised there again with
    the worker's traceback in its message (torch's wording)."""

    def __init__(self, where: str) -> None:
        exc_type, exc, tb = sys.exc_info()
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self) -> None:
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            # KeyError's str() is the repr of its argument: keep the newlines readable
            raise KeyError(_KeyErrorMessage(msg))
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class _KeyErrorMessage(str):
    def __repr__(self) -> str:
        return str(self)


def _seed_worker(base_seed: int, worker_id: int) -> int:
    """Seeds Python's, rustgrad's and NumPy's global RNGs differently in every worker."""
    seed = base_seed + worker_id
    random.seed(seed)
    rustgrad.manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    return seed


def _worker_loop(dataset_kind: int, dataset: Any, index_pipe: Any, data_queue: Any,
                 done_event: Any, auto_collation: bool, collate_fn: Callable[[Any], Any],
                 drop_last: bool, base_seed: int, init_fn: Optional[Callable[[int], None]],
                 worker_id: int, num_workers: int) -> None:
    """One worker: (task, indices) from index_pipe -> (task, batch) to data_queue, until None."""
    global _worker_info
    try:
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        init_exception: Optional[_ExceptionWrapper] = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation,
                                                  collate_fn, drop_last)
        except Exception:
            init_exception = _ExceptionWrapper(where)
        iteration_end = False
        parent = os.getppid()
        while os.getppid() == parent:  # stop when the main process is gone
            if not index_pipe.poll(MP_STATUS_CHECK_INTERVAL):
                continue
            try:
                r = index_pipe.recv()
            except EOFError:  # the main process closed its end
                break
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation,
                                                      collate_fn, drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                data: Any = init_exception
                init_exception = None
            else:
                try:
                    data = fetcher.fetch(index)  # type: ignore[union-attr]
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = _ExceptionWrapper(where)
            data_queue.put((idx, data))
            del data, idx, index, r
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
