"""DataLoader, as torch.utils.data.dataloader: batches from a dataset through a sampler and a
collate function, in the main process (num_workers=0) or in worker processes that each hold a
copy of the dataset. With workers, task k goes to the next worker in turn and batches come back
in task order whatever order the workers finish in."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import queue
import signal
import warnings
import weakref
from typing import Any, Callable, Dict, Generic, Iterable, List, Optional, TypeVar, Union

import rustgrad

from . import _worker
from ._collate import default_collate, default_convert
from ._fetch import _DatasetKind
from ._worker import (
    MP_STATUS_CHECK_INTERVAL,
    _ExceptionWrapper,
    _IterableDatasetStopIteration,
    _ResultQueue,
    _ResumeIteration,
    _UnpicklableResult,
    get_worker_info,
)
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _draw_seed

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

_T_co = TypeVar("_T_co", covariant=True)

# how often (seconds) the main process, waiting for a batch, checks that its workers are alive
_MAIN_POLL_INTERVAL = 1.0


class _InfiniteConstantSampler(Sampler[None]):
    """The sampler of an iterable dataset: None forever (the fetcher ignores indices)."""

    def __iter__(self) -> Any:
        while True:
            yield None


class _IndexPipe:
    """The main process's end of a worker's index pipe, with a Queue's put."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def put(self, obj: Any) -> None:
        try:
            self._conn.send(obj)
        except OSError:  # closed, or the worker is gone: its death is reported on the next get
            pass

    def close(self) -> None:
        try:
            self._conn.close()
        except OSError:
            pass


class DataLoader(Generic[_T_co]):
    """Iterates over `dataset` in batches: a sampler picks indices (in order, shuffled, or given),
    `collate_fn` merges samples into a batch, `num_workers` processes fetch in parallel."""

    dataset: Dataset[_T_co]
    batch_size: Optional[int]
    num_workers: int
    pin_memory: bool
    drop_last: bool
    timeout: float
    sampler: Union[Sampler, Iterable]
    prefetch_factor: Optional[int]
    __initialized = False

    def __init__(self, dataset: Dataset[_T_co], batch_size: Optional[int] = 1,
                 shuffle: Optional[bool] = None, sampler: Union[Sampler, Iterable, None] = None,
                 batch_sampler: Union[Sampler[List], Iterable[List], None] = None,
                 num_workers: int = 0, collate_fn: Optional[Callable[[List[Any]], Any]] = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Optional[Callable[[int], None]] = None,
                 multiprocessing_context: Any = None, generator: Any = None, *,
                 prefetch_factor: Optional[int] = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor "
                "to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        # the length an IterableDataset reported through len(loader), to warn past it
        self._IterableDataset_len_called: Optional[int] = None
        self._iterator: Optional[_BaseDataLoaderIter] = None
        self.check_worker_number_rationality()

    def _get_iterator(self) -> _BaseDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    @property
    def multiprocessing_context(self) -> Any:
        """The multiprocessing context the workers start in (None: multiprocessing's default)."""
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context: Any) -> None:
        if multiprocessing_context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 "loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
            if isinstance(multiprocessing_context, str):
                valid = multiprocessing.get_all_start_methods()
                if multiprocessing_context not in valid:
                    raise ValueError(
                        "multiprocessing_context option should specify a valid start method "
                        f"in {valid!r}, but got "
                        f"multiprocessing_context={multiprocessing_context!r}")
                multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
            if not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
                raise TypeError(
                    "multiprocessing_context option should be a valid context object or a "
                    "string specifying the start method, but got "
                    f"multiprocessing_context={multiprocessing_context}")
        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr: str, val: Any) -> None:
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler",
                                           "drop_last", "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    def __iter__(self) -> _BaseDataLoaderIter:
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)  # type: ignore
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """Warns when num_workers exceeds the CPUs this process may run on."""
        if not self.num_workers:
            return
        try:
            suggest: Optional[int] = len(os.sched_getaffinity(0))
            cpuset = True
        except (AttributeError, OSError):
            suggest, cpuset = os.cpu_count(), False
        if suggest is not None and self.num_workers <= suggest:
            return
        if suggest is None:
            detail = ("DataLoader is not able to compute a suggested max number of worker in "
                      "current system.")
        else:
            detail = (f"Our suggested max number of worker in current system is {suggest}"
                      f"{'' if cpuset else ' (`cpuset` is not taken into account)'}, which is "
                      "smaller than what this DataLoader is going to create.")
        warnings.warn(
            f"This DataLoader will create {self.num_workers} worker processes in total. {detail} "
            "Please be aware that excessive worker creation might get DataLoader running slow "
            "or even freeze, lower the worker number to avoid potential slowness/freeze if "
            "necessary.", stacklevel=2)


class _BaseDataLoaderIter:
    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and not rustgrad.cuda.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=3)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # drawn from the loader's generator on every new iterator, as torch (the workers' seeds)
        self._base_seed = _draw_seed(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self) -> Any:
        return next(self._sampler_iter)

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable
                and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                   f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                   f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly "
                        "configuring the IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data."
                        "IterableDataset for examples.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self) -> Any:
        raise NotImplementedError("{} cannot be pickled", self.__class__.__name__)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._dataset_fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
            self._drop_last)

    def _next_data(self) -> Any:
        return self._dataset_fetcher.fetch(self._next_index())


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Workers fed round-robin through one index queue each; results on one shared queue.

    Task numbers (`_send_idx`) are handed out in sampler order and results are returned in that
    order (`_rcvd_idx`), results that arrive early wait in `_task_info`. At most
    prefetch_factor * num_workers tasks are outstanding. A worker whose iterable dataset copy is
    exhausted is marked inactive and gets no more tasks."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor or 2
        ctx = loader.multiprocessing_context or multiprocessing
        self._worker_init_fn = loader.worker_init_fn
        self._worker_result_queue = _ResultQueue(ctx=ctx.get_context())
        self._workers_done_event = ctx.Event()
        self._index_queues: List[Any] = []
        self._workers: List[Any] = []
        # Shutting down is a weakref.finalize holding the workers and their channels, not a
        # __del__: an iterator caught in a reference cycle (an exception's traceback, say) is
        # finalized by the garbage collector together with whatever only it references, so a
        # __del__ could find its pipes already closed and wait out every worker's timeout.
        self._finalizer = weakref.finalize(self, _shutdown_workers, self._workers,
                                           self._index_queues, self._worker_result_queue,
                                           self._workers_done_event)
        self._shutdown = False
        for i in range(self._num_workers):
            # indices go down a pipe, written synchronously (no feeder thread to outlive)
            reader, writer = ctx.Pipe(duplex=False)
            w = ctx.Process(
                target=_worker._worker_loop,
                args=(self._dataset_kind, self._dataset, reader, self._worker_result_queue,
                      self._workers_done_event, self._auto_collation, self._collate_fn,
                      self._drop_last, self._base_seed, self._worker_init_fn, i,
                      self._num_workers),
                daemon=True)
            w.start()
            self._index_queues.append(_IndexPipe(writer))
            self._workers.append(w)
        self._data_queue = self._worker_result_queue
        self._reset(loader, first_iter=True)

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        # task -> (worker,) while outstanding, (worker, data) once it arrived out of order
        self._task_info: Dict[int, tuple] = {}
        # task -> the sampler's indices it was sent, to name them if its result cannot be pickled
        self._task_indices: Dict[int, Any] = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # persistent workers: every worker acknowledges the new pass; results of the previous
            # pass still in flight arrive before the acknowledgements and are dropped
            for q in self._index_queues:
                q.put(_ResumeIteration())
            pending = self._num_workers
            while pending > 0:
                idx, _ = self._get_data()
                if isinstance(idx, _ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout: float) -> tuple:
        try:
            return True, self._data_queue.get(timeout=timeout)
        except queue.Empty:
            failed = [w for i, w in enumerate(self._workers)
                      if self._workers_status[i] and not w.is_alive()]
            if failed:
                self._shutdown_workers()
                raise RuntimeError(_death_message(failed)) from None
            return False, None

    def _get_data(self) -> Any:
        if self._timeout > 0:
            ok, data = self._try_get_data(self._timeout)
            if not ok:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return data
        while True:
            ok, data = self._try_get_data(_MAIN_POLL_INTERVAL)
            if ok:
                return data

    def _next_data(self) -> Any:
        while True:
            # skip the tasks of workers that went inactive before answering them
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._task_indices.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                return self._process_data(self._task_info.pop(self._rcvd_idx)[1])
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._dataset_kind == _DatasetKind.Iterable and isinstance(
                    data, _IterableDatasetStopIteration):
                self._task_indices.pop(idx, None)
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
            else:
                del self._task_info[idx]
                return self._process_data(data)

    def _try_put_index(self) -> None:
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker]:
                break
        else:
            return  # no active worker left
        self._index_queues[worker].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker,)
        self._task_indices[self._send_idx] = index
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data: Any) -> Any:
        task = self._rcvd_idx
        index = self._task_indices.pop(task, None)
        self._rcvd_idx += 1
        self._try_put_index()
        if isinstance(data, _UnpicklableResult):
            data.reraise_for(self._describe_task(task, index), index)
        if isinstance(data, _ExceptionWrapper):
            data.reraise()
        return data

    def _describe_task(self, task: int, index: Any) -> str:
        """The samples of task `task` (sent as the sampler's `index`), in words."""
        if self._dataset_kind == _DatasetKind.Iterable:  # its samples have no index
            return f"{'batch' if self._auto_collation else 'item'} {task} of the iteration"
        if self._auto_collation:
            return f"the batch of the samples at indices {list(index)}"
        return f"the sample at index {index!r}"

    def _mark_worker_as_unavailable(self, worker_id: int) -> None:
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        if not getattr(self, "_shutdown", True):
            self._shutdown = True
            self._finalizer()


def _death_message(failed: List[Any]) -> str:
    """torch's words for workers that died: its exit code or signal, where one says why."""
    w = failed[0]
    code = w.exitcode
    if code is not None and code > 0:
        return (f"DataLoader worker (pid {w.pid}) exited unexpectedly with exit code {code}. "
                "Details are lost due to multiprocessing. Rerunning with num_workers=0 may give "
                "better error trace.")
    if code is not None and code < 0:
        return f"DataLoader worker (pid {w.pid}) is killed by signal: {signal.strsignal(-code)}. "
    pids = ", ".join(str(f.pid) for f in failed)
    return f"DataLoader worker (pid(s) {pids}) exited unexpectedly"


def _shutdown_workers(workers: List[Any], index_pipes: List[Any], result_queue: Any,
                      done_event: Any) -> None:
    """Stops an iterator's workers: each is told to exit, given time to, then terminated."""
    try:
        done_event.set()
        for pipe in index_pipes:
            pipe.put(None)
        for w in workers:
            w.join(timeout=MP_STATUS_CHECK_INTERVAL)
        for pipe in index_pipes:
            pipe.close()
        result_queue.cancel_join_thread()
        result_queue.close()
    finally:
        # a terminated worker is joined too, or it stays a zombie until the next worker starts
        for w in workers:
            if w.is_alive():
                w.terminate()
        for w in workers:
            w.join(timeout=MP_STATUS_CHECK_INTERVAL)
            if w.is_alive():  # SIGTERM handled or ignored
                w.kill()
                w.join(timeout=MP_STATUS_CHECK_INTERVAL)
