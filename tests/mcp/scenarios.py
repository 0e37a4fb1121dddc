"""Scenarios that every transport runs: `test_stdio.py` and `test_http.py` import
all of them (`from scenarios import *`) and each provides the `launch` fixture
that starts `toolhost serve` over its transport. pytest collects the imported
`test_*` functions once per importing module, so each scenario appears as
`test_stdio.py::NAME` and `test_http.py::NAME`.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPError, types

from conftest import (
    ALL_PLUGINS,
    LEGACY,
    MODERN,
    CALL_S,
    TOOL_NAME,
    Client,
    Launch,
    PluginsFactory,
    Server,
    put_plugin,
)

pytestmark = pytest.mark.anyio

LONG_RUNNING_NOTE = (
    "NOTE: This is a long-running operation. Do not call this tool again if it has "
    "already returned some intermediate or pending status."
)

#: The tools of each guest, by plugin (all names are unique across these plugins).
TOOLS = {
    "echo": {
        "echo", "add", "order", "flag", "pixel", "remember", "whoami", "long_job", "slow_job", "fail", "countdown"
    },
    "hostile": {
        "ok", "spin", "busy_wait", "sleep_forever", "hog", "recurse", "panic", "huge", "snoop", "pester", "interview",
        "shifty",
    },
    "text": {"word_count", "regex_find", "regex_replace", "split_lines"},
    "calc": {"evaluate", "convert_units"},
    "codec": {"hash", "base64", "qr_code", "batch_digest"},
    "json": {"json_query"},
}

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

#: Words a refused confirmation's message uses.
REFUSED = re.compile(r"was not run", re.IGNORECASE)


# --- helpers -------------------------------------------------------------------------


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def ok(result: types.CallToolResult) -> Any:
    """Asserts a successful JSON result: `structuredContent` plus a text block holding
    the same JSON. Returns the structured content."""
    assert not result.is_error, f"unexpected error result: {texts(result)}"
    structured = result.structured_content
    assert isinstance(structured, dict), f"no structuredContent object: {result!r}"
    parsed = []
    for text in texts(result):
        try:
            parsed.append(json.loads(text))
        except ValueError:
            pass
    assert structured in parsed, f"no text block serializes {structured!r}: {texts(result)!r}"
    return structured


def error(result: types.CallToolResult) -> str:
    """Asserts an `isError` result; returns its text."""
    assert result.is_error, f"expected an error result, got {result!r}"
    text = "\n".join(texts(result))
    assert text, f"an error result without a message: {result!r}"
    return text


def progress_recorder() -> tuple[list[tuple[float, str | None]], Any]:
    """A progress callback and the (progress, message) pairs it records."""
    seen: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, message))

    return seen, on_progress


async def expect_unknown(client: Client, name: str) -> None:
    with pytest.raises(MCPError) as caught:
        await client.call(name, {})
    assert caught.value.code == -32602, caught.value


async def expect_tools(client: Client, seen: int, wanted: Any, what: str) -> int:
    """Waits for list_changed notifications until tools/list satisfies `wanted`; each
    re-check is triggered by a notification. Returns the notification count."""
    tools: dict[str, types.Tool] = {}
    with anyio.move_on_after(2 * CALL_S):
        while True:
            seen = await client.wait_list_changed(seen)
            tools = await client.tools()
            if wanted(tools):
                return seen
    raise AssertionError(f"{client.label}: after list_changed, {what} never held; tools: {sorted(tools)}")


# --- handshake and listing -----------------------------------------------------------


async def test_initialize_advertises_tools_with_list_changed(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo")) as server, server.connect() as client:
        capabilities = client.capabilities
        assert capabilities.tools is not None, capabilities
        assert capabilities.tools.list_changed is True, capabilities.tools
        assert client.server_info.name, client.server_info
        assert client.session.protocol_version == client.protocol
        if client.protocol == LEGACY:  # 2026-07-28 has no ping: every request is its own check
            with anyio.fail_after(CALL_S):
                await client.session.send_ping()


async def test_lists_every_plugins_tools_as_declared(
    launch: Launch, make_plugins: PluginsFactory, describe: Any
) -> None:
    plugins = make_plugins(*ALL_PLUGINS)
    async with launch(plugins) as server, server.connect() as client:
        tools = await client.tools()
    assert set(tools) == set().union(*TOOLS.values())
    for name, tool in tools.items():
        assert TOOL_NAME.match(name), name
        assert tool.description, name
        assert tool.input_schema.get("type") == "object", (name, tool.input_schema)
    # The listing matches `toolhost describe`: description (with the long-running
    # note), input schema as declared, output schema when one is declared.
    for name in ("echo", "add", "countdown", "long_job", "evaluate", "hash", "batch_digest", "json_query"):
        declared = describe(plugins, name)
        tool = tools[name]
        assert tool.description == declared["description"], name
        assert tool.input_schema == declared["parameters"], name
        response = declared.get("response")
        if response is None:
            assert tool.output_schema is None, (name, tool.output_schema)
        elif response.get("type") == "object":
            assert tool.output_schema == response, name
        else:
            assert tool.output_schema == {
                "type": "object",
                "properties": {"result": response},
                "required": ["result"],
            }, name
    for name in ("long_job", "slow_job", "batch_digest"):
        assert tools[name].description.endswith(LONG_RUNNING_NOTE), tools[name].description
    assert LONG_RUNNING_NOTE not in (tools["echo"].description or "")


async def test_names_are_mapped_to_the_mcp_alphabet(launch: Launch, make_plugins: PluginsFactory) -> None:
    # Two copies of echo: every tool name clashes, so each is `plugin.tool`,
    # exposed as `plugin_tool`; `echo.x.T` and `echo_x.T` both map to
    # `echo_x_T`, so one of each pair gets the `_2` suffix.
    plugins = make_plugins("echo", renamed={"echo-two": "echo", "echo.x": "echo", "echo_x": "echo"})
    async with launch(plugins) as server, server.connect() as client:
        tools = await client.tools()
        assert len(tools) == 4 * len(TOOLS["echo"]), sorted(tools)
        for name in tools:
            assert TOOL_NAME.match(name), name
        for tool in TOOLS["echo"]:
            assert {f"echo_{tool}", f"echo-two_{tool}", f"echo_x_{tool}", f"echo_x_{tool}_2"} <= set(tools), tool
        # The mapped names and the original (`plugin.tool`) names both call the tool.
        for name in ("echo_echo", "echo.echo", "echo-two_echo", "echo_x_echo", "echo_x_echo_2", "echo.x.echo"):
            assert ok(await client.call(name, {"message": name}))["message"] == name
        assert ok(await client.call("echo_x_add_2", {"a": 1, "b": 2})) == {"result": 3}


async def test_long_names_are_cut_to_64_characters(launch: Launch, make_plugins: PluginsFactory) -> None:
    long = "p" * 70
    plugins = make_plugins("echo", renamed={long: "echo", f"{long}q": "echo"})
    async with launch(plugins) as server, server.connect() as client:
        tools = await client.tools()
        assert len(tools) == 3 * len(TOOLS["echo"]), sorted(tools)
        for name in tools:
            assert TOOL_NAME.match(name), name
        # A cut name still calls its own tool; so does the original name.
        echoes = [
            name
            for name, tool in tools.items()
            if name.startswith("ppp") and tool.description == "Echoes its arguments back as a JSON object."
        ]
        assert len(echoes) == 2, echoes
        for name in [*echoes, f"{long}.echo"]:
            assert ok(await client.call(name, {"message": name}))["message"] == name


NAMES_CONFIG = """
[confirm]
tools = ["add"]
[filter]
deny = ["nosuchtool"]
[aliases.tools]
wc = "word_count"
"""


async def test_names_you_can_rely_on(launch: Launch, make_plugins: PluginsFactory) -> None:
    # `calc` clashes with nothing: listed bare, reachable as `calc.evaluate` too.
    # Two copies of echo clash on every name: bare `add` is ambiguous.
    plugins = make_plugins("echo", "calc", renamed={"echo2": "echo"})
    async with launch(plugins, config=NAMES_CONFIG) as server, server.connect() as client:
        tools = await client.tools()
        assert "evaluate" in tools and "calc_evaluate" not in tools, sorted(tools)
        assert {"echo_add", "echo2_add"} <= set(tools), sorted(tools)
        assert "add" not in tools and "wc" not in tools, sorted(tools)
        for name in ("evaluate", "calc.evaluate"):
            assert ok(await client.call(name, {"expression": "1+2"}))["result"] == 3.0
        # An ambiguous bare name is a protocol error naming the candidates as listed.
        with pytest.raises(MCPError) as caught:
            await client.call("add", {"a": 1, "b": 2})
        assert caught.value.code == -32602, caught.value
        assert "ambiguous" in str(caught.value) and "echo_add, echo2_add" in str(caught.value), caught.value
        # A stale alias: not listed, and calling it says what it points at.
        with pytest.raises(MCPError) as caught:
            await client.call("wc", {"text": "a"})
        assert caught.value.code == -32602, caught.value
        assert "alias of `word_count`" in str(caught.value), caught.value
        # `[confirm] tools = ["add"]` guards both tools, under every name.
        for name in ("echo.add", "echo_add", "echo2.add", "echo2_add"):
            assert "needs confirmation" in error(await client.call(name, {"a": 1, "b": 2})), name
        # Config names that match nothing are warned about once, not per call.
        await server.wait_for_log(lambda line: "`nosuchtool` matches no tool" in line, "the filter warning")
        await server.wait_for_log(lambda line: "`word_count` matches no tool" in line, "the alias warning")
        for _ in range(3):
            ok(await client.call("evaluate", {"expression": "1"}))
        await client.tools()
        log = server.stderr()
        assert log.count("`nosuchtool` matches no tool") == 1, log
        assert log.count("`word_count` matches no tool") == 1, log


# --- calls -----------------------------------------------------------------------------


async def test_calls_a_tool_of_each_plugin(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins(*ALL_PLUGINS)) as server, server.connect() as client:
        args = {"message": "hi", "repeat": 2, "nested": {"label": "l", "tags": ["a", "b"]}}
        assert ok(await client.call("echo", args)) == args
        # A bare number is wrapped as {"result": n}.
        assert ok(await client.call("add", {"a": 2, "b": 3})) == {"result": 5}
        assert ok(await client.call("long_job")) == {"status": "pending"}
        assert ok(await client.call("ok")) == {"ok": True}
        counts = ok(await client.call("word_count", {"text": "one two\nthree"}))
        assert (counts["words"], counts["lines"]) == (3, 2)
        assert ok(await client.call("evaluate", {"expression": "2 * (3 + 4) ^ 2"}))["result"] == 98.0
        digest = ok(await client.call("hash", {"input": "hello", "algorithm": "sha256"}))
        assert digest["hex"] == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        encoded = ok(await client.call("base64", {"operation": "encode", "data": "hi there"}))
        assert encoded["result"] == "aGkgdGhlcmU="
        doc = {"items": [{"name": "a", "price": 3}, {"name": "b", "price": 5}]}
        found = ok(await client.call("json_query", {"document": json.dumps(doc), "path": "items[1].name"}))
        assert (found["found"], found["value"]) == (True, "b")


async def test_image_parts_become_image_content(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo", "codec")) as server, server.connect() as client:
        pixel = await client.call("pixel")
        assert not pixel.is_error, pixel
        assert "a 1x1 red pixel" in texts(pixel)
        images = [b for b in pixel.content if isinstance(b, types.ImageContent)]
        assert len(images) == 1, pixel.content
        assert images[0].mime_type == "image/png"
        png = base64.b64decode(images[0].data)
        assert png.startswith(PNG_SIGNATURE) and len(png) == 70

        qr = await client.call("qr_code", {"text": "https://example.com"})
        info = ok(qr)
        [image] = [b for b in qr.content if isinstance(b, types.ImageContent)]
        assert image.mime_type == "image/png" == info["mime_type"]
        png = base64.b64decode(image.data)
        assert png.startswith(PNG_SIGNATURE) and len(png) == info["png_bytes"]
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        assert width == height == info["size_px"]


async def test_bad_arguments_are_error_results(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo", "calc")) as server, server.connect() as client:
        text = error(await client.call("echo", {"message": 5}))
        assert text.startswith("invalid arguments for `echo`"), text
        assert "/message" in text, text
        text = error(await client.call("echo", {}))
        assert text.startswith("invalid arguments for `echo`") and "message" in text, text
        text = error(await client.call("order", {"item": "tea", "quantity": 0, "size": "small"}))
        assert text.startswith("invalid arguments for `order`") and "/quantity" in text, text
        text = error(await client.call("order", {"item": "tea", "quantity": 1, "size": "huge"}))
        assert text.startswith("invalid arguments for `order`") and "/size" in text, text
        # A misspelt key: its path, and the key it meant.
        text = error(await client.call("evaluate", {"expresion": "1 + 1"}))
        assert '/expresion: unexpected property; did you mean "expression"?' in text, text
        # The tool itself rejects arguments the schema allows.
        text = error(await client.call("evaluate", {"expression": "1 / 0"}))
        assert "division by zero" in text, text
        # The session is fine afterwards.
        assert ok(await client.call("add", {"a": 1, "b": 1})) == {"result": 2}


async def test_tool_failures_are_error_results(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo", "hostile")) as server, server.connect() as client:
        text = error(await client.call("fail"))
        assert "tool `fail` failed" in text and "this tool always fails" in text, text
        text = error(await client.call("panic"))
        assert "panicked" in text, text
        error(await client.call("recurse"))  # a trap (stack overflow)
        assert ok(await client.call("ok")) == {"ok": True}


async def test_unknown_tool_is_a_protocol_error(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo")) as server, server.connect() as client:
        await expect_unknown(client, "no_such_tool")
        await expect_unknown(client, "echo.no_such_tool")
        assert ok(await client.call("echo", {"message": "still here"}))["message"] == "still here"


async def test_deadline_hit_is_an_error_result(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("hostile"), flags=["--timeout-ms", "1000"]) as server, server.connect() as client:
        text = error(await client.call("spin"))
        assert "ran out of" in text, text
        text = error(await client.call("sleep_forever"))
        assert "ran out of time" in text, text
        assert ok(await client.call("ok")) == {"ok": True}


async def test_fuel_limit_hit_is_an_error_result(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("hostile"), flags=["--fuel", "10000000"]) as server, server.connect() as client:
        text = error(await client.call("spin"))
        assert "ran out of fuel" in text, text
        assert ok(await client.call("ok")) == {"ok": True}


# --- streams and cancellation ---------------------------------------------------------


async def assert_progress_covers(progress: list[tuple[float, str | None]], chunks: int, whole: str) -> None:
    """Progress notifications count up to the number of chunks, and their
    messages together are the whole output (chunks may be merged)."""
    # The SDK may run the last progress callback after handing over the result.
    with anyio.move_on_after(CALL_S):
        while not progress or progress[-1][0] < chunks:
            await anyio.sleep(0.01)
    values = [value for value, _ in progress]
    assert values and values == sorted(set(values)) and values[-1] == chunks, values
    assert "".join(message or "" for _, message in progress) == whole, progress


async def test_stream_reports_progress(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo", "text")) as server, server.connect() as client:
        for tool, args, chunks in [
            ("countdown", {"from": 5}, ["5\n", "4\n", "3\n", "2\n", "1\n", "0\n"]),
            ("split_lines", {"text": "a\nb\nc"}, ["a\n", "b\n", "c\n"]),
        ]:
            progress, on_progress = progress_recorder()
            result = await client.call(tool, args, progress_callback=on_progress)
            assert not result.is_error, texts(result)
            whole = "".join(chunks)
            assert result.structured_content == {"result": whole}, result
            assert whole in texts(result), texts(result)
            await assert_progress_covers(progress, len(chunks), whole)

        # Without a progress token the stream is still collected into one result.
        result = await client.call("countdown", {"from": 2})
        assert result.structured_content == {"result": "2\n1\n0\n"}, result


async def test_stream_reports_progress_per_chunk_when_asked(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo"), config="[serve]\nprogress_interval_ms = 0\n") as server, server.connect() as client:
        progress, on_progress = progress_recorder()
        result = await client.call("countdown", {"from": 5}, progress_callback=on_progress)
        assert result.structured_content == {"result": "5\n4\n3\n2\n1\n0\n"}, result
        await assert_progress_covers(progress, 6, "5\n4\n3\n2\n1\n0\n")
        assert progress == [(i + 1, f"{5 - i}\n") for i in range(6)], progress


async def test_guest_log_messages_reach_a_client_that_set_a_level(launch: Launch, make_plugins: PluginsFactory) -> None:
    """`logging/setLevel` (2025-11-25): what a called guest logs at or above the level
    the client set becomes `notifications/message`, named by the tool; nothing before
    a level is set. 2026-07-28 deprecates logging and keeps no session: no setLevel."""
    async with launch(make_plugins("echo")) as server, server.connect() as client:

        def logs() -> list[types.LoggingMessageNotification]:
            return [n for n in client.notifications if isinstance(n, types.LoggingMessageNotification)]

        if client.protocol == MODERN:
            with pytest.raises(MCPError) as caught, anyio.fail_after(CALL_S):
                await client.session.set_logging_level("info")
            assert caught.value.code == -32601, caught.value
            return
        assert client.capabilities.logging is not None, client.capabilities
        # `whoami` logs "whoami called" at info: not sent before a level is set, nor below it.
        for level in [None, "warning"]:
            if level:
                with anyio.fail_after(CALL_S):
                    await client.session.set_logging_level(level)
            assert not (await client.call("whoami")).is_error
            await anyio.sleep(0.3)
            assert logs() == [], (level, logs())
        with anyio.fail_after(CALL_S):
            await client.session.set_logging_level("info")
        assert not (await client.call("whoami")).is_error
        with anyio.fail_after(CALL_S):
            while not logs():
                await anyio.sleep(0.05)
        (message,) = logs()
        assert message.params.level == "info", message
        assert message.params.logger == "whoami", message
        assert message.params.data == "whoami called", message


async def test_result_text_off_sends_each_json_result_once(launch: Launch, make_plugins: PluginsFactory) -> None:
    """`[serve] result_text = false`: a JSON result goes out as `structuredContent`
    alone, without the text block that repeats it; streamed text is still text.
    By default both are sent, as the specification asks."""
    async with launch(make_plugins("echo"), config="[serve]\nresult_text = false\n") as server, server.connect() as client:
        result = await client.call("add", {"a": 1, "b": 2})
        assert not result.is_error, texts(result)
        assert result.structured_content == {"result": 3}, result
        assert texts(result) == [], result
        result = await client.call("countdown", {"from": 2})
        assert result.structured_content == {"result": "2\n1\n0\n"}, result
        assert texts(result) == ["2\n1\n0\n"], result
    async with launch(make_plugins("echo")) as server, server.connect() as client:
        assert ok(await client.call("add", {"a": 1, "b": 2})) == {"result": 3}


async def test_progress_of_a_chatty_stream_is_coalesced(launch: Launch, make_plugins: PluginsFactory) -> None:
    """A stream of many tiny chunks does not become as many notifications: they
    are merged (at most one per 100 ms by default), and nothing is lost."""
    chunks = 5_000
    # Room for any per-chunk overhead the output cap counts.
    flags = ["--max-output", str(64 << 20)]
    async with launch(make_plugins("chatty"), flags=flags) as server, server.connect() as client:
        progress, on_progress = progress_recorder()
        result = await client.call("chatter", {"chunks": chunks}, progress_callback=on_progress)
        assert not result.is_error, texts(result)
        assert result.structured_content == {"result": "x" * chunks}
        await assert_progress_covers(progress, chunks, "x" * chunks)
        assert len(progress) < chunks // 10, f"{len(progress)} progress notifications for {chunks} chunks"


@pytest.mark.parametrize("tool", ["sleep_forever", "spin"])
async def test_cancelling_a_call_stops_the_guest(launch: Launch, make_plugins: PluginsFactory, tool: str) -> None:
    # Limits far away: only the cancellation can end these calls.
    flags = ["--timeout-ms", "3600000", "--fuel", "10000000000000000"]
    async with launch(make_plugins("hostile"), flags=flags) as server, server.connect() as client:
        assert ok(await client.call("ok")) == {"ok": True}  # loaded and compiled
        with anyio.move_on_after(2) as scope:
            result = await client.session.call_tool(tool, {})
        assert scope.cancelled_caught, f"`{tool}` returned instead of running on: {result!r}"
        await server.wait_for_log(
            lambda line: "cancelled" in line.lower() and tool in line, f"`cancelled` log line for `{tool}`"
        )
        # Stopped means stopped: a guest still spinning would burn about a core.
        before = server.cpu_seconds()
        await anyio.sleep(2)
        used = server.cpu_seconds() - before
        assert used < 0.5, f"the server used {used:.2f} s of CPU in the 2 s after the cancellation"
        assert ok(await client.call("ok")) == {"ok": True}


# --- confirmation -----------------------------------------------------------------------

CONFIRM_ECHO = '[confirm]\ntools = ["echo"]\n'


async def test_confirmation_by_elicitation(launch: Launch, make_plugins: PluginsFactory) -> None:
    asked: list[types.ElicitRequestParams] = []
    answers: list[types.ElicitResult] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return answers.pop(0)

    async with launch(make_plugins("echo"), config=CONFIRM_ECHO) as server, server.connect(on_elicit) as client:
        # Approved: the tool runs.
        answers.append(types.ElicitResult(action="accept", content={"approve": True}))
        assert ok(await client.call("echo", {"message": "go"}))["message"] == "go"
        assert len(asked) == 1
        params = asked[0]
        assert isinstance(params, types.ElicitRequestFormParams), params
        schema = params.requested_schema
        assert schema["properties"]["approve"]["type"] == "boolean", schema
        assert "approve" in schema.get("required", []), schema
        assert "echo" in params.message, params.message

        # Declined, cancelled, or accepted with approve = false: an error result
        # that reads as the decision it is (no "host error:", no call ID).
        for answer, why in [
            (types.ElicitResult(action="decline"), "the user declined it"),
            (types.ElicitResult(action="cancel"), "the user cancelled the approval"),
            (types.ElicitResult(action="accept", content={"approve": False}), "the user did not approve it"),
        ]:
            answers.append(answer)
            text = error(await client.call("echo", {"message": "no"}))
            assert text == f"`echo` was not run: {why}", (answer, text)
            assert REFUSED.search(text) and "host error" not in text and "call `" not in text, text
        assert len(asked) == 4 and not answers

        # Tools that need no confirmation do not ask.
        assert ok(await client.call("add", {"a": 1, "b": 2})) == {"result": 3}
        assert len(asked) == 4


async def test_confirm_gated_tools_are_marked_in_the_listing(launch: Launch, make_plugins: PluginsFactory) -> None:
    # A framework can route a gated tool to its own approval step before calling it.
    async with launch(make_plugins("echo"), config=CONFIRM_ECHO) as server, server.connect() as client:
        tools = await client.tools()
    echo = tools["echo"]
    assert echo.meta == {"dev.toolhost/confirm": True}, echo
    assert echo.annotations is not None and echo.annotations.destructive_hint is True, echo
    assert echo.annotations.read_only_hint is None, echo
    for name, tool in tools.items():
        if name != "echo":
            assert tool.meta is None and tool.annotations is None, tool


async def test_a_gated_read_only_tool_is_not_also_listed_destructive(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    # destructiveHint means something only when readOnlyHint is false (MCP): never both.
    config = '[confirm]\ntools = ["evaluate"]\n'
    async with launch(make_plugins("calc"), config=config) as server, server.connect() as client:
        tools = await client.tools()
    evaluate = tools["evaluate"]
    assert evaluate.meta == {"dev.toolhost/confirm": True}, evaluate
    assert evaluate.annotations is not None and evaluate.annotations.read_only_hint is True, evaluate
    assert evaluate.annotations.destructive_hint is None, evaluate


async def test_confirmation_without_elicitation_support(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("echo"), config=CONFIRM_ECHO) as server, server.connect() as client:
        assert client.capabilities is not None
        text = error(await client.call("echo", {"message": "go"}))
        assert "needs confirmation" in text, text
        assert ok(await client.call("add", {"a": 1, "b": 2})) == {"result": 3}


# --- hot reload ---------------------------------------------------------------------------


async def test_list_changed_when_plugin_files_change(
    launch: Launch, make_plugins: PluginsFactory, guests_dir: Path
) -> None:
    plugins = make_plugins("echo")
    async with launch(plugins) as server, server.connect() as first, server.connect() as second:
        clients = [first, second]
        seen = [0, 0]
        for client in clients:
            assert set(await client.tools()) == TOOLS["echo"]
        # Not plugins: were either loaded, echo's tools would clash and lose their bare names.
        shutil.copyfile(guests_dir / "echo.wasm", plugins / "echo.wasm.bak")
        shutil.copyfile(guests_dir / "echo.wasm", plugins / "echo-copy.txt")

        # Added.
        put_plugin(guests_dir, plugins, "hostile")
        for i, client in enumerate(clients):
            seen[i] = await expect_tools(client, seen[i], lambda t: "ok" in t, "`ok` listed")
            assert set(await client.tools()) == TOOLS["echo"] | TOOLS["hostile"]
            assert ok(await client.call("ok")) == {"ok": True}

        # Replaced: echo.wasm now holds the json guest.
        put_plugin(guests_dir, plugins, "json", as_name="echo")
        for i, client in enumerate(clients):
            seen[i] = await expect_tools(
                client, seen[i], lambda t: "json_query" in t and "countdown" not in t, "echo.wasm replaced"
            )
            assert set(await client.tools()) == TOOLS["json"] | TOOLS["hostile"]
            found = ok(await client.call("json_query", {"document": '{"a": 1}', "path": "a"}))
            assert found["value"] == 1

        # Removed.
        (plugins / "hostile.wasm").unlink()
        for i, client in enumerate(clients):
            seen[i] = await expect_tools(client, seen[i], lambda t: "ok" not in t, "`ok` gone")
            assert set(await client.tools()) == TOOLS["json"]
            await expect_unknown(client, "ok")


async def test_config_names_are_checked_again_after_each_reload(
    launch: Launch, make_plugins: PluginsFactory, guests_dir: Path
) -> None:
    plugins = make_plugins("echo")
    stale = "`word_count` matches no tool"

    async def warned(times: int) -> None:
        with anyio.move_on_after(CALL_S):
            while server.stderr().count(stale) < times:
                await anyio.sleep(0.1)
        assert server.stderr().count(stale) == times, server.stderr()

    async with launch(plugins, config='[aliases.tools]\nwc = "word_count"\n') as server, server.connect() as client:
        seen = 0
        await warned(1)
        # Its tool arrives: the alias works, and the log says the name matches again.
        put_plugin(guests_dir, plugins, "text")
        seen = await expect_tools(client, seen, lambda t: "word_count" in t, "text loaded")
        assert ok(await client.call("wc", {"text": "a b"}))["words"] == 2
        await server.wait_for_log(lambda line: "`word_count` matches again" in line, "the alias matching again")
        # Its tool goes: warned again, once; the alias does not resolve.
        (plugins / "text.wasm").unlink()
        seen = await expect_tools(client, seen, lambda t: "word_count" not in t, "text gone")
        await warned(2)
        with pytest.raises(MCPError) as caught:
            await client.call("wc", {"text": "a"})
        assert "alias of `word_count`" in str(caught.value), caught.value
        # Reloads that do not change what matches repeat nothing.
        put_plugin(guests_dir, plugins, "hostile")
        seen = await expect_tools(client, seen, lambda t: "ok" in t, "hostile loaded")
        put_plugin(guests_dir, plugins, "calc")
        seen = await expect_tools(client, seen, lambda t: "evaluate" in t, "calc loaded")
        assert ok(await client.call("ok")) == {"ok": True}
        assert server.stderr().count(stale) == 2, server.stderr()


# --- concurrency ------------------------------------------------------------------------


async def test_many_concurrent_calls(launch: Launch, make_plugins: PluginsFactory) -> None:
    calls_per_session = 10

    async def session_work(server: Server, s: int) -> None:
        async with server.connect() as client:
            failures: list[str] = []

            async def one(i: int) -> None:
                assert ok(await client.call("add", {"a": s * 1000, "b": i})) == {"result": s * 1000 + i}
                got, on_progress = progress_recorder()
                result = await client.call("countdown", {"from": i}, progress_callback=on_progress)
                chunks = [f"{n}\n" for n in range(i, -1, -1)]
                # Progress may merge chunks; together the messages are the output.
                whole = "".join(chunks)
                if result.structured_content != {"result": whole} or "".join(m or "" for _, m in got) != whole:
                    failures.append(f"session {s} call {i}: {result.structured_content!r}, progress {got!r}")

            async with anyio.create_task_group() as group:
                for i in range(calls_per_session):
                    group.start_soon(one, i)
            assert not failures, failures

    async with launch(make_plugins("echo")) as server:
        # Over HTTP several sessions share one server; over stdio a session is a process.
        sessions = 3 if server.transport == "http" else 1
        async with anyio.create_task_group() as group:
            for s in range(sessions):
                group.start_soon(session_work, server, s)


# --- what calls share, and readiness -----------------------------------------------


async def test_a_hanging_plugin_delays_neither_readiness_nor_other_tools(
    launch: Launch, make_plugins: PluginsFactory
) -> None:
    """`slow_declare` never finishes listing its tools (its load deadline here is 10
    minutes): the server answers at once all the same, and echo's tools can be called
    while it loads. (Only `tools/list` waits for the first load, so the call is sent
    as is: the SDK's `call_tool` lists the tools to check the result.)"""
    plugins = make_plugins("echo", "slow_declare")
    async with launch(plugins, config="[load]\ntimeout_ms = 600000\n") as server, server.connect() as client:
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name="echo", arguments={"message": "ready"})
        )
        with anyio.fail_after(CALL_S):
            result = await client.session.send_request(request, types.CallToolResult)
        assert ok(result)["message"] == "ready"


async def test_the_first_load_sends_no_list_changed(launch: Launch, make_plugins: PluginsFactory) -> None:
    """A client that connects while the plugins load gets them all from its first
    `tools/list` (which waits for the load) and no `tools/list_changed` for them: a
    late one broke clients that close right after listing (langchain-mcp-adapters on
    mcp 1.x raised BrokenResourceError)."""
    plugins = make_plugins("echo", "json", "text", "calc", "codec")
    async with launch(plugins) as server, server.connect() as client:
        assert TOOLS["echo"] | TOOLS["json"] <= set(await client.tools())
        # A notice the first load caused would be sent before this answer.
        assert ok(await client.call("echo", {"message": "x"}))["message"] == "x"
        assert client.list_changed == 0, client.notifications


async def test_huge_error_messages_are_cut(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("greedy")) as server, server.connect() as client:
        text = error(await client.call("loud_error", {"bytes": 10_000_000}))
        assert "loud start zzz" in text and "[cut: " in text, text[:200]
        assert len(text) < 6000, len(text)


async def test_guest_memory_past_the_engine_budget_is_busy(launch: Launch, make_plugins: PluginsFactory) -> None:
    flags = ["--max-guest-memory-mib", "16"]
    async with launch(make_plugins("greedy"), flags=flags) as server, server.connect() as client:
        text = error(await client.call("hold", {"mib": 32}))
        assert "could not run now" in text and "retry shortly" in text, text
        assert ok(await client.call("hold", {"mib": 1})) == {"held_mib": 1}


# --- invocations ----------------------------------------------------------------------

#: The request `_meta` key that names an invocation (docs/mcp.md).
INVOCATION = "dev.toolhost/invocation"


async def test_calls_naming_one_invocation_share_its_state(launch: Launch, make_plugins: PluginsFactory) -> None:
    """Calls that name the same invocation in `_meta` share the guest's scratch
    state, from any session of the server (over stdio a session is a process of its
    own, so there the second session is the same one); without a name a 2025-11-25
    session is one invocation and a 2026-07-28 call is its own."""
    async with launch(make_plugins("echo")) as server, server.connect() as client, AsyncExitStack() as stack:
        other = await stack.enter_async_context(server.connect()) if server.transport == "http" else client
        named = {INVOCATION: f"agent-run-{client.protocol}"}
        assert ok(await client.call("remember", {"key": "k", "value": "v1"}, meta=named)) == {"stored": "k"}
        assert ok(await other.call("remember", {"key": "k"}, meta=named)) == {"value": "v1"}
        assert ok(await other.call("remember", {"key": "k"}, meta={INVOCATION: "another-run"})) == {"value": None}
        assert ok(await client.call("remember", {"key": "k"})) == {"value": None}

        assert ok(await client.call("remember", {"key": "own", "value": "v2"}))
        unnamed = ok(await client.call("remember", {"key": "own"}))
        assert unnamed == ({"value": "v2"} if client.protocol == LEGACY else {"value": None}), unnamed

        for bad in ["", "has space", "x" * 129, 7]:
            with pytest.raises(MCPError) as caught:
                await client.call("remember", {"key": "k"}, meta={INVOCATION: bad})
            assert caught.value.code == -32602 and INVOCATION in caught.value.error.message, caught.value


# --- the example plugins' resources, prompts and completions -----------------------

#: The fs plugin's resource template: a granted file by its guest path.
FILE_TEMPLATE = "file:///{+path}"

def not_found(client: Client) -> int:
    """The code of "no resource there": -32002 through 2025-11-25, invalid
    params (-32602) from 2026-07-28 on."""
    return -32002 if client.protocol == LEGACY else -32602


def granted_repo(tmp_path: Path) -> tuple[Path, str]:
    """A directory to grant the fs plugin as `/repo` (text, a PNG, a subdirectory,
    a symlink pointing out), a secret beside it, and the `toolhost.toml` granting it."""
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "sub").mkdir(parents=True)
    outside.mkdir()
    (repo / "notes.md").write_text("# Notes\nüber alles\n", encoding="utf-8")
    (repo / "pixel.png").write_bytes(PNG_SIGNATURE + b"\x00\xff")
    (repo / "sub" / "deep.txt").write_text("deep\n")
    (outside / "secret.txt").write_text("the host's secret\n")
    (repo / "escape").symlink_to(outside / "secret.txt")
    config = f'[plugin.fs.grants]\ndirs = [{{ host = {json.dumps(str(repo))}, guest = "/repo" }}]\n'
    return repo, config


async def read_error(client: Client, uri: str) -> MCPError:
    """Reads `uri`, which must fail with a JSON-RPC error; returns it."""
    with pytest.raises(MCPError) as caught, anyio.fail_after(CALL_S):
        await client.session.read_resource(uri)
    return caught.value


async def complete(client: Client, ref: Any, name: str, value: str) -> types.Completion:
    with anyio.fail_after(CALL_S):
        result = await client.session.complete(ref, {"name": name, "value": value})
    return result.completion


async def test_fs_serves_its_granted_directory_through_a_template(
    launch: Launch, make_plugins: PluginsFactory, tmp_path: Path
) -> None:
    _, config = granted_repo(tmp_path)
    async with launch(make_plugins("fs"), config=config) as server, server.connect() as client:
        assert client.capabilities.resources is not None, client.capabilities
        with anyio.fail_after(CALL_S):
            templates = (await client.session.list_resource_templates()).resource_templates
            listed = (await client.session.list_resources()).resources
        assert [t.uri_template for t in templates] == [FILE_TEMPLATE], templates
        assert templates[0].name == "file" and "go stale" in (templates[0].description or ""), templates[0]
        # A template, not a listing taken at load that would go stale.
        assert listed == [], listed

        with anyio.fail_after(CALL_S):
            notes = await client.session.read_resource("file:///repo/notes.md")
        [text] = notes.contents
        assert isinstance(text, types.TextResourceContents), text
        assert (text.uri, text.mime_type, text.text) == ("file:///repo/notes.md", "text/markdown", "# Notes\nüber alles\n")

        with anyio.fail_after(CALL_S):
            pixel = await client.session.read_resource("file:///repo/sub/../pixel.png")
        [blob] = pixel.contents
        assert isinstance(blob, types.BlobResourceContents), blob
        assert blob.mime_type == "image/png", blob
        assert base64.b64decode(blob.blob) == PNG_SIGNATURE + b"\x00\xff"

        # Outside the grant: refused, saying why, and nothing of the file leaks.
        for uri, says in [
            ("file:///etc/passwd", "`etc/passwd` is `/etc/passwd`, outside the granted directories (/repo)"),
            ("file:///repo/../outside/secret.txt", "is `/outside/secret.txt`, outside the granted directories"),
            ("file:///repo/%2E%2E/%2E%2E/etc/passwd", "climbs above `/`"),
            ("file:///repo/escape", "leads outside the granted directories"),
        ]:
            err = await read_error(client, uri)
            assert err.code == -32602 and says in err.error.message, (uri, err.error)
            assert "host's secret" not in str(err.error), err.error
        err = await read_error(client, "file:///repo/sub")
        assert err.code == -32602 and "is a directory" in err.error.message, err.error
        err = await read_error(client, "file:///repo/missing.txt")
        assert err.code == not_found(client) and err.error.data == {"uri": "file:///repo/missing.txt"}, err.error

        # `path` completes from the grants, then from the directories' entries.
        ref = types.ResourceTemplateReference(uri=FILE_TEMPLATE)
        assert (await complete(client, ref, "path", "")).values == ["repo/"]
        entries = await complete(client, ref, "path", "repo/")
        assert entries.values == ["repo/escape", "repo/notes.md", "repo/pixel.png", "repo/sub/"], entries
        assert (entries.total, entries.has_more) == (4, False), entries
        assert (await complete(client, ref, "path", "repo/sub/d")).values == ["repo/sub/deep.txt"]
        assert (await complete(client, ref, "path", "etc/")).values == []

        # Its tools work as before, on the same files.
        read = ok(await client.call("read_file", {"path": "/repo/notes.md"}))
        assert read["text"] == "# Notes\nüber alles\n", read


async def test_a_template_made_uri_can_be_subscribed_to(
    launch: Launch, make_plugins: PluginsFactory, tmp_path: Path, protocol: str
) -> None:
    """`resources/subscribe` and `unsubscribe` (2025-11-25; 2026-07-28 has
    `subscriptions/listen` instead) for a URI the fs plugin's template makes."""
    if protocol != LEGACY:
        pytest.skip("resources/subscribe is a 2025-11-25 request")
    _, config = granted_repo(tmp_path)
    async with launch(make_plugins("fs"), config=config) as server, server.connect() as client:
        assert client.capabilities.resources is not None and client.capabilities.resources.subscribe, (
            client.capabilities
        )
        uri = "file:///repo/notes.md"
        with anyio.fail_after(CALL_S):
            await client.session.send_request(
                types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)), types.EmptyResult
            )
            await client.session.send_request(
                types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri)), types.EmptyResult
            )
        # A URI that neither a resource nor a template makes cannot be subscribed to.
        with pytest.raises(MCPError) as caught, anyio.fail_after(CALL_S):
            await client.session.send_request(
                types.SubscribeRequest(params=types.SubscribeRequestParams(uri="nowhere://x")), types.EmptyResult
            )
        assert caught.value.code == not_found(client), caught.value.error
        # The session goes on.
        with anyio.fail_after(CALL_S):
            notes = await client.session.read_resource(uri)
        assert notes.contents, notes


async def test_text_offers_a_summarize_prompt(launch: Launch, make_plugins: PluginsFactory) -> None:
    async with launch(make_plugins("text")) as server, server.connect() as client:
        assert client.capabilities.prompts is not None, client.capabilities
        assert client.capabilities.completions is not None, client.capabilities
        with anyio.fail_after(CALL_S):
            prompts = (await client.session.list_prompts()).prompts
        assert [p.name for p in prompts] == ["summarize"], prompts
        arguments = [(a.name, a.required) for a in prompts[0].arguments or []]
        assert arguments == [("text", True), ("style", False)], prompts[0]

        with anyio.fail_after(CALL_S):
            got = await client.session.get_prompt("summarize", {"text": "Wasm runs anywhere.", "style": "bullet"})
        [message] = got.messages
        assert message.role == "user", message
        assert isinstance(message.content, types.TextContent), message.content
        assert "bullet points" in message.content.text, message.content.text
        assert "<text>\nWasm runs anywhere.\n</text>" in message.content.text, message.content.text
        assert got.description == "Summarize a text (bullet)", got.description
        with anyio.fail_after(CALL_S):
            default = await client.session.get_prompt("summarize", {"text": "x"})
        assert "one short paragraph" in default.messages[0].content.text, default

        # A missing required argument and an unknown style are the caller's to fix.
        for args, says in [({"style": "tldr"}, "text"), ({"text": "x", "style": "ode"}, "paragraph, bullet, tldr")]:
            with pytest.raises(MCPError) as caught, anyio.fail_after(CALL_S):
                await client.session.get_prompt("summarize", args)
            assert caught.value.code == -32602 and says in caught.value.error.message, caught.value.error

        ref = types.PromptReference(name="summarize")
        styles = await complete(client, ref, "style", "")
        assert (styles.values, styles.total, styles.has_more) == (["paragraph", "bullet", "tldr"], 3, False), styles
        assert (await complete(client, ref, "style", "t")).values == ["tldr"]
        assert (await complete(client, ref, "text", "")).values == []


# Every scenario above runs on both protocol revisions (see conftest.py).
for _name, _test in list(globals().items()):
    if _name.startswith("test_"):
        globals()[_name] = pytest.mark.parametrize("protocol", [LEGACY, MODERN])(_test)


async def test_a_plugin_tells_subscribers_a_resource_changed(launch: Launch, make_plugins: PluginsFactory) -> None:
    """A plugin says a resource changed (`host.resource-updated`, here the fixture tool
    `touch_resources`): a client that subscribed to it hears
    `notifications/resources/updated` (2025-11-25: `resources/subscribe`; 2026-07-28: a
    `subscriptions/listen` stream with `resourceSubscriptions`); of a resource it did not
    subscribe to, nothing."""
    watched, other = "test://watched-resource", "test://static-text"
    async with launch(make_plugins("mcp_conformance")) as server, server.connect() as client:
        assert client.capabilities.resources is not None and client.capabilities.resources.subscribe, (
            client.capabilities
        )
        touch = {"uris": [other, watched, other]}
        if client.protocol == MODERN:
            assert client.mcp is not None
            async with client.mcp.listen(resource_subscriptions=[watched]) as subscription:
                assert subscription.honored is not None, subscription
                assert list(subscription.honored.resource_subscriptions or []) == [watched], subscription.honored
                assert not (await client.call("touch_resources", touch)).is_error
                with anyio.fail_after(CALL_S):
                    event = await subscription.__anext__()
                assert getattr(event, "uri", None) == watched, event
            return
        with anyio.fail_after(CALL_S):
            await client.session.send_request(
                types.SubscribeRequest(params=types.SubscribeRequestParams(uri=watched)), types.EmptyResult
            )
        assert not (await client.call("touch_resources", touch)).is_error

        def updated() -> list[str]:
            return [
                n.params.uri for n in client.notifications if isinstance(n, types.ResourceUpdatedNotification)
            ]

        with anyio.fail_after(CALL_S):
            while not updated():
                await anyio.sleep(0.05)
        await anyio.sleep(0.3)
        assert updated() == [watched], updated()
