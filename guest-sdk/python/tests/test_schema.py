"""Schema derivation from type hints and docstrings, run natively with CPython."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Literal, NotRequired, Optional, TypedDict

import pytest

from toolhost_guest import Context, SchemaError, parse_docstring, schema_of
from toolhost_guest._core import Registry


def declare(func, **options):
    return Registry().add(func, **options).declaration


def search_flights(destination: str, departure_date: str, flexible_days: int = 0) -> dict:
    """Searches for flights.

    Finds direct flights only.

    Args:
        destination: The city to fly to.
        departure_date: The day to leave,
            as YYYY-MM-DD.
        flexible_days (int): How many days earlier
            or later are fine.

    Returns:
        The flights found.
    """
    return {}


def test_the_issue_example():
    decl = declare(search_flights)
    assert decl.name == "search_flights"
    assert decl.description == (
        "Searches for flights.\n\nFinds direct flights only.\n\nReturns:\n    The flights found."
    )
    assert decl.input_schema == {
        "type": "object",
        "properties": {
            "destination": {"type": "string", "description": "The city to fly to."},
            "departure_date": {
                "type": "string",
                "description": "The day to leave, as YYYY-MM-DD.",
            },
            "flexible_days": {
                "type": ["integer", "null"],
                "description": "How many days earlier or later are fine. Defaults to `0`.",
                "default": 0,
            },
        },
        "required": ["destination", "departure_date"],
        "additionalProperties": False,
    }
    assert not decl.streaming and not decl.long_running


def test_scalars_optional_and_lists():
    def f(
        a: str,
        b: int,
        c: float,
        d: bool,
        e: Optional[str],
        g: list[int],
        h: int | None = None,
        i: tuple[str, int] = ("x", 1),
        j: dict[str, float] | None = None,
        k: set[str] = frozenset(),
    ):
        """F."""

    schema = declare(f).input_schema
    props = schema["properties"]
    assert props["a"] == {"type": "string"}
    assert props["b"] == {"type": "integer"}
    assert props["c"] == {"type": "number"}
    assert props["d"] == {"type": "boolean"}
    assert props["e"] == {"type": ["string", "null"]}
    assert props["g"] == {"type": "array", "items": {"type": "integer"}}
    assert props["h"] == {"type": ["integer", "null"], "default": None}
    assert props["i"] == {
        "type": ["array", "null"],
        "prefixItems": [{"type": "string"}, {"type": "integer"}],
        "minItems": 2,
        "maxItems": 2,
        "default": ["x", 1],
        "description": 'Defaults to `["x", 1]`.',
    }
    assert props["j"]["type"] == ["object", "null"]
    assert props["j"]["additionalProperties"] == {"type": "number"}
    assert props["k"] == {"type": ["array", "null"], "items": {"type": "string"},
                          "uniqueItems": True, "default": [], "description": "Defaults to `[]`."}
    # ADK's rule: a default or Optional makes a parameter optional.
    assert schema["required"] == ["a", "b", "c", "d", "g"]


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


def test_literal_and_enum_become_enums():
    def f(size: Literal["small", "large"], color: Color = Color.RED, n: Literal[1, 2] = 1):
        """F."""

    props = declare(f).input_schema["properties"]
    assert props["size"] == {"enum": ["small", "large"], "type": "string"}
    assert props["color"] == {"enum": ["red", "green", None], "type": ["string", "null"],
                              "default": "red", "description": "Defaults to `red`."}
    assert props["n"] == {"enum": [1, 2, None], "type": ["integer", "null"], "default": 1,
                          "description": "Defaults to `1`."}
    assert schema_of(Optional[Literal["a"]]) == {"enum": ["a", None], "type": ["string", "null"]}


@dataclasses.dataclass
class Address:
    """A postal address.

    Attributes:
        street: The street and number.
        city: The city.
    """

    street: str
    city: str = "Paris"
    zip: Optional[str] = None


class Point(TypedDict):
    """A point."""

    x: float
    y: float
    label: NotRequired[str]


def test_dataclasses_and_typeddicts_are_objects():
    def f(address: Address, points: list[Point], extra: Annotated[int, "An extra."] = 3):
        """F."""

    props = declare(f).input_schema["properties"]
    assert props["address"] == {
        "type": "object",
        "description": "A postal address.",
        "properties": {
            "street": {"type": "string", "description": "The street and number."},
            "city": {"type": ["string", "null"], "description": "The city. Defaults to `Paris`.",
                     "default": "Paris"},
            "zip": {"type": ["string", "null"], "default": None},
        },
        "required": ["street"],
        "additionalProperties": False,
    }
    point = props["points"]["items"]
    assert point["properties"] == {
        "x": {"type": "number"},
        "y": {"type": "number"},
        "label": {"type": ["string", "null"]},
    }
    assert point["required"] == ["x", "y"]
    assert point["additionalProperties"] is False
    assert props["extra"] == {"type": ["integer", "null"], "default": 3,
                              "description": "An extra. Defaults to `3`."}


@dataclasses.dataclass
class Options:
    depth: int = 2
    tags: list[str] = dataclasses.field(default_factory=list)


def test_optional_means_nullable():
    """A parameter or field that is not required accepts null (OpenAI strict mode
    and Gemini need it), and its default is stated in the description."""

    def f(
        a: str,
        algorithm: Literal["sha256", "md5"] = "sha256",
        limit: Annotated[int, "How many; the default is all."] = 0,
        b: int | None = 5,
        c: int | str = 1,
        options: Optional[Options] = None,
    ):
        """F."""

    schema = declare(f).input_schema
    props = schema["properties"]
    assert schema["required"] == ["a"]
    assert props["algorithm"] == {
        "enum": ["sha256", "md5", None],
        "type": ["string", "null"],
        "default": "sha256",
        "description": "Defaults to `sha256`.",
    }
    # A description that speaks of the default already is left alone.
    assert props["limit"] == {"type": ["integer", "null"], "default": 0,
                              "description": "How many; the default is all."}
    assert props["b"] == {"type": ["integer", "null"], "default": 5,
                          "description": "Defaults to `5`."}
    # Without one plain type, the schema is wrapped; the note goes inside.
    assert props["c"] == {
        "anyOf": [
            {"anyOf": [{"type": "integer"}, {"type": "string"}], "description": "Defaults to `1`."},
            {"type": "null"},
        ],
        "default": 1,
    }
    # A default of None says nothing more.
    assert props["options"]["default"] is None
    assert "description" not in props["options"]
    nested = props["options"]["properties"]
    assert nested["depth"] == {"type": ["integer", "null"], "default": 2,
                               "description": "Defaults to `2`."}
    assert nested["tags"] == {"type": ["array", "null"], "items": {"type": "string"}}
    assert "required" not in props["options"]


def test_unknown_keys_are_refused_unless_the_tool_opts_out():
    def f(text: str, separator: str = " "):
        """F."""

    assert declare(f).input_schema["additionalProperties"] is False
    opened = Registry().add(f, allow_unknown_args=True).declaration.input_schema
    assert opened["additionalProperties"] is True
    # A dict parameter is a map of any keys, not a closed object.
    def g(headers: dict[str, str]):
        """G."""

    assert declare(g).input_schema["properties"]["headers"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
    }


def test_context_parameters_are_not_in_the_schema():
    def f(text: str, cx: Context) -> int:
        """F."""

    decl = declare(f)
    assert list(decl.input_schema["properties"]) == ["text"]
    assert Registry().add(f).context_param == "cx"


def test_generators_stream_and_options_override():
    def countdown(start: int):
        """Counts down."""
        yield str(start)

    decl = declare(countdown, name="count-down", description="Other.", long_running=True,
                   output_schema={"type": "object"})
    assert decl.streaming and decl.long_running
    assert decl.name == "count-down" and decl.description == "Other."
    assert decl.output_schema == {"type": "object"}


def test_hints_come_from_the_decorator_and_default_to_none():
    import toolhost_guest

    def lookup(key: str) -> str:
        """Looks up."""
        return key

    assert declare(lookup).hints == toolhost_guest.ToolHints()
    registry = toolhost_guest.registry
    before = dict(registry._tools)
    try:
        toolhost_guest.tool(name="lookup_hinted", title="Look up", read_only=True,
                            open_world=False)(lookup)
        decl = next(d for d in toolhost_guest.declarations() if d.name == "lookup_hinted")
    finally:
        registry._tools = before
    assert decl.hints == toolhost_guest.ToolHints(
        title="Look up", read_only=True, open_world=False
    )
    assert decl.hints.destructive is None and decl.hints.idempotent is None


@dataclasses.dataclass
class Node:
    child: Optional[Node] = None


def test_unsupported_signatures_fail_at_declaration():
    def star(*args: int):
        """F."""

    def obj(x: Registry):
        """F."""

    for func in (star, obj):
        with pytest.raises(SchemaError):
            declare(func)
    with pytest.raises(SchemaError, match="recursive"):
        schema_of(Node)
    registry = Registry()
    registry.add(search_flights)
    with pytest.raises(SchemaError, match="two tools"):
        registry.add(search_flights)
    with pytest.raises(SchemaError, match="tool name"):
        Registry().add(search_flights, name="has space")


def test_docstring_sections():
    description, args, attrs = parse_docstring(
        """Does it.

        Arguments:
            a: First.
            b (list[int]): Second,
                continued.
        Raises:
            ValueError: never.
        """
    )
    assert description == "Does it.\n\nRaises:\n    ValueError: never."
    assert args == {"a": "First.", "b": "Second, continued."}
    assert attrs == {}
    assert parse_docstring(None) == ("", {}, {})
