"""Helpers shared by the op families: promotion, device checks, broadcasting reduction."""

from __future__ import annotations

from typing import Any, Tuple

from .. import _core, _creation, _dtype
from .._backends import _NDARRAY
from .._backends import check_all_same_device as same_devices  # noqa: F401  (for the families)
from .._backends import check_same_device as _check_same_device
from .._backends import cpu_scalar_beside as _cpu_scalar_beside
from .._tensor import Tensor
from ._node import node

record = _core.record
is_grad_enabled = _core.is_grad_enabled
_SCALAR_TYPES = (int, float, bool)


def const(array: Any) -> Tensor:
    """A tensor around an array that never requires grad: a constant of a formula."""
    return record(array, (), "", None)


def quiet_fp(xp: Any) -> Any:
    """The array library's floating-point warnings silenced (torch computes inf/nan silently)."""
    return xp.errstate(all="ignore")


def floating(t: Tensor) -> Any:
    """t's array, cast to the default float dtype if it is integral or bool (torch's sin(int)
    is float)."""
    d = t._data
    if d.dtype.kind in "biu":
        return d.astype(_dtype.get_default_dtype().np)
    return d


def needs_grad(*ts: Any) -> Tuple[bool, ...]:
    """For each argument, whether it is a tensor that requires grad."""
    return tuple(isinstance(t, Tensor) and t.requires_grad for t in ts)


def as_scalar(x: Any) -> Any:
    """A Python number for torch's "wrapped scalar" rules, or None if x is not a number."""
    t = type(x)
    if t is float or t is int or t is bool:
        return x
    if isinstance(x, bool):
        return bool(x)
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        return float(x)
    if hasattr(x, "dtype") and getattr(x, "ndim", 1) == 0 and not isinstance(x, Tensor):
        return x.item()
    return None


def complex_scalar(input: Tensor, s: complex) -> Tensor:
    """A Python complex number as the 0-d constant that stands for it beside input: of the
    dtype torch's promotion gives the pair (a CPU scalar, taken to input's device by promote)."""
    return _creation.tensor(s, dtype=_dtype.result_type(input, s))


def same_device(a: Any, b: Any) -> None:
    """torch's "Expected all tensors to be on the same device" unless arrays a and b share a
    device (type and index: cuda:0 against cuda:1 is caught). NumPy arrays pass on a type check."""
    if type(a) is not _NDARRAY or type(b) is not _NDARRAY:
        _check_same_device(a, b)


def promote(a: Tensor, b: Tensor) -> Tuple[Any, Any]:
    """a's and b's arrays cast to torch's result dtype of (a, b); a 0-d CPU tensor beside a
    device tensor is taken to that device, as torch's scalar (its gradient returns to the CPU:
    Note [Input metadata])."""
    ad, bd = a._data, b._data
    if type(ad) is not _NDARRAY or type(bd) is not _NDARRAY:
        ad, bd = _cpu_scalar_beside(ad, bd)
        _check_same_device(ad, bd)
    if ad.dtype != bd.dtype:
        rt = _dtype.result_type(a, b).np
        ad = ad.astype(rt, copy=False)
        bd = bd.astype(rt, copy=False)
    return ad, bd


def broadcast_error(err: Exception, *shapes: Tuple[int, ...]) -> Exception:
    """torch's error for shapes that do not broadcast (as infer_size: folded left to right,
    each pair compared from the last dimension), or `err` itself if they do broadcast."""
    acc: Tuple[int, ...] = ()
    for shape in shapes:
        n = max(len(acc), len(shape))
        a = (1,) * (n - len(acc)) + tuple(acc)
        b = (1,) * (n - len(shape)) + tuple(shape)
        for i in range(n - 1, -1, -1):
            if a[i] != b[i] and a[i] != 1 and b[i] != 1:
                return RuntimeError(
                    f"The size of tensor a ({a[i]}) must match the size of tensor b ({b[i]}) at "
                    f"non-singleton dimension {i}"
                )
        acc = tuple(y if x == 1 else x for x, y in zip(a, b))
    return err


def check_broadcastable(*shapes: Tuple[int, ...]) -> None:
    """torch's RuntimeError when the shapes do not broadcast together (see broadcast_error)."""
    ok = RuntimeError()
    err = broadcast_error(ok, *shapes)
    if err is not ok:
        raise err


def scalar_operand(ad: Any, s: Any) -> Any:
    """a's array cast so that `array (op) s` has torch's dtype (int tensor * 2.5 is float32)."""
    kind = ad.dtype.kind
    if kind == "f" or _dtype.is_floating_np(ad.dtype):
        return ad
    if type(s) is float:
        return ad.astype(_dtype.get_default_dtype().np)
    if kind == "b" and type(s) is int:
        return ad.astype(_dtype.int64.np)
    return ad


def is_bf16(np_dtype: Any) -> bool:
    """Whether arrays of this dtype hold bfloat16 (ml_dtypes' type, NumPy kind "V")."""
    return np_dtype.kind == "V" and _dtype.is_floating_np(np_dtype)


def opmath(d: Any) -> Any:
    """A bfloat16 array as float32, the type torch's CPU kernels compute bfloat16 in (NumPy's
    bfloat16 loops would round after every step of a formula); other arrays as they are. The
    caller rounds the result back with `.astype(input dtype)`."""
    return d.astype("float32") if d.dtype.kind == "V" and is_bf16(d.dtype) else d


def with_float_scalar(fn: Any, ad: Any, s: Any) -> Any:
    """fn(ad, s) for a Python float s. On bfloat16 it runs as torch's CPU kernels do: in
    float32 with the scalar unrounded, rounded to bfloat16 once (NumPy would round s first)."""
    if ad.dtype.kind == "V":
        return fn(ad.astype("float32"), s).astype(ad.dtype)
    return fn(ad, s)


def sum_to(g: Tensor, shape: Tuple[int, ...]) -> Tensor:
    """Sums a broadcast gradient back to `shape` (in rustgrad ops, so it is differentiable)."""
    gshape = g._data.shape
    if gshape == tuple(shape):
        return g
    lead = len(gshape) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gshape[lead + i] != 1:
            dims.append(lead + i)
    if dims:
        g = g.sum(tuple(dims), keepdim=True)
    if lead:
        g = g.reshape(tuple(shape))
    return g


def _real_part_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g  # the engine casts it to the complex input's dtype (imaginary part 0)


# the real part as a gradient takes it: torch's node name for Tensor.real (a select of
# view_as_real), over a new array rather than a view of the complex one
_REAL_PART = node("SelectBackward0", _real_part_bw, variant=True)


def real_part(t: Tensor) -> Tensor:
    """The real part of complex t as a new tensor (not a view), differentiable."""
    return _REAL_PART.record(t._data.real.copy(), (t,))


def cast_grad(g: Tensor, np_dtype: Any) -> Tensor:
    """Gradients flow back in the input's dtype; a real input takes the real part of a complex
    gradient (torch's convention: the gradient of a real x is dL/dx)."""
    if g is None or g._data.dtype == np_dtype:
        return g
    if g._data.dtype.kind == "c" and np_dtype.kind != "c":
        g = real_part(g)
        if g._data.dtype == np_dtype:
            return g
    return g.to(_dtype.from_np(np_dtype))


def conform(g: Tensor, shape: Tuple[int, ...], np_dtype: Any, numpy: bool = False) -> Tensor:
    """The engine's call (Note [Input metadata], rust/core/src/engine.rs): a formula's gradient
    summed to its input's shape and cast to its dtype, and taken to the CPU for a NumPy input
    (a 0-d CPU tensor that met a device tensor as torch's scalar)."""
    g = cast_grad(sum_to(g, shape), np_dtype)
    if numpy and type(g._data) is not _NDARRAY:
        g = g.cpu()
    return g


# a view's _creation_meta when made in no_grad or inference mode (it has no edge to its base),
# or returned with others by one function (unbind, split): views that refuse in-place writes
MODE_VIEWS = (_core.CREATION_NO_GRAD_MODE, _core.CREATION_INFERENCE_MODE,
              _core.CREATION_MULTI_OUTPUT_NODE)


def check_inplace(t: Tensor) -> None:
    """torch's refusals for in-place ops on tensors that autograd needs unchanged, in torch's
    order. (An op whose other operand requires grad is refused on a no_grad view by
    copyslices.commit.)"""
    if is_grad_enabled() and t.requires_grad:
        base = t._base
        if base is not None:
            if t._creation_meta in MODE_VIEWS:
                raise t._view_mode_error("is being")
            if base.requires_grad and base.is_leaf:
                raise RuntimeError(
                    "a view of a leaf Variable that requires grad is being used in an in-place "
                    "operation."
                )
        if t.is_leaf:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation."
            )
    t._check_inplace_mode()


def name_function(fn: Any, name: str) -> None:
    """Names a function made by a factory as the op it is, in its code object too: tracebacks
    and the version-bump provenance (explain(), the in-place error) show `sigmoid_`, not the
    factory's closure."""
    fn.__name__ = fn.__qualname__ = name
    code = fn.__code__
    extra = {"co_qualname": name} if hasattr(code, "co_qualname") else {}
    fn.__code__ = code.replace(co_name=name, **extra)


def check_internal_overlap(t: Tensor) -> None:
    """torch's refusal to write into a tensor whose elements share memory (an expanded view):
    the result would depend on the order of the writes. Only a view can overlap."""
    check_array_overlap(t._data)


def overlaps(a: Any) -> bool:
    """Whether elements of array `a` share memory (torch's has_internal_overlap, YES case)."""
    if a.base is None:
        return False
    for size, stride in zip(a.shape, a.strides):
        if stride == 0 and size > 1 and a.size:
            return True
    return False


def check_array_overlap(a: Any) -> None:
    """check_internal_overlap of an array (the destination of a write)."""
    if overlaps(a):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation."
        )


_INT_BOUNDS: dict = {}


def wrap_int(dtype: Any, s: int, any_size: bool = False) -> int:
    """A Python int as an integer tensor of `dtype` reads it: torch wraps it around (250 + 10
    is 4 in uint8) where NumPy raises OverflowError. Beyond the 64-bit range it stays as is,
    for NumPy to refuse as torch does, unless `any_size` (a product computed in the dtype)."""
    bounds = _INT_BOUNDS.get(dtype)
    if bounds is None:
        bits = dtype.itemsize * 8
        lo = 0 if dtype.kind == "u" else -(1 << (bits - 1))
        bounds = _INT_BOUNDS[dtype] = (lo, lo + (1 << bits) - 1, bits)
    lo, hi, bits = bounds
    if lo <= s <= hi or not (any_size or -(1 << 63) <= s < (1 << 64)):
        return s
    s &= (1 << bits) - 1
    return s - (1 << bits) if s > hi else s


def checked_int(np_dt: Any, s: Any) -> Any:
    """A Python int written into an array of dtype np_dt, as torch's checked conversion: out
    of range is torch's RuntimeError, where NumPy raises OverflowError; a negative into an
    unsigned dtype wraps (-1 is 255 in uint8). Anything else passes as it is."""
    if type(s) is not int:
        return s
    bounds = _dtype.checked_int_bounds(np_dt)
    if bounds is None:
        return s
    if not bounds[0] <= s <= bounds[1]:
        raise RuntimeError(f"value cannot be converted to type {_dtype.C_INT_NAMES[np_dt.name]} "
                           "without overflow")
    return wrap_int(np_dt, s)


def check_inplace_cast(t: Tensor, result: _dtype.dtype) -> None:
    mine = t.dtype
    if result._cat > mine._cat:
        raise RuntimeError(
            f"result type {_type_name(result)} can't be cast to the desired output type "
            f"{_type_name(mine)}"
        )


_type_name = _dtype.scalar_type_name


def describe(array: Any) -> str:
    """torch's name of a tensor in errors: `torch.FloatTensor [3]`."""
    d = _dtype.from_np(array.dtype)
    shape = ", ".join(str(s) for s in array.shape)
    return f"torch.{_dtype.LEGACY_NAMES[d.name]} [{shape}]"


def can_require_grad(array: Any) -> bool:
    return array.dtype.kind == "c" or _dtype.is_floating_np(array.dtype)


# ---- gradients that select ---------------------------------------------------------------
def _select_grad_bw(gg: Tensor, saved: Any, ctx: Any) -> Any:
    keep, slope, name = ctx
    zero = const(gg._backend.zeros_like(gg._data))
    return select_grad(gg, saved.self, keep, name, slope), zero


def _not_implemented_bw(g: Tensor, saved: Any, op: Any) -> Any:
    raise RuntimeError(f"derivative for aten::{op} is not implemented")


# torch's node for an op without a derivative (bincount, heaviside): ctx is the op's name, and
# the error comes at backward, as torch's
NOT_IMPLEMENTED = node("torch::autograd::NotImplemented", _not_implemented_bw)


# the backward nodes of relu/threshold, hardtanh and leaky_relu's backwards (double backward)
_SELECT_GRAD = {name: node(name, _select_grad_bw, saved=("self",)) for name in (
    "ThresholdBackwardBackward0", "HardtanhBackwardBackward0", "LeakyReluBackwardBackward0")}


def select_grad(g: Tensor, x: Tensor, keep: Any, name: str, slope: Any = None) -> Tensor:
    """g where the bool array `keep` holds, else 0 (or g * slope): the backward of relu,
    threshold, hardtanh and leaky_relu. A selection, not a product with a 0/1 mask, so that a
    NaN or inf in g is cut off where the input was, as torch's kernels do. Recorded as torch's
    `name` node over (g, x): under create_graph the gradient requires grad when either does,
    with the gradient of g being this selection again and that of x zero (the op is piecewise
    linear)."""
    gd = g._data
    xp = g._backend
    other = gd.dtype.type(0) if slope is None else gd * gd.dtype.type(slope)
    where = xp.kernels.where
    out = None if where is None else where(keep, gd, other)
    if out is None:
        out = xp.where(keep, gd, other)
    if out.dtype != gd.dtype:
        out = out.astype(gd.dtype)
    return _SELECT_GRAD[name].record(out, (g, x), (keep, slope, name), self=x)


# ---- memory overlap between a written tensor and its operands -----------------------------
_NO, _FULL, _PARTIAL, _TOO_HARD = range(4)


def _non_overlapping_and_dense(a: Any) -> bool:
    """torch's is_non_overlapping_and_dense: some order of the dims makes `a` contiguous
    (dims of size 1 skipped; negative strides never qualify)."""
    item = a.itemsize
    dims = sorted((st, n) for n, st in zip(a.shape, a.strides) if n != 1)
    expected = item
    for st, n in dims:
        if st != expected:
            return False
        expected *= n
    return True


def overlap_status(xp: Any, a: Any, b: Any) -> int:
    """torch's get_overlap_status of arrays a and b: FULL for the same elements in the same
    layout, PARTIAL when their memory ranges meet otherwise, TOO_HARD when either is not
    non-overlapping-and-dense (torch gives up), else NO."""
    if a is b:
        return _FULL
    if not _may_share(a, b):
        return _NO
    if a.size == 0 or b.size == 0 or type(a) is not type(b):
        return _NO
    if not (_non_overlapping_and_dense(a) and _non_overlapping_and_dense(b)):
        return _TOO_HARD
    a_begin, b_begin = xp.data_ptr(a), xp.data_ptr(b)
    a_end, b_end = a_begin + a.nbytes, b_begin + b.nbytes
    if a_begin == b_begin and a_end == b_end:
        same = [s // a.itemsize for s in a.strides] == [s // b.itemsize for s in b.strides]
        return _FULL if same else _PARTIAL
    return _PARTIAL if a_begin < b_end and b_begin < a_end else _NO


def _shared_memory_error() -> RuntimeError:
    return RuntimeError(
        "unsupported operation: some elements of the input tensor and the written-to tensor "
        "refer to a single memory location. Please clone() the tensor before performing the "
        "operation."
    )


def _root(a: Any) -> Any:
    """The object at the end of a's chain of bases: the owner of its memory."""
    while True:
        b = getattr(a, "base", None)
        if b is None:
            return a
        a = b


def _may_share(a: Any, b: Any) -> bool:
    """False when a and b surely hold separate memory (owned by different arrays): the cheap
    common case, a few attribute reads."""
    if a is b:
        return True
    if a.base is None and b.base is None:
        return False
    return _root(a) is _root(b)


def check_array_partial_overlap(xp: Any, out: Any, operand: Any) -> None:
    """check_no_partial_overlap of arrays (the destination of a write and what it reads)."""
    if out is not operand and _may_share(out, operand) and \
            overlap_status(xp, out, operand) == _PARTIAL:
        raise _shared_memory_error()


def check_no_partial_overlap(out: Tensor, operand: Any) -> None:
    """torch's assert_no_partial_overlap before an in-place write of `out` that reads the tensor
    `operand`: the same elements (x.add_(x)) or memory torch cannot judge (an expanded or
    strided view) pass; memory shared otherwise (x.add_(x.t()), x[1:].add_(x[:2])) is refused,
    since the result would depend on the order of the writes."""
    if isinstance(operand, Tensor):
        check_array_partial_overlap(out._backend, out._data, operand._data)


def check_no_overlap(out: Tensor, operand: Any) -> None:
    """torch's assert_no_overlap, stricter than check_no_partial_overlap, before the indexed
    writes (index_add_, index_put_): an operand sharing any written memory is refused, the same
    elements included."""
    if not isinstance(operand, Tensor):
        return
    a, b = out._data, operand._data
    if _may_share(a, b) and overlap_status(out._backend, a, b) in (_FULL, _PARTIAL):
        raise _shared_memory_error()


def same_elements(a: Any, b: Any, xp: Any) -> bool:
    """Whether arrays a and b are the same elements of the same memory in the same layout and
    dtype (torch's is_same_data in copy_, where there is nothing to copy)."""
    if a is b:
        return True
    if (a.base is None and b.base is None) or type(a) is not type(b):
        return False
    return (a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype
            and xp.data_ptr(a) == xp.data_ptr(b))


def capturing(xp: Any) -> bool:
    """Whether a CUDA graph capture is under way on the current stream, for backend `xp`'s
    arrays (False on the CPU): host reads of device values (bounds checks) are skipped then."""
    if xp.DEVICE_TYPE != "cuda":
        return False
    from .. import cuda

    return cuda.is_current_stream_capturing()
