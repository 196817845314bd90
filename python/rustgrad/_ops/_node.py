"""Node specs: each backward node stated once, as its name, its named saved slots and its formula.

    MUL = node("MulBackward0", _mul_bw, saved=("self", "other"))
    ...
    return MUL.record(out, (a, b), self=a, other=b)

The formula, `backward(grad, saved, ctx)`, reads `saved.self` and `saved.other`: the saved
values arrive as a tuple that names its items by slot (with `result=True` the op's output is saved last,
as `saved.result`). It returns one gradient per input at whatever shape and dtype its math
gives: the engine sums a broadcast gradient down to its input's shape and casts it to the
input's dtype (Note [Input metadata], rust/core/src/engine.rs). The spec also gives torch's
`grad_fn._saved_<slot>` getters and the list of declared node names, so a recorded name no
spec declares is caught by tests/ops/test_declarations.py.

A spec may also state the node's forward-mode formula, `forward(tangents, saved, ctx)`: the
tangent of the op's output (a tuple of them for a node of several outputs) from one tangent per
input, None where an input has none, reading the same saved values and ctx as the backward
formula (autograd/forward_ad.py runs it). Where the op is elementwise its Jacobian is diagonal,
so it is its own transpose: `forward=ELEMENTWISE` makes the forward formula from the backward
one, each input's term being that input's gradient for its tangent.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .. import _core
from ._declare import SAVED

Formula = Callable[[Any, Any, Any], Any]
Getter = Callable[[Tuple[Any, ...], Any], Any]

# node name -> its spec, for every node an op may record
NODES: Dict[str, _core.NodeSpec] = {}
# specs of a second formula under a name another spec states (see `node`'s variant)
VARIANTS: List[_core.NodeSpec] = []


def _fields(name: str, slots: Tuple[str, ...]) -> type:
    """A tuple type whose items are also read by slot name (`saved.self`): a namedtuple's
    reading half, made without namedtuple's generated code (~115 µs a spec at import)."""
    ns: Dict[str, Any] = {"__slots__": (), "_fields": slots}
    ns.update({slot: property(itemgetter(i)) for i, slot in enumerate(slots)})
    return type(f"{name}Saved", (tuple,), ns)


def _slot_getter(i: int) -> Getter:
    # a node recorded with nothing saved keeps one None slot (see NodeSpec.record)
    return lambda saved, ctx: saved[i] if i < len(saved) else None


# nodes whose formulas hold for real tensors only (torch's complex gradients conjugate what they
# multiply by): the engine refuses a complex gradient for them rather than give a wrong one
# (NodeSpec's real_only, checked in Rust before the formula runs)
REAL_ONLY = frozenset({
    "ExpBackward0", "Exp2Backward0", "LogBackward0", "Log2Backward0", "Log10Backward0",
    "SqrtBackward0", "PowBackward0", "PowBackward1", "PowBackward2", "ReciprocalBackward0",
    "SigmoidBackward0", "TanhBackward0", "MmBackward0", "MvBackward0", "DotBackward0",
    "VdotBackward0", "BmmBackward0", "EinsumBackward0", "ProdBackward0", "ProdBackward1",
    "CumprodBackward0", "SgnBackward0", "AddcmulBackward0", "AddcdivBackward0", "LerpBackward0",
    "LerpBackward1", "LogsumexpBackward0", "ConvolutionBackward0", "AddmmBackward0",
    "AddmvBackward0", "AddrBackward0", "BaddbmmBackward0", "AddbmmBackward0", "KronBackward0",
    "LinalgVectorNormBackward0", "NormBackward1", "SoftmaxBackward0", "LogSoftmaxBackward0",
})


# `forward=ELEMENTWISE`: the forward formula is the backward one, input by input (module doc)
ELEMENTWISE = "elementwise"


def add_terms(*terms: Any) -> Any:
    """The sum of the terms that are not None (None when all are): a forward formula's total
    over the inputs that have tangents."""
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else total + term
    return total


def transposed(backward: Formula) -> Formula:
    """The forward formula of a node whose inputs' Jacobians are diagonal (or symmetric, as
    softmax's): the backward formula applied to each input's tangent, the terms summed."""

    def term(i: int, t: Any, saved: Any, ctx: Any) -> Any:
        g = backward(t, saved, ctx)
        return g[i] if type(g) is tuple else g

    def forward(tangents: Tuple[Any, ...], saved: Any, ctx: Any) -> Any:
        return add_terms(*(term(i, t, saved, ctx) for i, t in enumerate(tangents)
                           if t is not None))

    return forward


def node(name: str, backward: Formula, *, saved: Sequence[str] = (), result: bool = False,
         getters: Optional[Mapping[str, Getter]] = None, variant: bool = False,
         forward: Any = None, native: Optional[str] = None) -> _core.NodeSpec:
    """The spec of backward node `name` (see the module doc). `getters` adds or replaces
    `_saved_<attr>` getters that are not a slot as it is (a wrapped scalar, a ctx value).

    variant: a second formula under a name the op that owns it states elsewhere, where torch's
    own graph ends on that node from another path (linear's batch fold ends on
    UnsafeViewBackward0; a max-pool gradient's scatter on IndexPutBackward0). The owner's spec
    gives the name's `_saved_<attr>` getters.

    forward: the forward-mode formula (module doc), or ELEMENTWISE.

    native: the formula's common case, which the engine then runs without calling Python (the
    per-op chain's backward; the formula stays the reference and runs in every other case):
    "identity", with ctx None every input gets the incoming gradient; "scale", with a Python
    float as ctx and grad mode off, the first input gets the gradient times it, the second
    none."""
    if name in NODES and not variant:
        raise RuntimeError(f"node {name} is specified twice")
    slots = (*saved, "result") if result else tuple(saved)
    fields = _fields(name, slots) if slots else None
    if forward == ELEMENTWISE:
        forward = transposed(backward)
    spec = _core.NodeSpec(name, backward, list(saved), result, fields, forward, native,
                          name in REAL_ONLY)
    if variant:
        VARIANTS.append(spec)
        return spec
    NODES[name] = spec
    found = SAVED.setdefault(name, {})
    found.update({slot: _slot_getter(i) for i, slot in enumerate(slots)})
    found.update(getters or {})
    return spec
