"""Direct calls of `toolhost serve --http` (host/src/mcp/http/direct.rs): a plain
`tools/call` in an initialized 2025-11-25 session runs without rmcp's session
hops and is answered as one JSON body when it finishes at once; a call that
could send more than its answer (progress, a client that can be asked things)
is left to rmcp and streamed. Either way the session behaves the same: it does
not expire while direct calls keep it busy, and a direct call still running is
cancelled by `notifications/cancelled`."""

from __future__ import annotations

import json
import signal
import time

import anyio
import httpx2
import pytest

from conftest import CALL_S, HttpServer, Launch, PluginsFactory
from test_http import BASE, INITIALIZE, LONG, _call, _exit_code, _wait_running, open_session, probe

pytestmark = pytest.mark.anyio


@pytest.fixture
def launch(launch_http: Launch) -> Launch:
    return launch_http


def _add(id: int, meta: dict[str, object] | None = None) -> dict[str, object]:
    call = {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    if meta is not None:
        call["params"]["_meta"] = meta  # type: ignore[index]
    return call


async def until_ready(server: HttpServer) -> None:
    """Waits until the plugins have loaded (`/readyz`): a call made while its plugin
    still compiles waits for it, so it is streamed, not answered at once."""
    with anyio.fail_after(CALL_S):
        while (await probe(server, "/readyz"))[0] != 200:
            await anyio.sleep(0.05)


async def test_plain_calls_are_answered_directly_and_the_rest_streamed(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    async with launch(make_plugins("echo")) as server:
        await until_ready(server)
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            headers = await open_session(http, server)
            response = await http.post(server.url, json=_add(2), headers=headers)
            assert response.status_code == 200, response.text
            assert response.headers["content-type"] == "application/json", response.headers
            answer = response.json()
            assert answer["id"] == 2 and answer["result"]["structuredContent"] == {"result": 3}, answer
            # A call that wants progress may get more than its answer: rmcp streams it.
            response = await http.post(server.url, json=_add(3, {"progressToken": "p"}), headers=headers)
            assert response.headers["content-type"].startswith("text/event-stream"), response.headers
            assert '"structuredContent":{"result":3}' in response.text, response.text
            # Headers that disagree with the session are rmcp's to refuse.
            wrong = headers | {"mcp-protocol-version": "1999-01-01"}
            response = await http.post(server.url, json=_add(4), headers=wrong)
            assert response.status_code == 400, (response.status_code, response.text)

            # A client that can be asked things (a gated tool's approval, a
            # guest's question) gets every call streamed, by rmcp.
            asking = {**INITIALIZE, "params": {**INITIALIZE["params"], "capabilities": {"elicitation": {}}}}  # type: ignore[dict-item]
            response = await http.post(server.url, json=asking, headers=BASE)
            session = response.headers["mcp-session-id"]
            their = BASE | {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post(server.url, json=initialized, headers=their)).status_code == 202
            response = await http.post(server.url, json=_add(2), headers=their)
            assert response.headers["content-type"].startswith("text/event-stream"), response.headers
            assert '"structuredContent":{"result":3}' in response.text, response.text


async def test_a_session_busy_with_direct_calls_does_not_expire(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    """rmcp ends a session none of whose messages it saw for the idle timeout;
    direct calls bypass it, so one is left to rmcp now and then to keep the
    session alive while its client uses it."""
    async with launch(make_plugins("echo"), config="[serve]\nsession_idle_timeout_ms = 1000\n") as server:
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            headers = await open_session(http, server)
            end = time.monotonic() + 3.5
            id = 2
            while time.monotonic() < end:
                response = await http.post(server.url, json=_add(id), headers=headers)
                assert response.status_code == 200, (id, response.status_code, response.text)
                assert '"structuredContent":{"result":3}' in response.text, response.text
                id += 1
                await anyio.sleep(0.1)
            assert "MCP session ended" not in server.stderr(), server.stderr()
            # Once its client stops, it expires as before.
            with anyio.fail_after(CALL_S):
                while "MCP session ended" not in server.stderr():
                    await anyio.sleep(0.1)
            response = await http.post(server.url, json=_add(id), headers=headers)
            assert response.status_code == 404, response.status_code


async def test_a_running_direct_call_is_cancelled_by_its_client(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    async with launch(make_plugins("hostile"), flags=LONG) as server:
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            headers = await open_session(http, server)
            async with http.stream("POST", server.url, json=_call(2, "sleep_forever"), headers=headers) as response:
                assert response.status_code == 200, response.status_code
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "no"}}
                assert (await http.post(server.url, json=cancel, headers=headers)).status_code == 202
                await server.wait_for_log(
                    lambda line: "the client cancelled it" in line and "tool=sleep_forever" in line,
                    "the cancelled call",
                )
                # Its stream ends without an answer, as rmcp ends a cancelled call's.
                with anyio.fail_after(CALL_S):
                    body = (await response.aread()).decode()
            assert '"id":2' not in body, body


def _message(response: httpx2.Response) -> dict[str, object]:
    """The one JSON-RPC message of a response, a JSON body or an SSE stream."""
    if response.headers["content-type"].startswith("application/json"):
        return response.json()
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return json.loads(next(d for d in data if d))


async def test_a_call_whose_params_do_not_fit_is_invalid_params_over_http(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    """A `tools/call` whose params do not fit (a `requestState` that is not a string, a
    name that is a number) is -32602, as over stdio; rmcp's reading made it a custom
    request, answered "method not found" (-32601, HTTP 404 when stateless)."""
    stateless = BASE | {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "add"}
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    async with launch(make_plugins("echo")) as server:
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            headers = await open_session(http, server)
            for state in (5, {"a": 1}):
                call = _add(7, meta)
                call["params"]["requestState"] = state  # type: ignore[index]
                response = await http.post(server.url, json=call, headers=stateless)
                answer = _message(response)
                assert answer.get("error", {}).get("code") == -32602, (response.status_code, answer)  # type: ignore[union-attr]
                assert "requestState" in answer["error"]["message"] or "string" in answer["error"]["message"], answer  # type: ignore[index]
                assert response.status_code != 404, response.status_code
                call = _add(8)
                call["params"]["requestState"] = state  # type: ignore[index]
                answer = _message(await http.post(server.url, json=call, headers=headers))
                assert answer.get("error", {}).get("code") == -32602, answer  # type: ignore[union-attr]
            call = _add(9)
            call["params"]["name"] = 5  # type: ignore[index]
            answer = _message(await http.post(server.url, json=call, headers=headers))
            assert answer.get("error", {}).get("code") == -32602, answer  # type: ignore[union-attr]
            # A method no one serves is still "method not found".
            unknown = {"jsonrpc": "2.0", "id": 10, "method": "tools/nothing", "params": {}}
            answer = _message(await http.post(server.url, json=unknown, headers=headers))
            assert answer.get("error", {}).get("code") == -32601, answer  # type: ignore[union-attr]


async def test_stateless_calls_are_answered_directly_and_keep_rmcps_guards(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    """A plain stateless (2026-07-28) `tools/call` runs without the session rmcp
    makes for each POST (host/src/mcp/http/stateless.rs); whatever rmcp refuses is
    still refused: a foreign Host or any foreign Origin (403), headers that disagree
    with the body or name a method twice (400), a `_meta` short of what 2026-07-28
    requires (400)."""
    stateless = BASE | {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "add"}
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    async with launch(make_plugins("echo")) as server:
        await until_ready(server)
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            for extra in ({}, {"Host": f"LocalHost:{server.port}"}, {"Host": f"[::1]:{server.port}"}):
                response = await http.post(server.url, json=_add(1, meta), headers=stateless | extra)
                assert response.status_code == 200, (extra, response.status_code, response.text)
                assert response.headers["content-type"] == "application/json", response.headers
                answer = response.json()
                assert answer["id"] == 1 and answer["result"]["structuredContent"] == {"result": 3}, answer
            refused = [
                ({"Host": "evil.example"}, 403),
                ({"Host": f"evil.example:{server.port}"}, 403),
                ({"Origin": "http://evil.example"}, 403),
                ({"mcp-name": "echo"}, 400),
                ({"mcp-method": "tools/list"}, 400),
                ({"mcp-protocol-version": "2025-11-25"}, 400),
            ]
            for extra, status in refused:
                response = await http.post(server.url, json=_add(2, meta), headers=stateless | extra)
                assert response.status_code == status, (extra, response.status_code, response.text)
            twice = [*stateless.items(), ("mcp-method", "tools/call")]
            response = await http.post(server.url, json=_add(3, meta), headers=twice)
            assert response.status_code == 400, (response.status_code, response.text)
            short = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
            response = await http.post(server.url, json=_add(4, short), headers=stateless)
            assert response.status_code == 400, (response.status_code, response.text)
            assert response.json()["error"]["code"] == -32602, response.text


async def test_a_stateless_call_cut_by_the_drain_deadline_says_so(launch: Launch, make_plugins: PluginsFactory) -> None:
    """A stateless call still running at the drain deadline is answered with a JSON-RPC
    error that says the server stopped and the call may have partly run (HTTP 200: a
    balancer must not resend it on its own), not rmcp's "empty response" 500."""
    headers = BASE | {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "spin"}
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    spin = _call(1, "spin")
    spin["params"]["_meta"] = meta  # type: ignore[index]
    answers: list[httpx2.Response] = []
    async with launch(make_plugins("hostile"), flags=LONG, config="[serve]\ndrain_timeout_ms = 500\n") as server:
        async with httpx2.AsyncClient(timeout=CALL_S) as http, httpx2.AsyncClient(timeout=CALL_S) as other:

            async def call() -> None:
                answers.append(await http.post(server.url, json=spin, headers=headers))

            async with anyio.create_task_group() as calls:
                calls.start_soon(call)
                await _wait_running(other, server, 1)
                server.process.send_signal(signal.SIGTERM)
        assert await _exit_code(server) == 0, server.stderr()
    [response] = answers
    assert (response.status_code, response.headers["content-type"]) == (200, "application/json"), response.text
    answer = response.json()
    assert answer["id"] == 1 and answer["error"]["code"] == -32603, answer
    assert "stopping" in answer["error"]["message"] and "partly run" in answer["error"]["message"], answer


async def test_stateless_calls_log_no_session_lines(launch: Launch, make_plugins: PluginsFactory) -> None:
    """At `info`, a stateless call's one-request session logs nothing (it was a line per
    call); a 2025-11-25 session still logs its end."""
    headers = BASE | {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "add"}
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    async with launch(make_plugins("echo"), env={"TOOLHOST_LOG": "info"}) as server:
        await until_ready(server)
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            for id in range(3):
                response = await http.post(server.url, json=_add(id, meta), headers=headers)
                assert response.json()["result"]["structuredContent"] == {"result": 3}, response.text
            session = await open_session(http, server)
            response = await http.post(server.url, json=_add(9), headers=session)
            assert response.json()["result"]["structuredContent"] == {"result": 3}, response.text
            await http.delete(server.url, headers=session)
            await server.wait_for_log(lambda line: "MCP session ended" in line, "the session's end")
        log = server.stderr()
        assert log.count("MCP session ended") == 1, log
