"""torch.func's remaining functions: linearize, functionalize, stack_module_state,
replace_all_batch_norm_modules_ and debug_unwrap.

rustgrad's transforms pass plain tensors to the functions they transform (no wrapper tensors,
no tracing), so these are written on the same reverse-mode machinery as ``_grad``:
``linearize`` keeps the graph of one evaluation and answers each tangent with a double-vjp
through it; ``functionalize`` runs the function as it is and fixes up what it returns.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Sequence, Set, Tuple, Union

from .._creation import zeros_like
from .._ops.joins import stack
from .._tensor import Tensor
from ..autograd import grad as _autograd_grad
from ..autograd.grad_mode import enable_grad
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.container import ModuleList
from ..nn.modules.instancenorm import _InstanceNorm
from ..nn.modules.module import Module
from . import _pytree
from ._grad import _Leaves

__all__ = ["linearize", "functionalize", "stack_module_state",
           "replace_all_batch_norm_modules_", "debug_unwrap"]


# ---- linearize ---------------------------------------------------------------------------------
def linearize(func: Callable[..., Any], *primals: Any) -> Tuple[Any, Callable[..., Any]]:
    """Returns ``func(*primals)`` and a function computing Jacobian-vector products at
    ``primals``.

    ``jvp_fn(*tangents)`` takes tangents of the primals' structure, shapes, dtypes and devices
    and returns the product, of the output's structure. ``func`` is evaluated twice, as torch's:
    once for the output (with its graph to ``primals``), once to build the graph ``jvp_fn``
    keeps (one backward pass, ``J^T u``, done here); each ``jvp_fn`` call is then one more
    backward pass through that graph (the double-vjp trick of :func:`jvp`), so it pays off
    when ``jvp_fn`` is called many times.

    Args:
        func (callable): a function of tensors (or pytrees of tensors) returning a tensor or a
            tuple/list/dict of tensors.
        *primals (Tensor): the point to linearize at; floating-point tensors.

    Returns:
        ``(output, jvp_fn)``.

    Example::

        >>> from rustgrad.func import linearize
        >>> out, jvp_fn = linearize(torch.sin, torch.zeros(3))
        >>> jvp_fn(torch.ones(3))
        tensor([1., 1., 1.])
    """
    output = func(*primals)
    _, out_spec = _pytree.flatten(output)
    flat_p, p_spec = _pytree.flatten(primals)
    for p in flat_p:
        if not isinstance(p, Tensor):
            raise AttributeError(f"'{type(p).__name__}' object has no attribute 'new_empty'")
    for p in flat_p:
        if not (p.is_floating_point() or p.is_complex()):
            raise ValueError(f"Expected primal to be floating point or complex, but got: "
                             f"{p.dtype}")
    meta = [(p.shape, p.device, p.dtype) for p in flat_p]

    leaves = _Leaves()
    stand = [leaves.stand_in(p) for p in flat_p]
    with enable_grad():
        traced = func(*_pytree.unflatten(stand, p_spec))
    flat_traced, _ = _pytree.flatten(traced)
    live = [o for o in flat_traced if isinstance(o, Tensor) and o.requires_grad]
    # g(u) = J^T u, kept with its graph: u are zero cotangent leaves, one per live output
    us = [leaves.leaf(zeros_like(o).detach().requires_grad_()) for o in live]
    g: Sequence[Any] = ()
    if live and stand:
        with enable_grad():
            g = _autograd_grad(live, stand, us, create_graph=True, allow_unused=True)
    g_used = [(gi, k) for k, gi in enumerate(g) if gi is not None and gi.requires_grad]
    out_of = {id(o): i for i, o in enumerate(live)}

    def jvp_fn(*tangents: Any) -> Any:
        flat_t, t_spec = _pytree.flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(f"Expected the tangents {t_spec} to have the same argspec as the "
                               f"primals {p_spec}")
        for idx, (t, (shape, device, dtype)) in enumerate(zip(flat_t, meta)):
            if not isinstance(t, Tensor):
                raise AttributeError(f"'{type(t).__name__}' object has no attribute 'shape'")
            for what, mine, theirs in (("shape", t.shape, shape), ("device", t.device, device),
                                       ("dtype", t.dtype, dtype)):
                if mine != theirs:
                    raise RuntimeError(f"tangent:{idx} with {what} {mine} in flattened pytree "
                                       f"doesn't match the {what} {theirs} of the corresponding "
                                       "primal.")
        products: List[Any] = [None] * len(live)
        if g_used:
            create = leaves.reaches_outside([gi for gi, _ in g_used]) or (
                leaves.outer and any(flat_t[k].requires_grad for _, k in g_used))
            with enable_grad():
                jv = _autograd_grad([gi for gi, _ in g_used], us,
                                    [flat_t[k] for _, k in g_used], retain_graph=True,
                                    create_graph=create, allow_unused=True)
            products = [leaves.finish(v) for v in jv]
        flat_out: List[Any] = []
        for o in flat_traced:
            if not isinstance(o, Tensor):
                flat_out.append(o)
                continue
            i = out_of.get(id(o))
            v = None if i is None else products[i]
            flat_out.append(zeros_like(o).detach() if v is None else v)
        return _pytree.unflatten(flat_out, out_spec)

    return output, jvp_fn


# ---- functionalize -----------------------------------------------------------------------------
_REMOVE = ("mutations", "mutations_and_views")


def _storage(t: Tensor) -> Any:
    """What identifies `t`'s memory (None for an empty tensor, which shares nothing)."""
    return t.untyped_storage().data_ptr() if t.numel() else None


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """Returns a function with ``func``'s semantics whose outputs alias what torch's
    functionalized outputs alias.

    torch rewrites ``func``'s in-place ops into out-of-place ones (and, with
    ``remove="mutations_and_views"``, its views into copies) for graph capture. rustgrad has no
    such pass and captures no graphs: ``func`` runs as it is, which gives the same values and
    the same mutations of the inputs. Its outputs are then made to alias as torch's do: an
    output sharing memory with an input that ``func`` mutated is a copy, and with
    ``"mutations_and_views"`` so is an output sharing memory with an input or with an earlier
    output (an input returned unchanged is returned as it is). Copies are recorded as clones,
    so their ``grad_fn`` is ``CloneBackward0`` where torch's names the original op.

    Args:
        func (callable): the function.
        remove (str): ``"mutations"`` or ``"mutations_and_views"``. Default: ``"mutations"``.

    Example::

        >>> from rustgrad.func import functionalize
        >>> def f(x):
        ...     y = x.clone()
        ...     y.add_(1)
        ...     return y.view(-1)
        >>> functionalize(f, remove="mutations_and_views")(torch.zeros(2, 2))
        tensor([1., 1., 1., 1.])
    """
    if remove not in _REMOVE:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}."
            " Valid options are:\n"
            "     remove='mutations': all inplace and out= operators will be removed from the "
            "program, and replaced with their out-of-place equivalents.\n"
            "     remove='mutations_and_views': In addition to the above, all aliasing operators "
            "{view} will be replaced with their non-aliasing counterparts, {view}_copy.\n"
        )
    no_views = remove == "mutations_and_views"

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        inputs = [t for t in _pytree.flatten((args, kwargs))[0] if isinstance(t, Tensor)]
        versions = [t._version for t in inputs]
        out = func(*args, **kwargs)
        mutated = {_storage(t) for t, v in zip(inputs, versions) if t._version != v}
        input_ids = {id(t) for t, v in zip(inputs, versions) if t._version == v}
        input_memory = {_storage(t) for t in inputs}
        flat, spec = _pytree.flatten(out)
        done: Dict[int, Any] = {}
        output_memory: Set[Any] = set()
        result: List[Any] = []
        for o in flat:
            if not isinstance(o, Tensor):
                result.append(o)
                continue
            if id(o) in done:  # the same tensor twice: the same result twice, as torch's
                result.append(done[id(o)])
                continue
            mem = _storage(o)
            r = o
            if mem is not None:
                if mem in mutated:
                    r = o.clone()
                elif no_views and id(o) not in input_ids and (
                        mem in input_memory or mem in output_memory):
                    r = o.clone()
            output_memory.add(_storage(r))
            done[id(o)] = r
            result.append(r)
        return _pytree.unflatten(result, spec)

    return wrapped


# ---- ensembles ---------------------------------------------------------------------------------
def _stacked(tensors: Sequence[Tensor], name: str) -> Tensor:
    grads = [t.requires_grad for t in tensors]
    if any(grads) and not all(grads):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    out = stack(list(tensors))
    if all(grads):
        out = out.detach().requires_grad_()
    return out


def stack_module_state(models: Union[Sequence[Module], ModuleList]
                       ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Stacks the parameters and buffers of ``M`` models of one class, by name, for
    :func:`vmap` over :func:`functional_call` (model ensembling).

    Each entry has a leading dimension of size ``M``. Stacked parameters that require grad are
    new leaves (detached from the models' parameters, so an optimizer can train them); the
    others, and the buffers, are plain stacks.

    Args:
        models (sequence of Module): the models, all of one class and in one training mode.

    Returns:
        ``(params, buffers)``: two dicts, name -> stacked tensor.

    Example::

        >>> from rustgrad.func import stack_module_state
        >>> params, buffers = stack_module_state([nn.Linear(3, 2) for _ in range(4)])
        >>> params["weight"].shape, params["weight"].is_leaf, buffers
        (torch.Size([4, 2, 3]), True, {})
    """
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked([p[k] for p in all_params], k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def replace_all_batch_norm_modules_(root: Module) -> Module:
    """Makes every batch norm module in ``root`` (``root`` included) stop tracking running
    statistics, in place: ``running_mean``, ``running_var`` and ``num_batches_tracked`` become
    None and ``track_running_stats`` False, so they normalize with the batch's statistics (what
    :func:`vmap` over a batch norm needs). Returns ``root``.

    Args:
        root (Module): the module to update.

    Example::

        >>> from rustgrad.func import replace_all_batch_norm_modules_
        >>> m = replace_all_batch_norm_modules_(nn.Sequential(nn.BatchNorm1d(3)))
        >>> m[0].running_mean is None, m[0].track_running_stats
        (True, False)
    """
    for m in (root, *root.modules()):
        # rustgrad's instance norms derive from _BatchNorm; torch's do not, and it skips them
        if isinstance(m, _BatchNorm) and not isinstance(m, _InstanceNorm) and \
                m.track_running_stats:
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root


def debug_unwrap(tensor: Tensor, *, recurse: bool = True) -> Tensor:
    """Returns ``tensor``: torch unwraps its transforms' wrapper tensors (BatchedTensor,
    GradTrackingTensor) here, and rustgrad's transforms pass plain tensors, so there is
    nothing to unwrap.

    Args:
        tensor (Tensor): a tensor, inside a transformed function or not.
        recurse (bool): unwrap every level (torch) rather than one. Default: ``True``.

    Example::

        >>> from rustgrad.func import debug_unwrap
        >>> x = torch.ones(2)
        >>> debug_unwrap(x) is x
        True
    """
    if not isinstance(tensor, Tensor):
        raise TypeError("is_functorch_wrapped_tensor(): incompatible function arguments. The "
                        "following argument types are supported:\n    1. (arg0: torch.Tensor) "
                        f"-> bool\n\nInvoked with: {tensor!r}")
    return tensor
