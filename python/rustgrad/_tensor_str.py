"""repr of tensors, formatted as torch formats them (precision 4, scientific when needed)."""

from __future__ import annotations

import math
from typing import Any, List

from . import _dtype

_THRESHOLD = 1000
_EDGE = 3


class _Formatter:
    def __init__(self, values: List[Any], floating: bool) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        finite = [v for v in values if floating and math.isfinite(v)]
        if not floating:
            self.max_width = max((len(str(v)) for v in values), default=1)
            return
        if not finite:
            self.max_width = max((len(self._plain(v)) for v in values), default=1)
            return
        self.int_mode = all(float(v).is_integer() for v in finite)
        nonzero = [abs(v) for v in finite if v != 0]
        if self.int_mode:
            if nonzero and max(nonzero) > 1e8:
                self.sci_mode = True
        elif nonzero:
            hi, lo = max(nonzero), min(nonzero)
            if hi / lo > 1000.0 or hi > 1e8 or lo < 1e-4:
                self.sci_mode = True
        self.max_width = max(len(self.format_plain(v)) for v in values)

    def _plain(self, v: Any) -> str:
        if isinstance(v, float) and math.isnan(v):
            return "nan"
        if isinstance(v, float) and math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return str(v)

    def format_plain(self, v: Any) -> str:
        if not self.floating:
            return str(v)
        if not math.isfinite(v):
            return self._plain(v)
        if self.sci_mode:
            return f"{v:.4e}"
        if self.int_mode:
            return f"{v:.0f}."
        return f"{v:.4f}"

    def format(self, v: Any) -> str:
        return self.format_plain(v).rjust(self.max_width)


def _flat_values(arr: Any, summarize: bool) -> List[Any]:
    if not summarize or arr.ndim == 0:
        return arr.ravel().tolist()
    out: List[Any] = []
    if arr.ndim == 1:
        if arr.shape[0] > 2 * _EDGE:
            return arr[:_EDGE].tolist() + arr[-_EDGE:].tolist()
        return arr.tolist()
    rows = range(arr.shape[0])
    if arr.shape[0] > 2 * _EDGE:
        rows = list(range(_EDGE)) + list(range(arr.shape[0] - _EDGE, arr.shape[0]))
    for i in rows:
        out.extend(_flat_values(arr[i], summarize))
    return out


def _render(arr: Any, fmt: _Formatter, indent: int, summarize: bool) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        items = arr.tolist()
        if summarize and len(items) > 2 * _EDGE:
            parts = [fmt.format(v) for v in items[:_EDGE]] + ["..."]
            parts += [fmt.format(v) for v in items[-_EDGE:]]
        else:
            parts = [fmt.format(v) for v in items]
        return "[" + ", ".join(parts) + "]"
    n = arr.shape[0]
    idx: List[Any] = list(range(n))
    if summarize and n > 2 * _EDGE:
        idx = list(range(_EDGE)) + [None] + list(range(n - _EDGE, n))
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    parts = ["..." if i is None else _render(arr[i], fmt, indent + 1, summarize) for i in idx]
    return "[" + sep.join(parts) + "]"


def tensor_repr(t: Any, prefix: str = "tensor(") -> str:
    arr = t._data
    np_arr = t._backend.to_numpy(arr)
    dt = _dtype.from_np(np_arr.dtype)
    summarize = np_arr.size > _THRESHOLD
    suffixes = []
    if np_arr.size == 0 and np_arr.ndim == 1:
        body = "[]"
    elif np_arr.size == 0:
        body = "[]"
        suffixes.append(f"size={tuple(np_arr.shape)}")
    else:
        vals = _flat_values(np_arr, summarize)
        fmt = _Formatter(vals, dt.is_floating_point)
        body = _render(np_arr, fmt, len(prefix), summarize)
    dev = t.device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    if dt not in (_dtype.get_default_dtype(), _dtype.int64, _dtype.bool_):
        suffixes.append(f"dtype={dt!r}")
    elif np_arr.size == 0 and dt is not _dtype.get_default_dtype():
        suffixes.append(f"dtype={dt!r}")
    fn = t.grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn=<{fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    out = prefix + body
    for s in suffixes:
        out += ", " + s
    return out + ")"
