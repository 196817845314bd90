"""Coverage-guided fuzzing of rustgrad.load with atheris (libFuzzer).

A few valid checkpoints written by rustgrad.save (state dicts of tensors of several dtypes,
nested containers, a Size, a dtype, a device, non-finite floats) seed the corpus; libFuzzer
mutates their bytes and every mutant is loaded. An input is one of four forms:

- a whole file (it starts with the zip signature, "PK");
- a rustgrad checkpoint's members joined by MEMBER_SEP, zipped anew before loading: zip's CRC
  check would refuse nearly every mutant of a member's bytes, so this form is what reaches the
  JSON structure, the .npy headers and the tensors behind them;
- a torch checkpoint's `data.pkl` (it starts with the PROTO opcode, 0x80), zipped with the
  storages of tests/programs/torch_pickles.py: libFuzzer mutates the pickle's opcodes and their
  arguments, which reach rustgrad's weights-only unpickler (seeded with pickles that generator
  wrote, hostile and clean);
- "OPS" and bytes that drive that generator (atheris' FuzzedDataProvider picks each of its
  choices), for opcode sequences built around valid tensor records.

rustgrad.load documents its errors for a file that is not a well-formed checkpoint: a
RuntimeError (a pickle.UnpicklingError for a refused global or opcode, a TypeError where
torch's own call would raise one) that starts with "rustgrad.load: " and names the file. What
loads must hold tensors whose every element is one of its storage's values (never memory from
outside it). Any other exception, that error without the file's name, or a tensor failing that
check is a finding and stops the run with the input that caused it (libFuzzer writes it as
crash-<hash>; a memory blow-up past -rss_limit_mb, or an input running past -timeout, stops it
too).

    python tests/programs/fuzz_load.py -atheris_runs=20000

Other arguments go to libFuzzer (e.g. -rss_limit_mb=2048, -max_len=8192). With
RUSTGRAD_FUZZ_LOAD_KEEP_GOING=1 a finding is printed once per exception type and place and the
run goes on, to list several at once.
"""

from __future__ import annotations

import io
import os
import pickle
import random
import shutil
import sys
import tempfile
import traceback
from collections import OrderedDict
from typing import Any, List, Set, Tuple

import atheris

with atheris.instrument_imports(include=["rustgrad.serialization", "rustgrad._torch_pickle",
                                         "zipfile", "json", "numpy.lib.format",
                                         "numpy.lib._format_impl"]):
    import json  # noqa: F401 - imported here so that atheris instruments it
    import zipfile

    import rustgrad
    import rustgrad._torch_pickle  # noqa: F401 - imported lazily by load: here, instrumented
    import rustgrad.serialization  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_pickles  # noqa: E402 - the generator beside this file, shared with the tests

NAME = "fuzzed.rg"
MEMBER_SEP = b"\n@@member@@\n"
OPS = b"OPS"  # the rest of the input drives torch_pickles.random_pickle
# what rustgrad.load may raise for a malformed file (with the file's name)
DOCUMENTED = (RuntimeError, pickle.UnpicklingError, TypeError)
KEEP_GOING = os.environ.get("RUSTGRAD_FUZZ_LOAD_KEEP_GOING") == "1"
_seen: Set[Tuple[str, str]] = set()

# Findings reported and still open, by exception type and a phrase of its message: they are
# let through so that a run goes on to new ones. Remove an entry once its bug is fixed.
OPEN_FINDINGS: List[Tuple[str, str]] = []


class _NamedBytes(io.BytesIO):
    """An in-memory file with a name, which load's error must quote."""

    name = NAME


def _checkpoints() -> List[bytes]:
    g = rustgrad.Generator().manual_seed(0)
    weight = rustgrad.randn(3, 2, generator=g)
    state = OrderedDict([
        ("linear.weight", weight),
        ("linear.bias", rustgrad.zeros(3, dtype=rustgrad.float64)),
        ("steps", rustgrad.tensor([7, -1], dtype=rustgrad.int64)),
        ("mask", rustgrad.tensor([True, False, True])),
        ("half", rustgrad.ones(2, 2, dtype=rustgrad.float16)),
        ("bytes", rustgrad.arange(5, dtype=rustgrad.uint8)),
        ("small", rustgrad.tensor([3, 4], dtype=rustgrad.int32)),
        ("scalar", rustgrad.tensor(2.5)),
    ])
    objects: List[Any] = [
        state,
        {"model": state, "epoch": 3, "lr": float("inf"), "shape": rustgrad.Size([2, 3]),
         "dtype": rustgrad.float32, "device": rustgrad.device("cpu"), "tags": ("a", None, True),
         "tied": [weight, weight], "set": {1, 2}},
        rustgrad.nn.Parameter(rustgrad.ones(4)),
        [rustgrad.empty(0, 3), rustgrad.tensor([[1.0, 2.0]]).t()],
    ]
    out = []
    for obj in objects:
        buf = io.BytesIO()
        rustgrad.save(obj, buf)
        out.append(buf.getvalue())
    return out


def _members(file: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(file)) as z:
        names = sorted(z.namelist(), key=lambda n: (n != "structure.json", n))
        return MEMBER_SEP.join(z.read(n) for n in names)


def _zipped(members: bytes) -> bytes:
    parts = members.split(MEMBER_SEP)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("structure.json", parts[0])
        for i, part in enumerate(parts[1:]):
            z.writestr(f"data/{i}.npy", part)
    return buf.getvalue()


def _finding(e: BaseException, data: bytes) -> None:
    if any(type(e).__name__ == kind and phrase in str(e) for kind, phrase in OPEN_FINDINGS):
        return
    if not KEEP_GOING:
        raise e
    # one report per exception type and place it was raised from
    frames = traceback.extract_tb(e.__traceback__)
    where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(frames[-3:]))
    key = (type(e).__name__, where)
    if key not in _seen:
        _seen.add(key)
        print(f"FINDING {key[0]}: {str(e)[:200]!r} at {where} on {len(data)} bytes", flush=True)


def _file(data: bytes) -> bytes:
    if data.startswith(b"PK"):
        return data
    if data.startswith(b"\x80"):
        return torch_pickles.torch_zip(data)
    if data.startswith(OPS):
        fdp = atheris.FuzzedDataProvider(data[len(OPS):])
        pkl, _ = torch_pickles.random_pickle(lambda n: fdp.ConsumeIntInRange(0, n - 1))
        return torch_pickles.torch_zip(pkl)
    return _zipped(data)


def test_one_input(data: bytes) -> None:
    file = _file(data)
    try:
        loaded = rustgrad.load(_NamedBytes(file))
    except DOCUMENTED as e:
        if not str(e).startswith(f"rustgrad.load: {NAME}: "):
            _finding(e, data)
        return
    except Exception as e:  # noqa: BLE001 - every other exception type is a finding
        _finding(e, data)
        return
    if not (data.startswith(b"\x80") or data.startswith(OPS)):
        return  # a rustgrad checkpoint: its own arrays, nothing to compare with
    try:
        torch_pickles.check_loaded(loaded)
    except AssertionError as e:  # a tensor read from outside its storage
        _finding(e, data)


def _torch_seeds(count: int) -> List[bytes]:
    """Pickles from the shared generator (raw, for libFuzzer to mutate opcode by opcode) and
    generator inputs (OPS form), from a fixed seed."""
    rng = random.Random(0)
    out = []
    for _ in range(count):
        pkl, _ = torch_pickles.random_pickle(lambda n: rng.randrange(n))
        out.append(pkl)
        out.append(OPS + bytes(rng.randrange(256) for _ in range(256)))
    return out


def main() -> None:
    seeds = _checkpoints()
    for data in seeds:  # the seeds themselves must load
        rustgrad.load(_NamedBytes(data))
    # one fixed folder, emptied each run: libFuzzer adds what it finds to the first corpus
    corpus = os.path.join(tempfile.gettempdir(), f"rustgrad-load-corpus-{os.getuid()}")
    shutil.rmtree(corpus, ignore_errors=True)
    os.makedirs(corpus)
    for i, data in enumerate(seeds):
        for form, content in (("file", data), ("members", _members(data))):
            with open(os.path.join(corpus, f"seed{i}-{form}"), "wb") as f:
                f.write(content)
    torch_seeds = _torch_seeds(16)
    for i, data in enumerate(torch_seeds):
        test_one_input(data)  # the seeds themselves hold the property
        with open(os.path.join(corpus, f"torch{i}"), "wb") as f:
            f.write(data)
    args = list(sys.argv)
    if not any(a.startswith("-max_len") for a in args):
        args.append(f"-max_len={2 * max(len(s) for s in seeds + torch_seeds)}")
    if not any(a.startswith("-rss_limit_mb") for a in args):
        args.append("-rss_limit_mb=2048")  # a header that asks for a huge array is a finding
    if not any(a.startswith("-timeout") for a in args):
        args.append("-timeout=30")  # an input that hangs the loader is a finding
    args.append(corpus)
    atheris.Setup(args, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
