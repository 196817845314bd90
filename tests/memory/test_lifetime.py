"""Lifetime: a long training loop keeps RSS and the live-storage count flat, deleting the
handles of a graph in any order frees it, and a KeyboardInterrupt out of a backward (a hook, a
custom Function, a real SIGINT) leaves the library usable and the interrupted graph freeable."""

from __future__ import annotations

import gc
import itertools
import os
import signal
import subprocess
import sys
import textwrap
import time
import weakref
from types import ModuleType
from typing import Any, Dict, Iterator, List

import pytest
from rustgrad import memory

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


@pytest.fixture
def frozen_heap() -> Iterator[None]:
    """gc.collect() skips what existed before the test (torch's import makes each full collection
    take ~0.1 s); what the test builds afterwards is collected as usual."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


# ---- a long training loop --------------------------------------------------------------------
def _tanh_function(lib: ModuleType) -> Any:
    class Tanh(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            out = x.tanh()
            ctx.save_for_backward(out)  # saving the output is the case that can make a cycle
            return out

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (out,) = ctx.saved_tensors
            return g * (1 - out * out)

    return Tanh


STEPS = 10_000
EVERY = 1_000
RSS_SLACK = 8 << 20


def test_ten_thousand_steps_keep_rss_and_live_storages_flat(rg: ModuleType) -> None:
    rg.manual_seed(0)
    first, second = rg.nn.Linear(8, 16), rg.nn.Linear(16, 1)
    tanh = _tanh_function(rg)
    params = list(first.parameters()) + list(second.parameters())
    opt = rg.optim.Adam(params, lr=1e-3)
    x, y = rg.randn(4, 8), rg.randn(4, 1)
    hook_calls = [0]

    def hook(g: Any) -> Any:
        hook_calls[0] += 1
        return g * 1.0

    counts: List[int] = []
    losses: List[float] = []
    rss_warm = 0
    # With the collector off, a graph that lived on through a reference cycle would pile up
    # here; torch frees each step's graph by reference counting alone.
    gc.collect()
    gc.disable()
    start = time.perf_counter()
    try:
        for step in range(1, STEPS + 1):
            h = tanh.apply(first(x))
            h.retain_grad()
            h.register_hook(hook)
            loss = ((second(h) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            assert h.grad is not None
            if step == 1:
                losses.append(loss.item())
            if step % EVERY == 0:
                counts.append(memory.live_storages())
                losses.append(loss.item())
                if step == EVERY:
                    rss_warm = _rss()
        rss_end = _rss()
    finally:
        gc.enable()
    elapsed = time.perf_counter() - start

    assert hook_calls[0] == STEPS
    assert losses[-1] < losses[0] / 100  # it trained
    assert counts == [counts[0]] * len(counts), counts
    assert rss_end - rss_warm <= RSS_SLACK, (rss_warm, rss_end)
    assert elapsed < 30.0, elapsed


# ---- del in every order ----------------------------------------------------------------------
NAMES = ("loss", "mid", "view", "leaf", "grad_fn")


class _Hook:
    """A hook object, so a weakref can tell when the graph has let go of it."""

    def __call__(self, g: Any) -> Any:
        return g * 2.0


def _graph(lib: ModuleType, run_backward: bool) -> tuple[Dict[str, Any], List[Any]]:
    leaf = lib.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6], [0.7, -0.8, 0.9]], requires_grad=True)
    mid = leaf * 2.0
    mid.retain_grad()
    hook = _Hook()
    mid.register_hook(hook)
    view = mid[1:]
    out = view.exp()  # the second non-leaf, held only by the graph (exp saves its result)
    loss = out.sum()
    handles = {"loss": loss, "mid": mid, "view": view, "leaf": leaf, "grad_fn": loss.grad_fn}
    if run_backward:
        loss.backward(retain_graph=True)
    watched = [weakref.ref(t) for t in (leaf, mid, view, out, loss)] + [weakref.ref(hook)]
    return handles, watched


def _touch(name: str, obj: Any) -> None:
    """Use what is still alive: a freed neighbour must not have left it dangling."""
    if name == "grad_fn":
        obj.name()
        for fn, _ in obj.next_functions:
            if fn is not None:
                fn.name()
    else:
        obj.detach().sum().item()
        if obj.grad_fn is not None:
            obj.grad_fn.name()
        if (obj.is_leaf or obj.retains_grad) and obj.grad is not None:
            obj.grad.sum().item()


def _touch_all(handles: Dict[str, Any]) -> None:
    # A function of its own, so no loop variable of the test outlives the deletions.
    for name, obj in handles.items():
        _touch(name, obj)


@pytest.mark.parametrize("run_backward", [False, True], ids=["before_backward", "after_backward"])
def test_del_in_every_order_frees_the_graph(lib: ModuleType, run_backward: bool, frozen_heap: None) -> None:
    baseline = memory.live_storages()
    for order in itertools.permutations(NAMES):
        handles, watched = _graph(lib, run_backward)
        for name in order:
            del handles[name]
            gc.collect()
            _touch_all(handles)
        alive = [i for i, r in enumerate(watched) if r() is not None]
        assert not alive, (order, alive)
        assert memory.live_storages() == baseline, order


# ---- KeyboardInterrupt out of a backward ------------------------------------------------------
CHAIN = 20_000


def _raise_interrupt(g: Any) -> Any:
    raise KeyboardInterrupt


def _assert_usable(lib: ModuleType) -> None:
    assert lib.is_grad_enabled()
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * a
    b.register_hook(lambda g: g * 10.0)
    b.sum().backward()
    assert a.grad.tolist() == [20.0, 40.0, 60.0]


def test_interrupt_from_a_hook_mid_chain(lib: ModuleType, frozen_heap: None) -> None:
    baseline = memory.live_storages()
    x = lib.full((3,), 0.5, requires_grad=True)
    y = x
    for i in range(CHAIN):
        y = y.tanh()  # saves its result: the chain holds CHAIN storages
        if i == CHAIN // 2:
            y.register_hook(_raise_interrupt)
    loss = y.sum()

    with pytest.raises(KeyboardInterrupt):
        loss.backward()

    assert x.grad is None  # stopped before reaching the leaf
    _assert_usable(lib)
    del y, loss
    gc.collect()
    assert memory.live_storages() == baseline + (lib.__name__ == "rustgrad")  # x itself


def test_interrupt_from_a_custom_function_backward(lib: ModuleType, frozen_heap: None) -> None:
    class Stop(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            out = x * 2.0
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            raise KeyboardInterrupt("stop")

    baseline = memory.live_storages()
    x = lib.full((3,), 0.5, requires_grad=True)
    y = x
    for i in range(CHAIN):
        y = y.tanh() if i != CHAIN // 2 else Stop.apply(y)
    loss = y.sum()

    with pytest.raises(KeyboardInterrupt, match="stop"):
        loss.backward()

    assert x.grad is None
    _assert_usable(lib)
    del y, loss
    gc.collect()
    assert memory.live_storages() == baseline + (lib.__name__ == "rustgrad")


# The child installs Python's SIGINT handler itself: started from a background shell (`make test &`)
# it inherits SIGINT as ignored, Python then installs no handler, and the signal would be lost.
_CHILD = """
import signal
import sys
import {name} as lib

signal.signal(signal.SIGINT, signal.default_int_handler)

x = lib.ones(64, requires_grad=True)
y = x
for _ in range(2000):
    y = (y * 1.0).tanh()
loss = y.sum()
loss.backward(retain_graph=True)
print("ready", flush=True)
try:
    while True:  # nearly all of the time is spent inside backward
        loss.backward(retain_graph=True)
except KeyboardInterrupt:
    g = lib.autograd.grad((x * 3.0).sum(), x)[0]
    print("usable", g.sum().item(), lib.is_grad_enabled(), flush=True)
    raise
"""


def test_sigint_during_backward_exits_with_keyboard_interrupt(lib: ModuleType) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_CHILD.format(name=lib.__name__))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # An unhandled KeyboardInterrupt ends CPython by re-raising SIGINT on itself.
    assert proc.returncode == -signal.SIGINT, (proc.returncode, err)
    assert out == "usable 192.0 True\n"
    assert err.rstrip().endswith("KeyboardInterrupt"), err
    assert "backward" in err
    for bad in ("panicked", "Fatal Python error", "Segmentation fault", "RUST_BACKTRACE"):
        assert bad not in err, err


def _tensor_hook(lib: ModuleType, x: Any) -> Any:
    y = x * 2.0
    y.register_hook(_raise_interrupt)
    return y.sum()


def _node_prehook(lib: ModuleType, x: Any) -> Any:
    y = x * 2.0
    y.grad_fn.register_prehook(_raise_interrupt)
    return y.sum()


def _node_hook(lib: ModuleType, x: Any) -> Any:
    y = x * 2.0
    y.grad_fn.register_hook(lambda *a: _raise_interrupt(a))
    return y.sum()


def _post_accumulate_hook(lib: ModuleType, x: Any) -> Any:
    x.register_post_accumulate_grad_hook(_raise_interrupt)
    return (x * 2.0).sum()


def _unpack_hook(lib: ModuleType, x: Any) -> Any:
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, _raise_interrupt):
        return x.exp().sum()


@pytest.mark.parametrize("where", [_tensor_hook, _node_prehook, _node_hook, _post_accumulate_hook, _unpack_hook])
@pytest.mark.parametrize("anomaly", [False, True], ids=["plain", "anomaly"])
@pytest.mark.filterwarnings("ignore:Error detected in")
def test_interrupt_from_any_hook_leaves_the_modes_alone(lib: ModuleType, where: Any, anomaly: bool) -> None:
    x = lib.ones(3, requires_grad=True)
    loss = where(lib, x)
    with lib.autograd.set_detect_anomaly(anomaly), pytest.raises(KeyboardInterrupt):
        loss.backward()
    assert not lib.is_anomaly_enabled()
    _assert_usable(lib)
