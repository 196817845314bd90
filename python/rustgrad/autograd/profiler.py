"""rustgrad.autograd.profiler: torch.autograd.profiler's API (the legacy `profile`,
`record_function`, `emit_nvtx`, `emit_itt`) and the recorder under `rustgrad.profiler`.

How ops are seen (Note [Profiling through sys.setprofile]): every op is a plain Python function
declared with `@op` (`_ops/_declare.DECLS`) and every backward node runs a Python formula held by
its spec (`_ops/_node.NODES`), so while a profile records, a `sys.setprofile` hook (and
`threading.setprofile` for threads started meanwhile) catches the 'call' and 'return' events of
those code objects and of nothing else: a dict maps an op's code object to ``aten::<name>`` and
a formula's to torch's pair ``autograd::engine::evaluate_function: <Node>`` and ``<Node>``.
Times are `time.perf_counter_ns`; nesting gives self versus total time. Outside a profile no
hook is installed, so ops pay nothing; while recording, a Python-heavy loop runs a few times
slower. Threads already running when the recording starts are not seen (Python 3.11 can set a
profile function only on the current thread and on threads started later), and a profile
function set before (a debugger's) is suspended while recording and restored after.

What is not reported: device (CUDA) time, since ops are timed on the host only; FLOPs;
AccumulateGrad (gradients are summed into `.grad` by the Rust engine, with no Python frame).
With ``profile_memory=True`` an event's CPU memory is the net change of the bytes held by live
CPU storages (rustgrad.memory.live_bytes) across it: allocations less frees.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, TypeVar, Union, cast

from .. import _bind, _core
from .._ops._node import NODES, VARIANTS
from .._tensor import Tensor
from .function import _function_backward
from .profiler_util import EventList, FunctionEvent, FunctionEventAvg

__all__ = ["profile", "record_function", "emit_nvtx", "emit_itt", "EventList", "FunctionEvent",
           "FunctionEventAvg", "register_code_name"]

F = TypeVar("F", bound=Callable[..., Any])
# what a code object is recorded as: one name, a tuple of nested names (outermost first), or a
# function of the frame giving either (or None: not recorded)
Names = Union[str, Tuple[str, ...], Callable[[Any], Union[str, Tuple[str, ...], None]]]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
EVALUATE = "autograd::engine::evaluate_function: "
# op functions whose Python name is not the aten op torch's profiler shows
_ATEN = {"and_": "__and__", "or_": "__or__", "xor": "__xor__", "invert": "bitwise_not",
         "where_method": "where", "radd": "add", "rdiv": "div",
         "iand": "__iand__", "ior": "__ior__", "ixor": "__ixor__", "lshift": "__lshift__",
         "rshift": "__rshift__", "rlshift": "__rlshift__", "rrshift": "__rrshift__",
         "ilshift": "__ilshift__", "irshift": "__irshift__",
         "floordiv": "floor_divide", "rfloordiv": "floor_divide", "rpow": "pow",
         "rmatmul": "matmul", "tensor_polygamma": "polygamma", "special_round": "round",
         "getitem": "index", "setitem": "index_put_"}
# code objects of higher layers (the optimizers' steps): registered by rustgrad.profiler
_EXTRA: Dict[Any, Names] = {}
_CODES: Optional[Dict[Any, Names]] = None


def register_code_name(code: Any, names: Names) -> None:
    """Records calls of `code` (a code object) as `names` while profiling: a range name, a tuple
    of nested names, or a function of the frame giving either (None: not recorded). How layers
    above autograd (the optimizers) name their ranges without being imported here."""
    _EXTRA[code] = names
    global _CODES
    _CODES = None


def _unwrap(fn: Any) -> Any:
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


def _backward_names(name: str) -> Tuple[str, str]:
    return (EVALUATE + name, name)


# Note [Shared formulas]: several node specs may share one formula (SumBackward0 and
# SumBackward1 run `_sum_bw`). The node is told by the type of the saved-values tuple the engine
# hands the formula (`<Node>Saved`, _node._fields); a spec that saves nothing has no such type,
# so while recording, each op's result whose node is such a spec has its node's ctx (the object
# the engine hands the formula as its third argument) noted with the node's name (_CTX_NAMES);
# a node whose forward ran before the recording started is named as the first spec.
_CTX_NAMES: Dict[int, Tuple[Any, str]] = {}
_UNTYPED: Set[str] = set()  # names of the specs of shared formulas that save nothing


def _note_ctx(t: Tensor, untyped: Set[str], ctx_names: Dict[int, Tuple[Any, str]]) -> None:
    node = t.grad_fn
    if node is not None and type(node).__name__ in untyped:
        ctx = node._ctx
        if ctx is not None:
            ctx_names[id(ctx)] = (ctx, type(node).__name__)


def _shared_formula(candidates: Dict[str, Tuple[str, str]]) -> Callable[[Any], Tuple[str, str]]:
    """The namer of a formula code object several node specs share (Note [Shared formulas])."""
    fallback = next(iter(candidates.values()))

    def name(frame: Any) -> Tuple[str, str]:
        code = frame.f_code
        local = frame.f_locals
        if code.co_argcount >= 2:
            found = candidates.get(type(local.get(code.co_varnames[1])).__name__[:-5])
            if found is not None:
                return found
        if code.co_argcount >= 3:
            ctx = local.get(code.co_varnames[2])
            noted = _CTX_NAMES.get(id(ctx))
            if noted is not None and noted[0] is ctx and noted[1] in candidates:
                return candidates[noted[1]]
        return fallback

    return name


def _function_backward_name(frame: Any) -> Tuple[str, str]:
    ctx = frame.f_locals.get("ctx")
    name = type(ctx).__name__
    cls = getattr(ctx, "_forward_cls", None)
    if cls is not None:
        name = cls.__name__ + "Backward"
    return _backward_names(name)


def _code_names() -> Dict[Any, Names]:
    """code object -> names, for every declared op, every node formula and what higher layers
    registered (built on the first profile, and again after a registration)."""
    global _CODES
    if _CODES is not None:
        return _CODES
    codes: Dict[Any, Names] = {}
    for d in _bind.load_families():
        fn = _unwrap(d.fn)
        code = getattr(fn, "__code__", None)
        if code is not None:
            codes[code] = "aten::" + _ATEN.get(d.name, d.name)
    formulas: Dict[Any, Dict[str, Tuple[str, str]]] = {}
    for spec in (*NODES.values(), *VARIANTS):
        code = getattr(_unwrap(spec.backward), "__code__", None)
        if code is not None:
            formulas.setdefault(code, {}).setdefault(spec.name, _backward_names(spec.name))
    untyped = {spec.name for spec in (*NODES.values(), *VARIANTS)
               if not spec.saved and not spec.save_output}
    for code, names in formulas.items():
        if len(names) == 1:
            codes[code] = next(iter(names.values()))
        else:
            codes[code] = _shared_formula(names)
            _UNTYPED.update(n for n in names if n in untyped)
    codes[_function_backward.__code__] = _function_backward_name
    codes.update(_EXTRA)
    _CODES = codes
    return codes


# ---- the recorder -----------------------------------------------------------------------------
# A raw event is a list: [name, start_ns, end_ns, parent (raw event or None), input shapes,
# live bytes at start then the change, stack, user annotation?]; the events of a thread are kept
# in start order.
_NAME, _START, _END, _PARENT, _SHAPES, _MEM, _STACK, _USER = range(8)


def _shape(v: Any) -> List[Any]:
    if isinstance(v, Tensor):
        return list(v.shape)
    return []


def _arg_shapes(frame: Any) -> List[Any]:
    """The shapes of a call's arguments in signature order ([] for a non-tensor), as torch's
    `input_shapes`; a formula's are its incoming gradients'."""
    code = frame.f_code
    local = frame.f_locals
    n = code.co_argcount + code.co_kwonlyargcount
    # rustgrad's private keywords (`_out_dtype`) are no argument of torch's op
    out = [_shape(local.get(name)) for name in code.co_varnames[:n] if name[0] != "_"]
    if code.co_flags & 0x04:  # *args
        rest = local.get(code.co_varnames[n], ())
        out += [_shape(v) for v in rest]
    return out


def _grad_shapes(frame: Any) -> List[Any]:
    g = frame.f_locals.get(frame.f_code.co_varnames[0])
    if isinstance(g, tuple):
        return [_shape(v) for v in g]
    return [_shape(g)]


def _user_stack(frame: Any) -> List[str]:
    """The Python frames outside the package, innermost first, as torch's `stack` entries."""
    out: List[str] = []
    while frame is not None and len(out) < 128:
        code = frame.f_code
        if not code.co_filename.startswith(_PACKAGE_DIR):
            out.append(f"{code.co_filename}({frame.f_lineno}): {code.co_name}")
        frame = frame.f_back
    return out


def _live_bytes() -> int:
    return _core.live_storages(0)[1]


class _Thread:
    """One thread's events and the stack of ranges open on it."""

    __slots__ = ("events", "stack", "tid")

    def __init__(self, tid: int) -> None:
        self.tid = tid
        self.events: List[List[Any]] = []
        self.stack: List[Tuple[Any, List[Any]]] = []


class _Recorder:
    """One recording: installs the hooks (`start`), removes them (`stop`), and turns what they
    saw into FunctionEvents (`events`)."""

    def __init__(self, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.threads: Dict[int, _Thread] = {}
        self.active = False
        self.start_ns = 0
        self.stop_ns = 0
        self.wall_start_ns = 0
        self._previous: Any = None
        self._previous_threading: Any = None

    # -- hooks
    def _thread(self) -> _Thread:
        import _thread

        tid = _thread.get_ident()
        log = self.threads.get(tid)
        if log is None:
            log = self.threads[tid] = _Thread(tid)
        return log

    def _hook(self, log: _Thread, checked: bool) -> Callable[[Any, str, Any], None]:
        """The profile function of one thread. `checked`: a thread other than the one that
        started the profile, which removes its own hook once the recording has stopped (a
        profile function can only be set from its thread)."""
        codes = _code_names()
        events, stack = log.events, log.stack
        clock = time.perf_counter_ns
        shapes, memory, with_stack = self.record_shapes, self.profile_memory, self.with_stack
        live = _live_bytes
        rec = self
        untyped, ctx_names = _UNTYPED, _CTX_NAMES

        def hook(frame: Any, event: str, arg: Any) -> None:
            if event == "call":
                if checked and not rec.active:
                    sys.setprofile(None)
                    return
                names: Any = codes.get(frame.f_code)
                if names is None:
                    return
                if not isinstance(names, (str, tuple)):
                    names = names(frame)
                    if names is None:
                        return
                parent = stack[-1][1] if stack else None
                is_formula = isinstance(names, tuple)
                for name in (names if is_formula else (names,)):
                    op = not is_formula and name.startswith("aten::")
                    ev: List[Any] = [name, 0, 0, parent, None, 0, None, not (op or is_formula)]
                    if shapes:
                        if op:
                            ev[_SHAPES] = _arg_shapes(frame)
                        elif is_formula and name is names[-1]:  # the node: its gradients' shapes
                            ev[_SHAPES] = _grad_shapes(frame)
                        else:
                            ev[_SHAPES] = []
                    if with_stack:
                        ev[_STACK] = _user_stack(frame)
                    if memory:
                        ev[_MEM] = live()
                    events.append(ev)
                    stack.append((frame, ev))
                    parent = ev
                    ev[_START] = clock()
            elif event == "return" and stack and stack[-1][0] is frame:
                now = clock()
                while stack and stack[-1][0] is frame:
                    ev = stack.pop()[1]
                    ev[_END] = now
                    if memory:
                        ev[_MEM] = live() - ev[_MEM]
                if isinstance(arg, Tensor):  # Note [Shared formulas]
                    _note_ctx(arg, untyped, ctx_names)
                elif isinstance(arg, (tuple, list)):
                    for item in arg:
                        if isinstance(item, Tensor):
                            _note_ctx(item, untyped, ctx_names)

        return hook

    def _bootstrap(self, frame: Any, event: str, arg: Any) -> None:
        """threading.setprofile's function: in a new thread, installs that thread's hook."""
        hook = self._hook(self._thread(), checked=True)
        sys.setprofile(hook)
        hook(frame, event, arg)

    def start(self) -> None:
        import threading  # import-time cost: `import rustgrad` leaves threading out

        self.start_ns = time.perf_counter_ns()
        self.wall_start_ns = time.time_ns()
        self.active = True
        self._previous = sys.getprofile()
        self._previous_threading = threading.getprofile() if hasattr(threading, "getprofile") else None
        threading.setprofile(self._bootstrap)
        sys.setprofile(self._hook(self._thread(), checked=False))
        _RECORDERS.append(self)

    def stop(self) -> None:
        import threading

        if not self.active:
            return
        self.stop_ns = time.perf_counter_ns()
        sys.setprofile(self._previous)
        threading.setprofile(self._previous_threading)
        self.active = False
        if self in _RECORDERS:
            _RECORDERS.remove(self)
        if not _RECORDERS:
            _CTX_NAMES.clear()

    # -- record_function
    def open(self, name: str, user: bool = True) -> Optional[List[Any]]:
        if not self.active:
            return None
        log = self._thread()
        parent = log.stack[-1][1] if log.stack else None
        ev = [name, 0, 0, parent, [] if self.record_shapes else None, 0, None, user]
        if self.with_stack:
            ev[_STACK] = _user_stack(sys._getframe(2))
        if self.profile_memory:
            ev[_MEM] = _live_bytes()
        log.events.append(ev)
        log.stack.append((ev, ev))  # keyed by itself: no frame returns through it
        ev[_START] = time.perf_counter_ns()
        return ev

    def close(self, ev: List[Any]) -> None:
        now = time.perf_counter_ns()
        log = self._thread()
        for i in range(len(log.stack) - 1, -1, -1):
            if log.stack[i][1] is ev:
                del log.stack[i]
                break
        else:
            return  # opened on another thread or already closed
        ev[_END] = now
        if self.profile_memory:
            ev[_MEM] = _live_bytes() - ev[_MEM]

    # -- results
    def events(self, use_device: Optional[str] = None) -> EventList:
        """Every finished range as FunctionEvents, in start order per thread; a range still
        open when the recording stopped ends there."""
        made: Dict[int, FunctionEvent] = {}
        out: List[FunctionEvent] = []
        end_default = self.stop_ns or time.perf_counter_ns()
        for log in self.threads.values():
            for raw in log.events:
                if raw[_START] == 0:
                    continue
                end = raw[_END] or end_default
                name = raw[_NAME]  # torch's events name every step ProfilerStep*; traces keep #<n>
                evt = FunctionEvent(
                    len(out) + 1, "ProfilerStep*" if name.startswith("ProfilerStep#") else name,
                    log.tid, (raw[_START] - self.start_ns) / 1000.0, (end - self.start_ns) / 1000.0,
                    input_shapes=raw[_SHAPES], stack=raw[_STACK],
                    cpu_memory_usage=raw[_MEM] if self.profile_memory and raw[_END] else 0,
                    is_user_annotation=raw[_USER], trace_name=name)
                made[id(raw)] = evt
                parent = raw[_PARENT]
                if parent is not None and id(parent) in made:
                    evt.set_cpu_parent(made[id(parent)])
                    made[id(parent)].append_cpu_child(evt)
                out.append(evt)
        out.sort(key=lambda e: (e.start_us, -e.end_us))
        return EventList(out, use_device=use_device, profile_memory=self.profile_memory)


# the recordings in progress, innermost last (record_function opens its range in each)
_RECORDERS: List[_Recorder] = []


class record_function:
    """Marks a block (or, as a decorator, every call of a function) as a named range of the
    profiles recording: it shows in `key_averages()` and the trace under `name`, with the ops
    it ran as its children. Costs nothing when no profile records.

    Args:
        name (str): the range's name.
        args (str, optional): accepted for torch's signature (not recorded).

    Example::

        >>> x = rustgrad.ones(3)
        >>> with rustgrad.autograd.profiler.record_function("my_block"):
        ...     y = x * 2
    """

    def __init__(self, name: str, args: Optional[str] = None) -> None:
        self.name = name
        self.args = args
        self._open: List[Tuple[_Recorder, List[Any]]] = []

    def __enter__(self) -> record_function:
        for rec in _RECORDERS:
            ev = rec.open(self.name)
            if ev is not None:
                self._open.append((rec, ev))
        return self

    def __exit__(self, *exc: Any) -> None:
        opened, self._open = self._open, []
        for rec, ev in opened:
            rec.close(ev)

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return cast(F, wrapped)


class profile:
    """torch.autograd.profiler.profile, the legacy profiler: records the ops, backward nodes
    and `record_function` ranges run inside the `with` block (see the module doc for how).

    Args:
        enabled (bool): when False the context does nothing. Default: True.
        use_device (str, optional): accepted for torch's signature; device time is not reported.
        record_shapes (bool): record each op's input shapes (``key_averages(group_by_input_shape=True)``).
        with_flops (bool): accepted; FLOPs are not reported.
        profile_memory (bool): record each range's net change of live CPU bytes.
        with_stack (bool): record the Python stack (frames outside rustgrad) of each range.
        with_modules (bool): accepted; module hierarchy is not reported.
        use_kineto, use_cpu, experimental_config, acc_events, custom_trace_id_callback:
            accepted for torch's signature.
    """

    def __init__(self, enabled: bool = True, *, use_device: Optional[str] = None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Any = None, **kwargs: Any) -> None:
        self.enabled = enabled
        self.use_device = use_device
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.entered = False
        self._recorder: Optional[_Recorder] = None
        self._function_events: Optional[EventList] = None

    def __enter__(self) -> profile:
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._function_events = None
        self._recorder = _Recorder(self.record_shapes, self.profile_memory, self.with_stack)
        self._recorder.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.enabled or self._recorder is None:
            return
        self._recorder.stop()
        self.entered = False
        self._function_events = self._recorder.events(self.use_device)

    def _events(self) -> EventList:
        if self._function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._function_events

    @property
    def function_events(self) -> EventList:
        """Every recorded range, as FunctionEvents."""
        return self._events()

    def events(self) -> EventList:
        """Every recorded range, as FunctionEvents (the same as `function_events`)."""
        return self._events()

    def table(self, sort_by: Optional[str] = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80,
              header: Optional[str] = None, top_level_events_only: bool = False,
              time_unit: Optional[str] = None) -> str:
        """`key_averages().table(...)` (see EventList.table)."""
        return self.key_averages().table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The recorded ranges summed per name (see EventList.key_averages)."""
        return self._events().key_averages(group_by_input_shape, group_by_stack_n,
                                           group_by_overload_name)

    def total_average(self) -> FunctionEventAvg:
        """Every recorded range summed into one (see EventList.total_average)."""
        return self._events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of the self CPU times of every range, in microseconds."""
        return self._events().self_cpu_time_total

    def export_chrome_trace(self, path: str) -> None:
        """Writes the recorded ranges to `path` as a Chrome trace JSON."""
        from .profiler_util import write_chrome_trace

        assert self._recorder is not None
        write_chrome_trace(path, self._events(), base_ns=self._recorder.wall_start_ns,
                           record_shapes=self.record_shapes, profile_memory=self.profile_memory)

    def __str__(self) -> str:
        if self._function_events is None:
            return "<unfinished rustgrad.autograd.profile>"
        return str(self._function_events)

    def __repr__(self) -> str:
        if self._function_events is None:
            return "<unfinished rustgrad.autograd.profile>"
        return repr(self._function_events)


class emit_nvtx:
    """torch.autograd.profiler.emit_nvtx: NVTX ranges for nvprof/Nsight. rustgrad emits no NVTX
    ranges: the context does nothing (there is nothing to annotate without CUDA's tools).

    Args:
        enabled (bool): accepted for torch's signature. Default: True.
        record_shapes (bool): accepted for torch's signature. Default: False.
    """

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.entered = False

    def __enter__(self) -> emit_nvtx:
        if self.enabled:
            if self.entered:
                raise RuntimeError("NVTX annotation context manager is not reentrant")
            self.entered = True
        return self

    def __exit__(self, *exc: Any) -> None:
        self.entered = False


class emit_itt(emit_nvtx):
    """torch.autograd.profiler.emit_itt: Intel ITT ranges for VTune; a no-op context, as
    `emit_nvtx`."""
