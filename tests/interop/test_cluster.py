"""The agent frameworks' own MCP clients, each on the mcp 1.x it pins (so each
speaks MCP 2025-11-25, in a session), and that SDK's own client, through
docs/deploy.md's nginx (round robin, no affinity) to three replicas sharing
Redis (tests/cluster/services.py): every call is answered, and every replica
answers some (issue 37; before, 2 of 2 mcp 1.30 runs failed with "Session
terminated")."""

from __future__ import annotations

import json
import re
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "cluster"))
from services import CALL_S, Cluster, running_cluster  # noqa: E402

pytestmark = pytest.mark.anyio

#: Calls each client makes in its one session.
CALLS = 200
#: A hang guard for a client's whole run (never a timing assertion).
RUN_S = 600


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("cluster")) as cluster:
        yield cluster


def adds(cluster: Cluster) -> dict[str, int]:
    """How many `add` calls each replica has run (its `/metrics`)."""
    counts = {}
    for replica in cluster.replicas:
        url = replica.url.rsplit("/mcp", 1)[0] + "/metrics"
        request = urllib.request.Request(url, headers=cluster.headers)
        with urllib.request.urlopen(request, timeout=CALL_S) as response:
            metrics = response.read().decode()
        found = re.search(r'^toolhost_tool_calls_total\{tool="add"\} (\d+)$', metrics, re.MULTILINE)
        counts[replica.name] = int(found.group(1)) if found else 0
    return counts


def spread_over_every_replica(before: dict[str, int], after: dict[str, int]) -> None:
    ran = {name: after[name] - before[name] for name in after}
    assert sum(ran.values()) == CALLS, ran
    assert all(ran.values()), f"a replica ran none of the session's calls: {ran}"


def added(structured: Any, i: int) -> None:
    assert structured == {"result": i + 1}, structured


async def test_the_official_sdk_1x(cluster: Cluster) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    before = adds(cluster)
    with anyio.fail_after(RUN_S):
        async with (
            create_mcp_http_client(headers=cluster.headers) as http,
            streamable_http_client(cluster.url, http_client=http) as (read, write, session_id),
        ):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                assert init.protocolVersion == "2025-11-25", init.protocolVersion
                assert "add" in {tool.name for tool in (await session.list_tools()).tools}
                for i in range(CALLS):
                    result = await session.call_tool("add", {"a": i, "b": 1})
                    assert not result.isError, result
                    added(result.structuredContent, i)
                assert session_id()
    spread_over_every_replica(before, adds(cluster))


#: A function call a scripted model asks for: tool, arguments, call ID.
Call = tuple[str, dict[str, Any], str]


class ScriptedAgent:
    """An ADK agent whose tools are `toolset` and whose model is a script:
    given how many function responses its run has seen, `script` returns the
    function calls to ask for next, or none, and then the model says "done"."""

    def __init__(self, toolset: Any, script: Any) -> None:
        from google.adk.agents import LlmAgent
        from google.adk.models.base_llm import BaseLlm
        from google.adk.models.llm_response import LlmResponse
        from google.adk.runners import InMemoryRunner
        from google.genai import types as genai

        class Scripted(BaseLlm):
            async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
                answered = sum(1 for c in llm_request.contents for p in c.parts or [] if p.function_response)
                calls = [
                    genai.Part(function_call=genai.FunctionCall(name=name, args=args, id=id))
                    for name, args, id in script(answered)
                ]
                parts = calls or [genai.Part(text="done")]
                yield LlmResponse(content=genai.Content(role="model", parts=parts))

        agent = LlmAgent(name="scripted", model=Scripted(model="scripted"), tools=[toolset])
        self.runner = InMemoryRunner(agent=agent, app_name="cluster")
        self.question = genai.Content(role="user", parts=[genai.Part(text="go")])

    async def run(self) -> tuple[list[tuple[str, Any]], str | None]:
        """One run, in a session of its own: the function responses (call ID,
        response) in order, and the model's final text."""
        session = await self.runner.session_service.create_session(app_name="cluster", user_id="me")
        responses, final = [], None
        async for event in self.runner.run_async(user_id="me", session_id=session.id, new_message=self.question):
            parts = (event.content.parts if event.content else None) or []
            responses += [(p.function_response.id, p.function_response.response) for p in parts if p.function_response]
            if event.is_final_response():
                final = parts[0].text if parts else None
        return responses, final


def adk_toolset(cluster_url: str, headers: dict[str, str], **options: Any) -> Any:
    """ADK's `McpToolset` of the cluster (`options`: its callbacks)."""
    from google.adk.tools.mcp_tool import McpToolset, StreamableHTTPConnectionParams

    params = StreamableHTTPConnectionParams(url=cluster_url, headers=headers, timeout=CALL_S)
    return McpToolset(connection_params=params, **options)


async def test_adk_mcp_toolset(cluster: Cluster) -> None:
    """ADK's `McpToolset` in an agent run: a scripted model calls `add` in
    batches of 20 parallel function calls, ADK runs them through its session."""
    batch = 20

    def script(answered: int) -> list[Call]:
        if answered >= CALLS:
            return []
        return [("add", {"a": i, "b": 1}, f"c{i}") for i in range(answered, answered + batch)]

    before = adds(cluster)
    toolset = adk_toolset(cluster.url, cluster.headers)
    try:
        with anyio.fail_after(RUN_S):
            ran, final = await ScriptedAgent(toolset, script).run()
    finally:
        await toolset.close()
    responses = {int(id[1:]): response for id, response in ran}
    assert final == "done", final
    assert sorted(responses) == list(range(CALLS)), sorted(responses)
    for i, response in responses.items():
        assert not response.get("isError"), response
        added(response.get("structuredContent"), i)
    spread_over_every_replica(before, adds(cluster))


async def test_langchain_mcp_adapters(cluster: Cluster) -> None:
    """langchain-mcp-adapters' tools on one client session (`client.session`)."""
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools

    before = adds(cluster)
    client = MultiServerMCPClient({"toolhost": {"transport": "streamable_http", "url": cluster.url, "headers": cluster.headers}})
    with anyio.fail_after(RUN_S):
        async with client.session("toolhost") as session:
            tools = {tool.name: tool for tool in await load_mcp_tools(session)}
            for i in range(CALLS):
                output = await tools["add"].ainvoke({"a": i, "b": 1})
                text = output if isinstance(output, str) else "".join(block["text"] for block in output)
                added(json.loads(text), i)
    spread_over_every_replica(before, adds(cluster))


async def test_openai_agents(cluster: Cluster) -> None:
    """The OpenAI Agents SDK's `MCPServerStreamableHttp`."""
    from agents.mcp import MCPServerStreamableHttp

    before = adds(cluster)
    params = {"url": cluster.url, "headers": cluster.headers}
    with anyio.fail_after(RUN_S):
        async with MCPServerStreamableHttp(params=params, client_session_timeout_seconds=CALL_S) as server:
            assert "add" in {tool.name for tool in await server.list_tools()}
            for i in range(CALLS):
                result = await server.call_tool("add", {"a": i, "b": 1})
                assert not result.isError, result
                added(result.structuredContent, i)
    spread_over_every_replica(before, adds(cluster))



#: Confirmations each client answers (`echo` is under `[confirm]` in the cluster).
CONFIRMED = 20


async def test_confirmations_answered_through_any_replica(cluster: Cluster) -> None:
    """`echo` needs approval: the replica running a call asks through
    elicitation on the call's stream, and the client's answer (a POST of its
    own) may reach another replica, which passes it on. mcp 1.30's
    `ClientSession`, langchain-mcp-adapters' `on_elicitation` and ADK's
    `McpToolset` `elicitation_callback` (in an agent run), 20 calls each
    (openai-agents' MCP client takes no elicitation callback)."""
    from langchain_mcp_adapters.callbacks import Callbacks
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools
    from mcp import ClientSession, types
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    asked: list[str] = []

    async def approve(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert "needs your approval" in params.message, params
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async def approve_langchain(mcp_context: Any, params: Any, context: Any) -> types.ElicitResult:
        return await approve(mcp_context, params)

    with anyio.fail_after(RUN_S):
        async with (
            create_mcp_http_client(headers=cluster.headers) as http,
            streamable_http_client(cluster.url, http_client=http) as (read, write, _),
        ):
            async with ClientSession(read, write, elicitation_callback=approve) as session:
                await session.initialize()
                for i in range(CONFIRMED):
                    result = await session.call_tool("echo", {"message": f"official {i}"})
                    assert not result.isError, result
                    assert result.structuredContent["message"] == f"official {i}", result
        client = MultiServerMCPClient(
            {"toolhost": {"transport": "streamable_http", "url": cluster.url, "headers": cluster.headers}},
            callbacks=Callbacks(on_elicitation=approve_langchain),
        )
        async with client.session("toolhost") as session:
            tools = {tool.name: tool for tool in await load_mcp_tools(session, callbacks=client.callbacks)}
            for i in range(CONFIRMED):
                output = await tools["echo"].ainvoke({"message": f"langchain {i}"})
                text = output if isinstance(output, str) else "".join(block["text"] for block in output)
                assert json.loads(text)["message"] == f"langchain {i}", text
        def echo(answered: int) -> list[Call]:
            return [("echo", {"message": f"adk {answered}"}, f"e{answered}")] if answered < CONFIRMED else []

        toolset = adk_toolset(cluster.url, cluster.headers, elicitation_callback=approve)
        try:
            ran, _ = await ScriptedAgent(toolset, echo).run()
        finally:
            await toolset.close()
        echoed = [response.get("structuredContent") for _, response in ran]
        assert [e and e.get("message") for e in echoed] == [f"adk {i}" for i in range(CONFIRMED)], echoed
    assert len(asked) == 3 * CONFIRMED, len(asked)


def in_flight(cluster: Cluster) -> int:
    """The calls the replicas run now (their `toolhost_tool_calls_in_flight`)."""
    running = 0
    for replica in cluster.replicas:
        url = replica.url.rsplit("/mcp", 1)[0] + "/metrics"
        request = urllib.request.Request(url, headers=cluster.headers)
        with urllib.request.urlopen(request, timeout=CALL_S) as response:
            metrics = response.read().decode()
        found = re.search(r"^toolhost_tool_calls_in_flight (\d+)$", metrics, re.MULTILINE)
        running += int(found.group(1)) if found else 0
    return running


#: What `countdown` from 3 gives: its chunks, and the final result holds them all.
COUNTDOWN = "3\n2\n1\n0\n"


async def cancelled(cluster: Cluster, session: Any, call: Any, key: str) -> None:
    """Starts `call()` (a `slow_job` of 25 s setting state `key` at its end,
    approved through the client's elicitation) and cancels it with
    `notifications/cancelled` sent on `session` (mcp 1.x's `ClientSession`,
    which numbers its requests from 0: the call's ID is the number it is about
    to use); round robin takes the notification to any replica, the call
    stops, and `key` is never set."""
    from mcp import types

    request_id = session._request_id  # mcp 1.x: the ID its next request gets
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(call)
        with anyio.fail_after(CALL_S):
            while not await anyio.to_thread.run_sync(in_flight, cluster):
                await anyio.sleep(0.05)
        notification = types.CancelledNotification(
            params=types.CancelledNotificationParams(requestId=request_id, reason="the user stopped it")
        )
        await session.send_notification(types.ClientNotification(notification))
        with anyio.fail_after(CALL_S):
            while await anyio.to_thread.run_sync(in_flight, cluster):
                await anyio.sleep(0.05)
        tasks.cancel_scope.cancel()
    result = await session.call_tool("remember", {"key": key})
    assert result.structuredContent == {"value": None}, result


async def approve(context: Any, params: Any) -> Any:
    from mcp import types

    assert "needs your approval" in params.message, params
    return types.ElicitResult(action="accept", content={"approve": True})


async def test_progress_and_cancellation_through_each_framework(cluster: Cluster) -> None:
    """Each client's own way to get a streaming tool's progress (`countdown`,
    with a `progressToken`: the progress comes on the call's stream from the
    replica running it), and a `slow_job` cancelled on its session:
    mcp 1.30's `progress_callback`; langchain-mcp-adapters' `on_progress`;
    openai-agents' `meta` and `message_handler`; ADK's `McpToolset`
    `progress_callback` in an agent run. mcp 1.30 and langchain send the
    cancellation on their session; `slow_job` needs an approval, which
    openai-agents cannot give (it takes no elicitation callback), and ADK's
    toolset exposes no session to send one on."""
    from agents.mcp import MCPServerStreamableHttp
    from langchain_mcp_adapters.callbacks import Callbacks
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools
    from mcp import ClientSession, types
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    progress: dict[str, list[float]] = {}

    def on_progress(client: str) -> Any:
        async def record(done: float, total: float | None = None, message: str | None = None, *_: Any) -> None:
            progress.setdefault(client, []).append(done)

        return record

    with anyio.fail_after(RUN_S):
        async with (
            create_mcp_http_client(headers=cluster.headers) as http,
            streamable_http_client(cluster.url, http_client=http) as (read, write, _),
            ClientSession(read, write, elicitation_callback=approve) as session,
        ):
            await session.initialize()
            result = await session.call_tool("countdown", {"from": 3}, progress_callback=on_progress("official"))
            assert result.structuredContent == {"result": COUNTDOWN}, result

            async def official_job() -> None:
                await session.call_tool("slow_job", {"ms": 25_000, "key": "official"})

            await cancelled(cluster, session, official_job, "official")

        async def langchain_progress(progress_value: float, total: float | None, message: str | None, context: Any) -> None:
            await on_progress("langchain")(progress_value)

        async def langchain_approve(mcp_context: Any, params: Any, context: Any) -> Any:
            return await approve(mcp_context, params)

        client = MultiServerMCPClient(
            {"toolhost": {"transport": "streamable_http", "url": cluster.url, "headers": cluster.headers}},
            callbacks=Callbacks(on_progress=langchain_progress, on_elicitation=langchain_approve),
        )
        async with client.session("toolhost") as session:
            tools = {tool.name: tool for tool in await load_mcp_tools(session, callbacks=client.callbacks)}
            output = await tools["countdown"].ainvoke({"from": 3})
            text = output if isinstance(output, str) else "".join(block["text"] for block in output)
            assert text == COUNTDOWN, text  # the text content: the chunks

            async def langchain_job() -> None:
                await tools["slow_job"].ainvoke({"ms": 25_000, "key": "langchain"})

            await cancelled(cluster, session, langchain_job, "langchain")

        async def openai_messages(message: Any) -> None:
            root = getattr(message, "root", message)
            if isinstance(root, types.ProgressNotification) and root.params.progressToken == "openai-1":
                await on_progress("openai-agents")(root.params.progress)

        params = {"url": cluster.url, "headers": cluster.headers}
        async with MCPServerStreamableHttp(
            params=params, client_session_timeout_seconds=CALL_S, message_handler=openai_messages
        ) as server:
            result = await server.call_tool("countdown", {"from": 3}, meta={"progressToken": "openai-1"})
            assert result.structuredContent == {"result": COUNTDOWN}, result

        def count(answered: int) -> list[Call]:
            return [] if answered else [("countdown", {"from": 3}, "c1")]

        toolset = adk_toolset(cluster.url, cluster.headers, progress_callback=on_progress("adk"))
        try:
            ran, _ = await ScriptedAgent(toolset, count).run()
        finally:
            await toolset.close()
        responses = [response for _, response in ran]
        assert [r.get("structuredContent") for r in responses] == [{"result": COUNTDOWN}], responses
    assert set(progress) == {"official", "langchain", "openai-agents", "adk"}, progress
    for client, seen in progress.items():
        assert seen and seen == sorted(seen) and seen[-1] <= 4, (client, seen)


class Outcomes:
    """What each client's calls came to, and the kill of a replica once a
    quarter of all calls have been answered."""

    def __init__(self, cluster: Cluster, clients: int) -> None:
        self.cluster = cluster
        self.kill_after = clients * CALLS // 4
        self.killed = False
        self.answered = 0
        self.results: dict[str, list[str]] = {}
        self.sessions: dict[str, int] = {}

    def record(self, client: str, outcome: str) -> None:
        """`outcome`: "ok", or why the call failed (never empty: a clean failure says why)."""
        assert outcome.strip(), f"a call of {client} failed without saying why"
        self.results.setdefault(client, []).append(outcome)
        self.answered += 1
        if self.answered >= self.kill_after and not self.killed:
            self.killed = True
            self.cluster.replicas[1].process.kill9()

    async def run(self, client: str, session: Any) -> None:
        """Makes `client`'s calls in sessions `session()` opens (an async context
        yielding a function that makes call `i` and says how it went). mcp 1.x
        ends a session when a POST of it fails (a 502 from nginx for a call the
        dead replica was running): the call fails with that error, and the client
        opens another session for the rest, as an agent framework would."""
        i = 0
        while i < CALLS:
            self.sessions[client] = self.sessions.get(client, 0) + 1
            try:
                async with session() as call:
                    while i < CALLS:
                        try:
                            outcome = await call(i)
                        except Exception as error:  # the call's own clean failure
                            outcome = f"{type(error).__name__}: {error}"
                        self.record(client, outcome)
                        i += 1
            except Exception as error:  # the session ended under the call
                if i < CALLS:
                    self.record(client, f"session lost: {type(error).__name__}: {error}")
                    i += 1


async def test_every_client_goes_on_when_a_replica_is_killed(tmp_path: Path) -> None:
    """Four clients at once (mcp 1.30, langchain-mcp-adapters, openai-agents,
    ADK), 200 calls each, and `kill -9` of a replica a quarter of the way: each call is answered or fails with a clear error (those
    the dead replica was running), and each client's last calls all succeed,
    served by the replicas left."""
    from contextlib import asynccontextmanager

    from agents.mcp import MCPServerStreamableHttp
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    def result_of(result: Any, i: int) -> str:
        if result.isError:
            return str(result.content)
        added(result.structuredContent, i)
        return "ok"

    with running_cluster(tmp_path) as cluster:
        url, headers = cluster.url, cluster.headers

        @asynccontextmanager
        async def official() -> Any:
            async with (
                create_mcp_http_client(headers=headers) as http,
                streamable_http_client(url, http_client=http) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()

                async def call(i: int) -> str:
                    return result_of(await session.call_tool("add", {"a": i, "b": 1}), i)

                yield call

        @asynccontextmanager
        async def langchain() -> Any:
            client = MultiServerMCPClient({"toolhost": {"transport": "streamable_http", "url": url, "headers": headers}})
            async with client.session("toolhost") as session:
                tools = {tool.name: tool for tool in await load_mcp_tools(session)}

                async def call(i: int) -> str:
                    output = await tools["add"].ainvoke({"a": i, "b": 1})
                    text = output if isinstance(output, str) else "".join(block["text"] for block in output)
                    added(json.loads(text), i)
                    return "ok"

                yield call

        @asynccontextmanager
        async def openai_agents() -> Any:
            params = {"url": url, "headers": headers}
            async with MCPServerStreamableHttp(params=params, client_session_timeout_seconds=CALL_S) as server:

                async def call(i: int) -> str:
                    return result_of(await server.call_tool("add", {"a": i, "b": 1}), i)

                yield call

        @asynccontextmanager
        async def adk() -> Any:
            """An agent run per call: the scripted model asks for `add`, ADK
            calls it through its toolset's session, the model says done."""
            wanted: dict[str, int] = {}

            def add(answered: int) -> list[Call]:
                i = wanted["i"]
                return [] if answered else [("add", {"a": i, "b": 1}, f"c{i}")]

            toolset = adk_toolset(url, headers)
            try:
                agent = ScriptedAgent(toolset, add)

                async def call(i: int) -> str:
                    wanted["i"] = i
                    [(_, response)], _ = await agent.run()
                    if "structuredContent" not in response or response.get("isError"):
                        return f"ADK's function response: {response}"
                    added(response["structuredContent"], i)
                    return "ok"

                yield call
            finally:
                await toolset.close()

        clients = (("official", official), ("langchain", langchain), ("openai-agents", openai_agents), ("adk", adk))
        outcomes = Outcomes(cluster, len(clients))
        with anyio.fail_after(RUN_S):
            async with anyio.create_task_group() as tasks:
                for name, session in clients:
                    tasks.start_soon(outcomes.run, name, session)
    assert outcomes.killed
    for client, results in outcomes.results.items():
        assert len(results) == CALLS, (client, len(results))
        failed = [why for why in results if why != "ok"]
        assert results[-20:] == ["ok"] * 20, f"{client}'s last calls failed: {results[-20:]}"
        assert outcomes.sessions[client] <= 3, (client, outcomes.sessions[client], failed)
        print(f"{client}: {len(failed)} of {CALLS} calls failed when the replica died: {failed}")
