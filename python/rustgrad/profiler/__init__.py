"""rustgrad.profiler: torch.profiler's API. `profile` records the ops (``aten::<name>``), the
backward nodes (``autograd::engine::evaluate_function: <Node>`` around ``<Node>``) and the
`record_function` ranges a program runs, with CPU times, optional input shapes, memory and
stacks; `key_averages().table()` prints torch's summary and `export_chrome_trace` writes a
Chrome trace. Ops are seen through a `sys.setprofile` hook installed only while a profile
records (rustgrad.autograd.profiler says how, and what is not reported: device time, FLOPs).

Example (`print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))` prints
torch's summary table)::

    >>> from rustgrad.profiler import profile, record_function
    >>> model, x = rustgrad.nn.Linear(4, 2), rustgrad.randn(8, 4)
    >>> with profile(record_shapes=True) as prof:
    ...     with record_function("forward"):
    ...         y = model(x)
    >>> sorted(e.key for e in prof.key_averages())[:2]
    ['aten::addmm', 'aten::linear']
"""

from __future__ import annotations

from ..autograd.profiler import record_function
from ..autograd.profiler_util import EventList, FunctionEvent, FunctionEventAvg
from .profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

__all__ = [
    "profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction",
    "ProfilerActivity", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg",
]
