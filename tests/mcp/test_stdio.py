"""`toolhost serve` over stdio: the shared scenarios, plus raw checks of the stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from conftest import CALL_S, STARTUP_S, Launch, PluginsFactory, server_env
from scenarios import *  # noqa: F403 (every shared scenario, run over stdio)

pytestmark = pytest.mark.anyio


@pytest.fixture
def launch(launch_stdio: Launch) -> Launch:
    return launch_stdio


def _request(id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


async def test_stdout_carries_only_jsonrpc_and_eof_ends_the_server(
    toolhost_bin: Path, make_plugins: PluginsFactory, cache_dir: Path, tmp_path: Path
) -> None:
    """Raw JSON-RPC lines in, every stdout line must be a JSON-RPC message even with
    debug logging, a guest that logs and a guest that floods its own stdout;
    closing stdin ends the server cleanly."""
    messages = [
        _request(
            1,
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        ),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _request(2, "tools/list", {}),
        _request(3, "tools/call", {"name": "echo", "arguments": {"message": "raw"}}),
        _request(4, "tools/call", {"name": "whoami", "arguments": {}}),  # the guest logs
        _request(5, "tools/call", {"name": "countdown", "arguments": {"from": 2}, "_meta": {"progressToken": "p"}}),
        _request(6, "tools/call", {"name": "fail", "arguments": {}}),
        _request(7, "tools/call", {"name": "flood", "arguments": {"bytes": 200_000}}),  # guest stdout
    ]
    wanted = {m["id"] for m in messages if "id" in m}
    responses: dict[int, dict[str, Any]] = {}
    progress: list[dict[str, Any]] = []
    lines: list[str] = []
    env = server_env(cache_dir, {"TOOLHOST_LOG": "debug"})
    plugins = make_plugins("echo", "caps")
    with open(tmp_path / "stderr.log", "w") as errlog:
        process = await anyio.open_process(
            [str(toolhost_bin), "--plugins", str(plugins), "serve"], env=env, cwd=tmp_path, stderr=errlog
        )
    async with process:
        assert process.stdin and process.stdout
        stdout = TextReceiveStream(process.stdout)
        buffer = ""
        sent_rest = False

        def take(line: str) -> None:
            lines.append(line)
            message = json.loads(line)  # anything else on stdout fails here
            assert message.get("jsonrpc") == "2.0", line
            if "id" in message and ("result" in message or "error" in message):
                responses[message["id"]] = message
            elif message.get("method") == "notifications/progress":
                progress.append(message["params"])

        # The first message alone, as a client would: the rest after its answer.
        await process.stdin.send((json.dumps(messages[0]) + "\n").encode())
        with anyio.fail_after(STARTUP_S):
            async for chunk in stdout:
                *complete, buffer = (buffer + chunk).split("\n")
                for line in complete:
                    take(line)
                if 1 in responses and not sent_rest:
                    sent_rest = True
                    await process.stdin.send("".join(json.dumps(m) + "\n" for m in messages[1:]).encode())
                if wanted <= responses.keys():
                    break
        assert "result" in responses[1], responses[1]
        assert {t["name"] for t in responses[2]["result"]["tools"]} >= {"echo", "whoami", "countdown"}
        assert responses[3]["result"]["structuredContent"]["message"] == "raw"
        assert set(responses[4]["result"]["structuredContent"]) == {"call_id", "invocation_id"}
        assert responses[5]["result"]["structuredContent"] == {"result": "2\n1\n0\n"}
        assert [p["progress"] for p in progress] == [1, 2, 3] and {p["progressToken"] for p in progress} == {"p"}
        assert responses[6]["result"]["isError"] is True
        assert responses[7]["result"]["structuredContent"]["written"] >= 200_000
        assert not any("flood line" in line for line in lines), "guest stdout reached the MCP channel"

        # EOF on stdin: the server exits on its own, successfully, printing nothing more but JSON-RPC.
        await process.stdin.aclose()
        with anyio.fail_after(CALL_S):
            async for chunk in stdout:
                *complete, buffer = (buffer + chunk).split("\n")
                for line in complete:
                    take(line)
            assert await process.wait() == 0
        assert buffer == "", f"a partial line on stdout: {buffer!r}"
