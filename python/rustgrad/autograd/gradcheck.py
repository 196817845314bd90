"""gradcheck and gradgradcheck: compare analytical gradients (and gradients of gradients) with
central finite differences, in float64, with torch's defaults (eps=1e-6, atol=1e-5, rtol=1e-3).

Jacobians are arrays of the inputs' own backend (NumPy or CuPy), so a check runs on any device.
The finite differences run with grad mode as the caller has it: gradgradcheck's function takes
an `autograd.grad(..., create_graph=True)` inside, which needs a graph."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence, Tuple, Union

from .. import _creation
from .._tensor import Tensor
from . import grad  # autograd/__init__ defines grad before it imports this module


class GradcheckError(RuntimeError):
    """Raised by `gradcheck` and `gradgradcheck` when the gradients disagree."""
    pass


def _as_tuple(x: Any) -> Tuple[Any, ...]:
    if isinstance(x, tuple):
        return x
    return tuple(x) if isinstance(x, list) else (x,)


def _numerical_jacobian(fn: Callable, inputs: Tuple[Any, ...], out_index: int, eps: float) -> list:
    """d out[out_index] / d input, per differentiable input, by central differences."""
    jacs = []
    for inp in inputs:
        if not (isinstance(inp, Tensor) and inp.requires_grad):
            jacs.append(None)
            continue
        xp = inp._backend
        flat = inp._data.reshape(-1)  # a view: perturbing it perturbs the input
        out0 = _as_tuple(fn(*inputs))[out_index]
        jac = xp.zeros((flat.size, out0.numel()))
        for i in range(flat.size):
            orig = flat[i].copy()
            flat[i] = orig + eps
            plus = _as_tuple(fn(*inputs))[out_index].detach()._data.astype(xp.float64)
            flat[i] = orig - eps
            minus = _as_tuple(fn(*inputs))[out_index].detach()._data.astype(xp.float64)
            flat[i] = orig
            jac[i] = ((plus - minus) / (2 * eps)).reshape(-1)
        jacs.append(jac)
    return jacs


def _analytical_jacobian(fn: Callable, inputs: Tuple[Any, ...], out_index: int) -> list:
    out = _as_tuple(fn(*inputs))[out_index]
    diff = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    jacs = [x._backend.zeros((x.numel(), out.numel())) for x in diff]
    if not out.requires_grad:
        return [None if not (isinstance(x, Tensor) and x.requires_grad) else j
                for x, j in zip(inputs, _fill(inputs, jacs))]
    for j in range(out.numel()):
        go = _creation.zeros_like(out)
        go._data.reshape(-1)[j] = 1
        gs = grad(out, diff, go, retain_graph=True, allow_unused=True)
        for k, g in enumerate(gs):
            if g is not None:
                jacs[k][:, j] = g.detach()._data.reshape(-1)
    return _fill(inputs, jacs)


def _fill(inputs: Tuple[Any, ...], jacs: list) -> list:
    it = iter(jacs)
    return [next(it) if isinstance(x, Tensor) and x.requires_grad else None for x in inputs]


def gradcheck(
    func: Callable[..., Union[Tensor, Sequence[Tensor]]],
    inputs: Union[Tensor, Sequence[Any]],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    **_ignored: Any,
) -> bool:
    """True if the analytical gradients of `func` at `inputs` match finite differences.

    For every floating-point output and every input that requires grad, compares the Jacobian
    that backward computes with one from central differences of step `eps`, element by
    element with ``allclose(analytical, numerical, rtol, atol)``. Use float64 inputs: in float32
    the finite differences are too coarse and the check fails on correct gradients.

    Args:
        func (Callable): a function of the inputs returning a tensor or a tuple of tensors.
        inputs (Tensor or tuple): the arguments of `func`; the tensors with
            ``requires_grad=True`` are checked.
        eps (float): the finite-difference step. Default: ``1e-6``.
        atol (float): the absolute tolerance. Default: ``1e-5``.
        rtol (float): the relative tolerance. Default: ``1e-3``.
        raise_exception (bool): raise `GradcheckError` (naming the output and input, with both
            Jacobians) on a mismatch instead of returning ``False``. Default: ``True``.

    Other keyword arguments of torch's gradcheck are accepted and ignored.

    Example::

        >>> x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
        >>> torch.autograd.gradcheck(lambda t: (t.sin() * t).sum(), (x,))
        True
    """
    ins = _as_tuple(inputs) if not isinstance(inputs, Tensor) else (inputs,)
    for idx, x in enumerate(ins):
        if isinstance(x, Tensor) and x.requires_grad and x.dtype.name != "float64":
            warnings.warn(
                f"Input #{idx} requires gradient and is not a double precision "
                "floating point. This check will likely fail if all the inputs are not of "
                "double precision floating point. ",
                UserWarning,
                stacklevel=2,
            )
    outs = _as_tuple(func(*ins))
    for oi in range(len(outs)):
        if not isinstance(outs[oi], Tensor) or not outs[oi].is_floating_point():
            continue
        num = _numerical_jacobian(func, ins, oi, eps)
        ana = _analytical_jacobian(func, ins, oi)
        for ii, (n, a) in enumerate(zip(num, ana)):
            if n is None:
                continue
            if not bool(ins[ii]._backend.allclose(a, n, rtol=rtol, atol=atol)):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {oi} with respect to input {ii},\n"
                    f"numerical:{n}\nanalytical:{a}\n"
                )
    return True


def gradgradcheck(
    func: Callable[..., Union[Tensor, Sequence[Tensor]]],
    inputs: Union[Tensor, Sequence[Any]],
    grad_outputs: Any = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    **_ignored: Any,
) -> bool:
    """True if the second derivatives of `func` at `inputs` match finite differences of its
    first derivatives: gradcheck of `grad(func(inputs), inputs, grad_outputs,
    create_graph=True)` with respect to both the inputs and `grad_outputs` (random in [-1, 1)
    when not given), as torch's."""
    tupled_inputs = _as_tuple(inputs) if not isinstance(inputs, Tensor) else (inputs,)
    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(
            (_creation.rand(*o.shape, dtype=o.dtype if o.is_floating_point() else None) * 2 - 1)
            .requires_grad_() for o in outputs
        )
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs) if not isinstance(grad_outputs, Tensor) \
            else (grad_outputs,)
    n_out = len(tupled_grad_outputs)
    diff_inputs = {i for i, x in enumerate(tupled_inputs)
                   if isinstance(x, Tensor) and x.requires_grad}
    diff_grad_outputs = {i for i, x in enumerate(tupled_grad_outputs) if x.requires_grad}

    def new_func(*args: Any) -> Tuple[Any, ...]:
        input_args = tuple(x.requires_grad_() if i in diff_inputs else x
                           for i, x in enumerate(args[:-n_out]))
        outs = _differentiable_outputs(func(*input_args))
        gos = tuple(x.requires_grad_() if i in diff_grad_outputs else x
                    for i, x in enumerate(args[-n_out:]))
        diff_args = tuple(x for i, x in enumerate(input_args) if i in diff_inputs)
        grads = grad(outs, diff_args, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception)


def _differentiable_outputs(x: Any) -> Tuple[Any, ...]:
    return tuple(o for o in _as_tuple(x) if isinstance(o, Tensor) and o.requires_grad)
