"""MCP 2025-11-25 sessions (what today's agent frameworks speak, on mcp 1.x)
through nginx round robin: each request of a session may reach any replica,
which takes the session up from its record in Redis (issue 37)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import MCPError, types

from conftest import CALL_S, Cluster, REPLICA, connect_legacy, ok, running_cluster, wait_until

pytestmark = pytest.mark.anyio


def redis_keys(cluster: Cluster, pattern: str) -> list[str]:
    argv = ["redis-cli", "-p", str(cluster.redis_port), "--scan", "--pattern", pattern]
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=CALL_S).stdout.split()


def posted(cluster: Cluster, session: str, body: dict[str, Any]) -> dict[str, Any]:
    """What a 2025-11-25 client of `cluster` POSTs in session `session`."""
    headers = {
        **cluster.headers,
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
    }
    return {"headers": headers, "json": body}


async def test_a_session_is_served_by_every_replica(cluster: Cluster) -> None:
    """One session, its requests spread over the three replicas by round robin:
    each is answered (before, 2 of 2 mcp 1.30 runs failed with "Session
    terminated"); its unnamed `temp:` state (the session's invocation) is read
    on the replicas that did not set it."""
    async with connect_legacy(cluster.url, headers=cluster.headers) as (session, seen):
        with anyio.fail_after(CALL_S):
            tools = await session.list_tools()
            assert "add" in {tool.name for tool in tools.tools}
            for i in range(12):
                assert ok(await session.call_tool("add", {"a": i, "b": 1})) == {"result": i + 1}
            assert ok(await session.call_tool("remember", {"key": "k", "value": "v"})) == {"stored": "k"}
            for _ in range(3):
                assert ok(await session.call_tool("remember", {"key": "k"})) == {"value": "v"}
    replicas = seen.of("tools/call")
    assert None not in replicas, seen.answers
    assert set(replicas) == {r.name for r in cluster.replicas}, replicas
    assert len(set(replicas[-4:])) > 1, f"the state's set and reads stayed on one replica: {replicas}"
    assert len(set(seen.sessions)) == 1, seen.sessions
    assert all(e.status < 400 for e in seen.exchanges), [(e.method, e.rpc, e.status) for e in seen.exchanges]


async def test_a_deleted_session_is_gone_from_every_replica(cluster: Cluster) -> None:
    """The client's `DELETE` (on leaving) ends the session on every replica,
    and its record and invocation state in Redis; no key holds its ID."""
    async with connect_legacy(cluster.url, headers=cluster.headers) as (session, seen):
        with anyio.fail_after(CALL_S):
            for i in range(6):
                assert ok(await session.call_tool("add", {"a": i, "b": 1})) == {"result": i + 1}
            assert ok(await session.call_tool("remember", {"key": "k", "value": "v"})) == {"stored": "k"}
        [session_id] = set(seen.sessions)
        assert len(redis_keys(cluster, "*sess:*")) == 1
        assert not [key for key in redis_keys(cluster, "*") if session_id in key]
    assert any(e.method == "DELETE" and e.status < 300 for e in seen.exchanges), seen.exchanges
    wait_until("the session's record and state deleted", lambda: not redis_keys(cluster, "*sess:*"), CALL_S)
    wait_until("the session's state deleted", lambda: not redis_keys(cluster, "*inv:*"), CALL_S)
    ping = posted(cluster, session_id, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    async with httpx2.AsyncClient(timeout=CALL_S, headers=cluster.headers) as http:
        for replica in cluster.replicas:
            # A replica still holding a copy closes it at its next request (it
            # renews a session at most once a second).
            async def refused(replica: Any = replica) -> bool:
                return (await http.post(replica.url, **ping)).status_code == 404

            with anyio.fail_after(CALL_S):
                while not await refused():
                    await anyio.sleep(0.2)


async def test_a_session_goes_on_when_its_replica_is_killed(cluster: Cluster) -> None:
    """`kill -9` of the replica that opened the session: the others serve it on,
    with the same ID and its state."""
    async with connect_legacy(cluster.url, headers=cluster.headers) as (session, seen):
        with anyio.fail_after(CALL_S):
            assert ok(await session.call_tool("remember", {"key": "k", "value": "v"})) == {"stored": "k"}
        opened_on = next(e.replica for e in seen.exchanges if e.rpc == "initialize")
        victim = next(r for r in cluster.replicas if r.name == opened_on)
        victim.process.kill9()
        # nginx may try the dead replica for a request before it marks it down:
        # a request it cannot pass on fails with 502, which the client reports.
        answered = 0
        with anyio.fail_after(CALL_S):
            for i in range(9):
                try:
                    assert ok(await session.call_tool("remember", {"key": "k"})) == {"value": "v"}
                    answered += 1
                except Exception as error:  # a clear error: the transport said what failed
                    assert str(error).strip(), f"call {i} failed without saying why"
        assert answered >= 6, f"only {answered} of 9 calls were answered after the kill"
    after = [e for e in seen.exchanges if e.rpc == "tools/call"][1:]
    assert {e.replica for e in after if e.status == 200} <= {r.name for r in cluster.replicas} - {opened_on}
    assert len(set(seen.sessions)) == 1, seen.sessions


async def test_every_replica_takes_up_the_owners_session(cluster: Cluster) -> None:
    """Asked directly (no balancer between), each replica serves the session's
    owner, whichever replica opened it."""
    async with connect_legacy(cluster.url, headers=cluster.headers) as (session, seen):
        with anyio.fail_after(CALL_S):
            assert ok(await session.call_tool("add", {"a": 1, "b": 1})) == {"result": 2}
        [session_id] = set(seen.sessions)
        call = posted(cluster, session_id, {"jsonrpc": "2.0", "id": 7, "method": "ping"})
        async with httpx2.AsyncClient(timeout=CALL_S, headers=cluster.headers) as http:
            for replica in cluster.replicas:
                answer = await http.post(replica.url, **call)
                assert answer.status_code == 200, (replica.name, answer.status_code, answer.text)
                assert answer.headers.get(REPLICA) == replica.name
                assert '"result"' in answer.text, answer.text


async def approve(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Approves every confirmation toolhost asks for (`[confirm]` in the cluster's config)."""
    assert "needs your approval" in params.message, params
    return types.ElicitResult(action="accept", content={"approve": True})


async def test_a_confirmation_is_answered_through_any_replica(cluster: Cluster) -> None:
    """`echo` needs approval: the replica running the call asks on the call's
    stream (elicitation); the client's answer is a POST of its own, which round
    robin sends to another replica, which passes it to the call's replica."""
    async with connect_legacy(cluster.url, approve, headers=cluster.headers) as (session, seen):
        with anyio.fail_after(CALL_S):
            for i in range(6):
                assert ok(await session.call_tool("echo", {"message": f"m{i}"}))["message"] == f"m{i}"
    # An answer's exchange ends before its call's (whose stream waited for it).
    calls = [e.replica for e in seen.exchanges if e.rpc == "tools/call"]
    answers = [e for e in seen.exchanges if e.rpc == "?"]
    assert len(answers) == 6 and all(e.status == 202 for e in answers), answers
    pairs = list(zip(calls, [e.replica for e in answers], strict=True))
    assert any(call != answer for call, answer in pairs), f"every answer reached its call's replica: {pairs}"


async def in_flight(http: httpx2.AsyncClient, replica: Any) -> int:
    """The calls `replica` runs now (its `toolhost_tool_calls_in_flight`)."""
    metrics = (await http.get(replica.url.rsplit("/mcp", 1)[0] + "/metrics")).text
    found = re.search(r"^toolhost_tool_calls_in_flight (\d+)$", metrics, re.MULTILINE)
    return int(found.group(1)) if found else 0


async def test_a_call_is_cancelled_from_another_replica(cluster: Cluster) -> None:
    """`notifications/cancelled` for a call (`slow_job`, 25 s, approved first)
    reaches another replica than the call's: the call stops there, and the state
    it would set at its end is never set."""
    async with (
        connect_legacy(cluster.url, approve, headers=cluster.headers) as (session, seen),
        httpx2.AsyncClient(timeout=CALL_S, headers=cluster.headers) as http,
    ):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(session.call_tool, "slow_job", {"ms": 25_000, "key": "done"})
            with anyio.fail_after(CALL_S):
                while not (running := [r for r in cluster.replicas if await in_flight(http, r)]):
                    await anyio.sleep(0.05)
            [runs_on] = running
            [call] = [b for b in seen.bodies if b and b.get("params", {}).get("name") == "slow_job"]
            [session_id] = set(seen.sessions)
            other = next(r for r in cluster.replicas if r is not runs_on)
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call["id"]}}
            answer = await http.post(other.url, **posted(cluster, session_id, cancel))
            assert answer.status_code == 202, (answer.status_code, answer.text)
            with anyio.fail_after(CALL_S):
                while await in_flight(http, runs_on):
                    await anyio.sleep(0.05)
            tasks.cancel_scope.cancel()
        with anyio.fail_after(CALL_S):
            assert ok(await session.call_tool("remember", {"key": "done"})) == {"value": None}


async def test_progress_and_list_changes_reach_a_session_through_any_replica(tmp_path: Path) -> None:
    """A streaming tool's progress reaches the session's client on the call's
    stream, whichever replica runs it; a plugin dropped in the shared directory
    is announced (`notifications/tools/list_changed`) on the session's GET
    stream, whichever replica holds it."""
    guests = Path(os.environ["TOOLHOST_GUESTS"])
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            changed.set()

    config = "[serve]\nprogress_interval_ms = 0\n"
    with running_cluster(tmp_path, config=config) as cluster:
        async with connect_legacy(cluster.url, headers=cluster.headers, message_handler=on_message) as (session, seen):
            for _ in range(6):
                progress: list[tuple[float, str | None]] = []

                async def on_progress(done: float, total: float | None, message: str | None) -> None:
                    progress.append((done, message))

                with anyio.fail_after(CALL_S):
                    result = await session.call_tool("countdown", {"from": 3}, progress_callback=on_progress)
                assert ok(result) == {"result": "3\n2\n1\n0\n"}, result
                assert progress == [(i + 1, f"{3 - i}\n") for i in range(4)], progress
            assert len({replica for rpc, replica in seen.answers if rpc == "tools/call"}) > 1, seen.answers
            shutil.copyfile(guests / "text.wasm", cluster.plugins / "text.wasm")
            with anyio.fail_after(CALL_S):
                await changed.wait()
            # Each replica loads the plugin on its own: the one announcing it
            # may be ahead of the one answering the list.
            with anyio.fail_after(CALL_S):
                while "word_count" not in {tool.name for tool in (await session.list_tools()).tools}:
                    await anyio.sleep(0.1)


async def sse(response: httpx2.Response) -> AsyncIterator[tuple[str | None, Any]]:
    """The events of an SSE response as they come: (ID, JSON-RPC message or
    None for a priming event)."""
    event_id: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if line:
            field, _, value = line.partition(":")
            if field == "id":
                event_id = value.strip()
            elif field == "data":
                data.append(value.removeprefix(" "))
            continue
        if event_id is not None or data:
            text = "\n".join(data).strip()
            yield event_id, json.loads(text) if text else None
        event_id, data = None, []


async def cut_after_priming(http: httpx2.AsyncClient, url: str, request: dict[str, Any]) -> str:
    """POSTs `request` to `url` and drops its stream after the priming event:
    the event's ID, which a resume names."""
    async with http.stream("POST", url, **request) as response:
        assert response.status_code == 200, (response.status_code, await response.aread())
        async for event_id, message in sse(response):
            assert event_id and message is None, (event_id, message)
            return event_id
    raise AssertionError("the stream ended before its priming event")


async def resumed(http: httpx2.AsyncClient, url: str, headers: dict[str, str], last: str) -> list[Any]:
    """What a `GET` resuming after event `last` on `url` gives, to its end."""
    async with http.stream("GET", url, headers=headers | {"last-event-id": last}) as response:
        assert response.status_code == 200, (response.status_code, await response.aread())
        return [message async for _, message in sse(response) if message is not None]


async def test_a_stream_is_resumed_on_its_replica_only_and_ends_with_it(cluster: Cluster) -> None:
    """A call's stream dropped on one replica: a resume that reaches another
    replica, which numbered a stream of the same session alike, gets nothing
    there (before: the other call's events); on the call's replica, the rest.
    Once the call's replica is killed, a resume anywhere gets a JSON-RPC error
    for the call (before: an empty stream, which clients retry for ever)."""
    first, second, third = cluster.replicas
    async with (
        connect_legacy(cluster.url, headers=cluster.headers) as (session, seen),
        httpx2.AsyncClient(timeout=CALL_S) as http,
    ):
        with anyio.fail_after(CALL_S):
            await session.send_ping()
        [session_id] = set(seen.sessions)
        headers = posted(cluster, session_id, {})["headers"]

        def call(n: int) -> dict[str, Any]:
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                    "params": {"name": "sleep_forever", "arguments": {}}}
            return posted(cluster, session_id, body)

        with anyio.fail_after(CALL_S):
            cut = await cut_after_priming(http, first.url, call(501))
            # The same session's call on another replica, read to its end.
            async with http.stream("POST", second.url, **call(502)) as response:
                events = [event async for event in sse(response)]
            assert events[-1][1]["id"] == 502, events
            own = lambda event_id: event_id.split(".")[0]  # noqa: E731 (rmcp's INDEX/STREAM)
            assert own(events[0][0]) == own(cut), f"the replicas numbered the streams apart: {events[0][0]}, {cut}"
            assert await resumed(http, second.url, headers, cut) == []
            [answer] = await resumed(http, first.url, headers, cut)
        assert answer["id"] == 501, answer

        with anyio.fail_after(CALL_S):
            cut = await cut_after_priming(http, third.url, call(503))
        third.process.kill9()
        with anyio.fail_after(CALL_S):
            # Until Redis has seen the dead replica's subscription go, the
            # resume is sent back to retry, as while it lived.
            while not (answers := await resumed(http, second.url, headers, cut)):
                await anyio.sleep(0.1)
        [answer] = answers
        assert answer["id"] == 503 and "stopped before it answered" in answer["error"]["message"], answer


async def test_a_call_whose_replica_dies_fails_cleanly_for_the_sdk(cluster: Cluster) -> None:
    """mcp's client, its session through nginx: the replica running its call
    (`slow_job`, 25 s) is killed; the client resumes the call's stream through
    nginx on another replica and gets the call's end as a clear error, not a
    wait to its read timeout."""
    async with (
        connect_legacy(cluster.url, approve, headers=cluster.headers) as (session, _),
        httpx2.AsyncClient(timeout=CALL_S, headers=cluster.headers) as http,
    ):
        failed: list[BaseException] = []

        async def slow_job() -> None:
            try:
                await session.call_tool("slow_job", {"ms": 25_000})
            except MCPError as error:
                failed.append(error)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(slow_job)
            with anyio.fail_after(CALL_S):
                while not (running := [r for r in cluster.replicas if await in_flight(http, r)]):
                    await anyio.sleep(0.05)
            [runs_on] = running
            runs_on.process.kill9()
            with anyio.fail_after(CALL_S):
                while not failed:
                    await anyio.sleep(0.05)
        [error] = failed
        assert "stopped before it answered" in str(error), error


async def messages_of(http: httpx2.AsyncClient, url: str, request: dict[str, Any]) -> list[Any]:
    """The JSON-RPC messages answering a POST (a JSON body, or an SSE stream to its end)."""
    async with http.stream("POST", url, **request) as response:
        assert response.status_code in (200, 202), (response.status_code, await response.aread())
        if response.headers.get("content-type", "").startswith("application/json"):
            return [json.loads(await response.aread())]
        return [message async for _, message in sse(response) if message is not None]


async def open_session(http: httpx2.AsyncClient, cluster: Cluster, url: str) -> str:
    """A 2025-11-25 session opened on `url` by hand (no client keeps a `GET`
    stream of its own): its ID."""
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "by-hand", "version": "1"}}}
    headers = {**cluster.headers, "accept": "application/json, text/event-stream", "content-type": "application/json"}
    async with http.stream("POST", url, json=body, headers=headers) as response:
        assert response.status_code == 200, (response.status_code, await response.aread())
        session_id = response.headers["mcp-session-id"]
        await response.aread()
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, **posted(cluster, session_id, initialized))).status_code == 202
    return session_id


async def heard_on_get_stream(http: httpx2.AsyncClient, url: str, headers: dict[str, str], method: str,
                              act: Any) -> Any:
    """Opens the session's `GET` stream on `url`, then calls `act()` every 0.2 s
    until the stream carries a `method` notification: its params."""
    heard: list[Any] = []
    async with anyio.create_task_group() as tasks:

        async def listen() -> None:
            async with http.stream("GET", url, headers=headers) as response:
                assert response.status_code == 200, (response.status_code, await response.aread())
                async for _, message in sse(response):
                    if message and message.get("method") == method:
                        heard.append(message["params"])
                        tasks.cancel_scope.cancel()

        tasks.start_soon(listen)
        with anyio.fail_after(CALL_S):
            while not heard:
                await act()
                await anyio.sleep(0.2)
    return heard[0]


async def test_a_sessions_log_level_and_subscriptions_hold_on_every_replica(cluster: Cluster) -> None:
    """`logging/setLevel` sent to one replica: a call on each other replica logs
    the guest's line at that level (on the session's `GET` stream, where a
    call's log messages go, held by the call's replica or another);
    `resources/subscribe` sent to one replica: the session's `GET` stream on
    another hears of the resource's update, made by a call on the third (before:
    each replica kept its own, and log lines stayed on the call's replica)."""
    guests = Path(os.environ["TOOLHOST_GUESTS"])
    shutil.copyfile(guests / "mcp_conformance.wasm", cluster.plugins / "mcp_conformance.wasm")
    first, second, third = cluster.replicas
    watched = "test://watched-resource"
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(CALL_S, read=60)) as http:
        session_id = await open_session(http, cluster, first.url)
        headers = posted(cluster, session_id, {})["headers"]

        def request(n: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
            return posted(cluster, session_id, {"jsonrpc": "2.0", "id": n, "method": method, "params": params})

        with anyio.fail_after(CALL_S):
            for replica in cluster.replicas:
                while True:
                    [listed] = await messages_of(http, replica.url, request(1, "tools/list", {}))
                    if "touch_resources" in {tool["name"] for tool in listed["result"]["tools"]}:
                        break
                    await anyio.sleep(0.1)
        [answer] = await messages_of(http, first.url, request(2, "logging/setLevel", {"level": "info"}))
        assert "result" in answer, answer

        async def whoami_on_third() -> None:
            await messages_of(http, third.url, request(3, "tools/call", {"name": "whoami", "arguments": {}}))

        # A call's log line reaches the session's GET stream on another replica
        # (one that has logged nothing yet).
        logged = await heard_on_get_stream(http, second.url, headers, "notifications/message", whoami_on_third)
        assert logged == {"level": "info", "logger": "whoami", "data": "whoami called"}, logged
        for replica in (second, third):

            async def whoami(replica: Any = replica) -> None:
                await messages_of(http, replica.url, request(3, "tools/call", {"name": "whoami", "arguments": {}}))

            logged = await heard_on_get_stream(http, replica.url, headers, "notifications/message", whoami)
            assert logged == {"level": "info", "logger": "whoami", "data": "whoami called"}, (replica.name, logged)


        [answer] = await messages_of(http, first.url, request(4, "resources/subscribe", {"uri": watched}))
        assert "result" in answer, answer

        async def touch() -> None:
            call = {"name": "touch_resources", "arguments": {"uris": [watched]}}
            await messages_of(http, third.url, request(5, "tools/call", call))

        updated = await heard_on_get_stream(http, second.url, headers, "notifications/resources/updated", touch)
        assert updated == {"uri": watched}, updated
