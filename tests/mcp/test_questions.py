"""A tool that asks its user, on MCP 2026-07-28 only, over stdio and HTTP: the call
stops at the question and answers `InputRequiredResult`; the client's retry carries the
answer and the sealed state, and the server re-runs the call from its start with every
answer so far replayed. Driven by hand (to check what the SDK's driver never sends:
tampered states, changed arguments, a missing answer, one that does not fit the form,
a question that changed) and by the SDK's own driver. The test tools are the hostile
plugin's `interview` (two questions; counts its runs in invocation state, so a re-run
shows), `shifty` (a question whose words change every run) and `pester` (ten questions)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import types

from conftest import MODERN, Client, Launch, PluginsFactory
from scenarios import error, ok

pytestmark = pytest.mark.anyio

INVOCATION = "dev.toolhost/invocation"
APPROVE = types.ElicitResult(action="accept", content={"approve": True})


def accept(**content: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content=content)


async def by_hand(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Declares form elicitation; the tests that pass it answer by hand, so it is never called."""
    raise AssertionError(f"the SDK's driver asked: {params}")


@pytest.fixture
def protocol() -> str:
    return MODERN


@pytest.fixture(params=["stdio", "http"])
def launch(request: pytest.FixtureRequest, launch_stdio: Launch, launch_http: Launch) -> Launch:
    return launch_stdio if request.param == "stdio" else launch_http


async def call(
    client: Client,
    tool: str,
    args: dict[str, Any] | None = None,
    *,
    state: str | None = None,
    answer: types.ElicitResult | None = None,
    key: str = "question",
    invocation: str | None = None,
) -> types.CallToolResult | types.InputRequiredResult:
    """One `tools/call`, with the answer under `inputResponses.KEY` and the echoed state."""
    responses = None if answer is None else {key: answer}
    meta = None if invocation is None else {INVOCATION: invocation}
    with anyio.fail_after(30):
        return await client.session.call_tool(
            tool, args or {}, input_responses=responses, request_state=state, meta=meta, allow_input_required=True
        )


def question(asked: Any, key: str = "question") -> types.ElicitRequestFormParams:
    """The form an `InputRequiredResult` asks under `key`."""
    assert isinstance(asked, types.InputRequiredResult), asked
    assert asked.request_state and asked.input_requests, asked
    assert list(asked.input_requests) == [key], asked.input_requests
    request = asked.input_requests[key]
    assert isinstance(request, types.ElicitRequest), request
    params = request.params
    assert isinstance(params, types.ElicitRequestFormParams), params
    return params


def done(result: Any) -> Any:
    assert isinstance(result, types.CallToolResult), result
    return ok(result)


def refused(result: Any) -> str:
    assert isinstance(result, types.CallToolResult), result
    return error(result)


async def test_a_question_is_asked_by_a_retry_and_the_call_re_run_with_every_answer(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    async with launch(make_plugins("hostile")) as server, server.connect(by_hand) as client:
        runs = "interview-runs"
        first = await call(client, "interview", invocation=runs)
        form = question(first)
        assert form.message == "What is your name?", form
        assert form.requested_schema["properties"]["name"]["type"] == "string", form
        assert form.requested_schema["required"] == ["name"], form

        second = await call(
            client, "interview", state=first.request_state, answer=accept(name="Ada"), invocation=runs
        )
        # The first answer was replayed to the re-run: the second question depends on it.
        assert question(second).message == "Greet Ada?", second
        result = await call(client, "interview", state=second.request_state, answer=accept(greet=True), invocation=runs)
        # Three runs: what a tool does before its questions is done again on each retry.
        assert done(result) == {"runs": 3, "name": "Ada", "greet": True, "actions": ["accept", "accept"]}
        await server.wait_for_log(lambda line: "asked the client the tool's question" in line, "the question")

        # Declined, then cancelled: the tool hears each and decides.
        first = await call(client, "interview")
        assert done(await call(client, "interview", state=first.request_state, answer=types.ElicitResult(action="decline"))) == {
            "runs": 1,
            "actions": ["decline"],
        }
        second = await call(client, "interview", state=first.request_state, answer=accept(name="Bo"))
        assert question(second).message == "Greet Bo?", second
        cancelled = await call(client, "interview", state=second.request_state, answer=types.ElicitResult(action="cancel"))
        assert done(cancelled) == {"runs": 1, "name": "Bo", "greet": None, "actions": ["accept", "cancel"]}


async def test_the_sdk_driver_answers_the_questions(launch: Launch, make_plugins: PluginsFactory) -> None:
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        if params.message == "What is your name?":
            return accept(name="Grace")
        return accept(greet=False)

    async with launch(make_plugins("hostile")) as server, server.connect(answer) as client:
        assert client.mcp is not None
        with anyio.fail_after(60):
            result = await client.mcp.call_tool("interview", {})
        assert ok(result) == {"runs": 1, "name": "Grace", "greet": False, "actions": ["accept", "accept"]}
        assert asked == ["What is your name?", "Greet Grace?"], asked


        # Ten questions: eight are asked (eight rounds), the rest are refused to the tool.
        async def yes(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            asked.append(params.message)
            return accept(ok=True)

        asked.clear()
        async with server.connect(yes) as pestered_client:
            assert pestered_client.mcp is not None
            with anyio.fail_after(60):
                result = await pestered_client.mcp.call_tool("pester", {})
        pestered = ok(result)
        assert pestered["answered"] == 8, pestered
        assert "too many questions" in pestered["last_error"], pestered
        assert asked == [f"Question {i}?" for i in range(8)], asked


async def test_answers_that_do_not_belong_are_refused(launch: Launch, make_plugins: PluginsFactory) -> None:
    plugins = make_plugins("hostile", "mcp_conformance")
    async with launch(plugins) as server, server.connect(by_hand) as client:
        first = await call(client, "interview")
        state = first.request_state
        assert state is not None

        # An answer that does not fit the form: nothing is given to the tool.
        text = refused(await call(client, "interview", state=state, answer=accept(name=5)))
        assert "`interview` stopped at its question" in text and "does not fit its form" in text, text
        # No answer, or one under another key.
        text = refused(await call(client, "interview", state=state))
        assert "no answer to the tool's question" in text, text
        text = refused(await call(client, "interview", state=state, answer=accept(name="x"), key="approval"))
        assert "no answer to the tool's question" in text, text
        # A tampered state.
        middle = len(state) // 2
        forged = state[:middle] + ("B" if state[middle] == "A" else "A") + state[middle + 1 :]
        text = refused(await call(client, "interview", state=forged, answer=accept(name="x")))
        assert "not made by this server" in text, text
        # A state for another tool.
        text = refused(await call(client, "pester", state=state, answer=accept(ok=True)))
        assert "is for `interview`" in text, text
        # The state was not used up by those: answered properly, the call goes on.
        assert question(await call(client, "interview", state=state, answer=accept(name="x"))).message == "Greet x?"

        # Changed arguments.
        asked = await call(client, "test_elicitation", {"message": "Who?"})
        assert question(asked).message == "Who?"
        text = refused(
            await call(client, "test_elicitation", {"message": "Other?"}, state=asked.request_state, answer=accept())
        )
        assert "arguments changed" in text, text
        answered = await call(
            client,
            "test_elicitation",
            {"message": "Who?"},
            state=asked.request_state,
            answer=accept(username="ada", email="ada@example.com"),
        )
        assert isinstance(answered, types.CallToolResult) and not answered.is_error, answered
        assert "ada@example.com" in answered.content[0].text, answered

        # A question that is not the one answered: the tool asks something else on the re-run.
        asked = await call(client, "shifty")
        text = refused(await call(client, "shifty", state=asked.request_state, answer=accept(ok=True)))
        assert "question 1 is not the one that was answered" in text, text


async def test_a_late_answer_is_refused(launch: Launch, make_plugins: PluginsFactory) -> None:
    config = "[serve]\napproval_ttl_secs = 1\n"
    async with launch(make_plugins("hostile"), config=config) as server, server.connect(by_hand) as client:
        asked = await call(client, "interview")
        await anyio.sleep(2.5)  # past the one-second lifetime of the question
        text = refused(await call(client, "interview", state=asked.request_state, answer=accept(name="x")))
        assert "expired" in text, text


async def test_an_approval_is_asked_first_and_kept_through_the_questions(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    config = '[confirm]\ntools = ["interview"]\n'
    async with launch(make_plugins("hostile"), config=config) as server, server.connect(by_hand) as client:
        runs = "approved-runs"
        asked = await call(client, "interview", invocation=runs)
        assert "interview" in question(asked, "approval").message
        # Approved: the tool runs (its first run) and asks; the approval is not asked again.
        first = await call(client, "interview", state=asked.request_state, answer=APPROVE, key="approval", invocation=runs)
        assert question(first).message == "What is your name?"
        second = await call(client, "interview", state=first.request_state, answer=accept(name="Ada"), invocation=runs)
        assert question(second).message == "Greet Ada?"
        result = await call(client, "interview", state=second.request_state, answer=accept(greet=True), invocation=runs)
        assert done(result) == {"runs": 3, "name": "Ada", "greet": True, "actions": ["accept", "accept"]}
        # One approval, one run per round: replaying a round's state or the approval is refused.
        text = refused(await call(client, "interview", state=second.request_state, answer=accept(greet=True)))
        assert "already decided" in text, text
        text = refused(await call(client, "interview", state=first.request_state, answer=accept(name="Eve")))
        assert "already decided" in text, text
        text = refused(await call(client, "interview", state=asked.request_state, answer=APPROVE, key="approval"))
        assert "already decided" in text, text

        # Declined: it never runs, and nothing is asked.
        asked = await call(client, "interview")
        text = refused(
            await call(
                client, "interview", state=asked.request_state, answer=types.ElicitResult(action="decline"), key="approval"
            )
        )
        assert text == "`interview` was not run: the user declined it", text

    # The SDK's driver answers the approval and the questions in one call.
    seen: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params.message)
        if "approve" in params.requested_schema.get("properties", {}):
            return APPROVE
        if params.message == "What is your name?":
            return accept(name="Lin")
        return accept(greet=True)

    async with launch(make_plugins("hostile"), config=config) as server, server.connect(answer) as client:
        assert client.mcp is not None
        with anyio.fail_after(60):
            result = await client.mcp.call_tool("interview", {})
        assert ok(result) == {"runs": 1, "name": "Lin", "greet": True, "actions": ["accept", "accept"]}
        assert len(seen) == 3 and seen[1:] == ["What is your name?", "Greet Lin?"], seen


async def test_a_client_that_cannot_be_asked_leaves_the_tool_to_decide(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    async with launch(make_plugins("mcp_conformance")) as server, server.connect() as client:
        result = await call(client, "test_elicitation", {"message": "Who?"})
        text = refused(result)
        assert "could not ask the user" in text and "nobody can be asked" in text, text
