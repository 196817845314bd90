"""The DataLoader's worker processes: the loop each one runs (index lists in, collated batches
out, each tagged with its task number so the main process can put them back in order), the
per-worker seeding, and `get_worker_info()`."""

from __future__ import annotations

import multiprocessing.queues
import os
import random
import sys
import traceback
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler
from typing import Any, Callable, List, Optional

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


class _UnpicklableResult(_ExceptionWrapper):
    """A worker's result that could not be pickled, sent in its place under the same task number:
    the main process raises the pickling error there, naming the samples (torch's loader loses
    the result and waits for it for ever)."""

    def __init__(self, exc: BaseException, result: Any) -> None:
        info = _worker_info
        super().__init__(f"in DataLoader worker process {info.id if info else '?'}")
        exc_type = type(exc)
        if not _picklable(exc_type):  # a class pickle cannot find travels as a RuntimeError
            exc_type = RuntimeError
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        # a list or tuple batch (collate_fn=list, say): the positions of the culprits in it
        self.length: Optional[int] = None
        self.positions: List[int] = []
        if isinstance(result, (list, tuple)):
            self.length = len(result)
            self.positions = [i for i, x in enumerate(result) if not _picklable(x)]

    def reraise_for(self, what: str, index: Any) -> None:
        """Raises the pickling error for `what`, the samples the result was made of, at `index`
        (the sampler's indices for the batch, or None)."""
        msg = (f"Caught {self.exc_type.__name__} {self.where} sending {what} to the main "
               "process: it cannot be pickled")
        many = len(self.positions) > 1
        if (self.positions and isinstance(index, (list, tuple)) and len(index) == self.length
                and None not in index):
            culprits = ", ".join(repr(index[i]) for i in self.positions)
            msg += f" (the sample{'s' if many else ''} at ind{'ices' if many else 'ex'} {culprits})"
        elif self.positions:
            culprits = ", ".join(map(str, self.positions))
            msg += f" (at position{'s' if many else ''} {culprits} in it)"
        msg += f".\nOriginal error: {self.exc_msg}"
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


def _picklable(obj: Any) -> bool:
    try:
        ForkingPickler.dumps(obj)
        return True
    except Exception:
        return False


class _ResultQueue(multiprocessing.queues.Queue):
    """The workers' result queue. A queue pickles what is put on it later, in a feeder thread, and
    a result that cannot be pickled (a lambda in a sample) is only printed there and lost, so
    the main process would wait for it for ever; here the feeder sends an _UnpicklableResult
    under the lost result's task number instead."""

    def _on_queue_feeder_error(self, e: Exception, obj: Any) -> None:
        if (isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], int)
                and not isinstance(obj[1], _UnpicklableResult)):
            task, result = obj
            if isinstance(result, _ExceptionWrapper) and not _picklable(result.exc_type):
                # the dataset's own error, of a class pickle cannot find (defined in a function)
                result.where += (f" (a {getattr(result.exc_type, '__qualname__', '?')}, whose "
                                 "class cannot be pickled)")
                result.exc_type = RuntimeError
            else:
                result = _UnpicklableResult(e, result)
            try:
                self.put((task, result))
                return
            except Exception:  # the queue is closing: the main process is not waiting
                pass
        traceback.print_exception(type(e), e, e.__traceback__)


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
