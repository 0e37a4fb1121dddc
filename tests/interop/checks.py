"""The schema checks: what each framework's real converter does to an `inputSchema`.

Each check takes a tool's MCP `inputSchema` and returns the problems it finds,
one line each (empty: the schema survives that converter):

- `openai_strict`: openai-agents' strict-mode conversion, applied as
  `agents/mcp/util.py` applies it when `convert_schemas_to_strict` is on, must
  not raise (openai-agents then sends the tool non-strict: asked of
  `MCPUtil.to_function_tool` itself), and every
  property that was optional must come out nullable: strict mode makes every
  property required, so an optional non-nullable one becomes mandatory.
- `genai`: google-genai's `types.Schema.from_json_schema` (what Gemini clients
  built on the SDK convert with), and
- `adk_legacy`: ADK's `_to_gemini_schema` (ADK's path when its
  `JSON_SCHEMA_FOR_FUNC_DECL` feature is off), must lose nothing: see `losses`.

`_reject_open_objects` and `_to_gemini_schema` are private names; they are
imported here only, and a missing one fails with the pinned version in the
message (see requirements.txt).
"""

from __future__ import annotations

import copy
import importlib
import json
import logging
from collections.abc import Callable
from typing import Any

Schema = dict[str, Any]

#: The pins the private names below were read from (requirements.txt).
PINS = {"agents": "openai-agents==0.24.0", "google.adk": "google-adk==2.13.0", "google.genai": "google-genai==2.34.0"}


def _private(module: str, name: str) -> Any:
    """`module.name`, or an ImportError that names the version it was written against."""
    package = next(p for p in PINS if module == p or module.startswith(p + "."))
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise ImportError(
            f"`{module}.{name}` is gone: these checks were written against {PINS[package]} "
            f"(tests/interop/requirements.txt); read the new version's converter and update checks.py"
        ) from err


# --- OpenAI strict mode ------------------------------------------------------------


def openai_strict(schema: Schema) -> list[str]:
    """Problems openai-agents' strict conversion has with `schema`."""
    problems = _agents_sends_strict(schema) + _strict_conversion(schema)
    return list(dict.fromkeys(problems))


def _agents_sends_strict(schema: Schema) -> list[str]:
    """openai-agents' own MCP path (`MCPUtil.to_function_tool`, strict on): is the tool sent strict?"""
    from agents.mcp import MCPServerStdio
    from agents.mcp.util import MCPUtil
    from mcp import types

    # Never started: converting a listed tool does not talk to the server.
    server = MCPServerStdio(params={"command": "toolhost", "args": ["serve"]})
    tool = types.Tool(name="tool", description="A tool.", inputSchema=copy.deepcopy(schema))
    logging.disable(logging.INFO)  # it logs the conversion error at INFO; _strict_conversion says it
    try:
        strict = MCPUtil.to_function_tool(tool, server, True).strict_json_schema
    finally:
        logging.disable(logging.NOTSET)
    return [] if strict else ["$: openai-agents sends this tool non-strict (its strict conversion failed)"]


def _strict_conversion(schema: Schema) -> list[str]:
    """The conversion `MCPUtil` runs, repeated to say why it fails or what it makes mandatory."""
    ensure_strict_json_schema = _private("agents.strict_schema", "ensure_strict_json_schema")
    source = copy.deepcopy(schema)
    # As agents/mcp/util.py does: an empty schema may stay open; `properties` is added.
    empty = source == {}
    source.setdefault("properties", {})
    try:
        out = ensure_strict_json_schema(copy.deepcopy(source), _reject_open_objects=not empty)
    except TypeError as err:
        if "_reject_open_objects" in str(err):
            raise ImportError(f"`_reject_open_objects` is gone: written against {PINS['agents']}") from err
        return [f"$: the conversion fails: {type(err).__name__}: {err}"]
    except Exception as err:  # noqa: BLE001 - any failure is what openai-agents logs and ignores
        return [f"$: the conversion fails: {type(err).__name__}: {err}"]
    return _optional_made_mandatory(source, out, source, out, "$", 0)


def _optional_made_mandatory(src: Any, out: Any, src_root: Schema, out_root: Schema, path: str, depth: int) -> list[str]:
    """Properties optional in `src` that `out` requires without letting them be null."""
    if depth > 32:  # a recursive type: its first levels were checked
        return []
    src, out = _resolve(src, src_root), _resolve(out, out_root)
    if not isinstance(src, dict) or not isinstance(out, dict):
        return []
    found = []
    required = set(src.get("required", []))
    out_props = out.get("properties", {})
    for name, prop in src.get("properties", {}).items():
        after = out_props.get(name)
        here = f"{path}.{name}"
        if after is None:
            found.append(f"{here}: dropped by the conversion")
            continue
        if name not in required and not _nullable(after, out_root):
            found.append(f"{here}: optional, but strict mode makes it required and it cannot be null")
        found += _optional_made_mandatory(prop, after, src_root, out_root, here, depth + 1)
    if "items" in src and "items" in out:
        found += _optional_made_mandatory(src["items"], out["items"], src_root, out_root, f"{path}[]", depth + 1)
    for key in ("anyOf", "oneOf"):
        branches = out.get("anyOf", [])
        for i, branch in enumerate(src.get(key, [])):
            if i < len(branches):
                found += _optional_made_mandatory(branch, branches[i], src_root, out_root, f"{path}|{i}", depth + 1)
    return found


def _nullable(schema: Any, root: Schema) -> bool:
    """Whether `schema` accepts null (an `enum`, if any, must list it too)."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    typed = kind == "null" or (isinstance(kind, list) and "null" in kind)
    if typed and ("enum" not in schema or None in schema["enum"]):
        return True
    return any(_nullable(branch, root) for branch in schema.get("anyOf", []))


def _resolve(schema: Any, root: Schema) -> Any:
    """A local `$ref` replaced by its target, the node's other keywords winning."""
    if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
        return schema
    ref = schema["$ref"]
    if not ref.startswith("#/"):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        target = target.get(part) if isinstance(target, dict) else None
    if not isinstance(target, dict):
        return schema
    merged = dict(_resolve(target, root) if target is not schema else target)
    merged.update({k: v for k, v in schema.items() if k != "$ref"})
    return merged


# --- Gemini: google-genai and ADK's legacy converter --------------------------------

#: JSON Schema keyword -> `google.genai.types.Schema` field.
FIELDS = {
    "type": "type", "enum": "enum", "format": "format", "description": "description",
    "minimum": "minimum", "maximum": "maximum", "minItems": "min_items", "maxItems": "max_items",
    "minLength": "min_length", "maxLength": "max_length", "pattern": "pattern", "default": "default",
    "additionalProperties": "additional_properties", "required": "required", "properties": "properties",
    "items": "items", "anyOf": "any_of", "title": "title", "const": "const", "oneOf": "one_of",
}  # fmt: skip


def genai(schema: Schema) -> list[str]:
    """What google-genai's `Schema.from_json_schema` loses of `schema`."""
    types = importlib.import_module("google.genai.types")

    def convert(s: Schema) -> Any:
        return types.Schema.from_json_schema(json_schema=types.JSONSchema(**s))

    return _through(convert, schema)


def adk_legacy(schema: Schema) -> list[str]:
    """What ADK's legacy `_to_gemini_schema` loses of `schema`."""
    return _through(_private("google.adk.tools._gemini_schema_util", "_to_gemini_schema"), schema)


def _through(convert: Callable[[Schema], Any], schema: Schema) -> list[str]:
    # Both warn (through `logging`) about what they drop; the diff below says it.
    logging.disable(logging.WARNING)
    try:
        out = convert(copy.deepcopy(schema)).model_dump(exclude_none=True, mode="json")
    except Exception as err:  # noqa: BLE001 - a schema the converter refuses is the finding
        return [f"$: the conversion fails: {type(err).__name__}: {str(err)[:300]}"]
    finally:
        logging.disable(logging.NOTSET)
    return losses(schema, out, schema)


def losses(src: Any, out: Any, root: Schema, path: str = "$", depth: int = 0) -> list[str]:
    """What the Gemini schema `out` lost of the JSON Schema `src`.

    As the research's `gemini_check.py` defines it: every keyword of `src`
    (a `$ref` resolved, its siblings winning) must reach its `Schema` field,
    recursively through `properties`, `items` and `anyOf`; `anyOf [X, null]`
    may become X + `nullable`, and a type list one type. On top of that every
    property keeps its description, enum and default *values* (not some other
    node's), a type, and its nullability. `additionalProperties: false` is no
    loss: Gemini has no closed objects, and a model needs none.
    """
    if depth > 32 or not isinstance(src, dict):
        return []
    src = _resolve(src, root)
    out = out or {}
    lost = []
    for key, value in src.items():
        if key in ("$defs", "$schema", "$ref") or (key == "additionalProperties" and value is False):
            continue
        field = FIELDS.get(key)
        if field is None or out.get(field) is None:
            if key == "anyOf" and out.get("nullable"):
                continue
            if key == "type" and isinstance(value, list) and (out.get("type") or out.get("any_of")):
                continue
            lost.append(f"{path}.{key}={json.dumps(value)[:60]}")
            continue
        if key == "properties":
            for name, prop in value.items():
                after = out["properties"].get(name)
                lost += _property(prop, after, root, f"{path}.{name}")
                lost += losses(prop, after, root, f"{path}.{name}", depth + 1)
        elif key == "items":
            lost += losses(value, out["items"], root, f"{path}[]", depth + 1)
        elif key == "anyOf":
            branches = out["any_of"]
            for i, branch in enumerate(value):
                lost += losses(branch, branches[i] if i < len(branches) else None, root, f"{path}|{i}", depth + 1)
    return lost


def _property(src: Any, out: Any, root: Schema, path: str) -> list[str]:
    """A property's description, enum, default, type and nullability, compared by value."""
    src = _resolve(src, root)
    if not isinstance(src, dict):
        return []
    out = out or {}
    plain = _plain(src, root)
    lost = []
    for key, field in (("description", "description"), ("default", "default")):
        # A missing field is the generic diff's finding; this one is a value swapped for another.
        if key in plain and out.get(field) is not None and out[field] != plain[key]:
            lost.append(f"{path}: {key} {json.dumps(plain[key])[:60]} became {json.dumps(out.get(field))[:60]}")
    if "enum" in plain:
        wanted = [v for v in plain["enum"] if v is not None]
        if [v for v in out.get("enum") or [] if v is not None] != wanted:
            lost.append(f"{path}: enum {json.dumps(wanted)[:60]} became {json.dumps(out.get('enum'))[:60]}")
    if not out.get("type") and not any(b.get("type") for b in out.get("any_of", [])):
        lost.append(f"{path}: has no type")
    if _nullable_src(src, root) and not out.get("nullable") and not any(b.get("nullable") for b in out.get("any_of", [])):
        lost.append(f"{path}: nullable, but not after the conversion")
    return lost


def _plain(src: Schema, root: Schema) -> Schema:
    """A property's own keywords, with `anyOf [X, null]`'s X merged under them."""
    branches = [_resolve(b, root) for b in src.get("anyOf", [])]
    others = [b for b in branches if isinstance(b, dict) and b.get("type") != "null"]
    if len(others) == 1 and len(branches) == 2:
        return {**others[0], **{k: v for k, v in src.items() if k != "anyOf"}}
    return src


def _nullable_src(src: Schema, root: Schema) -> bool:
    kind = src.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(b, dict) and _resolve(b, root).get("type") == "null" for b in src.get("anyOf", []))


#: The checks by name, as the tests parametrize them.
CHECKS: dict[str, Callable[[Schema], list[str]]] = {
    "openai_strict": openai_strict,
    "genai": genai,
    "adk_legacy": adk_legacy,
}
