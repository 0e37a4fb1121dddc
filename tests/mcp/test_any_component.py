"""Any component is a toolset (issue 34): components built without any toolhost
SDK, each from a WIT of its own, served over MCP and driven by the official SDK.

- `any_component` (Rust, plain wit-bindgen; `TOOLHOST_GUESTS`), WIT package `example:geometry`;
- `any-component-js` (componentize-qjs) and `any-component-py` (componentize-py), WIT packages
  `example:inventory` and `example:units`, built by `cargo xtask guests` into
  `TOOLHOST_POLYGLOT` [default: `$CARGO_TARGET_DIR/polyglot`].

Every tool is listed with an input and an output schema, called, and its
`structuredContent` checked against its output schema; an `err` result is an
`isError` result carrying the error value; bad arguments are refused with their
JSON paths.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import Launch, PluginsFactory, _target_dir
from scenarios import error, ok

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["stdio", "http"])
def launch(request: pytest.FixtureRequest) -> Launch:
    """Each test runs over stdio and over streamable HTTP."""
    return request.getfixturevalue(f"launch_{request.param}")


@pytest.fixture(scope="session")
def polyglot_dir() -> Path:
    """Where `cargo xtask guests` puts the guests in other languages than Rust."""
    return Path(os.environ.get("TOOLHOST_POLYGLOT") or _target_dir() / "polyglot").resolve()


@dataclass
class Component:
    """A component under test: where it is built, what it is called in the plugins
    directory, and what its tools answer."""

    #: The file under `TOOLHOST_GUESTS` (Rust) or `TOOLHOST_POLYGLOT`.
    file: str
    polyglot: bool
    #: Its file stem in the plugins directory (the plugin's name).
    name: str
    #: (tool, arguments, the structured result).
    calls: list[tuple[str, dict[str, Any], Any]]
    #: (tool, arguments, the error value the guest returned, as JSON).
    errors: list[tuple[str, dict[str, Any], Any]]
    #: (tool, arguments, what the refusal names: a text, or a tuple of texts one of which it holds).
    refusals: list[tuple[str, dict[str, Any], list[str | tuple[str, ...]]]] = field(default_factory=list)


def extra_key(key: str) -> tuple[str, ...]:
    """How a refusal names an unexpected key: by its path, or quoted (jsonschema's own words)."""
    return (f"/{key}:", f"'{key}' was unexpected")


#: The exports componentize-qjs and componentize-py add for their build-time
#: (Wizer) initialization: not functions of the component's own WIT, so the
#: host leaves them out.
INITIALIZERS = {"init", "exports__init"}

#: One of every WIT type `shapes` does not use (geometry.wit's `kinds#sample`),
#: as JSON: bytes in base64, 64-bit integers at their limits, an
#: `option<option<u16>>` whose outer value is there and inner is not.
SAMPLE = {
    "on": True,
    "letter": "λ",
    "data": "AAEC/w==",
    "color": "green",
    "access": ["read", "exec"],
    "shape": {"circle": 1.5},
    "pair": [7, "seven"],
    "ratio": 0.5,
    "maybe": {"some": None},
    "big": -9223372036854775808,
    "huge": 18446744073709551615,
    "small": -32768,
    "tags": ["a", "b"],
}

COMPONENTS = {
    "rust": Component(
        file="any_component.wasm",
        polyglot=False,
        name="geometry",
        calls=[
            ("greet", {"name": "Ada"}, {"result": "hello, Ada"}),
            ("shapes__translate", {"p": {"x": 1, "y": 2}, "dx": 3, "dy": -4}, {"x": 4, "y": -2}),
            ("shapes__divide", {"a": 7, "b": 2}, {"result": 3}),
            ("shapes__spin", {"rounds": 10}, {"result": 10}),
            # Every other WIT type, through and back (`kinds` in geometry.wit).
            ("kinds__echo", {"s": SAMPLE}, SAMPLE),
            ("kinds__name_shape", {"shape": None}, {"result": "none"}),
            ("kinds__name_shape", {"shape": {"rect": [2.5, 4]}}, {"result": "a 2.5 by 4 rectangle"}),
        ],
        errors=[("shapes__divide", {"a": 7, "b": 0}, {"dividend": 7, "reason": "division by zero"})],
        refusals=[
            ("shapes__translate", {"p": {"x": 1, "y": 2, "z": 3}, "dx": 300, "dy": 0}, ["/dx", "/p"]),
            ("kinds__echo", {"s": {**SAMPLE, "huge": -1, "shape": "square"}}, ["/s/huge", "/s/shape"]),
        ],
    ),
    "js": Component(
        file="any-component-js.wasm",
        polyglot=True,
        name="inventory",
        calls=[
            ("about", {}, {"result": "componentize-qjs (QuickJS)"}),
            (
                "stock__items",
                {"storage": "fridge", "limit": 5},
                {
                    "result": [
                        {
                            "sku": "B-2",
                            "name": "milk",
                            "count": 3,
                            "storage": "fridge",
                            "hazards": [],
                            "price-cents": 99,
                        },
                        {
                            "sku": "C-3",
                            "name": "eggs",
                            "count": 30,
                            "storage": "fridge",
                            "hazards": ["fragile"],
                            "price-cents": None,
                        },
                    ]
                },
            ),
            ("stock__adjust", {"sku": "A-1", "change": {"add": 3}}, {"result": 15}),
            ("stock__adjust", {"sku": "D-4", "change": "clear"}, {"result": 0}),
            ("stock__value", {"lines": [[189, 12], [99, 3]]}, {"result": 2565}),
        ],
        errors=[
            ("stock__adjust", {"sku": "B-2", "change": {"remove": 5}}, {"not-enough": 3}),
            ("stock__adjust", {"sku": "Z-9", "change": "clear"}, {"unknown-sku": "Z-9"}),
        ],
        refusals=[
            ("stock__items", {"storage": "attic", "limit": 256, "colour": "red"}, ["/limit", "/storage", extra_key("colour")]),
            ("stock__adjust", {"sku": "A-1", "change": {"double": 2}}, ["/change"]),
        ],
    ),
    "python": Component(
        file="any-component-py.wasm",
        polyglot=True,
        name="units",
        calls=[
            ("scale", {"values": [1, -2, 3], "factor": None}, {"result": [2, -4, 6]}),
            (
                "convert__length",
                {"given": {"value": 1.0, "unit": "mile"}, "to": "kilometre"},
                {"value": 1.609344, "unit": "kilometre"},
            ),
            ("convert__to_kelvin", {"temperature": {"celsius": 25.0}}, {"result": 298.15}),
            ("convert__total", {"a": -128, "b": 32767, "c": 5, "d": -10}, {"result": 32634}),
            ("convert__show", {"n": 1234567, "style": ["grouped", "signed"]}, {"result": "+1,234,567"}),
        ],
        errors=[
            (
                "convert__to_kelvin",
                {"temperature": {"fahrenheit": -500.0}},
                {"code": 1, "message": "-22.41 K is below absolute zero"},
            ),
            ("convert__total", {"a": 1, "b": 1, "c": 2147483647, "d": 0}, "2147483649 does not fit an s32"),
        ],
        refusals=[
            ("convert__total", {"a": 128, "b": 0, "c": 0, "d": 2**63, "e": 0}, ["/a", "/d", extra_key("e")]),
            ("convert__to_kelvin", {"temperature": {"rankine": 1.0}}, ["/temperature"]),
        ],
    ),
}


def plugins_with(component: Component, guests_dir: Path, polyglot_dir: Path, tmp_path: Path) -> Path:
    """A fresh plugins directory holding `component` under its plugin name."""
    source = (polyglot_dir if component.polyglot else guests_dir) / component.file
    if not source.is_file():
        raise RuntimeError(f"{source} is not built; run `cargo xtask guests` (or set TOOLHOST_POLYGLOT)")
    plugins = tmp_path / f"plugins-{component.name}"
    plugins.mkdir()
    shutil.copyfile(source, plugins / f"{component.name}.wasm")
    return plugins


@pytest.mark.parametrize("language", COMPONENTS)
async def test_every_function_is_a_tool_with_schemas_and_answers_to_them(
    language: str, launch: Launch, guests_dir: Path, polyglot_dir: Path, tmp_path: Path
) -> None:
    component = COMPONENTS[language]
    plugins = plugins_with(component, guests_dir, polyglot_dir, tmp_path)
    async with launch(plugins) as server, server.connect() as client:
        tools = await client.tools()
        called = {tool for tool, _, _ in component.calls}
        assert called <= tools.keys(), sorted(tools)
        # The WIT's functions and nothing else: not the build-time initializer
        # that componentize-qjs (`init`) and componentize-py (`exports#init`) export.
        assert tools.keys() == called, sorted(tools)
        assert not tools.keys() & INITIALIZERS, sorted(tools)
        for name in called:
            tool = tools[name]
            assert tool.input_schema["type"] == "object", tool
            assert tool.input_schema.get("additionalProperties") is False, tool
            assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool

        for name, arguments, expected in component.calls:
            structured = ok(await client.call(name, arguments))
            assert structured == expected, (name, arguments)
            jsonschema.Draft202012Validator(tools[name].output_schema).validate(structured)

        for name, arguments, value in component.errors:
            result = await client.call(name, arguments)
            text = error(result)
            assert json.dumps(value, separators=(",", ":")) in text, text
            assert result.structured_content is None or not result.structured_content.get("result"), result

        for name, arguments, named in component.refusals:
            text = error(await client.call(name, arguments))
            assert text.startswith(f"invalid arguments for `{name}`"), text
            for fragment in named:
                options = fragment if isinstance(fragment, tuple) else (fragment,)
                assert any(option in text for option in options), (fragment, text)


async def test_three_toolchains_share_one_server(
    launch: Launch, guests_dir: Path, polyglot_dir: Path, tmp_path: Path
) -> None:
    """The three components side by side: one listing, no clashes, each answering."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    for component in COMPONENTS.values():
        source = plugins_with(component, guests_dir, polyglot_dir, tmp_path) / f"{component.name}.wasm"
        shutil.copyfile(source, plugins / source.name)
    async with launch(plugins) as server, server.connect() as client:
        tools = await client.tools()
        for component in COMPONENTS.values():
            name, arguments, expected = component.calls[0]
            assert name in tools, sorted(tools)
            assert ok(await client.call(name, arguments)) == expected


async def test_a_component_of_its_own_wit_is_a_toolset(launch: Launch, make_plugins: PluginsFactory) -> None:
    """`any-component` (plain wit-bindgen, no toolhost SDK; issue 34): its exported
    functions are tools with exact schemas, called like any other."""
    async with launch(make_plugins("any_component")) as server, server.connect() as client:
        tools = await client.tools()
        translate = tools["shapes__translate"]
        assert translate.input_schema["properties"]["dx"] == {"type": "integer", "minimum": -128, "maximum": 127}
        assert translate.output_schema is not None and translate.output_schema["required"] == ["x", "y"]
        moved = await client.call("shapes__translate", {"p": {"x": 1, "y": 2}, "dx": 3, "dy": -4})
        assert ok(moved) == {"x": 4, "y": -2}
        assert moved.structured_content == {"x": 4, "y": -2}
        assert ok(await client.call("greet", {"name": "Ada"})) == {"result": "hello, Ada"}
        text = error(await client.call("shapes__divide", {"a": 7, "b": 0}))
        assert '{"dividend":7,"reason":"division by zero"}' in text, text
        text = error(await client.call("shapes__translate", {"p": {"x": 1, "y": 2}, "dx": 300, "dy": 0}))
        assert text.startswith("invalid arguments for `shapes__translate`") and "/dx" in text, text
