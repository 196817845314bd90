"""The profiler's results, as torch.autograd.profiler_util's: `FunctionEvent` (one recorded
range), `FunctionEventAvg` (events of one key summed), `EventList` (a list of events with
`table()`, `key_averages()`, `total_average()` and `export_chrome_trace()`).

Times are microseconds (floats), as torch's; memory is bytes. rustgrad records CPU ranges
only: the device columns of torch's table (CUDA time, CUDA memory) never appear, and the
device-time attributes read 0.
"""

from __future__ import annotations

import os
from enum import Enum
from typing import Any, Dict, Iterable, List, Optional, Tuple

__all__ = ["DeviceType", "EventList", "FunctionEvent", "FunctionEventAvg"]


class DeviceType(Enum):
    """Where an event ran (torch's DeviceType, the members rustgrad reports)."""

    CPU = 0
    CUDA = 1


def _format_time(time_us: float) -> str:
    """A duration in microseconds as torch's tables write it (us, ms or s, 3 decimals)."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_share(time_us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    """Bytes as torch's tables write them (B, KB, MB, GB; 2 decimals above bytes)."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class _Times:
    """The `*_str` readings and the device-time zeros both event kinds share."""

    count: int
    cpu_time_total: float
    self_cpu_time_total: float
    device_time_total: float = 0.0
    self_device_time_total: float = 0.0
    device_memory_usage: int = 0
    self_device_memory_usage: int = 0
    flops: int = 0
    is_async: bool = False
    is_legacy: bool = False
    is_remote: bool = False
    node_id: int = -1
    overload_name: str = ""
    device_type: DeviceType = DeviceType.CPU
    use_device: Optional[str] = None

    @property
    def cpu_time(self) -> float:
        """Average CPU time per call, in microseconds."""
        return self.cpu_time_total / max(self.count, 1)

    @property
    def device_time(self) -> float:
        """Average device time per call (always 0: rustgrad records no device ranges)."""
        return 0.0

    # torch's older spellings of the device-time attributes
    cuda_time = device_time
    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    cuda_memory_usage = property(lambda self: self.device_memory_usage)
    self_cuda_memory_usage = property(lambda self: self.self_device_memory_usage)

    @property
    def cpu_time_str(self) -> str:
        """`cpu_time` as the table writes it."""
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self) -> str:
        """`cpu_time_total` as the table writes it."""
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        """`self_cpu_time_total` as the table writes it."""
        return _format_time(self.self_cpu_time_total)


class FunctionEvent(_Times):
    """One recorded range: an op (`aten::<name>`), a backward node, a `record_function`
    block or a profiler step. Times in microseconds from the profile's start."""

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float, *,
                 input_shapes: Optional[List[Any]] = None, stack: Optional[List[str]] = None,
                 cpu_memory_usage: int = 0, sequence_nr: int = -1,
                 is_user_annotation: bool = False, trace_name: Optional[str] = None) -> None:
        self.id = id
        self.name = name
        self.trace_name = trace_name or name
        self.thread = thread
        self.start_us = start_us
        self.end_us = end_us
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.cpu_memory_usage = cpu_memory_usage
        self.sequence_nr = sequence_nr
        self.is_user_annotation = is_user_annotation
        self.cpu_children: List[FunctionEvent] = []
        self.cpu_parent: Optional[FunctionEvent] = None
        self.count = 1

    @property
    def key(self) -> str:
        """What `key_averages` groups by: the name."""
        return self.name

    @property
    def time_range(self) -> Tuple[float, float]:
        """(start_us, end_us)."""
        return (self.start_us, self.end_us)

    @property
    def cpu_time_total(self) -> float:  # type: ignore[override]
        """Microseconds from start to end, children included."""
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:  # type: ignore[override]
        """`cpu_time_total` less that of the direct children."""
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        """Net bytes this range allocated itself (children's left out)."""
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    def append_cpu_child(self, child: FunctionEvent) -> None:
        """Makes `child` a direct child of this event."""
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent: FunctionEvent) -> None:
        """Makes `parent` this event's direct parent."""
        self.cpu_parent = parent

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} device_type={self.device_type} "
                f"cpu_time={self.cpu_time_str} start_us={self.start_us:.3f} end_us={self.end_us:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg(_Times):
    """The events of one key (a name, with input shapes or stack when grouped by them) summed:
    `count` calls, total and self CPU time, memory."""

    def __init__(self) -> None:
        self.key: Optional[str] = None
        self.count = 0
        self.node_id = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes: Optional[List[Any]] = None
        self.stack: Optional[List[str]] = None
        self.scope: Optional[int] = None
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.cpu_children: Optional[List[FunctionEvent]] = None
        self.cpu_parent: Optional[FunctionEvent] = None
        self.is_user_annotation = False

    def add(self, other: Any) -> FunctionEventAvg:
        """Adds `other` (a FunctionEvent or FunctionEventAvg of the same key) into this one."""
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.cpu_parent = getattr(other, "cpu_parent", None)
            self.cpu_children = getattr(other, "cpu_children", None)
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise TypeError(f"cannot add {type(other).__name__} to a FunctionEventAvg")
        if other.key != self.key:
            raise ValueError(f"cannot add an event of key {other.key!r} to one of {self.key!r}")
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.count += other.count
        return self

    def __iadd__(self, other: Any) -> FunctionEventAvg:
        return self.add(other)

    def __repr__(self) -> str:
        shapes = str(self.input_shapes) if self.input_shapes else ""
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str}  self_cuda_time=0.000us cuda_time=0.000us "
                f"input_shapes={shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"cuda_memory_usage=0>")


class EventList(list):  # type: ignore[type-arg]
    """A list of FunctionEvent (or FunctionEventAvg) with torch's summaries."""

    def __init__(self, *args: Any, use_device: Optional[str] = None, profile_memory: bool = False,
                 with_flops: bool = False) -> None:
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of every event's self CPU time, in microseconds."""
        return float(sum(e.self_cpu_time_total for e in self))

    def table(self, sort_by: Optional[str] = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: Optional[str] = None,
              top_level_events_only: bool = False, time_unit: Optional[str] = None) -> str:
        """The events as torch's text table: Name, Self CPU %, Self CPU, CPU total %,
        CPU total, CPU time avg, (CPU Mem, Self CPU Mem with profile_memory), # of Calls,
        (Input Shapes when any event has them, Source Location when any has a stack).

        Args:
            sort_by (str, optional): an event attribute to sort by, descending
                (``"cpu_time_total"``, ``"self_cpu_time_total"``, ``"count"``,
                ``"cpu_memory_usage"``, ...; ``cuda`` reads as ``device``). Default: as recorded.
            row_limit (int): at most this many rows (-1: all). Default: 100.
            max_src_column_width (int): the widest Source Location column.
            max_name_column_width (int): the widest Name column (longer names end in ``...``).
            max_shapes_column_width (int): the widest Input Shapes column.
            header (str, optional): a line printed above the table.
            top_level_events_only (bool): only events without a parent.
            time_unit (str, optional): ``"s"``, ``"ms"`` or ``"us"`` for every time.
        """
        return _build_table(self, sort_by=sort_by, header=header, row_limit=row_limit,
                            max_src_column_width=max_src_column_width,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width,
                            profile_memory=self._profile_memory,
                            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def __str__(self) -> str:
        return self.table()

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events summed per name (and per input shapes, or per the first
        `group_by_stack_n` stack entries, when asked): an EventList of FunctionEventAvg, in
        order of first occurrence.

        Args:
            group_by_input_shapes (bool): one row per (name, input shapes); needs
                ``record_shapes=True`` when profiling.
            group_by_stack_n (int): one row per (name, first n stack entries); needs
                ``with_stack=True``.
            group_by_overload_name (bool): accepted for torch's signature (rustgrad's events
                have no overload names).
        """
        stats: Dict[Tuple[Any, ...], FunctionEventAvg] = {}
        for evt in self:
            key: Tuple[Any, ...] = (evt.key, evt.node_id)
            if group_by_input_shapes:
                key += (str(evt.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple((evt.stack or [])[:group_by_stack_n])
            avg = stats.get(key)
            if avg is None:
                avg = stats[key] = FunctionEventAvg()
            avg.add(evt)
        out = EventList(stats.values(), use_device=self._use_device,
                        profile_memory=self._profile_memory, with_flops=self._with_flops)
        for avg in out:
            if group_by_stack_n > 0 and avg.stack:
                avg.stack = avg.stack[:group_by_stack_n]
            if not group_by_input_shapes:  # torch's: "" when not grouped by shapes
                avg.input_shapes = ""
        return out

    def total_average(self) -> FunctionEventAvg:
        """Every event summed into one FunctionEventAvg keyed ``"Total"``."""
        total = FunctionEventAvg()
        for evt in self:
            total.cpu_time_total += evt.cpu_time_total
            total.self_cpu_time_total += evt.self_cpu_time_total
            total.cpu_memory_usage += evt.cpu_memory_usage
            total.self_cpu_memory_usage += evt.self_cpu_memory_usage
            total.count += evt.count
        total.key = "Total"
        return total

    def export_chrome_trace(self, path: str) -> None:
        """Writes the events to `path` as a Chrome trace (JSON; open it in chrome://tracing or
        Perfetto): one complete ("X") event per range, category ``cpu_op`` or
        ``user_annotation``, microsecond timestamps."""
        write_chrome_trace(path, [e for e in self if isinstance(e, FunctionEvent)])


def chrome_trace(events: Iterable[FunctionEvent], *, base_ns: int = 0, trace_name: str = "",
                 record_shapes: bool = False, profile_memory: bool = False) -> Dict[str, Any]:
    """The Chrome-trace document of `events` (a dict, as torch's exported JSON lays it out).

    base_ns: the wall-clock time (ns since the epoch) of the profile's start; event `ts` are
    microseconds from it."""
    pid = os.getpid()
    events = list(events)
    out: List[Dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "ts": 0, "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "ts": 0, "pid": pid, "tid": 0, "args": {"labels": "CPU"}},
    ]
    for tid in sorted({e.thread for e in events}):
        out.append({"ph": "M", "name": "thread_name", "ts": 0, "pid": pid, "tid": tid,
                    "args": {"name": f"thread {tid} (python)"}})
    base_us = base_ns / 1000.0
    for i, e in enumerate(events):
        args: Dict[str, Any] = {"External id": e.id, "Ev Idx": i}
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        out.append({"ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op",
                    "name": e.trace_name, "pid": pid, "tid": e.thread,
                    "ts": round(base_us + e.start_us, 3), "dur": round(e.end_us - e.start_us, 3),
                    "args": args})
    return {"schemaVersion": 1, "deviceProperties": [], "record_shapes": int(record_shapes),
            "profile_memory": int(profile_memory), "displayTimeUnit": "ms",
            "baseTimeNanoseconds": base_ns, "traceEvents": out, "traceName": trace_name}


def write_chrome_trace(path: str, events: Iterable[FunctionEvent], **kwargs: Any) -> None:
    """Writes `chrome_trace(events, **kwargs)` to `path` (gzip-compressed when it ends in
    ``.gz``)."""
    import json  # import-time cost: only exporting needs it

    doc = chrome_trace(events, trace_name=os.fspath(path), **kwargs)
    text = json.dumps(doc)
    if os.fspath(path).endswith(".gz"):
        import gzip  # import-time cost: as json

        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def _build_table(events: List[Any], *, sort_by: Optional[str], header: Optional[str], row_limit: int,
                 max_src_column_width: int, max_name_column_width: int, max_shapes_column_width: int,
                 profile_memory: bool, top_level_events_only: bool, time_unit: Optional[str]) -> str:
    """torch's text table of `events` (see EventList.table)."""
    if not events:
        return ""
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    has_shapes = any(e.input_shapes for e in events)
    stacks = [e.stack for e in events if e.stack]
    name_w = min(max(len(e.key) for e in events) + 4, max_name_column_width)
    shapes_w = min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes_column_width)
    src_w = min(max(len(s) for st in stacks for s in st) + 4, max_src_column_width) if stacks else 0

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_w] + [12] * (len(headers) - 1)
    aligns = [">"] * len(headers)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_w)
        aligns.append(">")
    if stacks:
        headers.append("Source Location")
        widths.append(src_w)
        aligns.append("<")
    row_format = "".join(f"{{: {a}{w}}}  " for a, w in zip(aligns, widths))
    sep = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2

    def fmt_time(us: float) -> str:
        if time_unit == "s":
            return f"{us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{us:.3f}us"
        return _format_time(us)

    def trim(path: str) -> str:
        if len(path) > src_w:
            path = path[len(path) - src_w:]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    total = sum(e.self_cpu_time_total for e in events)
    lines: List[str] = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [sep, row_format.format(*headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row: List[Any] = [name, _format_share(e.self_cpu_time_total, total), fmt_time(e.self_cpu_time_total),
                          _format_share(e.cpu_time_total, total), fmt_time(e.cpu_time_total),
                          fmt_time(e.cpu_time)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_w])
        if stacks:
            row.append(trim(e.stack[0]) if e.stack else "")
        lines.append(row_format.format(*row))
        if stacks and e.stack:
            blank = [""] * (len(headers) - 1)
            lines += [row_format.format(*blank, trim(s)) for s in e.stack[1:]]
            lines.append(row_format.format(*blank, ""))
    lines += [sep, f"Self CPU time total: {fmt_time(total)}"]
    return "\n".join(lines) + "\n"
