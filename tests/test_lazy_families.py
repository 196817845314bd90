"""Op families bound on first use (rustgrad._bind): `import rustgrad` leaves most family modules
unimported, and the first use of an op, by any route, gives what an eager binding gave."""

import math
import subprocess
import sys
import textwrap

import pytest
import rustgrad
from rustgrad import _bind
from rustgrad._ops import _index


def _fresh(code: str) -> str:
    """stdout of code run in a new interpreter (families load once per process)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_import_leaves_every_family_unimported():
    out = _fresh("""
        import sys
        import rustgrad
        print(sorted(m for m in sys.modules if m.startswith("rustgrad._ops.") and m.split(".")[-1][0] != "_"))
    """)
    assert eval(out) == []


def test_a_method_call_loads_its_family_and_binds_the_op_itself():
    out = _fresh("""
        import sys
        import rustgrad
        x = rustgrad.tensor([-1.0, 2.0], requires_grad=True)
        y = x.relu()
        from rustgrad._ops import activation
        print(type(rustgrad.Tensor.__dict__["relu"]).__name__, rustgrad.Tensor.relu is activation.relu,
              rustgrad.relu is activation.relu, y.grad_fn.name(), y.tolist())
    """)
    assert out.split() == ["function", "True", "True", "ReluBackward0", "[0.0,", "2.0]"]


def test_operators_properties_and_class_access_load_their_families():
    out = _fresh("""
        import inspect
        import rustgrad
        x = rustgrad.ones(2, 3)
        print((x == x).all().item(), tuple(x.mT.shape),
              list(inspect.signature(rustgrad.Tensor.logsumexp).parameters)[:2])
        try:
            x.mT = x
        except AttributeError as e:
            print("refused")
    """)
    assert out.split() == ["True", "(3,", "2)", "['input',", "'dim']", "refused"]


def test_a_subclass_reaches_an_unloaded_op_through_super():
    out = _fresh("""
        import rustgrad
        class Doubled(rustgrad.Tensor):
            def logsumexp(self, *args, **kwargs):
                return super().logsumexp(*args, **kwargs) * 2
        print(Doubled(rustgrad.zeros(2)).logsumexp(0).item())
    """)
    assert float(out) == pytest.approx(2 * 0.6931472, abs=1e-6)


def test_the_first_call_warns_at_the_callers_line():
    out = _fresh("""
        import warnings
        import rustgrad
        x = rustgrad.zeros(4)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x.resize(2, 2)  # deprecated: torch warns at this line
        print([(w.filename, w.lineno) for w in caught])
    """)
    assert eval(out) == [("<string>", 7)]


def test_namespace_lookups_dir_and_star_import_see_unloaded_functions():
    out = _fresh("""
        import rustgrad
        print("logsumexp" in dir(rustgrad), "logsumexp" in vars(rustgrad))
        from rustgrad import logsumexp
        ns = {}
        exec("from rustgrad import *", ns)
        print(logsumexp is rustgrad.logsumexp, all(n in ns for n in rustgrad.__all__))
    """)
    assert out.split() == ["True", "False", "True", "True"]


def test_every_family_loaded_leaves_no_placeholder_and_every_function_bound():
    _bind.load_families()
    left = [n for n, v in vars(rustgrad.Tensor).items() if isinstance(v, _bind._Placeholder)]
    assert not left
    assert [n for n in _index.FUNCTION if n not in vars(rustgrad)] == []
    declared = {n: d.family for d in _bind.declared() for n in d.method + d.dunder + d.prop}
    assert declared == _index.TENSOR


def test_a_stale_index_entry_names_the_command_that_rewrites_it():
    class Stand:
        pass

    Stand.gone = _bind._Placeholder(Stand, "gone", "arith")
    with pytest.raises(ImportError, match=r"Tensor\.gone in _ops/arith\.py.*tools/gen_stubs\.py"):
        Stand().gone  # noqa: B018


def test_an_unknown_name_is_still_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'no_such_op'"):
        rustgrad.no_such_op  # noqa: B018
    assert not hasattr(rustgrad.tensor(1.0), "no_such_op")


def test_threads_first_using_one_family_together_all_get_the_op():
    out = _fresh("""
        import _thread
        import time
        import rustgrad
        x = rustgrad.arange(6.0, dtype=rustgrad.float64).reshape(2, 3)
        results = []
        start = _thread.allocate_lock()
        start.acquire()

        def run():
            with start:
                pass
            try:
                results.append(x.logcumsumexp(1).exp().sum().item())
            except Exception as e:
                results.append(repr(e))

        for _ in range(8):
            _thread.start_new_thread(run, ())
        start.release()
        while len(results) < 8:
            time.sleep(0.001)
        print(results)
    """)
    # exp(logcumsumexp(x)) is the running sum of exp(x) along each row
    want = sum(sum(math.exp(v) for v in row[:k + 1]) for row in ([0, 1, 2], [3, 4, 5]) for k in range(3))
    assert eval(out) == [pytest.approx(want, rel=1e-12)] * 8


def test_an_op_the_user_replaced_before_its_family_loaded_stays_replaced():
    out = _fresh("""
        import rustgrad
        rustgrad.Tensor.relu = lambda self: "mine"
        rustgrad.relu = len
        x = rustgrad.tensor([-1.0, 2.0])
        print(x.relu(), rustgrad.relu is len, x.sigmoid().shape == x.shape,
              rustgrad.sigmoid is rustgrad.Tensor.sigmoid, rustgrad.nn.functional.relu(x).tolist())
    """)
    assert out.split() == ["mine", "True", "True", "True", "[0.0,", "2.0]"]


def test_a_family_still_importing_is_bound_once_its_import_ends():
    out = _fresh("""
        import sys, types
        import rustgrad
        from rustgrad import _bind
        from rustgrad._ops._declare import op

        fam = types.ModuleType("fakefam")
        fam.__spec__ = types.SimpleNamespace(_initializing=True)
        sys.modules["fakefam"] = fam

        def fake_twice(self):
            return self * 2
        fake_twice.__module__ = "fakefam"
        op(method="fake_twice")(fake_twice)

        _bind._flush()
        before = "fake_twice" in vars(rustgrad.Tensor)
        fam.__spec__._initializing = False
        rustgrad.ones(1).sin()  # a first use of another family flushes again
        print(before, vars(rustgrad.Tensor).get("fake_twice") is fake_twice)
    """)
    assert out.split() == ["False", "True"]
