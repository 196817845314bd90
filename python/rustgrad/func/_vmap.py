"""torch.func.vmap: one batched call of `func` where the batching rules can follow it, the
per-element loop otherwise.

The batched path (`_batching`): `func` runs once on whole-batch tensors that show it their
per-sample shapes, each op through a batching rule (elementwise ops, reductions, matmul,
views, class-index losses) or, for an op without a rule, a per-op loop; `grad`/`vjp`/`jvp`
inside it differentiate per element. Where it cannot give torch's result (a Python value
read from a batched tensor, an in-place write into an unbatched tensor, `backward`, an op
reached without the public entry points, any error, a random draw) the call falls back to
the loop below, which is also used for ``randomness="different"``/``"same"``, an empty batch,
a vmap inside a batched call, and inside a forward-AD level.

The loop: `func` runs once per batch element on that element's slices (`select` along each
input's mapped dimension) and the outputs are stacked. That gives torch's results, errors
and autograd behaviour (select and stack are differentiable, so gradients flow through vmap,
and it nests with itself and the derivative transforms), at the cost of B calls of `func`.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, List, Optional

from .. import _creation
from .._ops.joins import stack
from .._tensor import Tensor
from . import _batching, _pytree

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


def _check_randomness(randomness: Any) -> None:
    if randomness not in _RANDOMNESS:
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


class _RandomnessCheck:
    """Watches the default generator around calls of `func`: under "error", a call that draws
    from it raises torch's error (after the call: rustgrad cannot stop a random op before it
    runs); under "same", each call starts from the state the first one started from, so all
    batch elements draw the same numbers."""

    def __init__(self, randomness: str) -> None:
        self.randomness = randomness
        self.start = _creation.default_generator.get_state()

    def before_call(self) -> None:
        if self.randomness == "same":
            _creation.default_generator.set_state(self.start)

    def after_call(self) -> None:
        if self.randomness == "error":
            now = _creation.default_generator.get_state()
            if not bool((now == self.start).all()):
                _creation.default_generator.set_state(self.start)
                raise RuntimeError(
                    "vmap: called random operation while in randomness error mode. Please "
                    "either use the 'same' or 'different' randomness flags on vmap or perform "
                    "the randomness operation out of vmap")


def _name(func: Any) -> str:
    return getattr(func, "__name__", repr(func))


def _is_dims(x: Any) -> bool:
    """Whether `x` is an int, None or a (nested) tuple/list/dict of them."""
    if x is None or (isinstance(x, int) and not isinstance(x, bool)):
        return True
    if isinstance(x, (tuple, list)):
        return all(_is_dims(v) for v in x)
    if isinstance(x, dict):
        return all(_is_dims(v) for v in x.values())
    return False


def _batch_size(args: Any, in_dims: Any, fname: str) -> List[Optional[int]]:
    """The mapped dimension of each leaf of `args` (None: not mapped), checked."""
    head = f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>)"
    if not (isinstance(in_dims, int) or type(in_dims) is tuple) or not _is_dims(in_dims):
        raise ValueError(f"{head}: expected `in_dims` to be int or a (potentially nested) tuple "
                         f"matching the structure of inputs, got: {type(in_dims)}.")
    dims = _pytree.broadcast_prefix(in_dims, args)
    if dims is None:
        raise ValueError(f"{head}: in_dims is not compatible with the structure of `inputs`. "
                         f"in_dims has structure {_pytree.flatten(in_dims)[1]} but inputs has "
                         f"structure {_pytree.flatten(args)[1]}.")
    leaves, _ = _pytree.flatten(args)
    out: List[Optional[int]] = []
    for x, d in zip(leaves, dims):
        if d is None:
            out.append(None)
            continue
        if not isinstance(x, Tensor):
            raise ValueError(f"{head}: Got in_dim={d} for an input but the input is of type "
                             f"{type(x)}. We cannot vmap over non-Tensor arguments, please use "
                             "None as the respective in_dim")
        n = x.dim()
        if not -n <= d < n:
            raise ValueError(f"{head}: Got in_dim={d} for some input, but that input is a Tensor "
                             f"of dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim "
                             f"< {n}.")
        out.append(d % n)
    return out


def _call_batched(func: Callable[..., Any], in_dims: Any, out_dims: Any, randomness: str,
                  args: tuple, kwargs: dict) -> Any:
    fname = _name(func)
    if not args:
        raise ValueError(f"vmap({fname})(<inputs>): got no inputs. Maybe you forgot to add "
                         "inputs, or you are trying to vmap over a function with no inputs. The "
                         "latter is unsupported.")
    dims = _batch_size(args, in_dims, fname)
    leaves, spec = _pytree.flatten(args)
    sizes = [x.shape[d] for x, d in zip(leaves, dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) != 1:
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    size = sizes[0]
    global last_path
    last_path = "loop"
    if BATCHED and randomness == "error" and size > 0 and not _batching._busy():
        done, result = _try_batched(func, leaves, dims, spec, size, out_dims, kwargs, fname)
        if done:
            return result

    def element(i: int) -> Any:
        if size == 0:  # no element to take: zeros of an element's shape show the outputs' form
            return [x if d is None else x.new_zeros(x.shape[:d] + x.shape[d + 1:])
                    for x, d in zip(leaves, dims)]
        return [x if d is None else x.select(d, i) for x, d in zip(leaves, dims)]

    check = _RandomnessCheck(randomness)
    results = []
    for i in range(max(size, 1)):
        check.before_call()
        results.append(func(*_pytree.unflatten(element(i), spec), **kwargs))
        check.after_call()
    return _stack_outputs(results, out_dims, size, fname)


# the batched path (see _batching); False: always the per-element loop
BATCHED = True
# how the last vmap call ran: "batched" or "loop" (tests read it)
last_path = ""


def _try_batched(func: Callable[..., Any], leaves: List[Any], dims: List[Optional[int]],
                 spec: Any, size: int, out_dims: Any, kwargs: dict, fname: str) -> Any:
    """(True, result) from one batched call of func, or (False, None) where the loop must run
    (an op the rules cannot batch as torch would, an error, a random draw)."""
    global last_path
    from ..autograd import forward_ad
    if forward_ad._current_level >= 0 or _batching._run() is not None:
        return False, None
    start = _creation.default_generator.get_state()
    try:
        flat, ospec, batched, _ = _batching.run_batched(
            func, leaves, dims, size, lambda xs: _pytree.unflatten(xs, spec), kwargs)
        out = _pytree.unflatten(flat, ospec)
        if not _is_dims(out_dims):
            return False, None
        odims = _pytree.broadcast_prefix(out_dims, out)
        if odims is None:
            return False, None
        now = _creation.default_generator.get_state()
        if not bool((now == start).all()):
            raise _batching.Fallback("random")
        result = []
        for o, b, d in zip(flat, batched, odims):
            if d is None:
                if b:
                    raise _batching.Fallback("batched output with out_dim None")
                result.append(o)
            elif not isinstance(o, Tensor):
                raise _batching.Fallback("non-tensor output")
            elif b:
                r = o.dim()
                if not -r <= d < r:
                    raise _batching.Fallback("out_dim range")
                result.append(o if d % r == 0 else o.movedim(0, d))
            else:
                result.append(stack([o] * size, d))
    except Exception as e:  # noqa: BLE001  (the loop reruns func: torch's result or error)
        _creation.default_generator.set_state(start)
        last_path = f"loop ({type(e).__name__}: {e})"
        return False, None
    last_path = "batched"
    return True, _pytree.unflatten(result, ospec)


def _stack_outputs(results: List[Any], out_dims: Any, size: int, fname: str) -> Any:
    flat0, spec = _pytree.flatten(results[0])
    if not _is_dims(out_dims):
        raise ValueError(f"vmap({fname}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                         "None or a python collection of ints representing where in the outputs "
                         "the vmapped dimension should appear.")
    dims = _pytree.broadcast_prefix(out_dims, results[0])
    if dims is None:
        raise ValueError(f"vmap({fname}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         "compatible with the structure of `outputs`. out_dims has structure "
                         f"{_pytree.flatten(out_dims)[1]} but outputs has structure {spec}.")
    columns = [_pytree.flatten(r)[0] for r in results]
    out = []
    for j, d in enumerate(dims):
        values = [c[j] for c in columns]
        if d is None:
            first = values[0]
            if isinstance(first, Tensor) and any(
                    not (isinstance(v, Tensor) and v.shape == first.shape
                         and bool((v == first).all())) for v in values[1:]):
                # it varies over the batch: torch's "batched" output
                raise ValueError(f"vmap({fname}, ...): `{fname}` can not return a BatchedTensor "
                                 "when out_dim is None")
            out.append(first)
            continue
        for v in values:
            if not isinstance(v, Tensor):
                raise ValueError(f"vmap({fname}, ...): `{fname}` must only return Tensors, got "
                                 f"type {type(v)}. Did you mean to set out_dims= to None for "
                                 "output?")
        if size == 0:
            out.append(values[0].unsqueeze(d).narrow(d, 0, 0))
        else:
            out.append(_batching.dispatch("stack", stack, (values, d), {}))
    return _pytree.unflatten(out, spec)


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0,
         randomness: str = "error", *, chunk_size: Optional[int] = None) -> Callable[..., Any]:
    """Returns a function that maps ``func`` over a batch dimension of its inputs.

    ``vmap(func)(xs)`` equals ``stack([func(x) for x in xs])``. rustgrad calls ``func`` once
    on the whole batch where its batching rules cover the ops it runs (``func`` sees
    per-sample shapes; an op without a rule runs per element inside that call), and
    otherwise once per batch element (a Python value read from a batched tensor, a random
    op, ...). The results, errors, nesting (``vmap(vmap(f))``, ``vmap(grad(f))``) and
    gradients are torch's either way. ``chunk_size`` is only checked.

    Args:
        func (callable): a function of tensors returning a tensor or a tuple/list/dict of
            tensors.
        in_dims (int or tuple): the dimension of each input to map over: an int for all, or a
            tuple with one entry per positional argument (an int, None for an argument that is
            not mapped, or a nested tuple/list/dict for a container argument). Default: 0.
        out_dims (int or tuple): where the batch dimension goes in each output (None: the
            output does not vary over the batch and is returned once). Default: 0.
        randomness (str): ``"error"`` (default: a random op in ``func`` raises), ``"different"``
            (each batch element draws its own numbers) or ``"same"`` (all draw the same
            numbers). Only the default generator is watched.
        chunk_size (int, optional): accepted for torch compatibility (None or positive).

    Example::

        >>> from rustgrad.func import vmap
        >>> vmap(torch.dot)(torch.ones(3, 2), torch.arange(6.0).reshape(3, 2))
        tensor([1., 5., 9.])
    """
    _check_randomness(randomness)
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _call_batched(func, in_dims, out_dims, randomness, args, kwargs)
    return wrapper
