"""rustgrad.utils.data against torch.utils.data: the same datasets, samplers and loaders under both
libraries give the same batches (contents, structure, dtypes), lengths and errors. Shuffled orders
come from different RNGs, so they are checked for their properties (a permutation, reproducible
under a seed, different between epochs), not for torch's numbers."""

from __future__ import annotations

import collections
import dataclasses
import gc
import math
import re
import warnings
from types import ModuleType
from typing import Any, Iterator

import numpy as np
import pytest
import rustgrad
import torch
from tqdm import tqdm

from ..parity import same_error

Point = collections.namedtuple("Point", ["x", "y"])


def norm(x: Any) -> Any:
    """A library-neutral picture of a (nested) batch: tensors as (dtype, shape, values), containers
    by their type name, so torch's and rustgrad's batches compare with ==."""
    if isinstance(x, (torch.Tensor, rustgrad.Tensor)):
        return ("Tensor", str(x.dtype).replace("torch.", ""), tuple(x.shape), x.tolist())
    if isinstance(x, dict):
        return (type(x).__name__, {k: norm(v) for k, v in x.items()})
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [norm(v) for v in x])
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.str, x.tolist())
    return x


def data(lib: ModuleType) -> Any:
    return lib.utils.data


def both(fn: Any) -> Any:
    """fn(lib) under torch and rustgrad give the same normalised result; returns it."""
    expected, got = norm(fn(torch)), norm(fn(rustgrad))
    assert got == expected
    return expected


def xy(lib: ModuleType, n: int = 10) -> Any:
    x = lib.tensor(np.arange(3 * n, dtype=np.float32).reshape(n, 3))
    y = lib.tensor(np.arange(n) % 3)
    return data(lib).TensorDataset(x, y)


# ---- datasets -----------------------------------------------------------------------------------
def test_tensor_dataset() -> None:
    both(lambda lib: (len(xy(lib)), xy(lib)[4], xy(lib)[-1], xy(lib)[1:3]))
    same_error(lambda lib: data(lib).TensorDataset(lib.zeros(3), lib.zeros(4)),
               "Size mismatch between tensors")


class Squares:
    """A map-style dataset that is not a Dataset subclass (torch accepts any indexable)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, i: int) -> int:
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i

    def __len__(self) -> int:
        return self.n


def test_concat_subset_stack() -> None:
    def run(lib: ModuleType) -> Any:
        d = data(lib)
        a, b = d.Subset(Squares(10), [1, 3, 5]), d.Subset(Squares(4), range(4))
        c = a + b
        assert isinstance(c, d.ConcatDataset)
        st = d.StackDataset(xy(lib, 4), Squares(4))
        sd = d.StackDataset(u=Squares(3), v=d.Subset(Squares(9), [8, 7, 6]))
        return (len(c), [c[i] for i in range(len(c))], c[-1], c[-7], c.cumulative_sizes,
                st[2], sd[1], sd.__getitems__([0, 2]), a.__getitems__([2, 0]))

    both(run)
    same_error(lambda lib: data(lib).ConcatDataset([Squares(2)])[-3],
               "absolute value of index should not exceed dataset length")
    same_error(lambda lib: data(lib).ConcatDataset([]), "datasets should not be an empty iterable")
    same_error(lambda lib: data(lib).StackDataset(Squares(2), Squares(3)),
               "Size mismatch between datasets")
    same_error(lambda lib: data(lib).StackDataset(), "At least one dataset should be passed")
    same_error(lambda lib: data(lib).StackDataset(Squares(2), b=Squares(2)),
               "Supported either ``tuple``- (via ``args``) or")


def test_base_dataset_and_abstract_iterable(lib: ModuleType) -> None:
    with pytest.raises(NotImplementedError, match="should implement __getitem__"):
        data(lib).Dataset()[0]

    class NoIter(data(lib).IterableDataset):
        pass

    with pytest.raises(TypeError, match="abstract"):
        NoIter()


class Count(rustgrad.utils.data.IterableDataset):
    """range(start, end) as a stream, split between workers as torch's docs do it."""

    def __init__(self, start: int, end: int, split: bool = False, sized: bool = True) -> None:
        self.start, self.end, self.split, self.sized = start, end, split, sized

    def __iter__(self) -> Iterator[int]:
        lo, hi = self.start, self.end
        info = rustgrad.utils.data.get_worker_info() or torch.utils.data.get_worker_info()
        if self.split and info is not None:
            per = int(math.ceil((hi - lo) / info.num_workers))
            lo = lo + info.id * per
            hi = min(lo + per, self.end)
        return iter(range(lo, hi))

    def __len__(self) -> int:
        if not self.sized:
            raise TypeError("no length")
        return self.end - self.start


def as_torch_iterable(ds: Count) -> Any:
    """The same stream as a torch IterableDataset (the loaders check the base class)."""

    class TorchCount(torch.utils.data.IterableDataset):
        def __iter__(self) -> Iterator[int]:
            return iter(ds)

        def __len__(self) -> int:
            return len(ds)

    return TorchCount()


def stream(lib: ModuleType, *args: Any, **kw: Any) -> Any:
    ds = Count(*args, **kw)
    return ds if lib is rustgrad else as_torch_iterable(ds)


def test_iterable_dataset_loader() -> None:
    def run(lib: ModuleType) -> Any:
        dl = data(lib).DataLoader
        s = stream(lib, 0, 7)
        return (list(dl(s, batch_size=3)), len(dl(s, batch_size=3)),
                list(dl(s, batch_size=3, drop_last=True)), len(dl(s, batch_size=3, drop_last=True)),
                list(dl(s, batch_size=None)), list(dl(s)),
                list(data(lib).ChainDataset([s, stream(lib, 10, 12)])),
                len(data(lib).ChainDataset([s, s])))

    both(run)
    for kw, phrase in [({"shuffle": True}, "expected unspecified shuffle option"),
                       ({"sampler": [0]}, "expected unspecified sampler option"),
                       ({"batch_sampler": [[0]]}, "expected unspecified batch_sampler option")]:
        same_error(lambda lib, kw=kw: data(lib).DataLoader(stream(lib, 0, 3), **kw), phrase)


def test_iterable_dataset_warns_past_its_length(lib: ModuleType) -> None:
    class Liar(data(lib).IterableDataset):
        def __iter__(self) -> Iterator[int]:
            return iter(range(5))

        def __len__(self) -> int:
            return 3

    dl = data(lib).DataLoader(Liar(), batch_size=None)
    assert len(dl) == 3
    with pytest.warns(UserWarning, match="was reported to be 3"):
        assert [int(v) for v in dl] == [0, 1, 2, 3, 4]


# ---- random_split -------------------------------------------------------------------------------
@pytest.mark.parametrize("n, lengths", [
    (10, [3, 7]), (10, [0.3, 0.3, 0.4]), (11, [0.5, 0.5]), (7, [0.1] * 10), (5, [1.0]),
    (30, [0.25, 0.25, 0.5]), (3, [0, 3]),
])
def test_random_split_lengths(lib: ModuleType, n: int, lengths: list) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch_lengths = [len(s) for s in torch.utils.data.random_split(range(n), lengths)]
        splits = data(lib).random_split(range(n), lengths)
    assert [len(s) for s in splits] == torch_lengths
    assert sorted(i for s in splits for i in s) == list(range(n))
    assert all(isinstance(s, data(lib).Subset) for s in splits)


def test_random_split_generator_and_errors(lib: ModuleType) -> None:
    split = data(lib).random_split
    a = [list(s) for s in split(range(20), [5, 15], generator=lib.Generator().manual_seed(1))]
    b = [list(s) for s in split(range(20), [5, 15], generator=lib.Generator().manual_seed(1))]
    assert a == b
    lib.manual_seed(3)
    c = [list(s) for s in split(range(20), [5, 15])]
    lib.manual_seed(3)
    assert c == [list(s) for s in split(range(20), [5, 15])]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        split(range(2), [0.9, 0.1])
    same_error(lambda lib: data(lib).random_split(range(5), [2, 2]),
               "Sum of input lengths does not equal the length of the input dataset!")
    same_error(lambda lib: data(lib).random_split(range(5), [1.5, -0.5]),
               "Fraction at index 0 is not between 0 and 1")


# ---- samplers -----------------------------------------------------------------------------------
def test_sequential_and_batch_sampler() -> None:
    def run(lib: ModuleType) -> Any:
        d = data(lib)
        seq = d.SequentialSampler(range(7))
        return (list(seq), len(seq), list(d.BatchSampler(seq, 3, False)),
                len(d.BatchSampler(seq, 3, False)), list(d.BatchSampler(seq, 3, True)),
                len(d.BatchSampler(seq, 3, True)), list(d.BatchSampler(range(6), 2, True)))

    both(run)
    same_error(lambda lib: data(lib).BatchSampler(range(3), 0, False),
               "batch_size should be a positive integer value, but got batch_size=0")
    same_error(lambda lib: data(lib).BatchSampler(range(3), True, False),
               "batch_size should be a positive integer value, but got batch_size=True")
    same_error(lambda lib: data(lib).BatchSampler(range(3), 2, 1),
               "drop_last should be a boolean value, but got drop_last=1")


def test_random_sampler(lib: ModuleType) -> None:
    d = data(lib)
    s = d.RandomSampler(range(50))
    first, second = list(s), list(s)
    assert sorted(first) == sorted(second) == list(range(50)) and len(s) == 50
    assert first != second  # a fresh permutation per pass
    g = lib.Generator().manual_seed(7)
    h = lib.Generator().manual_seed(7)
    assert list(d.RandomSampler(range(50), generator=g)) == list(
        d.RandomSampler(range(50), generator=h))
    more = list(d.RandomSampler(range(5), num_samples=12))
    assert len(more) == 12 and sorted(more[:10]) == sorted(list(range(5)) * 2)
    drawn = list(d.RandomSampler(range(4), replacement=True, num_samples=70))
    assert len(drawn) == 70 and set(drawn) == {0, 1, 2, 3}
    same_error(lambda lib: data(lib).RandomSampler(range(3), replacement=1),
               "replacement should be a boolean value, but got replacement=1")
    same_error(lambda lib: data(lib).RandomSampler(range(3), num_samples=0),
               "num_samples should be a positive integer value, but got num_samples=0")
    same_error(lambda lib: data(lib).RandomSampler([]),
               "num_samples should be a positive integer value, but got num_samples=0")


def test_subset_and_weighted_samplers(lib: ModuleType) -> None:
    d = data(lib)
    sub = d.SubsetRandomSampler([10, 20, 30, 40])
    assert sorted(sub) == [10, 20, 30, 40] and len(sub) == 4
    w = d.WeightedRandomSampler([0.0, 1.0, 3.0, 0.0], 200)
    drawn = list(w)
    assert len(w) == 200 and set(drawn) == {1, 2}
    assert drawn.count(2) > drawn.count(1)  # 3:1 odds over 200 draws
    once = list(d.WeightedRandomSampler([0.5, 0.1, 2.0, 1.0], 4, replacement=False))
    assert sorted(once) == [0, 1, 2, 3]
    # without replacement, zero weights come last, in index order
    assert list(d.WeightedRandomSampler([1, 0, 0], 3, replacement=False)) == [0, 1, 2]
    g, h = lib.Generator().manual_seed(5), lib.Generator().manual_seed(5)
    assert list(d.WeightedRandomSampler([1, 2, 3], 9, generator=g)) == list(
        d.WeightedRandomSampler([1, 2, 3], 9, generator=h))
    assert isinstance(w.weights, lib.Tensor) and w.weights.dtype == lib.float64


@pytest.mark.parametrize("args, phrase", [
    (([1, -1.0], 2, True), "invalid multinomial distribution (encountering probability entry < 0)"),
    (([0, 0.0], 2, True), "invalid multinomial distribution (sum of probabilities <= 0)"),
    (([1, math.inf], 2, True), "encountering probability entry = infinity or NaN"),
    (([1, math.nan], 2, False), "probability tensor contains either `inf`, `nan` or element < 0"),
    (([1, 2.0], 3, False), "cannot sample n_sample > prob_dist.size(-1) samples without replacement"),
    (([0, 0.0], 1, False), "invalid multinomial distribution (sum of probabilities <= 0)"),
    (([[1, 2.0]], 2, True), "weights should be a 1d sequence but given weights have shape (1, 2)"),
    (([1, 2.0], 0, True), "num_samples should be a positive integer value, but got num_samples=0"),
    (([1, 2.0], 2, 1), "replacement should be a boolean value, but got replacement=1"),
])
def test_weighted_sampler_errors(args: tuple, phrase: str) -> None:
    same_error(lambda lib: list(data(lib).WeightedRandomSampler(*args)), phrase)


# ---- collation ----------------------------------------------------------------------------------
SAMPLES = {
    "tensors": lambda lib: [lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])],
    "floats": lambda lib: [1.5, 2.0, -3.0],
    "ints": lambda lib: [1, 2, 3],
    "bools": lambda lib: [True, False],
    "strings": lambda lib: ["a", "bc"],
    "bytes": lambda lib: [b"a", b"b"],
    "np_float32": lambda lib: [np.ones(2, np.float32), np.zeros(2, np.float32)],
    "np_int16": lambda lib: [np.arange(3, dtype=np.int16)] * 2,
    "np_float64_2d": lambda lib: [np.eye(2), np.ones((2, 2))],
    "np_scalars_f32": lambda lib: [np.float32(1.5), np.float32(2)],
    "np_scalars_f64": lambda lib: [np.float64(1.5), np.float64(2)],
    "np_scalars_i32": lambda lib: [np.int32(1), np.int32(2)],
    "np_bool_scalars": lambda lib: [np.bool_(True), np.bool_(False)],
    "tuples": lambda lib: [(lib.tensor(1), 2.0, "x"), (lib.tensor(3), 4.0, "y")],
    "lists": lambda lib: [[1, 2.5], [3, 4.5]],
    "dicts": lambda lib: [{"a": lib.zeros(2), "b": {"c": 1, "d": [1.0, 2.0]}},
                          {"a": lib.ones(2), "b": {"c": 2, "d": [3.0, 4.0]}}],
    "ordered": lambda lib: [collections.OrderedDict(p=1, q=np.float32(2))] * 2,
    "namedtuples": lambda lib: [Point(lib.tensor([1]), 2.0), Point(lib.tensor([3]), 4.0)],
    "nested": lambda lib: [((1, [2.0, np.int64(3)]), {"k": (b"z", 1)})] * 3,
    "int_tensors": lambda lib: [lib.tensor(5), lib.tensor(6)],
    "half": lambda lib: [lib.ones(2, dtype=lib.float16)] * 2,
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_default_collate(name: str) -> None:
    out = both(lambda lib: data(lib).default_collate(SAMPLES[name](lib)))
    if name == "namedtuples":
        assert isinstance(data(rustgrad).default_collate(SAMPLES[name](rustgrad)), Point)
    if name == "ordered":
        assert out[0] == "OrderedDict"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_default_convert(name: str) -> None:
    both(lambda lib: [data(lib).default_convert(s) for s in SAMPLES[name](lib)])


def test_collate_errors() -> None:
    dc = lambda lib: data(lib).default_collate  # noqa: E731
    same_error(lambda lib: dc(lib)([np.array(["a"]), np.array(["b"])]),
               "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
               "lists; found <U1")
    same_error(lambda lib: dc(lib)([object(), object()]),
               "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
               "lists; found <class 'object'>")
    same_error(lambda lib: dc(lib)([[1, 2], [3]]),
               "each element in list of batch should be of equal size")
    same_error(lambda lib: dc(lib)([lib.zeros(2), lib.zeros(3)]),
               "stack expects each tensor to be equal size, but got [2] at entry 0 and [3] at "
               "entry 1")
    # object arrays are left alone by default_convert
    arr = np.array([object()], dtype=object)
    assert data(rustgrad).default_convert(arr) is arr


def test_collate_fn_map_is_extensible(lib: ModuleType) -> None:
    d = data(lib)
    from importlib import import_module

    mod = import_module(f"{lib.__name__}.utils.data._utils.collate")
    assert mod.default_collate is d.default_collate

    class Box:
        def __init__(self, v: int) -> None:
            self.v = v

    fmap = {**mod.default_collate_fn_map, Box: lambda batch, *, collate_fn_map: sum(
        b.v for b in batch)}
    out = mod.collate([(Box(1), 2), (Box(3), 4)], collate_fn_map=fmap)
    assert out[0] == 4 and out[1].tolist() == [2, 4]
    assert d.default_collate([1]).dtype == lib.int64


# ---- DataLoader ---------------------------------------------------------------------------------
@pytest.mark.parametrize("batch_size, drop_last", [(1, False), (3, False), (3, True), (10, True),
                                                   (4, True), (20, False)])
def test_loader_batches_in_order(batch_size: int, drop_last: bool) -> None:
    def run(lib: ModuleType) -> Any:
        dl = data(lib).DataLoader(xy(lib), batch_size=batch_size, drop_last=drop_last)
        return len(dl), list(dl), list(dl)

    both(run)


def test_loader_samplers_and_unbatched() -> None:
    def run(lib: ModuleType) -> Any:
        d = data(lib)
        ds = xy(lib, 6)
        return (
            list(d.DataLoader(ds, sampler=[5, 0, 3], batch_size=2)),
            list(d.DataLoader(ds, batch_sampler=[[0, 1, 2], [4], [5, 3]])),
            len(d.DataLoader(ds, batch_sampler=[[0, 1, 2], [4], [5, 3]])),
            list(d.DataLoader(ds, batch_size=None)),
            list(d.DataLoader(Squares(5), batch_size=2)),
            list(d.DataLoader([{"a": np.float32(i), "s": str(i)} for i in range(3)],
                              batch_size=None)),
            list(d.DataLoader(ds, batch_size=4, collate_fn=lambda b: [len(b), b[0][1]])),
            list(d.DataLoader(d.Subset(ds, [4, 2]), batch_size=2)),
        )

    both(run)


@pytest.mark.parametrize("kw, phrase", [
    ({"num_workers": -1}, "num_workers option should be non-negative"),
    ({"timeout": -1}, "timeout option should be non-negative"),
    ({"prefetch_factor": 2}, "prefetch_factor option could only be specified in multiprocessing"),
    ({"num_workers": 1, "prefetch_factor": -1}, "prefetch_factor option should be non-negative"),
    ({"persistent_workers": True}, "persistent_workers option needs num_workers > 0"),
    ({"sampler": [0], "shuffle": True}, "sampler option is mutually exclusive with shuffle"),
    ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "drop_last": True}, "batch_sampler option is mutually exclusive"),
    ({"batch_size": None, "drop_last": True}, "batch_size=None option disables auto-batching"),
    ({"multiprocessing_context": "fork"}, "multiprocessing_context can only be used with"),
    ({"num_workers": 1, "multiprocessing_context": "nope"},
     "multiprocessing_context option should specify a valid start method"),
    ({"num_workers": 1, "multiprocessing_context": 3},
     "multiprocessing_context option should be a valid context object"),
])
def test_loader_argument_errors(kw: dict, phrase: str) -> None:
    same_error(lambda lib: data(lib).DataLoader(xy(lib), **kw), phrase)


def test_loader_attributes_are_frozen_and_len_errors() -> None:
    def set_batch_size(lib: ModuleType) -> None:
        data(lib).DataLoader(xy(lib)).batch_size = 2

    same_error(set_batch_size, "batch_size attribute should not be set after DataLoader is "
                               "initialized")
    same_error(lambda lib: len(data(lib).DataLoader(stream(lib, 0, 3, sized=False))), "no length")
    same_error(lambda lib: list(data(lib).DataLoader(xy(lib), batch_size=2,
                                                     collate_fn=lambda b: 1 / 0)),
               "division by zero")

    def pickle_iterator(lib: ModuleType) -> None:
        import pickle

        pickle.dumps(iter(data(lib).DataLoader(xy(lib))))

    same_error(pickle_iterator, "cannot be pickled")


def test_loader_attributes(lib: ModuleType) -> None:
    d = data(lib)
    dl = d.DataLoader(xy(lib), batch_size=4, shuffle=True, drop_last=True)
    assert isinstance(dl.sampler, d.RandomSampler)
    assert isinstance(dl.batch_sampler, d.BatchSampler) and dl.batch_sampler.batch_size == 4
    assert (dl.batch_size, dl.drop_last, dl.num_workers, dl.prefetch_factor) == (4, True, 0, None)
    assert dl.collate_fn is d.default_collate
    dl = d.DataLoader(xy(lib), batch_size=None)
    assert dl.collate_fn is d.default_convert and isinstance(dl.sampler, d.SequentialSampler)
    assert d.get_worker_info() is None
    it = iter(d.DataLoader(xy(lib), batch_size=3))
    assert iter(it) is it and len(it) == 4


def test_shuffle_reshuffles_each_epoch(lib: ModuleType) -> None:
    ds = data(lib).TensorDataset(lib.arange(64))
    dl = data(lib).DataLoader(ds, batch_size=8, shuffle=True)
    epochs = [lib.cat([b[0] for b in dl]).tolist() for _ in range(2)]
    assert sorted(epochs[0]) == sorted(epochs[1]) == list(range(64))
    assert epochs[0] != epochs[1]
    runs = []
    for _ in range(2):
        g = lib.Generator().manual_seed(11)
        dl = data(lib).DataLoader(ds, batch_size=8, shuffle=True, generator=g)
        runs.append([lib.cat([b[0] for b in dl]).tolist() for _ in range(2)])
    assert runs[0] == runs[1]
    lib.manual_seed(4)
    a = lib.cat([b[0] for b in data(lib).DataLoader(ds, batch_size=8, shuffle=True)]).tolist()
    lib.manual_seed(4)
    assert a == lib.cat([b[0] for b in data(lib).DataLoader(ds, batch_size=8,
                                                            shuffle=True)]).tolist()


def test_loader_keeps_the_device(device: str) -> None:
    """Batches of on-device tensors are stacked on that device, with torch's (CPU) values."""
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    ds = rustgrad.utils.data.TensorDataset(rustgrad.tensor(x, device=device),
                                           rustgrad.arange(6, device=device))
    got = [(a.device.type, b.device.type, a.tolist(), b.tolist())
           for a, b in rustgrad.utils.data.DataLoader(ds, batch_size=4)]
    expected = [(device, device, a.tolist(), b.tolist()) for a, b in torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(x), torch.arange(6)), batch_size=4)]
    assert got == expected


def test_tqdm_over_a_loader(lib: ModuleType) -> None:
    dl = data(lib).DataLoader(xy(lib), batch_size=4)
    bar = tqdm(dl, disable=True)
    seen = 0
    for x, y in bar:
        seen += len(y)
        assert x.shape[1] == 3
    assert bar.total == len(dl) == 3 and seen == 10


def test_training_loop_matches_torch() -> None:
    """Linear regression over a DataLoader (shuffle=False): the same losses as torch, epoch by
    epoch, with weights copied from torch's."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(22, 4)).astype(np.float32)
    Y = (X @ rng.normal(size=(4, 2)) + 0.1).astype(np.float32)
    torch.manual_seed(0)
    init = torch.nn.Linear(4, 2)

    def run(lib: ModuleType) -> list:
        model = lib.nn.Linear(4, 2)
        with lib.no_grad():
            model.weight.copy_(lib.tensor(init.weight.detach().numpy()))
            model.bias.copy_(lib.tensor(init.bias.detach().numpy()))
        opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        dl = data(lib).DataLoader(data(lib).TensorDataset(lib.tensor(X), lib.tensor(Y)),
                                  batch_size=5, shuffle=False)
        losses = []
        for _ in range(3):
            for xb, yb in dl:
                opt.zero_grad()
                loss = lib.nn.functional.mse_loss(model(xb), yb)
                loss.backward()
                opt.step()
                losses.append(loss.item())
        return losses

    expected, got = run(torch), run(rustgrad)
    assert len(got) == len(expected) == 15
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


# ---- worker processes ---------------------------------------------------------------------------
class Noisy(rustgrad.utils.data.Dataset):
    """Item i is (i, worker id); item 3 raises (when `bad`)."""

    def __init__(self, n: int, bad: bool = False) -> None:
        self.n, self.bad = n, bad

    def __getitem__(self, i: int) -> Any:
        if self.bad and i == 3:
            raise ValueError("item 3 is broken")
        info = rustgrad.utils.data.get_worker_info() or torch.utils.data.get_worker_info()
        return i, -1 if info is None else info.id

    def __len__(self) -> int:
        return self.n


def test_workers_keep_order_and_match_torch() -> None:
    """Two workers: batches come back in sampler order with every worker's share, as torch's;
    each worker runs worker_init_fn and sees its own WorkerInfo."""

    def init(worker_id: int) -> None:
        info = rustgrad.utils.data.get_worker_info() or torch.utils.data.get_worker_info()
        assert info.id == worker_id and info.num_workers == 2
        assert info.dataset is not None and info.seed is not None
        with pytest.raises(dataclasses.FrozenInstanceError):
            info.id = 5

    def run(lib: ModuleType) -> Any:
        d = data(lib)
        mapped = d.DataLoader(Noisy(9), batch_size=2, num_workers=2, worker_init_fn=init)
        streamed = d.DataLoader(stream(lib, 3, 9, split=True), batch_size=2, num_workers=2)
        unbatched = d.DataLoader(stream(lib, 3, 7, split=True), batch_size=None, num_workers=2)
        return list(mapped), len(mapped), list(streamed), list(unbatched)

    both(run)


def test_worker_error_and_persistent_workers(lib: ModuleType) -> None:
    d = data(lib)
    dl = d.DataLoader(Noisy(6, bad=True), batch_size=2, num_workers=2)
    it = iter(dl)
    assert next(it)[0].tolist() == [0, 1]
    with pytest.raises(ValueError, match="Caught ValueError in DataLoader worker process 1"):
        next(it)
    assert next(it)[0].tolist() == [4, 5]  # the loader goes on past a failed batch, as torch's
    dl = d.DataLoader(Noisy(5), batch_size=2, num_workers=2, persistent_workers=True,
                      shuffle=True)
    first, second = [[v for b in dl for v in b[0].tolist()] for _ in range(2)]
    assert sorted(first) == sorted(second) == list(range(5))
    assert dl._iterator is not None and iter(dl) is dl._iterator


def test_worker_seeds_differ(lib: ModuleType) -> None:
    """Workers' global RNGs (NumPy's; and rustgrad's own) are seeded base_seed + worker id."""

    class Draws(data(lib).Dataset):
        def __getitem__(self, i: int) -> Any:
            own = rustgrad.rand(1).item() if lib is rustgrad else 0.0
            return np.random.rand() + own, data(lib).get_worker_info().seed

        def __len__(self) -> int:
            return 4

    rows = [r for b in data(lib).DataLoader(Draws(), batch_size=1, num_workers=2)
            for r in zip(b[0].tolist(), b[1].tolist())]
    assert len({r[0] for r in rows}) == 4
    seeds = sorted({r[1] for r in rows})
    assert len(seeds) == 2 and seeds[1] - seeds[0] == 1


class Slow(rustgrad.utils.data.Dataset):
    """Item 1 takes `delay` seconds; item 2 kills its worker (when `die`)."""

    def __init__(self, delay: float = 0.0, die: bool = False) -> None:
        self.delay, self.die = delay, die

    def __getitem__(self, i: int) -> int:
        import os
        import time

        if i == 1:
            time.sleep(self.delay)
        if i == 2 and self.die:
            os._exit(3)
        return i

    def __len__(self) -> int:
        return 4


def test_worker_timeout(lib: ModuleType) -> None:
    it = iter(data(lib).DataLoader(Slow(delay=1.0), num_workers=2, timeout=0.2))
    assert next(it).tolist() == [0]
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.2 seconds"):
        next(it)


def test_worker_death() -> None:
    """torch's message for a worker that exits (torch raises it from a SIGCHLD handler, at any
    point of the main process, so only rustgrad runs here)."""
    dl = rustgrad.utils.data.DataLoader(Slow(die=True), num_workers=1)
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) exited unexpectedly "
                                           r"with exit code 3. Details are lost due to "
                                           r"multiprocessing. Rerunning with num_workers=0"):
        list(dl)


class Unpicklable(rustgrad.utils.data.Dataset):
    """Sample 3 holds a lambda, which a worker cannot pickle to send back; with `bad_error`,
    sample 3 raises an exception whose class (defined in a function) cannot be pickled."""

    def __init__(self, bad_error: bool = False) -> None:
        self.bad_error = bad_error

    def __getitem__(self, i: int) -> Any:
        if i == 3 and self.bad_error:
            class LocalError(Exception):
                pass

            raise LocalError("sample 3 is bad")
        return (lambda: i) if i == 3 else i

    def __len__(self) -> int:
        return 6


def _drain(it: Any) -> list:
    """Every batch of `it`, and in place of a batch that raises, (exception type, message)."""
    out: list = []
    while True:
        try:
            out.append(next(it))
        except StopIteration:
            return out
        except Exception as e:
            out.append((type(e), str(e)))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("num_workers", [1, 2])
@pytest.mark.parametrize("batch_size", [2, None])
def test_unpicklable_sample_is_an_error_naming_it(num_workers: int, batch_size: Any) -> None:
    """A sample a worker cannot pickle is lost in the queue's feeder thread and torch's loader waits
    for it for ever (so only rustgrad runs here); rustgrad raises the pickling error in the main
    process, naming the sample, and goes on with the next batch as after a worker error."""
    dl = rustgrad.utils.data.DataLoader(Unpicklable(), batch_size=batch_size,
                                        num_workers=num_workers,
                                        collate_fn=list if batch_size else None)
    got = _drain(iter(dl))
    if batch_size:
        assert got[0] == [0, 1] and got[2] == [4, 5] and len(got) == 3
        what = (r"the batch of the samples at indices \[2, 3\] to the main process: it cannot be "
                r"pickled \(the sample at index 3\)")
    else:
        assert got[:3] == [0, 1, 2] and got[4:] == [4, 5] and len(got) == 6
        what = r"the sample at index 3 to the main process: it cannot be pickled\."
    failed = [g for g in got if isinstance(g, tuple)]
    assert len(failed) == 1
    kind, message = failed[0]
    worker = (1 if batch_size else 3) % num_workers
    assert re.search(rf"Caught {kind.__name__} in DataLoader worker process {worker} sending "
                     + what, message), message
    # the reason: pickle's own error, whose type is the one raised
    assert re.search(rf"Original error: {kind.__name__}: Can't pickle .*<lambda>", message), message


@pytest.mark.timeout(60)
def test_worker_error_of_an_unpicklable_class_is_raised() -> None:
    """A dataset error whose class cannot be pickled would be lost the same way: it comes back as
    a RuntimeError holding the original traceback."""
    dl = rustgrad.utils.data.DataLoader(Unpicklable(bad_error=True), batch_size=2, num_workers=2)
    got = _drain(iter(dl))
    assert len(got) == 3 and got[0].tolist() == [0, 1] and got[2].tolist() == [4, 5]
    kind, message = got[1]
    assert kind is RuntimeError
    assert "Caught RuntimeError in DataLoader worker process 1 (a " in message
    assert "LocalError, whose class cannot be pickled)" in message
    assert "LocalError: sample 3 is bad" in message


def _proc_state(pid: int) -> str:
    """The state letter of process `pid` (Z: a zombie), or "gone" once it has been reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


@pytest.mark.timeout(60)
def test_stuck_worker_is_reaped_when_the_iterator_is_dropped(lib: ModuleType) -> None:
    """A worker stuck in __getitem__ when its iterator goes is terminated and joined: no zombie
    is left behind (torch's joins it too). multiprocessing.active_children() would reap it, so
    the process table is read directly."""
    it = iter(data(lib).DataLoader(Slow(delay=600.0), num_workers=1))
    assert next(it).tolist() == [0]
    (worker,) = it._workers
    pid = worker.pid
    assert _proc_state(pid) not in ("gone", "Z")
    del it, worker
    gc.collect()
    assert _proc_state(pid) == "gone"


# ---- DistributedSampler -------------------------------------------------------------------------
@pytest.mark.parametrize("n, replicas, drop_last", [(10, 3, False), (10, 3, True), (2, 5, False),
                                                    (12, 4, True), (7, 2, False)])
def test_distributed_sampler_unshuffled(n: int, replicas: int, drop_last: bool) -> None:
    def run(lib: ModuleType) -> Any:
        ds = lib.utils.data.distributed.DistributedSampler
        out = []
        for r in range(replicas):
            s = ds(range(n), num_replicas=replicas, rank=r, shuffle=False, drop_last=drop_last)
            out.append((list(s), len(s), s.total_size))
        return out

    both(run)


def test_distributed_sampler_shuffled(lib: ModuleType) -> None:
    ds = lib.utils.data.distributed.DistributedSampler
    shares = [list(ds(range(11), num_replicas=3, rank=r, seed=5)) for r in range(3)]
    assert [len(s) for s in shares] == [4, 4, 4]
    assert set(i for s in shares for i in s) == set(range(11))
    s = ds(range(40), num_replicas=2, rank=1)
    e0, again = list(s), list(s)
    s.set_epoch(1)
    assert e0 == again and list(s) != e0 and s.epoch == 1
    assert list(ds(range(40), num_replicas=2, rank=1, seed=3)) != e0
    dl = data(lib).DataLoader(xy(lib, 9), batch_size=2, sampler=ds(xy(lib, 9), 2, 0, False))
    assert [b[1].tolist() for b in dl] == [[0, 2], [1, 0], [2]]
    same_error(lambda lib: lib.utils.data.distributed.DistributedSampler(range(4), 2, 2),
               "Invalid rank 2, rank should be in the interval [0, 1]")


def test_distributed_sampler_needs_a_process_group_for_what_it_is_not_given() -> None:
    # torch's error, rank or world size left to an uninitialized default group
    msg = "Default process group has not been initialized"
    with pytest.raises(ValueError, match=msg):
        rustgrad.utils.data.distributed.DistributedSampler(range(4))
    with pytest.raises(ValueError, match=msg):
        rustgrad.utils.data.DistributedSampler(range(4), num_replicas=2)
    assert list(rustgrad.utils.data.DistributedSampler(range(4), num_replicas=2, rank=1,
                                                       shuffle=False)) == [1, 3]


def test_import_as_torch() -> None:
    import rustgrad as torch_like
    from rustgrad.utils.data import DataLoader, Dataset, Sampler

    assert torch_like.utils.data.DataLoader is DataLoader
    assert Dataset[int] is not None and Sampler[int] is not None and DataLoader[int] is not None
    assert sorted(set(torch.utils.data.__all__) - set(rustgrad.utils.data.__all__)) == [
        "DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe", "argument_validation",
        "functional_datapipe", "guaranteed_datapipes_determinism", "non_deterministic",
        "runtime_validation", "runtime_validation_disabled"]
