"""`toolhost serve --http`: the shared scenarios over streamable HTTP, plus the
HTTP-only guards (Host and Origin checks against DNS rebinding, bearer token)."""

from __future__ import annotations

import anyio
import httpx2
import pytest
from mcp import MCPError

from conftest import CALL_S, HttpServer, Launch, PluginsFactory
from scenarios import *  # noqa: F403 (every shared scenario, run over HTTP)
from scenarios import ok

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


def leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]
