"""The release workflow (.github/workflows/wheels.yml) cannot run here; its shape is checked: a
wheel job per platform and architecture through maturin-action, manylinux2014 on Linux, the
sdist, a smoke test of the artifacts, and publishing on version tags by trusted publishing."""

from __future__ import annotations

from typing import Any, Dict, List

import yaml

from .artifacts import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "wheels.yml"


def load() -> Dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text())


def steps_using(job: Dict[str, Any], action: str) -> List[Dict[str, Any]]:
    return [s for s in job["steps"] if s.get("uses", "").split("@")[0] == action]


def matrix_targets(job: Dict[str, Any]) -> List[str]:
    return sorted(e["target"] for e in job["strategy"]["matrix"]["include"])


def test_wheel_jobs_cover_every_platform() -> None:
    jobs = load()["jobs"]
    assert matrix_targets(jobs["linux"]) == ["aarch64", "x86_64"]
    assert matrix_targets(jobs["macos"]) == ["aarch64", "x86_64"]
    for name in ("linux", "macos", "windows"):
        (build,) = steps_using(jobs[name], "PyO3/maturin-action")
        args = build["with"]["args"].split()
        assert {"--release", "--locked", "--strip"} <= set(args), name
        upload = steps_using(jobs[name], "actions/upload-artifact")
        assert upload and upload[0]["with"]["path"] == "dist", name
    (linux,) = steps_using(jobs["linux"], "PyO3/maturin-action")
    assert str(linux["with"]["manylinux"]) == "2014"
    (windows,) = steps_using(jobs["windows"], "PyO3/maturin-action")
    assert windows["with"]["target"] == "x64"
    (sdist,) = steps_using(jobs["sdist"], "PyO3/maturin-action")
    assert sdist["with"]["command"] == "sdist"


def test_wheels_are_tested_before_publishing() -> None:
    jobs = load()["jobs"]
    assert set(jobs["test"]["needs"]) == {"linux", "macos", "windows"}
    artifacts = {p["artifact"] for p in jobs["test"]["strategy"]["matrix"]["platform"]}
    assert artifacts == {
        "wheels-linux-x86_64", "wheels-linux-aarch64", "wheels-macos-x86_64", "wheels-macos-aarch64",
        "wheels-windows-x64",
    }
    assert any("import rustgrad" in s.get("run", "") for s in jobs["test"]["steps"])
    assert jobs["test-sdist"]["needs"] == ["sdist"]
    assert set(jobs["publish"]["needs"]) == {"test", "test-sdist"}


def test_publish_on_tags_by_trusted_publishing() -> None:
    wf = load()
    # PyYAML reads the bare key `on` as True
    triggers = wf.get("on", wf.get(True))
    assert triggers["push"]["tags"] == ["v*"]
    assert wf["permissions"] == {"contents": "read"}
    publish = wf["jobs"]["publish"]
    assert publish["if"].startswith("startsWith(github.ref, 'refs/tags/v')")
    assert publish["permissions"]["id-token"] == "write"
    assert publish["environment"]["name"] == "pypi"
    (step,) = steps_using(publish, "pypa/gh-action-pypi-publish")
    assert "password" not in step.get("with", {})
    assert "secrets." not in WORKFLOW.read_text()


def test_every_action_is_pinned() -> None:
    for name, job in load()["jobs"].items():
        for step in job["steps"]:
            if "uses" in step:
                action, _, ref = step["uses"].partition("@")
                assert ref, f"{name}: {action} has no version"
