"""The call path natively: argument conversion, results, streams and errors."""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import NotRequired, Optional, TypedDict

import pytest

from toolhost_guest import Caller, Context, InvalidArguments, Output, Part, ToolError, UnknownTool
from toolhost_guest._core import Registry


class FakeHost:
    def __init__(self):
        self.state: dict[str, str] = {}
        self.logs: list[tuple[str, str]] = []

    def log(self, level, message):
        self.logs.append((level, message))

    def state_get(self, key):
        return self.state.get(key)

    def state_set(self, key, value):
        self.state[key] = value

    def state_delete(self, key):
        self.state.pop(key, None)


class Size(enum.Enum):
    SMALL = "small"
    LARGE = "large"


@dataclasses.dataclass
class Nested:
    label: str
    tags: list[str] = dataclasses.field(default_factory=list)
    weight: float = 1.0


registry = Registry()


def echo(message: str, nested: Optional[Nested] = None, size: Size = Size.SMALL) -> dict:
    """Echo."""
    assert nested is None or isinstance(nested, Nested)
    assert isinstance(size, Size)
    return {"message": message, "nested": nested, "size": size}


def add(a: int, b: float) -> float:
    """Add."""
    assert isinstance(b, float)
    return a + b


def remember(key: str, cx: Context, value: Optional[str] = None) -> dict:
    """State."""
    if value is None:
        return {"value": cx.state_get(key)}
    cx.state_set(key, value)
    return {"stored": key}


def fail(invalid: bool = False) -> None:
    """Fails."""
    if invalid:
        raise InvalidArguments("bad")
    raise ToolError("always fails")


def crash() -> None:
    """Crashes."""
    return {}["missing"]


def countdown(start: int):
    """Counts down."""
    for i in range(start, -1, -1):
        yield f"{i}\n"


def mixed():
    """Mixed chunks."""
    yield "a"
    yield {"n": 1}
    yield Part.image("image/png", b"\x89PNG")
    raise ValueError("stream broke")


def pixel() -> Output:
    """Pixel."""
    return Output(json={"ok": True}, parts=[Part.text("t"), Part.file("text/plain", b"x", "a.txt")])


for f in (echo, add, remember, fail, crash, countdown, mixed, pixel):
    registry.add(f)


def lenient(text: str) -> str:
    """Lenient."""
    return text


registry.add(lenient, allow_unknown_args=True)


def call(tool, args, host=None):
    host = host or FakeHost()
    return registry.invoke(tool, json.dumps(args), Context("c1", "i1", tool, host))


def test_arguments_are_converted_to_the_hinted_types():
    out = call("echo", {"message": "hi", "nested": {"label": "x", "tags": ["a"]}, "size": "large"})
    assert json.loads(out.json) == {
        "message": "hi",
        "nested": {"label": "x", "tags": ["a"], "weight": 1.0},
        "size": "large",
    }
    assert out.parts == []
    assert json.loads(call("add", {"a": 1, "b": 2}).json) == 3.0


class Filter(TypedDict):
    word: str
    limit: NotRequired[int]


def defaults(
    size: Size = Size.LARGE,
    count: int | None = 3,
    maybe: Optional[str] = None,
    nested: Optional[Nested] = None,
    filters: list[Filter] | None = None,
) -> dict:
    """Defaults."""
    return {"size": size, "count": count, "maybe": maybe, "nested": nested, "filters": filters}


registry.add(defaults)


def test_null_means_not_given_where_there_is_a_default():
    """Optional means nullable: strict-mode models send null for what they leave out."""
    given_null = {"size": None, "count": None, "maybe": None}
    expected = {"size": "large", "count": 3, "maybe": None, "nested": None, "filters": None}
    assert json.loads(call("defaults", given_null).json) == expected
    assert json.loads(call("defaults", {}).json) == expected
    out = call("defaults", {
        "nested": {"label": "x", "tags": None, "weight": None},
        "filters": [{"word": "a", "limit": None}, {"word": "b", "limit": 2}],
    })
    assert json.loads(out.json)["nested"] == {"label": "x", "tags": [], "weight": 1.0}
    assert json.loads(out.json)["filters"] == [{"word": "a"}, {"word": "b", "limit": 2}]
    # A field without a default stays required (the host's schema check refuses null).
    with pytest.raises(InvalidArguments, match="missing field `label`"):
        call("defaults", {"nested": {"tags": None}})


def test_unknown_arguments_are_invalid_unless_the_tool_allows_them():
    with pytest.raises(InvalidArguments, match="unknown argument `seperator`"):
        call("echo", {"message": "hi", "size": "large", "seperator": "_"})
    out = call("lenient", {"text": "hi", "seperator": "_"})
    assert json.loads(out.json) == "hi"


def test_results_and_parts():
    out = call("pixel", {})
    assert json.loads(out.json) == {"ok": True}
    assert [p.kind for p in out.parts] == ["text", "file"]
    assert out.parts[1].name == "a.txt"


def test_state_goes_through_the_host():
    host = FakeHost()
    assert json.loads(call("remember", {"key": "k", "value": "v"}, host).json) == {"stored": "k"}
    assert json.loads(call("remember", {"key": "k"}, host).json) == {"value": "v"}
    assert host.state == {"k": "v"}


def whoami(cx: Context) -> dict:
    """Says who calls."""
    if cx.caller is None:
        return {"caller": None}
    return {
        "caller": cx.caller.to_json(),
        "reader": cx.caller.has_scope("tools:read"),
        "email": cx.caller.claim("email"),
    }


registry.add(whoami)


def test_a_tool_sees_its_caller_or_none():
    assert json.loads(call("whoami", {}).json) == {"caller": None}
    ana = Caller("https://id.example.com", "ana", ("tools:read",), {"email": "ana@example.com"})
    context = Context("c1", "i1", "whoami", FakeHost(), ana)
    assert json.loads(registry.invoke("whoami", "{}", context).json) == {
        "caller": {
            "issuer": "https://id.example.com",
            "subject": "ana",
            "scopes": ["tools:read"],
            "claims": {"email": "ana@example.com"},
        },
        "reader": True,
        "email": "ana@example.com",
    }
    # The context is not part of the schema.
    whoami_decl = next(d for d in registry.declarations() if d.name == "whoami")
    assert whoami_decl.input_schema["properties"] == {}


def test_errors_are_tool_errors():
    with pytest.raises(ToolError) as err:
        call("fail", {})
    assert err.value.kind == "failed" and err.value.message == "always fails"
    with pytest.raises(InvalidArguments):
        call("fail", {"invalid": True})
    with pytest.raises(UnknownTool):
        call("nope", {})
    with pytest.raises(InvalidArguments, match="missing field `message`"):
        call("echo", {})
    with pytest.raises(InvalidArguments, match="`size`"):
        call("echo", {"message": "m", "size": "huge"})
    host = FakeHost()
    with pytest.raises(ToolError) as err:
        call("crash", {}, host)
    assert err.value.kind == "failed"
    assert err.value.message == "KeyError: 'missing'"
    assert host.logs and host.logs[0][0] == "error" and "Traceback" in host.logs[0][1]


def test_streams():
    cx = Context("c", "i", "countdown", FakeHost())
    chunks = list(registry.stream("countdown", '{"start": 2}', cx))
    assert [c.content for c in chunks] == ["2\n", "1\n", "0\n"]
    collected = call("countdown", {"start": 2})
    assert json.loads(collected.json) == "2\n1\n0\n"
    assert [p.content for p in collected.parts] == ["2\n1\n0\n"]
    stream = registry.stream("mixed", "{}", Context("c", "i", "mixed", FakeHost()))
    assert next(stream).kind == "text"
    assert json.loads(next(stream).content) == {"n": 1}
    assert next(stream).kind == "image"
    with pytest.raises(ToolError, match="ValueError: stream broke"):
        next(stream)
    with pytest.raises(StopIteration):
        next(stream)
    # A tool that does not stream streams its JSON, then its parts.
    parts = list(registry.stream("pixel", "{}", Context("c", "i", "pixel", FakeHost())))
    assert [p.kind for p in parts] == ["json", "text", "file"]
