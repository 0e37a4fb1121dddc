"""Long-running tools as MCP tasks (the Tasks extension of 2026-07-28, SEP-2663), over
stdio and HTTP, on one server: start, poll, complete; cancel (the guest stops); an
approval answered through `tasks/update` (accept and decline); clients that do not
opt in, tools that are not long-running and a server with tasks off get plain calls;
unknown and foreign task IDs are errors. The client is the official SDK with the small
extension in `tasks.py` (the SDK has no tasks client yet)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import MCPError

from conftest import MODERN, Launch, PluginsFactory
from scenarios import REFUSED, error, ok
from tasks import TasksExtension, cancel, get, start, update, wait

pytestmark = pytest.mark.anyio

#: Calls carrying this name share the guest's invocation state, so a later call can
#: read what a task's call set.
INVOCATION = "dev.toolhost/invocation"
ACCEPT = {"action": "accept", "content": {"approve": True}}


@pytest.fixture
def protocol() -> str:
    return MODERN


@pytest.fixture(params=["stdio", "http"])
def launch(request: pytest.FixtureRequest, launch_stdio: Launch, launch_http: Launch) -> Launch:
    return launch_stdio if request.param == "stdio" else launch_http


def invocation(name: str) -> dict[str, Any]:
    return {INVOCATION: name}


async def remembered(client: Any, key: str, meta: dict[str, Any]) -> Any:
    """The invocation state `key` holds (what `slow_job` sets when it finishes)."""
    with anyio.fail_after(30):
        result = await client.session.call_tool("remember", {"key": key}, meta=meta)
    return ok(result)["value"]


async def test_a_long_running_call_runs_as_a_task(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo")) as server, server.connect(extensions=[TasksExtension()]) as client:
        assert "io.modelcontextprotocol/tasks" in (client.capabilities.extensions or {}), client.capabilities
        meta = invocation("task-complete")
        handle = await start(client.session, "slow_job", {"ms": 1500, "key": "done"}, meta)
        assert handle.status == "working", handle
        assert handle.ttl_ms == 3_600_000 and handle.poll_interval_ms == 500, handle
        assert len(handle.task_id) == 32, handle.task_id  # 128 random bits, hex
        polled = await get(client.session, handle.task_id)
        assert polled.status == "working", polled
        assert polled.created_at == handle.created_at, polled
        state = await wait(client.session, handle.task_id)
        assert state.status == "completed", state
        assert ok(state.call_result()) == {"slept_ms": 1500}
        assert await remembered(client, "done", meta) == "done"
        # Completed stays completed; a cancel now changes nothing.
        await cancel(client.session, handle.task_id)
        assert (await get(client.session, handle.task_id)).status == "completed"
        # The SDK's high-level call resolves the task through the extension.
        assert client.mcp is not None
        with anyio.fail_after(60):
            result = await client.mcp.call_tool("slow_job", {"ms": 10})
        assert ok(result) == {"slept_ms": 10}
        await server.wait_for_log(lambda line: "call runs as a task" in line, "task start")


async def test_a_cancelled_task_stops_its_guest(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo")) as server, server.connect(extensions=[TasksExtension()]) as client:
        meta = invocation("task-cancel")
        handle = await start(client.session, "slow_job", {"ms": 3000, "key": "done"}, meta)
        await anyio.sleep(0.3)
        await cancel(client.session, handle.task_id)
        state = await wait(client.session, handle.task_id)
        assert state.status == "cancelled", state
        await server.wait_for_log(lambda line: "guest stopped" in line, "the call dropped")
        # Past the time the job needed: it never got to its end.
        await anyio.sleep(3.5)
        assert await remembered(client, "done", meta) is None
        assert (await get(client.session, handle.task_id)).status == "cancelled"


async def test_an_approval_is_asked_and_answered_through_the_task(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    config = '[confirm]\ntools = ["slow_job"]\n'
    async with (
        launch(make_plugins("echo"), config=config) as server,
        server.connect(extensions=[TasksExtension()]) as client,
    ):
        handle = await start(client.session, "slow_job", {"ms": 50})
        asked = await wait(client.session, handle.task_id, until=("input_required",))
        question = (asked.input_requests or {}).get("approval")
        assert question and question["method"] == "elicitation/create", asked
        params = question["params"]
        assert "slow_job" in params["message"] and '"ms":50' in params["message"], params
        assert params["requestedSchema"]["properties"]["approve"]["type"] == "boolean", params
        await update(client.session, handle.task_id, {"approval": ACCEPT})
        state = await wait(client.session, handle.task_id)
        assert state.status == "completed", state
        assert ok(state.call_result()) == {"slept_ms": 50}

        # Declined: the task completes with the refusal a plain call gets.
        handle = await start(client.session, "slow_job", {"ms": 50})
        await wait(client.session, handle.task_id, until=("input_required",))
        await update(client.session, handle.task_id, {"approval": {"action": "decline"}})
        state = await wait(client.session, handle.task_id)
        assert state.status == "completed", state
        text = error(state.call_result())
        assert REFUSED.search(text) and text == "`slow_job` was not run: the user declined it", text

        # Cancelled while it waits for the answer: nothing runs.
        handle = await start(client.session, "slow_job", {"ms": 50})
        await wait(client.session, handle.task_id, until=("input_required",))
        await cancel(client.session, handle.task_id)
        assert (await wait(client.session, handle.task_id)).status == "cancelled"


async def test_a_tools_questions_are_asked_through_the_task_and_its_call_waits(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    """A task keeps its call: the tool's question makes the task `input_required`, the
    answer comes with `tasks/update`, and the call goes on from where it stopped (no
    re-run, unlike a plain 2026-07-28 call: `interview` counts one run)."""

    async def by_hand(context: Any, params: Any) -> Any:
        raise AssertionError(f"the SDK's driver asked: {params}")

    async with launch(make_plugins("hostile")) as server, server.connect(by_hand, extensions=[TasksExtension()]) as client:
        handle = await start(client.session, "interview", {}, invocation("task-interview"))
        for message, answer in [
            ("What is your name?", {"action": "accept", "content": {"name": "Ada"}}),
            ("Greet Ada?", {"action": "accept", "content": {"greet": True}}),
        ]:
            with anyio.fail_after(30):
                while True:
                    asked = await wait(client.session, handle.task_id, until=("input_required",))
                    if asked.status != "input_required" or asked.status_message == message:
                        break
                    await anyio.sleep(0.1)
            question = (asked.input_requests or {}).get("question")
            assert question and question["method"] == "elicitation/create", asked
            assert question["params"]["message"] == message, question
            await update(client.session, handle.task_id, {"question": answer})
        state = await wait(client.session, handle.task_id)
        assert state.status == "completed", state
        assert ok(state.call_result()) == {"runs": 1, "name": "Ada", "greet": True, "actions": ["accept", "accept"]}
        await server.wait_for_log(lambda line: "task asks the tool's question" in line, "the question")


async def test_clients_that_do_not_opt_in_get_plain_calls(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo")) as server:
        async with server.connect() as plain:
            assert ok(await plain.call("slow_job", {"ms": 10})) == {"slept_ms": 10}
            # Without the extension declared, `tasks/*` are refused (-32021).
            with pytest.raises(MCPError):
                await get(plain.session, "0" * 32)
        async with server.connect(extensions=[TasksExtension()]) as client:
            # A tool that is not long-running is a plain call even for a client that opts in.
            result = await client.session.call_tool("echo", {"message": "now"}, allow_claimed=True)
            assert ok(result)["message"] == "now"


async def test_tasks_can_be_turned_off(launch: Launch, make_plugins: PluginsFactory) -> None:
    config = "[serve]\ntasks = false\n"
    async with (
        launch(make_plugins("echo"), config=config) as server,
        server.connect(extensions=[TasksExtension()]) as client,
    ):
        assert "io.modelcontextprotocol/tasks" not in (client.capabilities.extensions or {})
        result = await client.session.call_tool("slow_job", {"ms": 10}, allow_claimed=True)
        assert ok(result) == {"slept_ms": 10}
        with pytest.raises(MCPError) as refused:
            await get(client.session, "0" * 32)
        assert refused.value.code == -32601, refused.value


async def test_unknown_task_ids_are_errors(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo")) as server, server.connect(extensions=[TasksExtension()]) as client:
        for request in (
            get(client.session, "0" * 32),
            cancel(client.session, "0" * 32),
            update(client.session, "0" * 32, {"approval": ACCEPT}),
        ):
            with pytest.raises(MCPError) as unknown:
                await request
            assert "unknown task" in unknown.value.error.message, unknown.value


async def test_a_task_is_unknown_to_another_principal(launch_http: Launch, make_plugins: PluginsFactory) -> None:
    """Over HTTP a task belongs to the `Authorization` its call carried (this server
    checks no token, so any value will do)."""
    async with (
        launch_http(make_plugins("echo")) as server,
        server.connect(headers={"Authorization": "Bearer alice"}, extensions=[TasksExtension()]) as alice,
        server.connect(headers={"Authorization": "Bearer bob"}, extensions=[TasksExtension()]) as bob,
    ):
        handle = await start(alice.session, "slow_job", {"ms": 2000})
        for request in (get(bob.session, handle.task_id), cancel(bob.session, handle.task_id)):
            with pytest.raises(MCPError) as unknown:
                await request
            assert "unknown task" in unknown.value.error.message, unknown.value
        assert (await wait(alice.session, handle.task_id)).status == "completed"
