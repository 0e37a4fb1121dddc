"""The component side: exports the registered tools as ``toolhost:plugin/tools``.

A plugin's app module ends with ``from toolhost_guest.component import Tools``:
componentize-py looks for a class named ``Tools`` in the app module. This module
imports the bindings componentize-py generates, so it only loads inside a build.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import tools as wit_tools
from wit_world.imports import host as wit_host
from wit_world.imports import types as wit

from . import registry
from ._core import Caller, Context, Declaration, Part, ToolError, UnknownTool

_LEVELS = {
    "trace": wit_host.Level.TRACE,
    "debug": wit_host.Level.DEBUG,
    "info": wit_host.Level.INFO,
    "warn": wit_host.Level.WARN,
    "error": wit_host.Level.ERROR,
}

_MEDIA = {
    "image": wit.MediaKind.IMAGE,
    "audio": wit.MediaKind.AUDIO,
    "video": wit.MediaKind.VIDEO,
    "file": wit.MediaKind.FILE,
}


class _WitHost:
    """The host interface, through the generated bindings."""

    def log(self, level: str, message: str) -> None:
        wit_host.log(_LEVELS[level], message)

    def state_get(self, key: str) -> str | None:
        return wit_host.state_get(key)

    def state_set(self, key: str, value: str) -> None:
        wit_host.state_set(key, value)

    def state_delete(self, key: str) -> None:
        wit_host.state_delete(key)


_HOST = _WitHost()


def _caller(caller: wit.Caller | None) -> Caller | None:
    if caller is None:
        return None
    claims = json.loads(caller.claims) if caller.claims else {}
    return Caller(
        issuer=caller.issuer,
        subject=caller.subject,
        scopes=tuple(caller.scopes),
        claims=claims if isinstance(claims, dict) else {},
    )


def _context(call: wit.Call) -> Context:
    return Context(call.call_id, call.invocation_id, call.tool, _HOST, _caller(call.caller))


def _error(err: ToolError) -> Err:
    if err.kind == "invalid-arguments":
        return Err(wit.ToolError_InvalidArguments(err.message))
    if isinstance(err, UnknownTool):
        return Err(wit.ToolError_UnknownTool(err.message))
    return Err(wit.ToolError_Failed(err.message))


def _part(part: Part) -> wit.Part:
    if part.kind == "text":
        return wit.Part_Text(part.content)
    if part.kind == "json":
        return wit.Part_Json(part.content)
    return wit.Part_Blob(
        wit.Blob(kind=_MEDIA[part.kind], mime_type=part.mime_type, name=part.name, data=part.data)
    )


def _declaration(decl: Declaration) -> wit.Declaration:
    return wit.Declaration(
        info=wit.ToolInfo(
            name=decl.name,
            description=decl.description,
            long_running=decl.long_running,
            hints=wit.ToolHints(
                title=decl.hints.title,
                read_only=decl.hints.read_only,
                destructive=decl.hints.destructive,
                idempotent=decl.hints.idempotent,
                open_world=decl.hints.open_world,
            ),
        ),
        input_schema=json.dumps(decl.input_schema),
        output_schema=None if decl.output_schema is None else json.dumps(decl.output_schema),
        streaming=decl.streaming,
    )


# Computed while componentize-py pre-initializes the app: the build fails on a
# bad declaration, and `declarations` costs nothing at load time.
_DECLARATIONS = [_declaration(decl) for decl in registry.declarations()]


class _Chunks(wit_tools.Chunks):
    """The ``chunks`` resource: a stream being pulled by the host."""

    def __init__(self, items: Iterator[Part]) -> None:
        self._items: Iterator[Part] | None = items

    def next(self) -> wit.Part | None:
        if self._items is None:
            return None
        try:
            return _part(next(self._items))
        except StopIteration:
            self._items = None
            return None
        except ToolError as err:
            # After an error the stream is over: `none` from then on.
            self._items = None
            raise _error(err) from None
        except Exception as err:  # noqa: BLE001 - an escaping exception traps the guest
            self._items = None
            raise _error(ToolError(f"{type(err).__name__}: {err}")) from None


class Tools(exports.Tools):
    """The ``tools`` interface of the ``plugin`` world, over the ``@tool`` registry."""

    def declarations(self) -> list[wit.Declaration]:
        return list(_DECLARATIONS)

    def invoke(self, call: wit.Call) -> wit.Output:
        try:
            result = registry.invoke(call.tool, call.arguments, _context(call))
            return wit.Output(json=result.json, parts=[_part(part) for part in result.parts])
        except ToolError as err:
            raise _error(err) from None
        except Exception as err:  # noqa: BLE001 - an escaping exception traps the guest
            raise _error(ToolError(f"{type(err).__name__}: {err}")) from None

    def invoke_stream(self, call: wit.Call) -> wit_tools.Chunks:
        try:
            items = registry.stream(call.tool, call.arguments, _context(call))
        except ToolError as err:
            raise _error(err) from None
        return _Chunks(items)
