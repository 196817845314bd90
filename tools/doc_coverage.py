"""Docstring coverage of rustgrad's public API: what `help()` shows a user.

    python tools/doc_coverage.py            # the table (documented / public per namespace)
    python tools/doc_coverage.py --missing  # also every public name without a docstring

Public: the names a namespace exports (`__all__` where it has one, else names without a leading
underscore), and for classes their public methods and properties (what they define or inherit
from rustgrad, not from `object`). Documented: a docstring of at least one line of its own (a
class's docstring does not count for its methods).
"""

from __future__ import annotations

import argparse
import inspect
import sys
import types
from typing import Any, Dict, Iterator, List, Tuple

import rustgrad


def _namespaces() -> Dict[str, Any]:
    import rustgrad.distributed
    import rustgrad.nn.functional
    import rustgrad.nn.init
    import rustgrad.nn.parallel
    import rustgrad.optim.lr_scheduler
    import rustgrad.utils.data

    return {
        "rustgrad": rustgrad,
        "Tensor": rustgrad.Tensor,
        "nn": rustgrad.nn,
        "nn.functional": rustgrad.nn.functional,
        "nn.init": rustgrad.nn.init,
        "optim": rustgrad.optim,
        "optim.lr_scheduler": rustgrad.optim.lr_scheduler,
        "autograd": rustgrad.autograd,
        "utils.data": rustgrad.utils.data,
        "distributed": rustgrad.distributed,
        "nn.parallel": rustgrad.nn.parallel,
    }


def _public(obj: Any) -> List[str]:
    if isinstance(obj, type):
        names = set()
        for klass in obj.__mro__:
            if klass is object:
                continue
            names.update(n for n in vars(klass) if not n.startswith("_"))
        return sorted(names)
    names = getattr(obj, "__all__", None)
    if names is None:
        names = [n for n in dir(obj) if not n.startswith("_")]
    return sorted(n for n in names if not isinstance(getattr(obj, n, None), types.ModuleType)
                  or n in ("nn", "optim", "autograd", "functional", "utils", "viz"))


def _doc(owner: Any, name: str) -> str:
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if name in vars(klass):
                raw = vars(klass)[name]
                target = getattr(raw, "__func__", raw)
                if isinstance(raw, property):
                    target = raw
                doc = getattr(target, "__doc__", None)
                if not doc and inspect.ismemberdescriptor(raw):
                    # a __slots__ dict documents its attributes; inspect.getdoc finds that
                    doc = inspect.getdoc(raw)
                return (doc or "").strip()
        return ""
    value = getattr(owner, name, None)
    if value is None or isinstance(value, (int, float, str, bool, tuple, list, dict)):
        return "constant"  # module constants (dtypes are objects with docs of their class)
    if not (inspect.isroutine(value) or inspect.isclass(value) or isinstance(value, types.ModuleType)):
        return "value"
    return (inspect.getdoc(value) or "").strip()


def coverage() -> Iterator[Tuple[str, int, int, List[str]]]:
    for label, ns in _namespaces().items():
        names = _public(ns)
        missing = [n for n in names if not _doc(ns, n)]
        yield label, len(names) - len(missing), len(names), missing
        if not isinstance(ns, type):
            for n in names:
                klass = getattr(ns, n, None)
                if inspect.isclass(klass) and klass is not rustgrad.Tensor and \
                        klass.__module__.startswith("rustgrad"):
                    methods = [m for m in _public(klass) if m in vars(klass)]
                    miss = [f"{n}.{m}" for m in methods if not _doc(klass, m)]
                    if methods:
                        yield f"{label}.{n}", len(methods) - len(miss), len(methods), miss


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--missing", action="store_true")
    args = p.parse_args()
    total = documented = 0
    top: Dict[str, List[int]] = {}
    for label, ok, n, missing in coverage():
        documented += ok
        total += n
        head = label if "." not in label or label in ("nn.functional", "nn.init", "nn.parallel", "utils.data",
                                                      "optim.lr_scheduler") else label.split(".")[0]
        top.setdefault(head, [0, 0])
        top[head][0] += ok
        top[head][1] += n
        if args.missing and missing:
            print(f"{label}: " + ", ".join(missing))
    for head, (ok, n) in top.items():
        print(f"{head:<20} {ok:>5} / {n:<5}")
    print(f"{'total':<20} {documented:>5} / {total:<5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
