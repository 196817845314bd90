"""torch.autograd.forward_ad: forward-mode AD with dual tensors (`dual_level`, `make_dual`,
`unpack_dual`), as torch's API.

How it works. While a dual level is open, the public op entry points (every name
`rustgrad._bind` attached to Tensor: methods, operators and properties; to ``rustgrad``,
``rustgrad.nn.functional``, ``rustgrad.linalg``, ``rustgrad.special`` and ``rustgrad.fft``, and
the other public functions of the last four) are swapped for wrappers; exiting the level puts the
original objects back, so outside forward AD there is no cost at all. A wrapper whose op gets a
tensor with a tangent runs the op on stand-ins of those tensors that require grad, so that the op
records its nodes, and takes each output's tangent from the forward formulas their specs state
(`_ops/_node.py`: ``forward(tangents, saved, ctx)``, reading what the node saved for backward),
node by node from the stand-ins' tangents to the output (a composite such as ``cross_entropy``
records several). Where nothing of the call is in a graph the op runs once and its outputs are
handed back detached; otherwise it runs once as it is and once on the stand-ins.

A node whose spec states no forward formula has its tangent from its backward formula instead:
every op has a reverse-mode formula written in rustgrad ops, so it has a differentiable
vector-Jacobian product, and the JVP of one op is the derivative of a VJP with respect to its
cotangent. For an op ``out = f(x)`` whose input ``x`` carries the tangent ``t``::

    u = zeros_like(out).requires_grad_()
    g = grad(f(x'), x', u, create_graph=True)     # x' = x.detach().requires_grad_(): g = J^T u
    jvp = grad((g * t).sum(), u)                   # d/du <J^T u, t> = J t

(a "double-vjp", through the graph the stand-ins' run recorded). An op called inside another
op (a composite such as ``cross_entropy``, or a backward formula) runs unwrapped: a
thread-local flag marks the outer op's work. ``autograd.backward``
(and ``Tensor.backward``) runs unwrapped too, so ``.grad`` gets no tangent, as torch's;
``autograd.grad`` does not, so its gradients carry tangents (a Hessian-vector product, as
torch's). Ops whose output is a view of their first argument (``reshape``, ``transpose``,
indexing, ...) take the same view of its tangent instead (one extra view, the tangent a view of
the input's, as torch's). An in-place op (``add_``, ``x[i] = v``, ``inplace=True``) computes the
new tangent on a copy first and writes it into the tangent of the tensor it modifies (of its
base, for a view). Random ops draw the same numbers in the re-run (the generators' states are
restored around it).

What it costs. An op on a dual tensor with forward formulas runs once or twice plus its
formulas: about 40 µs on a small tensor against torch's 3.6 µs, and an MLP's loss tangent at about
2x torch's time (``benches/bench_forward_ad.py``). By the double-vjp an op runs twice and its
backward formula twice, three to four op evaluations (``FORMULAS = False`` forces it, to compare).
Ops on tensors without tangents pay a scan of their arguments; entering a level swaps ~1,000
entry points (about 0.3 ms).

Differences from torch:

- a tangent has the dtype of its op's output (torch carries a float64 tangent of a float32 primal
  through some ops in float64);
- the tangent is the derivative of what rustgrad's backward formula assumes: for an op that reads
  part of its input (cholesky, eigh: one triangle) and a non-symmetric tangent that can differ
  from torch's forward formula; bernoulli's output gets no tangent (torch's: zeros);
- a custom `autograd.Function` gets the tangent of the ops its forward runs (torch calls its
  ``jvp``, and raises without one); an op rustgrad cannot differentiate twice gets zeros;
- a view of a dual made without the public entry points (inside rustgrad, or by ``detach``
  tricks) does not see the dual's tangent;
- the primal of `unpack_dual` records ``ViewBackward0`` (torch: an identity node);
- inside a level, an op's warnings name this module's frames, not the caller's line;
- complex outputs get no tangent; ``func.vmap`` and ``func.grad`` inside a level drop the
  tangents, and ``func.jvp`` inside one does not raise torch's nested-forward-AD error;
- the result of an op on a dual Tensor subclass is a plain Tensor;
- where anything of the call is in a graph, the op runs twice (once as it is, once on stand-ins
  of its duals); an argument the first run wrote into (batch_norm's running statistics) is
  copied for the second, so it is updated once.

Example::

    >>> import rustgrad.autograd.forward_ad as fwAD
    >>> x = torch.tensor([0.0, 1.0])
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(x, torch.ones(2)).exp()
    ...     fwAD.unpack_dual(y).tangent
    tensor([1.0000, 2.7183])
"""

from __future__ import annotations

import _thread
import functools
import inspect
import sys
import warnings
import weakref
from typing import Any, Callable, Dict, Iterator, List, MutableMapping, NamedTuple, Optional, Tuple

from .. import _bind, _creation
from .._core import _gradient_edge, _peek_sequence_nr
from .._tensor import Tensor
from . import grad as _grad
from .grad_mode import enable_grad, is_grad_enabled, is_inference_mode_enabled, no_grad

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]

# the open level (torch's module attribute): -1 when none; torch supports one level at a time
_current_level = -1


class UnpackedDualTensor(NamedTuple):
    """Namedtuple returned by `unpack_dual`: the primal and tangent parts of a dual tensor."""

    primal: Tensor
    tangent: Optional[Tensor]


# ---- the tangents of the open level -------------------------------------------------------
# id(tensor) -> (weak reference to it, its tangent or None); an entry of None says "no tangent"
# (the primal of unpack_dual, a view of a dual, must not see its base's). A view without an
# entry of its own has its base's tangent viewed alike (see _tangent_of).
_tangents: Dict[int, Tuple[Any, Optional[Tensor]]] = {}
_state = _thread._local()  # .busy: an op (or this module) is already working in this thread


def _forget(key: int, ref: Any) -> None:
    entry = _tangents.get(key)
    if entry is not None and entry[0] is ref:
        del _tangents[key]


def _own(t: Tensor) -> Optional[Tuple[Any, Optional[Tensor]]]:
    entry = _tangents.get(id(t))
    if entry is not None and entry[0]() is t:
        return entry
    return None


def _tangent_of(t: Tensor) -> Optional[Tensor]:
    """t's tangent at the open level: its own, or the view of its base's tangent that t is of
    its base."""
    entry = _own(t)
    if entry is not None:
        return entry[1]
    base = t._base
    if base is None:
        return None
    entry = _own(base)
    if entry is None or entry[1] is None:
        return None
    bt = entry[1]
    # a base's own tangent is laid out as the base (see _register)
    return bt.as_strided(t.size(), t.stride(),
                         t.storage_offset() - base.storage_offset() + bt.storage_offset())


def _same_layout(t: Tensor, tangent: Tensor) -> Tensor:
    """tangent, or a copy of it laid out as t (strides and all), where they differ."""
    if t.numel() <= 1 or tangent.stride() == t.stride() or 0 in t.stride():
        return tangent
    out = _creation.empty_strided(t.size(), t.stride(), dtype=tangent.dtype, device=tangent.device)
    with no_grad() if not tangent.requires_grad else enable_grad():
        out.copy_(tangent)
    return out


def _register(t: Tensor, tangent: Optional[Tensor]) -> None:
    if tangent is not None and t._base is None:
        tangent = _same_layout(t, tangent)
    key = id(t)
    _tangents[key] = (weakref.ref(t, functools.partial(_forget, key)), tangent)


# ---- the level ---------------------------------------------------------------------------------
def enter_dual_level() -> int:
    """Enters a new forward grad level; returns it (0: torch supports one level at a time).

    Dual tensors made in it (`make_dual`) carry tangents through every op until the level is
    exited; the other functions of this module use it by default.

    Example::

        >>> import rustgrad.autograd.forward_ad as fwAD
        >>> fwAD.enter_dual_level()
        0
        >>> fwAD.exit_dual_level()
    """
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _tangents.clear()
    _install()
    _current_level = 0
    return _current_level


def exit_dual_level(*, level: Optional[int] = None) -> None:
    """Exits the forward grad level, dropping every tangent made in it.

    Only the last level entered can be exited; the ops are plain again afterwards.

    Args:
        level (int, optional): the level to exit. Default: the current one.
    """
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. This "
            "is not supported."
        )
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    _current_level = -1
    _uninstall()
    _tangents.clear()


class dual_level:
    """Context manager (and decorator) for forward AD: enters a dual level, exits it at the end.

    All forward AD computation must happen inside it; levels do not nest.

    Example::

        >>> import rustgrad.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     x = fwAD.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0]))
        ...     fwAD.unpack_dual(x * x).tangent
        tensor([2., 0.])
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *args: object) -> None:
        exit_dual_level()

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def in_level(*args: Any, **kwargs: Any) -> Any:
            with self.__class__():
                return fn(*args, **kwargs)

        return in_level


# ---- dual tensors ------------------------------------------------------------------------------
def _check_level(level: Optional[int]) -> int:
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    return level


def make_dual(tensor: Tensor, tangent: Tensor, *, level: Optional[int] = None) -> Tensor:
    """A dual tensor: a view of `tensor` carrying `tangent` as its forward gradient.

    The tangent is kept as it is (copied only when laid out otherwise than `tensor`); ops on
    the result carry it forward (Jacobian-vector products), `unpack_dual` gives it back. The
    result is a view of `tensor` for backward too.

    Args:
        tensor (Tensor): the primal, a floating point tensor.
        tangent (Tensor): its tangent, a floating point tensor of the same size.
        level (int, optional): the dual level. Default: the current one.

    Example::

        >>> import rustgrad.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     x = fwAD.make_dual(torch.tensor([0.0, 3.0]), torch.tensor([1.0, 1.0]))
        ...     fwAD.unpack_dual(x.sin()).tangent
        tensor([ 1.0000, -0.9900])
    """
    level = _check_level(level)
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(
            f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if type(level) is not int:
        raise TypeError(f"_make_dual(): argument 'level' must be int, not {type(level).__name__}")
    if _current_level < 0:
        raise RuntimeError(
            "Trying to access a forward AD level with an invalid index. This index was either not "
            "created or is already deleted."
        )
    if level != _current_level:
        raise RuntimeError("Invalid level given to _make_dual")
    if _tangent_of(tensor) is not None:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the "
            f"same level {level} is not supported."
        )
    if tangent.shape != tensor.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original "
            f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
            f"forward gradient is of size {list(tangent.shape)}."
        )
    with _busy():
        dual = tensor.view_as(tensor)
        if is_inference_mode_enabled():
            return dual  # torch's inference mode keeps no tangent
        tan = tangent
        if tangent.numel() > 1 and tangent.stride() != tensor.stride() and 0 not in tensor.stride():
            tan = _creation.empty_strided(tensor.size(), tensor.stride(), dtype=tangent.dtype,
                                          device=tangent.device)
            with no_grad() if not tangent.requires_grad else enable_grad():
                tan.copy_(tangent)
    key = id(dual)
    _tangents[key] = (weakref.ref(dual, functools.partial(_forget, key)), tan)
    return dual


def unpack_dual(tensor: Tensor, *, level: Optional[int] = None) -> UnpackedDualTensor:
    """The primal (a view of `tensor` without tangent) and the tangent of a dual tensor.

    The tangent is None for a tensor without one at this level; outside a dual level the primal
    is `tensor` itself.

    Args:
        tensor (Tensor): the dual tensor.
        level (int, optional): the dual level. Default: the current one.

    Example::

        >>> import rustgrad.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     x = fwAD.make_dual(torch.tensor([2.0]), torch.tensor([1.0]))
        ...     primal, tangent = fwAD.unpack_dual(x ** 3)
        ...     primal, tangent
        (tensor([8.]), tensor([12.]))
    """
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if not isinstance(tensor, Tensor):
        raise TypeError("_unpack_dual(): argument 'dual' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    tangent = _tangent_of(tensor) if _current_level >= 0 else None
    if level != _current_level:
        if tangent is not None:
            raise RuntimeError("Invalid level given to _fw_primal")
    with _busy():
        primal = tensor.view_as(tensor)
    if _current_level >= 0:
        _register(primal, None)
    return UnpackedDualTensor(primal, tangent if level == _current_level else None)


# the forward formulas the op specs state are used (False: the double-vjp alone, to compare)
FORMULAS = True


# ---- the wrapped entry points ----------------------------------------------------------------
class _busy:
    """Marks this thread's work as an op's own: the wrapped entry points called meanwhile run
    as they are."""

    def __enter__(self) -> None:
        self.prev = getattr(_state, "busy", False)
        _state.busy = True

    def __exit__(self, *args: object) -> None:
        _state.busy = self.prev


def _places(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Iterator[Tuple[Any, Tensor]]:
    """(where, tensor) for each tensor argument (in a list or tuple argument too); where is
    ("a", i), ("a", i, j), ("k", name) or ("k", name, j)."""
    for box, items in (("a", enumerate(args)), ("k", kwargs.items())):
        for i, a in items:
            if isinstance(a, Tensor):
                yield (box, i), a
            elif type(a) in (list, tuple):
                for j, b in enumerate(a):
                    if isinstance(b, Tensor):
                        yield (box, i, j), b


def _duals(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> List[Tuple[Any, Tensor, Tensor]]:
    """(where, tensor, tangent) for each tensor argument with a tangent (see _places)."""
    found: List[Tuple[Any, Tensor, Tensor]] = []
    for where, a in _places(args, kwargs):
        t = _tangent_of(a)
        if t is not None:
            found.append((where, a, t))
    return found


def _substitute(args: Tuple[Any, ...], kwargs: Dict[str, Any],
                new: Dict[Tuple[Any, ...], Any]) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
    """args and kwargs with the arguments at the places in `new` replaced."""
    a = list(args)
    k = dict(kwargs)
    for where, value in new.items():
        box: Any = a if where[0] == "a" else k
        if len(where) == 2:
            box[where[1]] = value
        else:
            seq = list(box[where[1]])
            seq[where[2]] = value
            box[where[1]] = type(box[where[1]])(seq)
    return tuple(a), k


def _generators(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> List[Any]:
    gens = [_creation.default_generator]
    gens += [a for a in args if isinstance(a, _creation.Generator)]
    gens += [a for a in kwargs.values() if isinstance(a, _creation.Generator)]
    return gens


def _rng_state(gens: List[Any]) -> List[Tuple[Any, Any, Any]]:
    out = []
    for g in gens:
        rng = g._rng_made
        out.append((g, rng, None if rng is None else rng.bit_generator.state))
    return out


def _rng_restore(saved: List[Tuple[Any, Any, Any]]) -> None:
    for g, rng, st in saved:
        g._rng_made = rng
        if rng is not None:
            rng.bit_generator.state = st


def _float_outputs(out: Any, inputs: set) -> List[Tuple[Optional[int], Tensor]]:
    """(index or None, tensor) for the floating outputs of an op that are new tensors."""
    if isinstance(out, Tensor):
        return [(None, out)] if out.is_floating_point() and id(out) not in inputs else []
    if isinstance(out, (tuple, list)):
        return [(i, o) for i, o in enumerate(out)
                if isinstance(o, Tensor) and o.is_floating_point() and id(o) not in inputs]
    return []


def _pick(out: Any, index: Optional[int]) -> Any:
    return out if index is None else out[index]


class _Rerun(NamedTuple):
    """The op run again on stand-ins of its dual arguments that require grad (so it records
    its nodes): what both ways of taking its tangents start from."""

    reps: Dict[int, Tensor]  # id(dual argument) -> its stand-in
    tangents: Dict[int, Tensor]  # id(dual argument) -> its tangent
    known: Dict[Tuple[Any, int], Optional[Tensor]]  # the stand-ins' gradient edges -> tangents
    outs: List[Any]  # the outputs asked for (self after the op, when inplace)
    start: int  # the sequence number of the first node the rerun recorded
    need_graph: bool  # the tangents must be differentiable (the primals' or tangents' graph)


def _rerun(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any],
           duals: List[Tuple[Any, Tensor, Tensor]], indices: List[Optional[int]],
           inplace: bool, written: frozenset = frozenset()) -> _Rerun:
    """written: ids of the arguments the op's own run wrote into (batch_norm's running
    statistics); the rerun writes into copies of them, so that they are updated once."""
    grad_on = is_grad_enabled()
    reps: Dict[int, Tensor] = {}
    tangents: Dict[int, Tensor] = {}
    known: Dict[Tuple[Any, int], Optional[Tensor]] = {}
    new: Dict[Tuple[Any, ...], Any] = {}
    need_graph = False
    with enable_grad():
        for where, a, t in duals:
            if id(a) not in reps:
                if grad_on and a.requires_grad:
                    # an alias: the tangent's graph reaches a, hooks on a stay quiet
                    rep = a.view_as(a)
                    need_graph = True
                else:
                    rep = a.detach().requires_grad_()
                reps[id(a)] = rep
                tangents[id(a)] = t
                known[_gradient_edge(rep)] = t
                need_graph = need_graph or (grad_on and t.requires_grad)
            new[where] = reps[id(a)]
        if written:
            for where, a in _places(args, kwargs):
                if id(a) in written and where not in new:
                    new[where] = a.detach().clone()
        if inplace:
            self_t = new.get(("a", 0), args[0].detach())
            clone = self_t.clone()
            if clone.requires_grad:
                known[_gradient_edge(clone)] = tangents.get(id(args[0]))
            new[("a", 0)] = clone
        start = _peek_sequence_nr()
        a2, k2 = _substitute(args, kwargs, new)
        out2 = fn(*a2, **k2)
    outs = [a2[0]] if inplace else [_pick(out2, i) for i in indices]
    return _Rerun(reps, tangents, known, outs, start, need_graph)


class _NoFormula(Exception):
    """A node the rerun recorded states no forward formula: the double-vjp runs instead."""


_LEAF = 2**64 - 1  # AccumulateGrad's sequence number


def _node_tangents(node: Any, run: _Rerun, memo: Dict[Any, Any]) -> Any:
    """The tangent(s) of node's output(s), by its spec's forward formula from its inputs'
    tangents (each from the stand-ins' tangents, or from a node of the same rerun in turn)."""
    if node in memo:
        return memo[node]
    args = node._forward_args()
    if args is None:
        raise _NoFormula(node.name())
    formula, saved, ctx = args
    tangents: List[Optional[Tensor]] = []
    for edge in node.next_functions:
        inner = edge[0]
        if inner is None:
            tangents.append(None)
        elif edge in run.known:
            tangents.append(run.known[edge])
        elif inner._sequence_nr < run.start or inner._sequence_nr == _LEAF:
            tangents.append(None)  # history from before the op, or a leaf: no tangent of its
        else:
            sub = _node_tangents(inner, run, memo)
            tangents.append(sub[edge[1]] if type(sub) is tuple else sub)
    found = None if all(t is None for t in tangents) else formula(tuple(tangents), saved, ctx)
    memo[node] = found
    return found


def _conform(t: Tensor, o: Tensor, given: set) -> Tensor:
    """A formula's tangent at its output's shape, dtype and device (a broadcast operand's
    tangent, a promoted, cast or moved output), and its own memory where it is (a view of) a
    tangent given to the op (clone's formula passes its input's on): the output is not a view,
    and an in-place op on it must leave the input's tangent alone."""
    if t.dtype != o.dtype or t.device != o.device:
        t = t.to(o.device, o.dtype)
    if t.shape != o.shape:
        t = t.expand(o.shape)
    if t._storage_id() in given:
        t = t.clone()
    return t


def _spec_jvps(run: _Rerun, graph: bool) -> Optional[List[Optional[Tensor]]]:
    """The tangents of the rerun's outputs by the forward formulas of the nodes it recorded,
    or None where one of them states none; graph: computed differentiably (see _tangents_of)."""
    memo: Dict[Any, Any] = {}
    result: List[Optional[Tensor]] = []
    given = {t._storage_id() for t in run.known.values() if t is not None}
    try:
        with enable_grad() if graph else no_grad():
            for o in run.outs:
                node = o.grad_fn if isinstance(o, Tensor) else None
                if node is None:
                    result.append(None)
                    continue
                found = _node_tangents(node, run, memo)
                if type(found) is tuple:
                    found = found[o.output_nr]
                result.append(_creation.zeros_like(o) if found is None else _conform(found, o, given))
    except _NoFormula:
        return None
    return result


def _any_requires_grad(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> bool:
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            if a.requires_grad:
                return True
        elif type(a) in (list, tuple) and any(isinstance(b, Tensor) and b.requires_grad
                                              for b in a):
            return True
    return False


def _jvps(run: _Rerun, graph: bool) -> List[Optional[Tensor]]:
    """The tangents of the rerun's outputs by the double-vjp of the module doc."""
    reps, tangents = run.reps, run.tangents
    with enable_grad():
        live = [o for o in run.outs if isinstance(o, Tensor) and o.requires_grad]
        if not live:
            return [None] * len(run.outs)
        us = [_creation.zeros_like(o).requires_grad_() for o in live]
        ins = [reps[k] for k in reps]
        gs = _grad(live, ins, us, create_graph=True, allow_unused=True)
        terms = [(g * tangents[k]).sum() for k, g in zip(reps, gs)
                 if g is not None and g.requires_grad]
        if terms:
            s = terms[0]
            for term in terms[1:]:
                s = s + term
            jv = _grad(s, us, create_graph=graph, allow_unused=True)
        else:
            jv = (None,) * len(us)
    found = iter(jv)
    result: List[Optional[Tensor]] = []
    for o in run.outs:
        if isinstance(o, Tensor) and o.requires_grad:
            j = next(found)
            result.append(_creation.zeros_like(o) if j is None else j)
        else:
            result.append(None)
    return result


def _tangents_of(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any],
                 duals: List[Tuple[Any, Tensor, Tensor]], indices: List[Optional[int]],
                 inplace: bool, written: frozenset = frozenset()) -> List[Optional[Tensor]]:
    """The tangents of fn's outputs at `indices` (of self, after it, when inplace): by the
    forward formulas of the specs where they state them, else by the double-vjp."""
    grad_on = is_grad_enabled()
    run = _rerun(fn, args, kwargs, duals, indices, inplace, written)
    # the tangents are differentiable where the tangents, the primals or another argument (a
    # weight) are in a graph, and kept so where they reach it; otherwise plain, as torch's
    graph = run.need_graph or (grad_on and _any_requires_grad(args, kwargs))
    found = _spec_jvps(run, graph) if FORMULAS else None
    if found is None:
        found = _jvps(run, graph)
    if graph:
        rep_ids = {id(r) for r in run.reps.values()}
        found = [t if t is None or not t.requires_grad or _reaches_outside(t, run.start, rep_ids)
                 else t.detach() for t in found]
    return found


def _reaches_outside(t: Tensor, start: int, stand_ins: set) -> bool:
    """Whether t's graph reaches history from before the op (a primal's, a weight's, a
    tangent's) or a leaf other than the stand-ins: else it hangs off the stand-ins alone, and
    the tangent is not differentiable in anything the user has."""
    seen = set()
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        seq = node._sequence_nr
        if seq == _LEAF:
            if id(node.variable) not in stand_ins:
                return True
            continue
        if seq < start:
            return True
        stack.extend(n for n, _ in node.next_functions)
    return False


def _view_replay(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any],
                 duals: List[Tuple[Any, Tensor, Tensor]], outs: List[Tuple[Optional[int], Tensor]]
                 ) -> Optional[List[Optional[Tensor]]]:
    """The tangents of a view op's outputs as the same views of its input's tangent, or None
    where the op is not a view op of its first argument alone."""
    if len(duals) != 1 or duals[0][0] != ("a", 0):
        return None
    src = args[0]
    sid = src._storage_id()
    if not all(o._is_view() and o._storage_id() == sid for _, o in outs):
        return None
    try:
        out2 = fn(duals[0][2], *args[1:], **kwargs)
        tans = [_pick(out2, i) for i, _ in outs]
    except Exception:  # noqa: BLE001  (the tangent takes the general path)
        return None
    if not all(isinstance(t, Tensor) and t.shape == o.shape for t, (_, o) in zip(tans, outs)):
        return None
    return tans


def _set_inplace(t: Tensor, new: Optional[Tensor]) -> None:
    """Writes `new`, the tangent of t after an in-place op, into t's tangent (its base's, for
    a view), or makes it t's."""
    entry = _own(t)
    cur = entry[1] if entry is not None else _tangent_of(t)
    if new is None:
        if cur is None:
            return
        new = _creation.zeros_like(t)
    if cur is None and entry is None and t._base is not None and t._base.is_floating_point():
        base = t._base
        bt = _creation.empty_strided(base.size(), base.stride(), dtype=base.dtype,
                                     device=base.device)
        with no_grad():
            bt.zero_()
        _register(base, bt)
        cur = _tangent_of(t)
    if cur is not None:
        try:
            with enable_grad() if new.requires_grad else no_grad():
                cur.copy_(new)
            return
        except RuntimeError:
            if entry is None:
                raise
    _register(t, new)


_AGAIN = object()  # _once's answer for an op whose output is a view: the general path runs


def _once(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any],
          duals: List[Tuple[Any, Tensor, Tensor]]) -> Any:
    """fn run once, on stand-ins of its dual arguments (detached, requiring grad) so that it
    records its nodes, whose forward formulas give the outputs' tangents; the outputs are
    handed back detached. Only where nothing of the call is in a graph (a graph the user sees
    would otherwise change), and not for an op whose output is a view (_AGAIN)."""
    known: Dict[Tuple[Any, int], Optional[Tensor]] = {}
    reps: Dict[int, Tensor] = {}
    tangents: Dict[int, Tensor] = {}
    back: Dict[int, Tensor] = {}  # id(stand-in) -> its argument
    new: Dict[Tuple[Any, ...], Any] = {}
    with enable_grad():
        for where, a, t in duals:
            rep = reps.get(id(a))
            if rep is None:
                rep = reps[id(a)] = a.detach().requires_grad_()
                tangents[id(a)] = t
                back[id(rep)] = a
                known[_gradient_edge(rep)] = t
            new[where] = rep
        start = _peek_sequence_nr()
        a2, k2 = _substitute(args, kwargs, new)
        out2 = fn(*a2, **k2)
    many = isinstance(out2, (tuple, list))
    items = list(out2) if many else [out2]
    results: List[Any] = []
    asked: List[Tuple[int, Tensor]] = []
    for k, o in enumerate(items):
        if not isinstance(o, Tensor):
            results.append(o)
        elif id(o) in back:
            results.append(back[id(o)])  # the op gave its argument back (x.float() of a float)
        elif o._is_view() and id(o._base) in back:
            return _AGAIN
        elif o.grad_fn is None:
            results.append(o)  # made, not computed from the stand-ins (new_zeros(requires_grad))
        else:
            results.append(o.detach())
            if o.is_floating_point():
                asked.append((k, o))
    if asked:
        run = _Rerun(reps, tangents, known, [o for _, o in asked], start, False)
        tans = _spec_jvps(run, False) if FORMULAS else None
        if tans is None:
            tans = _jvps(run, False)
        for (k, _), t in zip(asked, tans):
            if t is not None:
                _register(results[k], t)
    if not many:
        return results[0]
    if type(out2) is list:
        return results
    return tuple.__new__(type(out2), results)


def _run(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any],
         duals: List[Tuple[Any, Tensor, Tensor]], inplace: bool, hint: List[bool]) -> Any:
    gens = _generators(args, kwargs)
    if not inplace and FORMULAS and not hint[0] and not (
            is_grad_enabled() and (_any_requires_grad(args, kwargs)
                                   or any(t.requires_grad for _, _, t in duals))):
        # (a view of its argument is all _AGAIN answers: such ops draw no random numbers and
        # write nothing, so running one again below changes nothing)
        out = _once(fn, args, kwargs, duals)
        if out is not _AGAIN:
            return out
        hint[0] = True  # a view op: the general path from now on
    if inplace:
        # the new tangent first, from a copy: the op then runs on the values it reads now
        target = args[0]
        if not isinstance(target, Tensor) or not target.is_floating_point():
            return fn(*args, **kwargs)
        before = _rng_state(gens)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the op's own run warns
                (tan,) = _tangents_of(fn, args, kwargs, duals, [None], True)
        finally:
            _rng_restore(before)
        out = fn(*args, **kwargs)
        _set_inplace(target, tan)
        return out
    before = _rng_state(gens)
    dual_ids = {id(a) for _, a, _ in duals}
    versions = [(a, a._version) for _, a in _places(args, kwargs) if id(a) not in dual_ids]
    out = fn(*args, **kwargs)
    written = frozenset(id(a) for a, v in versions if a._version != v)
    inputs = {id(a) for _, a, _ in duals}
    inputs.update(id(a) for a in args if isinstance(a, Tensor))
    outs = _float_outputs(out, inputs)
    if not outs:
        return out
    after = _rng_state(gens)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # warned once already
            tans: Optional[List[Optional[Tensor]]] = _view_replay(fn, args, kwargs, duals, outs)
            if tans is None:
                _rng_restore(before)
                tans = _tangents_of(fn, args, kwargs, duals, [i for i, _ in outs], False, written)
    finally:
        _rng_restore(after)
    for (_, o), t in zip(outs, tans):
        if t is not None:
            _register(o, t)
    return out


_INPLACE_DUNDERS = frozenset(
    f"__i{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
                            "and", "or", "xor", "lshift", "rshift"))


def _inplace_param(fn: Callable[..., Any]) -> Optional[int]:
    """The position of fn's `inplace` parameter (-1: keyword only), or None without one."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    for i, p in enumerate(params):
        if p.name == "inplace":
            return i if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else -1
    return None


def _make_wrapper(fn: Callable[..., Any], inplace: bool, inplace_at: Optional[int]) -> Any:
    view_op = [False]  # fn gave a view: _run's one-run path is not tried again

    def entry(*args: Any, **kwargs: Any) -> Any:
        if getattr(_state, "busy", False) or not _tangents or is_inference_mode_enabled():
            return fn(*args, **kwargs)
        duals = _duals(args, kwargs)
        if not duals:
            return fn(*args, **kwargs)
        in_place = inplace
        if inplace_at is not None and not in_place:
            flag = args[inplace_at] if 0 <= inplace_at < len(args) else kwargs.get("inplace", False)
            in_place = bool(flag)
        _state.busy = True
        try:
            return _run(fn, args, kwargs, duals, in_place, view_op)
        finally:
            _state.busy = False

    entry = functools.update_wrapper(entry, fn)
    entry._forward_ad_of = fn  # type: ignore[attr-defined]
    return entry


# wrapper per original (kept across levels: building them costs the first level ~ms)
_WRAPPERS: Dict[Tuple[int, bool, bool], Tuple[Any, Any]] = {}
# every entry point swapped in the open level
_SWAPPED = _bind.EntryPointSwap(Tensor)


def _wrapper(fn: Callable[..., Any], inplace: bool, functional: bool) -> Any:
    key = (id(fn), inplace, functional)
    hit = _WRAPPERS.get(key)
    if hit is not None and hit[0] is fn:
        return hit[1]
    at = _inplace_param(fn) if functional else None
    w = _make_wrapper(fn, inplace, at)
    _WRAPPERS[key] = (fn, w)
    return w


def _tensor_inplace(name: str) -> bool:
    if name.startswith("__"):
        return name in _INPLACE_DUNDERS or name == "__setitem__"
    return name.endswith("_")


# The swaps of the last level, (owner, name, original, replacement), for the next to replay
# while every entry point is still the object it replaced and no namespace was bound since:
# finding them walks ~1,000 names, most of what entering a level costs.
_PLAN: List[Tuple[Any, str, Any, Any]] = []
_PLAN_NAMESPACES = [-1]  # how many namespaces were bound when _PLAN was made


def _swap(owner: Any, name: str, replacement: Any) -> None:
    orig = owner.__dict__[name] if owner is Tensor else owner[name]
    _SWAPPED.set(owner, name, replacement)
    _PLAN.append((owner, name, orig, replacement))


def _swap_namespace(target: str, ns: MutableMapping[str, Any], names: List[str]) -> None:
    for owner, name, orig in _bind.namespace_entry_points(target, ns, names, "_forward_ad_of"):
        _swap(owner, name, _wrapper(orig, name.endswith("_") and not name.startswith("__"), True))


def _on_bind(target: str, ns: MutableMapping[str, Any], names: List[str]) -> None:
    """A namespace bound while a level is open (a module imported in it) is swapped too."""
    if _current_level >= 0:
        _swap_namespace(target, ns, names)
        _PLAN_NAMESPACES[0] = len(_bind.bound_namespaces())


def _replay() -> bool:
    """The last level's swaps made again, or False (nothing swapped) where they are stale."""
    if not _PLAN or _PLAN_NAMESPACES[0] != len(_bind.bound_namespaces(_on_bind)):
        return False
    for owner, name, orig, replacement in _PLAN:
        if (owner.__dict__.get(name) if owner is Tensor else owner.get(name)) is not orig:
            _SWAPPED.restore()
            return False
        _SWAPPED.set(owner, name, replacement)
    return True


def _install() -> None:
    if _replay():
        return
    _PLAN.clear()
    for name, orig in _bind.tensor_entry_points(Tensor):
        if isinstance(orig, property):
            assert orig.fget is not None
            w: Any = property(_wrapper(orig.fget, False, False), orig.fset, orig.fdel, orig.__doc__)
        else:
            w = _wrapper(orig, _tensor_inplace(name), False)
        _swap(Tensor, name, w)
    namespaces = _bind.bound_namespaces(_on_bind)
    for target, ns, bound in namespaces:
        _swap_namespace(target, ns, bound)
    # backward() (Tensor.backward calls it) accumulates .grad without tangents, as torch's
    package = vars(sys.modules[__package__])
    _swap(package, "backward", _plain(package["backward"]))
    _PLAN_NAMESPACES[0] = len(namespaces)


def _plain(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn, run with the wrapped entry points plain (no tangents computed meanwhile)."""

    def plain(*args: Any, **kwargs: Any) -> Any:
        with _busy():
            return fn(*args, **kwargs)

    return functools.update_wrapper(plain, fn)


def _uninstall() -> None:
    _SWAPPED.restore()
