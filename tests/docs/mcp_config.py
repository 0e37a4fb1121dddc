"""Checks an MCP client configuration taken from the docs, with the official MCP SDK.

Reads a JSON document with `mcpServers` on stdin (the shape Claude Desktop,
Cursor and most clients take), and for every server connects as a client
would: `command` + `args` + `env` over stdio, or `url` + `headers` over
streamable HTTP. Each must answer `initialize` and list at least one tool.

Placeholders a reader replaces are replaced here, from the environment the
docs' own commands set up (`cargo xtask docs-test` runs this):
- `/path/to/toolhost` -> the `toolhost` found on PATH;
- `/path/to/plugins` -> `./target/plugins`;
- `/path/to/toolhost.toml` -> `./toolhost.toml`;
- `<the token>` -> `$TOOLHOST_MCP_TOKEN`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

TIMEOUT_S = 120


def substitute(text: str) -> str:
    toolhost = shutil.which("toolhost")
    if toolhost is None:
        raise SystemExit("docs-test: no `toolhost` on PATH")
    pairs = {
        "/path/to/toolhost.toml": os.path.abspath("toolhost.toml"),
        "/path/to/toolhost": toolhost,
        "/path/to/plugins": os.path.abspath("target/plugins"),
        "<the token>": os.environ.get("TOOLHOST_MCP_TOKEN", ""),
    }
    for placeholder, value in pairs.items():
        text = text.replace(placeholder, value)
    return text


async def check(session: ClientSession, name: str) -> None:
    await session.initialize()
    tools = await session.list_tools()
    if not tools.tools:
        raise SystemExit(f"docs-test: MCP server `{name}` lists no tools")
    print(f"docs-test: MCP server `{name}` lists {len(tools.tools)} tools")


async def main() -> None:
    servers = json.loads(substitute(sys.stdin.read()))["mcpServers"]
    for name, server in servers.items():
        with anyio.fail_after(TIMEOUT_S):
            if "command" in server:
                params = StdioServerParameters(
                    command=server["command"],
                    args=server.get("args", []),
                    env={**os.environ, **server.get("env", {})},
                    cwd=os.getcwd(),
                )
                async with stdio_client(params) as (read, write):
                    async with ClientSession(read, write) as session:
                        await check(session, name)
            else:
                async with create_mcp_http_client(headers=server.get("headers")) as http:
                    async with streamable_http_client(server["url"], http_client=http) as (read, write):
                        async with ClientSession(read, write) as session:
                            await check(session, name)


if __name__ == "__main__":
    anyio.run(main)
