"""How much of torch's public surface rustgrad has, measured against the installed torch.

    python tools/api_coverage.py             # the table
    python tools/api_coverage.py --missing   # also every missing name, per namespace
    python tools/api_coverage.py --markdown  # the table as the README shows it

A name counts as present when `hasattr` finds it on the rustgrad side (module `__getattr__`s
included). Left out of every count, each family named in the output with how many names it
removes:

- sparse, quantized, nested and other-device names (mkldnn, mps, xpu, ...): rustgrad has
  strided CPU/CUDA tensors only;
- TorchScript's IR and type bindings (the pybind11 classes of `torch._C`, `parse_ir`, `fork`,
  ...): rustgrad's `jit` returns code unchanged, so there is no IR to expose;
- legacy typed storages (`FloatStorage`, ...): `untyped_storage()` is the storage API;
- undocumented `torch.*` entries (no docstring): ATen's internal bindings such as
  `batch_norm_backward_elemt`, which torch's documentation does not list;
- names torch itself deprecates (a docstring or warning that says so).
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import warnings
from typing import Any, Callable, Dict, List, Tuple

_FOREIGN = re.compile(
    r"sparse|quantiz|^q_|qscheme|int_repr|nested|mkldnn|vulkan|xpu|mps|ipu|hpu|xla|mtia|maia"
    r"|SparseAdam|fbgemm|cudnn|miopen|dequantize|coalesce|indices|values$|crow|ccol|to_padded|to_dense"
    r"|dense_dim|sparse_dim|_nnpack|^fake_|^fused_|^choose_qparams|^sym_|^Sym|^smm$|^hsmm$"
    r"|^dsmm$|^saddmm$|^spmm$|^sspaddmm$|^hspmm$|^values_copy$"
)
# float8 scaled and grouped GEMMs: prototype CUDA (sm90+) kernels over dtypes rustgrad lacks
_FLOAT8 = re.compile(r"^(scaled_mm|scaled_addmm_?|scaled_grouped_mm|grouped_mm|ScalingType|SwizzleType)$")
# deprecated by a warning in __init__ rather than in the docstring
_DEPRECATED_NAMES = {"Container", "NLLLoss2d"}
_JIT_FUNCTIONS = {
    "parse_ir", "parse_schema", "parse_type_comment", "import_ir_module",
    "import_ir_module_from_buffer", "merge_type_from_type_comment", "unify_type_list", "fork",
    "wait", "classproperty", "compiled_with_cxx11_abi", "get_file_path",
    "prepare_multiprocessing_environment", "profiler_allow_cudagraph_cupti_lazy_reinit_cuda12",
}
# names of torch's __torch_function__ dispatch, C++ profiler bindings and typing helpers that
# torch.autograd re-exports
_INTERNALS = {
    "handle_torch_function", "has_torch_function", "is_tensor_like", "overload", "cast",
    "DeviceType", "ProfilerActivity", "ProfilerConfig", "ProfilerEvent", "ProfilerState",
    "kineto_available", "NestedIOFunction", "variable",
}
_DEPRECATED = re.compile(r"deprecated|will be removed|is removed", re.IGNORECASE)


def _doc(obj: Any) -> str:
    doc = getattr(obj, "__doc__", None)
    return doc.strip() if isinstance(doc, str) else ""


def _is_jit(torch: Any, name: str, obj: Any) -> bool:
    if name in _JIT_FUNCTIONS:
        return True
    return isinstance(obj, type) and type(obj).__name__ == "pybind11_type"


def _has(obj: Any, name: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return hasattr(obj, name)
    except Exception:  # a property that raises on the class still names the attribute
        return True


Rule = Callable[[str, Any], str]


def _classify(names: List[str], owner: Any, rules: List[Tuple[str, Callable[[str, Any], bool]]]
              ) -> Tuple[List[str], Dict[str, List[str]]]:
    kept: List[str] = []
    dropped: Dict[str, List[str]] = {family: [] for family, _ in rules}
    for name in names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = getattr(owner, name, None)
        for family, test in rules:
            if test(name, obj):
                dropped[family].append(name)
                break
        else:
            kept.append(name)
    return kept, dropped


def surfaces() -> List[Tuple[str, List[str], Any, Dict[str, List[str]]]]:
    """(label, torch names counted, rustgrad owner, families left out) per namespace."""
    import rustgrad.nn
    import rustgrad.nn.functional
    import torch
    import torch.nn
    import torch.nn.functional

    def public(owner: Any) -> List[str]:
        return sorted(n for n in dir(owner) if not n.startswith("_"))

    def deprecated(name: str, obj: Any) -> bool:
        return name in _DEPRECATED_NAMES or bool(_DEPRECATED.search(_doc(obj)[:300]))

    foreign = ("sparse, quantized, nested, other devices", lambda n, o: bool(_FOREIGN.search(n)))
    storages = ("legacy typed storages", lambda n, o: "Storage" in n or n == "storage_type")
    out = []

    names, dropped = _classify(public(torch.Tensor), torch.Tensor, [
        foreign, storages, ("functorch first-class dimensions", lambda n, o: n == "index"),
        ("deprecated by torch", deprecated)])
    out.append(("Tensor methods", names, rustgrad.Tensor, dropped))

    def torch_callable(name: str) -> bool:
        obj = getattr(torch, name, None)
        return callable(obj) and not inspect.ismodule(obj)

    names, dropped = _classify([n for n in public(torch) if torch_callable(n)], torch, [
        foreign, storages,
        ("TorchScript IR and types", lambda n, o: _is_jit(torch, n, o)),
        ("deprecated by torch", deprecated),
        ("undocumented ATen bindings", lambda n, o: not _doc(o)),
    ])
    out.append(("torch.* functions and classes", names, rustgrad, dropped))

    def functional(name: str, obj: Any) -> bool:
        return callable(obj) and str(getattr(obj, "__module__", "")).startswith("torch.nn.functional")

    tf = torch.nn.functional
    names, dropped = _classify([n for n in public(tf) if functional(n, getattr(tf, n))], tf, [
        ("float8 and grouped GEMMs (CUDA sm90+ prototypes)", lambda n, o: bool(_FLOAT8.search(n))),
        ("deprecated by torch", deprecated)])
    out.append(("nn.functional", names, rustgrad.nn.functional, dropped))

    import importlib

    for sub in ("linalg", "special", "fft", "func", "distributions", "optim", "autograd"):
        theirs = importlib.import_module(f"torch.{sub}")
        ours = importlib.import_module(f"rustgrad.{sub}")
        names = [n for n in public(theirs) if callable(getattr(theirs, n))
                 and not inspect.ismodule(getattr(theirs, n)) and n != "Tensor"]
        names, dropped = _classify(names, theirs, [
            foreign, ("TorchScript IR and types", lambda n, o: _is_jit(torch, n, o)),
            ("torch's own dispatch and profiler internals", lambda n, o: n in _INTERNALS),
            ("deprecated by torch", deprecated)])
        out.append((f"torch.{sub}", names, ours, dropped))

    modules = [n for n in public(torch.nn)
               if inspect.isclass(getattr(torch.nn, n)) and issubclass(getattr(torch.nn, n), torch.nn.Module)]
    names, dropped = _classify(modules, torch.nn, [("deprecated by torch", deprecated)])
    out.append(("nn modules", names, rustgrad.nn, dropped))
    return out


def table(markdown: bool = False, missing: bool = False) -> str:
    import torch

    lines = []
    if markdown:
        lines += [f"Against torch {torch.__version__.split('+')[0]} (`make coverage`):", "",
                  "| namespace | present | of | coverage | missing | left out of the count |",
                  "|---|---|---|---|---|---|"]
    for label, names, owner, dropped in surfaces():
        absent = [n for n in names if not _has(owner, n)]
        present = len(names) - len(absent)
        share = 100.0 * present / max(len(names), 1)
        left_out = ", ".join(f"{family} ({len(v)})" for family, v in dropped.items() if v)
        if markdown:
            gone = ", ".join(f"`{n}`" for n in absent)
            lines.append(f"| {label} | {present} | {len(names)} | {share:.1f}% | {gone} | {left_out} |")
        else:
            lines.append(f"{label:32s} {present:4d} / {len(names):4d}  {share:5.1f}%   left out: {left_out}")
        if missing and absent and not markdown:
            lines.append("    missing: " + " ".join(absent))
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true", help="list every missing name")
    parser.add_argument("--markdown", action="store_true", help="print the README's table")
    args = parser.parse_args(argv)
    print(table(markdown=args.markdown, missing=args.missing))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
