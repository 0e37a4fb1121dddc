"""OpenTelemetry, as an agent builder sees it: the official MCP Python SDK's client
(which traces its own requests and puts their trace context in `params._meta`) calls
`toolhost serve`, exporting over OTLP/HTTP to a loopback receiver that decodes the real
protobuf (`otlp.py`). toolhost's spans join the agent's trace: the server span
`tools/call TOOL` under the SDK's client span, `execute_tool TOOL` under it, and the
call's steps beneath, each within its parent's time; attributes as the OpenTelemetry
MCP and GenAI conventions name them; failures with `error.type`; the
`mcp.server.operation.duration` metric. Over stdio and HTTP, on both revisions. Also
`toolhost call` joining a `TRACEPARENT`, and a dead collector changing no answer."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError
from opentelemetry import trace

from conftest import LEGACY, MODERN, Launch, PluginsFactory, server_env
from otlp import AGENT_SPANS, SERVER, STATUS_ERROR, Receiver, Span, agent_tracing, receiver  # noqa: F401 (fixtures)
from scenarios import CONFIRM_ECHO, error, ok
from test_modern import KEYS, answer, ask, by_hand

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("agent_tracing")]



@pytest.fixture(params=[LEGACY, MODERN])
def protocol(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(params=["stdio", "http"])
def launch(request: pytest.FixtureRequest, launch_stdio: Launch, launch_http: Launch) -> Launch:
    return launch_stdio if request.param == "stdio" else launch_http


def exporting_to(receiver: Receiver) -> dict[str, str]:
    """The standard variables: the endpoint, and short export intervals (hang guards only)."""
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_METRIC_EXPORT_INTERVAL": "200",
    }


def child(receiver: Receiver, parent: Span, name: str) -> Span:
    """The one span `name` under `parent`, within its time."""
    [found] = receiver.wait_for(
        f"{name} under {parent.name}",
        lambda r: [s for s in r.named(name) if s.parent_span_id == parent.span_id],
    )
    assert found.trace_id == parent.trace_id
    assert found.within(parent), (found, parent)
    return found


def agent_client_span(tool: str) -> Any:
    """The SDK's client span of the (last) call of `tool`."""
    spans = [
        s
        for s in AGENT_SPANS.get_finished_spans()
        if s.kind == trace.SpanKind.CLIENT and s.name == f"MCP send tools/call {tool}"
    ]
    assert spans, [s.name for s in AGENT_SPANS.get_finished_spans()]
    return spans[-1]


async def test_a_call_joins_the_agents_trace(
    launch: Launch, make_plugins: PluginsFactory, receiver: Receiver, protocol: str
) -> None:
    tracer = trace.get_tracer("agent")
    AGENT_SPANS.clear()
    async with launch(make_plugins("echo"), env=exporting_to(receiver)) as server, server.connect() as client:
        with tracer.start_as_current_span("invoke_agent"):
            answered = ok(await client.call("echo", {"message": "traced"}))
            assert answered["message"] == "traced"
        transport = "pipe" if server.transport == "stdio" else "tcp"
        caller = agent_client_span("echo")
        trace_id = format(caller.context.trace_id, "032x")

        [call] = receiver.wait_for(
            "the server span of the call",
            lambda r: [s for s in r.named("tools/call echo") if s.trace_id == trace_id],
        )
        assert call.parent_span_id == format(caller.context.span_id, "016x")
        assert call.kind == SERVER
        assert call.attributes["mcp.method.name"] == "tools/call"
        assert call.attributes["gen_ai.tool.name"] == "echo"
        assert call.attributes["gen_ai.operation.name"] == "execute_tool"
        assert call.attributes["mcp.protocol.version"] == protocol
        assert call.attributes["network.transport"] == transport
        assert call.attributes["jsonrpc.request.id"] == caller.attributes["jsonrpc.request.id"]
        assert ("mcp.session.id" in call.attributes) == (protocol == LEGACY)
        assert "error.type" not in call.attributes
        assert call.resource["service.name"] == "toolhost"

        execute = child(receiver, call, "execute_tool echo")
        assert execute.attributes["gen_ai.operation.name"] == "execute_tool"
        assert execute.attributes["gen_ai.tool.name"] == "echo"
        assert execute.attributes["gen_ai.tool.call.id"]
        assert execute.attributes["toolhost.outcome"] == "succeeded"
        assert execute.attributes["toolhost.fuel_used"] > 0
        assert execute.attributes["toolhost.memory.peak_bytes"] > 0
        # The output's size: here its JSON result alone, as serialized.
        assert execute.attributes["toolhost.output.bytes"] == len(json.dumps(answered, separators=(",", ":")))
        # Arguments and results are recorded only when the operator opts in.
        assert "gen_ai.tool.call.arguments" not in execute.attributes
        # The server checks the arguments before it drives the call.
        validate = child(receiver, call, "toolhost.validate")
        assert validate.end <= execute.start
        instantiate = child(receiver, execute, "toolhost.instantiate")
        assert instantiate.attributes["toolhost.tier"] in ("baseline", "optimized")
        assert instantiate.attributes["toolhost.plugin"] == "echo"
        child(receiver, execute, "toolhost.guest")

        # The metric, with the same request's attributes.
        receiver.wait_for(
            "mcp.server.operation.duration of the call",
            lambda r: [
                p
                for p in r.points
                if p.metric == "mcp.server.operation.duration"
                and p.unit == "s"
                and p.attributes.get("gen_ai.tool.name") == "echo"
                and p.attributes.get("mcp.method.name") == "tools/call"
                and p.attributes.get("network.transport") == transport
                and p.count >= 1
            ],
        )
        # The call's own measurements, the same that Prometheus gets.
        for metric, unit in [
            ("toolhost.tool.call.duration", "s"),
            ("toolhost.tool.call.fuel", "{instruction}"),
            ("toolhost.tool.call.memory.peak", "By"),
        ]:
            receiver.wait_for(
                f"{metric} of the call",
                lambda r, metric=metric, unit=unit: [
                    p
                    for p in r.points
                    if p.metric == metric and p.unit == unit and p.attributes.get("gen_ai.tool.name") == "echo"
                ],
            )


async def test_failures_say_what_failed(
    launch: Launch, make_plugins: PluginsFactory, receiver: Receiver, protocol: str
) -> None:
    async with launch(make_plugins("echo", "hostile"), env=exporting_to(receiver)) as server, server.connect() as client:
        error(await client.call("echo", {"message": 5}))
        error(await client.call("fail"))
        [bad] = receiver.wait_for("the refused call", lambda r: r.named("tools/call echo"))
        assert bad.attributes["error.type"] == "tool_error"
        assert bad.status_code == STATUS_ERROR
        execute = child(receiver, bad, "execute_tool echo")
        assert execute.attributes["error.type"] == "invalid_arguments"
        assert execute.attributes["toolhost.outcome"] == "failed"
        assert execute.status_code == STATUS_ERROR
        assert "invalid arguments" in execute.status_message
        validate = child(receiver, bad, "toolhost.validate")
        assert validate.attributes["error.type"] == "invalid_arguments"

        [failed] = receiver.wait_for("the failed call", lambda r: r.named("tools/call fail"))
        assert failed.attributes["error.type"] == "tool_error"
        execute = child(receiver, failed, "execute_tool fail")
        assert execute.attributes["error.type"] == "failed"


async def test_the_access_rules_decision_is_a_span(
    launch: Launch, make_plugins: PluginsFactory, receiver: Receiver, protocol: str
) -> None:
    config = '[[access]]\nname = "everyone"\nallow = ["echo"]\n'
    async with (
        launch(make_plugins("echo"), config=config, env=exporting_to(receiver)) as server,
        server.connect() as client,
    ):
        assert ok(await client.call("echo", {"message": "mine"}))["message"] == "mine"
        with pytest.raises(MCPError) as caught:
            await client.call("add", {"a": 1, "b": 2})
        assert caught.value.code == -32602, caught.value
        [granted] = receiver.wait_for("the granted call", lambda r: r.named("tools/call echo"))
        decision = child(receiver, granted, "toolhost.access")
        assert decision.attributes["toolhost.access.decision"] == "granted"
        assert decision.end <= child(receiver, granted, "execute_tool echo").start
        # A forbidden call never runs: its decision, and its refusal.
        [refused] = receiver.wait_for("the refused call", lambda r: r.named("tools/call add"))
        assert refused.attributes["error.type"] == "-32602"
        decision = child(receiver, refused, "toolhost.access")
        assert decision.attributes["toolhost.access.decision"] == "forbidden"
        assert decision.attributes["gen_ai.tool.name"] == "add"


async def test_content_is_recorded_when_asked_and_redacted(
    launch_stdio: Launch, make_plugins: PluginsFactory, receiver: Receiver
) -> None:
    config = f'[telemetry]\nendpoint = "{receiver.endpoint}"\nrecord_content = true\nredact = ["message"]\n'
    env = exporting_to(receiver)
    del env["OTEL_EXPORTER_OTLP_ENDPOINT"]
    async with launch_stdio(make_plugins("echo"), config=config, env=env) as server, server.connect() as client:
        assert ok(await client.call("echo", {"message": "secret words", "repeat": 2}))["repeat"] == 2
        [call] = receiver.wait_for("the call", lambda r: r.named("tools/call echo"))
        execute = child(receiver, call, "execute_tool echo")
        arguments = json.loads(execute.attributes["gen_ai.tool.call.arguments"])
        assert arguments == {"message": "<redacted>", "repeat": 2}
        result = json.loads(execute.attributes["gen_ai.tool.call.result"])
        assert result["repeat"] == 2 and result["message"] == "<redacted>"


@pytest.mark.parametrize("protocol", [MODERN])
async def test_an_approval_answered_on_another_replica_links_to_where_it_was_asked(
    launch: Launch, make_plugins: PluginsFactory, receiver: Receiver, redis_url: str
) -> None:
    # Two replicas with the same keys and store; the agent asks on one, in one trace, and
    # answers on the other, in another (a new agent turn): the answer's server
    # span links to the asking one, and both calls carry the same call ID.
    tracer = trace.get_tracer("agent")
    plugins = make_plugins("echo")
    env = {**exporting_to(receiver), "TOOLHOST_STATE_KEYS": KEYS}
    args = {"message": "approved elsewhere"}
    config = CONFIRM_ECHO + f'\n[state]\nurl = "{redis_url}"\n'
    async with (
        launch(plugins, config=config, env=env) as first,
        launch(plugins, config=config, env=env) as second,
        first.connect(by_hand) as one,
        second.connect(by_hand) as two,
    ):
        with tracer.start_as_current_span("turn 1"):
            asked = await ask(one, "echo", args)
        with tracer.start_as_current_span("turn 2"):
            assert ok(await answer(two, "echo", args, asked.request_state))["message"] == "approved elsewhere"
    calls = receiver.wait_for("both requests", lambda r: len(r.named("tools/call echo")) == 2 and r.named("tools/call echo"))
    [asking] = [s for s in calls if not s.links]
    [answering] = [s for s in calls if s.links]
    assert answering.trace_id != asking.trace_id
    assert answering.links == [(asking.trace_id, asking.span_id)]
    paused = child(receiver, asking, "execute_tool echo")
    assert paused.attributes["toolhost.outcome"] == "paused"
    ran = child(receiver, answering, "execute_tool echo")
    assert ran.attributes["toolhost.outcome"] == "succeeded"
    assert ran.attributes["gen_ai.tool.call.id"] == paused.attributes["gen_ai.tool.call.id"]


async def test_spans_and_metrics_reach_a_grpc_collector(launch_http: Launch, make_plugins: PluginsFactory) -> None:
    receiver = Receiver("grpc").start()
    try:
        env = {**exporting_to(receiver), "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
        async with launch_http(make_plugins("echo"), env=env) as server, server.connect() as client:
            assert ok(await client.call("echo", {"message": "over grpc"}))["message"] == "over grpc"
            [call] = receiver.wait_for("the server span", lambda r: r.named("tools/call echo"))
            child(receiver, call, "execute_tool echo")
            receiver.wait_for(
                "mcp.server.operation.duration",
                lambda r: [p for p in r.points if p.metric == "mcp.server.operation.duration" and p.count >= 1],
            )
    finally:
        receiver.stop()


async def test_a_guests_own_spans_and_events_are_beneath_its_run(
    launch_stdio: Launch, make_plugins: PluginsFactory, receiver: Receiver
) -> None:
    async with (
        launch_stdio(make_plugins("traced"), env=exporting_to(receiver)) as server,
        server.connect() as client,
    ):
        assert ok(await client.call("lookup", {"key": "u42"})) == {"result": "u42"}
        [call] = receiver.wait_for("the call", lambda r: r.named("tools/call lookup"))
        guest = child(receiver, child(receiver, call, "execute_tool lookup"), "toolhost.guest")
        lookup = child(receiver, guest, "lookup")
        assert lookup.attributes["table"] == "users"
        assert lookup.events == ["cache miss"]
        child(receiver, lookup, "parse")
        assert "toolhost.guest.dropped" not in guest.attributes

        # Past every bound: 100 events and 100 spans, each with 20 long attributes
        # and a long name. 64 records are kept, cut; the rest is counted.
        assert ok(await client.call("flood", {"count": 100})) == {"result": 100}
        [call] = receiver.wait_for("the flood", lambda r: r.named("tools/call flood"))
        guest = child(receiver, child(receiver, call, "execute_tool flood"), "toolhost.guest")
        name = "n" * 128 + "…"
        spans = receiver.wait_for(
            "the flood's spans",
            lambda r: (found := [s for s in r.spans if s.parent_span_id == guest.span_id])
            and len(found) + len(guest.events) >= 64
            and found,
        )
        assert {s.name for s in spans} == {name}
        assert len(guest.events) + len(spans) == 64, (len(guest.events), len(spans))
        assert set(guest.events) == {name}
        for span in spans:
            assert len(span.attributes) == 16, span.attributes
            assert all(len(v) == 1024 + len("…") for v in span.attributes.values())
        # 136 records past the 64, and 4 attributes past the 16 of each kept one.
        assert guest.attributes["toolhost.guest.dropped"] == 136 + 64 * 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_dead_collector_changes_no_answer(launch: Launch, make_plugins: PluginsFactory) -> None:
    dead = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}", "OTEL_BSP_SCHEDULE_DELAY": "50"}
    async with launch(make_plugins("echo"), env=dead) as server, server.connect() as client:
        for n in range(20):
            assert ok(await client.call("echo", {"message": f"m{n}"}))["message"] == f"m{n}"
        assert "panicked" not in server.stderr()


@pytest.mark.parametrize("otlp", ["http/protobuf", "grpc"])
def test_the_cli_joins_the_trace_in_its_environment(
    toolhost_bin: Path, guests_dir: Path, cache_dir: Path, tmp_path: Path, otlp: str
) -> None:
    receiver = Receiver(otlp).start()
    try:
        cli_joins_the_trace(toolhost_bin, guests_dir, cache_dir, tmp_path, receiver)
    finally:
        receiver.stop()


def cli_joins_the_trace(
    toolhost_bin: Path, guests_dir: Path, cache_dir: Path, tmp_path: Path, receiver: Receiver
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "echo.wasm").write_bytes((guests_dir / "echo.wasm").read_bytes())
    trace_id, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    env = server_env(cache_dir, exporting_to(receiver))
    env["OTEL_EXPORTER_OTLP_PROTOCOL"] = receiver.protocol
    env["TRACEPARENT"] = f"00-{trace_id}-{parent}-01"
    run = subprocess.run(
        [str(toolhost_bin), "--plugins", str(plugins), "call", "echo", '{"message": "from a script"}'],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["message"] == "from a script"
    # Exported before the command exits.
    [top] = [s for s in receiver.spans if s.name == "toolhost call"]
    assert (top.trace_id, top.parent_span_id) == (trace_id, parent)
    execute = child(receiver, top, "execute_tool echo")
    child(receiver, execute, "toolhost.guest")
