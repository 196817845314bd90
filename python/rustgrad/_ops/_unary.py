"""The unary pointwise ops as rows of a table (tinygrad's way of listing ops): a row states an
op's names, its backward node, its forward kernel and its gradient formula once, and `declare`
makes from the rows the forwards, the node specs, the declarations and the in-place forms.

    Unary("sin", "SinBackward0", lambda xp, d: xp.sin(d), lambda g, s: g * s.self.cos(),
          inplace="both")

The docstrings are kept beside the table, keyed by op name (`declare`'s `docs`): a summary line,
then notes and an example; `op` writes the Args block."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Tuple

from .. import _dtype
from .._tensor import Tensor
from ._declare import Names, op
from ._node import ELEMENTWISE, node
from ._util import _type_name, floating, name_function, quiet_fp
from .copyslices import inplace_from

# the complex forms of unary ops, by name (complex_views registers abs and angle); a row
# without one refuses complex input rather than give a wrong gradient
COMPLEX: Dict[str, Callable[[Tensor], Tensor]] = {}


def refuse_complex(name: str, input: Tensor) -> None:
    """NotImplementedError for an op whose complex form rustgrad does not have."""
    raise NotImplementedError(f"rustgrad: {name} does not support complex tensors "
                              f"({input.dtype!r}) yet")


@dataclass(frozen=True)
class Unary:
    """One unary op. kernel(xp, d): the result array of the float array d; grad(g, saved): the
    input's gradient from the output's, reading `saved.self` and/or `saved.result`."""

    name: str
    node: str
    kernel: Callable[[Any, Any], Any]
    grad: Callable[[Tensor, Any], Any]
    saved: Tuple[str, ...] = ("self",)  # "self" and/or "result"
    aliases: Tuple[str, ...] = ()  # more method and function names (arcsin for asin)
    public: bool = True  # a Tensor method and a rustgrad function; else rustgrad.special only
    special: Tuple[str, ...] = ()  # rustgrad.special names
    # the in-place form: None; "method" (Tensor.x_ only); "both" (also rustgrad.x_)
    inplace: Optional[str] = None
    autocast: Optional[str] = None  # the op's policy in torch's CUDA autocast lists
    # float16/bfloat16: "native" computes in the dtype; "float32" computes in float32 and
    # rounds, as torch's CPU kernels; "refuse" raises as torch's CPU kernels without those loops
    half: str = "native"
    arg_note: str = ""  # said of the input in the Args block

    @property
    def parser_name(self) -> str:
        """The name torch's argument parser gives in its errors."""
        return self.name if self.public else "special_" + self.name


def _docstring(row: Unary, doc: str) -> str:
    """The row's docs; `op` writes the Args block (_docs.COMMON_ARGS) unless the row says more
    of its input."""
    doc = inspect.cleandoc(doc)
    if not row.arg_note:
        return doc
    summary, _, rest = doc.partition("\n\n")
    return f"{summary}\n\nArgs:\n    input (Tensor): the input tensor{row.arg_note}.\n\n{rest}\n"


def _forward(row: Unary, spec: Any) -> Callable[[Tensor], Tensor]:
    kernel, parser_name, half = row.kernel, row.parser_name, row.half
    save_self = "self" in row.saved

    def forward(input: Tensor) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"{parser_name}(): argument 'input' (position 1) must be Tensor, "
                            f"not {type(input).__name__}")
        d = floating(input)
        if d.dtype.kind == "c":
            fn = COMPLEX.get(row.name)
            if fn is None:
                refuse_complex(row.name, input)
            return fn(input)
        low = half != "native" and d.dtype.itemsize < 4
        if low and half == "refuse":
            raise NotImplementedError(f'"{row.name}_cpu" not implemented for '
                                      f"'{_type_name(_dtype.from_np(d.dtype))}'")
        xp = input._backend
        with quiet_fp(xp):
            out = kernel(xp, d.astype("float32") if low else d)
        if half != "native":
            out = out.astype(d.dtype, copy=False)
        if save_self:
            return spec.record(out, (input,), self=input)
        return spec.record(out, (input,))

    return forward


def inplace_form(method: str, names: Tuple[str, ...], grad_fn: Names, reads_self: bool,
                 module: str, function: bool = True) -> Callable[..., Tensor]:
    """The in-place form of the unary op `method`, declared as `names` (Tensor methods, and
    rustgrad functions when `function`): the op runs out of place and its result is written into
    self (copyslices.inplace_from). reads_self: the op's backward reads its input."""

    def inplace(self: Tensor) -> Tensor:
        return inplace_from(self, lambda src: getattr(src, method)(), reads_self)

    name_function(inplace, names[0])
    inplace.__module__ = module
    inplace.__doc__ = f"{method} written into self."
    return op(method=names, function=names if function else (), grad_fn=grad_fn)(inplace)


def declare(rows: Iterable[Unary], docs: Mapping[str, str], module: str
            ) -> Dict[str, Callable[..., Tensor]]:
    """Each row's op (and in-place form, named `<name>_`), declared, by name; `module` is the
    family module's __name__."""
    made: Dict[str, Callable[..., Tensor]] = {}
    for row in rows:
        spec = node(row.node, lambda g, saved, ctx, grad=row.grad: grad(g, saved),
                    saved=tuple(s for s in row.saved if s != "result"),
                    result="result" in row.saved, forward=ELEMENTWISE)
        fn = _forward(row, spec)
        name_function(fn, row.name)
        fn.__module__ = module
        fn.__doc__ = _docstring(row, docs[row.name])
        names = (row.name,) + row.aliases if row.public else ()
        made[row.name] = op(method=names, function=names, special=row.special,
                            grad_fn=row.node,
                            autocast=dict(cuda=row.autocast) if row.autocast else None)(fn)
        if row.inplace is not None:
            inplace_names = tuple(n + "_" for n in (row.name,) + row.aliases)
            made[row.name + "_"] = inplace_form(row.name, inplace_names, row.node,
                                                "self" in row.saved, module,
                                                function=row.inplace == "both")
    return made
