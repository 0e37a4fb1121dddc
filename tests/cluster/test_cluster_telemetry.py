"""The fleet in the agent's trace: three replicas behind nginx export OTLP to one
loopback receiver (`tests/mcp/otlp.py`, the real protobuf decoded); an agent (the
official SDK's client, which traces its requests and puts their context in
`_meta`) calls through nginx. Whichever replica answers, its server span is in
the agent's trace under the SDK's client span; an approval asked on one replica
and answered on another is linked: the answer's span points at the asking one."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from opentelemetry import trace

from conftest import CALL_S, Cluster, connect, running_cluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from otlp import AGENT_SPANS, SERVER, Receiver, agent_tracing, receiver  # noqa: E402, F401 (fixtures)

#: The `_meta` key naming an agent invocation (its scratch state lives in Redis).
INVOCATION = "dev.toolhost/invocation"

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("agent_tracing")]

@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"




@pytest.fixture
def traced(tmp_path: Path, receiver: Receiver) -> Iterator[Cluster]:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    with running_cluster(tmp_path, env=env) as cluster:
        yield cluster


async def never_asked(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    raise AssertionError(f"the SDK's driver asked: {params}")


async def test_every_replica_answers_in_the_agents_trace_and_an_approval_links_across(
    traced: Cluster, receiver: Receiver
) -> None:
    tracer = trace.get_tracer("agent")
    AGENT_SPANS.clear()
    async with connect(traced.url, never_asked, headers=traced.headers) as (client, seen):
        with tracer.start_as_current_span("invoke_agent") as agent:
            for i in range(9):
                with anyio.fail_after(CALL_S):
                    result = await client.call_tool("add", {"a": i, "b": 1})
                assert result.structured_content == {"result": i + 1}, result
    trace_id = format(agent.get_span_context().trace_id, "032x")
    sent = {
        format(s.context.span_id, "016x")
        for s in AGENT_SPANS.get_finished_spans()
        if s.name == "MCP send tools/call add"
    }
    assert len(sent) == 9, [s.name for s in AGENT_SPANS.get_finished_spans()]
    calls = receiver.wait_for(
        "nine server spans in the agent's trace",
        lambda r: (found := [s for s in r.named("tools/call add") if s.trace_id == trace_id]) and len(found) == 9 and found,
    )
    assert all(s.kind == SERVER for s in calls)
    assert {s.parent_span_id for s in calls} == sent
    answered_by = {s.resource.get("service.instance.id") for s in calls}
    assert answered_by == {r.name for r in traced.replicas} == set(seen.of("tools/call")), answered_by

    # The state store's round trips (Redis) are spans of their own, beneath the call.
    async with connect(traced.url, never_asked, headers=traced.headers) as (client, _):
        with tracer.start_as_current_span("invoke_agent: state") as agent, anyio.fail_after(CALL_S):
            stored = await client.call_tool("remember", {"key": "k", "value": "v"}, meta={INVOCATION: "traced-run"})
        assert stored.structured_content == {"stored": "k"}, stored
    trace_id = format(agent.get_span_context().trace_id, "032x")
    [execute] = receiver.wait_for(
        "the remember call", lambda r: [s for s in r.named("execute_tool remember") if s.trace_id == trace_id]
    )
    stores = receiver.wait_for(
        "a state store span beneath it",
        lambda r: [s for s in r.spans if s.name.startswith("toolhost.state ") and execute in r.ancestors(s)],
    )
    assert all(s.attributes["db.system.name"] == "redis" and s.within(execute) for s in stores), stores

    # An approval: asked on one replica, answered on another (round robin; ask
    # again until they differ), each in a turn of its own.
    args = {"message": "linked"}
    approve = {"approval": types.ElicitResult(action="accept", content={"approve": True})}
    async with connect(traced.url, never_asked, headers=traced.headers) as (client, seen):
        for _ in range(5):
            with tracer.start_as_current_span("turn: ask"), anyio.fail_after(CALL_S):
                asked = await client.session.call_tool("echo", args, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult), asked
            with tracer.start_as_current_span("turn: answer"), anyio.fail_after(CALL_S):
                ran = await client.session.call_tool(
                    "echo", args, input_responses=approve, request_state=asked.request_state, allow_input_required=True
                )
            assert isinstance(ran, types.CallToolResult) and not ran.is_error, ran
            asked_on, ran_on = seen.of("tools/call")[-2:]
            if asked_on != ran_on:
                break
        assert asked_on != ran_on, seen.answers
    answering = receiver.wait_for(
        "the answer's server span, on its replica",
        lambda r: [s for s in r.named("tools/call echo") if s.links and s.resource.get("service.instance.id") == ran_on],
    )[-1]
    [(linked_trace, linked_span)] = answering.links
    [asking] = receiver.wait_for(
        "the asking server span",
        lambda r: [s for s in r.named("tools/call echo") if (s.trace_id, s.span_id) == (linked_trace, linked_span)],
    )
    assert asking.resource.get("service.instance.id") == asked_on
    assert asking.trace_id != answering.trace_id
