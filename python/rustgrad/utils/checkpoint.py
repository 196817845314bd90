"""Activation checkpointing, as torch.utils.checkpoint: run a segment without keeping the
tensors its ops save for backward, and recompute them when backward needs them.

Two variants, as torch's:

- `use_reentrant=False` (recommended): the segment runs normally under
  `saved_tensors_hooks` whose pack hook keeps only a numbered `_Holder`, so the activations die
  with the forward. When backward first unpacks one, the segment is rerun (with grad mode on,
  the forward's RNG state, and a pack hook that keeps detached copies); the unpacked tensors
  take the original graph's places (see Saved::Packed in rust/python/src/py_value.rs), so
  gradients, hooks and double backward are those of the plain run. Each recomputed tensor is
  dropped once unpacked; a second backward (retain_graph=True) recomputes again.
- `use_reentrant=True`: a custom Function whose forward runs the segment under no_grad and
  whose backward reruns it with grad and calls `autograd.backward` on it from inside the
  engine (a reentrant backward).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .. import _creation, autograd
from .._tensor import Tensor
from ..autograd import Function, backward, enable_grad, no_grad
from ..autograd.graph import saved_tensors_hooks

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "detach_variable",
           "check_backward_validity"]


class CheckpointError(RuntimeError):
    pass


def detach_variable(inputs: Tuple[Any, ...]) -> Tuple[Any, ...]:
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=3)


def _get_rng_state() -> Any:
    return _creation.default_generator._rng.bit_generator.state


def _set_rng_state(state: Any) -> None:
    _creation.default_generator._rng.bit_generator.state = state


class _ForkRng:
    """Runs a block with the RNG set to `state`, restoring the current state after."""

    def __init__(self, state: Any, enabled: bool) -> None:
        self.state = state
        self.enabled = enabled

    def __enter__(self) -> None:
        if self.enabled:
            self.saved = _get_rng_state()
            _set_rng_state(self.state)

    def __exit__(self, *args: object) -> None:
        if self.enabled:
            _set_rng_state(self.saved)


class CheckpointFunction(Function):
    """The reentrant variant (torch's CheckpointFunction)."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable[..., Any], preserve_rng_state: bool,
                *args: Any) -> Any:
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = _get_rng_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx: Any, *args: Any) -> Any:
        if not autograd._is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument."
            )
        inputs = list(ctx.inputs)
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = ctx.saved_tensors[i]
        with _ForkRng(getattr(ctx, "fwd_cpu_state", None), ctx.preserve_rng_state):
            detached_inputs = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outputs_with_grad = []
        args_with_grad = []
        for i in range(len(outputs)):
            if isinstance(outputs[i], Tensor) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp._grad if isinstance(inp, Tensor) else None for inp in detached_inputs)
        return (None, None) + grads


class _Holder:
    """What the forward's pack hook keeps instead of a tensor: its number in the segment."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class _Frame:
    """One checkpointed call of the non-reentrant variant."""

    def __init__(self, fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any],
                 preserve_rng_state: bool, determinism_check: str) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.preserve = preserve_rng_state
        self.rng_state = _get_rng_state() if preserve_rng_state else None
        self.check = determinism_check
        self.n_saved = 0
        self.recomputed: Dict[int, Tensor] = {}

    def pack(self, x: Tensor) -> _Holder:
        holder = _Holder(self.n_saved)
        self.n_saved += 1
        return holder

    def unpack(self, holder: _Holder) -> Tensor:
        if holder.index not in self.recomputed:
            self.recompute()
        return self.recomputed.pop(holder.index)

    def recompute(self) -> None:
        saved: List[Tensor] = []

        def keep(x: Tensor) -> None:
            saved.append(x.detach())

        def refuse(_: Any) -> Any:
            raise CheckpointError(
                "torch.utils.checkpoint: the recomputed graph of a checkpointed segment is not "
                "differentiable"
            )

        with _ForkRng(self.rng_state, self.preserve), enable_grad(), \
                saved_tensors_hooks(keep, refuse):
            self.fn(*self.args, **self.kwargs)
        if self.check != "none" and len(saved) != self.n_saved:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {self.n_saved}\n"
                f"Number of tensors saved during recomputation: {len(saved)}.\n"
            )
        self.recomputed = dict(enumerate(saved))


def _noop_context_fn() -> Tuple[Any, Any]:
    return contextlib.nullcontext(), contextlib.nullcontext()


class _CheckpointedFunction:
    """checkpoint(**options) used as a decorator: each call is checkpointed with the options
    (and, as a method decorator, binds to its instance)."""

    def __init__(self, function: Callable[..., Any], **options: Any) -> None:
        self.function = function
        self.options = dict(options)
        functools.update_wrapper(self, function, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _checkpoint_impl(self.function, args, kwargs, **self.options)

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        get = getattr(self.function, "__get__", None)
        if instance is None or get is None:
            return self
        return type(self)(get(instance, owner), **self.options)


def checkpoint(function: Optional[Callable[..., Any]] = None, *args: Any,
               use_reentrant: Optional[bool] = None,
               context_fn: Callable[[], Tuple[Any, Any]] = _noop_context_fn,
               determinism_check: str = "default", debug: bool = False,
               early_stop: bool = True, **kwargs: Any) -> Any:
    """`function(*args, **kwargs)`, keeping none of its activations for backward: backward
    recomputes them. Gradients are those of the plain call. Without a function, a decorator
    that checkpoints every call of the function it wraps."""
    options = dict(use_reentrant=use_reentrant, context_fn=context_fn,
                   determinism_check=determinism_check, debug=debug, early_stop=early_stop)
    if function is None and not args:
        if "preserve_rng_state" in kwargs:
            options["preserve_rng_state"] = kwargs.pop("preserve_rng_state")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
        return functools.partial(_CheckpointedFunction, **options)
    assert function is not None
    return _checkpoint_impl(function, args, kwargs, stacklevel=3, **options)


def _checkpoint_impl(function: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any],
                     *, use_reentrant: Optional[bool], context_fn: Callable[[], Tuple[Any, Any]],
                     determinism_check: str, debug: bool, early_stop: bool,
                     preserve_rng_state: bool = True, stacklevel: int = 3) -> Any:
    kwargs = dict(kwargs)
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "In a future release, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=stacklevel,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", preserve_rng_state)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not _noop_context_fn or debug is not False:
            raise ValueError(
                "Passing `context_fn`, `debug`, or `respect_saved_tensors_hooks` is only "
                "supported when use_reentrant=False."
            )
        return CheckpointFunction.apply(function, preserve, *args)
    frame = _Frame(function, args, kwargs, preserve, determinism_check)
    forward_ctx, _ = context_fn()
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_ctx:
        return function(*args, **kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any,
                          use_reentrant: Optional[bool] = None, **kwargs: Any) -> Any:
    """Runs `functions` (a list or an nn.Sequential) in `segments` parts, all but the last
    checkpointed."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
            "passed explicitly. In a future release, we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start: int, end: int, functions: Any) -> Callable[[Any], Any]:
        def forward(input: Any) -> Any:
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
