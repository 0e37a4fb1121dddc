"""The component side: exports the registered tools as ``toolhost:plugin/tools``
and the catalog as ``toolhost:plugin/catalog`` (world ``catalog-plugin``).

A plugin's app module ends with ``from toolhost_guest.component import Catalog,
Tools``: componentize-py looks in the app module for a class per exported
interface. This module imports the bindings componentize-py generates, so it
only loads inside a build.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import tools as wit_tools
from wit_world.imports import host as wit_host
from wit_world.imports import types as wit

from . import catalog, registry
from ._catalog import Contents, Message
from ._core import (
    AskError,
    Caller,
    Context,
    Declaration,
    Part,
    ToolError,
    UnknownTool,
)

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

    def resource_updated(self, uri: str) -> None:
        wit_host.resource_updated(uri)

    def ask(self, message: str, schema: str) -> tuple[str, str | None]:
        try:
            answer = wit_host.ask(wit.Question(message=message, schema=schema))
        except Err as err:
            raise _ask_error(err.value) from None
        if isinstance(answer, wit.Answer_Accept):
            return "accept", answer.value
        if isinstance(answer, wit.Answer_Decline):
            return "decline", None
        return "cancel", None


def _ask_error(err: wit.AskError) -> AskError:
    if isinstance(err, wit.AskError_Unavailable):
        return AskError("unavailable", err.value)
    if isinstance(err, wit.AskError_Invalid):
        return AskError("invalid", err.value)
    if isinstance(err, wit.AskError_TooMany):
        return AskError("too-many", err.value)
    return AskError("timeout")


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


def _request_context(request: wit.Request, target: str) -> Context:
    """The context of a catalog request; ``target`` is what ``Context.tool`` names."""
    return Context(
        request.call_id, request.invocation_id, target, _HOST, _caller(request.caller)
    )


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


# --- catalog ------------------------------------------------------------------


def _contents(contents: Contents) -> wit.ResourceContents:
    body = (
        wit.Body_Text(contents.body)
        if isinstance(contents.body, str)
        else wit.Body_Bytes(contents.body)
    )
    return wit.ResourceContents(uri=contents.uri or "", mime_type=contents.mime_type, body=body)


def _message(message: Message) -> wit.PromptMessage:
    content = message.content
    wit_content = (
        wit.MessageContent_Resource(_contents(content))
        if isinstance(content, Contents)
        else wit.MessageContent_Part(_part(content))
    )
    role = wit.Role.USER if message.role == "user" else wit.Role.ASSISTANT
    return wit.PromptMessage(role=role, content=wit_content)


def _describe() -> wit.Catalog:
    catalog.check()
    return wit.Catalog(
        resources=[
            wit.ResourceInfo(
                uri=r.uri, name=r.name, title=r.title, description=r.description,
                mime_type=r.mime_type, size=r.size,
            )
            for r in catalog.resources()
        ],
        templates=[
            wit.ResourceTemplateInfo(
                uri_template=t.uri_template, name=t.name, title=t.title,
                description=t.description, mime_type=t.mime_type,
            )
            for t in catalog.templates()
        ],
        prompts=[
            wit.PromptInfo(
                name=p.name,
                title=p.title,
                description=p.description,
                arguments=[
                    wit.PromptArgument(
                        name=a.name, title=a.title, description=a.description,
                        required=a.required,
                    )
                    for a in p.arguments
                ],
            )
            for p in catalog.prompts()
        ],
    )


# Like the declarations: computed at build time, so a completion of something
# undeclared fails the build.
_CATALOG = _describe()


def _serve(run):  # noqa: ANN001, ANN202 - a private helper over the handlers
    try:
        return run()
    except ToolError as err:
        raise _error(err) from None
    except Exception as err:  # noqa: BLE001 - an escaping exception traps the guest
        raise _error(ToolError(f"{type(err).__name__}: {err}")) from None


class Catalog(getattr(exports, "Catalog", object)):  # type: ignore[misc]
    """The ``catalog`` interface of the ``catalog-plugin`` world, over the
    ``@resource``, ``@resource_template``, ``@prompt`` and ``@complete`` catalog.
    (Built for the ``plugin`` world, the bindings have no ``Catalog`` to
    subclass, and nothing calls it.)"""

    def describe(self) -> wit.Catalog:
        return _CATALOG

    def read_resource(self, read: wit.Read) -> list[wit.ResourceContents]:
        cx = _request_context(read.request, read.uri)
        return _serve(lambda: [
            _contents(c)
            for c in catalog.read(cx, read.uri, read.template, dict(read.variables))
        ])

    def get_prompt(self, get: wit.Get) -> wit.PromptMessages:
        cx = _request_context(get.request, get.name)

        def run() -> wit.PromptMessages:
            messages = catalog.get(cx, get.name, dict(get.arguments))
            return wit.PromptMessages(
                description=messages.description,
                messages=[_message(m) for m in messages.messages],
            )

        return _serve(run)

    def complete(self, request: wit.CompletionRequest) -> wit.Completion:
        template = isinstance(request.target, wit.CompletionTarget_Template)
        target = request.target.value
        cx = _request_context(request.request, target)

        def run() -> wit.Completion:
            completion = catalog.complete(
                cx, target, request.argument, request.value, dict(request.context),
                template=template,
            )
            return wit.Completion(
                values=completion.values, total=completion.total, has_more=completion.has_more
            )

        return _serve(run)


# componentize-py looks up `app.Catalog` as well as `app.Tools`. A plugin
# written before the catalog imports only `Tools`: give its module the
# (possibly empty) catalog too, so it builds unchanged.
_app = sys.modules.get("app")
if _app is not None and not hasattr(_app, "Catalog"):
    _app.Catalog = Catalog
