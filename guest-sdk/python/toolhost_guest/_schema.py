"""JSON Schema (draft 2020-12) from Python type hints and docstrings.

Pure Python: runs natively (unit tests) and inside the component at build time.

The rules mirror the Rust SDK and ADK Python:

- ``str``, ``int``, ``float``, ``bool`` → ``string``, ``integer``, ``number``, ``boolean``;
- ``list[X]``, ``tuple[X, ...]``, ``set[X]`` → arrays; ``dict[str, X]`` → an object;
- ``Literal["a", "b"]`` and ``enum.Enum`` subclasses → ``enum``;
- dataclasses and ``TypedDict`` → nested objects;
- ``Optional[X]`` / ``X | None`` → nullable;
- ``Annotated[X, "text"]`` → a description;
- a parameter is required unless it has a default or is nullable (ADK's rule);
- optional means nullable: a parameter or field with a default also accepts
  ``null``, which means "use the default" (OpenAI strict mode makes every
  property required, so a model says "not given" with ``null``; Gemini reads it
  as ``nullable``); the default is kept in ``default`` and stated in the
  description;
- objects (the arguments, dataclasses, ``TypedDict``) are closed:
  ``"additionalProperties": false``, so a misspelt key is an error.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import inspect
import json
import re
import types
import typing
from typing import Any

NoneType = type(None)


class SchemaError(TypeError):
    """A tool's signature cannot be expressed as JSON Schema."""


# --- docstrings -------------------------------------------------------------

_SECTION = re.compile(r"^(\w[\w ]*):\s*$")
_ARG_SECTIONS = {"args", "arguments", "parameters", "params"}
_ATTR_SECTIONS = {"attributes", "fields"}
_ITEM = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str], dict[str, str]]:
    """Splits a Google-style docstring into (description, args, attributes).

    The ``Args:`` (or ``Arguments:``/``Parameters:``) and ``Attributes:``
    sections are removed from the description: their entries become the
    descriptions of parameters and fields. Other sections (``Returns:``,
    ``Raises:``...) stay, as the model may use them.
    """
    if not doc:
        return "", {}, {}
    lines = inspect.cleandoc(doc).splitlines()
    kept: list[str] = []
    sections: dict[str, dict[str, str]] = {"args": {}, "attrs": {}}
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _SECTION.match(line.strip()) if not line.startswith((" ", "\t")) else None
        name = match.group(1).lower() if match else ""
        if name in _ARG_SECTIONS or name in _ATTR_SECTIONS:
            target = sections["args" if name in _ARG_SECTIONS else "attrs"]
            i += 1
            current: str | None = None
            indent: int | None = None
            while i < len(lines):
                body = lines[i]
                if body.strip() and not body.startswith((" ", "\t")):
                    break  # the next top-level line: the section is over
                if not body.strip():
                    i += 1
                    continue
                width = len(body) - len(body.lstrip())
                item = _ITEM.match(body)
                if item and (indent is None or width <= indent):
                    indent = width
                    current = item.group(1)
                    target[current] = item.group(2).strip()
                elif current is not None:
                    joined = f"{target[current]} {body.strip()}"
                    target[current] = joined.strip()
                i += 1
            continue
        kept.append(line)
        i += 1
    description = "\n".join(kept).strip()
    description = re.sub(r"\n{3,}", "\n\n", description)
    return description, sections["args"], sections["attrs"]


# --- type hints -------------------------------------------------------------


def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and typing.is_typeddict(hint)


def is_nullable(hint: Any) -> bool:
    """True if ``None`` is a valid value of the hint (``Optional[X]``, ``X | None``, ``Any``)."""
    if hint is Any or hint is NoneType or hint is None:
        return True
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return is_nullable(typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        return any(is_nullable(arg) for arg in typing.get_args(hint))
    if origin is typing.Literal:
        return None in typing.get_args(hint)
    return False


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    raise SchemaError(f"an enum value must be a string, number, boolean or None, not {value!r}")


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": values}
    kinds = {_json_type(v) for v in values}
    if len(kinds) == 1:
        schema["type"] = kinds.pop()
    elif kinds == {"integer", "number"}:
        schema["type"] = "number"
    return schema


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema plus ``null``, as schemars writes ``Option<T>``."""
    kind = schema.get("type")
    if "enum" in schema:
        schema = dict(schema)
        if None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        if isinstance(kind, str):
            schema["type"] = [kind, "null"]
        return schema
    if isinstance(kind, str) and set(schema) <= {"type", "items", "properties", "required",
                                                  "additionalProperties", "description",
                                                  "prefixItems", "minItems", "maxItems",
                                                  "uniqueItems", "default"}:
        schema = dict(schema)
        schema["type"] = [kind, "null"]
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def schema_of(hint: Any, *, _seen: tuple[Any, ...] = ()) -> dict[str, Any]:
    """The JSON Schema of one type hint.

    Raises:
        SchemaError: the hint has no JSON Schema (a class, a callable, a recursive type...).
    """
    if hint is Any or hint is inspect.Parameter.empty or hint is object:
        return {}
    if hint is NoneType or hint is None:
        return {"type": "null"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is str:
        return {"type": "string"}
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        schema = dict(schema_of(args[0], _seen=_seen))
        notes = [meta for meta in args[1:] if isinstance(meta, str)]
        if notes:
            schema["description"] = " ".join(notes)
        return schema
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in args if arg is not NoneType]
        if len(options) == 1:
            schema = schema_of(options[0], _seen=_seen)
        else:
            schema = {"anyOf": [schema_of(arg, _seen=_seen) for arg in options]}
        return _nullable(schema) if len(options) < len(args) else schema
    if origin is typing.Literal:
        return _enum_schema(list(args))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_schema([member.value for member in hint])
    if hint in (list, set, frozenset, tuple) or origin in (
        list,
        set,
        frozenset,
        collections.abc.Sequence,
        collections.abc.Set,
        collections.abc.Iterable,
        collections.abc.Collection,
    ):
        schema = {"type": "array"}
        if args:
            schema["items"] = schema_of(args[0], _seen=_seen)
        if hint in (set, frozenset) or origin in (set, frozenset, collections.abc.Set):
            schema["uniqueItems"] = True
        return schema
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": schema_of(args[0], _seen=_seen)}
        return {
            "type": "array",
            "prefixItems": [schema_of(arg, _seen=_seen) for arg in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if hint is dict or origin in (dict, collections.abc.Mapping):
        schema = {"type": "object"}
        if args:
            if args[0] is not str:
                raise SchemaError(f"JSON object keys are strings: {hint!r}")
            schema["additionalProperties"] = schema_of(args[1], _seen=_seen)
        return schema
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _object_schema(hint, _seen)
    if _is_typeddict(hint):
        return _object_schema(hint, _seen)
    raise SchemaError(f"cannot express {hint!r} as JSON Schema")


def _object_schema(cls: type, seen: tuple[Any, ...]) -> dict[str, Any]:
    if cls in seen:
        raise SchemaError(f"recursive types are not supported: {cls.__name__}")
    seen = (*seen, cls)
    description, _, attrs = parse_docstring(cls.__doc__ if _own_doc(cls) else None)
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as err:  # a forward reference that does not resolve
        raise SchemaError(f"cannot resolve the type hints of {cls.__name__}: {err}") from err
    properties: dict[str, Any] = {}
    required: list[str] = []
    if dataclasses.is_dataclass(cls):
        for field in dataclasses.fields(cls):
            if not field.init:
                continue
            hint = hints.get(field.name, Any)
            prop = _with_doc(schema_of(hint, _seen=seen), attrs.get(field.name))
            has_default = (
                field.default is not dataclasses.MISSING
                or field.default_factory is not dataclasses.MISSING
            )
            if has_default:
                prop = _optional(prop, hint, field.default)
            properties[field.name] = prop
            if not has_default and not is_nullable(hint):
                required.append(field.name)
    else:  # TypedDict: its own required keys (total=, Required, NotRequired)
        required_keys = getattr(cls, "__required_keys__", frozenset(hints))
        for name, hint in hints.items():
            prop = _with_doc(schema_of(_strip_required(hint), _seen=seen), attrs.get(name))
            if _typeddict_key_required(name, hint, required_keys):
                required.append(name)
            else:
                prop = _optional(prop, _strip_required(hint), dataclasses.MISSING)
            properties[name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    if description:
        schema["description"] = description
    return schema


def _typeddict_key_required(name: str, hint: Any, required_keys: frozenset[str]) -> bool:
    # With postponed annotations Python 3.11 misses `NotRequired` in
    # `__required_keys__`; the resolved hint still says it.
    marker = typing.get_origin(hint)
    return marker is typing.Required or (
        name in required_keys and marker is not typing.NotRequired
    )


def _optional(schema: dict[str, Any], hint: Any, default: Any) -> dict[str, Any]:
    """The schema of a property that is not required ("optional means nullable").

    It also accepts ``null``, which the SDK reads as "not given": OpenAI strict
    mode makes every property required (a model then sends ``null`` for "not
    given") and Gemini reads ``null`` in a type as ``nullable``. A default
    (``dataclasses.MISSING``: none known) stays in ``default`` and is stated in
    the description, unless that already speaks of a default.
    """
    if not is_nullable(hint):
        schema = _nullable(schema)
    if default is not dataclasses.MISSING:
        schema = dict(schema)
        _set_default(schema, default)
        if schema.get("default") is not None:
            schema = _state_default(schema)
    return schema


def _state_default(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with "Defaults to `x`." at the end of its description."""
    value = schema["default"]
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    note = f"Defaults to `{shown}`."
    target = schema["anyOf"][0] if "anyOf" in schema and "description" not in schema else schema
    text = target.get("description", "")
    if "default" in text.lower():
        return schema
    if target is not schema:
        target = dict(target)
        schema = {**schema, "anyOf": [target, *schema["anyOf"][1:]]}
    target["description"] = f"{text.rstrip()} {note}" if text.strip() else note
    return schema


def _own_doc(cls: type) -> bool:
    """Dataclasses get a generated ``__doc__`` (their signature); that is not a description."""
    doc = cls.__doc__ or ""
    return bool(doc) and not doc.startswith(f"{cls.__name__}(")


def _strip_required(hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Required, typing.NotRequired):
        return typing.get_args(hint)[0]
    return hint


def _with_doc(schema: dict[str, Any], doc: str | None) -> dict[str, Any]:
    """The schema described by a parameter's or field's own doc: it says more
    about this use than the type's docstring (schemars does the same)."""
    if doc:
        schema = dict(schema)
        schema["description"] = doc
    return schema


def _set_default(schema: dict[str, Any], default: Any) -> None:
    """Records a default in the schema, if it is JSON (models read it)."""
    try:
        value = to_jsonable(default)
        json.dumps(value)
    except (TypeError, ValueError):
        return
    schema["default"] = value


def to_jsonable(value: Any) -> Any:
    """A value made of dicts, lists and scalars: dataclasses, enums, tuples and sets converted."""
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: to_jsonable(getattr(value, field.name))
            for field in dataclasses.fields(value)
        }
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(item) for item in value]
    dump = getattr(value, "model_dump", None)  # pydantic models
    if callable(dump):
        return to_jsonable(dump(mode="json"))
    return value


# --- functions --------------------------------------------------------------


def signature_schema(
    func: Any, context_type: type, *, allow_unknown_args: bool = False
) -> tuple[dict[str, Any], str, str | None]:
    """The input schema of a tool function, its description, and the name of its
    context parameter (a parameter annotated with ``context_type``), if any.

    The schema refuses keys that are not parameters (``"additionalProperties":
    false``); with ``allow_unknown_args`` it says ``true`` instead.

    Raises:
        SchemaError: a parameter cannot be expressed (``*args``, an unknown type...).
    """
    description, arg_docs, _ = parse_docstring(inspect.getdoc(func))
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception as err:
        raise SchemaError(f"cannot resolve the type hints of {func.__name__}: {err}") from err
    properties: dict[str, Any] = {}
    required: list[str] = []
    context_param = None
    for name, param in inspect.signature(func).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise SchemaError(f"{func.__name__}: *args and **kwargs have no schema ({name})")
        if param.kind is param.POSITIONAL_ONLY:
            raise SchemaError(f"{func.__name__}: positional-only parameter {name}")
        hint = hints.get(name, Any)
        if hint is context_type:
            context_param = name
            continue
        try:
            prop = _with_doc(schema_of(hint), arg_docs.get(name))
        except SchemaError as err:
            raise SchemaError(f"{func.__name__}, parameter {name}: {err}") from err
        if param.default is not param.empty:
            prop = _optional(prop, hint, param.default)
        elif not is_nullable(hint):
            required.append(name)
        properties[name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = allow_unknown_args
    return schema, description, context_param


# --- arguments --------------------------------------------------------------


def from_json(value: Any, hint: Any) -> Any:
    """Converts a JSON value (already checked against the schema by the host) into
    the hinted Python type: dataclasses, enums, tuples, sets and floats.

    Raises:
        ValueError, TypeError: the value does not fit the hint.
    """
    if value is None or hint is Any or hint is inspect.Parameter.empty:
        return value
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return from_json(value, args[0])
    if origin in (typing.Required, typing.NotRequired):
        return from_json(value, args[0])
    if origin in (typing.Union, types.UnionType):
        errors = []
        for option in (arg for arg in args if arg is not NoneType):
            try:
                return from_json(value, option)
            except (TypeError, ValueError) as err:
                errors.append(str(err))
        raise ValueError("; ".join(errors) or f"{value!r} fits no option of {hint!r}")
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, dict):
            raise TypeError(f"{hint.__name__} is an object, not {type(value).__name__}")
        hints = typing.get_type_hints(hint, include_extras=True)
        defaulted = {
            field.name
            for field in dataclasses.fields(hint)
            if field.default is not dataclasses.MISSING
            or field.default_factory is not dataclasses.MISSING
        }
        fields = {field.name for field in dataclasses.fields(hint) if field.init}
        kwargs = {
            key: from_json(item, hints.get(key, Any))
            for key, item in value.items()
            # Unknown keys are ignored, as serde does; null is "not given" where
            # there is a default (optional means nullable).
            if key in fields and not (item is None and key in defaulted)
        }
        for field in dataclasses.fields(hint):
            no_default = field.name not in defaulted
            if field.init and field.name not in kwargs and no_default:
                if not is_nullable(hints.get(field.name, Any)):
                    raise ValueError(f"missing field `{field.name}` of {hint.__name__}")
                kwargs[field.name] = None
        return hint(**kwargs)
    if _is_typeddict(hint):
        if not isinstance(value, dict):
            raise TypeError(f"{hint.__name__} is an object, not {type(value).__name__}")
        hints = typing.get_type_hints(hint, include_extras=True)
        required_keys = getattr(hint, "__required_keys__", frozenset(hints))
        return {
            key: from_json(item, hints.get(key, Any))
            for key, item in value.items()
            # A key that is not required and is null is not given.
            if not (
                item is None
                and key in hints
                and not _typeddict_key_required(key, hints[key], required_keys)
            )
        }
    if isinstance(value, list):
        item_hint = args[0] if args else Any
        if origin is tuple or hint is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return tuple(from_json(item, args[0]) for item in value)
            if args:
                return tuple(from_json(item, h) for item, h in zip(value, args, strict=True))
            return tuple(value)
        items = [from_json(item, item_hint) for item in value]
        if hint in (set, frozenset) or origin in (set, frozenset, collections.abc.Set):
            return frozenset(items) if frozenset in (hint, origin) else set(items)
        return items
    if isinstance(value, dict) and origin in (dict, collections.abc.Mapping) and len(args) == 2:
        return {key: from_json(item, args[1]) for key, item in value.items()}
    return value
