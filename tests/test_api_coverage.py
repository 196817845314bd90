"""How much of torch's surface rustgrad has (tools/api_coverage.py, `make coverage`): the README
shows the tool's current table, and the surface stays at issue 24's bars."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("api_coverage", ROOT / "tools" / "api_coverage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_readme_shows_the_current_coverage_table():
    table = _tool().table(markdown=True)
    assert table in (ROOT / "README.md").read_text(), (
        "README's coverage table is stale: paste `python tools/api_coverage.py --markdown` under "
        "its marker")


def test_coverage_stays_at_the_bars():
    bars = {"Tensor methods": 0.95, "torch.* functions and classes": 0.90, "nn.functional": 1.0,
            "nn modules": 1.0}
    seen = set()
    for label, names, owner, _dropped in _tool().surfaces():
        present = sum(hasattr(owner, n) for n in names)
        if label in bars:
            seen.add(label)
            assert present >= bars[label] * len(names), (label, present, len(names))
        else:  # every other namespace counted exists and has most of torch's names
            assert present >= 0.9 * len(names), (label, present, len(names))
    assert seen == set(bars)
