"""Issue 11's performance bars, each measured side by side with torch (or the NumPy floor) in
one run and printed with its ratio and met / not met; the figures also go to
target/bench/bars.json so that two runs can be compared.

Every thread count runs in its own child process (OPENBLAS_NUM_THREADS must be set before NumPy
is imported; torch gets set_num_threads and set_num_interop_threads), the 10^6-node chain runs
one fresh process per library and round (its RSS growth is the graph's alone), and the import
bar starts fresh interpreters. Within a process the libraries alternate every round, and each
figure is the median of the rounds.

The provenance bars (issue 26) time rustgrad's forward chain with node provenance off and on, each
in a fresh process, and, where valgrind is installed, count its instructions per op in each mode
(callgrind; deterministic where a shared VM's timings swing by more than the 2% bar).

    python benches/bars.py [--rounds 5] [--only chain,kernels,mlp,cnn,gpt,memory,provenance,import]
                           [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from children import HERE, emit, run_child  # noqa: E402  (benches/ on the path first)

GROUPS = ("chain", "kernels", "mlp", "cnn", "gpt", "memory", "provenance", "import")
THREADED = ("mlp", "cnn", "gpt")  # measured at 1 and at 2 threads
THREADS = (1, 2)
STEP_TITLES = {
    "mlp": "MLP 784-512-512-10, batch 128, cross-entropy; ms per step",
    "cnn": ("CNN step, batch 32, 1x28x28: conv 1->16 and 16->32 (3x3, padding 1), each + ReLU +"
            " 2x2 max-pool, Linear(32*7*7, 128), ReLU, Linear(128, 10); SGD lr 0.01 momentum 0.9;"
            " ms per step"),
    "gpt": ("Small GPT step: 2 blocks, n_embd 128, 4 heads, block 64, batch 16, exact GELU, AdamW;"
            " ms per step"),
}
OUT = os.path.join(HERE, os.pardir, "target", "bench", "bars.json")


# ---- bars: the pure part (tests/test_bars.py checks it on synthetic numbers) ------------------
@dataclass
class Bar:
    """One bar of the issue. kind says how value and reference are judged against target:
    "ratio" value / reference <= target; "limit" value <= target (reference shown beside it);
    "margin" value - reference <= target; "check" value is true; "info" printed, not judged.
    A bar whose value (or needed reference) is missing was not measured, and is not met."""

    group: str
    name: str
    value: Any
    reference: Any = None
    target: Optional[float] = None
    kind: str = "ratio"
    unit: str = ""
    ref_label: str = "torch"

    def figure(self) -> Optional[float]:
        """The number compared with target: the ratio, the value or the difference."""
        if self.value is None or self.kind == "check":
            return None
        if self.kind in ("ratio", "info"):
            if self.reference in (None, 0):
                return None
            return self.value / self.reference
        if self.kind == "margin":
            return None if self.reference is None else self.value - self.reference
        return float(self.value)  # limit

    def met(self) -> Optional[bool]:
        """True / False, or None for an info line."""
        if self.kind == "info":
            return None
        if self.kind == "check":
            return bool(self.value)
        fig = self.figure()
        return fig is not None and self.target is not None and fig <= self.target


def _num(v: Optional[float], unit: str) -> str:
    if v is None:
        return "n/a"
    a = abs(v)
    text = f"{v:.0f}" if a >= 100 else f"{v:.1f}" if a >= 10 else f"{v:.2f}" if a >= 0.1 else f"{v:.3f}"
    return f"{text} {unit}".rstrip()


def _cells(bar: Bar) -> Tuple[str, str, str, str, str]:
    if bar.kind == "check":
        value = "n/a" if bar.value is None else ("yes" if bar.value else "no")
        return value, "", "", "yes", "met" if bar.met() else "not met"
    ref = "" if bar.reference is None else f"{_num(bar.reference, bar.unit)} ({bar.ref_label})"
    fig = bar.figure()
    if bar.kind == "margin":
        ratio = "n/a" if fig is None else f"{fig:+.3f} {bar.unit}"
        target = f"<= {bar.target:+.3f} {bar.unit}"
    elif bar.kind == "limit":
        ratio = "-"
        target = f"<= {_num(bar.target, bar.unit)}"
    else:
        ratio = "n/a" if fig is None else f"{fig:.2f}x"
        target = "" if bar.target is None else f"<= {bar.target:.2f}x"
    met = bar.met()
    verdict = "(info)" if met is None else "met" if met else "not met"
    return _num(bar.value, bar.unit), ref, ratio, target, verdict


def format_table(bars: Sequence[Bar]) -> List[str]:
    """The table, grouped, and the closing "N of M bars met" line (info lines not counted)."""
    head = ("bar", "rustgrad", "torch / floor / ref", "ratio", "target", "")
    rows = [(f"  {b.name}",) + _cells(b) for b in bars]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(6)]

    def line(cells: Sequence[str]) -> str:
        return " | ".join(c.ljust(w) if i in (0, 5) else c.rjust(w)
                          for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [line(head), "-+-".join("-" * w for w in widths)]
    group = None
    for b, r in zip(bars, rows):
        if b.group != group:
            group = b.group
            out.append(group)
        out.append(line(r))
    judged = [b for b in bars if b.kind != "info"]
    out.append(f"{sum(bool(b.met()) for b in judged)} of {len(judged)} bars met")
    return out


def _median(xs: Any) -> Optional[float]:
    xs = [x for x in (xs or []) if x is not None]
    return statistics.median(xs) if xs else None


def _get(d: Any, *keys: Any) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def make_bars(raw: Dict[str, Any]) -> List[Bar]:
    """The bars from the children's raw figures (see measure); missing figures give bars that are
    not measured, hence not met."""
    bars: List[Bar] = []
    one = _get(raw, "threads", "1") or {}
    if "chain" in raw["groups"]:
        chain = one.get("chain") or {}
        n = raw["sizes"]["chain"]
        group = (f"Per-op chain y = y * 1.0001 + 0.001, {n} iterations (2 ops each; a tenth of that"
                 " at (256, 256)), 1 thread, µs per op")
        for shape, (tf, tb) in (("(1,)", (0.3, 0.25)), ("(16,)", (0.3, 0.25)), ("(256, 256)", (0.8, 0.6))):
            for i, (what, target) in enumerate((("forward", tf), ("backward", tb))):
                rg = _median(r[i] for r in _get(chain, shape, "rustgrad") or [])
                th = _median(r[i] for r in _get(chain, shape, "torch") or [])
                bars.append(Bar(group, f"{shape} {what}", rg, th, target, unit="µs"))
    if "kernels" in raw["groups"]:
        kern = one.get("kernels") or {}
        group = (f"Elementwise kernels on {raw['sizes']['kernels']} float32 values, 1 thread, µs per"
                 " call (the bar is forward; forward+backward for information)")
        for label in kern:
            info = label.endswith("fwd+bwd")
            bars.append(Bar(group, label, _median(_get(kern, label, "rustgrad")),
                            _median(_get(kern, label, "torch")), None if info else 1.5,
                            kind="info" if info else "ratio", unit="µs"))
    for key, title in STEP_TITLES.items():
        if key not in raw["groups"]:
            continue
        for threads in THREADS:
            res = _get(raw, "threads", str(threads)) or {}
            th = f"{threads} thread{'s' if threads > 1 else ''}"
            if key == "mlp":
                for opt in ("sgd", "adam"):
                    by = res.get(f"mlp {opt}") or {}
                    rg = _median(by.get("rustgrad"))
                    name = f"{opt.upper() if opt == 'sgd' else 'Adam'}, {th}"
                    bars.append(Bar(title, f"{name} vs NumPy floor", rg, _median(by.get("numpy")), 1.1,
                                    unit="ms", ref_label="floor"))
                    bars.append(Bar(title, f"{name} vs torch", rg, _median(by.get("torch")), 0.8, unit="ms"))
            else:
                by = res.get("cnn sgd-momentum" if key == "cnn" else "gpt") or {}
                bars.append(Bar(title, th, _median(by.get("rustgrad")), _median(by.get("torch")), 1.0,
                                unit="ms"))
    if "memory" in raw["groups"]:
        bars.extend(_memory_bars(raw))
    if "provenance" in raw["groups"]:
        prov = raw.get("provenance") or {}
        bars.append(Bar("Node provenance: the forward chain at (1,), each mode in a fresh process, µs"
                        " per op; bar: on costs <= 2%", "provenance on vs off", _median(prov.get("on")),
                        _median(prov.get("off")), 1.02, unit="µs", ref_label="off"))
        ir = raw.get("provenance_instructions")
        if ir is not None:  # None where valgrind is not installed: no bar
            bars.append(Bar("Node provenance: the forward chain at (1,), each mode in a fresh process, µs"
                            " per op; bar: on costs <= 2%", "on vs off, instructions per op (callgrind)",
                            ir["on"], ir["off"], 1.02, ref_label="off"))
    if "import" in raw["groups"]:
        imp = raw.get("import") or {}
        base = _median(imp.get("python"))
        rg, npy = _median(imp.get("rustgrad")), _median(imp.get("numpy"))
        bars.append(Bar("Import: fresh interpreter minus `python -c pass`, median of "
                        f"{raw['sizes']['import_rounds']}; bar: rustgrad <= numpy + 0.1 s",
                        "import rustgrad vs import numpy", _minus(rg, base), _minus(npy, base), 0.1, kind="margin",
                        unit="s", ref_label="numpy"))
    return bars


def _minus(v: Optional[float], base: Optional[float]) -> Optional[float]:
    return None if v is None or base is None else v - base


def us(seconds: Optional[float]) -> Optional[float]:
    """Seconds to µs, None kept."""
    return None if seconds is None else seconds * 1e6


def _memory_bars(raw: Dict[str, Any]) -> List[Bar]:
    mem = raw.get("memory") or {}
    big, small = raw["sizes"]["memory"]

    def med(nodes: int, lib: str, field: str) -> Optional[float]:
        runs = _get(mem, str(nodes), lib) or []
        return _median(r.get(field) for r in runs)

    group = (f"{big:,}-node chain (y * 1.0001 + 0.001 on (1,)), a fresh process per library and round;"
             " record time excludes backward")
    rec = med(big, "rustgrad", "record_s_per_node")
    runs = _get(mem, str(big), "rustgrad") or []
    bars = [
        Bar(group, "record time per node", us(rec), us(med(big, "torch", "record_s_per_node")), 0.25,
            unit="µs"),
        Bar(group, "backward time per node (torch's: first round only)",
            us(med(big, "rustgrad", "backward_s_per_node")),
            us(med(big, "torch", "backward_s_per_node")), kind="info", unit="µs"),
        Bar(group, "RSS growth per live node", med(big, "rustgrad", "bytes_per_node"),
            med(big, "torch", "bytes_per_node"), 400, kind="limit", unit="B"),
        Bar(group, f"linear growth: record time per node, {big:,} vs {small:,} nodes", us(rec),
            us(med(small, "rustgrad", "record_s_per_node")), 1.3, unit="µs", ref_label=f"{small:,}"),
        Bar(group, f"linear growth: bytes per node, {big:,} vs {small:,} nodes",
            med(big, "rustgrad", "bytes_per_node"), med(small, "rustgrad", "bytes_per_node"), 1.3,
            unit="B", ref_label=f"{small:,}"),
        Bar(group, f"no recursion: backward of {big:,} nodes completes in every round",
            bool(runs) and all(r.get("backward_ok") for r in runs), kind="check"),
    ]
    return bars


# ---- measuring ------------------------------------------------------------------------------
def _sizes(quick: bool, rounds: int) -> Dict[str, Any]:
    return {"chain": 50 if quick else 5000, "kernels": 1024 if quick else 16384,
            "mlp_steps": 2 if quick else 20, "cnn_steps": 2 if quick else 10,
            "gpt_steps": 1 if quick else 5,
            # quick: big enough that the smaller graph still grows the heap (RSS) measurably
            "memory": [60_000, 20_000] if quick else [1_000_000, 100_000],
            "memory_rounds": 1 if quick else min(max(rounds, 1), 3),
            "provenance": 50 if quick else 5000, "provenance_rounds": 1 if quick else max(rounds, 3),
            "import_rounds": 1 if quick else max(rounds, 5)}


def child(threads: int, groups: Sequence[str], rounds: int, quick: bool) -> None:
    """One thread count's measurements, printed as the result line."""
    import numpy as np  # noqa: F401  (imported here after OPENBLAS_NUM_THREADS, by the parent)

    try:
        import torch

        try:
            torch.set_num_interop_threads(threads)
        except RuntimeError:
            pass
    except ImportError:
        pass
    import bench_gpt
    import bench_kernels
    import bench_overhead
    import bench_steps
    from libraries import libraries

    libs = libraries(threads)
    libs["rustgrad"].set_num_threads(threads)
    sizes = _sizes(quick, rounds)
    out: Dict[str, Any] = {}
    if "chain" in groups:
        res = bench_overhead.measure(sizes["chain"], rounds, libs)
        out["chain"] = {str(shape): by for shape, by in res.items()}
    if "kernels" in groups:
        out["kernels"] = bench_kernels.measure(rounds, sizes["kernels"], libs)
    for key in ("mlp", "cnn"):
        if key in groups:
            out.update(bench_steps.measure(threads, sizes[f"{key}_steps"], rounds, quick, (key,)))
    if "gpt" in groups:
        fns = {name: bench_gpt.make_step(lib) for name, lib in libs.items()}
        out["gpt"] = bench_steps.interleaved(fns, sizes["gpt_steps"], rounds)
    emit(out)


def measure(groups: Sequence[str], rounds: int, quick: bool) -> Dict[str, Any]:
    """All the raw figures: {"groups", "sizes", "threads": {"1": {...}, "2": {...}}, "memory",
    "import"}."""
    import bench_import
    import bench_memory
    import bench_overhead

    sizes = _sizes(quick, rounds)
    raw: Dict[str, Any] = {"groups": list(groups), "rounds": rounds, "quick": quick, "sizes": sizes,
                           "threads": {}, "stage_seconds": {}}
    for threads in THREADS:
        mine = [g for g in groups if g in THREADED or (threads == 1 and g in ("chain", "kernels"))]
        if mine:
            t0 = time.perf_counter()
            args = ["bars.py", "--child", str(threads), "--only", ",".join(mine), "--rounds", str(rounds)]
            raw["threads"][str(threads)] = run_child(args + (["--quick"] if quick else []), threads)
            raw["stage_seconds"][f"{threads} thread(s)"] = time.perf_counter() - t0
    if "memory" in groups:
        t0 = time.perf_counter()
        raw["memory"] = bench_memory.measure(sizes["memory"], sizes["memory_rounds"])
        raw["stage_seconds"]["memory"] = time.perf_counter() - t0
    if "provenance" in groups:
        t0 = time.perf_counter()
        raw["provenance"] = bench_overhead.provenance_runs(sizes["provenance"], sizes["provenance_rounds"])
        raw["provenance_instructions"] = bench_overhead.provenance_instructions(
            600 if quick else 10000, 1 if quick else 3)
        raw["stage_seconds"]["provenance"] = time.perf_counter() - t0
    if "import" in groups:
        t0 = time.perf_counter()
        raw["import"] = bench_import.measure(sizes["import_rounds"])
        raw["stage_seconds"]["import"] = time.perf_counter() - t0
    return raw


def _commit() -> Optional[str]:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5, help="rounds per figure (median; default 5)")
    p.add_argument("--only", default=",".join(GROUPS), help=f"a subset of {','.join(GROUPS)}")
    p.add_argument("--quick", action="store_true", help="tiny sizes and one round (a smoke test)")
    p.add_argument("--out", default=OUT, help="where the JSON goes (default target/bench/bars.json)")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)  # a thread count's child process
    a = p.parse_args(argv)
    groups = [g for g in a.only.split(",") if g]
    unknown = sorted(set(groups) - set(GROUPS))
    if unknown:
        p.error(f"unknown group(s) {unknown}; choose from {','.join(GROUPS)}")
    rounds = 1 if a.quick else a.rounds
    if a.child:
        child(a.child, groups, rounds, a.quick)
        return 0
    t0 = time.perf_counter()
    raw = measure([g for g in GROUPS if g in groups], rounds, a.quick)
    bars = make_bars(raw)
    elapsed = time.perf_counter() - t0
    print(f"issue 11 bars: rustgrad against torch (or the NumPy floor), medians of {rounds} round(s),"
          f" libraries alternating; {os.cpu_count()} CPUs, {elapsed:.0f} s")
    for line in format_table(bars):
        print(line)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"commit": _commit(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "seconds": elapsed, "raw": raw,
                   "bars": [dict(asdict(b), figure=b.figure(), met=b.met()) for b in bars]},
                  f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
