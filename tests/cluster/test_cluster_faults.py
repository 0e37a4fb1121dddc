"""Faults an operator meets in the documented deployment (issue 39): a stop whose
drain deadline passes with calls still running, and a Redis that comes back
empty (restarted without persistence)."""

from __future__ import annotations

import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import MCPError, types

from conftest import (
    CALL_S,
    Cluster,
    approved_retry,
    connect,
    connect_legacy,
    never_asked,
    ok,
    running_cluster,
    texts,
    wait_until,
)
from test_cluster_sessions import approve, in_flight

# The tasks client of the MCP tests (tests/mcp/tasks.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))
from tasks import TasksExtension, get, start, update, wait  # noqa: E402

pytestmark = pytest.mark.anyio

INVOCATION = "dev.toolhost/invocation"
ACCEPT = {"action": "accept", "content": {"approve": True}}
#: The `data` of the error a call cut at the drain deadline gets.
CUT = {"reason": "server_stopping", "may_have_run": True}


async def test_the_drain_deadline_cuts_every_call_and_the_replica_exits_in_time(tmp_path: Path) -> None:
    """SIGTERM to a replica running 25 calls of a 60 s job (on a 2025-11-25
    session, each approved first) and a task, with `drain_timeout_ms` 4000: at
    the deadline every guest is stopped and every call answered with the error
    that says it was cut short and may be sent again; the task is recorded
    failed with it (read on another replica); the replica exits 0 within the
    deadline and 5 s (before: only when the guests' sleeps ended, with rmcp's
    "empty response" or nothing for the calls)."""
    config = "[serve]\ndrain_timeout_ms = 4000\n\n[plugin.echo.limits]\ntimeout_ms = 200000\n"
    with running_cluster(tmp_path, config=config) as cluster:
        victim, other = cluster.replicas[0], cluster.replicas[1]
        failed: list[MCPError] = []

        async def slow_job(session: Any) -> None:
            try:
                result = await session.call_tool("slow_job", {"ms": 60_000})
            except MCPError as error:
                failed.append(error)
            else:
                raise AssertionError(f"a call ran to its end: {texts(result)}")

        extension = [TasksExtension()]
        async with (
            connect_legacy(victim.url, approve, headers=cluster.headers) as (session, seen),
            connect(victim.url, extensions=extension, headers=cluster.headers) as (tasks_client, _),
            httpx2.AsyncClient(timeout=CALL_S, headers=cluster.headers) as http,
        ):
            handle = await start(tasks_client.session, "slow_job", {"ms": 60_000})
            await wait(tasks_client.session, handle.task_id, until=("input_required",))
            await update(tasks_client.session, handle.task_id, {"approval": ACCEPT})
            await wait(tasks_client.session, handle.task_id, until=("working",))
            async with anyio.create_task_group() as calls:
                for _ in range(25):
                    calls.start_soon(slow_job, session)
                # Every approval answered (a POST the replica took), so every
                # guest runs: a client answering one after the stop began
                # would need a new connection, which the replica no longer takes.
                with anyio.fail_after(CALL_S):
                    while sum(e.rpc == "?" and e.status == 202 for e in seen.exchanges) < 25:
                        await anyio.sleep(0.05)
                    while await in_flight(http, victim) < 26:
                        await anyio.sleep(0.05)
                assert victim.process.popen is not None
                victim.process.popen.send_signal(signal.SIGTERM)
                stopped_at = time.monotonic()
                with anyio.fail_after(CALL_S):
                    while len(failed) < 25:
                        await anyio.sleep(0.05)
            exit_code = await anyio.to_thread.run_sync(lambda: victim.process.popen.wait(CALL_S))
            took = time.monotonic() - stopped_at
        log = victim.process.text()
        assert exit_code == 0, log[-3000:]
        assert took < 4 + 5, f"exited {took:.1f} s after SIGTERM"
        assert "26 call(s) still running are cut short" in log, log[-3000:]
        for error in failed:
            assert error.error.code == -32603, error.error
            assert "cut short" in error.error.message and "send it again if that is safe" in error.error.message, error
            assert error.error.data == CUT, error.error
        async with connect(other.url, extensions=extension, headers=cluster.headers) as (reader, _):
            state = await get(reader.session, handle.task_id)
        assert state.status == "failed", state
        assert "cut short" in (state.status_message or ""), state


def restart_redis_empty(cluster: Cluster) -> None:
    """`kill -9` of the cluster's Redis (which persists nothing, as the page warns
    against), then the same server again on its port: empty."""
    [redis] = [p for p in cluster.processes if p.name == "redis-server"]
    redis.kill9()
    redis.start()

    def pong() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", cluster.redis_port), timeout=1) as s:
                s.sendall(b"DBSIZE\r\n")
                return s.recv(16).startswith(b":0")
        except OSError:
            return False

    wait_until("redis-server answering, empty", pong, 30)


async def test_a_used_approval_stays_used_when_redis_comes_back_empty(cluster: Cluster) -> None:
    """An approval used before Redis restarted empty (its used-approval record
    lost) is refused when replayed after, on every replica, saying why, and so
    is one asked before and not used yet; one asked after runs once. Tasks and
    invocation state lost with Redis are reported missing, not made up: the
    task is unknown (and its call dropped by its owner), the state reads
    empty; the replicas answer throughout."""
    args = {"message": "approved before the loss"}

    async def retry(client: Any, state: str | None) -> types.CallToolResult:
        return await approved_retry(client, "echo", args, state)

    async def ask(client: Any) -> str:
        with anyio.fail_after(CALL_S):
            asked = await client.session.call_tool("echo", args, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult), asked
        assert asked.request_state is not None
        return asked.request_state

    meta = {INVOCATION: "before-the-loss"}
    extension = [TasksExtension()]
    async with connect(cluster.url, never_asked, extensions=extension, headers=cluster.headers) as (client, _):
        used = await ask(client)
        assert ok(await retry(client, used))["message"] == args["message"]
        unused = await ask(client)
        with anyio.fail_after(CALL_S):
            assert ok(await client.call_tool("remember", {"key": "k", "value": "v"}, meta=meta)) == {"stored": "k"}
        handle = await start(client.session, "slow_job", {"ms": 60_000, "key": "done"})
        await wait(client.session, handle.task_id, until=("input_required",))
        await update(client.session, handle.task_id, {"approval": ACCEPT})
        await wait(client.session, handle.task_id, until=("working",))

        restart_redis_empty(cluster)

        for replica in cluster.replicas:
            async with connect(replica.url, never_asked, headers=cluster.headers) as (direct, _seen):
                for state in (used, unused):
                    replay = await retry(direct, state)
                    assert replay.is_error and "lost its data" in texts(replay), (replica.name, texts(replay))
        # Asked after the loss: runs once.
        fresh = await ask(client)
        assert ok(await retry(client, fresh))["message"] == args["message"]
        replay = await retry(client, fresh)
        assert replay.is_error and "already decided" in texts(replay), texts(replay)

        with anyio.fail_after(CALL_S):
            assert ok(await client.call_tool("remember", {"key": "k"}, meta=meta)) == {"value": None}
        with pytest.raises(MCPError) as unknown:
            await get(client.session, handle.task_id)
        assert "unknown task" in unknown.value.error.message and "lost its data" in unknown.value.error.message
    wait_until(
        "the task's owner dropping its call",
        lambda: any("task record gone" in r.process.text() for r in cluster.replicas),
        CALL_S,
    )


async def test_a_request_state_that_is_not_a_string_is_invalid_params_through_nginx(cluster: Cluster) -> None:
    """A 2026-07-28 `tools/call` whose `requestState` is a number or an object,
    through nginx to whichever replica: -32602 (invalid params), never
    "method not found" (-32601, HTTP 404)."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    headers = cluster.headers | {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "add",
    }
    async with httpx2.AsyncClient(timeout=CALL_S) as http:
        for state in (5, {"a": 1}, 7, [1]):
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta, "requestState": state}}
            response = await http.post(cluster.url, json=call, headers=headers)
            assert response.status_code != 404, (response.status_code, response.text)
            answer = response.json()
            assert answer.get("error", {}).get("code") == -32602, (state, answer)
            assert "requestState" in answer["error"]["message"] or "string" in answer["error"]["message"], answer
