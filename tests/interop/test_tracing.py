"""The agent's trace, end to end: docs/observability.md's Google ADK snippet, run as
a reader would with `OTEL_EXPORTER_OTLP_ENDPOINT` naming a loopback OTLP receiver
(`tests/mcp/otlp.py`: the real protobuf, decoded). ADK (a scripted model, its own
OpenTelemetry set-up) calls `word_count` on `toolhost serve` over stdio; the
receiver gets one trace holding ADK's tool span and toolhost's spans beneath it."""

from __future__ import annotations

import sys

from conftest import ROOT, SNIPPET, run_snippet, snippets

# The receiver is the MCP suite's; appended, so this suite's conftest stays first.
sys.path.append(str(ROOT / "tests" / "mcp"))
from otlp import SERVER, Receiver, Span, receiver  # noqa: E402, F401 (a fixture)

PAGE = ROOT / "docs" / "observability.md"


def test_every_python_block_is_a_snippet() -> None:
    text = PAGE.read_text()
    assert text.count("```python") == len(SNIPPET.findall(text))
    assert sorted(snippets(PAGE)) == ["adk-tracing"]


def test_adks_tool_span_holds_toolhosts_spans(receiver: Receiver) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    done, report = run_snippet(snippets(PAGE)["adk-tracing"], env)
    assert done.returncode == 0, report
    assert "word_count said" in done.stdout and "'words': 3" in done.stdout, report

    def toolhosts(name: str) -> list[Span]:
        return [s for s in receiver.named(name) if s.resource.get("service.name") == "toolhost"]

    [call] = receiver.wait_for("toolhost's server span", lambda r: toolhosts("tools/call word_count"))
    assert call.kind == SERVER
    # ADK's own tool span is above it, in the same trace: the framework's spans
    # (exported as ADK's process exits) and toolhost's are one story.
    adk = receiver.wait_for(
        "ADK's execute_tool span above toolhost's",
        lambda r: [
            s
            for s in r.ancestors(call)
            if s.name == "execute_tool word_count" and s.resource.get("service.name") != "toolhost"
        ],
        timeout=60.0,
    )[0]
    assert adk.trace_id == call.trace_id
    assert adk.attributes.get("gen_ai.tool.name") == "word_count", adk.attributes
    assert call.within(adk), (call, adk)
    above = [s.name for s in receiver.ancestors(call)]
    assert any(name.startswith("invoke_agent") for name in above), above
    # toolhost's call and its steps beneath its server span.
    [execute] = receiver.wait_for(
        "toolhost's execute_tool span",
        lambda r: [s for s in toolhosts("execute_tool word_count") if s.parent_span_id == call.span_id],
    )
    assert execute.trace_id == adk.trace_id
    assert execute.attributes["toolhost.outcome"] == "succeeded"
    guest = receiver.wait_for(
        "the guest's run", lambda r: [s for s in toolhosts("toolhost.guest") if s.parent_span_id == execute.span_id]
    )
    assert guest[0].within(execute)
