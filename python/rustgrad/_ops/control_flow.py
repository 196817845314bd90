"""Structured control flow, evaluated eagerly: torch.cond and torch.while_loop.

torch runs both under torch.compile unless the predicate is a Python constant; rustgrad runs
the Python program they describe, with torch's checks of the arguments and of what the functions
return (the loop body's outputs against the carried values; outputs that alias inputs). Where
autograd records, the outputs come from one node named as torch's (CondAutogradOpBackward,
WhileLoopAutogradOpBackward) over what the functions computed, so gradients reach the operands
and any tensor the functions close over."""

from __future__ import annotations

from typing import Any, Callable, List, Sequence

from .. import _creation, _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import _may_share, is_grad_enabled


def _leaves(tree: Any) -> List[Any]:
    """The leaves of nested tuples, lists and dicts, in order (torch's pytree order)."""
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _leaves(item)]
    if isinstance(tree, dict):
        return [leaf for key in tree for leaf in _leaves(tree[key])]
    return [tree]


def _rebuild(tree: Any, leaves: Any) -> Any:
    """tree with its leaves replaced by the next ones of the iterator `leaves`."""
    if isinstance(tree, (tuple, list)):
        return type(tree)(_rebuild(item, leaves) for item in tree)
    if isinstance(tree, dict):
        return {key: _rebuild(tree[key], leaves) for key in tree}
    return next(leaves)


def _structure(tree: Any) -> Any:
    if isinstance(tree, (tuple, list)):
        return (type(tree).__name__, tuple(_structure(item) for item in tree))
    if isinstance(tree, dict):
        return ("dict", tuple((key, _structure(tree[key])) for key in tree))
    return "*"


def _identity_bw(grads: Any, saved: Any, ctx: Any) -> Any:
    """The outputs' gradients to what computed them; zeros to the operands (as torch's, whose
    node differentiates both branches: an operand the taken one does not use gets zeros)."""
    grads = grads if isinstance(grads, tuple) else (grads,)
    return grads + tuple(_creation.zeros(shape, dtype=dt, device=dev) for shape, dt, dev in ctx)


COND = node("CondAutogradOpBackward", _identity_bw)
WHILE_LOOP = node("WhileLoopAutogradOpBackward", _identity_bw)


def _aliasing_error(name: str, kind: str) -> RuntimeError:
    return RuntimeError(
        "This higher order operator doesn't work unless it is captured completely with "
        "torch.compile. Got graph break/error:\n\nEncountered aliasing during higher order op "
        f"tracing\n  Higher Order Operator: torch.{name}\n  Explanation: Higher order ops do not "
        f"support aliasing. Found in {name}\n  Hint: Replace `return input` with "
        f"`return input.clone()` to avoid aliasing.\n\n  Developer debug context: {kind} "
        "aliasing detected")


def _check_aliasing(name: str, outputs: Sequence[Any], inputs: Sequence[Any]) -> None:
    """torch's refusal of outputs that share memory with an input or with each other."""
    outs = [o for o in outputs if isinstance(o, Tensor)]
    ins = [i for i in inputs if isinstance(i, Tensor)]
    for o in outs:
        if any(o is i or _may_share(o._data, i._data) for i in ins):
            raise _aliasing_error(name, "Input-to-output")
    for k, o in enumerate(outs):
        if any(o is p or _may_share(o._data, p._data) for p in outs[k + 1:]):
            raise _aliasing_error(name, "Output-to-output")


def _through_node(spec: Any, result: Any, operands: Sequence[Any] = ()) -> Any:
    """result with its floating point tensors given one node of `spec` (an identity) when
    autograd records and one of them or of the operands requires grad; otherwise result as it
    is. The operands that require grad are the node's inputs too (their gradient is zero
    there)."""
    leaves = _leaves(result)
    floats = [k for k, x in enumerate(leaves) if isinstance(x, Tensor) and (
        x.dtype.is_floating_point or x.dtype.is_complex)]
    grads = [x for x in operands if isinstance(x, Tensor) and x.requires_grad]
    if not (is_grad_enabled() and (grads or any(leaves[k].requires_grad for k in floats))):
        return result
    ins = tuple(leaves[k] for k in floats)
    # an output that is a leaf or a view of another tensor is copied: the node's outputs own
    # their memory, as torch's
    arrays = tuple(t._data.copy() if (t.is_leaf or t._base is not None) else t._data for t in ins)
    zeros = tuple((tuple(x.shape), x.dtype, x.device) for x in grads)
    outs = spec.record_multi(arrays, ins + tuple(grads), zeros)
    for k, t in zip(floats, outs):
        leaves[k] = t
    return _rebuild(result, iter(leaves))


@op(function="cond", grad_fn="CondAutogradOpBackward")
def cond(pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any],
         operands: Any = ()) -> Any:
    """true_fn(*operands) if pred else false_fn(*operands), as one structured op.

    Args:
        pred (bool or Tensor): a Python bool (or number), or a one-element tensor.
        true_fn (Callable): called with the operands when pred holds.
        false_fn (Callable): called with the operands otherwise.
        operands (tuple or list, optional): the branches' arguments, tensors in possibly nested
            tuples, lists and dicts. Default: ().

    With a Python predicate this is the chosen branch's call, as torch's. With a tensor
    predicate the operands are checked as torch checks them, the branch may not return an
    operand (or a view of one), and the outputs, where they require grad, come from one
    CondAutogradOpBackward node. torch compiles both branches and also checks that their
    outputs agree; rustgrad runs only the chosen one.

    Example::

        >>> x = rustgrad.tensor([1., -2.])
        >>> rustgrad.cond(x.sum() > 0, lambda a: a * 2, lambda a: a - 1, (x,))
        tensor([ 0., -3.])
    """
    if isinstance(pred, (bool, int, float)):
        return true_fn(*operands) if pred else false_fn(*operands)
    if not isinstance(pred, Tensor):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or any(
            not isinstance(x, Tensor) for x in _leaves(operands)):
        raise RuntimeError("Expect operands to be a tuple of possibly nested dict/list/tuple that "
                           f"only consists of tensor leaves, but got {operands}.")
    result = (true_fn if bool(pred.item()) else false_fn)(*operands)
    _check_aliasing("cond", _leaves(result), _leaves(operands))
    return _through_node(COND, result, _leaves(operands))


def _types(values: Sequence[Any]) -> str:
    return "(" + ", ".join(str(type(v)) for v in values) + ")"


def _check_carried(carried: Any) -> List[Any]:
    leaves = _leaves(carried)
    if not all(isinstance(x, (Tensor, int)) for x in leaves):
        raise AssertionError(f"{list(carried)} can only be of ({Tensor}, {int}) but got "
                             f"{_types(leaves)}")
    return leaves


def _describe(x: Any) -> str:
    if isinstance(x, Tensor):
        return f"Tensor(size={tuple(x.shape)}, dtype={x.dtype})"
    return repr(x)


def _check_body_output(out: Any, carried: Any) -> None:
    """torch's checks of body_fn's outputs against the values carried into it."""
    got, want = _leaves(out), _leaves(carried)
    if not isinstance(out, (tuple, list)) or len(got) != len(want):
        raise RuntimeError(
            "Expected body_fn_output and carried_inputs to have same number of outputs but got "
            f"lhs:[{', '.join(map(_describe, got))}] and rhs:[{', '.join(map(_describe, want))}]")
    for k, (a, b) in enumerate(zip(got, want)):
        diff = None
        if isinstance(a, Tensor) != isinstance(b, Tensor):
            diff = f"type: {type(a)} vs {type(b)}"
        elif isinstance(a, Tensor):
            if a.dtype != b.dtype:
                diff = f"dtype: {a.dtype} vs {b.dtype}"
            elif tuple(a.shape) != tuple(b.shape):
                diff = f"shape: {a.shape} vs {b.shape}"
            elif a.device != b.device:
                diff = f"device: {a.device} vs {b.device}"
        if diff is not None:
            raise RuntimeError(
                "Expected body_fn_output and carried_inputs to have same metadata but found:\n"
                f"pair[{k}] differ in '{diff}', where lhs is {_describe(a)} and rhs is "
                f"{_describe(b)}")


def _check_pred(pred: Any) -> bool:
    if isinstance(pred, bool):
        return pred
    if isinstance(pred, Tensor) and tuple(pred.shape) == () and pred.dtype is _dtype.bool_:
        return bool(pred.item())
    what = pred.shape if isinstance(pred, Tensor) else type(pred)
    raise RuntimeError(f"Expected cond_fn to return a scalar tensor or a bool but got {what}.")


@op(function="while_loop", grad_fn=("WhileLoopAutogradOpBackward", "CloneBackward0"))
def while_loop(cond_fn: Callable[..., Any], body_fn: Callable[..., Any],
               carried_inputs: Any) -> Any:
    """Runs ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` holds; returns the
    last carried values (copies of the inputs when the loop never runs).

    Args:
        cond_fn (Callable): returns a Python bool or a 0-d bool tensor.
        body_fn (Callable): returns new values of the carried ones, of the same number, shapes
            and dtypes (ints for ints).
        carried_inputs (tuple or list): the initial values: tensors and ints, possibly in nested
            tuples, lists and dicts.

    The body may not return one of its inputs (or a view of one), as torch refuses it; where
    autograd records, the tensor outputs come from one WhileLoopAutogradOpBackward node.

    Example::

        >>> i, x = rustgrad.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2),
        ...                            (rustgrad.tensor(0), rustgrad.tensor([1., 2.])))
        >>> i, x
        (tensor(3), tensor([ 8., 16.]))
    """
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list but got "
                           f"{type(carried_inputs)}")
    carried = _check_carried(carried_inputs)
    if is_grad_enabled() and any(isinstance(x, Tensor) and x.requires_grad for x in carried) \
            and not all(isinstance(x, Tensor) for x in carried):
        # torch's autograd of while_loop stacks every carried value
        raise RuntimeError("all carried_inputs must be tensors for stack_output, got "
                           f"[{', '.join(str(type(x)) for x in carried)}]")
    vals: Any = carried_inputs
    ran = False
    while _check_pred(cond_fn(*vals)):
        out = body_fn(*vals)
        _check_body_output(out, vals)
        _check_aliasing("while_loop", _leaves(out), _leaves(vals))
        vals, ran = out, True
    if not ran:
        leaves = [x.clone() if isinstance(x, Tensor) else x for x in _leaves(vals)]
        vals = tuple(_rebuild(list(vals), iter(leaves)))
    return _through_node(WHILE_LOOP, vals, carried)

