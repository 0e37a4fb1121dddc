"""`toolhost serve --http`: the shared scenarios over streamable HTTP, plus the
HTTP-only guards (Host and Origin checks against DNS rebinding, bearer token)."""

from __future__ import annotations

import re
import signal
import socket

import anyio
import anyio.abc
import httpx2
import pytest
from mcp import MCPError

from conftest import CALL_S, HttpServer, Launch, PluginsFactory
from scenarios import *  # noqa: F403 (every shared scenario, run over HTTP)
from scenarios import error, ok

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


@pytest.fixture
def launch(launch_http: Launch) -> Launch:
    return launch_http


async def post_initialize(server: HttpServer, headers: dict[str, str]) -> tuple[int, str]:
    """POSTs an initialize request with extra `headers`; returns the status and the
    body up to the initialize result. Ends the session it may have opened."""
    base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    auth = {k: v for k, v in headers.items() if k.lower() == "authorization"}
    body = ""
    async with httpx2.AsyncClient(timeout=CALL_S) as http:
        with anyio.fail_after(CALL_S):
            async with http.stream("POST", server.url, json=INITIALIZE, headers=base | headers) as response:
                status = response.status_code
                session = response.headers.get("mcp-session-id")
                if status == 200:
                    async for text in response.aiter_text():
                        body += text
                        if "protocolVersion" in body:
                            break
            if session:
                await http.delete(server.url, headers={"mcp-session-id": session} | auth)
    return status, body


async def test_host_header_must_be_local(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo")) as server:
        port = server.port
        for host in ["evil.example", f"evil.example:{port}", f"localhost.evil.example:{port}", f"10.0.0.1:{port}"]:
            status, _ = await post_initialize(server, {"Host": host})
            assert status == 403, (host, status)
        for host in ["localhost", f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"]:
            status, body = await post_initialize(server, {"Host": host})
            assert status == 200 and "protocolVersion" in body, (host, status, body)


async def test_foreign_origin_is_refused(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo")) as server:
        for origin in ["http://evil.example", f"http://evil.example:{server.port}"]:
            status, _ = await post_initialize(server, {"Origin": origin})
            assert status == 403, (origin, status)
        status, body = await post_initialize(server, {})
        assert status == 200 and "protocolVersion" in body, (status, body)


async def test_bearer_token(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo"), env={"TOOLHOST_MCP_TOKEN": "secret"}) as server:
        for headers in [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic c2VjcmV0"}]:
            status, _ = await post_initialize(server, headers)
            assert status == 401, (headers, status)
        status, body = await post_initialize(server, {"Authorization": "Bearer secret"})
        assert status == 200 and "protocolVersion" in body, (status, body)
        # Every method of the endpoint, not only POST.
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            for method in ["GET", "DELETE"]:
                response = await http.request(method, server.url, headers={"Accept": "text/event-stream"})
                assert response.status_code == 401, (method, response.status_code)

        async with server.connect(headers={"Authorization": "Bearer secret"}) as client:
            assert ok(await client.call("add", {"a": 20, "b": 22})) == {"result": 42}

        # The SDK without the token cannot even initialize (and says so: no hang).
        with anyio.fail_after(CALL_S), pytest.raises(Exception) as refused:  # noqa: B017 (the SDK's type varies)
            async with server.connect():
                pass
        # The SDK reports the HTTP 401 as an MCPError (inside its task groups' exception groups).
        assert any(isinstance(e, MCPError) for e in leaves(refused.value)), refused.value


async def test_a_static_token_refusal_names_its_realm(launch: Launch, make_plugins: PluginsFactory) -> None:
    # RFC 6750: a realm, and an error code only when a token was given. A bare
    # `Bearer` sends clients such as the MCP Inspector looking for OAuth.
    async with launch(make_plugins("echo"), env={"TOOLHOST_MCP_TOKEN": "secret"}) as server:
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            for headers, challenge in [
                ({}, 'Bearer realm="toolhost"'),
                ({"Authorization": "Basic c2VjcmV0"}, 'Bearer realm="toolhost"'),
                ({"Authorization": "Bearer wrong"}, 'Bearer realm="toolhost", error="invalid_token"'),
            ]:
                response = await http.post(server.url, json=INITIALIZE, headers=BASE | headers)
                assert response.status_code == 401, (headers, response.status_code)
                assert response.headers.get_list("www-authenticate") == [challenge], (headers, response.headers)


def leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


# --- connections, sessions and calls whose client went away ---------------------------

BASE = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LONG = ["--timeout-ms", "3600000", "--fuel", "10000000000000000"]


async def open_session(http: httpx2.AsyncClient, server: HttpServer) -> dict[str, str]:
    """Initializes a session by hand; returns the headers its requests carry."""
    with anyio.fail_after(CALL_S):
        async with http.stream("POST", server.url, json=INITIALIZE, headers=BASE) as response:
            assert response.status_code == 200, response.status_code
            session = response.headers["mcp-session-id"]
            body = ""
            async for text in response.aiter_text():
                body += text
                if "protocolVersion" in body:
                    break
        headers = BASE | {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        response = await http.post(server.url, json=initialized, headers=headers)
        assert response.status_code == 202, response.status_code
    return headers


def _call(id: int, tool: str) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}}


async def _read_to_eof(stream: anyio.abc.SocketStream) -> bytes:
    data = b""
    with anyio.fail_after(CALL_S):
        while True:
            try:
                data += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                return data


async def test_connections_over_the_cap_are_refused(launch: Launch, make_plugins: PluginsFactory) -> None:
    config = "[serve]\nmax_connections = 4\nmax_connections_per_peer = 4\nheader_read_timeout_ms = 3600000\n"
    async with launch(make_plugins("echo"), config=config) as server:
        held = [await anyio.connect_tcp("127.0.0.1", server.port) for _ in range(4)]
        for stream in held:
            await stream.send(b"P")  # a request that never completes
        # Connections are accepted in order: this one is the fifth.
        extra = await anyio.connect_tcp("127.0.0.1", server.port)
        refused = await _read_to_eof(extra)
        assert refused.startswith(b"HTTP/1.1 503"), refused
        await server.wait_for_log(
            lambda line: "refused HTTP connections" in line and "max_connections" in line, "a refusal log line"
        )
        for stream in held:
            await stream.aclose()
        # Their places free up: a client gets in again.
        with anyio.fail_after(CALL_S):
            while True:
                try:
                    status, _ = await post_initialize(server, {})
                except httpx2.HTTPError:
                    status = 0
                if status == 200:
                    break
                await anyio.sleep(0.1)
        async with server.connect() as client:
            assert ok(await client.call("add", {"a": 20, "b": 22})) == {"result": 42}


async def test_one_address_cannot_take_every_connection(launch: Launch, make_plugins: PluginsFactory) -> None:
    """A slowloris from one address (connections that send a byte of a request
    head, then wait) gets its share of the slots (`max_connections_per_peer`,
    half of `max_connections` by default) and a 503 past it; a client from
    another address still gets in."""
    config = "[serve]\nmax_connections = 8\nheader_read_timeout_ms = 3600000\n"
    async with launch(make_plugins("echo"), config=config) as server:
        # Linux's loopback takes any 127/8 source address.
        held = [await anyio.connect_tcp("127.0.0.1", server.port, local_host="127.0.0.2") for _ in range(4)]
        for stream in held:
            await stream.send(b"P")  # a request that never completes
        extra = await anyio.connect_tcp("127.0.0.1", server.port, local_host="127.0.0.2")
        refused = await _read_to_eof(extra)
        assert refused.startswith(b"HTTP/1.1 503") and b"from your address" in refused, refused
        await server.wait_for_log(
            lambda line: "refused HTTP connections: 127.0.0.2 holds 4" in line and "max_connections_per_peer" in line,
            "a per-peer refusal log line",
        )
        async with server.connect() as client:
            assert ok(await client.call("add", {"a": 20, "b": 22})) == {"result": 42}
        for stream in held:
            await stream.aclose()


async def test_slow_and_idle_connections_are_closed(launch: Launch, make_plugins: PluginsFactory) -> None:
    config = "[serve]\nheader_read_timeout_ms = 500\nidle_timeout_ms = 1500\n"
    async with launch(make_plugins("echo"), config=config) as server:
        slow = await anyio.connect_tcp("127.0.0.1", server.port)
        await slow.send(b"P")  # one byte of a request head, then nothing
        await _read_to_eof(slow)
        await server.wait_for_log(lambda line: "header_read_timeout" in line, "a header-read timeout log line")

        stuck = await anyio.connect_tcp("127.0.0.1", server.port)
        head = (
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{"
        )
        await stuck.send(head.encode())  # a body that never comes
        await _read_to_eof(stuck)
        await server.wait_for_log(lambda line: "idle_timeout" in line, "an idle timeout log line")

        async with server.connect() as client:
            assert ok(await client.call("add", {"a": 1, "b": 2})) == {"result": 3}


async def test_idle_sessions_expire(launch: Launch, make_plugins: PluginsFactory) -> None:
    """Sessions a client never ends are freed after the configured idle time; a
    request to one then gets 404 (the MCP signal to start a new session)."""
    async with launch(make_plugins("echo"), config="[serve]\nsession_idle_timeout_ms = 1000\n") as server:
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            sessions = [await open_session(http, server) for _ in range(20)]
            with anyio.fail_after(CALL_S):
                while server.stderr().count("MCP session ended") < len(sessions):
                    await anyio.sleep(0.1)
            ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
            for headers in sessions[:3]:
                response = await http.post(server.url, json=ping, headers=headers)
                assert response.status_code == 404, response.status_code
        async with server.connect() as client:
            assert ok(await client.call("add", {"a": 1, "b": 2})) == {"result": 3}


async def probe(server: HttpServer, path: str) -> tuple[int, str]:
    """GETs a probe (`/healthz`, `/readyz`) beside the MCP endpoint, with no token."""
    async with httpx2.AsyncClient(timeout=CALL_S) as http:
        with anyio.fail_after(CALL_S):
            response = await http.get(f"http://127.0.0.1:{server.port}{path}")
            return response.status_code, response.text


async def test_probes_answer_without_a_token(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo"), env={"TOOLHOST_MCP_TOKEN": "secret"}) as server:
        assert await probe(server, "/healthz") == (200, "alive\n")
        # Ready once the first load is done; the MCP endpoint still wants the token.
        with anyio.fail_after(CALL_S):
            while (answer := await probe(server, "/readyz"))[0] != 200:
                assert answer == (503, "loading plugins\n"), answer
                await anyio.sleep(0.05)
        assert answer == (200, "ready\n")
        status, _ = await post_initialize(server, {})
        assert status == 401, status


async def test_every_response_names_the_replica(launch: Launch, make_plugins: PluginsFactory) -> None:
    """Behind a load balancer, `x-toolhost-replica` says which replica answered:
    `$TOOLHOST_REPLICA` wins over `[serve] replica_name`; unset, there is no header."""
    config = '[serve]\nreplica_name = "from-config"\n'
    async with (
        launch(make_plugins("echo"), config=config, env={"TOOLHOST_REPLICA": "replica-7"}) as named,
        launch(make_plugins("echo"), config=config) as configured,
        launch(make_plugins("echo")) as anonymous,
        httpx2.AsyncClient(timeout=CALL_S) as http,
    ):
        for server, wanted in [(named, "replica-7"), (configured, "from-config"), (anonymous, None)]:
            response = await http.get(f"http://127.0.0.1:{server.port}/healthz")
            assert response.headers.get("x-toolhost-replica") == wanted, response.headers
        # MCP answers too, and refusals.
        base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        async with http.stream("POST", named.url, json=INITIALIZE, headers=base) as response:
            assert response.status_code == 200 and response.headers.get("x-toolhost-replica") == "replica-7"
        response = await http.post(named.url, json=INITIALIZE, headers=base | {"Host": "evil.example"})
        assert response.status_code == 403 and response.headers.get("x-toolhost-replica") == "replica-7"


async def test_not_ready_while_the_state_store_is_unreachable(launch: Launch, make_plugins: PluginsFactory) -> None:
    """`[state] url` names a Redis nobody listens on: the process is alive and serves
    the calls that keep no state, but it is not ready, and says why."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = f'[state]\nurl = "redis://127.0.0.1:{port}/0"\ntimeout_ms = 500\n'
    async with launch(make_plugins("echo"), config=config) as server:
        assert await probe(server, "/healthz") == (200, "alive\n")
        with anyio.fail_after(CALL_S):
            while (answer := await probe(server, "/readyz"))[1] == "loading plugins\n":
                await anyio.sleep(0.05)
        status, text = answer
        assert status == 503 and text.startswith("state store unreachable: "), answer
        async with server.connect() as client:
            assert ok(await client.call("add", {"a": 1, "b": 2})) == {"result": 3}
            text = error(await client.call("remember", {"key": "k", "value": "v"}))
            assert "state" in text.lower(), text


async def test_not_ready_while_a_plugin_is_still_loading(launch: Launch, make_plugins: PluginsFactory) -> None:
    """`slow_declare` never finishes listing its tools (its load deadline here is 10
    minutes): the process is alive and serves echo, but it is not ready."""
    plugins = make_plugins("echo", "slow_declare")
    async with launch(plugins, config="[load]\ntimeout_ms = 600000\n") as server:
        assert await probe(server, "/healthz") == (200, "alive\n")
        assert await probe(server, "/readyz") == (503, "loading plugins\n")


async def test_sigterm_stops_the_server_cleanly(launch: Launch, make_plugins: PluginsFactory) -> None:
    """What an orchestrator sends to stop a replica: the server stops accepting,
    lets its connections end and exits 0 (a killed process would exit -15)."""
    async with launch(make_plugins("echo")) as server, server.connect() as client:
        assert ok(await client.call("echo", {"message": "before"}))["message"] == "before"
        server.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(CALL_S):
            while server.process.poll() is None:
                await anyio.sleep(0.05)
        assert server.process.returncode == 0, server.stderr()
        assert "SIGTERM: stopping" in server.stderr(), server.stderr()


async def _read_until(response: httpx2.Response, needle: str) -> str:
    """Reads a streamed response until `needle` arrives or the stream ends."""
    body = ""
    with anyio.fail_after(CALL_S):
        try:
            async for text in response.aiter_text():
                body += text
                if needle in body:
                    break
        except httpx2.HTTPError:
            pass  # the server closed the stream
    return body


async def _wait_running(http: httpx2.AsyncClient, server: HttpServer, calls: int) -> None:
    """Waits until `calls` calls run (the headers of a call's POST come before
    its handler starts), as `GET /metrics` counts them."""
    expected = f"toolhost_tool_calls_in_flight {calls}"
    with anyio.fail_after(CALL_S):
        while expected not in (await http.get(f"http://127.0.0.1:{server.port}/metrics")).text.splitlines():
            await anyio.sleep(0.05)


async def _exit_code(server: HttpServer) -> int:
    with anyio.fail_after(CALL_S):
        while server.process.poll() is None:
            await anyio.sleep(0.05)
    return server.process.returncode


async def test_sigterm_drains_running_calls(launch: Launch, make_plugins: PluginsFactory) -> None:
    """SIGTERM lets a running call finish (here `spin` until its own 3 s deadline:
    its result arrives, it is not cancelled by the stop), refuses new calls and says
    `draining` on /readyz meanwhile, then exits 0."""
    flags = ["--timeout-ms", "3000", "--fuel", "10000000000000000"]
    async with launch(make_plugins("hostile"), flags=flags) as server:
        readyz = f"http://127.0.0.1:{server.port}/readyz"
        # `other` holds a second connection open: new ones are refused once the drain begins.
        async with httpx2.AsyncClient(timeout=CALL_S) as http, httpx2.AsyncClient(timeout=CALL_S) as other:
            headers = await open_session(http, server)
            response = await http.post(server.url, json=_call(1, "ok"), headers=headers)
            assert '"ok":true' in response.text, response.text  # compiled
            assert (await other.get(readyz)).status_code == 200
            async with http.stream("POST", server.url, json=_call(2, "spin"), headers=headers) as running:
                assert running.status_code == 200, running.status_code
                await _wait_running(other, server, 1)
                server.process.send_signal(signal.SIGTERM)
                await server.wait_for_log(lambda line: "draining: 1 call(s) running" in line, "a drain log line")
                probe = await other.get(readyz)
                assert (probe.status_code, probe.text) == (503, "draining\n")
                refused = await other.post(server.url, json=_call(3, "ok"), headers=headers)
                # A 503 a balancer may send elsewhere (the call did not run), with the JSON-RPC error.
                assert (refused.status_code, refused.headers.get("retry-after")) == (503, "1"), refused
                assert refused.json()["id"] == 3 and "shutting down" in refused.json()["error"]["message"], refused.text
                # Anything but a call is still served while the drain lasts.
                listed = await other.post(server.url, json={"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, headers=headers)
                assert listed.status_code == 200 and '"spin"' in listed.text, listed.text
                body = await _read_until(running, "ran out of time")
            assert "ran out of time" in body, body
            assert "was cancelled" not in body, body
        assert await _exit_code(server) == 0, server.stderr()
        assert "drained: every running call finished" in server.stderr(), server.stderr()


async def test_drain_deadline_cancels_what_is_left(launch: Launch, make_plugins: PluginsFactory) -> None:
    """A call longer than `drain_timeout_ms` is cancelled at the deadline; the
    server still exits 0 and says how many calls it cancelled."""
    async with launch(make_plugins("hostile"), flags=LONG, config="[serve]\ndrain_timeout_ms = 500\n") as server:
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            headers = await open_session(http, server)
            response = await http.post(server.url, json=_call(1, "ok"), headers=headers)
            assert '"ok":true' in response.text, response.text  # compiled
            async with http.stream("POST", server.url, json=_call(2, "spin"), headers=headers) as running:
                assert running.status_code == 200, running.status_code
                async with httpx2.AsyncClient(timeout=CALL_S) as other:
                    await _wait_running(other, server, 1)
                server.process.send_signal(signal.SIGTERM)
                # To the end: the call's answer says it was cut short, then the stream ends.
                body = await _read_until(running, "\0")
        assert '"id":2' in body and "cut short" in body and '"may_have_run":true' in body, body
        assert await _exit_code(server) == 0, server.stderr()
        log = server.stderr()
        assert "draining: 1 call(s) running" in log, log
        assert "drain deadline reached" in log and "1 call(s) still running are cut short" in log, log


async def test_the_drain_deadline_stops_guests_that_wait(launch: Launch, make_plugins: PluginsFactory) -> None:
    """Guests that burn no fuel, one in a WASI sleep and one waiting for an HTTP
    answer that never comes, are stopped at the drain deadline as a spinning one
    is: each call answers that it was cut short, and the server exits 0."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts, never answers
        port = silent.getsockname()[1]
        grant = f'[plugin.http.grants.network]\nhttp = ["http://127.0.0.1:{port}"]\n'
        config = "[serve]\ndrain_timeout_ms = 500\n\n" + grant
        fetch = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                 "params": {"name": "http_fetch", "arguments": {"url": f"http://127.0.0.1:{port}/"}}}
        async with launch(make_plugins("hostile", "http"), flags=LONG, config=config) as server:
            async with httpx2.AsyncClient(timeout=CALL_S) as http:
                headers = await open_session(http, server)
                async with (
                    http.stream("POST", server.url, json=_call(2, "sleep_forever"), headers=headers) as sleeping,
                    http.stream("POST", server.url, json=fetch, headers=headers) as fetching,
                ):
                    async with httpx2.AsyncClient(timeout=CALL_S) as other:
                        await _wait_running(other, server, 2)
                    server.process.send_signal(signal.SIGTERM)
                    bodies = {2: await _read_until(sleeping, "\0"), 3: await _read_until(fetching, "\0")}
            assert await _exit_code(server) == 0, server.stderr()
    for id, body in bodies.items():
        assert f'"id":{id}' in body and "cut short" in body, body


#: One sample line of the Prometheus/OpenMetrics text format: name, labels, value.
SAMPLE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*\})? \S+$')


async def test_metrics(launch: Launch, make_plugins: PluginsFactory) -> None:
    """`GET /metrics` (behind the bearer token when one is set) counts calls and
    errors by tool and kind, with duration, fuel and memory histograms, in the
    Prometheus text format."""
    token = {"Authorization": "Bearer secret"}
    async with launch(make_plugins("echo"), env={"TOOLHOST_MCP_TOKEN": "secret"}) as server:
        async with server.connect(headers=token) as client:
            for message in ["one", "two"]:
                assert ok(await client.call("echo", {"message": message}))["message"] == message
            assert error(await client.call("echo", {})).startswith("invalid arguments for `echo`")
            # A streaming tool is recorded when its stream ends, with what it cost.
            streamed = await client.call("countdown", {"from": 2})
            assert streamed.structured_content == {"result": "2\n1\n0\n"}, streamed
        url = f"http://127.0.0.1:{server.port}/metrics"
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            assert (await http.get(url)).status_code == 401
            response = await http.get(url, headers=token)
        assert response.status_code == 200, response.status_code
        assert response.headers["content-type"].startswith("application/openmetrics-text"), response.headers
        lines = response.text.splitlines()
        assert lines[-1] == "# EOF", lines[-5:]
        for line in lines:
            assert line.startswith(("# HELP ", "# TYPE ", "# UNIT ", "# EOF")) or SAMPLE.match(line), line
        for expected in [
            'toolhost_tool_calls_total{tool="echo"} 3',
            'toolhost_tool_errors_total{tool="echo",kind="invalid_arguments"} 1',
            'toolhost_tool_call_duration_seconds_count{tool="echo"} 3',
            'toolhost_tool_call_fuel_count{tool="echo"} 2',
            'toolhost_tool_call_peak_memory_bytes_count{tool="echo"} 2',
            'toolhost_tool_calls_total{tool="countdown"} 1',
            'toolhost_tool_call_fuel_count{tool="countdown"} 1',
            "toolhost_tool_calls_in_flight 0",
            "# TYPE toolhost_tool_call_duration_seconds histogram",
        ]:
            assert expected in lines, f"no `{expected}` in:\n{response.text}"
        assert any(line.startswith('toolhost_tool_call_duration_seconds_bucket{') for line in lines), response.text
        assert any(line.startswith("toolhost_guest_memory_budget_bytes ") for line in lines), response.text
        fuel = next(line for line in lines if line.startswith('toolhost_tool_call_fuel_sum{tool="countdown"}'))
        assert float(fuel.split()[-1]) > 0, fuel
