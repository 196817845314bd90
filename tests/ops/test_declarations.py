"""Op declarations and the binder: every public name is declared once, beside its op, and bound
to exactly that function."""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import pytest
import rustgrad
import rustgrad.nn.functional as F
from rustgrad import _bind
from rustgrad._ops import arith
from rustgrad._ops._declare import Decl
from rustgrad._ops._node import NODES


def _decl(fn: Any, **names: Any) -> Decl:
    fields = {k: tuple(v) for k, v in names.items()}
    return Decl(fn=fn, family="test", **fields)


def _one(self: Any) -> int:
    return 1


def _two(self: Any) -> int:
    return 2


def test_binder_method_declared_twice_raises_naming_both_places():
    class T:
        pass

    binder = _bind.Binder()
    with pytest.raises(ImportError, match=r"T\.twice is declared twice: by .*_one and by .*_two"):
        binder.bind_tensor(T, [_decl(_one, method=["twice"]), _decl(_two, method=["twice"])])


def test_binder_function_declared_twice_raises():
    binder = _bind.Binder()
    ns: dict = {}
    with pytest.raises(ImportError, match="ns.f is declared twice"):
        binder.bind_namespace(ns, "ns", "function", [_decl(_one, function=["f"]),
                                                     _decl(_two, function=["f"])])


def test_binder_name_defined_by_hand_is_not_silently_replaced():
    class T:
        def mine(self) -> int:
            return 0

    binder = _bind.Binder()
    with pytest.raises(ImportError, match="already defined there by hand"):
        binder.bind_tensor(T, [_decl(_one, method=["mine"])])
    assert T().mine() == 0


def test_binder_binds_methods_operators_properties_and_functions():
    class T:
        pass

    binder = _bind.Binder()
    binder.bind_tensor(T, [_decl(_one, method=["one"], dunder=["__len__"]), _decl(_two, prop=["two"])])
    t = T()
    assert t.one() == 1 and len(t) == 1 and t.two == 2
    ns: dict = {}
    assert binder.bind_namespace(ns, "ns", "function", [_decl(_one, function=["a", "b"])]) == ["a", "b"]
    assert ns["a"] is _one and ns["b"] is _one


def test_every_declared_name_is_bound_to_its_function():
    for d in _bind.declared():
        for name in d.method + d.dunder:
            assert inspect.getattr_static(rustgrad.Tensor, name) is d.fn, f"Tensor.{name}"
        for name in d.prop:
            assert inspect.getattr_static(rustgrad.Tensor, name).fget is d.fn, f"Tensor.{name}"
        for name in d.function:
            assert getattr(rustgrad, name) is d.fn, f"rustgrad.{name}"
        for name in d.functional:
            assert getattr(F, name) is d.fn, f"nn.functional.{name}"


def test_every_public_name_is_declared_at_most_once():
    seen: dict = {}
    for d in _bind.declared():
        for kind in ("method", "dunder", "prop", "function", "functional"):
            for name in getattr(d, kind):
                key = ("Tensor" if kind in ("method", "dunder", "prop") else kind, name)
                assert key not in seen, f"{key} declared by {seen.get(key)} and {d.fn.__qualname__}"
                seen[key] = d.fn.__qualname__


def test_hot_path_operators_are_the_op_functions_without_a_wrapper():
    # the recorded-op hot path must not gain a Python frame: the operator is the op itself
    assert rustgrad.Tensor.__mul__ is arith.mul
    assert rustgrad.Tensor.__add__ is arith.add
    assert rustgrad.Tensor.mul is arith.mul


def test_saved_attributes_come_from_the_declarations():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = rustgrad.tensor([3.0, 4.0], requires_grad=True)
    node = (x * y).grad_fn
    assert node._saved_self is x or bool((node._saved_self == x).all())
    assert bool((node._saved_other == y).all())
    assert bool((x.exp().grad_fn._saved_result == x.exp()).all())


def test_package_namespace_does_not_shadow_what_torch_names_differently():
    # torch's dtype aliases are in the namespace, as torch's
    assert rustgrad.float is rustgrad.float32 and rustgrad.int is rustgrad.int32
    assert rustgrad.bool.is_floating_point is False


def test_every_op_declares_a_one_line_docstring():
    missing = [f"{d.family}.{d.fn.__name__}" for d in _bind.declared() if not d.doc.strip()]
    assert not missing, f"ops without a docstring: {missing}"


_PACKAGE = Path(rustgrad.__file__).parent


def _sources(*folders: str) -> list:
    return [p for f in folders for p in sorted((_PACKAGE / f).rglob("*.py"))]


def test_no_array_library_imported_past_the_dispatch_layer():
    # ops take their array namespace from their inputs: only _backends knows NumPy or CuPy
    offenders = [
        str(p.relative_to(_PACKAGE)) for p in _sources("_ops", "nn", "optim", "autograd")
        if re.search(r"^\s*(import numpy|from numpy|import cupy|from cupy)", p.read_text(), re.M)
    ]
    assert not offenders, offenders


def test_array_interface_and_the_test_device_stay_out_of_the_package():
    for p in _PACKAGE.rglob("*.py"):
        text = p.read_text()
        if p.parent.name != "_backends":
            assert "__array_interface__" not in text, p
        assert '"fake"' not in text and "strict_cupy" not in text, p


def test_nodes_are_recorded_only_by_the_op_layer():
    allowed = {"_ops", "autograd"}
    for p in _PACKAGE.rglob("*.py"):
        rel = p.relative_to(_PACKAGE)
        if rel.parts[0] in allowed:
            continue
        # a call of `record(` or `_core.record(`; a method of another object (a CUDA event's)
        # or a function of its own named so (torch's elastic `record`) is fine
        pattern = r"(?<![.\w])(?<!def )record(_multi)?\(|\b_core\.record(_multi)?\("
        assert not re.search(pattern, p.read_text()), rel


# ---- every node an op records is declared ---------------------------------------------------
# A node's name is written twice: where it is recorded (`record(...)`, `_core.record(...)`,
# `_core.record_multi(...)`) and in the `grad_fn=` of its op's `@op(...)`, from which the README
# op table, the stubs and the docs list it. These tests fail when a name is recorded that no
# declaration lists. Neither a regex over the source nor a run alone is enough:
#  - a regex misses names that code computes (an f-string, `+ "0"`, `.replace(...)`, a lookup
#    in a table, a name carried in a node's ctx to its double backward);
#  - a run sees only the paths it takes, and the op families have thousands of them.
# So the check is in two parts that meet:
#  - static, over every path: each string literal in _ops/, autograd/ and nn/ that reads as a
#    node name, and each name a record call site spells out (a literal, a conditional of
#    literals, a module constant, or a local or parameter fed only by those, followed through
#    the calls of helper functions), must be declared;
#  - at run time, for the rest: a call site whose name is computed must be reached by the
#    sample programs below (`_run_samples`), and every name the samples record must be
#    declared. A new computed name fails the first test until a sample reaches it.
# A record call with no inputs (`record(out, (), ...)`) makes no node and is not checked.
_NODE_NAME = re.compile(r"^(?:[A-Z][A-Za-z0-9]*Backward[0-9]+(?:_[a-z]+)?|torch::autograd::[A-Za-z]+)$")

# Nodes recorded by code that is not an op, so no `@op(grad_fn=...)` can list them.
NOT_OPS = {
    "AsStridedBackward0": "a view's history remade over its base's after an in-place op on either "
                          "(_ops/copyslices.py, torch's view regeneration), whatever op wrote",
    "AsStridedScatterBackward0": "the formula of AsStridedBackward0 under create_graph (_ops/copyslices.py)",
    "CopySlices": "the formula of torch::autograd::CopySlices under create_graph (_ops/copyslices.py); "
                  "CopySlices itself is declared by __setitem__",
    "BackwardHookFunctionBackward": "nn.Module full backward hooks (_ops/backward_hook.py), not an op",
    "torch::autograd::Error": "autograd.function.once_differentiable's delayed error, not an op",
    "XlogyBackward0": "nn.functional.kl_div (nn/functional.py), which is not a declared op",
    "SafeSoftmaxBackward0": "nn.functional.scaled_dot_product_attention with a mask (nn/functional.py), "
                            "which is not a declared op",
}
# Call sites whose computed names are not an op's: (file under rustgrad/, function) -> reason.
NOT_OP_SITES = {
    ("autograd/function.py", "_apply"): 'a custom autograd.Function\'s node, "<Class>Backward" as torch\'s',
}
_RECORDING = ("_ops", "autograd")  # where nodes are recorded (test_nodes_are_recorded_only_by_the_op_layer)
_SCANNED = _RECORDING + ("nn",)  # nn hands names to the _ops helpers
Site = Tuple[str, str]  # (file under rustgrad/, function)


def _declared_nodes() -> Set[str]:
    return {n for d in _bind.declared() for n in d.grad_fn} | set(NODES)


def _where(p: Path) -> str:
    return p.relative_to(_PACKAGE).as_posix()


def _is_record(call: ast.Call) -> bool:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id in ("record", "record_multi")
    return (isinstance(f, ast.Attribute) and f.attr in ("record", "record_multi")
            and isinstance(f.value, ast.Name) and f.value.id == "_core")


def _argument(call: ast.Call, pos: Optional[int], kw: str) -> Optional[ast.expr]:
    if pos is not None and len(call.args) > pos:
        return call.args[pos]
    return next((k.value for k in call.keywords if k.arg == kw), None)


def _makes_no_node(call: ast.Call) -> bool:
    inputs = _argument(call, 1, "inputs")
    return isinstance(inputs, ast.Tuple) and not inputs.elts


def _binds(fn: ast.AST, name: str) -> List[ast.AST]:
    """The statements of fn (not of functions inside it) that bind `name`."""
    out: List[ast.AST] = []
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr,
                          ast.comprehension, ast.ExceptHandler)):
            targets = [t for t in ast.walk(n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)]
            if any(t.id == name for t in targets) or getattr(n, "name", None) == name:
                out.append(n)
        todo.extend(ast.iter_child_nodes(n))
    return out


class _Source:
    """The static half: node names the source spells out, and call sites that compute one."""

    def __init__(self) -> None:
        self.literals: Dict[str, Set[str]] = {}  # name -> where, for every literal that reads as one
        self.spelled: Dict[str, Set[str]] = {}  # name -> where, for names a record site resolves to
        self.computed: Dict[Site, Set[str]] = {}  # site -> the record call sites it computes names for
        self._calls: Dict[str, List[Tuple[Path, ast.Call, Optional[ast.AST]]]] = {}
        self._consts: Dict[Tuple[Path, str], str] = {}
        sites = []
        for p in _sources(*_SCANNED):
            tree = ast.parse(p.read_text(), str(p))
            parent = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
            fragments = set()  # pieces of computed names (f-string parts, `+` and .replace operands)
            for n in tree.body:
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
                    for t in n.targets:
                        if isinstance(t, ast.Name):
                            self._consts[(p, t.id)] = n.value.value
            for n in ast.walk(tree):
                if isinstance(n, ast.JoinedStr):
                    fragments.update(id(v) for v in n.values)
                elif isinstance(n, ast.BinOp):
                    fragments.update((id(n.left), id(n.right)))
                elif isinstance(n, ast.Call):
                    if isinstance(n.func, ast.Attribute) and n.func.attr == "replace":
                        fragments.update(id(a) for a in n.args)
                    fn = parent.get(n)
                    while fn is not None and not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        fn = parent.get(fn)
                    callee = n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", None)
                    if callee:
                        self._calls.setdefault(callee, []).append((p, n, fn))
                    if _is_record(n) and p.relative_to(_PACKAGE).parts[0] in _RECORDING:
                        if _makes_no_node(n):
                            fragments.add(id(_argument(n, 2, "name")))
                        else:
                            sites.append((p, n, fn))
            for n in ast.walk(tree):
                if (isinstance(n, ast.Constant) and isinstance(n.value, str) and _NODE_NAME.match(n.value)
                        and id(n) not in fragments):
                    self.literals.setdefault(n.value, set()).add(f"{_where(p)}:{n.lineno}")
        for p, call, fn in sites:
            at = f"{_where(p)}:{call.lineno}"
            name = _argument(call, 2, "name")
            assert name is not None, f"{at}: a record call without a node name"
            self._resolve(p, name, fn, set(), at)

    def _site(self, p: Path, fn: Optional[ast.AST], at: str) -> None:
        self.computed.setdefault((_where(p), getattr(fn, "name", "<module>")), set()).add(at)

    def _resolve(self, p: Path, e: ast.expr, fn: Optional[ast.AST], seen: Set[Any], at: str) -> bool:
        """Adds the names e can take to `spelled`; False (and the site to `computed`) where it
        cannot tell them all."""
        if isinstance(e, ast.Constant) and isinstance(e.value, str):
            self.spelled.setdefault(e.value, set()).add(at)
            return True
        if isinstance(e, ast.IfExp):
            return all([self._resolve(p, e.body, fn, seen, at), self._resolve(p, e.orelse, fn, seen, at)])
        if isinstance(e, ast.Name):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if (p, fn, e.id) in seen:
                    return True
                seen.add((p, fn, e.id))
                a = fn.args
                positional = [x.arg for x in a.posonlyargs + a.args]
                if e.id in positional or e.id in [x.arg for x in a.kwonlyargs]:
                    return self._parameter(p, e.id, fn, positional, seen, at)
                binds = _binds(fn, e.id)
                if binds and all(isinstance(b, ast.Assign) and len(b.targets) == 1
                                 and isinstance(b.targets[0], ast.Name) for b in binds):
                    return all([self._resolve(p, b.value, fn, seen, at) for b in binds])  # type: ignore[attr-defined]
                if binds:  # unpacked, augmented, a loop variable: computed
                    self._site(p, fn, at)
                    return False
            if (p, e.id) in self._consts:  # a module constant
                self.spelled.setdefault(self._consts[(p, e.id)], set()).add(at)
                return True
        self._site(p, fn, at)
        return False

    def _parameter(self, p: Path, param: str, fn: Any, positional: List[str], seen: Set[Any], at: str) -> bool:
        """A name parameter: its default and what every caller passes (callers found by name)."""
        a = fn.args
        ok = True
        defaults = dict(zip(positional[len(positional) - len(a.defaults):], a.defaults))
        defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        if param in defaults:
            ok = self._resolve(p, defaults[param], None, seen, at) and ok
        pos = positional.index(param) if param in positional else None
        callers = self._calls.get(fn.name, [])
        if not callers and param not in defaults:
            self._site(p, fn, at)  # called only indirectly: what it is passed is computed
            return False
        for cp, call, cfn in callers:
            if any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
                self._site(cp, cfn, at)
                ok = False
                continue
            shift = pos
            if pos is not None and positional[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
                shift = pos - 1  # a method called on its object
            arg = _argument(call, shift, param)
            if arg is not None:
                ok = self._resolve(cp, arg, cfn, seen, at) and ok
        return ok


@functools.cache
def _source() -> _Source:
    return _Source()


def _undeclared(names: Dict[str, Set[str]]) -> Dict[str, List[str]]:
    known = _declared_nodes() | set(NOT_OPS)
    return {n: sorted(w) for n, w in sorted(names.items()) if n not in known}


def test_every_node_name_in_the_source_is_declared():
    src = _source()
    missing = _undeclared(src.literals)
    missing.update(_undeclared(src.spelled))
    assert not missing, (
        "node names recorded that no @op(grad_fn=...) lists (add each to the grad_fn of the op "
        f"that records it, or to NOT_OPS with a reason if no op does): {missing}")


@contextlib.contextmanager
def _recording(monkeypatch: pytest.MonkeyPatch) -> Iterator[Tuple[Dict[str, Set[str]], Set[Site]]]:
    """Every node recorded meanwhile: name -> where, and every (file, function) of the package
    on the stack of a record call. Wraps `_core.record`/`record_multi` and each module's binding
    of them (`from ._util import record`)."""
    names: Dict[str, Set[str]] = {}
    reached: Set[Site] = set()
    package = str(_PACKAGE) + os.sep

    def traced(fn: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            out = fn(*args, **kwargs)
            name = args[2] if len(args) > 2 else kwargs.get("name")
            if name and any(t.requires_grad for t in (out if isinstance(out, tuple) else (out,))):
                frame: Any = sys._getframe(1)
                innermost = None
                while frame is not None:
                    path = frame.f_code.co_filename
                    if path.startswith(package):
                        site = (Path(path).relative_to(_PACKAGE).as_posix(), frame.f_code.co_name)
                        reached.add(site)
                        innermost = innermost or f"{site[0]}:{frame.f_lineno}"
                    frame = frame.f_back
                names.setdefault(name, set()).add(innermost or "?")
            return out

        return call

    from rustgrad import _core

    originals = {id(_core.record): traced(_core.record), id(_core.record_multi): traced(_core.record_multi)}
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("rustgrad.") and mod is not _core:
            for attr, value in list(vars(mod).items()):
                if id(value) in originals and value in (_core.record, _core.record_multi):
                    monkeypatch.setattr(mod, attr, originals[id(value)])
    monkeypatch.setattr(_core, "record", originals[id(_core.record)])
    monkeypatch.setattr(_core, "record_multi", originals[id(_core.record_multi)])
    yield names, reached


def _differentiate(out: Any, leaves: Sequence[Any], order: int) -> None:
    """out's gradient over leaves, that gradient's, ... `order` deep (each with create_graph).
    The cotangents require grad too and are differentiated over, so that a backward node linear
    in its incoming gradient (a view's, an upsample's) records its own double backward."""
    leaves = list(leaves)
    for _ in range(order):
        w = rustgrad.randn(tuple(out.shape), dtype=out.dtype, requires_grad=True)
        leaves.append(w)
        grads = rustgrad.autograd.grad((out * w).sum(), leaves, create_graph=True, allow_unused=True)
        grads = [g.reshape(-1) for g in grads if g is not None and g.requires_grad]
        if not grads:
            return
        out = rustgrad.cat(grads)


def _run_samples() -> None:
    """Programs that reach every call site whose node name is computed, over the cases that
    change the name, each differentiated to third order (the double-backward nodes)."""
    from rustgrad._ops import upsample

    def leaf(*shape: int) -> Any:
        return rustgrad.randn(shape, dtype=rustgrad.float64, requires_grad=True)

    a = leaf(3, 4)
    # getitem: the name of the last indexing step that did something
    for idx in (None, Ellipsis, 0, slice(1, None), slice(None), (slice(None),), (slice(None), None),
                (0, 1), (Ellipsis, 1), [0, 2]):
        _differentiate(a[idx], [a], 2)
    # setitem: CopySlices, or the node of the in-place op it stands for
    t = leaf(4)
    for idx, value in ((0, 1.0), (0, t), (a.detach() > 0, 0.0), ([0, 2], 1.0), ([0, 2], t), ((0, 1), 2.0),
                       (slice(1, 3), t), ((slice(None), 1), 3.0), (Ellipsis, 2.0), (Ellipsis, t), (None, t)):
        b = a * 1
        b[idx] = value
        _differentiate(b, [a, t], 2)
    # matmul: the node torch's _matmul_impl ends on, by operand ranks
    for sa, sb in (((3,), (3, 4)), ((2, 3), (3, 4)), ((3,), (3,)), ((2, 3), (3,)), ((5, 2, 3), (5, 3, 4)),
                   ((1, 2, 3), (5, 3, 4)), ((2, 3), (5, 3, 4)), ((1, 3), (5, 3, 4)), ((2, 3), (5, 3, 1)),
                   ((5, 2, 3), (3,)), ((3,), (5, 3, 4))):
        m1, m2 = leaf(*sa), leaf(*sb)
        _differentiate(m1 @ m2, [m1, m2], 2)
    # pad: a node per mode and number of padded dims
    for mode in ("constant", "reflect", "replicate", "circular"):
        for k in (1, 2, 3):
            x = leaf(1, 2, *[4] * k)
            _differentiate(F.pad(x, (1, 2) * k, mode=mode), [x], 2)
    # clamp_min / clamp_max: a number or a tensor bound, out of place and in place
    for bound in (0.1, leaf(3, 4)):
        for name in ("clamp_min", "clamp_max"):
            _differentiate(getattr(a, name)(bound), [a], 2)
            b = a * 1
            getattr(b, name + "_")(bound)
            _differentiate(b, [a], 2)
    # interpolate: a node per mode and number of spatial dims, and its double backward
    for mode, dims in upsample._NODES:
        antialias = mode.endswith("-aa")
        mode = mode[:-3] if antialias else mode
        x = leaf(1, 2, *[4] * dims)
        corners = {"align_corners": False} if mode in ("linear", "bilinear", "trilinear", "bicubic") else {}
        _differentiate(F.interpolate(x, size=[6] * dims, mode=mode, antialias=antialias, **corners), [x], 3)
    # the selections (relu, hardtanh, leaky_relu): the name carried to the third derivative
    for act in (F.relu, F.relu6, F.hardtanh, F.leaky_relu, lambda v: F.leaky_relu(v * 1, inplace=True),
                lambda v: (v * 1).relu_()):
        _differentiate(act(a), [a], 3)


def test_every_node_the_samples_record_is_declared_and_reach_every_computed_name(monkeypatch):
    with _recording(monkeypatch) as (names, reached):
        _run_samples()
    missing = _undeclared(names)
    assert not missing, f"node names recorded that no @op(grad_fn=...) lists: {missing}"
    unreached = {site: sorted(at) for site, at in _source().computed.items()
                 if site not in reached and site not in NOT_OP_SITES}
    assert not unreached, (
        "call sites that compute a node name the sample programs never reach: add a case to "
        f"_run_samples that does, so the names it computes are checked: {unreached}")


def test_not_op_entries_are_needed():
    src = _source()
    named = set(src.literals) | set(src.spelled)
    declared = _declared_nodes()
    for name, reason in NOT_OPS.items():
        assert name not in declared, f"{name} is declared by an op: drop it from NOT_OPS ({reason})"
        assert name in named, f"{name} is recorded nowhere now: drop it from NOT_OPS ({reason})"
    for site in NOT_OP_SITES:
        assert site in src.computed, f"{site} computes no node name now: drop it from NOT_OP_SITES"
