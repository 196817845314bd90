"""Hostile inputs: public functions called with wrong types, NaN/Inf, empty shapes, bad dims and
strange NumPy arrays (non-contiguous, overlapping, read-only, big-endian, object) raise torch's
exception type — or give torch's result — and leave their inputs unchanged; nothing crashes.

The corpus runs in a subprocess, so a segfault or a Rust panic that escaped would show as the
child's exit status rather than take pytest down with it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# Each case: a program body using `lib` (torch or rustgrad) and `np`; it returns a value (compared
# as a float list) or raises (compared by exception type).
CASES = {
    "wrong_type_add": "return lib.ones(2) + 'a'",
    "wrong_type_tensor": "return lib.tensor(object())",
    "none_matmul": "return lib.ones(2, 2) @ None",
    "nan_through_ops": "x = lib.tensor([float('nan'), 1.0]); return (x * 2).exp()",
    "inf_log": "return lib.tensor([float('inf'), 0.0]).log()",
    "empty_sum": "return lib.zeros(0, 3).sum(0)",
    "empty_mean": "return lib.zeros(0).mean()",
    "empty_max": "return lib.zeros(0).max()",
    "negative_dim_too_small": "return lib.ones(2, 3).sum(-3)",
    "dim_too_large": "return lib.ones(2, 3).transpose(0, 2)",
    "negative_size": "return lib.zeros(-1)",
    "reshape_bad": "return lib.ones(6).reshape(4, -1)",
    "view_two_minus_one": "return lib.ones(6).view(-1, -1)",
    "index_out_of_range": "return lib.ones(3)[5]",
    "float_index": "return lib.ones(3)[1.5]",
    "bool_requires_grad": "return lib.ones(2, dtype=lib.bool).requires_grad_()",
    "int_requires_grad": "return lib.tensor([1, 2], requires_grad=True)",
    "non_contiguous_numpy": (
        "a = np.arange(12.0).reshape(3, 4)[:, ::2]; t = lib.from_numpy(a); return t * 2"
    ),
    "transposed_numpy": "a = np.arange(6.0).reshape(2, 3).T; return lib.from_numpy(a).sum(0)",
    "overlapping_numpy": (
        "a = np.lib.stride_tricks.as_strided(np.arange(4.0), (3, 2), (8, 8)); "
        "return lib.tensor(a).sum(1)"
    ),
    "readonly_numpy": (
        "a = np.arange(3.0); a.flags.writeable = False; return lib.tensor(a) + 1"
    ),
    "big_endian_numpy": "a = np.arange(3.0, dtype='>f8'); return lib.tensor(a) * 2",
    "object_numpy": "return lib.tensor(np.array([1, 'a'], dtype=object))",
    "huge_shape": "return lib.empty(2**62, 2**62)",
    "backward_non_scalar": "x = lib.ones(2, requires_grad=True); (x * 2).backward()",
    "backward_no_grad": "x = lib.ones(2); x.sum().backward()",
    "grad_of_unused": (
        "x = lib.ones(2, requires_grad=True); y = lib.ones(2, requires_grad=True); "
        "return lib.autograd.grad((x * 2).sum(), [y])"
    ),
    "inplace_leaf": "x = lib.ones(2, requires_grad=True); x.add_(1)",
    "cat_empty_list": "return lib.cat([])",
    "cat_dim_mismatch": "return lib.cat([lib.ones(2, 3), lib.ones(3, 2)])",
    "matmul_0d": "return lib.tensor(1.0) @ lib.tensor(2.0)",
}

_CHILD = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    warnings.simplefilter("ignore")
    lib = __import__(sys.argv[1])
    cases = json.loads(sys.stdin.read())
    out = {}
    for name, body in cases.items():
        src = "def case(lib, np):\\n" + "\\n".join("    " + l for l in body.split("; "))
        env = {}
        exec(src, env)
        try:
            r = env["case"](lib, np)
            if r is None:
                out[name] = ["ok", None]
            elif isinstance(r, tuple):
                out[name] = ["tuple", [None if v is None else v.tolist() for v in r]]
            else:
                out[name] = ["value", np.asarray(r.detach().numpy(), dtype=float).ravel().tolist()]
        except BaseException as e:  # noqa: BLE001 - the type is what is compared
            out[name] = ["raised", type(e).__name__]
    print(json.dumps(out))
""")


def _run(lib: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", _CHILD, lib], input=json.dumps(CASES),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{lib} child died with status {proc.returncode}:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _same(a: list, b: list) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] != "value":
        return a == b
    return len(a[1]) == len(b[1]) and all(
        (x != x and y != y) or x == y or abs(x - y) <= 1e-6 * max(1.0, abs(y)) for x, y in zip(a[1], b[1])
    )


def test_hostile_inputs_raise_torch_types_and_never_crash():
    theirs = _run("torch")
    ours = _run("rustgrad")
    diffs = {k: (ours[k], theirs[k]) for k in CASES if not _same(ours[k], theirs[k])}
    assert not diffs, "rustgrad vs torch:\n" + "\n".join(f"{k}: {a} != {b}" for k, (a, b) in diffs.items())
