"""`import rustgrad` loads only what the package itself needs (issue 11's import bar,
benches/bench_import.py measures the time): the heavy standard-library and optional modules, and
rustgrad's own submodules that first use can pay for, are not imported, and every name that
import defers still works, in a fresh interpreter each time. Structural facts only: no timing."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict

import pytest
import rustgrad

# not imported by `import rustgrad` (none of them is imported by `import numpy` either)
STDLIB_DEFERRED = [
    "importlib.metadata",  # __version__
    "email", "csv", "zipfile", "pathlib", "tempfile",  # importlib.metadata's own imports
    "socket", "json",  # serialization (json), importlib.metadata (socket, through email)
    "subprocess", "shutil",  # viz.to_svg
    "multiprocessing", "queue", "signal",  # utils.data's worker processes
    "threading",  # grad modes and provenance use _thread directly
    "secrets", "hmac",  # numpy.random's seeding
    "pkgutil",  # the op families are listed with os.listdir
]
OPTIONAL_DEFERRED = ["numpy.random", "mpi4py", "cupy"]
OWN_DEFERRED = [
    "rustgrad.nn", "rustgrad.optim", "rustgrad.testing", "rustgrad.viz", "rustgrad.distributed",
    "rustgrad.utils.data", "rustgrad.utils.checkpoint", "rustgrad.utils.dlpack",
    "rustgrad.autograd._reach", "rustgrad.autograd._memory_report", "rustgrad._explain",
    "rustgrad.serialization", "rustgrad._torch_pickle", "rustgrad._tensor_str",
    "rustgrad.autograd.functional",
    # op families load on first use (rustgrad._bind)
    "rustgrad._ops.arith", "rustgrad._ops.views", "rustgrad._ops.joins", "rustgrad._ops.activation",
]


def _fresh(code: str) -> Any:
    """Runs code in a new interpreter; returns the Python literal it prints last (repr, not
    json: the child must not import modules whose absence it checks)."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, check=True, timeout=300)
    return ast.literal_eval(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def loaded() -> Dict[str, bool]:
    names = STDLIB_DEFERRED + OPTIONAL_DEFERRED + OWN_DEFERRED
    return dict(zip(names, _fresh(f"""
        import sys
        import rustgrad
        print(repr([n in sys.modules for n in {names!r}]))
    """)))


@pytest.mark.parametrize("name", STDLIB_DEFERRED + OPTIONAL_DEFERRED + OWN_DEFERRED)
def test_import_rustgrad_does_not_load(loaded: Dict[str, bool], name: str) -> None:
    assert not loaded[name], f"`import rustgrad` imports {name}"


def test_numpy_alone_loads_none_of_them() -> None:
    # what `import rustgrad` must not add on top of `import numpy`, so numpy must not load it
    names = STDLIB_DEFERRED + OPTIONAL_DEFERRED
    assert _fresh(f"""
        import sys
        import numpy
        print(repr([n for n in {names!r} if n in sys.modules]))
    """) == []


def test_version_is_the_installed_distributions() -> None:
    got = _fresh("""
        import importlib.metadata, sys
        import rustgrad
        before = "importlib.metadata" in sys.modules  # imported by this program, above
        try:
            want = importlib.metadata.version("rustgrad")
        except importlib.metadata.PackageNotFoundError:
            want = "0+unknown"
        print(repr([rustgrad.__version__, want, "__version__" in vars(rustgrad), before]))
    """)
    assert got[0] == got[1] and got[2] and got[3]


def test_version_read_on_first_use_only() -> None:
    assert _fresh("""
        import sys
        import rustgrad
        v = rustgrad.__version__
        print(repr([isinstance(v, str) and v != "", "importlib.metadata" in sys.modules,
                          rustgrad.__version__ is v]))
    """) == [True, True, True]


def test_deferred_names_reachable_as_attributes_after_import() -> None:
    # torch programs reach submodules through the package: torch.nn.functional.relu after
    # `import torch`; torch computes the expected values (the oracle)
    torch = pytest.importorskip("torch")
    want = torch.nn.functional.relu(torch.tensor([-1.0, 2.0])).tolist()
    torch.set_printoptions(precision=2)
    want_repr = repr(torch.tensor([-1.0, 2.0]))
    torch.set_printoptions(profile="default")
    got = _fresh("""
        import io
        import rustgrad
        x = rustgrad.tensor([-1.0, 2.0])

        def save_load():
            buf = io.BytesIO()
            rustgrad.save({"x": x}, buf)
            buf.seek(0)
            return rustgrad.load(buf)["x"].tolist()

        out = {
            "relu": rustgrad.nn.functional.relu(x).tolist(),
            "linear": type(rustgrad.nn.Linear(2, 1)).__module__,
            "sgd": rustgrad.optim.SGD.__name__,
            "lr_scheduler": rustgrad.optim.lr_scheduler.StepLR.__name__,
            "dataloader": [b.tolist() for b in rustgrad.utils.data.DataLoader(
                rustgrad.arange(4.0), batch_size=2)],
            "checkpoint": callable(rustgrad.utils.checkpoint.checkpoint),
            "dlpack": callable(rustgrad.utils.dlpack.from_dlpack),
            "testing": rustgrad.testing.assert_close(x, x) is None,
            "viz": "digraph" in rustgrad.viz.to_dot((x * 2).sum()),
            "who_gets_grad": callable(rustgrad.autograd.who_gets_grad),
            "memory_report": callable(rustgrad.autograd.graph.memory_report),
            "saved_tensors": callable(rustgrad.autograd.graph.saved_tensors),
            "live_graphs": callable(rustgrad.autograd.graph.live_graphs),
            "distributed": callable(rustgrad.distributed.is_available),
            "explain": callable(rustgrad.explain),
            "save_load": save_load(),
            "serialization": rustgrad.serialization.load is rustgrad.load,
            "set_printoptions": rustgrad.set_printoptions(precision=2) or repr(x),
        }
        print(repr(out))
    """)
    assert got == {
        "relu": want, "linear": "rustgrad.nn.modules.linear", "sgd": "SGD",
        "lr_scheduler": "StepLR", "dataloader": [[0.0, 1.0], [2.0, 3.0]], "checkpoint": True,
        "dlpack": True, "testing": True, "viz": True, "who_gets_grad": True,
        "memory_report": True, "saved_tensors": True, "live_graphs": True, "distributed": True,
        "explain": True, "save_load": [-1.0, 2.0], "serialization": True,
        "set_printoptions": want_repr,
    }


def test_deferred_names_importable_by_from_import() -> None:
    assert _fresh("""
        from rustgrad import nn, optim, testing, viz
        from rustgrad.autograd import who_gets_grad
        from rustgrad.autograd.graph import memory_report
        from rustgrad.utils import data
        from rustgrad.utils.data import DataLoader
        from rustgrad import explain, load, save
        import rustgrad
        print(repr([nn is rustgrad.nn, optim is rustgrad.optim,
                          testing is rustgrad.testing, viz is rustgrad.viz,
                          data is rustgrad.utils.data, DataLoader is data.DataLoader,
                          who_gets_grad is rustgrad.autograd.who_gets_grad,
                          memory_report is rustgrad.autograd.graph.memory_report,
                          explain is rustgrad.explain, load is rustgrad.serialization.load,
                          save is rustgrad.serialization.save]))
    """) == [True] * 11


def test_star_import_gives_the_deferred_submodules() -> None:
    assert _fresh("""
        from rustgrad import *
        print(repr([nn.Module.__name__, optim.Adam.__name__, callable(testing.assert_close),
                          callable(viz.to_dot), callable(save), callable(load), callable(explain)]))
    """) == ["Module", "Adam", True, True, True, True, True]


def test_unknown_attributes_still_raise() -> None:
    assert _fresh("""
        import rustgrad
        out = []
        for mod, name in [(rustgrad, "no_such_name"), (rustgrad.autograd, "no_such_name"),
                          (rustgrad.autograd.graph, "no_such_name"),
                          (rustgrad.utils, "no_such_name")]:
            try:
                getattr(mod, name)
                out.append("no error")
            except AttributeError as e:
                out.append(str(e))
        print(repr(out))
    """) == [
        "module 'rustgrad' has no attribute 'no_such_name'",
        "module 'rustgrad.autograd' has no attribute 'no_such_name'",
        "module 'rustgrad.autograd.graph' has no attribute 'no_such_name'",
        "module 'rustgrad.utils' has no attribute 'no_such_name'",
    ]


def test_default_generator_made_on_first_draw_gives_the_default_seeds_stream() -> None:
    # seeding and reading the seed or state do not need numpy.random until a number is drawn;
    # the first draw continues exactly the stream a freshly seeded generator gives
    got = _fresh("""
        import sys
        import rustgrad
        seed = rustgrad.initial_seed()
        rustgrad.manual_seed(7)
        before = "numpy.random" in sys.modules
        a = rustgrad.rand(4).tolist()
        b = rustgrad.rand(4, generator=rustgrad.Generator().manual_seed(7)).tolist()
        rustgrad.manual_seed(7)
        state = rustgrad.get_rng_state()
        c = rustgrad.rand(4).tolist()
        rustgrad.set_rng_state(state)
        d = rustgrad.rand(4).tolist()
        print(repr([seed, before, a == b == c == d]))
    """)
    assert got == [67280421310721, False, True]


def test_default_seed_stream_unchanged_by_deferral() -> None:
    # an unseeded program's first numbers are the default seed's, as before the deferral
    got = _fresh("""
        import numpy as np
        import rustgrad
        a = rustgrad.rand(3, dtype=rustgrad.float64).tolist()
        print(repr([a, np.random.default_rng(67280421310721).random(3).tolist()]))
    """)
    assert got[0] == got[1]


def test_numpy_aliases_are_one_normaliser_not_generated_code() -> None:
    # an op taking dim/keepdim is declared behind one normaliser that also takes axis=/keepdims=:
    # the family module's name and the public names are that one object, and no op's code is
    # generated (no exec'd source anywhere under _ops)
    torch = pytest.importorskip("torch")
    x = torch.arange(6.0).reshape(2, 3)
    want = [torch.sum(x, axis=0).tolist(), x.sum(axis=1, keepdims=True).tolist(),
            torch.cumsum(x, axis=1).tolist()]
    got = _fresh("""
        import threading
        import rustgrad
        from rustgrad._ops import reduce
        x = rustgrad.arange(6.0).reshape(2, 3)
        results = []
        threads = [threading.Thread(target=lambda: results.append(
            rustgrad.cumsum(x, axis=1).tolist())) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        got = [rustgrad.sum(x, axis=0).tolist(), x.sum(axis=1, keepdims=True).tolist(),
               results[0]]
        try:
            rustgrad.sum(x, dim=0, axis=1)
            both = None
        except TypeError as e:
            both = str(e)
        print(repr([got, all(r == results[0] for r in results), len(results),
                    rustgrad.sum is reduce.sum is rustgrad.Tensor.sum, both]))
    """)
    assert got == [want, True, 8, True, "sum() got an unexpected keyword argument 'axis'"]
    ops = Path(rustgrad.__file__).parent / "_ops"
    assert not [p.name for p in ops.glob("*.py") if re.search(r"(?<![.\w])(exec|compile)\(", p.read_text())]
