"""Every example tool's `inputSchema`, and every component toolset tool's
`inputSchema` and `outputSchema`, through the frameworks' real converters
(see checks.py for what each check asserts), and the checks proven on
hand-written schemas that must fail them."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from checks import CHECKS, Schema
from conftest import (
    cache_dir,
    component_files,
    component_tools,
    example_tools,
    guests_dir,
    plugins_dir,
    polyglot_dir,
    toolhost_bin,
)

#: A hang guard (never a timing assertion): inspecting compiles the component.
INSPECT_S = 300


#: Component tools' schemas a check is known to fail, by (component, tool,
#: "input"/"output"), with the checks and why: e.g.
#: `("any-component-py", "convert__show", "input"): (("genai", "adk_legacy"), "...")`.
#: Each is an expected failure, strict: once the schema generator
#: (host/src/plugin/dynamic/schema.rs) is fixed, the test fails until the entry
#: goes. None now (flags' `uniqueItems`, which both Gemini converters dropped,
#: is gone: a flag named twice counts once).
KNOWN: dict[tuple[str, str, str], tuple[tuple[str, ...], str]] = {}

#: Functions each component toolset must list (its WIT: tests/plugins/NAME/wit).
COMPONENT_TOOLS = {
    "any-component": {
        "greet",
        "shapes__translate",
        "shapes__divide",
        "shapes__spin",
        "kinds__echo",
        "kinds__name_shape",
    },
    "any-component-js": {"about", "stock__items", "stock__adjust", "stock__value"},
    "any-component-py": {"scale", "convert__length", "convert__to_kelvin", "convert__total", "convert__show"},
}


def _component_cases() -> list[Any]:
    """(schema, check) for each component tool's input and output schema and each check."""
    cases = []
    for component, tools in component_tools().items():
        for tool in tools:
            for side, schema in (("input", tool.inputSchema), ("output", tool.outputSchema)):
                if schema is None:  # a function without a result has no output schema
                    continue
                known = KNOWN.get((component, tool.name, side))
                for check in CHECKS:
                    marks = []
                    if known and check in known[0]:
                        marks = [pytest.mark.xfail(reason=known[1], strict=True)]
                    cases.append(
                        pytest.param(schema, check, marks=marks, id=f"{component}/{tool.name}/{side}-{check}")
                    )
    return cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # One test ID per tool: its MCP name (the listing is the one a client gets).
    if "tool" in metafunc.fixturenames:
        tools = example_tools()
        metafunc.parametrize("tool", tools, ids=[t.name for t in tools])
    if "component_schema" in metafunc.fixturenames:
        metafunc.parametrize(("component_schema", "check"), _component_cases())


def test_every_example_is_listed() -> None:
    # Guards the parametrization: a plugin that failed to load would just vanish.
    assert len(example_tools()) >= 28, [t.name for t in example_tools()]


def test_every_component_toolset_is_listed() -> None:
    # Guards the component parametrization the same way: a component that did
    # not load lists no tools, and its schemas would go unchecked.
    listed = component_tools()
    assert set(listed) == set(COMPONENT_TOOLS), listed.keys()
    for component, expected in COMPONENT_TOOLS.items():
        names = {t.name for t in listed[component]}
        assert expected <= names, f"{component}: {sorted(names)}"
        # Every one of these functions returns a value: each has an output schema to check.
        outputs = {t.name for t in listed[component] if t.outputSchema is not None}
        assert expected <= outputs, f"{component}: output schemas of {sorted(outputs)}"
    for component, tool, side in KNOWN:
        assert tool in COMPONENT_TOOLS[component] and side in ("input", "output"), (component, tool, side)


@pytest.mark.parametrize("check", CHECKS)
def test_schema(tool, check: str) -> None:
    problems = CHECKS[check](tool.inputSchema)
    assert not problems, f"{tool.name} through {check}:\n  " + "\n  ".join(problems)


def test_component_schema(component_schema: Schema, check: str) -> None:
    # The converters are for inputs; output schemas go through them too: a
    # strict structured output takes the same subset (and ADK, with its
    # JSON-schema declarations on, sends `outputSchema` to Gemini as it is).
    problems = CHECKS[check](component_schema)
    assert not problems, f"through {check}:\n  " + "\n  ".join(problems)


def _object(**properties: Schema) -> Schema:
    return {"type": "object", "additionalProperties": False, "properties": properties}


#: Schemas each check must flag, with a word its problem names.
BAD: dict[str, tuple[Schema, dict[str, str]]] = {
    # A map: strict mode refuses open objects; Gemini drops the value schema.
    "string_map": (
        _object(headers={"type": "object", "additionalProperties": {"type": "string"}, "description": "Headers."}),
        {"openai_strict": "fails", "genai": "additionalProperties", "adk_legacy": "additionalProperties"},
    ),
    # An optional enum as schemars writes it: strict mode refuses the bare
    # `$ref`; genai keeps the enum's description instead of the field's.
    "bare_ref_in_anyof": (
        {
            **_object(mode={"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}], "description": "How."}),
            "$defs": {"Mode": {"type": "string", "enum": ["a", "b"], "description": "A mode."}},
        },
        {"openai_strict": "fails", "genai": "description", "adk_legacy": None},
    ),
    # An optional field with a default: required and non-null in strict mode;
    # genai drops a `$ref`'s sibling default; no type at all for Gemini.
    "optional_default_untyped": (
        {
            **_object(
                flag={"type": "boolean", "default": False, "description": "A flag."},
                level={"$ref": "#/$defs/Level", "default": "low", "description": "The level."},
                document={"description": "Any JSON."},
            ),
            "required": ["document"],
            "$defs": {"Level": {"type": "string", "enum": ["low", "high"]}},
        },
        {"openai_strict": "cannot be null", "genai": "default", "adk_legacy": "no type"},
    ),
    # `option<variant>` as the component toolsets first wrote it: a `null`
    # branch among three; both Gemini converters keep it as a typeless
    # `nullable`, so `null` is lost (a nullable first branch is the fix).
    "null_branch_among_three": (
        _object(
            shape={
                "anyOf": [
                    {"type": "string", "enum": ["dot"]},
                    _object(circle={"type": "number"}) | {"required": ["circle"]},
                    {"type": "null"},
                ],
                "description": "A shape, or none.",
            }
        )
        | {"required": ["shape"]},
        {"openai_strict": None, "genai": 'type="null"', "adk_legacy": 'type="null"'},
    ),
}


#: Each (schema, check) pair with an expectation: a `None` in BAD means the check
#: is not meant to flag that schema, so no case is made for it (one that returned
#: early would pass whatever the check did).
FLAGGED = [(name, check) for name, (_, expected) in BAD.items() for check in CHECKS if expected[check] is not None]


@pytest.mark.parametrize(("name", "check"), FLAGGED, ids=[f"{name}-{check}" for name, check in FLAGGED])
def test_checks_flag_bad_schemas(name: str, check: str) -> None:
    schema, expected = BAD[name]
    problems = CHECKS[check](schema)
    word = expected[check]
    assert any(word in p for p in problems), f"{check} did not flag {name} ({word!r}): {problems}"


def test_every_bad_schema_is_flagged_by_some_check() -> None:
    # Guards BAD itself: an entry no check is expected to flag proves nothing.
    unflagged = [name for name, (_, expected) in BAD.items() if all(w is None for w in expected.values())]
    assert not unflagged, unflagged


def test_checks_pass_portable_shapes() -> None:
    # The shapes the SDKs are to write (issue 18 §1c): nullable optionals,
    # maps as name/value pairs, "any JSON" as a string. No check flags them.
    schema = {
        **_object(
            alphabet={"type": ["string", "null"], "enum": ["standard", "url_safe", None], "description": "The alphabet."},
            headers={
                "type": "array",
                "description": "Headers, as name/value pairs.",
                "items": {
                    **_object(name={"type": "string"}, value={"type": "string"}),
                    "required": ["name", "value"],
                },
            },
            document={"type": "string", "description": "JSON text."},
            padding={"type": ["boolean", "null"], "description": "Add padding (default true)."},
        ),
        "required": ["headers", "document"],
    }
    for check, run in CHECKS.items():
        assert run(schema) == [], check


#: Test plugins whose schemas some dialect refuses or changes (a hand-written
#: free-form object; non-nullable optionals), beside the examples: where the
#: verdicts of `toolhost inspect` and the converters could disagree.
MIXED = {"guests": ["raw", "echo", "conformance"], "polyglot": ["conformance-go", "conformance-c"]}


def _inspected() -> list[tuple[str, dict[str, Any]]]:
    """(file, tool) for each tool of the examples, of MIXED and of the component
    toolsets, from `toolhost inspect --json`."""
    files = sorted(plugins_dir().glob("*.wasm"))
    files += [guests_dir() / f"{name}.wasm" for name in MIXED["guests"]]
    files += [polyglot_dir() / f"{name}.wasm" for name in MIXED["polyglot"]]
    files += list(component_files().values())
    tools = []
    for file in files:
        out = subprocess.run(
            [str(toolhost_bin()), "--cache-dir", str(cache_dir()), "inspect", str(file), "--json"],
            capture_output=True,
            text=True,
            timeout=INSPECT_S,
        )
        assert out.returncode == 0, f"inspect {file.name}: {out.stderr}"
        report = json.loads(out.stdout)
        assert report["tools"], f"{file.name}: {report.get('error')}"
        tools += [(file.stem, tool) for tool in report["tools"]]
    return tools


#: toolhost's dialect and the converters that stand for it.
AGREES = {"openai-strict": ["openai_strict"], "gemini": ["genai", "adk_legacy"]}


def test_toolhost_check_agrees_with_the_converters() -> None:
    """`toolhost inspect`'s verdicts (the same as `list --check`'s) say "a
    problem" exactly where the converters find one. Warnings count as problems
    here: strict mode's "optional but not nullable" is a warning for toolhost
    (the provider takes the schema) and a problem for the converter check."""
    disagreements = []
    seen = {"agree-clean": 0, "agree-flagged": 0}
    for plugin, tool in _inspected():
        for dialect, checks in AGREES.items():
            ours = tool["dialects"][dialect]["problems"]
            theirs = [p for check in checks for p in CHECKS[check](tool["parameters"])]
            if bool(ours) != bool(theirs):
                disagreements.append(f"{plugin}.{tool['name']} {dialect}: toolhost {ours}, converters {theirs}")
            else:
                seen["agree-flagged" if ours else "agree-clean"] += 1
    assert not disagreements, "\n".join(disagreements)
    # Both kinds of case were seen: the comparison can fail either way.
    assert seen["agree-flagged"] >= 3 and seen["agree-clean"] >= 28 * 2, seen
