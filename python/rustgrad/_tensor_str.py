"""repr of tensors, formatted as torch formats them (torch/_tensor_str.py's algorithm: precision 4,
scientific when needed, lines wrapped at 80 columns, summarized above 1000 elements), under the
options of `set_printoptions`."""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any, Dict, Iterator, List, Optional

import numpy as np

from . import _dtype


@dataclasses.dataclass
class _PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: Optional[bool] = None


PRINT_OPTS = _PrinterOptions()
_PROFILES = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}


def set_printoptions(precision: Optional[int] = None, threshold: Optional[float] = None,
                     edgeitems: Optional[int] = None, linewidth: Optional[int] = None,
                     profile: Optional[str] = None, sci_mode: Optional[bool] = None) -> None:
    """Sets how tensors print (as torch: a profile first, then the options given; sci_mode is
    reset to automatic unless given).

    The options are global: they apply to every tensor printed afterwards, until changed.

    Args:
        precision (int, optional): digits after the decimal point of floating point values.
            Default: ``4``.
        threshold (float, optional): tensors with more elements than this are summarized, their
            middle replaced by ``...``. Default: ``1000``.
        edgeitems (int, optional): how many items a summarized tensor shows at each end of each
            dimension. Default: ``3``.
        linewidth (int, optional): the characters per line before rows wrap. Default: ``80``.
        profile (str, optional): ``"default"``, ``"short"`` (precision 2, 2 edge items) or
            ``"full"`` (never summarize); applied before the other options.
        sci_mode (bool, optional): True for scientific notation, False for fixed point, None
            to choose automatically from the values' range.

    Example::

        >>> torch.set_printoptions(precision=2)
        >>> torch.tensor([1.23456, 2.0])
        tensor([1.23, 2.00])
        >>> torch.set_printoptions(threshold=5, edgeitems=2)
        >>> torch.arange(10.0)
        tensor([0., 1.,  ..., 8., 9.])
        >>> torch.set_printoptions(sci_mode=True)  # precision=2 still holds
        >>> torch.tensor([1.5, 20.0])
        tensor([1.50e+00, 2.00e+01])
        >>> torch.set_printoptions(profile="default")  # back to torch's defaults
        >>> torch.tensor([1.23456, 2.0])
        tensor([1.2346, 2.0000])
    """
    if profile is not None and profile in _PROFILES:
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems,
         PRINT_OPTS.linewidth) = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> Dict[str, Any]:
    """The current print options, as keywords for set_printoptions.

    Example::

        >>> torch._tensor_str.get_printoptions()
        {'precision': 4, 'threshold': 1000, 'edgeitems': 3, 'linewidth': 80, 'sci_mode': None}
    """
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs: Any) -> Iterator[None]:
    """Print options changed for the duration of a with block.

    Args:
        **kwargs: the keywords of `set_printoptions`; all options are restored on exit.

    Example::

        >>> with torch._tensor_str.printoptions(precision=1):
        ...     print(torch.tensor([1 / 3]))
        tensor([0.3])
        >>> torch.tensor([1 / 3])
        tensor([0.3333])
    """
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    def __init__(self, values: List[Any], floating: bool) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not floating:
            self.max_width = max((len(str(v)) for v in values), default=1)
            return
        # as torch: only the nonzero finite values choose the mode and the width
        vals = [v for v in values if math.isfinite(v) and v != 0]
        if not vals:
            return
        hi = max(abs(v) for v in vals)
        lo = min(abs(v) for v in vals)
        self.int_mode = all(float(v).is_integer() for v in vals)
        prec = PRINT_OPTS.precision
        auto = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        self.sci_mode = auto if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode
        if self.sci_mode:
            self.max_width = max(len(f"{v:.{prec}e}") for v in vals)
        elif self.int_mode:
            self.max_width = max(len(f"{v:.0f}") + 1 for v in vals)
        else:
            self.max_width = max(len(f"{v:.{prec}f}") for v in vals)

    def width(self) -> int:
        return self.max_width

    def format(self, v: Any) -> str:
        if self.floating:
            if self.sci_mode:
                ret = f"{v:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                ret = f"{v:.0f}"
                if not (math.isinf(v) or math.isnan(v)):
                    ret += "."
            else:
                ret = f"{v:.{PRINT_OPTS.precision}f}"
        else:
            ret = f"{v}"
        return (self.max_width - len(ret)) * " " + ret



class _ComplexFormatter(_Formatter):
    """torch's pair of formatters for complex values: the real parts' and the imaginary
    parts' (each chooses its own mode and width)."""

    def __init__(self, values: List[Any]) -> None:
        super().__init__([v.real for v in values], True)
        self.imag = _Formatter([v.imag for v in values], True)

    def width(self) -> int:
        return self.max_width + self.imag.width() + 1

    def format(self, v: Any) -> str:
        # the real part by the real parts' formatter; the imaginary part by its own, stripped,
        # with its sign written out
        real = super().format(v.real)
        imag = (self.imag.format(v.imag) + "j").lstrip()
        return real + (imag if imag[0] in "+-" else "+" + imag)


def _summarized(arr: Any) -> Any:
    """torch's get_summarized_data: the edge items that a summarized repr shows."""
    if arr.ndim == 0:
        return arr
    edge = PRINT_OPTS.edgeitems
    if arr.ndim == 1:
        if arr.shape[0] > 2 * edge:
            return np.concatenate((arr[:edge], arr[-edge:] if edge else arr[:0]))
        return arr
    if not edge:
        return arr[(slice(0, 0),) * arr.ndim]
    if arr.shape[0] > 2 * edge:
        rows = list(range(edge)) + list(range(arr.shape[0] - edge, arr.shape[0]))
    else:
        rows = list(range(arr.shape[0]))
    return np.stack([_summarized(arr[i]) for i in rows])


def _vector_str(arr: Any, indent: int, summarize: bool, fmt: _Formatter) -> str:
    element_length = fmt.width() + 2
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    edge = PRINT_OPTS.edgeitems
    if summarize and not edge:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * edge:
        data = [fmt.format(v) for v in arr[:edge].tolist()] + [" ..."]
        data += [fmt.format(v) for v in arr[-edge:].tolist()]
    else:
        data = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _render(arr: Any, fmt: _Formatter, indent: int, summarize: bool) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    n = arr.shape[0]
    idx: List[Any] = list(range(n))
    edge = PRINT_OPTS.edgeitems
    if summarize and n > 2 * edge:
        idx = list(range(edge)) + [None] + list(range(n - edge, n))
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    parts = ["..." if i is None else _render(arr[i], fmt, indent + 1, summarize) for i in idx]
    return "[" + sep.join(parts) + "]"


def _add_suffixes(tensor_str: str, suffixes: List[str], indent: int) -> str:
    out = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            out.append(", " + suffix)
            last_line_len += len(suffix) + 2
    out.append(")")
    return "".join(out)


def tensor_repr(t: Any, prefix: str = "tensor(") -> str:
    """The text of ``repr(t)``: t's values laid out as torch lays them out under the current
    print options, followed by the suffixes torch adds (device, dtype, requires_grad,
    grad_fn) where they apply.

    Args:
        t (Tensor): the tensor.
        prefix (str): the text before the values; continuation lines are indented by its
            width. Default: ``"tensor("``.
    """
    arr = t._data
    np_arr = t._backend.to_numpy(arr)
    dt = _dtype.from_np(np_arr.dtype)
    summarize = np_arr.size > PRINT_OPTS.threshold
    suffixes = []
    indent = len(prefix)
    dev = t.device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    if np_arr.size == 0:
        body = "[]"
        if np_arr.ndim != 1:
            suffixes.append(f"size={tuple(np_arr.shape)}")
        if dt is not _dtype.get_default_dtype():  # an empty complex tensor names its dtype too
            suffixes.append(f"dtype={dt!r}")
    else:
        if np_arr.dtype == np.float16:
            np_arr = np_arr.astype(np.float32)
        shown = _summarized(np_arr) if summarize else np_arr
        values = shown.ravel().tolist()
        fmt = (_ComplexFormatter(values) if dt.is_complex
               else _Formatter(values, dt.is_floating_point))
        body = _render(np_arr, fmt, indent, summarize)
        default = _dtype.get_default_dtype()
        if dt not in (default, default.to_complex(), _dtype.int64, _dtype.bool_):
            suffixes.append(f"dtype={dt!r}")
    try:
        fn = t.grad_fn
        name = None if fn is None else fn.name().rsplit("::", 1)[-1]
    except RuntimeError:  # a view whose history cannot follow its base's in-place write
        name = "Invalid"
    if name is not None:
        suffixes.append(f"grad_fn=<{name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
