"""Linear algebra: matmul and `@` (1-D, 2-D and batched), outer, dot, mv, mm, bmm, addmm,
baddbmm, einsum, tensordot, kron, trace, diag, diag_embed. Shapes and dtypes are checked as torch checks them (mm wants
matrices, the operands one dtype)."""

from __future__ import annotations

import math
from typing import Any, List, Sequence, Tuple

from .. import _dtype
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._node import add_terms, node
from ._util import (
    check_broadcastable,
    is_bf16,
    opmath,
    record,
    same_device,
)
from .views import _diag_into_zeros, diagonal, permute, squeeze


def _rounded(out: Any, like: Any) -> Any:
    """A product of bfloat16 operands: NumPy computes it in float32 (it has no bfloat16 GEMM),
    as torch's CPU kernels accumulate; the result is rounded to bfloat16 once, as theirs."""
    if out.dtype != like.dtype and is_bf16(like.dtype):
        return out.astype(like.dtype)
    return out


def _scalar_name(d: Any) -> str:
    return _dtype.scalar_type_name(_dtype.from_np(d.dtype))


def _cpp_name_of(array: Any) -> str:
    return _dtype.cpp_name(_dtype.from_np(array.dtype))


def _same_dtype(a: Tensor, b: Tensor) -> None:
    same_device(a._data, b._data)
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            f"expected scalar type {_scalar_name(a._data)} but found {_scalar_name(b._data)}"
        )


def _same_dtype_mv(mat: Any, vec: Any) -> None:
    # torch's mv is addmv into a result of vec's dtype: it names result, mat and vec
    if mat.dtype != vec.dtype:
        raise RuntimeError(
            f"addmv input tensors must have the same dtype, but got {_scalar_name(vec)}, "
            f"{_scalar_name(mat)}, and {_scalar_name(vec)}"
        )


# ---- dot, outer, mv, mm, bmm -----------------------------------------------------------
# Each factor is saved where the other's gradient needs it (torch's rule).
def _dot_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved
    return (None if b is None else g * b), (None if a is None else g * a)


def _dot_fw(tangents: Any, saved: Any, ctx: Any) -> Any:
    (ta, tb), (a, b) = tangents, saved
    return add_terms(None if ta is None else dot(ta, b), None if tb is None else dot(a, tb))


DOT = node("DotBackward0", _dot_bw, saved=("self", "tensor"), forward=_dot_fw)


def _no_bool(kernel: str, *arrays: Any) -> None:
    """torch has no bool kernel for its products: NotImplementedError naming the kernel the
    product folds to (NumPy would compute a logical product)."""
    if any(a.dtype.kind == "b" for a in arrays):
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


@op(method="dot", function="dot", grad_fn="DotBackward0", autocast=dict(cuda="promote"))
def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """The dot product of two 1-D tensors.

    Args:
        input (Tensor): the first vector.
        tensor (Tensor): the second vector, of the same size and dtype.

    Example::

        >>> rustgrad.dot(rustgrad.tensor([1., 2.]), rustgrad.tensor([3., 4.]))
        tensor(11.)
    """
    ad, bd = input._data, tensor._data
    _check_dot(ad, bd)
    out = _rounded(input._backend.asarray(ad @ bd), ad)
    return DOT.record(out, (input, tensor), self=input if tensor.requires_grad else None,
                      tensor=tensor if input.requires_grad else None)


def _check_dot(ad: Any, bd: Any) -> None:
    """torch's checks of dot's (and vdot's) operands: two 1-D tensors of one size and dtype."""
    same_device(ad, bd)
    if ad.ndim != 1 or bd.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {ad.ndim}D and {bd.ndim}D tensors")
    if ad.dtype != bd.dtype:
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found "
            f"{_scalar_name(ad)} and {_scalar_name(bd)}"
        )
    if ad.shape[0] != bd.shape[0]:
        n, m = ad.shape[0], bd.shape[0]
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same "
            f"number of elements, but got {n} and {m} elements respectively"
        )
    _no_bool("dot", ad)



@op(method=("ger", "outer"), function=("ger", "outer"))
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of two 1-D tensors.

    Args:
        input (Tensor): the first vector (rows).
        vec2 (Tensor): the second vector (columns).

    Example::

        >>> rustgrad.outer(rustgrad.tensor([1, 2]), rustgrad.tensor([1, 10, 100]))
        tensor([[  1,  10, 100],
                [  2,  20, 200]])
    """
    for name, t in (("self", input), ("vec2", vec2)):
        if t._data.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t._data.ndim}-D")
    return input.reshape(input._data.shape[0], 1) * vec2



def _mv_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, v = saved
    ga = None if v is None else outer(g, v)
    gv = None if a is None else mv(a.t(), g)
    return ga, gv


def _mv_fw(tangents: Any, saved: Any, ctx: Any) -> Any:
    (ta, tv), (a, v) = tangents, saved
    return add_terms(None if ta is None else mv(ta, v), None if tv is None else mv(a, tv))


MV = node("MvBackward0", _mv_bw, saved=("self", "vec"), forward=_mv_fw)


@op(method="mv", function="mv", grad_fn="MvBackward0", autocast=dict(cuda="lower"))
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The matrix-vector product input @ vec.

    Args:
        input (Tensor): a matrix (n, m).
        vec (Tensor): a vector (m,).

    Example::

        >>> rustgrad.mv(rustgrad.tensor([[1., 2.], [3., 4.]]), rustgrad.tensor([1., 1.]))
        tensor([3., 7.])
    """
    ad, vd = input._data, vec._data
    same_device(ad, vd)
    if ad.ndim != 2 or vd.ndim != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got 1, {ad.ndim}, {vd.ndim}"
        )
    if ad.shape[1] != vd.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({ad.shape[0]}), mat ({ad.shape[0]}x{ad.shape[1]}), "
            f"vec ({vd.shape[0]})"
        )
    _same_dtype_mv(ad, vd)
    _no_bool("addmv_impl_cpu", ad)
    out = _rounded(ad @ vd, ad)
    return MV.record(out, (input, vec), self=input if vec.requires_grad else None,
                     vec=vec if input.requires_grad else None)


def _column_major(t: Tensor) -> bool:
    # a matrix laid out transposed (as nn.Linear's weight.t()): its gradient is computed in the
    # same layout, as torch's mm_mat2_backward, so the weight's own gradient comes out dense and
    # AccumulateGrad takes it instead of copying it
    d = t._data
    return d.ndim == 2 and d.shape[0] > 1 and d.shape[1] > 1 and d.strides[0] < d.strides[1]


def _mat2_grad(m1: Tensor, g: Tensor, column_major: bool) -> Tensor:
    """m1.T @ g, the gradient of mat2 in m1 @ mat2, in mat2's layout."""
    if column_major:
        return mm(g.t(), m1).t()
    return mm(m1.t(), g)


def _mm_bw(g: Tensor, saved: Any, column_major: Any) -> Any:
    a, b = saved
    ga = None if b is None else mm(g, b.t())
    gb = None if a is None else _mat2_grad(a, g, column_major)
    return ga, gb


# a product's tangent: ta @ b + a @ tb (a factor is saved where the other's tangent needs it)
def _mm_fw(tangents: Any, saved: Any, ctx: Any) -> Any:
    (ta, tb), (a, b) = tangents, saved
    return add_terms(None if ta is None else mm(ta, b), None if tb is None else mm(a, tb))


MM = node("MmBackward0", _mm_bw, saved=("self", "mat2"), forward=_mm_fw)


def _mm_record(out: Any, a: Tensor, b: Tensor) -> Tensor:
    """The MmBackward0 of a @ b (ctx: whether b's gradient is computed column-major)."""
    return MM.record(out, (a, b), b.requires_grad and _column_major(b),
                     self=a if b.requires_grad else None, mat2=b if a.requires_grad else None)


def _check_mm(a: Any, b: Any, kernel: str = "mm") -> None:
    # torch's messages name the kernel that refuses ("mm: ...", "addmm: ...")
    for name, t in (("self", a), ("mat2", b)):
        if t.ndim != 2:
            raise RuntimeError(f"{kernel}: {name} must be a matrix, got {t.ndim}-D tensor")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(
            f"{kernel}: mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
            f"{b.shape[0]}x{b.shape[1]})"
        )
    if a.dtype != b.dtype:
        raise RuntimeError(
            "expected m1 and m2 to have the same dtype, but got: "
            f"{_cpp_name_of(a)} != {_cpp_name_of(b)}"
        )
    _no_bool("addmm_impl_cpu_", a)


@op(method="mm", function="mm", grad_fn="MmBackward0", autocast=dict(cuda="lower", cpu="lower"))
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """The matrix product input @ mat2 of two 2-D tensors (see matmul for broadcasting).

    Args:
        input (Tensor): a matrix (n, m).
        mat2 (Tensor): a matrix (m, p).

    The gradients are grad @ mat2.T for input and input.T @ grad for mat2.

    Example::

        >>> rustgrad.mm(rustgrad.tensor([[1., 2.]]), rustgrad.tensor([[3.], [4.]]))
        tensor([[11.]])
    """
    ad, bd = input._data, mat2._data
    same_device(ad, bd)
    _check_mm(ad, bd)
    return _mm_record(_rounded(ad @ bd, ad), input, mat2)


def _check_bmm(a: Any, b: Any) -> None:
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if b.shape[0] != a.shape[0] or b.shape[1] != a.shape[2]:
        raise RuntimeError(
            "Expected size for first two dimensions of batch2 tensor to be: "
            f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}]."
        )


def _bmm_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved
    ga = None if b is None else bmm(g, b.transpose(1, 2))
    gb = None if a is None else bmm(a.transpose(1, 2), g)
    return ga, gb


def _bmm_fw(tangents: Any, saved: Any, ctx: Any) -> Any:
    (ta, tb), (a, b) = tangents, saved
    return add_terms(None if ta is None else bmm(ta, b), None if tb is None else bmm(a, tb))


BMM = node("BmmBackward0", _bmm_bw, saved=("self", "mat2"), forward=_bmm_fw)


@op(method="bmm", function="bmm", grad_fn="BmmBackward0", autocast=dict(cuda="lower", cpu="lower"))
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of two 3-D tensors with the same batch size.

    Args:
        input (Tensor): matrices (b, n, m).
        mat2 (Tensor): matrices (b, m, p).

    Example::

        >>> rustgrad.bmm(rustgrad.ones(2, 1, 3), rustgrad.ones(2, 3, 1))
        tensor([[[3.]],
        <BLANKLINE>
                [[3.]]])
    """
    ad, bd = input._data, mat2._data
    _check_bmm(ad, bd)
    _same_dtype(input, mat2)
    _no_bool("bmm", ad)
    out = _rounded(input._backend.matmul(ad, bd), ad)
    return BMM.record(out, (input, mat2), self=input if mat2.requires_grad else None,
                      mat2=mat2 if input.requires_grad else None)


def _expanded_shape(shape: tuple, target: tuple) -> None:
    """torch's expand check for addmm/baddbmm's `input` against the product's shape."""
    lead = len(target) - len(shape)
    ok = lead >= 0
    if ok:  # compared from the last dim, as torch's expand
        for i in range(len(shape) - 1, -1, -1):
            if shape[i] != 1 and shape[i] != target[lead + i]:
                ok = False
                bad = lead + i
                break
    if not ok:
        if lead < 0:
            raise RuntimeError(
                f"expand: the number of sizes provided ({len(target)}) must be greater or equal "
                f"to the number of dimensions in the tensor ({len(shape)})"
            )
        raise RuntimeError(
            f"The expanded size of the tensor ({target[bad]}) must match the existing size "
            f"({shape[bad - lead]}) at non-singleton dimension {bad}.  Target sizes: "
            f"{list(target)}.  Tensor sizes: {list(shape)}"
        )


def _addmm_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    m1, m2 = saved
    beta, alpha, batched, layout = ctx
    gi = g if beta == 1 else g * beta
    prod = bmm if batched else mm
    tr = (lambda t: t.transpose(1, 2)) if batched else (lambda t: t.t())
    g1 = g2 = None
    if m2 is not None:  # saved only when m1 needs a gradient (as torch's)
        g1 = prod(g, tr(m2))
        if alpha != 1:
            g1 = g1 * alpha
    if m1 is not None:
        g2 = prod(tr(m1), g) if batched else _mat2_grad(m1, g, layout)
        if alpha != 1:
            g2 = g2 * alpha
    return gi, g1, g2


# saved: mat1 where mat2 needs a gradient, mat2 where mat1 does (as torch's)
def _addmm_fw(tangents: Any, saved: Any, ctx: Any) -> Any:
    (ti, t1, t2), (m1, m2) = tangents, saved
    beta, alpha, batched = ctx[:3]
    prod = bmm if batched else mm
    p = add_terms(None if t1 is None else prod(t1, m2), None if t2 is None else prod(m1, t2))
    # a zero beta or alpha still multiplies (torch's tangent keeps the graph of that term)
    return add_terms(None if ti is None else (ti if beta == 1 else ti * beta),
                     None if p is None else (p if alpha == 1 else p * alpha))


ADDMM = node("AddmmBackward0", _addmm_bw, saved=("mat1", "mat2"), forward=_addmm_fw)
BADDBMM = node("BaddbmmBackward0", _addmm_bw, saved=("batch1", "batch2"), forward=_addmm_fw)


def _addmm_checks(input: Tensor, m1: Tensor, m2: Tensor, batched: bool) -> Tuple[int, ...]:
    """torch's checks of addmm's (baddbmm's) operands, in its order, up to the bias's shape;
    the product's shape."""
    ad, bd = m1._data, m2._data
    same_device(ad, bd)
    same_device(input._data, ad)
    idt = input._data.dtype
    if batched:
        _check_bmm(ad, bd)
        if idt != ad.dtype:
            raise RuntimeError(
                f"Input dtypes must be the same, got: input {_cpp_name_of(input._data)}, batch1: "
                f"{_cpp_name_of(ad)}, batch2: {_cpp_name_of(bd)}"
            )
        if bd.dtype != ad.dtype:
            raise RuntimeError(
                f"expected scalar type {_scalar_name(ad)} but found {_scalar_name(bd)}"
            )
    else:
        # torch's addmm checks the dtypes before the shapes
        for name, t in (("self", input._data), ("mat1", ad)):
            if t.dtype != bd.dtype:
                raise RuntimeError(
                    f"{name} and mat2 must have the same dtype, but got {_scalar_name(t)} and "
                    f"{_scalar_name(bd)}"
                )
        _check_mm(ad, bd, "addmm")
    if batched:
        _no_bool("baddbmm", ad)
        return (int(ad.shape[0]), int(ad.shape[1]), int(bd.shape[2]))
    return (int(ad.shape[0]), int(bd.shape[1]))


def _addmm(input: Tensor, m1: Tensor, m2: Tensor, beta: Any, alpha: Any, batched: bool) -> Tensor:
    _addmm_checks(input, m1, m2, batched)
    ad, bd = m1._data, m2._data
    idt = input._data.dtype
    xp = m1._backend
    prod = xp.matmul(ad, bd)
    _expanded_shape(input._data.shape, prod.shape)
    out = prod if alpha == 1 else prod * alpha
    if beta == 1 and idt == out.dtype:
        out += input._data  # the product is fresh: add the bias into it
    else:
        if beta != 0:
            out = out + (input._data if beta == 1 else input._data * beta)
        out = xp.broadcast_to(out, prod.shape).astype(ad.dtype, copy=True)
    layout = not batched and m2.requires_grad and _column_major(m2)  # only m2's gradient
    s1, s2 = m1 if m2.requires_grad else None, m2 if m1.requires_grad else None
    ctx = (beta, alpha, batched, layout)
    if batched:
        return BADDBMM.record(out, (input, m1, m2), ctx, batch1=s1, batch2=s2)
    return ADDMM.record(out, (input, m1, m2), ctx, mat1=s1, mat2=s2)


@op(method="addmm", function="addmm", grad_fn="AddmmBackward0", autocast=dict(cuda="lower", cpu="lower"))
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2).

    Args:
        input (Tensor): the matrix added, broadcast to (n, p).
        mat1 (Tensor): a matrix (n, m).
        mat2 (Tensor): a matrix (m, p).
        beta (Number, optional): keyword-only; input's multiplier. Default: 1.
        alpha (Number, optional): keyword-only; the product's multiplier. Default: 1.

    Example::

        >>> rustgrad.addmm(rustgrad.tensor([10., 20.]), rustgrad.eye(2), rustgrad.tensor([[1., 2.], [3., 4.]]))
        tensor([[11., 22.],
                [13., 24.]])
    """
    return _addmm(input, mat1, mat2, beta, alpha, False)


@op(method="baddbmm", function="baddbmm", grad_fn="BaddbmmBackward0", autocast=dict(cuda="lower", cpu="lower"))
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,
            alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (batch1 @ batch2), batched.

    Args:
        input (Tensor): the tensor added, broadcast to (b, n, p).
        batch1 (Tensor): matrices (b, n, m).
        batch2 (Tensor): matrices (b, m, p).
        beta (Number, optional): keyword-only; input's multiplier. Default: 1.
        alpha (Number, optional): keyword-only; the product's multiplier. Default: 1.

    Example::

        >>> rustgrad.baddbmm(rustgrad.zeros(1, 1, 1), rustgrad.ones(1, 1, 2), rustgrad.ones(1, 2, 1), alpha=3)
        tensor([[[6.]]])
    """
    return _addmm(input, batch1, batch2, beta, alpha, True)


# ---- einsum ----------------------------------------------------------------------------
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse(equation: str, operands: Sequence[Tensor]) -> Tuple[List[List[str]], List[str]]:
    """Subscripts of each operand and of the output, ellipses expanded to spare letters."""
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->", 1)
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    pos = 0
    for ch in eq:
        if not (ch in _LETTERS or ch in ".,->"):
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {pos} in the equation string, "
                "subscripts must be in [a-zA-Z]"
            )
        pos += 1
    used = set(c for c in eq if c in _LETTERS)
    spare = [c for c in _LETTERS if c not in used]
    ell_n = 0
    subs: List[List[str]] = []
    for k, (term, operand) in enumerate(zip(terms, operands)):
        nd = operand._data.ndim
        if "..." in term:
            left, right = term.split("...", 1)
            n_ell = nd - len(left) - len(right)
            if n_ell < 0:
                raise RuntimeError(
                    f"einsum(): the number of subscripts in the equation ({len(left) + len(right)})"
                    f" is more than the number of dimensions ({nd}) for operand {k}"
                )
            ell_n = max(ell_n, n_ell)
            subs.append(list(left) + ["..."] * n_ell + list(right))
        else:
            if len(term) != nd:
                raise RuntimeError(
                    f"einsum(): the number of subscripts in the equation ({len(term)}) does not "
                    f"match the number of dimensions ({nd}) for operand {k} and no ellipsis was "
                    "given"
                )
            subs.append(list(term))
    ell = spare[:ell_n]
    # ellipsis dims align from the right
    for k, s in enumerate(subs):
        n = s.count("...")
        if n:
            i = s.index("...")
            subs[k] = s[:i] + ell[ell_n - n:] + s[i + n:]
    if rhs is None:
        counts: dict = {}
        for s in subs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + sorted(c for c, n in counts.items() if n == 1 and c not in ell)
    else:
        if "..." in rhs:
            left, right = rhs.split("...", 1)
            out = list(left) + ell + list(right)
        else:
            out = list(rhs)
        seen = set()
        for c in out:
            if c in seen:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the "
                                   "output")
            seen.add(c)
            if not any(c in s for s in subs):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   "equation for any input operand")
    return subs, out


def _einsum_core_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    subs, out_sub = ctx
    if g._data.dtype.kind == "c":  # the gradients would need the operands conjugated
        raise NotImplementedError(
            "rustgrad: the derivative of EinsumBackward0 for complex tensors is not implemented")
    ops = saved
    grads = []
    for k, (operand, s) in enumerate(zip(ops, subs)):
        if not operand.requires_grad:
            grads.append(None)
            continue
        others = [o for j, o in enumerate(ops) if j != k]
        other_subs = [sub for j, sub in enumerate(subs) if j != k]
        grads.append(_einsum_core([g] + others, [list(out_sub)] + other_subs, list(s)))
    return tuple(grads)


# the spec states the name; einsum records through `record` itself, saving every operand (no
# fixed slots) and sometimes under arith.py's MulBackward0
EINSUM = node("EinsumBackward0", _einsum_core_bw)


def _einsum_core(ops: List[Tensor], subs: List[List[str]], out_sub: List[str],
                 name: str = "EinsumBackward0") -> Tensor:
    """One graph node: the backend's einsum over operands whose labels are distinct within each
    operand and each appear in the output or in another operand (so gradients are einsums)."""
    xp = ops[0]._backend
    eq = ",".join("".join(s) for s in subs) + "->" + "".join(out_sub)
    arrays = [o._data for o in ops]
    dt = arrays[0].dtype
    # bfloat16: NumPy's einsum has no loop for it; float32, rounded once, as torch's GEMMs
    out = xp.einsum(eq, *[opmath(a) for a in arrays], optimize=len(arrays) > 2)
    out = xp.asarray(out)
    if out.dtype != dt:
        out = out.astype(dt)
    # recorded directly: it saves every operand (no fixed slots for a spec) and may be named
    # MulBackward0, arith.py's spec
    return record(out, tuple(ops), name, _einsum_core_bw, tuple(ops),
                  (tuple(tuple(s) for s in subs), tuple(out_sub)))


@op(function="einsum", grad_fn=("MulBackward0", "EinsumBackward0"), autocast=dict(cuda="lower"))
def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation: the operands' entries multiplied and summed as the equation says.

    Args:
        equation (str): subscripts per operand, comma-separated, with "->" and the output's
            subscripts (implicit output: the subscripts seen once, in alphabetical order);
            "..." stands for broadcast dims.
        operands (Tensors): the operands, given separately or as one list.

    A repeated subscript within an operand takes its diagonal; a subscript missing from the
    output is summed; size-1 dims broadcast. With one operand the result is built from
    diagonal, permute and sum (a view when nothing is summed).

    Example::

        >>> a = rustgrad.tensor([[1., 2.], [3., 4.]])
        >>> rustgrad.einsum("ij->ji", a)
        tensor([[1., 3.],
                [2., 4.]])
        >>> rustgrad.einsum("ii", a)
        tensor(5.)
        >>> rustgrad.einsum("ij,j->i", a, rustgrad.tensor([1., 1.]))
        tensor([3., 7.])
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ops = list(operands)
    for operand in ops[1:]:
        _same_dtype(ops[0], operand)
    subs, out_sub = _parse(equation, ops)
    # sizes must agree (size 1 broadcasts)
    sizes: dict = {}
    for k, (operand, s) in enumerate(zip(ops, subs)):
        for c, n in zip(s, operand._data.shape):
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = n
            elif n != prev and n != 1:
                raise RuntimeError(
                    f"einsum(): subscript {c} has size {n} for operand {k} which does not "
                    f"broadcast with previously seen size {prev}"
                )
    # repeated subscripts within an operand: take the diagonal
    for k in range(len(ops)):
        s = subs[k]
        while len(set(s)) != len(s):
            c = next(c for c in s if s.count(c) > 1)
            i = s.index(c)
            j = s.index(c, i + 1)

            ops[k] = diagonal(ops[k], 0, i, j)
            s = [x for n, x in enumerate(s) if n not in (i, j)] + [c]
        subs[k] = s
    if len(ops) == 1:
        s = subs[0]
        summed = [c for c in s if c not in out_sub]
        order = [s.index(c) for c in out_sub] + [s.index(c) for c in summed]
        res = permute(ops[0], tuple(order))
        if summed:
            res = res.sum(tuple(range(len(out_sub), len(s))))
        return res
    # size-1 dims against a larger size elsewhere broadcast: squeeze them away
    for k in range(len(ops)):
        s = subs[k]
        drop = [i for i, c in enumerate(s) if ops[k]._data.shape[i] == 1 and sizes[c] != 1]
        if drop:
            ops[k] = squeeze(ops[k], tuple(drop))
            subs[k] = [c for i, c in enumerate(s) if i not in drop]
    contracted = any(c not in out_sub for s in subs for c in s)
    # a subscript only one operand has and the output lacks is summed out first
    for k in range(len(ops)):
        s = subs[k]
        lone = [i for i, c in enumerate(s)
                if c not in out_sub and not any(c in subs[j] for j in range(len(ops)) if j != k)]
        if lone:
            ops[k] = ops[k].sum(tuple(lone))
            subs[k] = [c for i, c in enumerate(s) if i not in lone]
    if contracted:
        if any(c not in out_sub for c in set(subs[0]).intersection(*subs[1:])):
            _no_bool("bmm", ops[0]._data)  # a shared subscript summed out: torch's bmm
        return _einsum_core(ops, subs, out_sub).view(tuple(sizes[c] for c in out_sub))
    # nothing contracted: an elementwise product, as torch names it
    return _einsum_core(ops, subs, out_sub, "MulBackward0")


# ---- tensordot, kron -------------------------------------------------------------------
@op(function="tensordot", autocast=dict(cuda="promote"))
def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Any = None) -> Tensor:
    """Contracts a and b over the given dimensions.

    Args:
        a (Tensor): the left tensor.
        b (Tensor): the right tensor.
        dims (int or pair of lists, optional): contract the last dims of a with the first dims
            of b (an int), or the listed dims of each. Default: 2.

    Example::

        >>> rustgrad.tensordot(rustgrad.ones(2, 3), rustgrad.ones(3, 4), dims=1).shape
        torch.Size([2, 4])
    """
    na, nb = a._data.ndim, b._data.ndim
    if isinstance(dims, Tensor):
        dd = dims.tolist()
        dims = dd if dims._data.ndim else int(dd)
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(na, nb):
            raise RuntimeError(
                f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}"
            )
        da = list(range(na - dims, na))
        db = list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("both inputs should have same dtype")
    da = [_wrap_dim(x, na) for x in da]
    db = [_wrap_dim(x, nb) for x in db]
    for x, y in zip(da, db):
        sa, sb = a._data.shape[x], b._data.shape[y]
        if sa != sb:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {sa} in dim {x} and "
                f"second has size {sb} in dim {y}"
            )
    _same_dtype(a, b)
    fa = [i for i in range(na) if i not in da]
    fb = [i for i in range(nb) if i not in db]
    m = 1
    for i in fa:
        m *= a._data.shape[i]
    k = 1
    for i in da:
        k *= a._data.shape[i]
    n = 1
    for i in fb:
        n *= b._data.shape[i]
    am = permute(a, tuple(fa + da)).reshape(m, k)
    bm = permute(b, tuple(db + fb)).reshape(k, n)
    shape = tuple(a._data.shape[i] for i in fa) + tuple(b._data.shape[i] for i in fb)
    return mm(am, bm).reshape(shape)


def _unsafe_view_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.reshape(ctx)


# a product reshaped (kron's, linear's batch fold): torch's graph ends on _unsafe_view's node,
# whose spec is views.py's; here the formula is the reshape back to ctx, the product's shape
UNSAFE_VIEW_RESHAPE = node("UnsafeViewBackward0", _unsafe_view_bw, variant=True)


@op(method="kron", function="kron", grad_fn="UnsafeViewBackward0")
def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product of input and other.

    Args:
        input (Tensor): the first tensor.
        other (Tensor): the second tensor.

    Example::

        >>> rustgrad.kron(rustgrad.tensor([1, 2]), rustgrad.tensor([1, 10]))
        tensor([ 1, 10,  2, 20])
    """
    na, nb = input._data.ndim, other._data.ndim
    n = max(na, nb)
    ash = (1,) * (n - na) + tuple(input._data.shape)
    bsh = (1,) * (n - nb) + tuple(other._data.shape)
    ai: list = []
    bi: list = []
    for x, y in zip(ash, bsh):
        ai += [x, 1]
        bi += [1, y]
    prod = input.reshape(tuple(ai)) * other.reshape(tuple(bi))
    shape = tuple(x * y for x, y in zip(ash, bsh))
    pd = prod._data
    return UNSAFE_VIEW_RESHAPE.record(pd.reshape(shape).copy(), (prod,), pd.shape)


# ---- trace, diag, diag_embed -----------------------------------------------------------
def _trace_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    n, m = ctx
    k = min(n, m)
    return _diag_into_zeros(g.expand(k), (n, m), 0, 0, 1)


TRACE = node("TraceBackward0", _trace_bw)


@op(method="trace", function="trace", grad_fn=("TraceBackward0", "DiagonalBackwardBackward0"),
    autocast=dict(cpu="fp32"))
def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a 2-D tensor.

    Args:
        input (Tensor): a matrix.

    Example::

        >>> rustgrad.tensor([[1., 2.], [3., 4.]]).trace()
        tensor(5.)
    """
    d = input._data
    if d.dtype.kind == "b":
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    if d.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {d.ndim}")
    xp = input._backend
    out = xp.asarray(xp.trace(d))
    if d.dtype.kind in "biu":
        out = out.astype(_dtype.int64.np)
    return TRACE.record(out, (input,), d.shape)


def _diag_embed_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    offset, d1, d2 = ctx
    return diagonal(g, offset, d1, d2)


DIAG_EMBED = node("DiagEmbedBackward0", _diag_embed_bw)


@op(method="diag_embed", function="diag_embed", grad_fn="DiagEmbedBackward0")
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Tensors whose diagonals (of dims dim1, dim2) are the last dimension of input."""
    d = input._data
    n_out = d.ndim + 1
    d1, d2 = _wrap_dim(dim1, n_out), _wrap_dim(dim2, n_out)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    xp = input._backend
    last = d.shape[-1] if d.ndim else 1
    size = last + abs(offset)
    rest = list(d.shape[:-1])
    shape = []
    for i in range(n_out):
        shape.append(size if i in (d1, d2) else rest.pop(0))
    z = xp.zeros(tuple(shape), dtype=d.dtype)
    xp.writable_view(xp.diagonal(z, offset, d1, d2))[...] = d
    return DIAG_EMBED.record(z, (input,), (offset, d1, d2))


def _diag_copy_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, offset = ctx
    return _diag_into_zeros(g, shape, offset, 0, 1)


DIAG_COPY = node("DiagonalBackward0_copy", _diag_copy_bw)


@op(method="diag", function="diag", grad_fn=("DiagonalBackward0_copy", "DiagonalBackwardBackward0"))
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """The diagonal of a matrix, or the matrix with a vector on its diagonal.

    Args:
        input (Tensor): a 1-D or 2-D tensor.
        diagonal (int, optional): which diagonal: above the main one when positive. Default: 0.

    Example::

        >>> rustgrad.diag(rustgrad.tensor([1, 2]))
        tensor([[1, 0],
                [0, 2]])
        >>> rustgrad.diag(rustgrad.tensor([[1, 2], [3, 4]]))
        tensor([1, 4])
    """
    d = input._data
    if d.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if d.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {d.ndim}D")
    out = input._backend.diagonal(d, diagonal).copy()
    return DIAG_COPY.record(out, (input,), (d.shape, diagonal))


# ---- matmul: torch folds it to dot / mv / mm, or a batched product -------------------------
# The products' gradients keep the broadcast batch dims: the engine sums them to each operand's
# shape (an operand broadcast along a batch dim never has the output's shape).
def _batched_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved
    a_vec, b_vec = a._data.ndim == 1, b._data.ndim == 1
    a2 = a.unsqueeze(0) if a_vec else a
    b2 = b.unsqueeze(-1) if b_vec else b
    g2 = g
    if a_vec:
        g2 = g2.unsqueeze(-2)
    if b_vec:
        g2 = g2.unsqueeze(-1)
    ga = gb = None
    if a.requires_grad:
        ga = g2 @ b2.transpose(-1, -2)
        if a_vec:
            ga = ga.squeeze(-2)
    if b.requires_grad:
        gb = a2.transpose(-1, -2) @ g2
        if b_vec:
            gb = gb.squeeze(-1)
    return ga, gb


# mm(a.unsqueeze(0), b).squeeze_(0)'s last node, which the batched matmul names (the others it
# names are views.py's and copies.py's specs): recorded through `record` with _batched_bw
SQUEEZE_MM = node("SqueezeBackward4", _batched_bw)


@op(
    method="matmul",
    dunder="__matmul__",
    function="matmul",
    grad_fn=("DotBackward0", "MmBackward0", "MvBackward0", "UnsafeViewBackward0", "SqueezeBackward4",
             "TransposeBackward0", "CloneBackward0"),
    autocast=dict(cuda="lower", cpu="lower"),
)
def matmul(input: Tensor, other: Any) -> Any:
    """The matrix product with torch's rules for 1-D, 2-D and batched operands.

    Args:
        input (Tensor): the left operand.
        other (Tensor): the right operand.

    A 1-D left operand is a row vector and a 1-D right operand a column vector, their added
    dim removed from the result; batch dims (all but the last two) broadcast. `@` is the same.

    Example::

        >>> a = rustgrad.tensor([[1., 2.], [3., 4.]])
        >>> a @ rustgrad.tensor([1., 1.])
        tensor([3., 7.])
        >>> rustgrad.tensor([1., 1.]) @ a
        tensor([4., 6.])
        >>> (rustgrad.ones(3, 1, 2) @ a).shape
        torch.Size([3, 1, 2])
    """
    if not isinstance(other, Tensor):
        return NotImplemented
    ad, bd = input._data, other._data
    same_device(ad, bd)
    na, nb = ad.ndim, bd.ndim
    if na == 0 or nb == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D"
        )
    ka = ad.shape[-1]
    kb = bd.shape[0] if nb == 1 else bd.shape[-2]
    if na == 1 and nb == 1 and ad.dtype != bd.dtype:
        dot(input, other)  # torch checks dot's dtypes before its sizes
    if na >= 3 and nb >= 3 and ad.shape[:-2] != bd.shape[:-2]:
        check_broadcastable(ad.shape[:-2], bd.shape[:-2])  # batch dims first, as torch's expand
    if ka != kb:
        if na == 1 and nb == 1:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have the same "
                f"number of elements, but got {ka} and {kb} elements respectively"
            )
        rows = math.prod(ad.shape[:-1])
        if nb == 1:  # torch folds to mv
            raise RuntimeError(
                f"size mismatch, got input ({rows}), mat ({rows}x{ka}), vec ({kb})"
            )
        if nb == 2:  # torch folds to mm
            raise RuntimeError(
                f"mm: mat1 and mat2 shapes cannot be multiplied ({rows}x{ka} and "
                f"{kb}x{bd.shape[-1]})"
            )
        batch = math.prod(input._backend.broadcast_shapes(ad.shape[:-2], bd.shape[:-2]))
        raise RuntimeError(
            "Expected size for first two dimensions of batch2 tensor to be: "
            f"[{batch}, {ka}] but got: [{batch}, {kb}]."
        )
    if ad.dtype != bd.dtype:
        raise _matmul_dtype_error(input, other)
    if ad.dtype.kind == "b":
        if na <= 2 and nb <= 2:
            _no_bool("dot" if na == nb == 1 else "addmv_impl_cpu" if nb == 1 else "addmm_impl_cpu_",
                     ad)
        _no_bool("bmm", ad)
    out = _rounded(input._backend.matmul(ad, bd), ad)
    if na == 2 and nb == 2:
        return _mm_record(out, input, other)
    s1, s2 = input if other.requires_grad else None, other if input.requires_grad else None
    if na == 1 and nb == 1:
        return DOT.record(out, (input, other), self=s1, tensor=s2)
    if na == 2 and nb == 1:
        return MV.record(out, (input, other), self=s1, vec=s2)
    out_t = _BATCHED[_batched_name(input, other)].record(out, (input, other), self=input,
                                                         other=other)
    if na == 1 and nb == 2:
        out_t._bump_version()  # torch: mm(a.unsqueeze(0), b).squeeze_(0)
    return out_t


def _matmul_dtype_error(a: Tensor, b: Tensor) -> RuntimeError:
    """torch's refusal of operands of different dtypes, from the product matmul folds to."""
    ad, bd = a._data, b._data
    na, nb = ad.ndim, bd.ndim
    if nb == 2 or (na == 1 and nb == 2):  # mm, with a's rows folded
        m1, m2 = ad, bd
    elif nb >= 3 and _batched_name(a, b) in ("TransposeBackward0", "CloneBackward0"):
        m1, m2 = bd, ad  # folded as (b.mT @ a.t()).mT: an mm with the operands swapped
    elif nb == 1:  # mv, with a's leading dims folded
        return RuntimeError(
            f"addmv input tensors must have the same dtype, but got {_scalar_name(bd)}, "
            f"{_scalar_name(ad)}, and {_scalar_name(bd)}"
        )
    else:  # bmm
        return RuntimeError(
            f"expected scalar type {_scalar_name(ad)} but found {_scalar_name(bd)}"
        )
    return RuntimeError(
        f"expected m1 and m2 to have the same dtype, but got: {_cpp_name_of(m1)} != {_cpp_name_of(m2)}"
    )


# the batched product's node, named as the view or copy torch's folded product ends on (their
# specs are views.py's and copies.py's) with the product's formula
_BATCHED = {name: node(name, _batched_bw, saved=("self", "other"), variant=True) for name in (
    "SqueezeBackward4", "TransposeBackward0", "CloneBackward0", "UnsafeViewBackward0")}


def _batched_name(a: Tensor, b: Tensor) -> str:
    """The grad_fn name torch's _matmul_impl ends on for 1-D @ 2-D and batched operands."""
    ash, bsh = a._data.shape, b._data.shape
    na, nb = len(ash), len(bsh)
    if na == 1 and nb == 2:
        return "SqueezeBackward4"  # mm(a.unsqueeze(0), b).squeeze_(0)
    if na == 3 and nb == 3 and ash[0] != bsh[0] and ash[0] == 1 and a.requires_grad:
        na, ash = 2, ash[1:]  # torch squeezes a broadcast batch of 1 that requires grad
    if na == 2 and nb >= 3 and a.requires_grad:
        # folded as (b.mT @ a.t()).mT().contiguous(): a copy unless already contiguous
        n, p = ash[0], bsh[-1]
        numel = n * p
        for s in bsh[:-2]:
            numel *= s
        return "TransposeBackward0" if n == 1 or p == 1 or numel == 0 else "CloneBackward0"
    return "UnsafeViewBackward0"


@op(dunder="__rmatmul__", autocast=dict(cuda="lower", cpu="lower"))
def rmatmul(input: Tensor, other: Any) -> Any:
    """other @ input, for a non-tensor on the left."""
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, input)
