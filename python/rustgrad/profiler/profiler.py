"""torch.profiler.profiler's API over rustgrad's recorder (rustgrad.autograd.profiler): `profile`
with its `schedule` of steps, `ProfilerActivity`, `ProfilerAction`, `schedule`,
`tensorboard_trace_handler` and `supported_activities`."""

from __future__ import annotations

import os
import warnings
from enum import Enum
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

from .. import _warn_once
from .. import cuda as _cuda
from ..autograd import profiler as _prof
from ..autograd.profiler_util import EventList, FunctionEventAvg, write_chrome_trace
from ..optim import optimizer as _optimizer

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "schedule", "supported_activities",
           "tensorboard_trace_handler"]


class ProfilerActivity(Enum):
    """The activity groups a profile may be asked to record. rustgrad records CPU ranges;
    CUDA is accepted, but no device (kernel) time is reported."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(Enum):
    """What a profile does during a step, as a `schedule` says: nothing (NONE), run without
    keeping results (WARMUP), record (RECORD), or record and hand the trace to `on_trace_ready`
    at the step's end (RECORD_AND_SAVE)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> Set[ProfilerActivity]:
    """The activities a profile records by default: CPU, and CUDA where rustgrad sees a GPU."""
    out = {ProfilerActivity.CPU}
    if _cuda.is_available():
        out.add(ProfilerActivity.CUDA)
    return out


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """The step -> ProfilerAction function torch's `schedule` makes: after `skip_first` steps,
    cycles of `wait` idle steps, `warmup` steps and `active` recorded steps (the last of them
    RECORD_AND_SAVE, which hands the trace to `on_trace_ready`), `repeat` times (0: until the
    profile ends).

    Args:
        wait (int): idle steps at the start of each cycle.
        warmup (int): steps run with the profiler prepared but not recording.
        active (int): recorded steps (at least 1).
        repeat (int): how many cycles (0: no limit). Default: 0.
        skip_first (int): steps ignored before the first cycle. Default: 0.
        skip_first_wait (int): when non-zero, the first cycle starts without its wait.
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
            f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat > 0 and step >= repeat * cycle:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _default_schedule(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: Optional[str] = None, use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable[[Any], None]:
    """An `on_trace_ready` that writes each trace into `dir_name` (made if missing) as
    ``<worker_name>.<time_ns>.pt.trace.json`` (``.gz`` added with use_gzip), the Chrome-trace
    files TensorBoard's profiler plugin reads.

    Args:
        dir_name (str): the directory.
        worker_name (str, optional): the file names' first part. Default: ``<hostname>_<pid>``.
        use_gzip (bool): gzip the files. Default: False.
        use_python_export (bool): accepted for torch's signature.
    """
    import time

    def handler_fn(prof: Any) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            import socket  # import-time cost: only a handler run needs the host name

            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn




class _KinetoProfile:
    """The recording half of `profile`: prepare, start and stop a trace, and read it."""

    def __init__(self, *, activities: Optional[Iterable[Any]] = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Optional[Callable[[], str]] = None, **kwargs: Any) -> None:
        self.activities = set(activities) if activities is not None else supported_activities()
        if not self.activities:
            raise AssertionError("No valid profiler activities found")
        if ProfilerActivity.CUDA in self.activities and _warn_once.due("profiler CUDA activity"):
            warnings.warn("rustgrad's profiler records host (CPU) time only: CUDA kernel times "
                          "and device memory are not reported", stacklevel=3)
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.use_device = "cuda" if ProfilerActivity.CUDA in self.activities else None
        self.profiler: Optional[_prof._Recorder] = None
        self._events: Optional[EventList] = None

    def start(self) -> None:
        """Prepares and starts a trace."""
        self.prepare_trace()
        self.start_trace()

    def stop(self) -> None:
        """Stops the trace."""
        self.stop_trace()

    def prepare_trace(self) -> None:
        """A new, empty trace (the previous one's events are dropped), not yet recording."""
        if self.profiler is not None and self.profiler.active:
            self.profiler.stop()
        self.profiler = _prof._Recorder(self.record_shapes, self.profile_memory, self.with_stack)
        self._events = None

    def start_trace(self) -> None:
        """Starts recording into the prepared trace."""
        if self.profiler is None:
            self.prepare_trace()
        assert self.profiler is not None
        self.profiler.start()

    def stop_trace(self) -> None:
        """Stops recording; the trace's events can then be read."""
        if self.profiler is not None:
            self.profiler.stop()
            self._events = None

    def events(self) -> EventList:
        """Every range of the last trace, as FunctionEvents."""
        if self.profiler is None:
            raise AssertionError("Expected profiling results")
        if self._events is None:
            self._events = self.profiler.events(self.use_device)
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The last trace's ranges summed per name (and input shapes, or stack; see
        EventList.key_averages), an EventList with `table()`."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def total_average(self) -> FunctionEventAvg:
        """Every range of the last trace summed into one."""
        return self.events().total_average()

    def export_chrome_trace(self, path: str) -> None:
        """Writes the last trace to `path` as Chrome-trace JSON (gzip when it ends in ``.gz``)."""
        assert self.profiler is not None
        write_chrome_trace(path, self.events(), base_ns=self.profiler.wall_start_ns,
                           record_shapes=self.record_shapes, profile_memory=self.profile_memory)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Writes each recorded stack with its `metric` (in microseconds) to `path`, one
        ``frame;frame;... value`` line each (the flame-graph format); needs ``with_stack``."""
        lines = []
        for evt in self.events():
            if evt.stack:
                value = int(getattr(evt, metric))
                lines.append(";".join(reversed(evt.stack)) + f";{evt.name} {value}")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + ("\n" if lines else ""))


class profile(_KinetoProfile):
    """torch.profiler.profile: records the ops, backward nodes and `record_function` ranges run
    while it is active, as a context manager or with `start()`/`stop()`, and with a `schedule`
    over the steps `step()` marks.

    Args:
        activities (iterable of ProfilerActivity, optional): CPU, CUDA, ... (default:
            `supported_activities()`). Only CPU ranges are recorded; asking for CUDA warns once.
        schedule (callable, optional): step -> ProfilerAction (see `schedule`); without one,
            every step records and no ``ProfilerStep#<n>`` ranges are made.
        on_trace_ready (callable, optional): called with the profile when a trace is complete
            (RECORD_AND_SAVE's end, or the profile's end while recording).
        record_shapes (bool): record input shapes. Default: False.
        profile_memory (bool): record each range's net change of live CPU bytes. Default: False.
        with_stack (bool): record the Python stack of each range. Default: False.
        with_flops (bool): accepted; FLOPs are not reported.
        with_modules (bool): accepted; the module hierarchy is not reported.
        experimental_config, execution_trace_observer, acc_events, custom_trace_id_callback:
            accepted for torch's signature.

    Example::

        >>> x = rustgrad.ones(3)
        >>> with rustgrad.profiler.profile() as prof:
        ...     y = (x * 2).sum()
        >>> [(e.key, e.count) for e in prof.key_averages() if e.key == "aten::mul"]
        [('aten::mul', 1)]
    """

    def __init__(self, *, activities: Optional[Iterable[Any]] = None,
                 schedule: Optional[Callable[[int], ProfilerAction]] = None,
                 on_trace_ready: Optional[Callable[..., Any]] = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Optional[Callable[[], str]] = None, **kwargs: Any) -> None:
        super().__init__(activities=activities, record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config,
                         execution_trace_observer=execution_trace_observer, acc_events=acc_events,
                         custom_trace_id_callback=custom_trace_id_callback)
        self.schedule = schedule or _default_schedule
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn: Optional[_prof.record_function] = None
        A = ProfilerAction
        prepare, start, stop, ready = self.prepare_trace, self.start_trace, self.stop_trace, self._trace_ready

        def wrong(msg: str) -> Callable[[], None]:
            return lambda: warnings.warn(msg, stacklevel=4)

        # (previous action, next action; None: the profile's end) -> what to do, as torch's
        self.action_map: Dict[Tuple[ProfilerAction, Optional[ProfilerAction]], List[Callable[[], None]]] = {
            (A.NONE, A.WARMUP): [prepare],
            (A.NONE, A.RECORD): [prepare, start],
            (A.NONE, A.RECORD_AND_SAVE): [prepare, start],
            (A.WARMUP, A.NONE): [wrong("Incorrect schedule: WARMUP followed by NONE"), start, stop],
            (A.WARMUP, A.RECORD): [start],
            (A.WARMUP, A.RECORD_AND_SAVE): [start],
            (A.RECORD, A.NONE): [wrong("Incorrect schedule: RECORD followed by NONE"), stop],
            (A.RECORD, A.WARMUP): [wrong("Incorrect schedule: RECORD followed by WARMUP"), stop],
            (A.RECORD_AND_SAVE, A.NONE): [stop, ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [stop, ready, prepare],
            (A.RECORD_AND_SAVE, A.RECORD): [stop, ready, prepare, start],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [stop, ready, prepare, start],
            (A.WARMUP, None): [start, stop],
            (A.RECORD, None): [stop, ready],
            (A.RECORD_AND_SAVE, None): [stop, ready],
        }

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        """Begins the profile at step `step_num` (what the schedule says for it)."""
        self._transit(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = _prof.record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def stop(self) -> None:
        """Ends the profile (a trace still recording is handed to `on_trace_ready`)."""
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Marks the start of the next step: the schedule's action for it is taken."""
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        if self.record_steps:
            self.step_rec_fn = _prof.record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _transit(self, prev: ProfilerAction, now: Optional[ProfilerAction]) -> None:
        for action in self.action_map.get((prev, now), ()):
            action()


# ---- the optimizers' ranges (torch's "Optimizer.step#SGD.step") ------------------------------
def _optimizer_range(method: str) -> Callable[[Any], Optional[str]]:
    def name(frame: Any) -> Optional[str]:
        owner = frame.f_locals.get("self")
        if owner is None:
            return None
        cls = type(owner).__name__
        return f"Optimizer.{method}#{cls}.{method}"

    return name


def _register_optimizer_ranges() -> None:
    # every optimizer's step is one wrapper (optimizer._with_hooks): its code names the range
    step_wrapper = _optimizer._with_hooks(lambda self: None)
    _prof.register_code_name(step_wrapper.__code__, _optimizer_range("step"))
    _prof.register_code_name(_optimizer.Optimizer.zero_grad.__code__, _optimizer_range("zero_grad"))


_register_optimizer_ranges()
