"""The cluster suite's fixtures and clients: the `cluster` fixture (services.py's
`running_cluster`, see there) and the MCP clients that talk to it through nginx
with the official Python SDK: `connect` (2026-07-28, sessionless) and
`connect_legacy` (a 2025-11-25 session).

`cargo xtask cluster-test` installs the Debian packages (redis-server, nginx,
prometheus; systemd, podman, runc and debootstrap for the deploy page's unit
and container), builds `toolhost` and the guests, and runs this directory.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, types
from mcp.client.client import Client as McpClient
from mcp.client.streamable_http import streamable_http_client

# What the tests import from here, made by services.py.
from services import (  # noqa: F401
    CALL_S,
    REPLICA,
    STARTUP_S,
    Cluster,
    Process,
    Replica,
    free_port,
    running_cluster,
    wait_until,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def texts(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def ok(result: types.CallToolResult) -> Any:
    assert not result.is_error, texts(result)
    return result.structured_content


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_cluster(tmp_path) as cluster:
        yield cluster


@dataclass(frozen=True)
class Exchange:
    """One HTTP request the client sent and what answered it."""

    method: str
    url: str
    #: The JSON-RPC method of a POST's body (`?` if none could be read), else None.
    rpc: str | None
    status: int
    #: The `x-toolhost-replica` header of the answer.
    replica: str | None
    #: The request's `Authorization` header.
    authorization: str | None


@dataclass
class Seen:
    """Which replica answered each MCP request, in order: (method, replica); and
    every exchange of the client's HTTP client (auth flows included)."""

    answers: list[tuple[str, str | None]] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    #: The `Mcp-Session-Id` of every request that carried one.
    sessions: list[str] = field(default_factory=list)
    #: The JSON body of every POST (as its answer began: a stream's at once).
    bodies: list[Any] = field(default_factory=list)

    def of(self, method: str) -> list[str | None]:
        return [replica for m, replica in self.answers if m == method]

    async def record(self, response: httpx2.Response) -> None:
        """The response hook of the client's HTTP client."""
        request = response.request
        rpc = None
        if request.method == "POST":
            body = request.content.decode(errors="replace")
            method = re.search(r'"method"\s*:\s*"([^"]+)"', body)
            rpc = method.group(1) if method else "?"
            self.answers.append((rpc, response.headers.get(REPLICA)))
            try:
                self.bodies.append(json.loads(body))
            except ValueError:
                self.bodies.append(None)
        if session := request.headers.get("mcp-session-id"):
            self.sessions.append(session)
        self.exchanges.append(
            Exchange(
                request.method,
                str(request.url),
                rpc,
                response.status_code,
                response.headers.get(REPLICA),
                request.headers.get("authorization"),
            )
        )


async def never_asked(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Declares form elicitation; approvals here are answered by hand."""
    raise AssertionError(f"the SDK's driver asked: {params}")


async def approved_retry(client: McpClient, tool: str, args: dict[str, Any], state: str | None) -> types.CallToolResult:
    """A 2026-07-28 retry of `tool` carrying `state` and the answer "approve"."""
    approve = {"approval": types.ElicitResult(action="accept", content={"approve": True})}
    with anyio.fail_after(CALL_S):
        result = await client.session.call_tool(
            tool, args, input_responses=approve, request_state=state, allow_input_required=True
        )
    assert isinstance(result, types.CallToolResult), result
    return result


@asynccontextmanager
async def connect(
    url: str,
    elicitation: Any = None,
    extensions: Any = (),
    *,
    headers: dict[str, str] | None = None,
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[tuple[McpClient, Seen]]:
    """A 2026-07-28 client of `url`, and a record of the replica behind each answer;
    `extensions` are the `ClientExtension`s it declares; `headers` go with every
    request (e.g. `Authorization`), `auth` is an httpx2 auth flow (e.g. the SDK's
    `OAuthClientProvider`)."""
    seen = Seen()
    timeout = httpx2.Timeout(CALL_S, read=300)
    async with httpx2.AsyncClient(
        timeout=timeout, headers=headers, auth=auth, event_hooks={"response": [seen.record]}
    ) as http:
        client = McpClient(
            streamable_http_client(url, http_client=http),
            mode="auto",
            elicitation_callback=elicitation,
            cache=None,
            extensions=list(extensions) or None,
        )
        async with client:
            assert client.session.protocol_version == "2026-07-28", client.session.protocol_version
            yield client, seen


@asynccontextmanager
async def connect_legacy(
    url: str,
    elicitation: Any = None,
    *,
    headers: dict[str, str] | None = None,
    message_handler: Any = None,
) -> AsyncIterator[tuple[ClientSession, Seen]]:
    """An initialized MCP 2025-11-25 session of `url` (what mcp 1.x clients, and
    so today's agent frameworks, speak), and a record of the replica behind each
    answer; `headers` go with every request, `message_handler` gets the server's
    notifications. The session ends (`DELETE`) on exit."""
    seen = Seen()
    timeout = httpx2.Timeout(CALL_S, read=300)
    async with httpx2.AsyncClient(timeout=timeout, headers=headers, event_hooks={"response": [seen.record]}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(
                read, write, elicitation_callback=elicitation, message_handler=message_handler
            ) as session:
                with anyio.fail_after(CALL_S):
                    init = await session.initialize()
                assert init.protocol_version == "2025-11-25", init.protocol_version
                yield session, seen
