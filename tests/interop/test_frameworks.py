"""Every Python snippet of docs/frameworks.md, run as a reader would run it,
against the example plugins; each must exit 0 and print what the page says."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import ROOT, scratch, snippet_env

PAGE = ROOT / "docs" / "frameworks.md"

#: A snippet: its `<!-- interop: NAME -->` mark, then a ```python fence.
SNIPPET = re.compile(r"^<!-- interop: (\S+) -->\n```python\n(.*?)^```", re.M | re.S)

#: What each snippet must print (substrings of its stdout).
EXPECTED = {
    "adk": ["word_count said", "'words': 3"],
    "langchain": ["asked: The tool `word_count` needs your approval", '"words":3', "three words"],
    "openai-agents": ['"words":3', "three words"],
}

#: A hang guard only: the first snippet may compile every plugin.
RUN_S = 300


def snippets() -> dict[str, str]:
    return dict(SNIPPET.findall(PAGE.read_text()))


def test_every_python_block_is_a_snippet() -> None:
    # A ```python block without a mark would go untested.
    text = PAGE.read_text()
    assert text.count("```python") == len(SNIPPET.findall(text))
    assert sorted(snippets()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_snippet(name: str) -> None:
    code = snippets()[name]
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=scratch(),
        env=snippet_env(),
        capture_output=True,
        text=True,
        timeout=RUN_S,
    )
    report = f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr[-4000:]}"
    assert done.returncode == 0, report
    for wanted in EXPECTED[name]:
        assert wanted in done.stdout, f"`{wanted}` not printed\n{report}"
