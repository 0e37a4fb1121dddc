"""The catalog natively: describe, read, get and complete dispatch, and asking."""

from __future__ import annotations

from typing import Optional

import pytest

from toolhost_guest import (
    Answer,
    AskError,
    Caller,
    Completion,
    Contents,
    Context,
    InvalidArguments,
    Message,
    Messages,
    Part,
    PromptArgument,
    Resource,
    ResourceTemplate,
    SchemaError,
    ToolError,
    UnknownTool,
    assistant,
    user,
)
from toolhost_guest._catalog import MAX_COMPLETIONS, Catalog

PNG = b"\x89PN"


class FakeHost:
    def __init__(self, answer=("decline", None), error=None):
        self.logs: list[tuple[str, str]] = []
        self.updated: list[str] = []
        self.asked: list[tuple[str, str]] = []
        self.answer = answer
        self.error = error

    def log(self, level, message):
        self.logs.append((level, message))

    def state_get(self, key):
        return None

    def state_set(self, key, value):
        pass

    def state_delete(self, key):
        pass

    def resource_updated(self, uri):
        self.updated.append(uri)

    def ask(self, message, schema):
        self.asked.append((message, schema))
        if self.error is not None:
            raise self.error
        return self.answer


def cx(target="test", host=None, caller=None):
    return Context("call-1", "inv-1", target, host or FakeHost(), caller)


catalog = Catalog()


def text() -> str:
    """Some text."""
    return "hello"


def who(cx: Context) -> str:
    caller = cx.caller.subject if cx.caller else "nobody"
    return f"{cx.call_id} {cx.invocation_id} {cx.tool} {caller}"


def png() -> Contents:
    return Contents(PNG, mime_type="image/png")


def tree() -> list:
    return [b"\x01", Contents("sub", uri="test://tree/1", mime_type="text/x")]


def broken_read() -> dict:
    return {}["missing"]


def wrong_type() -> int:
    return 7


def items(id: str, rest: str = "-") -> str:
    return f"{id} {rest}"


def greet(cx: Context, name: str, tone: Optional[str] = None) -> Messages:
    """Greets someone.

    Args:
        name: Who.
    """
    return Messages(
        [
            f"Greet {name}{' ' + tone if tone else ''}.",
            assistant(Part.image("image/png", PNG)),
            user(Contents("doc", uri="test://text")),
        ],
        description="A greeting",
    )


def plain(topic: str = "nothing") -> str:
    """Just text."""
    return f"About {topic}."


def lost() -> list:
    """Embeds a resource without a URI."""
    return [user(Contents("lost"))]


catalog.add_resource(
    text,
    Resource("test://text", "text", title="Text", description="Some text",
             mime_type="text/plain", size=5),
)
catalog.add_resource(who, Resource("test://who", "who", mime_type="text/plain"))
catalog.add_resource(png, Resource("test://png", "png"))
catalog.add_resource(tree, Resource("test://tree", "tree", mime_type="application/x-tree"))
catalog.add_resource(broken_read, Resource("test://broken", "broken"))
catalog.add_resource(wrong_type, Resource("test://wrong", "wrong"))
catalog.add_template(
    items, ResourceTemplate("test://items/{id}/{+rest}", "items", mime_type="application/json")
)
catalog.add_prompt(greet, title="Greeting", argument_titles={"name": "Name"})
catalog.add_prompt(plain)
catalog.add_prompt(lost)


def names(argument: str, value: str, cx: Context) -> list[str]:
    if argument == "name":
        return Completion.matching(["ada", "alan", "grace"], value).values
    return [cx.tool]


def many(context: dict) -> Completion:
    prefix = context.get("rest", "")
    return Completion([f"{prefix}{i}" for i in range(150)], total=150)


def topics(value: str) -> list[str]:
    return ["t-" + value]


catalog.add_completion(names, "greet")
catalog.add_completion(many, "test://items/{id}/{+rest}", "id")
catalog.add_completion(topics, "plain", "topic")
catalog.check()


# --- describe -----------------------------------------------------------------


def test_describe_lists_everything_declared_in_order():
    assert [r.uri for r in catalog.resources()] == [
        "test://text", "test://who", "test://png", "test://tree", "test://broken", "test://wrong",
    ]
    first = catalog.resources()[0]
    assert (first.name, first.title, first.description, first.mime_type, first.size) == (
        "text", "Text", "Some text", "text/plain", 5,
    )
    [template] = catalog.templates()
    assert template.uri_template == "test://items/{id}/{+rest}"
    assert template.variables == ["id", "rest"]
    greet_prompt = catalog.prompts()[0]
    assert (greet_prompt.name, greet_prompt.title, greet_prompt.description) == (
        "greet", "Greeting", "Greets someone.",
    )
    assert greet_prompt.arguments == (
        PromptArgument("name", title="Name", description="Who.", required=True),
        PromptArgument("tone", required=False),
    )
    assert catalog.prompts()[1].arguments == (PromptArgument("topic", required=False),)
    empty = Catalog()
    empty.check()
    assert (empty.resources(), empty.templates(), empty.prompts()) == ([], [], [])


# --- read -----------------------------------------------------------------------


def test_reads_dispatch_by_uri_and_fill_in_uri_and_mime_type():
    assert catalog.read(cx(), "test://text") == [
        Contents("hello", uri="test://text", mime_type="text/plain")
    ]
    assert catalog.read(cx(), "test://png") == [
        Contents(PNG, uri="test://png", mime_type="image/png")
    ]
    # Only the read URI's own contents get the declared MIME type.
    assert catalog.read(cx(), "test://tree") == [
        Contents(b"\x01", uri="test://tree", mime_type="application/x-tree"),
        Contents("sub", uri="test://tree/1", mime_type="text/x"),
    ]


def test_readers_see_the_request_ids_and_caller():
    [contents] = catalog.read(cx("test://who"), "test://who")
    assert contents.body == "call-1 inv-1 test://who nobody"
    ada = Caller("https://issuer", "ada")
    [contents] = catalog.read(cx("test://who", caller=ada), "test://who")
    assert contents.body == "call-1 inv-1 test://who ada"


def test_template_reads_get_the_variables():
    uri = "test://items/7/a/b"
    template = "test://items/{id}/{+rest}"
    got = catalog.read(cx(), uri, template, {"id": "7", "rest": "a/b"})
    assert got == [Contents("7 a/b", uri=uri, mime_type="application/json")]
    # An optional variable the host did not pass takes the default.
    assert catalog.read(cx(), uri, template, {"id": "7"})[0].body == "7 -"
    with pytest.raises(InvalidArguments, match="`id` is missing"):
        catalog.read(cx(), uri, template, {})


def test_unknown_uris_prompts_and_targets_are_unknown():
    with pytest.raises(UnknownTool, match="test://nope"):
        catalog.read(cx(), "test://nope")
    # A template's URI is not a listed resource, and a listed URI no template.
    with pytest.raises(UnknownTool):
        catalog.read(cx(), "test://items/1/2")
    with pytest.raises(UnknownTool, match="test://text"):
        catalog.read(cx(), "test://text", "test://{nope}", {})
    with pytest.raises(UnknownTool, match="nope"):
        catalog.get(cx(), "nope", {})
    with pytest.raises(UnknownTool, match="nope"):
        catalog.complete(cx(), "nope", "a", "")
    with pytest.raises(UnknownTool):
        catalog.complete(cx(), "test://{nope}", "nope", "")
    # The target's kind counts: a prompt's name is no template.
    with pytest.raises(UnknownTool):
        catalog.complete(cx(), "greet", "name", "", template=True)


def test_a_failing_reader_is_a_tool_error_and_logged():
    host = FakeHost()
    with pytest.raises(ToolError) as err:
        catalog.read(cx("test://broken", host), "test://broken")
    assert err.value.kind == "failed" and err.value.message == "KeyError: 'missing'"
    assert host.logs[0][0] == "error" and "resource `test://broken` raised" in host.logs[0][1]
    with pytest.raises(ToolError, match="not int"):
        catalog.read(cx(), "test://wrong")


# --- get ------------------------------------------------------------------------


def test_prompts_convert_every_kind_of_message():
    got = catalog.get(cx(), "greet", {"name": "Ada"})
    assert got.description == "A greeting"
    assert got.messages == [
        Message("user", Part.text("Greet Ada.")),
        Message("assistant", Part.image("image/png", PNG)),
        Message("user", Contents("doc", uri="test://text")),
    ]
    assert catalog.get(cx(), "greet", {"name": "Ada", "tone": "warmly"}).messages[0] == user(
        "Greet Ada warmly."
    )
    # A str is one user message; a default fills in what is not given.
    plain_got = catalog.get(cx(), "plain", {})
    assert (plain_got.description, plain_got.messages) == (None, [user("About nothing.")])


def test_prompt_errors():
    with pytest.raises(InvalidArguments, match="`name` is missing"):
        catalog.get(cx(), "greet", {})
    with pytest.raises(ToolError, match="without a URI"):
        catalog.get(cx(), "lost", {})


# --- complete -------------------------------------------------------------------


def test_completions_dispatch_by_target_and_argument():
    got = catalog.complete(cx("greet"), "greet", "name", "a")
    assert (got.values, got.total, got.has_more) == (["ada", "alan"], None, False)
    assert catalog.complete(cx("greet"), "greet", "tone", "").values == ["greet"]
    # A handler for one argument wins over none; other arguments complete nothing.
    assert catalog.complete(cx(), "plain", "topic", "x").values == ["t-x"]


def test_completions_are_capped_at_100():
    got = catalog.complete(cx(), "test://items/{id}/{+rest}", "id", "", {"rest": "r"})
    assert len(got.values) == MAX_COMPLETIONS and got.values[0] == "r0"
    assert (got.total, got.has_more) == (150, True)


def test_completions_without_a_handler_are_empty():
    assert catalog.complete(cx(), "lost", "x", "").values == []
    assert catalog.complete(cx(), "test://items/{id}/{+rest}", "rest", "").values == []


def test_matching_filters_counts_and_caps():
    c = Completion.matching([f"v{i}" for i in range(250)], "v1")
    assert c.total == 111
    capped = c.capped()
    assert len(capped.values) == MAX_COMPLETIONS and capped.has_more
    assert Completion.matching(["a"], "b") == Completion([], total=0)


# --- declaring ----------------------------------------------------------------


def test_bad_declarations_fail_at_once():
    fresh = Catalog()

    def takes(x: str) -> str:
        return x

    with pytest.raises(SchemaError, match="use @resource_template"):
        fresh.add_resource(takes, Resource("u://x", "x"))
    fresh.add_resource(text, Resource("u://x", "x"))
    with pytest.raises(SchemaError, match="two resources"):
        fresh.add_resource(text, Resource("u://x", "x"))
    with pytest.raises(SchemaError, match="no parameter for the variable 'y'"):
        fresh.add_template(takes, ResourceTemplate("u://{y}", "y"))
    with pytest.raises(SchemaError, match="no parameter for the variable 'other'"):
        fresh.add_template(items, ResourceTemplate("u://{rest}/{other}", "y"))
    with pytest.raises(SchemaError, match="parameter id is not a variable"):
        fresh.add_template(items, ResourceTemplate("u://{rest}", "r"))
    with pytest.raises(SchemaError, match="no \\{variable\\}"):
        fresh.add_template(text, ResourceTemplate("u://plain", "p"))

    def counted(n: int) -> str:
        return str(n)

    with pytest.raises(SchemaError, match="prompt arguments are strings"):
        fresh.add_prompt(counted)
    with pytest.raises(SchemaError, match="prompt name"):
        fresh.add_prompt(plain, name="has space")
    fresh.add_prompt(plain)
    with pytest.raises(SchemaError, match="two prompts"):
        fresh.add_prompt(plain)

    def odd(prefix: str) -> list[str]:
        return []

    with pytest.raises(SchemaError, match="parameter prefix"):
        fresh.add_completion(odd, "plain")
    fresh.add_completion(topics, "plain", "topic")
    with pytest.raises(SchemaError, match="two completions"):
        fresh.add_completion(topics, "plain", "topic")
    fresh.add_completion(topics, "nope", "x")
    with pytest.raises(SchemaError, match="no prompt 'nope'"):
        fresh.check()

    other = Catalog()
    other.add_prompt(plain)
    other.add_completion(topics, "plain", "subject")
    with pytest.raises(SchemaError, match="has no 'subject'"):
        other.check()


def test_contents_and_messages_check_their_types():
    assert Contents(bytearray(b"x")).body == b"x"
    with pytest.raises(TypeError):
        Contents(7)
    with pytest.raises(ValueError):
        Message("system", "x")
    with pytest.raises(TypeError):
        user(7)


# --- asking and resource updates -------------------------------------------


def test_ask_returns_the_answer():
    host = FakeHost(answer=("accept", '{"go": true}'))
    answer = cx(host=host).ask("Go on?", {"type": "object"})
    assert answer == Answer("accept", {"go": True}) and answer.accepted
    assert host.asked == [("Go on?", '{"type": "object"}')]
    declined = cx(host=FakeHost(answer=("decline", None))).ask("Go on?", "{}")
    assert (declined.action, declined.content, declined.accepted) == ("decline", None, False)
    assert cx(host=FakeHost(answer=("cancel", None))).ask("?", {}).action == "cancel"


def test_ask_errors_are_tool_errors_saying_why():
    host = FakeHost(error=AskError("unavailable", "no client"))
    with pytest.raises(AskError) as err:
        cx(host=host).ask("?", {})
    assert err.value.reason == "unavailable" and err.value.kind == "failed"
    assert str(err.value) == "nobody can be asked: no client"
    assert isinstance(err.value, ToolError)
    assert AskError("timeout").message == "the user did not answer in time"
    assert "3" in AskError("too-many", "3").message
    with pytest.raises(AskError, match="not a JSON object") as err:
        cx(host=FakeHost(answer=("accept", "[1]"))).ask("?", {})
    assert err.value.reason == "invalid"
    with pytest.raises(ValueError):
        AskError("bored")


def test_resource_updated_goes_through_the_host():
    host = FakeHost()
    cx(host=host).resource_updated("notes://today")
    assert host.updated == ["notes://today"]


# --- the decorators -------------------------------------------------------------


def test_decorators_declare_into_the_plugin_catalog():
    import toolhost_guest
    from toolhost_guest import complete, prompt, resource, resource_template

    @resource("deco://today", mime_type="text/plain")
    def today() -> str:
        """Today's notes."""
        return "Buy milk."

    @resource_template("deco://day/{day}", name="day", title="A day")
    def notes_of(cx: Context, day: str) -> str:
        return f"Notes of {day} ({cx.tool})."

    @prompt
    def deco_summarize(day: str) -> str:
        """Summarizes a day's notes.

        Args:
            day: Which day.
        """
        return f"Summarize the notes of {day}."

    @prompt(name="deco-review", description="Reviews.", title="Review")
    def review(cx: Context, diff: str, focus: str = "all") -> list:
        return [user(diff), assistant(f"Focus: {focus}")]

    @complete("deco_summarize", "day")
    def days(value: str) -> Completion:
        return Completion.matching(["today", "tuesday", "yesterday"], value)

    @complete("deco://day/{day}")
    def any_day(argument: str, value: str) -> list[str]:
        return [f"{argument}={value}"]

    # Decorators return the function unchanged.
    assert today() == "Buy milk." and days("t").values == ["today", "tuesday"]
    found = toolhost_guest.catalog
    found.check()
    resource_today = next(r for r in found.resources() if r.uri == "deco://today")
    assert (resource_today.name, resource_today.description) == ("today", "Today's notes.")
    template = next(t for t in found.templates() if t.uri_template == "deco://day/{day}")
    assert (template.name, template.title, template.description) == ("day", "A day", None)
    summarize = next(p for p in found.prompts() if p.name == "deco_summarize")
    assert summarize.description == "Summarizes a day's notes."
    assert summarize.arguments == (PromptArgument("day", description="Which day.", required=True),)
    review_prompt = next(p for p in found.prompts() if p.name == "deco-review")
    assert (review_prompt.title, review_prompt.description) == ("Review", "Reviews.")
    assert [a.required for a in review_prompt.arguments] == [True, False]

    assert found.read(cx("deco://today"), "deco://today") == [
        Contents("Buy milk.", uri="deco://today", mime_type="text/plain")
    ]
    uri = "deco://day/monday"
    [contents] = found.read(cx(uri), uri, "deco://day/{day}", {"day": "monday"})
    assert contents.body == "Notes of monday (deco://day/monday)."
    assert found.get(cx(), "deco_summarize", {"day": "today"}).messages == [
        user("Summarize the notes of today.")
    ]
    assert found.get(cx(), "deco-review", {"diff": "d"}).messages == [
        user("d"), assistant("Focus: all"),
    ]
    assert found.complete(cx(), "deco_summarize", "day", "y").values == ["yesterday"]
    assert found.complete(cx(), "deco://day/{day}", "day", "m").values == ["day=m"]
