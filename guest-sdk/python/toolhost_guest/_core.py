"""Tools, their declarations and calls, independent of the WIT bindings.

Everything here runs natively too (with a stand-in host), which is how the unit
tests exercise it; ``toolhost_guest.component`` adapts it to the WIT types.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import traceback
import typing
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from ._schema import SchemaError, from_json, signature_schema, to_jsonable

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


# --- errors -----------------------------------------------------------------


class ToolError(Exception):
    """The tool ran and failed; the message says why (WIT ``tool-error.failed``).

    Raise it for failures the model can act on. Any other exception is reported
    the same way, with its type name, and its traceback goes to the host log.
    """

    kind = "failed"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = str(message)


class InvalidArguments(ToolError):
    """The arguments were wrong in a way the schema could not express; the
    message tells the model how to fix them (WIT ``tool-error.invalid-arguments``)."""

    kind = "invalid-arguments"


class UnknownTool(ToolError):
    """This plugin has no tool of that name (the SDK raises it itself); in a
    catalog request, no resource, template or prompt of that URI or name."""

    kind = "unknown-tool"


class AskError(ToolError):
    """Why a question (:meth:`Context.ask`) got no answer.

    ``reason`` says why: ``unavailable`` (nobody can be asked here: no client
    that supports it, no terminal; decide without an answer), ``invalid`` (the
    form is not a flat JSON Schema object, or too large), ``too-many`` (this
    call asked as many questions as it may) or ``timeout`` (the user did not
    answer in time). It is a ``ToolError``: left uncaught, the call fails
    saying why.
    """

    REASONS = ("unavailable", "invalid", "too-many", "timeout")

    def __init__(self, reason: str, detail: str = "") -> None:
        if reason not in self.REASONS:
            raise ValueError(f"reason must be one of {self.REASONS}, not {reason!r}")
        message = {
            "unavailable": f"nobody can be asked: {detail}",
            "invalid": f"invalid question: {detail}",
            "too-many": f"too many questions: {detail}",
            "timeout": "the user did not answer in time",
        }[reason]
        super().__init__(message)
        self.reason = reason
        """``unavailable``, ``invalid``, ``too-many`` or ``timeout``."""
        self.detail = detail
        """What the host said."""


# --- results ----------------------------------------------------------------

MEDIA_KINDS = ("image", "audio", "video", "file")


@dataclasses.dataclass(frozen=True)
class Part:
    """One part of a multimodal result, or one chunk of a stream.

    Build parts with :meth:`text`, :meth:`json`, :meth:`image`, :meth:`audio`,
    :meth:`video` and :meth:`file`.
    """

    kind: str
    """``text``, ``json`` or one of the media kinds (``image``, ``audio``, ``video``, ``file``)."""
    content: str = ""
    """The text of a ``text`` part, or the JSON text of a ``json`` part."""
    data: bytes = b""
    """The bytes of a media part."""
    mime_type: str = ""
    """The MIME type of a media part."""
    name: str | None = None
    """A file name suggestion for a media part."""

    @staticmethod
    def text(text: str) -> Part:
        """Plain text."""
        return Part("text", content=str(text))

    @staticmethod
    def json(value: Any) -> Part:
        """A JSON value (dataclasses, enums, tuples are converted)."""
        return Part("json", content=_dumps(value))

    @staticmethod
    def blob(kind: str, mime_type: str, data: bytes, name: str | None = None) -> Part:
        """Bytes of a media kind (``image``, ``audio``, ``video`` or ``file``)."""
        if kind not in MEDIA_KINDS:
            raise ValueError(f"media kind must be one of {MEDIA_KINDS}, not {kind!r}")
        return Part(kind, data=bytes(data), mime_type=mime_type, name=name)

    @staticmethod
    def image(mime_type: str, data: bytes, name: str | None = None) -> Part:
        """An image, e.g. ``Part.image("image/png", png_bytes)``."""
        return Part.blob("image", mime_type, data, name)

    @staticmethod
    def audio(mime_type: str, data: bytes, name: str | None = None) -> Part:
        """Sound, e.g. ``Part.audio("audio/wav", wav_bytes)``."""
        return Part.blob("audio", mime_type, data, name)

    @staticmethod
    def video(mime_type: str, data: bytes, name: str | None = None) -> Part:
        """Video, e.g. ``Part.video("video/mp4", mp4_bytes)``."""
        return Part.blob("video", mime_type, data, name)

    @staticmethod
    def file(mime_type: str, data: bytes, name: str | None = None) -> Part:
        """Any other file, with an optional file name suggestion."""
        return Part.blob("file", mime_type, data, name)


@dataclasses.dataclass
class Output:
    """A result with multimodal parts: JSON, parts, or both.

    Return a plain value (dict, list, number, dataclass...) when JSON is all the
    tool produces; return an ``Output`` for images, audio, files or mixed parts.
    """

    json: Any = dataclasses.field(default=None)
    """The JSON result; ``None`` means none (the value ``null`` is not sent)."""
    parts: list[Part] = dataclasses.field(default_factory=list)
    """The parts, in order."""


@dataclasses.dataclass
class Result:
    """What crosses the boundary: JSON text and parts."""

    json: str | None
    parts: list[Part]


def _dumps(value: Any) -> str:
    try:
        return json.dumps(to_jsonable(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ToolError(f"the result is not valid JSON: {err}") from err


def into_result(value: Any) -> Result:
    """A tool's return value as JSON text and parts (mirrors Rust's ``IntoOutput``)."""
    if isinstance(value, Output):
        text = None if value.json is None else _dumps(value.json)
        return Result(text, list(value.parts))
    if isinstance(value, Part):
        return Result(None, [value])
    return Result(_dumps(value), [])


def into_chunk(item: Any) -> Part:
    """A yielded item as a chunk: a ``Part`` as is, text as text, anything else as JSON."""
    if isinstance(item, Part):
        return item
    if isinstance(item, str):
        return Part.text(item)
    return Part.json(item)


def collect(chunks: Iterator[Part]) -> Result:
    """Gathers a stream as the Rust SDK does: adjacent text chunks merge, and if
    every chunk was text the JSON result is the whole text as a string."""
    parts: list[Part] = []
    for chunk in chunks:
        if chunk.kind == "text" and parts and parts[-1].kind == "text":
            parts[-1] = Part.text(parts[-1].content + chunk.content)
        else:
            parts.append(chunk)
    if all(part.kind == "text" for part in parts):
        return Result(_dumps("".join(part.content for part in parts)), parts)
    return Result(None, parts)


# --- context ----------------------------------------------------------------


class Host(Protocol):
    """What the host offers a call (the WIT ``host`` interface)."""

    def log(self, level: str, message: str) -> None:
        """Writes a line to the host's log."""

    def state_get(self, key: str) -> str | None:
        """Reads a key of the invocation's scratch state."""

    def state_set(self, key: str, value: str) -> None:
        """Sets a key of the invocation's scratch state."""

    def state_delete(self, key: str) -> None:
        """Deletes a key of the invocation's scratch state."""

    def resource_updated(self, uri: str) -> None:
        """Tells the host that the resource at ``uri`` changed."""

    def ask(self, message: str, schema: str) -> tuple[str, str | None]:
        """Asks the user: ``("accept", content_json)``, ``("decline", None)``
        or ``("cancel", None)``; raises :class:`AskError` when there is no answer."""


LEVELS = ("trace", "debug", "info", "warn", "error")


@dataclasses.dataclass(frozen=True)
class Caller:
    """Who is calling, as the host authenticated them (MCP over HTTP with OAuth
    or a static token); never their credentials.

    ``claims`` holds only the token claims the operator lets this plugin see
    (its ``caller_claims`` grant).
    """

    issuer: str
    """Who vouches for the subject: the OAuth issuer URL, or ``toolhost:static-token``."""
    subject: str
    """The caller, unique under its issuer (a token's ``sub``)."""
    scopes: tuple[str, ...] = ()
    """The scopes the caller's credentials grant."""
    claims: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The granted claims, by name."""

    def has_scope(self, scope: str) -> bool:
        """Whether the caller's credentials grant ``scope``."""
        return scope in self.scopes

    def claim(self, name: str) -> Any:
        """The granted claim ``name``, or ``None``."""
        return self.claims.get(name)

    def to_json(self) -> dict[str, Any]:
        """The caller as a JSON-ready dict (``issuer``, ``subject``, ``scopes``, ``claims``)."""
        return {
            "issuer": self.issuer,
            "subject": self.subject,
            "scopes": list(self.scopes),
            "claims": dict(self.claims),
        }


@dataclasses.dataclass(frozen=True)
class Answer:
    """The user's answer to a question (:meth:`Context.ask`)."""

    action: str
    """What the user did: ``accept`` (submitted the form), ``decline`` (said
    no) or ``cancel`` (dismissed it without choosing)."""
    content: dict[str, Any] | None = None
    """The submitted form (checked by the host against the question's schema);
    ``None`` unless accepted."""

    @property
    def accepted(self) -> bool:
        """Whether the user submitted the form."""
        return self.action == "accept"


class Context:
    """One call of one tool: its IDs, its caller, the invocation's scratch state, and the host log.

    Declare a parameter annotated ``Context`` to receive it; it is not part of
    the tool's schema. Every call runs in a fresh instance, so module globals do
    not survive it: the scratch state is how calls of one invocation share values.
    """

    def __init__(
        self,
        call_id: str,
        invocation_id: str,
        tool: str,
        host: Host,
        caller: Caller | None = None,
    ) -> None:
        self.call_id = call_id
        """The ID of this call (the model's tool-call ID, or one chosen by the host)."""
        self.invocation_id = invocation_id
        """The ID of the agent invocation this call belongs to."""
        self.tool = tool
        """The name of the tool being called; in a catalog request, what it is
        for: the URI read, or the prompt's name (or template's) being filled in
        or completed."""
        self.caller = caller
        """Who is calling, if the host authenticated them (``None`` over stdio,
        the CLI, or a server without authentication)."""
        self._host = host

    def state_get(self, key: str) -> str | None:
        """Reads a key of this invocation's scratch state (ADK's ``temp:`` state)."""
        return self._host.state_get(key)

    def state_set(self, key: str, value: str) -> None:
        """Sets a key of this invocation's scratch state; later calls of the same invocation see it."""
        self._host.state_set(key, str(value))

    def state_delete(self, key: str) -> None:
        """Deletes a key of this invocation's scratch state."""
        self._host.state_delete(key)

    def ask(self, message: str, schema: dict[str, Any] | str) -> Answer:
        """Asks the user a question mid-call and waits for the answer (MCP
        elicitation; on the CLI, the terminal).

        ``schema`` is the form: a JSON Schema object (a dict, or its JSON text)
        whose properties are flat: strings (``enum``, ``format``...), numbers,
        integers, booleans or arrays of enum strings. For example::

            answer = cx.ask("Go on?", {"type": "object",
                                       "properties": {"go": {"type": "boolean"}}})
            if answer.accepted and answer.content["go"]:
                ...

        Raises:
            AskError: no answer: nobody can be asked here, the question breaks
                the host's rules, the call asked too many, or the user took too
                long. Uncaught, the call fails saying why.
        """
        form = schema if isinstance(schema, str) else json.dumps(schema)
        action, content = self._host.ask(str(message), form)
        if action != "accept":
            return Answer(action)
        try:
            parsed = json.loads(content or "")
        except ValueError as err:
            raise AskError("invalid", f"the answer is not a JSON object: {err}") from err
        if not isinstance(parsed, dict):
            raise AskError("invalid", "the answer is not a JSON object")
        return Answer(action, parsed)

    def resource_updated(self, uri: str) -> None:
        """Tells the host that the resource at ``uri``, which this plugin
        offers, has changed: clients that subscribed to it are told. A URI the
        plugin does not offer is ignored (and logged by the host)."""
        self._host.resource_updated(str(uri))

    def log(self, level: str, message: str) -> None:
        """Writes a line to the host's log at ``level`` (trace, debug, info, warn, error)."""
        if level not in LEVELS:
            raise ValueError(f"log level must be one of {LEVELS}, not {level!r}")
        self._host.log(level, str(message))

    def trace(self, message: str) -> None:
        """Logs at trace level."""
        self.log("trace", message)

    def debug(self, message: str) -> None:
        """Logs at debug level."""
        self.log("debug", message)

    def info(self, message: str) -> None:
        """Logs at info level."""
        self.log("info", message)

    def warn(self, message: str) -> None:
        """Logs at warn level."""
        self.log("warn", message)

    def error(self, message: str) -> None:
        """Logs at error level."""
        self.log("error", message)


# --- tools ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ToolHints:
    """Hints about a tool's behaviour, which MCP clients see as the tool's
    ``annotations``. ``None`` leaves a hint out; the host enforces none."""

    title: str | None = None
    """A short human-readable name (MCP ``title``)."""
    read_only: bool | None = None
    """The tool changes nothing in its environment (``readOnlyHint``)."""
    destructive: bool | None = None
    """The tool may destroy or overwrite (``destructiveHint``)."""
    idempotent: bool | None = None
    """The same arguments again have no further effect (``idempotentHint``)."""
    open_world: bool | None = None
    """The tool reaches systems outside the host, e.g. the web (``openWorldHint``)."""


@dataclasses.dataclass(frozen=True)
class Declaration:
    """How a tool is called: what the host receives from ``declarations``."""

    name: str
    description: str
    long_running: bool
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    streaming: bool
    hints: ToolHints = ToolHints()


@dataclasses.dataclass(frozen=True)
class ToolEntry:
    """A registered tool: its declaration and the function behind it."""

    declaration: Declaration
    func: Callable[..., Any]
    hints: dict[str, Any]
    context_param: str | None


class Registry:
    """The tools of one plugin, in declaration order."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolEntry] = {}

    def add(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        long_running: bool = False,
        output_schema: dict[str, Any] | None = None,
        allow_unknown_args: bool = False,
        hints: ToolHints = ToolHints(),
    ) -> ToolEntry:
        """Declares ``func`` as a tool. Unknown argument keys are refused
        (``"additionalProperties": false``) unless ``allow_unknown_args``.

        Raises:
            SchemaError: the name is invalid or taken, or a parameter has no schema.
        """
        name = name or func.__name__
        if not _NAME.match(name):
            raise SchemaError(
                f"tool name {name!r}: use 1 to 64 ASCII letters, digits, '_' or '-'"
            )
        if name in self._tools:
            raise SchemaError(f"two tools are named {name!r}")
        schema, doc, context_param = signature_schema(
            func, Context, allow_unknown_args=allow_unknown_args
        )
        declaration = Declaration(
            name=name,
            description=doc if description is None else description,
            long_running=long_running,
            input_schema=schema,
            output_schema=output_schema,
            streaming=inspect.isgeneratorfunction(func),
            hints=hints,
        )
        hints = typing.get_type_hints(func, include_extras=True)
        entry = ToolEntry(declaration, func, hints, context_param)
        self._tools[name] = entry
        return entry

    def declarations(self) -> list[Declaration]:
        """Every tool's declaration."""
        return [entry.declaration for entry in self._tools.values()]

    def invoke(self, tool: str, arguments: str, cx: Context) -> Result:
        """Runs a tool to completion; a streaming tool's chunks are collected.

        Raises:
            ToolError: the tool's failure, any other exception turned into one.
        """
        return _guard(cx, lambda: self._invoke(tool, arguments, cx))

    def _invoke(self, tool: str, arguments: str, cx: Context) -> Result:
        entry = self._find(tool)
        value = self._call(entry, arguments, cx)
        if entry.declaration.streaming:
            return collect(_Stream(cx, value))
        return into_result(value)

    def stream(self, tool: str, arguments: str, cx: Context) -> Iterator[Part]:
        """Starts a tool as a stream; a tool that does not stream yields its
        result's JSON (as one JSON chunk), then its parts.

        Raises:
            ToolError: the tool cannot start; errors while streaming come from the iterator.
        """
        return _guard(cx, lambda: self._stream(tool, arguments, cx))

    def _stream(self, tool: str, arguments: str, cx: Context) -> Iterator[Part]:
        entry = self._find(tool)
        value = self._call(entry, arguments, cx)
        if entry.declaration.streaming:
            return _Stream(cx, value)
        result = into_result(value)
        head = [] if result.json is None else [Part("json", content=result.json)]
        return iter(head + result.parts)

    def _find(self, tool: str) -> ToolEntry:
        entry = self._tools.get(tool)
        if entry is None:
            raise UnknownTool(tool)
        return entry

    def _call(self, entry: ToolEntry, arguments: str, cx: Context) -> Any:
        try:
            raw = json.loads(arguments) if arguments else {}
        except ValueError as err:
            raise InvalidArguments(f"the arguments are not JSON: {err}") from err
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise InvalidArguments("the arguments must be a JSON object")
        signature = inspect.signature(entry.func)
        kwargs: dict[str, Any] = {}
        for name, param in signature.parameters.items():
            if name == entry.context_param:
                kwargs[name] = cx
            elif name in raw and not (raw[name] is None and param.default is not param.empty):
                # Null where there is a default means "not given" (optional means
                # nullable: strict-mode models send null for what they leave out).
                try:
                    kwargs[name] = from_json(raw[name], entry.hints.get(name, Any))
                except (TypeError, ValueError) as err:
                    raise InvalidArguments(f"`{name}`: {err}") from err
            elif param.default is param.empty:
                # Nullable parameters are optional without a default (ADK's rule).
                if _nullable_param(entry, name):
                    kwargs[name] = None
                else:
                    raise InvalidArguments(f"missing field `{name}`")
        if entry.declaration.input_schema.get("additionalProperties") is False:
            # The host's schema check refuses them first; this covers native calls.
            unknown = [key for key in raw if key not in signature.parameters
                       or key == entry.context_param]
            if unknown:
                names = ", ".join(f"`{key}`" for key in unknown)
                raise InvalidArguments(f"unknown argument {names}")
        return entry.func(**kwargs)


def _nullable_param(entry: ToolEntry, name: str) -> bool:
    required = entry.declaration.input_schema.get("required", [])
    return name not in required


class _Stream:
    """A generator's items as chunks; an exception ends the stream with a ``ToolError``."""

    def __init__(self, cx: Context, items: Any) -> None:
        self._cx = cx
        self._items = iter(items)
        self._done = False

    def __iter__(self) -> _Stream:
        return self

    def __next__(self) -> Part:
        if self._done:
            raise StopIteration
        try:
            return into_chunk(next(self._items))
        except StopIteration:
            self._done = True
            raise
        except BaseException as err:  # noqa: BLE001 - every failure becomes a tool error
            self._done = True
            raise _as_tool_error(self._cx, err) from err


def _guard(cx: Context, run: Callable[[], Any], what: str = "tool") -> Any:
    try:
        return run()
    except BaseException as err:  # noqa: BLE001 - an escaping exception would trap
        raise _as_tool_error(cx, err, what) from err


def _as_tool_error(cx: Context, err: BaseException, what: str = "tool") -> ToolError:
    """Any exception as a ``ToolError``: an uncaught one would trap the guest and
    lose its message, so the SDK reports it as a failure and logs the traceback."""
    if isinstance(err, ToolError):
        return err
    detail = "".join(traceback.format_exception(err)).rstrip()
    try:
        cx.error(f"{what} `{cx.tool}` raised {type(err).__name__}:\n{detail}")
    except Exception:  # noqa: BLE001 - logging must not hide the original error
        pass
    message = str(err)
    return ToolError(f"{type(err).__name__}: {message}" if message else type(err).__name__)
