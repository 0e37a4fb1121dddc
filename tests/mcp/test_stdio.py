"""`toolhost serve` over stdio: the shared scenarios, plus raw checks of the stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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
        assert [p["progress"] for p in progress][-1] == 3 and {p["progressToken"] for p in progress} == {"p"}
        assert "".join(p.get("message", "") for p in progress) == "2\n1\n0\n", progress
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


class RawStdio:
    """A `toolhost serve` on stdio driven line by line, without the SDK."""

    def __init__(self, process: Any) -> None:
        self.process = process
        self.stdout = TextReceiveStream(process.stdout)
        self.buffer = ""
        self.messages: list[dict[str, Any]] = []

    async def send(self, line: str | bytes) -> None:
        data = line if isinstance(line, bytes) else line.encode()
        await self.process.stdin.send(data + b"\n")

    async def next_answer(self) -> dict[str, Any]:
        """The next response (result or error) on stdout, or a batch of them;
        notifications are kept aside."""
        with anyio.fail_after(CALL_S):
            while True:
                while "\n" in self.buffer:
                    line, self.buffer = self.buffer.split("\n", 1)
                    message = json.loads(line)
                    if isinstance(message, list) or "method" not in message:
                        return message
                    self.messages.append(message)
                self.buffer += await self.stdout.receive()

    async def initialize(self) -> None:
        await self.send(
            json.dumps(
                _request(
                    0,
                    "initialize",
                    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
                )
            )
        )
        assert "result" in await self.next_answer()
        await self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))


async def _raw_server(toolhost_bin: Path, plugins: Path, cache_dir: Path, tmp_path: Path, *flags: str) -> Any:
    env = server_env(cache_dir, {"TOOLHOST_LOG": "info"})
    with open(tmp_path / "stderr.log", "w") as errlog:
        return await anyio.open_process(
            [str(toolhost_bin), "--plugins", str(plugins), *flags, "serve"], env=env, cwd=tmp_path, stderr=errlog
        )


async def test_every_request_gets_an_answer(
    toolhost_bin: Path, make_plugins: PluginsFactory, cache_dir: Path, tmp_path: Path
) -> None:
    """Lines that cannot be handed to the server still get a JSON-RPC error, with
    the request's id where it can be read and `null` where not; the server goes on."""
    deep = '{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"echo","arguments":{"message":%s"x"%s}}}' % (
        "[" * 10_000,
        "]" * 10_000,
    )
    cases: list[tuple[str | bytes, int, Any]] = [
        ("this is not json", -32700, None),
        ('{"jsonrpc":"2.0","id":10,"method":"ping"', -32700, None),
        ('[{"jsonrpc":"2.0","id":11,"method":"ping"}]', -32600, [11]),
        ("[]", -32600, None),
        ('{"jsonrpc":"2.0","id":12,"method":"tools/list","params":[]}', -32602, 12),
        ('{"jsonrpc":"2.0","id":13,"method":5}', -32600, 13),
        (deep, -32600, 14),
        # Over the 16 MiB line limit: answered with the id its first bytes hold.
        (b'{"jsonrpc":"2.0","id":15,"method":"ping","params":{"pad":"' + b"x" * (17 << 20) + b'"}}', -32600, 15),
        (b'{"jsonrpc":"2.0","method":"ping","params":{"pad":"' + b"x" * (17 << 20) + b'"},"id":18}', -32600, None),
        ('{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":5}}', -32602, 16),
        ('{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":[]}}', -32602, 17),
        ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600, None),
        ('"just a string"', -32600, None),
    ]
    process = await _raw_server(toolhost_bin, make_plugins("echo"), cache_dir, tmp_path)
    async with process:
        raw = RawStdio(process)
        await raw.initialize()
        for line, code, id in cases:
            await raw.send(line)
            answer = await raw.next_answer()
            shown = (line if isinstance(line, str) else line[:60].decode())[:80]
            if isinstance(id, list):  # a batch: one answer per request in it
                assert isinstance(answer, list), (shown, answer)
                assert [(a["id"], a["error"]["code"]) for a in answer] == [(i, code) for i in id], (shown, answer)
                continue
            assert isinstance(answer, dict) and answer.get("jsonrpc") == "2.0", (shown, answer)
            assert "error" in answer and answer["error"]["code"] == code, (shown, answer)
            assert answer["id"] == id, (shown, answer)
        # The server still serves.
        await raw.send(json.dumps(_request(99, "tools/call", {"name": "echo", "arguments": {"message": "still here"}})))
        answer = await raw.next_answer()
        assert answer["id"] == 99 and answer["result"]["structuredContent"]["message"] == "still here", answer
        await process.stdin.aclose()
        with anyio.fail_after(CALL_S):
            assert await process.wait() == 0


@asynccontextmanager
async def _hostile(
    toolhost_bin: Path, make_plugins: PluginsFactory, cache_dir: Path, tmp_path: Path
) -> AsyncIterator[tuple[Any, RawStdio]]:
    """A raw `serve` of the hostile plugin with limits far away (only a
    cancellation or the end of input stops its calls), initialized, its code
    compiled and running (call 1 answered)."""
    flags = ["--timeout-ms", "3600000", "--fuel", "10000000000000000"]
    process = await _raw_server(toolhost_bin, make_plugins("hostile"), cache_dir, tmp_path, *flags)
    async with process:
        raw = RawStdio(process)
        await raw.initialize()
        await raw.send(json.dumps(_request(1, "tools/call", {"name": "ok", "arguments": {}})))
        assert (await raw.next_answer())["id"] == 1  # compiled and running
        yield process, raw


async def test_a_cancelled_call_is_not_answered(
    toolhost_bin: Path, make_plugins: PluginsFactory, cache_dir: Path, tmp_path: Path
) -> None:
    """A call the client cancelled stops and gets no answer (MCP: the receiver
    should not respond to a cancelled request); the session goes on."""
    async with _hostile(toolhost_bin, make_plugins, cache_dir, tmp_path) as (process, raw):
        await raw.send(json.dumps(_request(2, "tools/call", {"name": "spin", "arguments": {}})))
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "no"}}
        await raw.send(json.dumps(cancel))
        # Logged by the call as it stops, just before it would answer.
        stderr = tmp_path / "stderr.log"
        with anyio.fail_after(CALL_S):
            while "call cancelled: the client cancelled it" not in stderr.read_text():
                await anyio.sleep(0.05)
        await raw.send(json.dumps(_request(3, "tools/call", {"name": "ok", "arguments": {}})))
        answer = await raw.next_answer()
        assert answer["id"] == 3 and answer["result"]["structuredContent"] == {"ok": True}, answer
        await process.stdin.aclose()
        rest = raw.buffer
        with anyio.fail_after(CALL_S):
            try:
                while True:
                    rest += await raw.stdout.receive()
            except anyio.EndOfStream:
                pass
            assert await process.wait() == 0
        ids = [json.loads(line).get("id") for line in rest.splitlines() if line.strip()]
        assert 2 not in ids, rest


async def test_eof_cancels_running_calls_and_answers_them(
    toolhost_bin: Path, make_plugins: PluginsFactory, cache_dir: Path, tmp_path: Path
) -> None:
    """Closing stdin while guests run stops them and answers their calls (the
    server does not wait for them to finish, nor give up on their answers)."""
    async with _hostile(toolhost_bin, make_plugins, cache_dir, tmp_path) as (process, raw):
        await raw.send(json.dumps(_request(2, "tools/call", {"name": "spin", "arguments": {}})))
        await raw.send(json.dumps(_request(3, "tools/call", {"name": "sleep_forever", "arguments": {}})))
        # Lines before the end of input are all read (and their calls started) first.
        await process.stdin.aclose()
        answers = {}
        for _ in range(2):
            answer = await raw.next_answer()
            answers[answer["id"]] = answer
        assert set(answers) == {2, 3}, answers
        for answer in answers.values():
            assert answer["result"]["isError"] is True and "cancelled" in answer["result"]["content"][0]["text"], answer
        with anyio.fail_after(CALL_S):
            assert await process.wait() == 0
        stderr = (tmp_path / "stderr.log").read_text()
        assert "the client closed its end" in stderr, stderr
        assert "timed out draining" not in stderr, stderr
