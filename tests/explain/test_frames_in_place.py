"""Sites read from the interpreter's frames in place (CPython 3.11-3.13) against the same sites
found through sys._getframe: both walks, on the same programs, name the same user line, and
that line is the one the program runs on."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any, Callable, Iterator, List, Tuple

import pytest
import rustgrad
from rustgrad import _core

from .sites import next_line

FILE = __file__
LISTED = sys.implementation.name == "cpython" and sys.version_info[:2] in {(3, 11), (3, 12), (3, 13)}
Site = Tuple[str, int, str]


@pytest.fixture(autouse=True)
def restore() -> Iterator[None]:
    prev = rustgrad.autograd.set_provenance(True)
    yield
    _core._frames_in_place(True)
    rustgrad.autograd.set_provenance(bool(prev))


def test_in_place_exactly_on_listed_versions() -> None:
    """The layouts are CPython 3.11, 3.12 and 3.13's, and each passes its check here; any other
    interpreter takes sys._getframe."""
    assert _core._frames_in_place() is LISTED
    assert _core._frames_in_place(False) is False
    assert _core._frames_in_place(True) is LISTED


def direct(x: Any) -> List[Tuple[Any, Site]]:
    out = x * 2
    return [(out, (FILE, next_line() - 2, "direct"))]


def nested(x: Any) -> List[Tuple[Any, Site]]:
    def inner() -> Any:
        return x.exp()
    line = next_line() - 2
    return [(inner(), (FILE, line, "nested.<locals>.inner"))]


def generator(x: Any) -> List[Tuple[Any, Site]]:
    def gen() -> Iterator[Any]:
        for k in range(2):
            yield x + k
    line = next_line() - 2
    return [(y, (FILE, line, "generator.<locals>.gen")) for y in gen()]


def called_from_c(x: Any) -> List[Tuple[Any, Site]]:
    """map and sorted call the user's lambda from C: the lambda's frame is the site."""
    outs = list(map(lambda k: x * k, (1.0, 2.0)))
    line = next_line() - 2
    sorted((1, 2), key=lambda k: outs.append(x - k) or k)
    key_line = next_line() - 2
    lam = "called_from_c.<locals>.<lambda>"
    return [(o, (FILE, line, lam)) for o in outs[:2]] + [(o, (FILE, key_line, lam)) for o in outs[2:]]


def comprehension(x: Any) -> List[Tuple[Any, Site]]:
    outs = [x.sin() for _ in range(2)]
    line = next_line() - 2
    # 3.12 inlines a list comprehension into its function (PEP 709)
    func = "comprehension" if sys.version_info >= (3, 12) else "comprehension.<locals>.<listcomp>"
    return [(o, (FILE, line, func)) for o in outs]


def executed(x: Any) -> List[Tuple[Any, Site]]:
    scope = {"x": x}
    exec("y = x.cos()\n", scope)
    return [(scope["y"], ("<string>", 1, "<module>"))]


def in_thread(x: Any) -> List[Tuple[Any, Site]]:
    outs: List[Any] = []

    def work() -> None:
        outs.append(x.tanh())
    line = next_line() - 2
    t = threading.Thread(target=work)
    t.start()
    t.join()
    return [(outs[0], (FILE, line, "in_thread.<locals>.work"))]


def in_coroutine(x: Any) -> List[Tuple[Any, Site]]:
    async def coro() -> Any:
        await asyncio.sleep(0)
        return x.neg()
    line = next_line() - 2
    return [(asyncio.run(coro()), (FILE, line, "in_coroutine.<locals>.coro"))]


class Scale(rustgrad.nn.Module):
    def forward(self, x: Any) -> Any:
        self.line = next_line()
        return x * 3


def through_module(x: Any) -> List[Tuple[Any, Site]]:
    m = Scale()
    out = m(x)
    return [(out, (FILE, m.line, "Scale.forward"))]


def deep(x: Any) -> List[Tuple[Any, Site]]:
    def down(k: int) -> Any:
        return x.abs() if k == 0 else down(k - 1)
    line = next_line() - 2
    return [(down(200), (FILE, line, "deep.<locals>.down"))]


PROGRAMS: List[Callable[[Any], List[Tuple[Any, Site]]]] = [
    direct, nested, generator, called_from_c, comprehension, executed, in_thread, in_coroutine,
    through_module, deep]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_both_walks_name_the_running_line(program: Callable[[Any], List[Tuple[Any, Site]]]
                                          ) -> None:
    x = rustgrad.ones(2, requires_grad=True)
    sites = {}
    for in_place in (True, False):
        _core._frames_in_place(in_place)
        results = program(x)
        assert results
        for out, expected in results:
            assert out.grad_fn._site == expected, (in_place, out.grad_fn)
        sites[in_place] = [out.grad_fn._site for out, _ in results]
    assert sites[True] == sites[False]


def bump_history() -> Tuple[Any, List[int]]:
    x = rustgrad.ones(3, requires_grad=True) * 1
    lines = [next_line()]
    x.add_(1)
    lines.append(next_line())
    x[0] = 2
    return x._version_history, lines


def test_both_walks_name_a_bump_and_its_op() -> None:
    """A version bump keeps the package frames on the way out, which name its op."""
    histories = {}
    for in_place in (True, False):
        _core._frames_in_place(in_place)
        history, lines = bump_history()
        assert history == ((1, "add_", FILE, lines[0], "bump_history"),
                           (2, "setitem", FILE, lines[1], "bump_history"))
        histories[in_place] = history
    assert histories[True] == histories[False]


def test_sites_stay_right_past_the_code_map_cap() -> None:
    """Code compiled again and again (exec, notebook cells) is forgotten in bulk once 65,536
    code objects have been seen; sites before and after that stay right."""
    x = rustgrad.ones(1, requires_grad=True)
    scope = {"x": x}
    for k in range(70_000):
        exec(compile("y = x * 2\n", f"<cell {k}>", "exec"), scope)
        if k % 10_000 == 0 or k == 69_999:
            assert scope["y"].grad_fn._site == (f"<cell {k}>", 1, "<module>")
    out = x.exp()
    assert out.grad_fn._site == (FILE, next_line() - 2, "test_sites_stay_right_past_the_code_map_cap")
