"""The README's table of supported ops is generated from the op registry, not written by hand."""

import pathlib

from rustgrad._ops import registry

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_ops_table_is_generated_from_the_registry():
    text = README.read_text()
    assert registry.markdown() in text, (
        "README's op table is stale: run `python -m rustgrad._ops.registry --write README.md`"
    )


def test_registry_lists_core_ops_with_their_bindings():
    rows = {name: (meths, funcs) for fam in registry.ops().values() for name, meths, funcs in fam}
    assert "__mul__" in rows["mul"][0] and "mul" in rows["mul"][1]
    assert "__matmul__" in rows["matmul"][0]
    assert "__getitem__" in rows["getitem"][0]
