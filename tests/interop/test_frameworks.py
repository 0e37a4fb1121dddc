"""Every Python snippet of docs/frameworks.md, run as a reader would run it,
against the example plugins; each must exit 0 and print what the page says."""

from __future__ import annotations

import pytest

from conftest import ROOT, SNIPPET, run_snippet, snippets

PAGE = ROOT / "docs" / "frameworks.md"

#: What each snippet must print (substrings of its stdout).
EXPECTED = {
    "adk": ["word_count said", "'words': 3"],
    "langchain": ["asked: The tool `word_count` needs your approval", '"words":3', "three words"],
    "openai-agents": ['"words":3', "three words"],
}


def test_every_python_block_is_a_snippet() -> None:
    # A ```python block without a mark would go untested.
    text = PAGE.read_text()
    assert text.count("```python") == len(SNIPPET.findall(text))
    assert sorted(snippets(PAGE)) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_snippet(name: str) -> None:
    done, report = run_snippet(snippets(PAGE)[name])
    assert done.returncode == 0, report
    for wanted in EXPECTED[name]:
        assert wanted in done.stdout, f"`{wanted}` not printed\n{report}"
