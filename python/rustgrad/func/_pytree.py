"""Nested containers of tensors (pytrees), as the torch.func transforms take and return them.

A pytree is a tuple (named tuples included), list or dict of pytrees, or a leaf: anything
else. `flatten` lists the leaves in order with a `Spec` of the containers; `unflatten` puts
new leaves back into the same containers. `broadcast_prefix` matches a prefix tree (vmap's
in_dims and out_dims: an int or None applies to a whole subtree) to a full tree.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple


class Spec:
    """The containers of a pytree: `kind` ("leaf", "tuple", "namedtuple", "list" or "dict"), the
    namedtuple class or the dict's keys (`context`), and the children's specs."""

    __slots__ = ("kind", "context", "children", "num_leaves")

    def __init__(self, kind: str, context: Any = None,
                 children: Tuple[Spec, ...] = ()) -> None:
        self.kind, self.context, self.children = kind, context, children
        self.num_leaves: int = 1 if kind == "leaf" else sum(c.num_leaves for c in children)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Spec) and self.kind == other.kind
                and self.context == other.context and self.children == other.children)

    def __hash__(self) -> int:
        return hash((self.kind, len(self.children)))

    def __repr__(self) -> str:
        # torch's spelling: `*` for a leaf, TreeSpec(container, context, [children])
        if self.kind == "leaf":
            return "*"
        kind = self.context.__name__ if self.kind == "namedtuple" else self.kind
        context = list(self.context) if self.kind == "dict" else None
        return f"TreeSpec({kind}, {context}, [{', '.join(map(repr, self.children))}])"


LEAF = Spec("leaf")


def _node(tree: Any) -> Optional[Tuple[str, Any, List[Any]]]:
    """(kind, context, children) of a container; None for a leaf."""
    if isinstance(tree, tuple) and hasattr(type(tree), "_fields"):
        return "namedtuple", type(tree), list(tree)
    if type(tree) is tuple:
        return "tuple", None, list(tree)
    if type(tree) is list:
        return "list", None, list(tree)
    if isinstance(tree, dict):
        return "dict", tuple(tree.keys()), list(tree.values())
    return None


def flatten(tree: Any) -> Tuple[List[Any], Spec]:
    """The leaves of `tree`, in order, and its spec."""
    leaves: List[Any] = []

    def walk(t: Any) -> Spec:
        node = _node(t)
        if node is None:
            leaves.append(t)
            return LEAF
        kind, context, children = node
        return Spec(kind, context, tuple(walk(c) for c in children))

    return leaves, walk(tree)


def unflatten(leaves: List[Any], spec: Spec) -> Any:
    """The pytree of `spec` with `leaves` in its leaves' places."""
    it = iter(leaves)

    def build(s: Spec) -> Any:
        if s.kind == "leaf":
            return next(it)
        children = [build(c) for c in s.children]
        if s.kind == "tuple":
            return tuple(children)
        if s.kind == "namedtuple":
            return s.context(*children)
        if s.kind == "list":
            return children
        return dict(zip(s.context, children))

    return build(spec)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """`tree` with each leaf replaced by `fn(leaf)`."""
    leaves, spec = flatten(tree)
    return unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix: Any, tree: Any) -> Optional[List[Any]]:
    """One entry of `prefix` per leaf of `tree`: where `prefix` has a non-container (an int or
    None), it applies to every leaf below; where it has a container, `tree` must have the same
    container there. None when they do not match."""
    out: List[Any] = []

    def walk(p: Any, t: Any) -> bool:
        pnode = _node(p)
        if pnode is None:
            out.extend([p] * flatten(t)[1].num_leaves)
            return True
        tnode = _node(t)
        if tnode is None:
            return False
        pkind, pctx, pchildren = pnode
        tkind, tctx, tchildren = tnode
        # a tuple prefix matches a named tuple (torch's in_dims are plain tuples)
        same_kind = pkind == tkind or {pkind, tkind} <= {"tuple", "namedtuple"}
        if not same_kind or len(pchildren) != len(tchildren):
            return False
        if pkind == "dict":
            if set(pctx) != set(tctx):
                return False
            return all(walk(p[k], t[k]) for k in tctx)
        return all(walk(a, b) for a, b in zip(pchildren, tchildren))

    return out if walk(prefix, tree) else None
