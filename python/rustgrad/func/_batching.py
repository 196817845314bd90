"""vmap's batched path: `func` runs once on whole-batch tensors, each op through a batching rule.

While a batched run is open, the public op entry points (the names `rustgrad._bind` attached to
Tensor and to the bound namespaces, as `autograd.forward_ad` swaps them) are wrapped. A tensor
carrying the batch is a `BatchedTensor`: the whole-batch tensor itself (its class changed, as
Parameter's), batch dimension first, whose ``shape``/``size()``/``dim()``/``ndim``/``numel()``
show the per-sample shape to `func` (and the full one to op code, which runs "busy"). Each
wrapped op with a batched argument applies a rule:

- elementwise ops: per-sample shapes right-aligned (batched arguments unsqueezed after the
  batch dimension), the op run once;
- reductions and other ops with a ``dim``: ``dim`` shifted past the batch dimension (all dims
  but the batch one for a full reduction);
- matmul/mm/mv/dot/bmm/linear: one batched matmul;
- views (reshape, view, flatten, transpose, permute, unsqueeze, squeeze, expand, basic
  indexing, select, narrow, ...): shapes and dims shifted;
- any other op: the per-op loop (each batched argument sliced, the op called per element, the
  results stacked).

Whatever the rules cannot express as torch would (a Python number read from a batched tensor,
an in-place write into an unbatched tensor, `backward`, a gradient of a batched output with
respect to an unbatched input, any error) raises `Fallback`: vmap then reruns `func` with its
per-element loop, which gives the current (torch's) results and errors.
"""

from __future__ import annotations

import _thread
import functools
import sys
from typing import Any, Callable, Dict, List, MutableMapping, Optional, Tuple

from .. import _bind, _core
from .._size import Size, _wrap_dim
from .._tensor import Tensor

_state = _thread._local()  # .busy: an op's own work (plain), .run: the open batched run
_ONE_RUN = _thread.allocate_lock()


class Fallback(Exception):
    """The batched run cannot continue: rerun `func` with the per-element loop."""


class _NoRule(Exception):
    """A rule does not cover these arguments (raised before the op runs): the per-op loop."""


def _busy() -> bool:
    return getattr(_state, "busy", False)


class _Busy:
    def __enter__(self) -> None:
        self.prev = _busy()
        _state.busy = True

    def __exit__(self, *args: object) -> None:
        _state.busy = self.prev


_DATA = _core.TensorBase.__dict__["_data"]


class BatchedTensor(Tensor):
    """A whole-batch tensor inside a batched vmap run: per-sample metadata outside the ops.

    Its array is read only by op code (busy): an op reached without the wrapped entry points
    (a reference taken before the run) would see the whole batch, so it stops the run."""

    @property
    def _data(self) -> Any:
        if _busy():
            return _DATA.__get__(self)
        raise Fallback("an op outside the wrapped entry points")

    @_data.setter
    def _data(self, value: Any) -> None:
        if not _busy():
            raise Fallback("an op outside the wrapped entry points")
        _DATA.__set__(self, value)

    @property
    def shape(self) -> Size:  # type: ignore[override]
        s = _DATA.__get__(self).shape
        return Size(s if _busy() else s[1:])

    def size(self, dim: Optional[int] = None) -> Any:  # type: ignore[override]
        s = _DATA.__get__(self).shape
        s = s if _busy() else s[1:]
        if dim is None:
            return Size(s)
        return s[_wrap_dim(dim, len(s))]

    @property
    def ndim(self) -> int:  # type: ignore[override]
        return _DATA.__get__(self).ndim - (0 if _busy() else 1)

    def dim(self) -> int:
        return _DATA.__get__(self).ndim - (0 if _busy() else 1)

    ndimension = dim

    def numel(self) -> int:
        n = 1
        for s in self.size():
            n *= s
        return n

    nelement = numel

    def __len__(self) -> int:
        if _busy():
            return Tensor.__len__(self)
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.size(0)

    def detach(self) -> Tensor:
        if _busy():
            return Tensor.detach(self)
        with _Busy():
            return _mark(Tensor.detach(self))

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        with _Busy():
            Tensor.requires_grad_(self, requires_grad)
        return self


def _refuse(name: str) -> Callable[..., Any]:
    orig = getattr(Tensor, name)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _busy():
            return orig(self, *args, **kwargs)
        raise Fallback(name)

    return method


# the members below are read from Tensor's dict: every family bound first, so none of them is a
# placeholder of a family not yet loaded (rustgrad._bind)
_bind.load_families()

for _n in ("__bool__", "__float__", "__int__", "__index__", "__iter__", "__array__", "__repr__",
           "__format__", "__deepcopy__", "__reduce_ex__", "item", "tolist", "numpy", "backward",
           "register_hook", "retain_grad", "apply_", "map_", "map2_", "detach_", "data_ptr",
           "stride", "is_contiguous", "storage_offset", "untyped_storage",
           "register_post_accumulate_grad_hook", "__dlpack__", "as_subclass"):
    setattr(BatchedTensor, _n, _refuse(_n))


def _refuse_prop(name: str) -> property:
    orig = Tensor.__dict__[name]

    def get(self: Any) -> Any:
        if _busy():
            return orig.__get__(self, Tensor)
        raise Fallback(name)

    return property(get)


for _n in ("data", "grad"):
    setattr(BatchedTensor, _n, _refuse_prop(_n))


def _as_busy(name: str) -> Any:
    """A hand-written Tensor method or property whose answer is the same for every element
    (dtype, device, ...): read with the array reachable."""
    orig = Tensor.__dict__[name]
    if isinstance(orig, property):
        def get(self: Any) -> Any:
            with _Busy():
                return orig.__get__(self, Tensor)
        return property(get)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _Busy():
            return orig(self, *args, **kwargs)
    return method


for _n in ("dtype", "device", "is_floating_point", "is_complex", "is_signed", "element_size",
           "itemsize", "is_cuda", "is_cpu", "layout", "get_device", "is_meta", "is_sparse",
           "_backend", "__hash__", "is_leaf_tensor", "is_pinned", "is_shared", "is_distributed",
           "name", "grad_dtype"):
    if _n in Tensor.__dict__:
        setattr(BatchedTensor, _n, _as_busy(_n))


# ---- the run --------------------------------------------------------------------------------
class _Run:
    def __init__(self, size: int) -> None:
        self.size = size
        self.made: List[Tensor] = []
        self.calls = 0  # wrapped-op calls with a batched argument (tests count them)


def _run() -> Any:
    return getattr(_state, "run", None)


def _mark(t: Any) -> Any:
    """t (a whole-batch tensor, batch dim first) as a BatchedTensor of the open run."""
    if isinstance(t, Tensor) and type(t) is not BatchedTensor:
        if type(t) is not Tensor:
            raise Fallback("subclass")
        t.__class__ = BatchedTensor
        _state.run.made.append(t)
    return t


def _is_b(x: Any) -> bool:
    return type(x) is BatchedTensor


def _has_b(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> bool:
    for a in args:
        if type(a) is BatchedTensor:
            return True
        if type(a) in (list, tuple) and any(type(b) is BatchedTensor for b in a):
            return True
    for a in kwargs.values():
        if type(a) is BatchedTensor:
            return True
        if type(a) in (list, tuple) and any(type(b) is BatchedTensor for b in a):
            return True
    return False


def _rank(x: Any) -> int:
    """Per-sample rank (call while busy)."""
    return x.ndim - 1 if _is_b(x) else x.ndim


def _align(x: Any, r: int) -> Any:
    """A batched x with per-sample rank raised to r by size-1 dims after the batch dim."""
    k = r - (x.ndim - 1)
    if k <= 0:
        return x
    return x.reshape((x.shape[0],) + (1,) * k + tuple(x.shape[1:]))


# ---- rules (run busy: shapes are full; a rule returns the op's result, batched marked) -------
def _mark_out(out: Any) -> Any:
    if isinstance(out, Tensor):
        return _mark(out)
    if isinstance(out, tuple) and all(isinstance(o, Tensor) for o in out):
        for o in out:
            _mark(o)
        return out
    if isinstance(out, list) and all(isinstance(o, Tensor) for o in out):
        for o in out:
            _mark(o)
        return out
    raise Fallback("non-tensor result")


def _elementwise(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    tens = [a for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)]
    if len({a.dtype for a in tens}) > 1:
        # type promotion reads whether an operand is 0-d per sample: the per-op loop keeps it
        raise _NoRule("dtypes")
    r = max(_rank(a) for a in tens)
    a2 = tuple(_align(a, r) if _is_b(a) else a for a in args)
    k2 = {k: (_align(v, r) if _is_b(v) else v) for k, v in kwargs.items()}
    return _mark_out(fn(*a2, **k2))


def _where(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    if len(args) + len(kwargs) != 3:  # where(condition): nonzero's index tensors
        raise _NoRule("where(condition)")
    return _elementwise(fn, args, kwargs)


def _inplace_elementwise(fn: Callable[..., Any], args: Tuple[Any, ...],
                         kwargs: Dict[str, Any]) -> Any:
    self = args[0]
    if not _is_b(self):
        raise Fallback("in-place into an unbatched tensor")
    r = _rank(self)
    a2 = (self,) + tuple(_align(a, r) if _is_b(a) else a for a in args[1:])
    k2 = {k: (_align(v, r) if _is_b(v) else v) for k, v in kwargs.items()}
    out = fn(*a2, **k2)
    if out is not self:
        raise Fallback("in-place result")
    return out


def _shift(d: Any, r: int) -> Any:
    if isinstance(d, (tuple, list)):
        return type(d)(_shift(x, r) for x in d)
    if isinstance(d, bool) or not isinstance(d, int):
        raise _NoRule("dim")
    if not -max(r, 1) <= d < max(r, 1):
        raise _NoRule("dim range")
    return (d % max(r, 1)) + 1


def _get(args: Tuple[Any, ...], kwargs: Dict[str, Any], pos: int, name: str) -> Tuple[bool, Any]:
    if name in kwargs:
        return True, kwargs[name]
    if len(args) > pos:
        return True, args[pos]
    return False, None


def _put(args: Tuple[Any, ...], kwargs: Dict[str, Any], pos: int, name: str,
         value: Any) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
    if name in kwargs or len(args) <= pos:
        k = dict(kwargs)
        k[name] = value
        return args, k
    a = list(args)
    a[pos] = value
    return tuple(a), kwargs


def _only_first_batched(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    x = args[0] if args else None
    if not _is_b(x):
        raise _NoRule("first argument")
    rest = list(args[1:]) + list(kwargs.values())
    if any(isinstance(a, Tensor) for a in rest) or any(
            type(a) in (list, tuple) and any(isinstance(b, Tensor) for b in a) for a in rest):
        raise _NoRule("tensor argument")
    return x


def _reduction(full_ok: bool) -> Callable[..., Any]:
    def rule(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        x = _only_first_batched(args, kwargs)
        r = _rank(x)
        given, d = _get(args, kwargs, 1, "dim")
        if not given or d is None:
            if not full_ok or r == 0:
                raise _NoRule("full reduction")
            if given:
                args, kwargs = _put(args, kwargs, 1, "dim", tuple(range(1, r + 1)))
            else:
                kwargs = dict(kwargs, dim=tuple(range(1, r + 1)))
        else:
            if isinstance(d, (tuple, list)) and len(d) == 0:
                raise _NoRule("empty dims")
            args, kwargs = _put(args, kwargs, 1, "dim", _shift(d, r))
        return _mark_out(fn(*args, **kwargs))
    return rule


def _dim_op(pos: int = 1, name: str = "dim", extra: int = 0,
            default: Optional[int] = None) -> Callable[..., Any]:
    """Ops with a dim at `pos` (extra: the dim may name one past the end; default: its value
    when not given)."""
    def rule(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        x = _only_first_batched(args, kwargs)
        given, d = _get(args, kwargs, pos, name)
        if not given and default is not None:
            given, d = True, default
        if not given or d is None:
            raise _NoRule("no dim")
        args, kwargs = _put(args, kwargs, pos, name, _shift(d, _rank(x) + extra))
        return _mark_out(fn(*args, **kwargs))
    return rule


def _two_dims(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    x = _only_first_batched(args, kwargs)
    if kwargs or len(args) != 3:
        raise _NoRule("args")
    r = _rank(x)
    return _mark_out(fn(x, _shift(args[1], r), _shift(args[2], r)))


def _shape_arg(args: Tuple[Any, ...]) -> Tuple[Any, ...]:
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        return tuple(args[0])
    return tuple(args)


def _reshape(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    x = _only_first_batched(args, kwargs)
    if kwargs:
        raise _NoRule("kwargs")
    shape = _shape_arg(args[1:])
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
        raise _NoRule("shape")
    return _mark_out(fn(x, (x.shape[0],) + shape))


def _expand(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    x = _only_first_batched(args, kwargs)
    if kwargs:
        raise _NoRule("kwargs")
    shape = _shape_arg(args[1:])
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
        raise _NoRule("shape")
    x = _align(x, len(shape))
    return _mark_out(fn(x, (x.shape[0],) + shape))


def _permute(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    x = _only_first_batched(args, kwargs)
    if kwargs:
        raise _NoRule("kwargs")
    dims = _shape_arg(args[1:])
    r = _rank(x)
    if len(dims) != r or r == 0:
        raise _NoRule("dims")
    return _mark_out(fn(x, (0,) + tuple(_shift(d, r) for d in dims)))


def _flatten(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    x = _only_first_batched(args, kwargs)
    r = _rank(x)
    if r == 0:
        raise _NoRule("0-d")
    _, s = _get(args, kwargs, 1, "start_dim")
    _, e = _get(args, kwargs, 2, "end_dim")
    s = 0 if s is None else s
    e = -1 if e is None else e
    args, kwargs = _put(args, kwargs, 1, "start_dim", _shift(s, r))
    args, kwargs = _put(args, kwargs, 2, "end_dim", _shift(e, r))
    return _mark_out(fn(*args, **kwargs))


def _squeeze(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    x = _only_first_batched(args, kwargs)
    r = _rank(x)
    given, d = _get(args, kwargs, 1, "dim")
    if given and d is not None:
        if r == 0:
            raise _NoRule("0-d")
        return _mark_out(fn(x, _shift(d, r)))
    out = x
    for i in reversed(range(1, r + 1)):
        if x.shape[i] == 1:
            out = out.squeeze(i)
    if out is x:
        out = x.view_as(x)
    return _mark_out(out)


def _unsqueeze(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    return _dim_op(1, "dim", extra=1)(fn, args, kwargs)


def _transpose(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    x = _only_first_batched(args, kwargs)
    r = _rank(x)
    if r == 0 or kwargs or len(args) != 3:
        raise _NoRule("transpose")
    return _mark_out(fn(x, _shift(args[1], r), _shift(args[2], r)))


def _t(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    x = _only_first_batched(args, kwargs)
    if _rank(x) != 2:
        raise _NoRule("t")
    return _mark_out(x.transpose(1, 2))


def _mT(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    x = _only_first_batched(args, kwargs)
    if _rank(x) < 2:
        raise _NoRule("mT")
    return _mark_out(fn(x))  # the last two dims: the batch dim stays first


def _T(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    x = _only_first_batched(args, kwargs)
    r = _rank(x)
    if r != 2:
        raise _NoRule("T")
    return _mark_out(x.transpose(1, 2))


def _basic_index(i: Any) -> bool:
    return i is None or i is Ellipsis or isinstance(i, slice) or (
        isinstance(i, int) and not isinstance(i, bool))


def _getitem(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    x = _only_first_batched(args, kwargs)
    idx = args[1]
    idx = idx if isinstance(idx, tuple) else (idx,)
    if not all(_basic_index(i) for i in idx) or (_rank(x) == 0 and idx != (Ellipsis,)):
        raise _NoRule("index")
    if sum(1 for i in idx if i is not None and i is not Ellipsis) > _rank(x):
        raise _NoRule("too many indices")
    return _mark_out(fn(x, (slice(None),) + idx))


def _view_as(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    if kwargs or len(args) != 2:
        raise _NoRule("args")
    x, other = args
    if not _is_b(x):
        raise _NoRule("view_as")
    if other is x:
        return _mark_out(fn(x, x))
    shape = tuple(other.shape[1:]) if _is_b(other) else tuple(other.shape)
    return _mark_out(x.view((x.shape[0],) + shape))


def _join(stacking: bool) -> Callable[..., Any]:
    def rule(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        given, ts = _get(args, kwargs, 0, "tensors")
        if not given or type(ts) not in (list, tuple) or not ts:
            raise _NoRule("tensors")
        if not all(isinstance(t, Tensor) for t in ts):
            raise _NoRule("tensors")
        rest = [v for k, v in kwargs.items() if k not in ("tensors", "dim")] + list(args[2:])
        if rest:
            raise _NoRule("args")
        ranks = {_rank(t) for t in ts}
        if len(ranks) != 1:
            raise _NoRule("ranks")
        r = ranks.pop()
        n = _state.run.size
        full = [t if _is_b(t) else t.unsqueeze(0).expand((n,) + tuple(t.shape)) for t in ts]
        _, d = _get(args, kwargs, 1, "dim")
        d = 0 if d is None else d
        if not stacking and r == 0:
            raise _NoRule("0-d cat")
        return _mark_out(fn(full, _shift(d, r + 1 if stacking else r)))
    return rule


def _align_n(x: Any, r: int) -> Any:
    """_align for a batched tensor that is not marked (made inside a rule)."""
    k = r - (x.ndim - 1)
    if k <= 0:
        return x
    return x.reshape((x.shape[0],) + (1,) * k + tuple(x.shape[1:]))


def _matmul_pair(a: Any, b: Any) -> Tensor:
    """a @ b per sample (either batched), as one matmul over the whole batch."""
    ba, bb = _is_b(a), _is_b(b)
    ra, rb = _rank(a), _rank(b)
    if ra == 0 or rb == 0:
        raise _NoRule("0-d matmul")
    va, vb = ra == 1, rb == 1
    A = a.unsqueeze(-2) if va else a
    B = b.unsqueeze(-1) if vb else b
    r = max(max(ra, 2), max(rb, 2))
    if ba:
        A = _align_n(A, r)
    if bb:
        B = _align_n(B, r)
    out = Tensor.__matmul__(A, B)
    if va:
        out = out.squeeze(-2)
    if vb:
        out = out.squeeze(-1)
    return out


def _matmul(kind: str) -> Callable[..., Any]:
    need = {"mm": (2, 2), "mv": (2, 1), "dot": (1, 1), "bmm": (3, 3), "vdot": (1, 1),
            "inner_": (1, 1)}.get(kind)

    def rule(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        if kwargs or len(args) != 2 or not all(isinstance(a, Tensor) for a in args):
            raise _NoRule("args")
        a, b = (args[1], args[0]) if kind == "rmatmul" else args
        if need is not None and (_rank(a), _rank(b)) != need:
            raise _NoRule("ranks")
        if a.dtype != b.dtype:
            raise _NoRule("dtypes")
        return _mark_out(_matmul_pair(a, b))
    return rule


def _linear(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    given, x = _get(args, kwargs, 0, "input")
    _, w = _get(args, kwargs, 1, "weight")
    _, bias = _get(args, kwargs, 2, "bias")
    if not (isinstance(x, Tensor) and isinstance(w, Tensor)) or (
            bias is not None and not isinstance(bias, Tensor)):
        raise _NoRule("args")
    if not _is_b(w) and not _is_b(bias):
        return _mark_out(fn(x, w, bias))
    if _rank(w) != 2 or _rank(x) == 0 or x.dtype != w.dtype:
        raise _NoRule("linear")
    wt = w.transpose(-1, -2)
    out = _matmul_pair(x, _mark(wt) if _is_b(w) else wt)
    if bias is not None:
        if _is_b(bias) and _rank(bias) > 1:
            raise _NoRule("bias")
        out = out + (_align(bias, out.ndim - 1) if _is_b(bias) else bias)
    return _mark_out(out)


_SIGS: Dict[int, Any] = {}


def _bind_args(fn: Callable[..., Any], args: Tuple[Any, ...],
               kwargs: Dict[str, Any]) -> Dict[str, Any]:
    import inspect
    sig = _SIGS.get(id(fn))
    if sig is None:
        sig = _SIGS[id(fn)] = (fn, inspect.signature(fn))
    try:
        bound = sig[1].bind(*args, **kwargs)
    except TypeError:
        raise _NoRule("arguments") from None
    bound.apply_defaults()
    return dict(bound.arguments)


def _class_loss(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    """cross_entropy / nll_loss with class-index targets: one call with reduction="none" over
    the batch's samples merged, then each element's reduction."""
    a = _bind_args(fn, args, kwargs)
    x, t = a.get("input"), a.get("target")
    if not (_is_b(x) and isinstance(t, Tensor)) or a.get("weight") is not None:
        raise _NoRule("loss")
    if a.get("size_average") is not None or a.get("reduce") is not None:
        raise _NoRule("legacy reduction")
    if a.get("label_smoothing", 0.0) != 0.0 or t.is_floating_point() or t.dtype == x.dtype:
        raise _NoRule("loss")
    reduction = a.get("reduction", "mean")
    r, rt = _rank(x), _rank(t)
    if r not in (1, 2) or rt != r - 1 or reduction not in ("mean", "sum", "none"):
        raise _NoRule("loss shapes")
    n = x.shape[0]
    if not _is_b(t):
        t = t.unsqueeze(0).expand((n,) + tuple(t.shape))
    if tuple(t.shape[1:]) != tuple(x.shape[1:-1]):
        raise _NoRule("target shape")
    rest = {k: v for k, v in a.items() if k not in ("input", "target", "reduction")}
    flat = fn(x.reshape(-1, x.shape[-1]), t.reshape(-1), reduction="none", **rest)
    if reduction == "none":
        return _mark_out(flat.reshape(tuple(t.shape)))
    per = flat.reshape(n, -1)
    total = per.sum(1)
    if reduction == "sum":
        return _mark_out(total)
    count = (t.reshape(n, -1) != a.get("ignore_index", -100)).sum(1)
    # an element whose targets are all ignored: nan, as torch's, with a zero gradient
    mean = (total / count.clamp(min=1).to(total.dtype)).masked_fill(count == 0, float("nan"))
    return _mark_out(mean)


def _passthrough(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    _only_first_batched(args, kwargs)
    return _mark_out(fn(*args, **kwargs))


def _loop(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    """The per-op fallback: fn once per batch element, on slices; results stacked."""
    n = _state.run.size

    def pick(v: Any, i: int) -> Any:
        if _is_b(v):
            return Tensor.select(v, 0, i)
        if type(v) in (list, tuple) and any(_is_b(b) for b in v):
            return type(v)(pick(b, i) for b in v)
        return v

    results = [fn(*[pick(a, i) for a in args], **{k: pick(v, i) for k, v in kwargs.items()})
               for i in range(n)]
    first = results[0]
    outs = first if isinstance(first, (tuple, list)) else [first]
    if any(isinstance(o, Tensor) and o._is_view() for o in outs):
        # a stacked copy would not alias the input as the op's view does
        raise Fallback("a view op without a rule")
    from .._ops.joins import stack
    if isinstance(first, Tensor):
        return _mark(stack(results, 0))
    if isinstance(first, (tuple, list)) and first and all(isinstance(o, Tensor) for o in first):
        cols = [_mark(stack([r[j] for r in results], 0)) for j in range(len(first))]
        if hasattr(first, "_fields"):
            return type(first)(*cols)
        return type(first)(cols)
    raise Fallback("non-tensor result")


def _loop_inplace(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    self = args[0]
    if not _is_b(self):
        raise Fallback("in-place into an unbatched tensor")
    n = _state.run.size

    def pick(v: Any, i: int) -> Any:
        if _is_b(v):
            return Tensor.select(v, 0, i)
        if type(v) in (list, tuple) and any(_is_b(b) for b in v):
            return type(v)(pick(b, i) for b in v)
        return v

    for i in range(n):
        fn(*[pick(a, i) for a in args], **{k: pick(v, i) for k, v in kwargs.items()})
    return self


_ELEMENTWISE = set("""
abs absolute neg negative exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan sinh
cosh tanh asinh acosh atanh arcsin arccos arctan arcsinh arccosh arctanh sigmoid relu relu6 gelu
silu mish elu selu celu leaky_relu hardtanh hardsigmoid hardswish softplus softsign tanhshrink
logsigmoid sqrt rsqrt square reciprocal sign sgn floor ceil round trunc frac erf erfc erfinv
lgamma digamma clamp clip clamp_min clamp_max add sub subtract mul multiply div divide true_divide
pow float_power atan2 arctan2 maximum minimum fmax fmin fmod remainder where eq ne lt le gt ge
greater less greater_equal less_equal not_equal logical_and logical_or logical_xor
logical_not bitwise_and bitwise_or bitwise_xor bitwise_not isnan isinf isfinite nan_to_num lerp
addcmul addcdiv hypot xlogy copysign heaviside sinc logit rad2deg deg2rad positive conj
zeros_like ones_like empty_like full_like contiguous clone float double half bfloat16 int long
bool short masked_fill
__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __pow__ __rpow__
__neg__ __pos__ __abs__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __and__ __or__ __xor__
__rand__ __ror__ __rxor__ __invert__ __floordiv__ __rfloordiv__ __mod__ __rmod__ floor_divide
threshold
""".split())

_REDUCE_FULL = set("sum mean amax amin all any nansum nanmean count_nonzero".split())
_REDUCE_DIM = set("logsumexp cumsum cumprod cummax cummin softmax log_softmax softmin "
                  "prod".split())


def _rule_for(name: str) -> Callable[..., Any]:
    if name == "where":
        return _where
    if name in _ELEMENTWISE:
        return _elementwise
    if name in _REDUCE_FULL:
        return _reduction(True)
    if name in ("argmax", "argmin"):
        return _dim_op()
    if name in ("max", "min"):
        return _maxmin
    if name in _REDUCE_DIM:
        return _dim_op()
    if name in ("select", "narrow"):
        return _dim_op()
    if name in ("split", "chunk"):
        return _dim_op(2, "dim", default=0)
    if name == "unbind":
        return _dim_op(1, "dim", default=0)
    if name in ("reshape", "view"):
        return _reshape
    if name == "expand":
        return _expand
    if name == "permute":
        return _permute
    if name == "flatten":
        return _flatten
    if name == "squeeze":
        return _squeeze
    if name == "unsqueeze":
        return _unsqueeze
    if name in ("transpose", "swapaxes", "swapdims"):
        return _transpose
    if name == "t":
        return _t
    if name in ("mT", "mH") or (name == "adjoint"):
        return _mT
    if name == "T":
        return _T
    if name in ("movedim", "moveaxis"):
        return _two_dims
    if name == "__getitem__":
        return _getitem
    if name in ("view_as", "reshape_as"):
        return _view_as
    if name in ("stack", "cat", "concat", "concatenate"):
        return _join(name == "stack")
    if name in ("matmul", "__matmul__", "mm", "mv", "dot", "bmm", "vdot"):
        return _matmul(name.strip("_"))
    if name == "__rmatmul__":
        return _matmul("rmatmul")
    if name == "linear":
        return _linear
    if name in ("cross_entropy", "nll_loss"):
        return _class_loss
    if name in ("to", "requires_grad_", "type"):
        return _passthrough
    return _loop


def _maxmin(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    given, d = _get(args, kwargs, 1, "dim")
    if given and isinstance(d, Tensor):
        return _elementwise(fn, args, kwargs)
    if given and d is not None:
        return _dim_op()(fn, args, kwargs)
    return _loop(fn, args, kwargs)


def _inplace(name: str) -> bool:
    if name.startswith("__"):
        return name.startswith("__i") and name not in ("__invert__", "__index__", "__iter__",
                                                       "__int__") or name == "__setitem__"
    return name.endswith("_") and name != "requires_grad_"


# ---- the wrapped entry points ------------------------------------------------------------------
def dispatch(name: str, fn: Callable[..., Any], args: Tuple[Any, ...],
             kwargs: Dict[str, Any]) -> Any:
    """fn(*args, **kwargs) in the open batched run: through name's rule when an argument is
    batched."""
    run = _run()
    if run is None or _busy() or not _has_b(args, kwargs):
        return fn(*args, **kwargs)
    run.calls += 1
    _state.busy = True
    try:
        if _inplace(name):
            base = name[:-1] if not name.startswith("__") else "__" + name[3:]
            if name != "__setitem__" and base in _ELEMENTWISE and kwargs.get("inplace") is None:
                try:
                    return _inplace_elementwise(fn, args, kwargs)
                except _NoRule:
                    pass
            return _loop_inplace(fn, args, kwargs)
        if kwargs.get("inplace") or kwargs.get("out") is not None:
            raise Fallback("inplace/out")
        try:
            return _rule_for(name)(fn, args, kwargs)
        except _NoRule:
            return _loop(fn, args, kwargs)
    finally:
        _state.busy = False


def _make(name: str, fn: Callable[..., Any]) -> Any:
    def entry(*args: Any, **kwargs: Any) -> Any:
        if getattr(_state, "run", None) is None or getattr(_state, "busy", False):
            return fn(*args, **kwargs)
        return dispatch(name, fn, args, kwargs)

    entry = functools.update_wrapper(entry, fn)
    entry._vmap_of = fn  # type: ignore[attr-defined]
    return entry


_WRAPPERS: Dict[Tuple[int, str], Tuple[Any, Any]] = {}
_SWAPPED = _bind.EntryPointSwap(Tensor)
_BY_FN: Dict[int, Tuple[Any, Any]] = {}


def _wrapper(name: str, fn: Callable[..., Any]) -> Any:
    key = (id(fn), name)
    hit = _WRAPPERS.get(key)
    if hit is not None and hit[0] is fn:
        return hit[1]
    w = _make(name, fn)
    _WRAPPERS[key] = (fn, w)
    _BY_FN[id(fn)] = (fn, w)
    return w


def _ns_entries(target: str, ns: MutableMapping[str, Any], names: List[str]) -> List[Any]:
    return [(owner, name, orig, _wrapper(name, orig))
            for owner, name, orig in _bind.namespace_entry_points(target, ns, names, "_vmap_of")]


def _swap_ns(target: str, ns: MutableMapping[str, Any], names: List[str]) -> None:
    for owner, name, _orig, w in _ns_entries(target, ns, names):
        _SWAPPED.set(owner, name, w)


def _on_bind(target: str, ns: MutableMapping[str, Any], names: List[str]) -> None:
    if _run() is not None and _SWAPPED:
        _swap_ns(target, ns, names)


def _tensor_entry(name: str, orig: Any) -> Any:
    if isinstance(orig, property):
        if orig.fget is None:
            return None
        return property(_wrapper(name, orig.fget), orig.fset, orig.fdel, orig.__doc__)
    return _wrapper(name, orig)


def _plan() -> List[Tuple[Any, str, Any, Any]]:
    """(owner, name, original, wrapped) of every entry point a run swaps."""
    plan: List[Tuple[Any, str, Any, Any]] = []
    for name, orig in _bind.tensor_entry_points(Tensor):
        w = _tensor_entry(name, orig)
        if w is not None:
            plan.append((Tensor, name, orig, w))
    for target, ns, bound in _bind.bound_namespaces(_on_bind):
        plan += _ns_entries(target, ns, bound)
    from .. import _creation
    cns = vars(_creation)
    for name in ("zeros_like", "ones_like", "empty_like", "full_like"):
        if name in cns:
            plan.append((cns, name, cns[name], _wrapper(name, cns[name])))
    from ..autograd import __dict__ as autograd_ns
    gmod = vars(sys.modules[__package__ + "._grad"])
    for ns, name, repl in ((autograd_ns, "grad", _autograd_grad_rule),
                           (gmod, "_autograd_grad", _autograd_grad_rule),
                           (gmod, "zeros_like", None),
                           (gmod, "_grad_and_value", _grad_and_value_rule)):
        orig = ns[name]
        plan.append((ns, name, orig, _wrapper(name, orig) if repl is None
                     else functools.partial(repl, orig)))
    from ..autograd import forward_ad
    fwd = vars(forward_ad)
    plan.append((fwd, "enter_dual_level", fwd["enter_dual_level"],
                 functools.partial(_no_dual_level, fwd["enter_dual_level"])))
    fns = vars(sys.modules[__package__])
    plan.append((fns, "debug_unwrap", fns["debug_unwrap"],
                 functools.partial(_debug_unwrap, fns["debug_unwrap"])))
    return plan


_PLAN: List[Tuple[Any, str, Any, Any]] = []
_PLAN_FOR = -1  # how many namespaces were bound when _PLAN was made


def _install() -> None:
    global _PLAN, _PLAN_FOR
    n = len(_bind.bound_namespaces())
    if n != _PLAN_FOR:
        _PLAN, _PLAN_FOR = _plan(), n
    for k, (owner, name, orig, w) in enumerate(_PLAN):
        cur = owner.__dict__.get(name) if owner is Tensor else owner.get(name)
        if cur is not orig:  # replaced since the plan was made (a monkeypatch): wrap that
            if cur is None or hasattr(cur, "_vmap_of"):
                continue
            if owner is Tensor:
                w = _tensor_entry(name, cur)
            elif isinstance(w, functools.partial):
                w = functools.partial(w.func, cur)
            else:
                w = _wrapper(name, cur)
            if w is None:
                continue
            _PLAN[k] = (owner, name, cur, w)
        _SWAPPED.set(owner, name, w)


def _no_dual_level(orig: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """forward AD inside a batched run: the loop runs func instead."""
    if _run() is None or _busy():
        return orig(*args, **kwargs)
    raise Fallback("forward AD")


def _debug_unwrap(orig: Callable[..., Any], tensor: Any, **kwargs: Any) -> Any:
    """func.debug_unwrap in a batched run: the whole-batch tensor, as torch's."""
    if not _is_b(tensor):
        return orig(tensor, **kwargs)
    with _Busy():
        return Tensor.view_as(tensor, tensor)


def _uninstall() -> None:
    _SWAPPED.restore()


def _expand_b(t: Any) -> Any:
    """An unbatched tensor as a batched one (the same for every element)."""
    n = _state.run.size
    with _Busy():
        return _mark(t.unsqueeze(0).expand((n,) + tuple(t.shape)))


def _grad_and_value_rule(orig: Callable[..., Any], func: Any, argnums: Any, has_aux: bool,
                         args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
    """func.grad inside a batched run: the differentiated unbatched arguments batched first
    (expanded), so the gradients come out per element."""
    if _run() is None or _busy():
        return orig(func, argnums, has_aux, args, kwargs)
    from . import _pytree
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    call = list(args)
    for n in nums:
        if isinstance(n, int) and -len(args) <= n < len(args):
            flat, spec = _pytree.flatten(args[n])
            flat = [_expand_b(x) if isinstance(x, Tensor) and not _is_b(x) and (
                x.is_floating_point() or x.is_complex()) else x for x in flat]
            call[n] = _pytree.unflatten(flat, spec)
    return orig(func, argnums, has_aux, tuple(call), kwargs)


def _autograd_grad_rule(orig: Callable[..., Any], outputs: Any, inputs: Any,
                        grad_outputs: Any = None, *rest: Any, **kwargs: Any) -> Any:
    if _run() is None or _busy():
        return orig(outputs, inputs, grad_outputs, *rest, **kwargs)
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if grad_outputs is None:
        gos: List[Any] = [None] * len(outs)
    else:
        gos = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    if not any(_is_b(t) for t in outs + ins + [g for g in gos if g is not None]):
        return orig(outputs, inputs, grad_outputs, *rest, **kwargs)
    any_b = any(_is_b(o) for o in outs)
    if any_b and not all(_is_b(i) for i in ins):
        raise Fallback("gradient of a batched output at an unbatched input")
    new_gos = []
    for o, g in zip(outs, gos):
        if _is_b(o):
            if g is None:
                if o.dim() != 0:
                    raise Fallback("implicit grad")
                with _Busy():
                    g = o.new_ones(tuple(o.shape))
                _mark(g)
            elif not _is_b(g):
                g = _expand_b(g)
        elif _is_b(g):
            raise Fallback("batched cotangent of an unbatched output")
        new_gos.append(g)
    run = _run()
    run.calls += 1
    with _Busy():
        grads = orig(outs, ins, new_gos, *rest, **kwargs)
    out = []
    for i, g in zip(ins, grads):
        if g is not None and _is_b(i) and not _is_b(g):
            if tuple(g.shape) != tuple(_DATA.__get__(i).shape):
                raise Fallback("gradient shape")
            _mark(g)
        out.append(g)
    return tuple(out)


# ---- one batched call ------------------------------------------------------------------------
def run_batched(func: Callable[..., Any], leaves: List[Any], dims: List[Optional[int]],
                size: int, unflatten: Callable[[List[Any]], Any],
                kwargs: Dict[str, Any]) -> Tuple[List[Any], Any, List[bool], int]:
    """Calls func once on batched inputs. Returns (output leaves with batch dim first, output
    spec, which leaves are batched, op calls); raises Fallback where the loop must run instead."""
    from . import _pytree
    if _run() is not None or _busy():
        raise Fallback("nested")
    if not _ONE_RUN.acquire(blocking=False):  # the entry points are swapped process-wide
        raise Fallback("a batched call in another thread")
    run = _Run(size)
    _state.run = run
    try:
        _install()
        ins = []
        aliases: Dict[int, Tuple[Any, Any]] = {}  # in_dim 0: the alias, and its input
        with _Busy():
            for x, d in zip(leaves, dims):
                if d is None:
                    ins.append(x)
                    continue
                if d == 0:
                    b = x.view_as(x)
                    aliases[id(b)] = (b, x)
                else:
                    b = x.movedim(d, 0)
                ins.append(_mark(b))
        hit = _BY_FN.get(id(func))
        if hit is not None and hit[0] is func:  # vmap(torch.dot): the op's wrapped entry point
            func = hit[1]
        out = func(*unflatten(ins), **kwargs)
        flat, spec = _pytree.flatten(out)
        batched = [_is_b(o) for o in flat]
        # an input returned as it is comes back as itself (torch's)
        flat = [aliases[id(o)][1] if id(o) in aliases and aliases[id(o)][0] is o else o
                for o in flat]
        return flat, spec, batched, run.calls
    finally:
        _uninstall()
        _state.run = None
        for t in run.made:
            t.__class__ = Tensor
        _ONE_RUN.release()
