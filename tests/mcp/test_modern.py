"""MCP 2026-07-28 only, over stdio and HTTP: approvals as Multi Round-Trip
Requests, driven by hand to check what the SDK's driver never sends (replays,
changed arguments, a forged state, a late or missing answer), and approvals
answered to another server holding the same keys."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import types

from conftest import MODERN, Client, Launch, PluginsFactory
from scenarios import CONFIRM_ECHO, REFUSED, error, ok

pytestmark = pytest.mark.anyio

#: A key ring (`KEY_ID SECRET` per line) shared by the servers of a test.
KEYS = "k1 " + "a1" * 20 + "\n"
APPROVE = types.ElicitResult(action="accept", content={"approve": True})


async def by_hand(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Declares form elicitation; these tests answer by hand, so it is never called."""
    raise AssertionError(f"the SDK's driver asked: {params}")


@pytest.fixture
def protocol() -> str:
    return MODERN


@pytest.fixture(params=["stdio", "http"])
def launch(request: pytest.FixtureRequest, launch_stdio: Launch, launch_http: Launch) -> Launch:
    return launch_stdio if request.param == "stdio" else launch_http


async def ask(client: Client, tool: str, args: dict[str, Any]) -> types.InputRequiredResult:
    """Calls a tool that needs approval; returns the question."""
    with anyio.fail_after(30):
        asked = await client.session.call_tool(tool, args, allow_input_required=True)
    assert isinstance(asked, types.InputRequiredResult), asked
    return asked


async def answer(
    client: Client, tool: str, args: dict[str, Any], state: str | None, response: types.ElicitResult | None = APPROVE
) -> types.CallToolResult:
    """Retries the call with the answer and the echoed state."""
    responses = None if response is None else {"approval": response}
    with anyio.fail_after(30):
        result = await client.session.call_tool(
            tool, args, input_responses=responses, request_state=state, allow_input_required=True
        )
    assert isinstance(result, types.CallToolResult), result
    return result


async def test_an_approval_runs_the_call_once_with_the_arguments_asked(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    async with launch(make_plugins("echo"), config=CONFIRM_ECHO) as server, server.connect(by_hand) as client:
        args = {"message": "go"}
        asked = await ask(client, "echo", args)
        assert asked.request_state and asked.input_requests, asked
        question = asked.input_requests["approval"]
        assert isinstance(question, types.ElicitRequest), question
        params = question.params
        assert isinstance(params, types.ElicitRequestFormParams), params
        assert "echo" in params.message and '"message":"go"' in params.message, params.message
        assert params.requested_schema["properties"]["approve"]["type"] == "boolean"

        assert ok(await answer(client, "echo", args, asked.request_state))["message"] == "go"
        # A replay of the same answer is refused: approvals are single use.
        text = error(await answer(client, "echo", args, asked.request_state))
        assert "already decided" in text, text
        await server.wait_for_log(lambda line: "approval refused" in line or "already decided" in line, "refusal")

        # Changed arguments, a forged state, no answer: refused, nothing runs.
        asked = await ask(client, "echo", args)
        text = error(await answer(client, "echo", {"message": "other"}, asked.request_state))
        assert "arguments changed" in text, text
        state = asked.request_state
        assert state is not None
        middle = len(state) // 2
        forged = state[:middle] + ("B" if state[middle] == "A" else "A") + state[middle + 1 :]
        text = error(await answer(client, "echo", args, forged))
        assert "not made by this server" in text, text
        text = error(await answer(client, "echo", args, state, response=None))
        assert "no answer" in text, text
        # The approval itself was never used by those: it still runs, once.
        assert ok(await answer(client, "echo", args, state))["message"] == "go"

        # Declined: refused, and that decision is final too.
        asked = await ask(client, "echo", args)
        text = error(await answer(client, "echo", args, asked.request_state, types.ElicitResult(action="decline")))
        assert REFUSED.search(text), text
        # A decision, not a crash: no "host error:", no call ID.
        assert text == "`echo` was not run: the user declined it", text
        text = error(await answer(client, "echo", args, asked.request_state))
        assert "already decided" in text, text


async def test_an_approval_may_be_answered_to_another_server_with_the_same_keys_and_store(
    launch: Launch, make_plugins: PluginsFactory, redis_url: str
) -> None:
    """Servers with the same keys and state store (replicas) answer each other's
    approvals, once; one with other keys cannot open the state, and one with the
    same keys but a store of its own refuses it: it could not record the
    approval's use where the others look (it would run once on each)."""
    plugins = make_plugins("echo")
    shared = CONFIRM_ECHO + f'\n[state]\nurl = "{redis_url}"\n'
    env = {"TOOLHOST_STATE_KEYS": KEYS}
    other_keys = {"TOOLHOST_STATE_KEYS": "k2 " + "b2" * 20}
    async with (
        launch(plugins, config=shared, env=env) as first,
        launch(plugins, config=shared, env=env) as second,
        launch(plugins, config=CONFIRM_ECHO, env=env) as alone,
        launch(plugins, config=CONFIRM_ECHO, env=other_keys) as stranger,
        first.connect(by_hand) as one,
        second.connect(by_hand) as two,
        alone.connect(by_hand) as own_store,
        stranger.connect(by_hand) as three,
    ):
        args = {"message": "across"}
        asked = await ask(one, "echo", args)
        text = error(await answer(three, "echo", args, asked.request_state))
        assert "key this server does not hold" in text, text
        text = error(await answer(own_store, "echo", args, asked.request_state))
        assert "could not record its use" in text and "[state] url" in text, text
        assert ok(await answer(two, "echo", args, asked.request_state))["message"] == "across"
        text = error(await answer(one, "echo", args, asked.request_state))
        assert "already decided" in text, text


async def test_a_late_answer_is_refused(launch: Launch, make_plugins: PluginsFactory) -> None:
    config = CONFIRM_ECHO + "\n[serve]\napproval_ttl_secs = 1\n"
    async with launch(make_plugins("echo"), config=config) as server, server.connect(by_hand) as client:
        args = {"message": "late"}
        asked = await ask(client, "echo", args)
        await anyio.sleep(2.5)  # past the one-second lifetime of the question
        text = error(await answer(client, "echo", args, asked.request_state))
        assert "expired" in text, text
        # Asked again, answered in time: it runs.
        asked = await ask(client, "echo", args)
        assert ok(await answer(client, "echo", args, asked.request_state))["message"] == "late"


async def test_a_bad_key_ring_stops_the_server_at_start(launch_stdio: Launch, make_plugins: PluginsFactory) -> None:
    async with launch_stdio(make_plugins("echo"), env={"TOOLHOST_STATE_KEYS": "k1 short"}) as server:
        with pytest.raises(Exception):
            async with server.connect():
                pass
        assert "TOOLHOST_STATE_KEYS" in server.stderr() and "at least 32" in server.stderr(), server.stderr()


async def test_approvals_that_outlive_their_single_use_record_are_refused_at_start(
    launch_stdio: Launch, make_plugins: PluginsFactory
) -> None:
    """A used approval is remembered for `[state] ttl_secs`; a question allowed to
    live longer could be replayed after that, so the server does not start."""
    config = "[serve]\napproval_ttl_secs = 7200\n\n[state]\nttl_secs = 3600\n"
    async with launch_stdio(make_plugins("echo"), config=config) as server:
        with pytest.raises(Exception):
            async with server.connect():
                pass
        assert "approval_ttl_secs (7200 s) is longer than [state] ttl_secs (3600 s)" in server.stderr(), server.stderr()

