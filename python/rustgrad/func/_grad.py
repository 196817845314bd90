"""torch.func's derivative transforms (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian),
written on rustgrad's reverse-mode autograd.

Every transform takes the same steps:

1. Each differentiated argument (a pytree of tensors) is replaced by stand-ins (`_stand_in`): a
   fresh leaf that requires grad, or, where the argument already requires grad while grad mode
   is on (an outer transform's stand-in, or a user's parameter), a view of it, so that the
   result stays differentiable with respect to it. The transform runs `func` under enable_grad,
   so an outer no_grad does not stop it (torch.func's rule: a transform respects a no_grad
   inside `func`, not one around it).
2. `autograd.grad` computes the derivatives, with create_graph only when the outputs depend on
   something other than this transform's own leaves (`_Leaves.reaches_outside`): then the
   results carry a graph to that something, so transforms nest (grad of grad, jacfwd of
   jacrev) and compose with `.backward()` on a model's parameters.
3. A returned tensor whose graph reaches only this transform's own leaves is detached, as
   torch.func returns it (`requires_grad=False` at the top level).

Forward-mode products (`jvp`, `jacfwd`'s columns) use the double-vjp trick: for `u`, a zero
cotangent leaf that requires grad, `g(u) = J^T u` is linear in `u`, so the vjp of `g` with a
tangent `v` is `J v`. It costs two backward passes where forward-mode AD costs one forward pass.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from .. import _creation
from .._creation import zeros_like
from .._ops.joins import stack
from .._tensor import Tensor
from ..autograd import grad as _autograd_grad
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from . import _pytree
from ._vmap import _check_randomness, _RandomnessCheck

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian"]

Argnums = Union[int, Tuple[int, ...]]


# ---- stand-ins and what reaches outside them ----------------------------------------------------
class _Leaves:
    """The leaves one transform made (by id), and which graph nodes reach only them."""

    def __init__(self) -> None:
        self.outer = is_grad_enabled()
        self.ids: Set[int] = set()
        self.keep: List[Tensor] = []  # ids stay unique while the transform runs
        # nodes known to reach only our leaves, by id (kept alive: ids stay unique)
        self.inside: Dict[int, Any] = {}

    def leaf(self, t: Tensor) -> Tensor:
        self.ids.add(id(t))
        self.keep.append(t)
        return t

    def stand_in(self, x: Any) -> Tensor:
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if not (x.is_floating_point() or x.is_complex()):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if self.outer and x.requires_grad:
            return x.view_as(x)  # differentiable with respect to x, for an outer level
        return self.leaf(x.detach().requires_grad_())

    def reaches_outside(self, tensors: Sequence[Any]) -> bool:
        """Whether a graph behind `tensors` reaches a leaf that is not one of ours."""
        if not self.outer:
            return False
        seen: Dict[int, Any] = {}
        todo: List[Any] = []
        for t in tensors:
            if not (isinstance(t, Tensor) and t.requires_grad):
                continue
            if t.grad_fn is None:
                if id(t) not in self.ids:
                    return True
            else:
                todo.append(t.grad_fn)
        while todo:
            node = todo.pop()
            key = id(node)
            if key in seen or key in self.inside:
                continue
            seen[key] = node
            var = getattr(node, "variable", None)
            if var is not None:  # AccumulateGrad: a leaf
                if id(var) not in self.ids:
                    return True
                continue
            todo.extend(child for child, _ in node.next_functions if child is not None)
        self.inside.update(seen)
        return False

    def finish(self, t: Any) -> Any:
        """`t` as the transform returns it: detached unless its graph reaches outside."""
        if isinstance(t, Tensor) and t.requires_grad and not self.reaches_outside([t]):
            return t.detach()
        return t


def _backprop(outputs: Sequence[Tensor], cotangents: Sequence[Tensor],
              inputs: Sequence[Tensor], create: bool, retain: bool) -> List[Tensor]:
    """vjp of `outputs` with `cotangents` at `inputs`; zeros where an input is not reached."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    grads: Sequence[Optional[Tensor]] = [None] * len(inputs)
    if pairs and inputs:
        with enable_grad():
            grads = _autograd_grad([o for o, _ in pairs], list(inputs), [c for _, c in pairs],
                                   retain_graph=retain or create, create_graph=create,
                                   allow_unused=True)
    return [zeros_like(x) if g is None else g for g, x in zip(grads, inputs)]


def _check_argnums(argnums: Any, nargs: int) -> Tuple[Tuple[int, ...], bool]:
    """The argument positions `argnums` names (made non-negative), and whether it is a tuple."""
    if isinstance(argnums, int):
        nums: Tuple[int, ...] = (argnums,)
    elif isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        for a in argnums:
            if not isinstance(a, int):
                raise RuntimeError(f"argnum must be int, got: {type(a)}")
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(out), isinstance(argnums, tuple)


class _Args:
    """The positional arguments with the differentiated ones replaced by stand-ins."""

    def __init__(self, args: Tuple[Any, ...], argnums: Any, leaves: _Leaves) -> None:
        self.nums, self.is_tuple = _check_argnums(argnums, len(args))
        call = list(args)
        self.groups: List[Tuple[List[Tensor], _pytree.Spec]] = []
        for n in self.nums:
            flat, spec = _pytree.flatten(args[n])
            stand = [leaves.stand_in(x) for x in flat]
            self.groups.append((stand, spec))
            call[n] = _pytree.unflatten(stand, spec)
        self.call = tuple(call)
        self.flat = [s for stand, _ in self.groups for s in stand]

    def per_argnum(self, values: Sequence[Any]) -> Any:
        """One value per stand-in, regrouped as the differentiated arguments are."""
        out, i = [], 0
        for stand, spec in self.groups:
            out.append(_pytree.unflatten(list(values[i:i + len(stand)]), spec))
            i += len(stand)
        return tuple(out) if self.is_tuple else out[0]


def _split_aux(out: Any, has_aux: bool, api: str) -> Tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if "
                           "has_aux is True")
    return out


def _aux(aux: Any, leaves: _Leaves) -> Any:
    flat, spec = _pytree.flatten(aux)
    for a in flat:
        if not isinstance(a, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(a)}")
    return _pytree.unflatten([leaves.finish(a) for a in flat], spec)


def _tensors(out: Any, api: str, what: str) -> Tuple[List[Tensor], _pytree.Spec]:
    flat, spec = _pytree.flatten(out)
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected {what} to return only tensors, got unsupported "
                               f"type {type(o)}")
    return flat, spec


# ---- grad, grad_and_value ---------------------------------------------------------------------
_GRAD_API = "grad_and_value(f)(*args)"


def _grad_and_value(func: Callable[..., Any], argnums: Argnums, has_aux: bool,
                    args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Tuple[Any, Any, Any]:
    leaves = _Leaves()
    a = _Args(args, argnums, leaves)
    with enable_grad():
        out = func(*a.call, **kwargs)
    out, aux = _split_aux(out, has_aux, _GRAD_API)
    if not isinstance(out, Tensor):
        raise RuntimeError(f"{_GRAD_API}: Expected f(*args) to return a Tensor, got {type(out)}")
    if out.dim() != 0:
        raise RuntimeError(f"{_GRAD_API}: Expected f(*args) to return a scalar Tensor, got "
                           f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or "
                           "jacrev APIs instead?")
    create = leaves.reaches_outside([out])
    grads = _backprop([out], [_creation.ones_like(out)], a.flat, create, retain=False)
    grads = [leaves.finish(g) for g in grads]
    aux = _aux(aux, leaves) if has_aux else None
    return a.per_argnum(grads), leaves.finish(out), aux


def grad_and_value(func: Callable[..., Any], argnums: Argnums = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """Returns a function computing both the gradient of ``func`` and ``func``'s value.

    See :func:`grad`; the returned function gives ``(grads, value)``, or with ``has_aux``
    ``(grads, (value, aux))``.

    Args:
        func (callable): a function of tensors returning a scalar tensor (and, with
            ``has_aux``, a second output returned as it is).
        argnums (int or tuple of ints): which positional arguments to differentiate.
            Default: 0.
        has_aux (bool): whether ``func`` returns ``(output, aux)``. Default: ``False``.

    Example::

        >>> from rustgrad.func import grad_and_value
        >>> g, v = grad_and_value(lambda x: (x ** 2).sum())(torch.tensor([1.0, 2.0]))
        >>> g, v
        (tensor([2., 4.]), tensor(5.))
    """
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        grads, value, aux = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (grads, (value, aux)) if has_aux else (grads, value)
    return wrapper


def grad(func: Callable[..., Any], argnums: Argnums = 0,
         has_aux: bool = False) -> Callable[..., Any]:
    """Returns a function computing the gradient of ``func`` with respect to its arguments.

    ``func`` must return a scalar tensor. The gradient has the structure of the differentiated
    argument (a tensor, or a tuple/list/dict of them); with a tuple ``argnums``, a tuple of
    those. An argument ``func`` does not use gets zeros. Transforms nest (``grad(grad(f))``,
    ``vmap(grad(f))``) and compose with autograd: where ``func`` uses tensors that require
    grad (a model's parameters), the gradient is differentiable with respect to them.
    Computed by a reverse-mode backward pass (``autograd.grad``), with ``create_graph`` only
    when something outside the transform needs the graph.

    Args:
        func (callable): a function of tensors returning a scalar tensor (and, with
            ``has_aux``, a second output returned with the gradient).
        argnums (int or tuple of ints): which positional arguments to differentiate.
            Default: 0.
        has_aux (bool): whether ``func`` returns ``(output, aux)``. Default: ``False``.

    Returns:
        A function taking ``func``'s arguments and returning the gradient (with ``has_aux``:
        ``(gradient, aux)``).

    Example::

        >>> from rustgrad.func import grad
        >>> x = torch.tensor(0.5)
        >>> grad(torch.sin)(x)  # cos(0.5)
        tensor(0.8776)
        >>> grad(grad(torch.sin))(x)  # -sin(0.5)
        tensor(-0.4794)
    """
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        grads, _, aux = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (grads, aux) if has_aux else grads
    return wrapper


# ---- vjp, jvp ---------------------------------------------------------------------------------
def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Tuple[Any, ...]:
    """Runs ``func(*primals)`` and returns its output with a function computing
    vector-Jacobian products at ``primals``.

    ``vjp_fn(cotangents)`` takes cotangents of the output's structure and returns a tuple with
    one gradient per primal (each of that primal's structure). It may be called many times:
    the graph of ``func`` is kept while ``vjp_fn`` lives.

    Args:
        func (callable): a function of tensors returning a tensor or a tuple/list/dict of
            tensors (and, with ``has_aux``, a second output returned as it is).
        *primals: the arguments to ``func`` (tensors or pytrees of tensors).
        has_aux (bool): whether ``func`` returns ``(output, aux)``. Default: ``False``.

    Returns:
        ``(output, vjp_fn)``, or with ``has_aux`` ``(output, vjp_fn, aux)``.

    Example::

        >>> from rustgrad.func import vjp
        >>> out, vjp_fn = vjp(lambda x: x ** 2, torch.tensor([1.0, 3.0]))
        >>> vjp_fn(torch.ones(2))
        (tensor([2., 6.]),)
    """
    api = "vjp(f, *primals)"
    leaves = _Leaves()
    flat_p, pspec = _pytree.flatten(primals)
    stand = [leaves.stand_in(x) for x in flat_p]
    with enable_grad():
        out = func(*_pytree.unflatten(stand, pspec))
    out, aux = _split_aux(out, has_aux, api)
    flat_out, out_spec = _tensors(out, api, "f(*primals)")

    def vjp_fn(cotangents: Any, *, retain_graph: bool = True,
               create_graph: Optional[bool] = None) -> Tuple[Any, ...]:
        flat_c, c_spec = _pytree.flatten(cotangents)
        if c_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree "
                               "structure of outputs to the function. cotangents: "
                               f"{c_spec}, primal output: {out_spec}")
        create = create_graph if create_graph is not None else (
            leaves.reaches_outside(flat_out)
            or (leaves.outer and any(isinstance(c, Tensor) and c.requires_grad for c in flat_c)))
        grads = _backprop(flat_out, flat_c, stand, create, retain=retain_graph)
        return _pytree.unflatten([leaves.finish(g) for g in grads], pspec)  # type: ignore

    result = _pytree.unflatten([leaves.finish(o) for o in flat_out], out_spec)
    if has_aux:
        return result, vjp_fn, _aux(aux, leaves)
    return result, vjp_fn


def _forward_products(outputs: Sequence[Tensor], inputs: Sequence[Tensor],
                      tangent_sets: Sequence[Sequence[Tensor]], leaves: _Leaves,
                      create: bool) -> List[List[Tensor]]:
    """`J t` for each list `t` of tangents (one per input), by the double-vjp trick: one backward
    pass makes `g(u) = J^T u` for zero cotangent leaves `u`, then one per tangent set."""
    live = [o for o in outputs if o.requires_grad]
    zero = [[zeros_like(o) for o in outputs] for _ in tangent_sets]
    if not live or not inputs:
        return zero
    us = [leaves.leaf(zeros_like(o).detach().requires_grad_()) for o in live]
    with enable_grad():
        g = _autograd_grad(live, list(inputs), us, create_graph=True, allow_unused=True)
    results = []
    for k, tangents in enumerate(tangent_sets):
        pairs = [(gi, t) for gi, t in zip(g, tangents) if gi is not None and gi.requires_grad]
        if not pairs:
            results.append(zero[k])
            continue
        with enable_grad():
            jv = _autograd_grad([gi for gi, _ in pairs], us, [t for _, t in pairs],
                                retain_graph=True, create_graph=create, allow_unused=True)
        by_out = {id(o): v for o, v in zip(live, jv) if v is not None}
        results.append([by_out[id(o)] if id(o) in by_out else zeros_like(o) for o in outputs])
    return results


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> Tuple[Any, ...]:
    """Runs ``func(*primals)`` and returns its output with the Jacobian-vector product at
    ``primals`` in the direction ``tangents``.

    rustgrad has no forward-mode AD: the product is computed with the double-vjp trick (see the
    module docstring), which costs two backward passes (one through ``func``'s graph, one
    through the graph of that vjp) where torch's forward mode costs one forward pass, and needs
    ``func`` to be twice differentiable by reverse mode.

    Args:
        func (callable): a function of tensors returning a tensor or a tuple/list/dict of
            tensors (and, with ``has_aux``, a second output returned as it is).
        primals (tuple): the arguments to ``func`` (tensors or pytrees of tensors).
        tangents (tuple): the direction: tensors of ``primals``' structure and shapes.
        strict (bool): accepted for torch compatibility (torch does not implement it either).
        has_aux (bool): whether ``func`` returns ``(output, aux)``. Default: ``False``.

    Returns:
        ``(output, jvp_out)``, or with ``has_aux`` ``(output, jvp_out, aux)``.

    Example::

        >>> from rustgrad.func import jvp
        >>> x = torch.tensor([1.0, 2.0])
        >>> jvp(lambda x: x ** 2, (x,), (torch.ones(2),))
        (tensor([1., 4.]), tensor([2., 4.]))
    """
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    flat_p, pspec = _pytree.flatten(primals)
    flat_t, tspec = _pytree.flatten(tangents)
    if tspec != pspec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, "
                           f"tangents also must be. Got primals with structure {pspec} and "
                           f"tangents with structure {tspec}")
    if not flat_p:
        raise RuntimeError(f"{api}: Expected primals to contain at least one Tensor.")
    for p, t in zip(flat_p, flat_t):
        if not isinstance(p, Tensor):
            raise RuntimeError(f"{api}: Expected primals to only contain Tensors, got {type(p)}")
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{api}: Expected tangents to only contain Tensors, got {type(t)}")
        if tuple(t.shape) != tuple(p.shape):
            raise RuntimeError("Trying to set a forward gradient that has a different size than "
                               "that of the original Tensor, this is not supported. Tensor is of "
                               f"size {list(p.shape)} while the given forward gradient is of "
                               f"size {list(t.shape)}.")
    leaves = _Leaves()
    stand = [leaves.stand_in(x) for x in flat_p]
    with enable_grad():
        out = func(*_pytree.unflatten(stand, pspec))
    out, aux = _split_aux(out, has_aux, api)
    flat_out, out_spec = _tensors(out, api, "f(*primals)")
    tangents_cast = [t.to(s.dtype) for t, s in zip(flat_t, stand)]
    create = leaves.reaches_outside(flat_out) or (
        leaves.outer and any(t.requires_grad for t in flat_t))
    (jv,) = _forward_products(flat_out, stand, [tangents_cast], leaves, create)
    result = (_pytree.unflatten([leaves.finish(o) for o in flat_out], out_spec),
              _pytree.unflatten([leaves.finish(v) for v in jv], out_spec))
    return result + (_aux(aux, leaves),) if has_aux else result


# ---- Jacobians --------------------------------------------------------------------------------
def _one_hot(t: Tensor, k: int) -> Tensor:
    e = _creation.zeros(t.numel(), dtype=t.dtype, device=t.device)
    e[k] = 1
    return e.reshape(t.shape)


def _jacobian(func: Callable[..., Any], argnums: Argnums, has_aux: bool, args: Tuple[Any, ...],
              kwargs: Dict[str, Any], api: str, forward: bool,
              randomness: Optional[str] = None) -> Any:
    leaves = _Leaves()
    a = _Args(args, argnums, leaves)
    check = _RandomnessCheck(randomness) if randomness is not None else None
    with enable_grad():
        out = func(*a.call, **kwargs)
    if check is not None:
        check.after_call()
    out, aux = _split_aux(out, has_aux, api)
    flat_out, out_spec = _tensors(out, api, "f(*primals)")
    ins = a.flat
    create = leaves.reaches_outside(flat_out)
    n_out = sum(o.numel() for o in flat_out)
    n_in = sum(x.numel() for x in ins)
    # blocks[j][i]: d output j / d input i, of shape output_j.shape + input_i.shape
    blocks: List[List[Tensor]] = []
    if forward and n_in < n_out:
        # columns: one double-vjp product per input element
        sets, where = [], []
        for i, x in enumerate(ins):
            for k in range(x.numel()):
                sets.append([_one_hot(x, k) if m == i else zeros_like(y)
                             for m, y in enumerate(ins)])
                where.append(i)
        cols = _forward_products(flat_out, ins, sets, leaves, create)
        for j, o in enumerate(flat_out):
            row = []
            for i, x in enumerate(ins):
                mine = [c[j] for c, w in zip(cols, where) if w == i]
                if mine:
                    row.append(stack(mine, -1).reshape(tuple(o.shape) + tuple(x.shape)))
                else:
                    row.append(o.new_zeros(tuple(o.shape) + tuple(x.shape)))
            blocks.append(row)
    else:
        # rows: one backward pass per output element
        for o in flat_out:
            rows: List[List[Tensor]] = [[] for _ in ins]
            for k in range(o.numel()):
                gs = _backprop([o], [_one_hot(o, k)], ins, create, retain=True)
                for i, g in enumerate(gs):
                    rows[i].append(g)
            blocks.append([stack(r).reshape(tuple(o.shape) + tuple(x.shape)) if r
                           else x.new_zeros(tuple(o.shape) + tuple(x.shape))
                           for r, x in zip(rows, ins)])
    jac = _pytree.unflatten(
        [a.per_argnum([leaves.finish(b) for b in row]) for row in blocks], out_spec)
    return (jac, _aux(aux, leaves)) if has_aux else jac


def jacrev(func: Callable[..., Any], argnums: Argnums = 0, *, has_aux: bool = False,
           chunk_size: Optional[int] = None,
           _preallocate_and_copy: bool = False) -> Callable[..., Any]:
    """Returns a function computing the Jacobian of ``func`` by reverse mode.

    For an output of shape ``S`` and an input of shape ``T`` the Jacobian block has shape
    ``S + T``. With several outputs (a tuple/list/dict) the result has the outputs' structure;
    with a tuple ``argnums`` each output's entry is a tuple over those arguments. Costs one
    backward pass per output element (torch batches them with vmap; rustgrad runs them one
    after another, ``chunk_size`` only being checked).

    Args:
        func (callable): a function of tensors returning tensors (and, with ``has_aux``, a
            second output returned as it is).
        argnums (int or tuple of ints): which positional arguments to differentiate.
            Default: 0.
        has_aux (bool): whether ``func`` returns ``(output, aux)``. Default: ``False``.
        chunk_size (int, optional): accepted for torch compatibility (must be positive).

    Example::

        >>> from rustgrad.func import jacrev
        >>> jacrev(lambda x: x ** 2)(torch.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _jacobian(func, argnums, has_aux, args, kwargs, "vjp(f, *primals)", False)
    return wrapper


def jacfwd(func: Callable[..., Any], argnums: Argnums = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable[..., Any]:
    """Returns a function computing the Jacobian of ``func``, with :func:`jacrev`'s values and
    result structure.

    rustgrad has no forward-mode AD. Where ``func`` has fewer input than output elements the
    Jacobian is built column by column with the double-vjp trick (one backward pass, then one
    per input element through the graph of the vjp, as :func:`jvp`); otherwise row by row, as
    :func:`jacrev` (one backward pass per output element), which is then the cheaper way.

    Args:
        func (callable): a function of tensors returning tensors (and, with ``has_aux``, a
            second output returned as it is).
        argnums (int or tuple of ints): which positional arguments to differentiate.
            Default: 0.
        has_aux (bool): whether ``func`` returns ``(output, aux)``. Default: ``False``.
        randomness (str): ``"error"`` (default: a random op in ``func`` raises, as under
            :func:`vmap`), ``"different"`` or ``"same"``.

    Example::

        >>> from rustgrad.func import jacfwd
        >>> jacfwd(lambda x: x.sin().sum(0))(torch.zeros(1, 2))
        tensor([[[1., 0.]],
        <BLANKLINE>
                [[0., 1.]]])
    """
    _check_randomness(randomness)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _jacobian(func, argnums, has_aux, args, kwargs, "jvp(f, primals, tangents)", True,
                         randomness)
    return wrapper


def hessian(func: Callable[..., Any], argnums: Argnums = 0) -> Callable[..., Any]:
    """Returns a function computing the Hessian of ``func``: ``jacfwd(jacrev(func, argnums),
    argnums)``.

    For a scalar function of an input of shape ``T`` the Hessian has shape ``T + T``.

    Args:
        func (callable): a function of tensors returning a tensor.
        argnums (int or tuple of ints): which positional arguments to differentiate.
            Default: 0.

    Example::

        >>> from rustgrad.func import hessian
        >>> hessian(lambda x: (x ** 3).sum())(torch.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)
