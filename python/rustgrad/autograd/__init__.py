"""rustgrad.autograd: backward, grad, grad modes, custom Functions, functional higher-order
derivatives, saved-tensor hooks, anomaly detection, gradcheck and gradgradcheck, as
torch.autograd."""

from __future__ import annotations

# _thread, not threading: the same local() class, and `import rustgrad` skips threading (~2 ms)
import _thread
import sys
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Optional, Sequence, Tuple, Union

from .. import _backends, _core, _creation, _tensor, _warn_once
from .._legacy import Variable  # noqa: F401  (deprecated, as in torch)
from .._ops._util import sum_to as _sum_to
from .._tensor import Tensor
from . import graph  # noqa: F401
from ._switches import (  # noqa: F401  (torch's engine switches)
    _force_original_view_tracking,
    enforce_grad_layout_policy,
    is_multithreading_enabled,
    is_view_replay_enabled,
    set_multithreading_enabled,
)
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .function import Function, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .provenance import (
    is_provenance_enabled,
    is_strict_data,
    set_provenance,
    set_strict_data,
    trace_hooks,
)

if TYPE_CHECKING:  # imported on first use (__getattr__ below); type checkers see them here
    from . import functional
    from ._reach import who_gets_grad

_TensorOrTensors = Union[Tensor, Sequence[Tensor]]

__all__ = [
    "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
    "is_grad_enabled", "is_inference_mode_enabled", "gradcheck", "gradgradcheck", "Function",
    "once_differentiable", "detect_anomaly", "set_detect_anomaly", "functional", "graph",
    # rustgrad's explainability tools (README "Seeing your graph")
    "set_provenance", "is_provenance_enabled", "set_strict_data", "is_strict_data",
    "trace_hooks", "who_gets_grad",
]

def _as_tuple(x: Any) -> Tuple[Any, ...]:
    if x is None:
        return ()
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _inputs_tuple(inputs: Any, fn: str) -> Tuple[Any, ...]:
    """torch's `inputs`: a tensor, a sequence, or a dict (its values; other Mappings refused)."""
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, Mapping):
        raise TypeError(
            f"`inputs` argument to `{fn}()` must be a dict, not {type(inputs).__name__}. "
            "Other Mapping types are not supported."
        )
    return _as_tuple(inputs)


def _make_grads(outputs: Tuple[Tensor, ...], grads: Tuple[Any, ...]) -> Tuple[Tensor, ...]:
    """torch's _make_grads: implicit ones for scalar outputs, shape checks otherwise."""
    out = []
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if o.requires_grad:
                if o.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not o.is_floating_point():
                    raise RuntimeError(
                        "grad can be implicitly created only for real scalar outputs but got "
                        f"{o.dtype}"
                    )
                out.append(_creation.ones_like(o))
            else:
                out.append(None)
            continue
        if not isinstance(g, Tensor):
            raise TypeError(
                f"gradients can be either Tensors or None, but got {type(g).__name__}"
            )
        if g.shape != o.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] "
                f"has a shape of {o.shape}."
            )
        if g.dtype != o.dtype and o.dtype.is_floating_point:
            # torch's engine casts the gradient (an integer or bool one too) to the output's
            # dtype; its dtype-mismatch error is for complex outputs, which rustgrad lacks
            g = g.to(o.dtype)
        out.append(g)
    return tuple(out)


def backward(
    tensors: _TensorOrTensors,
    grad_tensors: Optional[_TensorOrTensors] = None,
    retain_graph: Optional[bool] = None,
    create_graph: bool = False,
    grad_variables: Any = None,
    inputs: Optional[_TensorOrTensors] = None,
) -> None:
    """Accumulates into `.grad` of the leaves (or of `inputs`) the gradient of `tensors`.

    Runs the backward graph from `tensors`, weighting each by its entry of `grad_tensors`
    (the vector of the vector-Jacobian product), and adds the result into ``.grad`` of every leaf
    reached that requires grad, and of non-leaves that called `retain_grad`. ``.grad`` is never
    overwritten, only added to. `Tensor.backward` calls this.

    Args:
        tensors (Tensor or sequence of Tensor): the roots whose gradient is computed.
        grad_tensors (Tensor or sequence of Tensor or None, optional): the gradient with
            respect to each root; None for a one-element root means 1.
        retain_graph (bool, optional): keep the graph's saved tensors, to run backward through
            it again. Defaults to ``create_graph``.
        create_graph (bool): record the backward pass, so the gradients themselves have a graph
            (higher-order derivatives). Default: ``False``.
        grad_variables: the deprecated name of `grad_tensors`.
        inputs (Tensor or sequence of Tensor, optional): accumulate only into these tensors'
            ``.grad`` (leaves or not); the rest of the graph's leaves are left alone.

    Example::

        >>> x = torch.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x * x
        >>> torch.autograd.backward(y, torch.tensor([1.0, 0.5]))
        >>> x.grad
        tensor([2., 2.])
    """
    roots = _as_tuple(tensors)
    if grad_tensors is None:
        grads: Tuple[Any, ...] = (None,) * len(roots)
    else:
        grads = _as_tuple(grad_tensors) if not isinstance(grad_tensors, Tensor) else (grad_tensors,)
    if len(grads) != len(roots):
        raise RuntimeError(
            f"got {len(grads)} tensors and {len(roots)} gradients"
        )
    ins = _inputs_tuple(inputs, "backward")
    if inputs is not None and len(ins) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    for t in ins:
        if t.requires_grad and not t.is_leaf:
            t.retain_grad()
    keep = create_graph if retain_graph is None else retain_graph
    if create_graph:
        _warn_create_graph_once()
    with _checkpoint_valid(not ins), _quiet_floats():
        _core.run_backward(
            roots, _make_grads(roots, grads), keep_graph=keep, create_graph=create_graph,
            inputs=ins, accumulate_grad=True,
        )


def _quiet_floats() -> Any:
    """Backward formulas divide by zero or take inf - inf where torch silently gives inf/nan
    (sqrt's gradient at 0): NumPy's floating-point warnings are off for one backward."""
    return _backends.host_errstate(divide="ignore", invalid="ignore", over="ignore")


_checkpoint_state = _thread._local()


class _checkpoint_valid:
    """Whether the backward running now may run a reentrant checkpoint (torch's
    `_is_checkpoint_valid`: not under autograd.grad nor backward(inputs=...))."""

    def __init__(self, valid: bool) -> None:
        self.valid = valid

    def __enter__(self) -> None:
        self.prev = getattr(_checkpoint_state, "valid", True)
        _checkpoint_state.valid = self.valid

    def __exit__(self, *args: object) -> None:
        _checkpoint_state.valid = self.prev


def _is_checkpoint_valid() -> bool:
    return getattr(_checkpoint_state, "valid", True)


def _warn_create_graph_once() -> None:
    """torch's TORCH_WARN_ONCE for backward(create_graph=True)."""
    if not _warn_once.due("backward(create_graph=True)"):
        return
    warnings.warn(
        "Using backward() with create_graph=True will create a reference cycle between the "
        "parameter and its gradient which can cause a memory leak. We recommend using "
        "autograd.grad when creating the graph to avoid this. If you have to use this "
        "function, make sure to reset the .grad fields of your parameters to None after use "
        "to break the cycle and avoid the leak.",
        UserWarning,
        stacklevel=3,
    )


def grad(
    outputs: _TensorOrTensors,
    inputs: _TensorOrTensors,
    grad_outputs: Optional[_TensorOrTensors] = None,
    retain_graph: Optional[bool] = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: Optional[bool] = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> Tuple[Optional[Tensor], ...]:
    """The gradients of `outputs` with respect to `inputs`; never touches `.grad`.

    Returns one entry per input: the sum over outputs of the vector-Jacobian product with
    `grad_outputs`. Unlike `backward`, nothing is accumulated into any ``.grad``. With
    ``create_graph=True`` the returned gradients have a graph of their own, so they can be
    differentiated again.

    Args:
        outputs (Tensor or sequence of Tensor): the tensors to differentiate.
        inputs (Tensor or sequence of Tensor): the tensors to differentiate with respect to.
        grad_outputs (Tensor or sequence of Tensor, optional): the gradient with respect to
            each output; None for a one-element output means 1.
        retain_graph (bool, optional): keep the graph for another backward. Defaults to
            ``create_graph``.
        create_graph (bool): record the backward pass (for higher-order derivatives).
            Default: ``False``.
        only_inputs (bool): deprecated and ignored, as in torch.
        allow_unused (bool, optional): give None for an input the outputs do not depend on,
            instead of raising. Default: ``False`` (``True`` when `materialize_grads`).
        is_grads_batched (bool): treat the first dimension of each of `grad_outputs` as a
            batch, computing one vector-Jacobian product per entry. Default: ``False``.
        materialize_grads (bool): give zeros instead of None for unused inputs.
            Default: ``False``.

    Example::

        >>> x = torch.tensor(3.0, requires_grad=True)
        >>> y = x ** 3
        >>> (dy,) = torch.autograd.grad(y, x, create_graph=True)
        >>> dy
        tensor(27., grad_fn=<MulBackward0>)
        >>> torch.autograd.grad(dy, x)
        (tensor(18.),)
        >>> x.grad is None
        True
    """
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _as_tuple(outputs)
    ins = _inputs_tuple(inputs, "grad")
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To "
            "accumulate gradient for other parts of the graph, please use "
            "torch.autograd.backward.",
            FutureWarning,
            stacklevel=2,
        )
    if is_grads_batched:
        raise NotImplementedError(
            "rustgrad.autograd.grad: is_grads_batched=True needs a batched backward, which "
            "rustgrad's engine does not have; call grad once per row of grad_outputs instead."
        )
    gos = (None,) * len(outs) if grad_outputs is None else _as_tuple(grad_outputs)
    if len(gos) < len(outs):
        raise RuntimeError(f"got {len(outs)} tensors and {len(gos)} gradients")
    gos = gos[: len(outs)]
    keep = create_graph if retain_graph is None else retain_graph
    with _checkpoint_valid(False), _quiet_floats():
        result = _core.run_backward(
            outs, _make_grads(outs, gos), keep_graph=keep, create_graph=create_graph,
            inputs=ins, accumulate_grad=False,
        )
    out = []
    for i, (t, g) in enumerate(zip(ins, result)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:
                g = _creation.zeros_like(t, requires_grad=create_graph)  # as torch
        out.append(g)
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), out))  # type: ignore[return-value]
    return tuple(out)


def _accumulate_grad(
    leaf: Tensor, new: Tensor, how: Literal["copy", "add_in_place", "add_out_of_place"]
) -> None:
    """The array math of torch's AccumulateGrad, as the engine decided it (Note [Stealing a
    gradient], rust/core/src/accumulate.rs): "copy" makes a copy of `new` the leaf's `.grad`
    (recorded, as torch's CopyBackwards, under create_graph), "add_in_place" adds `new` into
    `.grad`, "add_out_of_place" sets `.grad` to `.grad + new` (recorded under create_graph). A
    gradient the engine keeps as it is never comes here."""
    if new._data.dtype != leaf._data.dtype:
        new = new.to(leaf.dtype)
    if new._data.shape != leaf._data.shape:
        if len(new._data.shape) >= len(leaf._data.shape):
            new = _sum_to(new, leaf._data.shape)
        if new._data.shape != leaf._data.shape:
            raise RuntimeError(
                f"Function AccumulateGrad returned an invalid gradient - got {list(new.shape)} "
                f"but expected shape compatible with {list(leaf.shape)}"
            )
    if how == "copy":
        if not is_grad_enabled():
            leaf._grad = new.clone()
            return
        grad = _creation.empty_like(new)
        grad.copy_(new)  # recorded as torch's CopyBackwards
        leaf._grad = grad
    elif how == "add_in_place":
        old = leaf._grad
        od = old._data
        od += new._data
        old._bump_version()
    else:
        leaf._grad = leaf._grad + new


def __getattr__(name: str) -> Any:
    """`who_gets_grad`, imported on first use: its module and the explain machinery it uses
    (dataclasses, ~5 ms) are not needed by `import rustgrad`; `profiler` and `profiler_util`
    (torch.autograd.profiler), `forward_ad` and `functional` (jacobian, hessian: ~10 ms with the
    op families it imports), submodules imported on first use likewise."""
    if name in ("profiler", "profiler_util", "forward_ad", "functional"):
        import importlib  # import-time cost: only this first use needs it

        return importlib.import_module(f"{__name__}.{name}")
    if name == "who_gets_grad":
        from ._reach import who_gets_grad  # import-time cost: see above

        globals()[name] = who_gets_grad  # later uses find it directly
        return who_gets_grad
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# the modules that use backward and grad, imported once the package defines them
from .gradcheck import gradcheck, gradgradcheck  # noqa: E402

# Tensor.backward and Tensor.__deepcopy__ reach this package through the tensor module, which
# sits below it (a private hook: the generated _tensor.pyi describes the Tensor class only)
_tensor._autograd = sys.modules[__name__]  # type: ignore[attr-defined]
