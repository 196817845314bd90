"""The usual torchrun DDP script (pytorch/examples' ddp-tutorial-series shape) on two ranks through
`python -m rustgrad.distributed.run`: environment ranks, DDP without device_ids, a Trainer over a
DistributedSampler with set_epoch, rank 0's snapshot from `model.module.state_dict()` read back
with `map_location`, and a resume. torch, training on the union of the ranks' batches in one
process, is the oracle for the parameters.

The tests at the end are calls that real torch DDP scripts and tutorials make, each a gap
once."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from collections import OrderedDict
from typing import Any, Dict, List

import numpy as np
import pytest
import rustgrad
from rustgrad.distributed.run import find_mpiexec

pytest.importorskip("mpi4py")
torch = pytest.importorskip("torch")

HERE = pathlib.Path(__file__).resolve().parent
WORKER = HERE / "torchrun_style_worker.py"
SAMPLES, BATCH, EPOCHS, LR = 48, 6, 3, 0.05  # the worker's


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> List[Dict[str, Any]]:
    """Both ranks' reports from one launcher run of the worker."""
    find_mpiexec()  # the launcher's own search: a missing MPI fails with the install line
    out = tmp_path_factory.mktemp("torchrun_style")
    proc = subprocess.run(
        [sys.executable, "-m", "rustgrad.distributed.run", "--nproc-per-node", "2",
         str(WORKER), str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def _torch_reference(r0: Dict[str, Any], r1: Dict[str, Any]) -> np.ndarray:
    """SGD in one torch process on each step's two per-rank batches together: what averaging
    the ranks' gradients of a mean loss over equal batches computes."""
    x, y = torch.tensor(r0["x"]), torch.tensor(r0["y"])
    model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    flat = torch.tensor(r0["initial"])
    torch.nn.utils.vector_to_parameters(flat, model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for epoch in range(EPOCHS):
        a, b = r0["seen"][str(epoch)], r1["seen"][str(epoch)]
        for k in range(0, len(a), BATCH):
            idx = torch.tensor(a[k:k + BATCH] + b[k:k + BATCH])
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x[idx]), y[idx]).backward()
            opt.step()
    return torch.nn.utils.parameters_to_vector(model.parameters()).detach().numpy()


def test_ranks_come_from_the_launcher_environment(ranks: List[Dict[str, Any]]) -> None:
    for r, rep in enumerate(ranks):
        assert rep["rank"] == r and rep["world_size"] == 2
        assert rep["env"] == [r, r, 2]  # RANK, LOCAL_RANK, WORLD_SIZE
        assert rep["backend"] == "gloo"
        assert rep["initialized_after"] is False
        assert rep["elastic"] is True and rep["run_id"] == "none"  # torchrun's default id


def test_ddp_starts_every_rank_from_rank_zero(ranks: List[Dict[str, Any]]) -> None:
    r0, r1 = ranks
    assert r0["initial_own"] != r1["initial_own"]  # seeded apart on purpose
    assert r0["initial"] == r1["initial"] == r0["initial_own"]


def test_sampler_shards_and_set_epoch_reshuffles(ranks: List[Dict[str, Any]]) -> None:
    r0, r1 = ranks
    assert r0["steps_per_epoch"] == r1["steps_per_epoch"] == -(-SAMPLES // 2 // BATCH)
    orders = []
    for epoch in range(EPOCHS):
        a, b = r0["seen"][str(epoch)], r1["seen"][str(epoch)]
        assert len(a) == len(b) == SAMPLES // 2
        assert sorted(a + b) == list(range(SAMPLES))  # disjoint, and every sample seen
        orders.append(a)
    assert orders[0] != orders[1] != orders[2]


def test_final_parameters_agree_across_ranks_and_with_torch(ranks: List[Dict[str, Any]]) -> None:
    r0, r1 = ranks
    np.testing.assert_array_equal(r0["final"], r1["final"])
    assert r0["gathered_final"] == r1["gathered_final"] == [r0["final"], r1["final"]]
    np.testing.assert_allclose(r0["final"], _torch_reference(r0, r1), rtol=1e-5, atol=1e-6)
    assert not np.allclose(r0["final"], r0["initial"])
    steps = len(r0["seen"]["0"])
    assert r0["metrics"] == [{"rank": 0, "steps": steps}, {"rank": 1, "steps": steps}]
    assert r1["metrics"] is None
    assert r0["reduce_op_sum"] == r1["reduce_op_sum"] == 3.0


def test_snapshot_keys_resume_and_map_locations(ranks: List[Dict[str, Any]]) -> None:
    for rep in ranks:
        assert rep["module_keys"] == ["0.weight", "0.bias", "2.weight", "2.bias"]
        assert rep["ddp_keys"] == ["module." + k for k in rep["module_keys"]]
        assert rep["ddp_group_is_world"] is True
        np.testing.assert_array_equal(rep["plain_from_ddp"], rep["final"])
        assert rep["resumed_from"] == 1
        # stopped after epoch 0 and resumed by a fresh model: the same run, bit for bit
        np.testing.assert_array_equal(rep["resumed_final"], rep["final"])
        assert rep["snapshot_epochs"] == EPOCHS
        for name, values in rep["loads"].items():
            np.testing.assert_array_equal(values, rep["final"], err_msg=name)


# ---- calls real scripts make (each was a gap once) ----

def test_torch_multiprocessing_spawn_exists() -> None:
    # multigpu.py and the DDP tutorial call mp.spawn (run in test_spawn.py), dist_tuto uses
    # mp.Process, multigpu_torchrun.py / multinode.py only import torch.multiprocessing
    import rustgrad.multiprocessing as mp
    assert callable(mp.spawn) and callable(mp.Process)


def test_reduce_op_alias() -> None:
    with pytest.warns(FutureWarning, match="reduce_op` is deprecated"):
        assert rustgrad.distributed.reduce_op.SUM == rustgrad.distributed.ReduceOp.SUM


def test_default_backend_for_cpu() -> None:
    want = torch.distributed.get_default_backend_for_device(torch.device("cpu"))
    assert rustgrad.distributed.get_default_backend_for_device(rustgrad.device("cpu")) == want


def test_launch_and_backend_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "r1")
    assert rustgrad.distributed.is_torchelastic_launched() is \
        torch.distributed.is_torchelastic_launched() is True
    assert rustgrad.distributed.is_gloo_available() is True


def test_gather_object_exists() -> None:
    assert callable(rustgrad.distributed.gather_object)


def test_elastic_record_writes_torchs_error_file_and_reraises(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    from rustgrad.distributed.elastic.multiprocessing.errors import record
    from torch.distributed.elastic.multiprocessing.errors import record as torch_record

    assert record(lambda: 3)() == 3
    assert record(lambda: sys.exit(0))() is None
    files = {}
    for name, rec in (("torch", torch_record), ("rustgrad", record)):
        files[name] = tmp_path / f"{name}.json"
        monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(files[name]))
        boom = KeyError("lost")

        def main(err: Exception = boom) -> None:
            raise err

        with pytest.raises(KeyError) as e:
            rec(main)()
        assert e.value is boom
    got, want = (json.loads(files[n].read_text()) for n in ("rustgrad", "torch"))
    assert got["message"]["message"] == want["message"]["message"] == "KeyError: 'lost'"
    assert set(got["message"]["extraInfo"]) == set(want["message"]["extraInfo"])
    assert "raise err" in got["message"]["extraInfo"]["py_callstack"]
    with pytest.raises(SystemExit):
        record(lambda: sys.exit(2))()


def test_consume_ddp_prefix_like_torch() -> None:
    from rustgrad.nn.modules.utils import consume_prefix_in_state_dict_if_present
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present as torch_consume

    def fresh() -> Any:
        state = OrderedDict([("module.w", 1), ("x", 2), ("module.b.c", 3), ("modulez", 4)])
        state._metadata = OrderedDict(  # type: ignore[attr-defined]
            [("", {"v": 0}), ("module", {"v": 1}), ("module.b", {"v": 2}), ("x", {"v": 3})])
        return state

    got, want = fresh(), fresh()
    consume_prefix_in_state_dict_if_present(got, "module.")
    torch_consume(want, "module.")
    assert list(got.items()) == list(want.items()) == [("x", 2), ("modulez", 4), ("w", 1),
                                                       ("b.c", 3)]
    assert list(got._metadata.items()) == list(want._metadata.items())  # type: ignore
    plain = {"module.w": 1, "module.b": 2}
    consume_prefix_in_state_dict_if_present(plain, "module.")
    assert list(plain) == ["w", "b"]


def test_mpi_backend_ignores_rank_and_world_size() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    code = ("import warnings, rustgrad.distributed as d\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    d.init_process_group('mpi', rank=0, world_size=0)\n"
            "assert d.get_world_size() == 1 and any('ignored' in str(x.message) for x in w)\n"
            "d.destroy_process_group()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
