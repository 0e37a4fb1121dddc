"""Resumable streams (SEP-1699) of `toolhost serve --http` sessions: a call's
stream that drops, or that the server ends early so that its client polls, is
resumed with a `GET` naming the last event the client saw (`Last-Event-ID`).
The call runs on meanwhile and nothing it sends is lost, its response included;
a stream nobody resumes in time is given up and its call cancelled."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import pytest

from conftest import CALL_S, Launch, PluginsFactory
from test_http import LONG, _call, open_session

pytestmark = pytest.mark.anyio


@pytest.fixture
def launch(launch_http: Launch) -> Launch:
    return launch_http


@dataclass
class Event:
    """One server-sent event: its ID, its JSON-RPC message (none for a priming
    event) and its retry hint."""

    id: str
    message: dict[str, Any] | None
    retry: int | None

    @property
    def index(self) -> int:
        return int(self.id.split("/")[0])


async def events(response: httpx2.Response) -> AsyncIterator[Event]:
    """The events of an SSE response (comments, such as keep-alives, skipped)."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line == "":
            if "id" in fields or "data" in fields:
                data = fields.get("data", "")
                retry = fields.get("retry")
                yield Event(fields.get("id", ""), json.loads(data) if data else None, int(retry) if retry else None)
            fields = {}
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        fields[name] = f"{fields[name]}\n{value}" if name in fields else value


def resuming(headers: dict[str, str], last: Event) -> dict[str, str]:
    return headers | {"accept": "text/event-stream", "last-event-id": last.id}


async def metric(http: httpx2.AsyncClient, server: Any, name: str) -> float:
    text = (await http.get(f"http://127.0.0.1:{server.port}/metrics")).text
    for line in text.splitlines():
        if line.startswith(f"{name} ") or line.startswith(f"{name}{{"):
            return float(line.split()[-1])
    return 0.0


async def test_a_dropped_stream_resumes_where_it_left_off(launch: Launch, make_plugins: PluginsFactory) -> None:
    """The client drops a call's stream after its first progress notification and
    resumes it: it gets every later event once, in order, up to the response."""
    async with launch(make_plugins("mcp_conformance")) as server:
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            headers = await open_session(http, server)
            call = _call(2, "test_tool_with_progress")
            call["params"]["_meta"] = {"progressToken": "p"}  # type: ignore[index]
            seen: list[Event] = []
            with anyio.fail_after(CALL_S):
                async with http.stream("POST", server.url, json=call, headers=headers) as response:
                    assert response.status_code == 200, response.status_code
                    async for event in events(response):
                        seen.append(event)
                        if event.message and event.message.get("method") == "notifications/progress":
                            break
            # Leaving the block unread closed the connection under the call.
            assert seen[0].message is None and seen[0].retry == 3000, seen[0]  # the priming event
            resumed: list[Event] = []
            with anyio.fail_after(CALL_S):
                async with http.stream("GET", server.url, headers=resuming(headers, seen[-1])) as response:
                    assert response.status_code == 200, response.status_code
                    async for event in events(response):
                        resumed.append(event)
                        if event.message and event.message.get("id") == 2:
                            break
            every = seen + resumed
            assert [e.index for e in every] == list(range(len(every))), [e.id for e in every]
            progress = [e for e in every if e.message and e.message.get("method") == "notifications/progress"]
            assert len(progress) == 3, [e.message for e in every]
            result = every[-1].message
            assert result is not None and "result" in result, result
            assert "step 3 of 3" in json.dumps(result), result


async def test_a_response_sent_while_nobody_listened_is_kept(launch: Launch, make_plugins: PluginsFactory) -> None:
    """A call that answers while its stream is down: the answer waits for the
    resume, which then ends; once read, the stream is no longer kept."""
    async with launch(make_plugins("mcp_conformance")) as server:
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            headers = await open_session(http, server)
            with anyio.fail_after(CALL_S):
                async with http.stream("POST", server.url, json=_call(2, "test_reconnection"), headers=headers) as response:
                    priming = await anext(aiter(events(response)))
            with anyio.fail_after(CALL_S):
                while await metric(http, server, 'toolhost_tool_calls_total{tool="test_reconnection"}') < 1:
                    await anyio.sleep(0.1)
            with anyio.fail_after(CALL_S):
                async with http.stream("GET", server.url, headers=resuming(headers, priming)) as response:
                    assert response.status_code == 200, response.status_code
                    resumed = [event async for event in events(response)]  # to the stream's end
            assert len(resumed) == 1 and resumed[0].message is not None, resumed
            assert resumed[0].message["id"] == 2, resumed
            assert "Reconnection test completed" in json.dumps(resumed[0].message), resumed
            # Read to its end: a second resume finds nothing.
            with anyio.fail_after(CALL_S):
                async with http.stream("GET", server.url, headers=resuming(headers, priming)) as response:
                    again = [event async for event in events(response)]
            assert again == [], again
            assert "stream 0/" in server.stderr() and "cannot be resumed" in server.stderr(), server.stderr()
            assert await metric(http, server, "toolhost_http_stream_resumes_total") == 1


@pytest.mark.parametrize(
    ("resume_ms", "why"),
    [("0", "the client's connection dropped"), ("300", "no client resumed it in time")],
    ids=["no-resume", "not-resumed"],
)
async def test_an_unresumed_stream_is_given_up_and_its_call_stopped(
    launch: Launch, make_plugins: PluginsFactory, resume_ms: str, why: str
) -> None:
    """A client whose stream drops mid-call (no `notifications/cancelled`) and that
    does not resume it within `[serve] stream_resume_ms` (at once with 0) stops its
    guest: nothing keeps burning CPU for it."""
    config = f"[serve]\nstream_resume_ms = {resume_ms}\n"
    async with launch(make_plugins("hostile"), flags=LONG, config=config) as server:
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            headers = await open_session(http, server)
            response = await http.post(server.url, json=_call(1, "ok"), headers=headers)
            assert '"ok":true' in response.text, response.text  # compiled
            if "no compiled code cached" in server.stderr():
                # The optimizing compile in the background would count below.
                await server.wait_for_log(lambda line: "optimized code ready" in line, "the optimized code")
            for id, tool in enumerate(["spin", "sleep_forever"], start=2):
                # The response's headers mean the call was handed to the session;
                # leaving the block unread closes the connection under it.
                async with http.stream("POST", server.url, json=_call(id, tool), headers=headers) as response:
                    assert response.status_code == 200, response.status_code
                await server.wait_for_log(
                    lambda line, tool=tool: why in line and f"tool={tool}" in line,
                    f"a cancelled `{tool}` ({why})",
                )
            given_up = await metric(http, server, "toolhost_http_streams_given_up_total")
            assert given_up == (0 if resume_ms == "0" else 2), given_up
        before = server.cpu_seconds()
        await anyio.sleep(2)
        used = server.cpu_seconds() - before
        assert used < 0.5, f"the server used {used:.2f} s of CPU in the 2 s after the drops"


async def test_the_server_ends_long_streams_and_the_sdk_client_resumes_them(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    """Polling (`[serve] stream_close_after_ms`): the server ends a call's stream early;
    the official SDK's client waits the stream's retry interval, resumes it, and
    gets its response as if nothing happened."""
    config = "[serve]\nstream_close_after_ms = 100\n"
    async with launch(make_plugins("mcp_conformance"), config=config) as server:
        async with server.connect() as client:
            result = await client.call("test_reconnection")
            assert not result.is_error, result
            assert result.content[0].text == "Reconnection test completed", result  # type: ignore[union-attr]
        async with httpx2.AsyncClient(timeout=CALL_S) as http:
            assert await metric(http, server, "toolhost_http_stream_resumes_total") >= 1
