"""A process started alone is a world of one: every collective is a no-op of torch's shape
(torch with gloo on one rank is the oracle), and the errors are torch's."""

from __future__ import annotations

import datetime
import pathlib
import sys
import warnings
from types import ModuleType
from typing import Any, Callable, Iterator

import numpy as np
import pytest
import rustgrad
import torch


def _init(lib: ModuleType, store: pathlib.Path, backend: str = "gloo", **kw: Any) -> None:
    if lib is torch:  # a file store: no port to collide with other test runs
        lib.distributed.init_process_group(backend, init_method=f"file://{store}", rank=0,
                                           world_size=1, **kw)
    else:
        lib.distributed.init_process_group(backend, **kw)


@pytest.fixture
def world(lib: ModuleType, tmp_path: pathlib.Path) -> Iterator[ModuleType]:
    """lib, with its default process group initialised on a world of one."""
    _init(lib, tmp_path / "store")
    try:
        yield lib
    finally:
        if lib.distributed.is_initialized():
            lib.distributed.destroy_process_group()


def _error(f: Callable[[], Any]) -> tuple:
    try:
        f()
    except Exception as e:
        return type(e).__name__, str(e)
    return ("no error",)


def same_error(f: Callable[[ModuleType], Any]) -> None:
    assert _error(lambda: f(torch)) == _error(lambda: f(rustgrad))


def test_before_init_every_call_raises_torchs_error():
    for call in (lambda L: L.distributed.get_rank(), lambda L: L.distributed.get_world_size(),
                 lambda L: L.distributed.barrier(), lambda L: L.distributed.get_backend(),
                 lambda L: L.distributed.all_reduce(L.ones(2)),
                 lambda L: L.distributed.broadcast(L.ones(2), 0)):
        same_error(call)
    assert torch.distributed.is_initialized() is rustgrad.distributed.is_initialized() is False
    assert rustgrad.distributed.is_available() and rustgrad.distributed.is_mpi_available()
    assert rustgrad.distributed.group.WORLD is None


def test_init_twice_and_destroy_twice_raise_torchs_errors(tmp_path):
    for lib in (torch, rustgrad):
        _init(lib, tmp_path / f"s_{lib.__name__}")
    try:
        same_error(lambda L: L.distributed.init_process_group("gloo"))
    finally:
        for lib in (torch, rustgrad):
            lib.distributed.destroy_process_group()
    same_error(lambda L: L.distributed.destroy_process_group())


def test_world_of_one_queries(world):
    dist = world.distributed
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "gloo")
    assert dist.is_initialized() and dist.group.WORLD is dist.GroupMember.WORLD
    assert dist.get_process_group_ranks(dist.group.WORLD) == [0]
    assert dist.group.WORLD.rank() == 0 and dist.group.WORLD.size() == 1
    g = dist.new_group([0])
    assert (dist.get_rank(g), dist.get_world_size(g), dist.get_global_rank(g, 0)) == (0, 1, 0)


@pytest.mark.parametrize("op", ["SUM", "PRODUCT", "MIN", "MAX"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_collectives_are_no_ops_of_torchs_shape(world, op, dtype):
    dist, dt = world.distributed, getattr(world, dtype)
    x = world.tensor([[1, -2, 3], [4, 5, -6]], dtype=dt)
    assert dist.all_reduce(x, op=getattr(dist.ReduceOp, op)) is None
    assert dist.broadcast(x, src=0) is None
    assert dist.reduce(x, dst=0, op=getattr(dist.ReduceOp, op)) is None
    outs = [world.zeros(2, 3, dtype=dt)]
    dist.all_gather(outs, x)
    into = world.zeros(2, 3, dtype=dt)
    dist.all_gather_into_tensor(into, x)
    scattered = world.zeros(2, 3, dtype=dt)
    dist.reduce_scatter_tensor(scattered, x, op=getattr(dist.ReduceOp, op))
    gathered = [world.zeros(2, 3, dtype=dt)]
    dist.gather(x, gathered, dst=0)
    got = world.zeros(2, 3, dtype=dt)
    dist.scatter(got, [x], src=0)
    a2a = world.zeros(2, 3, dtype=dt)
    dist.all_to_all_single(a2a, x)
    want = np.array([[1, -2, 3], [4, 5, -6]], dtype=dtype)
    for t in (x, outs[0], into, scattered, gathered[0], got, a2a):
        assert np.array_equal(t.numpy(), want)
        assert t.dtype == dt


def test_async_ops_return_completed_work(world):
    dist = world.distributed
    x = world.arange(4.0)
    work = dist.all_reduce(x, async_op=True)
    assert work.wait() is True and work.is_completed() and work.is_success()
    assert work.result()[0] is x
    for w in (dist.broadcast(x, 0, async_op=True), dist.barrier(async_op=True),
              dist.all_gather([world.zeros(4)], x, async_op=True)):
        assert w.wait() and w.is_completed()
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_objects_and_barrier(world):
    dist = world.distributed
    objs = [{"a": 1}, [2, 3]]
    dist.broadcast_object_list(objs, src=0)
    assert objs == [{"a": 1}, [2, 3]]
    out: list = [None]
    dist.all_gather_object(out, ("x", 1))
    assert out == [("x", 1)]
    assert dist.barrier() is None


def test_argument_errors_are_torchs(tmp_path):
    for lib in (torch, rustgrad):
        _init(lib, tmp_path / f"s_{lib.__name__}")
    try:
        same_error(lambda L: L.distributed.broadcast(L.ones(2)))
        same_error(lambda L: L.distributed.broadcast(L.ones(2), 0, group_src=0))
        same_error(lambda L: L.distributed.all_reduce([L.ones(2)]))
        same_error(lambda L: L.distributed.new_group([1]))
        same_error(lambda L: L.distributed.send(L.ones(2), 0))
        same_error(lambda L: L.distributed.init_process_group("gloo"))
        assert _error(lambda: rustgrad.distributed.init_process_group("nope"))[0] == "ValueError"
    finally:
        for lib in (torch, rustgrad):
            lib.distributed.destroy_process_group()


def test_rank_and_world_size_are_checked_against_mpis():
    # gloo (and no backend named) rendezvous with them in torch: here they must match MPI's
    dist = rustgrad.distributed
    for backend in ("gloo", None):
        with pytest.raises(ValueError, match="world_size=2.*mpiexec -n 2"):
            dist.init_process_group(backend, world_size=2, rank=0)
        with pytest.raises(ValueError, match="rank=1"):
            dist.init_process_group(backend, world_size=1, rank=1)
        with pytest.raises(ValueError, match="world_size=0.*at least 1") as e:
            dist.init_process_group(backend, world_size=0, rank=0)
        assert "mpiexec -n 0" not in str(e.value)
    assert not dist.is_initialized()
    dist.init_process_group("gloo", world_size=1, rank=0,
                            timeout=datetime.timedelta(seconds=5))
    dist.destroy_process_group()


def test_the_mpi_backend_ignores_rank_and_world_size_with_torchs_warning():
    dist = rustgrad.distributed
    for rank, size in ((0, 0), (1, 2)):
        with pytest.warns(UserWarning) as w:
            dist.init_process_group("mpi", rank=rank, world_size=size)
        try:
            assert dist.get_rank() == 0 and dist.get_world_size() == 1
        finally:
            dist.destroy_process_group()
        assert str(w[0].message) == (
            f"For MPI backend, world_size ({size}) and rank ({rank}) are ignored since they "
            "are assigned by the MPI runtime.")
        assert w[0].filename == __file__  # blamed on the caller, as torch's stacklevel
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dist.init_process_group("mpi")  # nothing given: no warning
    dist.destroy_process_group()


def test_reduce_op_spellings():
    R, TR = rustgrad.distributed.ReduceOp, torch.distributed.ReduceOp
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        assert int(getattr(R, name)) == int(getattr(TR, name)), name
        assert repr(getattr(R, name)) == repr(getattr(TR, name))
        assert R(getattr(R, name)) == getattr(R, name)
    assert R.RedOpType.SUM is R.SUM


def test_a_world_of_one_averages_to_itself():
    # 2-rank values are checked in test_mpi
    dist = rustgrad.distributed
    dist.init_process_group("mpi")
    try:
        x = rustgrad.tensor([1.5, -3.0])
        dist.all_reduce(x, op=dist.ReduceOp.AVG)
        assert x.tolist() == [1.5, -3.0]
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "bool"])  # no gloo int16
@pytest.mark.parametrize("call", ["all_reduce", "reduce", "reduce_scatter_tensor"])
def test_avg_of_integers_raises_torchs_gloo_error(tmp_path, dtype, call):
    def run(lib: ModuleType) -> None:
        d = lib.distributed
        t = lib.tensor([3, 4], dtype=getattr(lib, dtype))
        if call == "reduce_scatter_tensor":
            d.reduce_scatter_tensor(lib.zeros(2, dtype=t.dtype), t, op=d.ReduceOp.AVG)
        elif call == "reduce":
            d.reduce(t, 0, op=d.ReduceOp.AVG)
        else:
            d.all_reduce(t, op=d.ReduceOp.AVG)

    for lib in (torch, rustgrad):
        _init(lib, tmp_path / "store")
    try:
        assert _error(lambda: run(rustgrad)) == _error(lambda: run(torch))
        assert _error(lambda: run(rustgrad))[0] == "RuntimeError"
    finally:
        for lib in (torch, rustgrad):
            lib.distributed.destroy_process_group()


def test_reduce_op_is_torchs_deprecated_alias():
    for lib in (torch, rustgrad):
        with pytest.warns(FutureWarning) as w:
            ops = [getattr(lib.distributed.reduce_op, n) for n in ("SUM", "MAX", "AVG")]
        assert ops == [lib.distributed.ReduceOp.SUM, lib.distributed.ReduceOp.MAX,
                       lib.distributed.ReduceOp.AVG]
        assert len(w) == 3 and "`torch.distributed.reduce_op` is deprecated" in str(w[0].message)
        assert w[0].filename == __file__
    with pytest.warns(FutureWarning):
        assert list(rustgrad.distributed.reduce_op.__members__) == list(
            torch.distributed.reduce_op.__members__)


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "meta", "xpu", "mps"])
def test_default_backend_for_device_is_torchs(device):
    assert _error(lambda: torch.distributed.get_default_backend_for_device(device)) == _error(
        lambda: rustgrad.distributed.get_default_backend_for_device(device))
    if device in ("cpu", "cuda:1"):
        assert torch.distributed.get_default_backend_for_device(torch.device(device)) == \
            rustgrad.distributed.get_default_backend_for_device(rustgrad.device(device))


def test_backend_and_launch_queries_follow_torch(monkeypatch):
    for value in (None, "none", "abc"):
        if value is None:
            monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
        else:
            monkeypatch.setenv("TORCHELASTIC_RUN_ID", value)
        assert rustgrad.distributed.is_torchelastic_launched() is \
            torch.distributed.is_torchelastic_launched()
    assert rustgrad.distributed.is_gloo_available() is True


def test_gather_object_on_a_world_of_one_is_torchs(tmp_path):
    for lib in (torch, rustgrad):
        _init(lib, tmp_path / "store")
    try:
        outs = {}
        for lib in (torch, rustgrad):
            out = [None, "kept"]
            lib.distributed.gather_object({"a": [1, 2]}, out, dst=0)
            outs[lib] = out
        assert outs[rustgrad] == outs[torch] == [{"a": [1, 2]}, "kept"]
        for args in ((None,), ([],), ([None], 0, None, 0)):
            same_error(lambda L, a=args: L.distributed.gather_object(1, *a))
        assert _error(lambda: rustgrad.distributed.gather_object(1, None))[0] == "ValueError"
    finally:
        for lib in (torch, rustgrad):
            lib.distributed.destroy_process_group()


def test_import_rustgrad_imports_neither_mpi4py_nor_the_package():
    import subprocess

    code = ("import sys, rustgrad; assert 'mpi4py' not in sys.modules; "
            "assert 'rustgrad.distributed' not in sys.modules; "
            "d = rustgrad.distributed; assert 'mpi4py' not in sys.modules; "
            "import rustgrad.distributed as e; assert d is e and d.is_available()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_nccl_without_cupy_is_torchs_not_built_in_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # as on a machine without CuPy
    dist = rustgrad.distributed
    assert not dist.is_nccl_available()
    with pytest.raises(RuntimeError, match="Distributed package doesn't have NCCL built in"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()
