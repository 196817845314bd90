"""autocast: torch's mixed-precision regions.

Inside an enabled region, each op of torch's autocast lists (each declares its policy:
`@op(..., autocast=dict(cuda=LOWER))`) casts its floating point inputs before it runs:
matmul-like ops to the region's lower precision dtype, reductions and losses to float32,
cat/stack-like ops to their widest input dtype. The casts are recorded `Tensor.to(dtype)` nodes,
so gradients flow back to each input in its own dtype, as torch's.

How ops reach this module: `@op` (`_ops/_declare.py`) gives every op that declares a policy one
entry point, which checks one module flag; while no region is enabled in any thread the flag is off
and the op runs untouched. While one is, `_dispatch` reads this thread's state, as torch's
autocast state is thread-local. An op running under a cast policy runs with autocast excluded,
so the ops it calls internally are not cast again (torch's ExcludeDispatchKeyGuard).

bfloat16 has no matmul in NumPy or CuPy: an op cast to bfloat16 computes in float32 from the
bfloat16-rounded inputs and rounds its result to bfloat16, which is what a bfloat16 GEMM with
float32 accumulation returns (torch's on the cpu). The result's grad_fn is then the rounding's
ToCopyBackward0 rather than the op's own node.
"""

from __future__ import annotations

import _thread
import functools
import inspect
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

from .. import _backends, _dtype, cuda
from .._ops import _declare
from .._ops import _declare as _op_lists  # the policy names
from .._tensor import Tensor

_DEFAULT_DTYPES = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}


class _State(_thread._local):
    """This thread's autocast state (torch's is thread-local too)."""

    def __init__(self) -> None:
        self.enabled: Dict[str, bool] = {}
        self.dtypes: Dict[str, _dtype.dtype] = {}
        self.nesting = 0
        self.cache_enabled = True
        self.excluded = False  # inside an op that autocast already cast for
        self.cache: Dict[int, Tuple[Any, Any]] = {}


_state = _State()
_lock = _thread.allocate_lock()
_active = [0]  # enabled regions open in all threads; the op entry point's flag follows it


def _retain() -> None:
    with _lock:
        _active[0] += 1
        _declare.autocast_dispatch = _dispatch


def _release() -> None:
    with _lock:
        _active[0] -= 1
        if _active[0] == 0:
            _declare.autocast_dispatch = None


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be used on this device type: ``"cpu"``, ``"cuda"``, and any device
    type registered with a rustgrad backend (such as a test suite's fake device).

    Args:
        device_type (str): the device type, such as ``"cpu"``.
    """
    if device_type in ("cpu", "cuda"):
        return True
    try:
        _backends.resolve(device_type)
    except (RuntimeError, ValueError, TypeError):
        return False
    return True


def is_autocast_enabled(device_type: Optional[str] = None) -> bool:
    """Whether this thread is inside an enabled autocast region for device_type (``"cuda"``
    when not given, as torch's).

    Args:
        device_type (str, optional): the device type. Default: ``"cuda"``.
    """
    return _state.enabled.get("cuda" if device_type is None else device_type, False)


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Turns autocast on or off for device_type in this thread (what `autocast` does on entry
    and exit); prefer the `autocast` context manager.

    Args:
        device_type (str): the device type.
        enabled (bool): whether ops on it autocast.
    """
    was = _state.enabled.get(device_type, False)
    if bool(enabled) != was:
        _state.enabled[device_type] = bool(enabled)
        (_retain if enabled else _release)()


def get_autocast_dtype(device_type: str) -> _dtype.dtype:
    """The lower precision dtype autocast uses on device_type in this thread (by default
    bfloat16 on cpu, float16 elsewhere).

    Args:
        device_type (str): the device type.
    """
    return _state.dtypes.get(device_type, _DEFAULT_DTYPES.get(device_type, _dtype.float16))


def set_autocast_dtype(device_type: str, dtype: _dtype.dtype) -> None:
    """Sets the lower precision dtype autocast uses on device_type in this thread.

    Args:
        device_type (str): the device type.
        dtype (rustgrad.dtype): float16 or bfloat16.
    """
    _state.dtypes[device_type] = dtype


def is_autocast_cache_enabled() -> bool:
    """Whether casts of float32 leaf tensors (weights) are cached within a region."""
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turns the cache of casted weights on or off in this thread.

    Args:
        enabled (bool): whether casts are cached.
    """
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drops the casts cached in this thread's regions."""
    _state.cache.clear()


def autocast_increment_nesting() -> int:
    """Counts one more autocast region open in this thread; returns the count."""
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    """Counts one autocast region closed in this thread; returns the count left."""
    _state.nesting -= 1
    return _state.nesting


# ---- torch's deprecated per-device spellings -------------------------------------------------
def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated spelling of ``is_autocast_enabled("cpu")``."""
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated spelling of ``set_autocast_enabled("cpu", enabled)``.

    Args:
        enabled (bool): whether cpu ops autocast.
    """
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> _dtype.dtype:
    """Deprecated spelling of ``get_autocast_dtype("cpu")``."""
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype: _dtype.dtype) -> None:
    """Deprecated spelling of ``set_autocast_dtype("cpu", dtype)``.

    Args:
        dtype (rustgrad.dtype): the lower precision dtype.
    """
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype() -> _dtype.dtype:
    """Deprecated spelling of ``get_autocast_dtype("cuda")``."""
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype: _dtype.dtype) -> None:
    """Deprecated spelling of ``set_autocast_dtype("cuda", dtype)``.

    Args:
        dtype (rustgrad.dtype): the lower precision dtype.
    """
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


# ---- the casts -------------------------------------------------------------------------------
def _device_type(t: Any) -> str:
    return t.device.type


def _eligible(x: Any, device_type: str) -> bool:
    if not isinstance(x, Tensor):
        return False
    d = x.dtype
    return d.is_floating_point and d is not _dtype.float64 and _device_type(x) == device_type


def _cached_cast(x: Any, to: _dtype.dtype, device_type: str, lower: _dtype.dtype) -> Any:
    if not _eligible(x, device_type) or x.dtype is to:
        return x
    # torch caches the lower precision copies of float32 leaves that require grad (weights)
    cacheable = (to is lower and _state.cache_enabled and x.dtype is _dtype.float32
                 and x.requires_grad and x.is_leaf and x._base is None)
    if cacheable:
        hit = _state.cache.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
    out = x.to(to)
    if cacheable:
        _state.cache[id(x)] = (x, out)
    return out


def _map(args: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(args, (list, tuple)):
        return type(args)(_map(a, fn) for a in args)
    return fn(args)


def _tensors(args: Any, out: List[Any]) -> List[Any]:
    for a in args:
        if isinstance(a, Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            _tensors(a, out)
    return out


def _widest(tensors: List[Any], device_type: str, lower: _dtype.dtype) -> _dtype.dtype:
    # torch's prioritize: float32 wins over the lower type; float64 inputs are left alone
    to = lower
    for t in tensors:
        if not _eligible(t, device_type):
            continue
        d = t.dtype
        if d is _dtype.float32:
            to = _dtype.float32
        elif d is not lower:
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return to


def _dispatch(policies: Dict[str, str], fn: Callable[..., Any], args: Tuple[Any, ...],
              kwargs: Dict[str, Any]) -> Any:
    """The op entry point while some thread has a region enabled (see module doc)."""
    st = _state
    if st.excluded or not st.enabled:
        return fn(*args, **kwargs)
    tensors = _tensors(args, [])
    if not tensors:
        tensors = _tensors(kwargs.values(), [])
        if not tensors:
            return fn(*args, **kwargs)
    device_type = _device_type(tensors[0])
    if not st.enabled.get(device_type, False):
        return fn(*args, **kwargs)
    # torch's other device types use CUDA's lists
    policy = policies.get("cpu") if device_type == "cpu" else policies.get("cuda")
    if policy is None:
        return fn(*args, **kwargs)
    lower = get_autocast_dtype(device_type)
    st.excluded = True
    try:
        return _run(policy, fn, args, kwargs, tensors, device_type, lower)
    finally:
        st.excluded = False


def _run(policy: str, fn: Callable[..., Any], args: Tuple[Any, ...],
         kwargs: Dict[str, Any], tensors: List[Any], device_type: str,
         lower: _dtype.dtype) -> Any:
    if policy == _op_lists.BANNED:
        raise RuntimeError(
            "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
            "autocast.\nMany models use a sigmoid layer right before the binary cross entropy "
            "layer.\nIn this case, combine the two layers using "
            "torch.nn.functional.binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss."
            "  binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.")
    if policy in (_op_lists.FP32_SET_OPT_DTYPE, _op_lists.FP32_APPEND_DTYPE):
        if not _eligible(tensors[0], device_type):
            return fn(*args, **kwargs)
        return _with_dtype(fn, args, kwargs, _dtype.float32)
    if policy == _op_lists.PROMOTE:
        to = _widest(tensors, device_type, lower)
    else:
        to = lower if policy == _op_lists.LOWER else _dtype.float32

    def cast(x: Any) -> Any:
        return _cached_cast(x, to, device_type, lower)

    args = _map(args, cast)
    kwargs = {k: _map(v, cast) for k, v in kwargs.items()}
    if to is not _dtype.bfloat16 or policy != _op_lists.LOWER:
        return fn(*args, **kwargs)
    # no bfloat16 GEMM in NumPy/CuPy: float32 from the rounded inputs, the result rounded

    def widen(x: Any) -> Any:
        return x.to(_dtype.float32) if _eligible(x, device_type) and x.dtype is to else x

    out = fn(*_map(args, widen), **{k: _map(v, widen) for k, v in kwargs.items()})
    return _map(out, lambda y: y.to(to) if _eligible(y, device_type) else y)


@functools.cache
def _dtype_position(fn: Callable[..., Any]) -> Optional[int]:
    params = list(inspect.signature(fn).parameters.values())
    for i, p in enumerate(params):
        if p.name == "dtype":
            return i if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD else -1
    return None


def _with_dtype(fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any],
                to: _dtype.dtype) -> Any:
    # an explicit dtype is kept; otherwise the op runs with dtype=float32 (torch's set_opt_dtype)
    pos = _dtype_position(fn)
    if pos is None:  # no dtype argument: the (eligible) input itself goes to float32
        return fn(args[0].to(to), *args[1:], **kwargs)
    if 0 <= pos < len(args):
        if args[pos] is None:
            args = args[:pos] + (to,) + args[pos + 1:]
        return fn(*args, **kwargs)
    if kwargs.get("dtype") is None:
        kwargs = dict(kwargs, dtype=to)
    return fn(*args, **kwargs)


# ---- the region ------------------------------------------------------------------------------
class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a region
    (context manager or decorator) in which ops of torch's autocast lists run in mixed
    precision; see the module docstring for how.

    Args:
        device_type (str): ``"cuda"``, ``"cpu"``, or another registered device type.
        dtype (rustgrad.dtype, optional): the lower precision dtype. Default: bfloat16 on the
            cpu, float16 elsewhere (`get_autocast_dtype`).
        enabled (bool): whether the region autocasts; False turns autocast off inside it.
            Default: ``True``.
        cache_enabled (bool, optional): whether lower precision casts of float32 leaves that
            require grad (weights) are reused within the region. Default: ``True``.

    Example::

        >>> a, b = torch.ones(2, 3), torch.ones(3, 2)
        >>> with torch.autocast("cpu", dtype=torch.bfloat16):
        ...     c = a @ b
        ...     s = c.sum()
        >>> c.dtype, s.dtype
        (torch.bfloat16, torch.bfloat16)
        >>> with torch.autocast("cpu", enabled=False):
        ...     (a @ b).dtype
        torch.float32
    """

    def __init__(self, device_type: str, dtype: Optional[_dtype.dtype] = None,
                 enabled: bool = True, cache_enabled: Optional[bool] = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(
                f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        if not is_autocast_available(device_type):
            _backends.resolve(device_type)  # raises torch's "Expected one of ..." error
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._enabled = bool(enabled)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None \
            else bool(cache_enabled)
        if not self._enabled:
            return
        if device_type == "cuda":
            if not cuda.is_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                              stacklevel=2)
                self._enabled = False
        elif device_type == "cpu" and self.fast_dtype not in (_dtype.bfloat16, _dtype.float16):
            warnings.warn(
                "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.",
                stacklevel=2)
            self._enabled = False
        if self._enabled and self.fast_dtype is _dtype.bfloat16:
            _ = self.fast_dtype.np  # without ml_dtypes: its TypeError, naming the install

    def __enter__(self) -> autocast:
        st = _state
        self._prev = (st.enabled.get(self.device, False), get_autocast_dtype(self.device),
                      st.cache_enabled)
        set_autocast_enabled(self.device, self._enabled)
        st.dtypes[self.device] = self.fast_dtype
        st.cache_enabled = self._cache_enabled
        autocast_increment_nesting()
        return self

    def __exit__(self, *exc: object) -> None:
        st = _state
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        enabled, dtype, cache = self._prev
        set_autocast_enabled(self.device, enabled)
        st.dtypes[self.device] = dtype
        st.cache_enabled = cache
        return None

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def decorate_autocast(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


# ---- custom autograd Functions ---------------------------------------------------------------
def custom_fwd(fwd: Optional[Callable[..., Any]] = None, *, device_type: str,
               cast_inputs: Optional[_dtype.dtype] = None) -> Any:
    """torch.amp.custom_fwd for an autograd.Function's forward. Without cast_inputs, forward
    runs in the caller's autocast state, which backward (`custom_bwd`) then reuses; with it,
    inside an enabled region forward runs with autocast off and its floating inputs on
    device_type cast to cast_inputs.

    Args:
        fwd (Callable, optional): the forward; without it, a decorator is returned.
        device_type (str): the device type, as torch requires it.
        cast_inputs (rustgrad.dtype, optional): the dtype forward's inputs are cast to.
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if not autocast_context:
            return fwd(*args, **kwargs)

        def cast(x: Any) -> Any:
            return x.to(cast_inputs) if _eligible(x, device_type) else x

        with autocast(device_type=device_type, enabled=False):
            return fwd(*_map(args, cast), **{k: _map(v, cast) for k, v in kwargs.items()})

    return decorate_fwd


def custom_bwd(bwd: Optional[Callable[..., Any]] = None, *, device_type: str) -> Any:
    """torch.amp.custom_bwd for an autograd.Function's backward: it runs in the autocast state
    its forward ran in (as `custom_fwd` recorded it).

    Args:
        bwd (Callable, optional): the backward; without it, a decorator is returned.
        device_type (str): the device type, as torch requires it.
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type=device_type, enabled=getattr(ctx, "_fwd_used_autocast", False),
                      dtype=getattr(ctx, "_dtype", None)):
            return bwd(*args, **kwargs)

    return decorate_bwd
