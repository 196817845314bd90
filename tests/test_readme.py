"""The README's Python examples run as written and print what their comments say."""

from tests import markdown_examples


def test_readme_examples_run_and_print_their_comments():
    found = markdown_examples.examples(markdown_examples.ROOT / "README.md")
    assert len(found) >= 12
    for ex in found:
        assert not markdown_examples.problems(ex, markdown_examples.run(ex, "README.md"), exact=False)
