"""where, maximum/minimum, fmax/fmin, the comparisons (bool tensors; their aliases greater ...
and in-place forms eq_ ...), isin, isclose/allclose/equal. The bitwise operators live in
bitwise.py."""

from __future__ import annotations

from typing import Any

from .. import _creation, _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import ELEMENTWISE, node
from ._util import (
    _type_name,
    as_scalar,
    broadcast_error,
    checked_int,
    const,
    name_function,
    promote,
    record,
    same_device,
    scalar_operand,
    wrap_int,
)
from .copyslices import inplace_from


def _operand(x: Any, like: Tensor) -> Any:
    if isinstance(x, Tensor):
        return x._data
    s = as_scalar(x)
    if s is None:
        raise TypeError(f"expected Tensor or number, got {type(x).__name__}")
    return s


def _where_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's where(condition, grad, 0): a selection, so a NaN in g stays on its own side; a
    # scalar branch (no tensor) gets no gradient
    cond, a_tensor, b_tensor = ctx
    c = record(cond, (), "", None)
    return (where(c, g, 0.0) if a_tensor else None), (where(c, 0.0, g) if b_tensor else None)


WHERE = node("WhereBackward0", _where_bw, forward=ELEMENTWISE)


@op(function="where", grad_fn="WhereBackward0")
def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:
    """input where condition holds, else other (elementwise, broadcast); where(condition) is nonzero(as_tuple=True).

    Args:
        condition (Tensor): a bool tensor choosing input (True) or other (False).
        input (Tensor or Number): the values taken where condition is True.
        other (Tensor or Number): the values taken where condition is False.

    The gradient flows to input where condition is True and to other where it is False; the
    branch not taken gets 0. That 0 still becomes NaN upstream where the branch's own
    derivative is infinite (e.g. sqrt at 0), as in torch.

    Example::

        >>> x = rustgrad.tensor([-1., 2., -3.], requires_grad=True)
        >>> y = rustgrad.where(x > 0, x, rustgrad.tensor(0.))
        >>> y
        tensor([0., 2., 0.], grad_fn=<WhereBackward0>)
        >>> y.sum().backward()
        >>> x.grad
        tensor([0., 1., 0.])
    """
    if input is None and other is None:
        return tuple(
            record(i.astype(_dtype.int64.np), (), "", None) for i in condition._data.nonzero()
        )
    cd = condition._data
    if cd.dtype.kind != "b":
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {_type_name(_dtype.from_np(cd.dtype))}")
    tensors = [x for x in (input, other) if isinstance(x, Tensor)]
    ref = tensors[0] if tensors else condition
    xp = ref._backend
    rt = _dtype.result_type(*(x for x in (input, other)))
    if not tensors:
        rt = _dtype.get_default_dtype() if any(type(x) is float for x in (input, other))\
            else _dtype.result_type(input, other)
    a = checked_int(rt.np, _operand(input, ref))
    b = checked_int(rt.np, _operand(other, ref))
    for x in (a, b):
        if hasattr(x, "dtype"):
            same_device(cd, x)
    a = a.astype(rt.np, copy=False) if hasattr(a, "astype") else a
    b = b.astype(rt.np, copy=False) if hasattr(b, "astype") else b
    try:
        out = xp.where(cd, a, b)
    except ValueError as e:
        raise broadcast_error(e, cd.shape, *(x.shape for x in (a, b) if hasattr(x, "shape")))\
            from None
    if out.dtype != rt.np:
        out = out.astype(rt.np)
    # a scalar branch is an input slot without an edge, as torch's wrapped numbers
    a_tensor, b_tensor = isinstance(input, Tensor), isinstance(other, Tensor)
    return WHERE.record(out, (input if a_tensor else None, other if b_tensor else None),
                        (cd, a_tensor, b_tensor))


def _maxmin_bw(g: Tensor, saved: Any, is_max: bool) -> Any:
    # torch's max/min backward: where(a == b, grad / 2, grad), zeroed where the input lost, so
    # ties split the gradient and a nan (no order) passes it to both inputs
    a, b = saved.self, saved.other
    half = where(a == b, g * 0.5, g)
    a_lost, b_lost = (a < b, a > b) if is_max else (a > b, a < b)
    # the method (bound from gather), as gather imports this module
    return half.masked_fill(a_lost, 0.0), half.masked_fill(b_lost, 0.0)


def _maxmin_fw(tangents: Any, saved: Any, is_max: bool) -> Any:
    # torch's: the winner's tangent, the mean of both at a tie, and other's where a nan leaves
    # no order (the backward gives a nan's gradient to both, so it is not its own transpose)
    a, b = saved.self, saved.other
    ta, tb = (t if t is not None else _creation.zeros_like(x) for t, x in zip(tangents, (a, b)))
    wins = a > b if is_max else a < b
    return where(a == b, (ta + tb) * 0.5, where(wins, ta, tb))


MAXIMUM = node("MaximumBackward0", _maxmin_bw, saved=("self", "other"), forward=_maxmin_fw)
MINIMUM = node("MinimumBackward0", _maxmin_bw, saved=("self", "other"), forward=_maxmin_fw)


def _binary_max(a: Tensor, b: Any, is_max: bool) -> Tensor:
    if not isinstance(b, Tensor):
        b = _creation.full_like_scalar(a, b)
    xp = a._backend
    return _pick(a, b, xp.maximum if is_max else xp.minimum, MAXIMUM if is_max else MINIMUM,
                 is_max)


def _pick(a: Tensor, b: Tensor, ufunc: Any, spec: Any, is_max: bool) -> Tensor:
    """ufunc (maximum, minimum, fmax, fmin) of a and b, promoted and broadcast, recorded through
    spec (ctx: is_max; both operands saved)."""
    ad, bd = promote(a, b)
    try:
        out = ufunc(ad, bd)
    except ValueError as e:
        raise broadcast_error(e, ad.shape, bd.shape) from None
    return spec.record(out, (a, b), is_max, self=a, other=b)


@op(method="maximum", function="maximum", grad_fn="MaximumBackward0")
def maximum(input: Tensor, other: Any) -> Tensor:
    """The elementwise maximum of input and other.

    Args:
        input (Tensor): the first tensor.
        other (Tensor): the second tensor, broadcast with input.

    Where the two are equal, each gets half of the gradient. NaN wins.

    Example::

        >>> a = rustgrad.tensor([1., 5.], requires_grad=True)
        >>> rustgrad.maximum(a, rustgrad.tensor([3., 5.])).sum().backward()
        >>> a.grad
        tensor([0.0000, 0.5000])
    """
    return _binary_max(input, other, True)


@op(method="minimum", function="minimum", grad_fn="MinimumBackward0")
def minimum(input: Tensor, other: Any) -> Tensor:
    """The elementwise minimum of input and other.

    Args:
        input (Tensor): the first tensor.
        other (Tensor): the second tensor, broadcast with input.

    Where the two are equal, each gets half of the gradient. NaN wins.

    Example::

        >>> rustgrad.minimum(rustgrad.tensor([1., 5.]), rustgrad.tensor([3., 2.]))
        tensor([1., 2.])
    """
    return _binary_max(input, other, False)


# ---- fmax / fmin: maximum / minimum where NaN loses -----------------------------------------------
def _fmaxmin_bw(g: Tensor, saved: Any, is_max: bool) -> Any:
    # torch's: a tie splits the gradient; otherwise it goes to the operand the result is, NaN
    # losing to a number (both NaN: to self)
    a, b = saved.self, saved.other
    half = g * 0.5
    a_nan, b_nan = a.isnan(), b.isnan()
    a_wins, b_wins = (a > b, a < b) if is_max else (a < b, a > b)
    tie = a == b
    ga = where(tie, half, where(a_wins | b_nan, g, 0.0)) if a.requires_grad else None
    gb = where(tie, half, where(b_wins | (a_nan & ~b_nan), g, 0.0)) if b.requires_grad else None
    return ga, gb


FMAX = node("FmaxBackward0", _fmaxmin_bw, saved=("self", "other"), forward=ELEMENTWISE)
FMIN = node("FminBackward0", _fmaxmin_bw, saved=("self", "other"), forward=ELEMENTWISE)


def _fmaxmin(name: str, a: Any, b: Any, is_max: bool) -> Tensor:
    for x, arg, pos in ((a, "input", 1), (b, "other", 2)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                            f"{type(x).__name__}")
    xp = a._backend
    return _pick(a, b, xp.fmax if is_max else xp.fmin, FMAX if is_max else FMIN, is_max)


@op(method="fmax", function="fmax", grad_fn="FmaxBackward0")
def fmax(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise maximum of input and other, where a NaN loses to a number.

    Args:
        input (Tensor): the first tensor.
        other (Tensor): the second tensor, broadcast with input.

    Only where both are NaN is the result NaN. Where the two are equal, each gets half of the
    gradient.

    Example::

        >>> rustgrad.fmax(rustgrad.tensor([1., float("nan"), 3.]), rustgrad.tensor([2., 0., float("nan")]))
        tensor([2., 0., 3.])
    """
    return _fmaxmin("fmax", input, other, True)


@op(method="fmin", function="fmin", grad_fn="FminBackward0", args_like=fmax)
def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise minimum of input and other, where a NaN loses to a number.

    Example::

        >>> rustgrad.fmin(rustgrad.tensor([1., float("nan"), 3.]), rustgrad.tensor([2., 0., float("nan")]))
        tensor([1., 0., 3.])
    """
    return _fmaxmin("fmin", input, other, False)


def _compare(a: Tensor, b: Any, op: str) -> Any:
    xp = a._backend
    if isinstance(b, Tensor):
        ad, bd = promote(a, b)
    else:
        s = as_scalar(b)
        if s is None:
            return NotImplemented
        ad = scalar_operand(a._data, s)
        bd = wrap_int(ad.dtype, s) if type(s) is int and ad.dtype.kind in "iu" else s
    try:
        out = getattr(xp, op)(ad, bd)
    except ValueError as e:
        raise broadcast_error(e, ad.shape, getattr(bd, "shape", ())) from None
    return record(out, (), "", None)


def _comparison(name: str, ufunc: str, doc: str, args_like: Any = None) -> Any:
    """The comparison op `name` (Tensor method, operator and function), computed by the backend's
    `ufunc`; `args_like`: the op whose arguments' docs it shares. torch's alias of each but eq
    is the ufunc's name (torch.greater is gt)."""

    def compare(input: Tensor, other: Any) -> Any:
        return _compare(input, other, ufunc)

    name_function(compare, name)
    compare.__module__ = __name__
    compare.__doc__ = doc
    names = (name,) if name == "eq" else (name, ufunc)
    return op(method=names, dunder=f"__{name}__", function=names, args_like=args_like)(compare)


# one row per comparison: (name, the backend's ufunc, docs); their arguments are eq's
_EQ_DOC = """input == other, elementwise, as a bool tensor.

Args:
    input (Tensor): the tensor to compare.
    other (Tensor or Number): the value compared with, broadcast with input.

Example::

    >>> rustgrad.tensor([1, 2, 3]) == 2
    tensor([False,  True, False])
"""
_COMPARISONS = (
    ("eq", "equal", _EQ_DOC),
    ("ne", "not_equal", """input != other, elementwise, as a bool tensor.

        Example::

            >>> rustgrad.tensor([1, 2, 3]).ne(rustgrad.tensor([1, 0, 3]))
            tensor([False,  True, False])
        """),
    ("lt", "less", """input < other, elementwise, as a bool tensor.

        Example::

            >>> rustgrad.tensor([1, 2, 3]) < 2
            tensor([ True, False, False])
        """),
    ("le", "less_equal", """input <= other, elementwise, as a bool tensor.

        Example::

            >>> rustgrad.tensor([1, 2, 3]) <= 2
            tensor([ True,  True, False])
        """),
    ("gt", "greater", """input > other, elementwise, as a bool tensor.

        Example::

            >>> rustgrad.tensor([1., 2., float('nan')]) > 1
            tensor([False,  True, False])
        """),
    ("ge", "greater_equal", """input >= other, elementwise, as a bool tensor.

        Example::

            >>> rustgrad.tensor([1, 2, 3]).ge(2)
            tensor([False,  True,  True])
        """),
)
eq = _comparison(*_COMPARISONS[0])
ne, lt, le, gt, ge = (_comparison(n, u, d, eq) for n, u, d in _COMPARISONS[1:])
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


# ---- the comparisons in place: the truth values written into self, in self's dtype ------------
def _zeros_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's zeros_like(self) (and zeros_like(other)): a constant
    zero = const(g._backend.zeros_like(g._data))
    return zero if ctx is None else (zero, zero)


def _inplace_comparison(name: str, ufunc: str) -> Any:
    """`name`_ (and its alias's), recording <Name>Backward0 for a number, <Name>Backward1 for a
    tensor, whose gradients are zeros, as torch's."""
    title = name.capitalize()
    by_number = node(f"{title}Backward0", _zeros_bw)
    by_tensor = node(f"{title}Backward1", _zeros_bw)
    inplace_name = name + "_"

    def compare_(self: Tensor, other: Any) -> Tensor:
        tensor = isinstance(other, Tensor)
        if not tensor and as_scalar(other) is None:
            raise TypeError(
                f"{inplace_name}() received an invalid combination of arguments - got "
                f"({type(other).__name__}), but expected one of:\n * (Tensor other)\n"
                " * (Number other)\n")

        def compute(src: Tensor) -> Tensor:
            out = _compare(src, other, ufunc)._data.astype(self._data.dtype, copy=False)
            if tensor:
                return by_tensor.record(out, (src, other), True)
            return by_number.record(out, (src,))

        return inplace_from(self, compute, False, other)

    name_function(compare_, inplace_name)
    compare_.__module__ = __name__
    compare_.__doc__ = (f"{name} written into self, in self's dtype (1 where it holds, else 0)."
                        "\n\nArgs:\n    other (Tensor or Number): the value compared with, "
                        "broadcast to self's shape.\n")
    names = (inplace_name,) if name == "eq" else (inplace_name, ufunc + "_")
    return op(method=names, grad_fn=(f"{title}Backward0", f"{title}Backward1"))(compare_)


eq_, ne_, lt_, le_, gt_, ge_ = (_inplace_comparison(n, u) for n, u, _ in _COMPARISONS)


@op(method="where", grad_fn="WhereBackward0")
def where_method(self: Tensor, condition: Tensor, other: Any) -> Any:
    """self where condition holds, else other (torch's Tensor.where).

    Args:
        condition (Tensor): a bool tensor choosing self (True) or other (False).
        other (Tensor or Number): the values taken where condition is False.

    Example::

        >>> x = rustgrad.tensor([-1., 2.])
        >>> x.where(x > 0, 0.)
        tensor([0., 2.])
    """
    return where(condition, self, other)


# ---- comparisons of whole tensors: no autograd (they return bools) -----------------------------
@op(method="isclose", function="isclose")
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other|, elementwise, as a bool tensor.

    Args:
        input (Tensor): the first tensor.
        other (Tensor): the second tensor, broadcast with input.
        rtol (float, optional): the relative tolerance. Default: 1e-05.
        atol (float, optional): the absolute tolerance. Default: 1e-08.
        equal_nan (bool, optional): whether two NaNs count as close. Default: False.

    Example::

        >>> rustgrad.isclose(rustgrad.tensor([1., 1.1]), rustgrad.tensor([1.000001, 1.]))
        tensor([ True, False])
    """
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{_type_name(input.dtype)} did not match {_type_name(other.dtype)}")
    same_device(input._data, other._data)
    xp = input._backend
    a, b = input._data, other._data
    try:
        xp.broadcast_shapes(a.shape, b.shape)
    except ValueError as e:
        raise broadcast_error(e, a.shape, b.shape) from None
    return const(xp.asarray(xp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


@op(method="allclose", function="allclose", args_like=isclose)
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """Whether isclose holds everywhere (a Python bool).

    Example::

        >>> rustgrad.allclose(rustgrad.tensor([1., 2.]), rustgrad.tensor([1., 2.000001]))
        True
    """
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


@op(method="equal", function="equal")
def equal(input: Tensor, other: Tensor) -> bool:
    """Whether input and other have the same shape and the same values (a Python bool).

    Args:
        input (Tensor): the first tensor.
        other (Tensor): the second tensor.

    Example::

        >>> rustgrad.equal(rustgrad.tensor([1, 2]), rustgrad.tensor([1, 2]))
        True
    """
    same_device(input._data, other._data)
    a, b = input._data, other._data
    return a.shape == b.shape and bool((a == b).all())


# ---- isin ----------------------------------------------------------------------------------------
def _isin_operand(x: Any) -> Any:
    """(tensor or None, number or None) of an isin operand; bool ones refused as torch's."""
    if isinstance(x, Tensor):
        if x._data.dtype.kind == "b":
            raise NotImplementedError("Unsupported input type encountered for isin(): Bool")
        return x, None
    s = as_scalar(x)
    if type(s) is bool:
        raise NotImplementedError("Unsupported input type encountered for isin(): Bool")
    return None, s


@op(function="isin")
def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each of elements is one of test_elements, as a bool tensor of elements' shape.

    Args:
        elements (Tensor or Number): the values looked up.
        test_elements (Tensor or Number): the values looked for (any shape).
        assume_unique (bool, optional): keyword-only; a promise that both hold no duplicates
            (it changes nothing here). Default: False.
        invert (bool, optional): keyword-only; whether to answer "not in" instead. Default: False.

    The operands are compared in their promoted dtype; NaN is in nothing.

    Example::

        >>> rustgrad.isin(rustgrad.tensor([[1, 2], [3, 4]]), rustgrad.tensor([2, 3]))
        tensor([[False,  True],
                [ True, False]])
    """
    et, es = _isin_operand(elements)
    tt, ts = _isin_operand(test_elements)
    if (et is None and es is None) or (tt is None and ts is None) or (et is None and tt is None):
        raise TypeError(
            "isin() received an invalid combination of arguments - got "
            f"({type(elements).__name__}, {type(test_elements).__name__}), but expected one of:\n"
            " * (Tensor elements, Tensor test_elements, *, bool assume_unique = False, "
            "bool invert = False, Tensor out = None)\n"
            " * (Number element, Tensor test_elements, *, bool assume_unique = False, "
            "bool invert = False, Tensor out = None)\n"
            " * (Tensor elements, Number test_element, *, bool assume_unique = False, "
            "bool invert = False, Tensor out = None)\n")
    ref = et if et is not None else tt
    xp = ref._backend
    rt = _dtype.result_type(*(x for x in (elements, test_elements))).np
    if et is not None and tt is not None:
        same_device(et._data, tt._data)
    a = et._data.astype(rt, copy=False) if et is not None else xp.asarray(es, dtype=rt)
    b = tt._data.astype(rt, copy=False) if tt is not None else xp.asarray([ts], dtype=rt)
    return const(xp.asarray(xp.isin(a, b.reshape(-1), invert=bool(invert))))
