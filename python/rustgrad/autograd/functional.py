"""Derivatives of a whole function: `vjp`, `jvp`, `jacobian`, `hessian`, `vhp` and `hvp`, with
torch.autograd.functional's arguments, result structure and errors, computed with
`autograd.grad`.

Every entry point takes the same steps:

1. `inputs` (and `v`) become tuples of Tensors; whether the caller passed a bare Tensor or a
   tuple decides whether each level of the result is a bare Tensor or a tuple (`_unpack`).
2. `func` runs under enable_grad on stand-ins of the inputs (`_stand_ins`): fresh leaves that
   require grad, so derivatives exist even for a caller under no_grad and the caller's `.grad`
   fields are never touched; with create_graph, an input that requires grad is stood in for by a
   view of itself, so the results stay differentiable with respect to the caller's tensors.
3. `autograd.grad` with allow_unused; an input the outputs do not reach gets zeros, or, under
   strict=True, the error torch raises at that stage (`_complete`).
4. Without create_graph every returned tensor is detached.

Forward products (`jvp`, `hvp`) use the double-backward trick (`_forward_product`): for `u`, a
zero cotangent that requires grad, `g(u) = J^T u` is linear in `u`, so the vector-Jacobian
product of `g` with `v` is `J v`. It costs two backward passes where forward-mode AD would cost
one forward pass (rustgrad's autograd.forward_ad is itself built on this trick).

Note [No vmap]: torch's `vectorize=True` computes all rows of a Jacobian in one batched backward
(vmap over `autograd.grad(..., is_grads_batched=True)`). rustgrad's engine has no batched
backward, so `vectorize=True` computes the same values one row at a time, as `vectorize=False`
does. What
torch ties to the flag is kept: strict=True is refused, and each input's blocks are cut from one
gradient for all outputs (so under create_graph they share requires_grad). `strategy=
"forward-mode"` is not routed through `autograd.forward_ad`: the errors torch raises for it are
raised as torch raises them, and where torch would compute, NotImplementedError.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple, Union

from .._creation import ones_like, zeros_like
from .._ops.joins import stack
from .._tensor import Tensor
from . import grad  # autograd/__init__ defines grad before it imports this module
from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

TensorOrTensors = Union[Tensor, Tuple[Tensor, ...]]
Jacobian = Union[Tensor, Tuple[Tensor, ...], Tuple[Tuple[Tensor, ...], ...]]

_STRATEGIES = ("forward-mode", "reverse-mode")

# ---- strict mode: torch's phrase for each stage at which a derivative can be missing ------------
_OUTPUT_NO_GRAD = (
    "Output {} of the user-provided function does not require gradients. The outputs must be "
    "computed in a differentiable manner from the input when running in strict mode."
)
_OUTPUT_INDEPENDENT = (
    "The output of the user-provided function is independent of input {}. This is not allowed in "
    "strict mode."
)
# torch's wording says "input" also where the index is that of an output (jvp, jacobian)
_JACOBIAN_CONSTANT = (
    "The jacobian of the user-provided function is independent of input {}. This is not allowed "
    "in strict mode when create_graph=True."
)
_JVP_TRICK = (
    "The gradient with respect to the input is independent of entry {} in the grad_outputs when "
    "using the double backward trick to compute forward mode gradients. This is not allowed in "
    "strict mode."
)
_JACOBIAN_BLOCK = (
    "Output {} of the user-provided function is independent of input {}. This is not allowed in "
    "strict mode."
)
_GRADIENT_CONSTANT = (
    "While computing the hessian, found that the jacobian of the user-provided function with "
    "respect to input {} is independent of the input. This is not allowed in strict mode. You "
    "should ensure that your function is twice differentiable and that the jacobian depends on "
    "the inputs (this would be violated by a linear function for example)."
)
_VHP_INDEPENDENT = (
    "The jacobian of the user-provided function is independent of input {}. This is not allowed "
    "in strict mode."
)
_HVP_TRICK = (
    "The hessian of the user-provided function is independent of entry {} in the grad_jacobian. "
    "This is not allowed in strict mode as it prevents from using the double backward trick to "
    "replace forward mode AD."
)
_HESSIAN_CONSTANT = (
    "The hessian of the user-provided function is independent of input {}. This is not allowed "
    "in strict mode when create_graph=True."
)

_Message = Callable[[int], str]


# ---- arguments and results --------------------------------------------------------------------
def _as_tuple(value: Any, what: str, fn: str) -> Tuple[Tuple[Tensor, ...], bool]:
    """`value` as a tuple of Tensors, and whether it was a tuple (a bare Tensor is not)."""
    head = f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but "
    if isinstance(value, Tensor):
        return (value,), False
    if not isinstance(value, tuple):
        raise TypeError(head + f"the given {what} has type {type(value)}.")
    for i, item in enumerate(value):
        if not isinstance(item, Tensor):
            raise TypeError(head + f"the value at index {i} has type {type(item)}.")
    return value, True


def _unpack(items: Tuple[Any, ...], was_tuple: bool) -> Any:
    return items if was_tuple else items[0]


def _check_v(v: Tuple[Tensor, ...], like: Tuple[Tensor, ...], like_is_tuple: bool) -> None:
    """`v` pairs one tensor of `like`'s shape with each tensor of `like`."""
    if len(v) != len(like):
        if like_is_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(like)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for vi, ref in zip(v, like):
        if vi.shape != ref.shape:
            raise RuntimeError(f"v has invalid size: should be {ref.shape} but got {vi.shape}.")


def _v_for_inputs(v: Any, inputs: Tuple[Tensor, ...], inputs_tuple: bool,
                  fn: str) -> Tuple[Tensor, ...]:
    """The `v` of jvp, vhp and hvp: a tangent per input; may be None for one 1-element input."""
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a "
                "single Tensor with a single element."
            )
        return (ones_like(inputs[0]),)
    vs, _ = _as_tuple(v, "v", fn)
    _check_v(vs, inputs, inputs_tuple)
    return vs


def _stand_ins(inputs: Tuple[Tensor, ...], create_graph: bool) -> Tuple[Tensor, ...]:
    """What `func` is called with (step 2 of the module's docstring); run under enable_grad."""
    return tuple(
        t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(True)
        for t in inputs
    )


def _call(func: Callable[..., Any], inputs: Tuple[Tensor, ...],
          fn: str) -> Tuple[Tuple[Tensor, ...], bool]:
    return _as_tuple(func(*inputs), "outputs of the user-provided function", fn)


def _check_differentiable(outputs: Tuple[Tensor, ...], strict: bool) -> None:
    if strict:
        for i, out in enumerate(outputs):
            if not out.requires_grad:
                raise RuntimeError(_OUTPUT_NO_GRAD.format(i))


def _scalar_output(func: Callable[..., Any], inputs: Tuple[Tensor, ...], fn: str,
                   strict: bool) -> Tensor:
    """The single one-element Tensor that hessian's, vhp's and hvp's `func` must return."""
    outputs, was_tuple = _call(func, inputs, fn)
    if was_tuple:
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn} should contain a single element"
        )
    _check_differentiable(outputs, strict)
    return outputs[0]


def _finish(tensors: Sequence[Tensor], create_graph: bool) -> Tuple[Tensor, ...]:
    return tuple(tensors) if create_graph else tuple(t.detach() for t in tensors)


# ---- derivatives --------------------------------------------------------------------------------
def _grad(outputs: Sequence[Tensor], inputs: Sequence[Tensor],
          grad_outputs: Sequence[Optional[Tensor]], create_graph: bool,
          retain_graph: Optional[bool] = None) -> Tuple[Optional[Tensor], ...]:
    """autograd.grad over the outputs that require grad (the others contribute nothing); None
    for an input none of them reaches."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    cotangents: Any = tuple(g for _, g in pairs)  # a None is grad's implicit ones
    return grad(
        tuple(o for o, _ in pairs), tuple(inputs), cotangents,
        retain_graph=retain_graph, create_graph=create_graph, allow_unused=True,
    )


def _complete(grads: Sequence[Optional[Tensor]], like: Sequence[Tensor], strict: bool,
              create_graph: bool, missing: _Message,
              constant: Optional[_Message]) -> Tuple[Tensor, ...]:
    """Zeros (of `like[i]`'s shape) for each missing gradient. Under strict, a missing gradient
    raises `missing(i)`, and, with create_graph, so does one that does not require grad
    (`constant(i)`): its own derivative would be missing. Checked in input order."""
    out = []
    for i, (g, ref) in enumerate(zip(grads, like)):
        if g is None:
            if strict:
                raise RuntimeError(missing(i))
            g = zeros_like(ref)
        elif strict and create_graph and constant is not None and not g.requires_grad:
            raise RuntimeError(constant(i))
        out.append(g)
    return tuple(out)


def _forward_product(outputs: Tuple[Tensor, ...], inputs: Tuple[Tensor, ...],
                     v: Tuple[Tensor, ...], create_graph: bool, strict: bool,
                     unreached: Optional[_Message], trick: _Message,
                     constant: _Message) -> Tuple[Tensor, ...]:
    """J v, J the Jacobian of `outputs` with respect to `inputs`, by the double-backward trick.
    `unreached` is the strict error for an input the outputs do not reach (None: no check at
    this stage); `trick` for an output whose cotangent the first backward ignores."""
    cotangents = tuple(zeros_like(o, requires_grad=True) for o in outputs)
    jt_u = _grad(outputs, inputs, cotangents, create_graph=True)
    if strict and unreached is not None:
        for i, g in enumerate(jt_u):
            if g is None:
                raise RuntimeError(unreached(i))
    # an input the outputs do not reach adds nothing to J v: dropped with its tangent
    kept = [(g, t) for g, t in zip(jt_u, v) if g is not None]
    jv = _grad([g for g, _ in kept], cotangents, [t for _, t in kept], create_graph)
    return _complete(jv, outputs, strict, create_graph, trick, constant)


def _gradient(output: Tensor, inputs: Tuple[Tensor, ...], strict: bool) -> Tuple[Tensor, ...]:
    """The gradient of a one-element output, itself differentiable (the first half of every
    second derivative); strict requires each part of it to depend on the inputs."""
    grads = _grad((output,), inputs, (None,), create_graph=True)
    return _complete(grads, inputs, strict, True, _GRADIENT_CONSTANT.format,
                     _GRADIENT_CONSTANT.format)


def _jacobian(outputs: Tuple[Tensor, ...], inputs: Tuple[Tensor, ...], create_graph: bool,
              strict: bool, vectorize: bool) -> Tuple[Tuple[Tensor, ...], ...]:
    """Block `[i][j]`, d outputs[i] / d inputs[j], of shape outputs[i].shape + inputs[j].shape:
    one backward per output element (see Note [No vmap])."""
    # rows[i][j]: the gradient of each element of outputs[i] with respect to inputs[j]
    rows: list = [[[] for _ in inputs] for _ in outputs]
    for i, out in enumerate(outputs):
        flat = out.reshape(-1)
        for k in range(flat.numel()):
            grads = _grad((flat[k],), inputs, (None,), create_graph, retain_graph=True)
            grads = _complete(grads, inputs, strict, create_graph,
                              lambda j, i=i: _JACOBIAN_BLOCK.format(i, j),
                              lambda j, i=i: _JACOBIAN_CONSTANT.format(i))
            for j, g in enumerate(grads):
                rows[i][j].append(g)

    def shape(i: int, j: int) -> Tuple[int, ...]:
        return tuple(outputs[i].shape) + tuple(inputs[j].shape)

    # an output with no elements fails at stack, as in torch
    if not vectorize:
        return tuple(tuple(stack(rows[i][j]).view(shape(i, j)) for j in range(len(inputs)))
                     for i in range(len(outputs)))
    # torch's batched backward gives one gradient per input for all output elements, cut into
    # blocks: stacked the same way, a block requires grad when any block of its input does
    columns = [stack([g for per_output in rows for g in per_output[j]]) for j in range(len(inputs))]
    starts = [0]
    for out in outputs:
        starts.append(starts[-1] + out.numel())
    return tuple(
        tuple(columns[j][starts[i]:starts[i + 1]].view(shape(i, j)) for j in range(len(inputs)))
        for i in range(len(outputs))
    )


# ---- public API ---------------------------------------------------------------------------------
def vjp(
    func: Callable[..., TensorOrTensors],
    inputs: TensorOrTensors,
    v: Optional[TensorOrTensors] = None,
    create_graph: bool = False,
    strict: bool = False,
) -> Tuple[TensorOrTensors, TensorOrTensors]:
    """`(func(*inputs), v^T J)`: the vector-Jacobian product, one tensor per input. `v` (one
    per output) may be None only when func returns a single one-element Tensor."""
    with enable_grad():
        xs, inputs_tuple = _as_tuple(inputs, "inputs", "vjp")
        xs = _stand_ins(xs, create_graph)
        outputs, outputs_tuple = _call(func, xs, "vjp")
        _check_differentiable(outputs, strict)
        if v is None:
            if len(outputs) != 1 or outputs[0].numel() != 1:
                raise RuntimeError(
                    "The vector v can only be None if the user-provided function returns a "
                    "single Tensor with a single element."
                )
            vs: Tuple[Optional[Tensor], ...] = (None,)  # grad's implicit ones
        else:
            vs, _ = _as_tuple(v, "v", "vjp")
            _check_v(vs, outputs, outputs_tuple)
        grads = _grad(outputs, xs, vs, create_graph)
        grads = _complete(grads, xs, strict, create_graph, _OUTPUT_INDEPENDENT.format,
                          _JACOBIAN_CONSTANT.format)
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(grads, create_graph), inputs_tuple))


def jvp(
    func: Callable[..., TensorOrTensors],
    inputs: TensorOrTensors,
    v: Optional[TensorOrTensors] = None,
    create_graph: bool = False,
    strict: bool = False,
) -> Tuple[TensorOrTensors, TensorOrTensors]:
    """`(func(*inputs), J v)`: the Jacobian-vector product, one tensor per output. `v` (one per
    input) may be None only for a single one-element input. Computed by the double-backward
    trick (see the module's docstring)."""
    with enable_grad():
        xs, inputs_tuple = _as_tuple(inputs, "inputs", "jvp")
        xs = _stand_ins(xs, create_graph)
        vs = _v_for_inputs(v, xs, inputs_tuple, "jvp")
        outputs, outputs_tuple = _call(func, xs, "jvp")
        _check_differentiable(outputs, strict)
        jv = _forward_product(outputs, xs, vs, create_graph, strict, _OUTPUT_INDEPENDENT.format,
                              _JVP_TRICK.format, _JACOBIAN_CONSTANT.format)
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(jv, create_graph), outputs_tuple))


def jacobian(
    func: Callable[..., TensorOrTensors],
    inputs: TensorOrTensors,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Jacobian:
    """The Jacobian of `func` at `inputs`: block `[i][j]` (output i, input j) has shape
    `outputs[i].shape + inputs[j].shape`; a level is a bare Tensor where func returns, or
    `inputs` is, a bare Tensor. `vectorize=True` gives the same values (see Note [No vmap]);
    `strategy="forward-mode"` raises NotImplementedError (rustgrad has no forward-mode AD)."""
    name = "rustgrad.autograd.functional.jacobian"
    if strategy not in _STRATEGIES:
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    # in torch's order: these two come before the check of `inputs`, the next one after it
    if strategy == "forward-mode" and create_graph:
        raise NotImplementedError(
            f'{name}: `create_graph=True` and `strategy="forward-mode"` are not supported '
            'together (yet). Please either set `create_graph=False` or `strategy="reverse-mode"`.'
        )
    if strategy == "forward-mode" and strict:
        raise RuntimeError(
            f'{name}: `strict=True` and `strategy="forward-mode"` are not supported together '
            '(yet). Please either set `strict=False` or `strategy="reverse-mode"`.'
        )
    with enable_grad():
        xs, inputs_tuple = _as_tuple(inputs, "inputs", "jacobian")
        if strategy == "forward-mode" and not vectorize:
            # torch's message, its missing space included
            raise NotImplementedError(
                "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                "only implemented for `vectorize=True`."
            )
        xs = _stand_ins(xs, create_graph)
        outputs, outputs_tuple = _call(func, xs, "jacobian")
        if strategy == "forward-mode":
            # torch evaluates func first, so its errors come before this one
            raise NotImplementedError(
                f'{name}: strategy="forward-mode" needs forward-mode AD, which rustgrad does not '
                'have; use strategy="reverse-mode".'
            )
        _check_differentiable(outputs, strict)
        if strict and vectorize:
            raise RuntimeError(
                f"{name}: `strict=True` and `vectorized=True` are not supported together. Please "
                "either set `strict=False` or `vectorize=False`."
            )
        blocks = _jacobian(outputs, xs, create_graph, strict, vectorize)
    return _unpack(tuple(_unpack(_finish(row, create_graph), inputs_tuple) for row in blocks),
                   outputs_tuple)


def hessian(
    func: Callable[..., Tensor],
    inputs: TensorOrTensors,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Union[Tensor, Tuple[Tuple[Tensor, ...], ...]]:
    """The Hessian of a function returning one one-element Tensor: the Jacobian of its
    gradient. Block `[i][j]` has shape `inputs[i].shape + inputs[j].shape`; a bare Tensor for a
    bare Tensor input. `outer_jacobian_strategy` is jacobian's `strategy`."""
    xs, inputs_tuple = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def gradient(*stand_ins: Tensor) -> Tuple[Tensor, ...]:
        output = _scalar_output(func, stand_ins, "hessian", strict)
        return _gradient(output, stand_ins, strict)

    blocks: Any = jacobian(gradient, xs, create_graph, strict, vectorize, outer_jacobian_strategy)
    return _unpack(tuple(_unpack(row, inputs_tuple) for row in blocks), inputs_tuple)


def vhp(
    func: Callable[..., Tensor],
    inputs: TensorOrTensors,
    v: Optional[TensorOrTensors] = None,
    create_graph: bool = False,
    strict: bool = False,
) -> Tuple[Tensor, TensorOrTensors]:
    """`(func(*inputs), v^T H)` for a function returning one one-element Tensor, H its Hessian:
    two backward passes. `v` (one per input) may be None only for a single one-element input."""
    with enable_grad():
        xs, inputs_tuple = _as_tuple(inputs, "inputs", "vhp")
        xs = _stand_ins(xs, create_graph)
        vs = _v_for_inputs(v, xs, inputs_tuple, "vhp")
        output = _scalar_output(func, xs, "vhp", strict)
        gradient = _gradient(output, xs, strict)
        product = _grad(gradient, xs, vs, create_graph)
        product = _complete(product, xs, strict, create_graph, _VHP_INDEPENDENT.format,
                            _HESSIAN_CONSTANT.format)
    return (_finish((output,), create_graph)[0],
            _unpack(_finish(product, create_graph), inputs_tuple))


def hvp(
    func: Callable[..., Tensor],
    inputs: TensorOrTensors,
    v: Optional[TensorOrTensors] = None,
    create_graph: bool = False,
    strict: bool = False,
) -> Tuple[Tensor, TensorOrTensors]:
    """`(func(*inputs), H v)` for a function returning one one-element Tensor, H its Hessian.
    Computed as the Jacobian-vector product of the gradient (double-backward trick), so it does
    not assume H symmetric; where it is (func twice continuously differentiable), vhp gives the
    same values with one backward pass less."""
    with enable_grad():
        xs, inputs_tuple = _as_tuple(inputs, "inputs", "hvp")
        xs = _stand_ins(xs, create_graph)
        vs = _v_for_inputs(v, xs, inputs_tuple, "hvp")
        output = _scalar_output(func, xs, "hvp", strict)
        gradient = _gradient(output, xs, strict)
        # torch checks only the last backward here: an input no part of the gradient depends
        # on also leaves that part's cotangent unused, reported as `_HVP_TRICK`
        product = _forward_product(gradient, xs, vs, create_graph, strict, None,
                                   _HVP_TRICK.format, _HESSIAN_CONSTANT.format)
    return (_finish((output,), create_graph)[0],
            _unpack(_finish(product, create_graph), inputs_tuple))
