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

from ._schema import SchemaError, from_json, parse_docstring, signature_schema, to_jsonable

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


# --- catalog: resources, templates, prompts, completions ---------------------

MAX_COMPLETIONS = 100
"""The most values a completion serves; the SDK cuts a longer list and says there are more."""

_VARIABLE = re.compile(r"\{\+?([^{}]*)\}")


@dataclasses.dataclass(frozen=True)
class Contents:
    """One resource's content, as a read returns it or a prompt message embeds it.

    ``Contents("Buy milk.")`` is text, ``Contents(png_bytes, mime_type="image/png")``
    bytes. A read handler may also return a bare ``str`` or ``bytes``.
    """

    body: str | bytes
    """The content: text (``str``) or bytes (base64 over MCP)."""
    uri: str | None = None
    """The URI it is of. ``None`` in a read's result means the URI read; a
    prompt message that embeds contents needs one."""
    mime_type: str | None = None
    """Its MIME type. ``None`` in a read's result: the declared one, if any."""

    def __post_init__(self) -> None:
        if isinstance(self.body, (bytearray, memoryview)):
            object.__setattr__(self, "body", bytes(self.body))
        elif not isinstance(self.body, (str, bytes)):
            raise TypeError(f"contents are str or bytes, not {type(self.body).__name__}")


@dataclasses.dataclass(frozen=True)
class Resource:
    """A resource at a fixed URI (MCP ``Resource``), declared with ``@resource``."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None


@dataclasses.dataclass(frozen=True)
class ResourceTemplate:
    """A family of resources whose URIs follow an RFC 6570 URI template (MCP
    ``ResourceTemplate``), declared with ``@resource_template``."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None

    @property
    def variables(self) -> list[str]:
        """The template's variables, in order: ``day`` in ``notes://{day}``."""
        return _VARIABLE.findall(self.uri_template)


@dataclasses.dataclass(frozen=True)
class PromptArgument:
    """One argument of a prompt; prompt arguments are strings."""

    name: str
    title: str | None = None
    description: str | None = None
    required: bool = False


@dataclasses.dataclass(frozen=True)
class Prompt:
    """A prompt: messages a user picks, filled in with arguments (MCP ``Prompt``),
    declared with ``@prompt``."""

    name: str
    description: str
    title: str | None = None
    arguments: tuple[PromptArgument, ...] = ()


ROLES = ("user", "assistant")


@dataclasses.dataclass(frozen=True)
class Message:
    """One message of a filled-in prompt; build it with :func:`user` or :func:`assistant`."""

    role: str
    """``user`` or ``assistant``."""
    content: Part | Contents
    """What it says: text, JSON or media (a :class:`Part`), or an embedded
    resource (:class:`Contents`, with its ``uri``)."""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, not {self.role!r}")
        content = self.content
        if isinstance(content, str):
            object.__setattr__(self, "content", Part.text(content))
        elif not isinstance(content, (Part, Contents)):
            raise TypeError(
                f"a message holds str, Part or Contents, not {type(content).__name__}"
            )


def user(content: str | Part | Contents) -> Message:
    """A prompt message said by the user: text, a :class:`Part` (``Part.image(...)``)
    or an embedded resource (``Contents(..., uri=...)``)."""
    return Message("user", content)


def assistant(content: str | Part | Contents) -> Message:
    """A prompt message said by the model; see :func:`user`."""
    return Message("assistant", content)


@dataclasses.dataclass
class Messages:
    """What a prompt returns when it also describes the filled-in prompt. A
    prompt may return a ``str`` (one user message) or a list of messages instead."""

    messages: list[Message]
    """The messages, in order (``str`` items are user messages)."""
    description: str | None = None
    """A description of this filled-in prompt."""


@dataclasses.dataclass
class Completion:
    """Suggested values, best first. At most 100 are served: the SDK cuts a
    longer list and sets ``has_more``. A completion handler may return a
    list of strings instead."""

    values: list[str]
    """The values, best first."""
    total: int | None = None
    """How many there are in all, when known."""
    has_more: bool = False
    """Whether there are more than those returned."""

    @staticmethod
    def matching(candidates: Any, prefix: str) -> Completion:
        """The ``candidates`` that start with ``prefix`` (case-sensitive), in
        order, with their count as the total."""
        values = [str(c) for c in candidates if str(c).startswith(prefix)]
        return Completion(values, total=len(values))

    def capped(self) -> Completion:
        """At most 100 values; if it cut any, there are more."""
        if len(self.values) <= MAX_COMPLETIONS:
            return self
        return Completion(self.values[:MAX_COMPLETIONS], self.total, True)


@dataclasses.dataclass(frozen=True)
class _Handler:
    """A catalog function: what it is, and how to call it."""

    func: Callable[..., Any]
    context_param: str | None
    params: tuple[str, ...]
    """Its parameters besides the context, in order."""
    required: frozenset[str]
    """Those without a default."""


def _handler(func: Callable[..., Any], what: str) -> _Handler:
    """Inspects a catalog function: keyword-callable parameters, one of them
    perhaps annotated ``Context``."""
    try:
        hints = typing.get_type_hints(func)
    except Exception as err:
        raise SchemaError(f"cannot resolve the type hints of {func.__name__}: {err}") from err
    context_param = None
    params: list[str] = []
    required: set[str] = set()
    for name, param in inspect.signature(func).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise SchemaError(f"{what} {func.__name__}: parameter {name} must be a named one")
        if hints.get(name) is Context:
            context_param = name
            continue
        params.append(name)
        if param.default is param.empty:
            required.add(name)
    return _Handler(func, context_param, tuple(params), frozenset(required))


def _call(handler: _Handler, cx: Context, kwargs: dict[str, Any]) -> Any:
    if handler.context_param is not None:
        kwargs[handler.context_param] = cx
    return handler.func(**kwargs)


def _given(handler: _Handler, values: dict[str, str]) -> dict[str, Any]:
    """The handler's keyword arguments among ``values``; a required one missing
    is invalid (the host checks first; this covers native calls)."""
    kwargs: dict[str, Any] = {}
    for name in handler.params:
        if name in values:
            kwargs[name] = values[name]
        elif name in handler.required:
            raise InvalidArguments(f"`{name}` is missing")
    return kwargs


def _doc(func: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    description, args, _ = parse_docstring(inspect.getdoc(func))
    return description, args


def into_contents(value: Any) -> list[Contents]:
    """A read handler's return value as contents: ``Contents``, ``str``,
    ``bytes``, or a list of them (a resource and its sub-resources)."""
    if isinstance(value, (list, tuple)):
        return [item for v in value for item in into_contents(v)]
    if isinstance(value, Contents):
        return [value]
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        return [Contents(value)]
    raise ToolError(f"a read returns str, bytes or Contents, not {type(value).__name__}")


def into_messages(value: Any) -> Messages:
    """A prompt's return value as messages: a ``str`` is one user message; a
    ``Message``, ``Part`` or ``Contents`` one message (the latter two the
    user's); a list holds any of them; ``Messages`` adds a description.

    Raises:
        ToolError: an embedded resource without a URI, or a value of another type.
    """
    if isinstance(value, Messages):
        described = value.description
        value = value.messages
    else:
        described = None
    items = value if isinstance(value, (list, tuple)) else [value]
    messages: list[Message] = []
    for item in items:
        if isinstance(item, (str, Part, Contents)):
            item = user(item)
        if not isinstance(item, Message):
            raise ToolError(
                f"a prompt returns str, Message, Messages or a list, not {type(item).__name__}"
            )
        if isinstance(item.content, Contents) and item.content.uri is None:
            raise ToolError(
                "a prompt message embeds a resource without a URI "
                "(set it with `Contents(..., uri=...)`)"
            )
        messages.append(item)
    return Messages(messages, described)


def into_completion(value: Any) -> Completion:
    """A completion handler's return value: a ``Completion`` or strings; capped at 100."""
    if isinstance(value, Completion):
        return value.capped()
    if isinstance(value, str):
        raise ToolError("a completion returns a list of strings or a Completion, not a str")
    return Completion([str(v) for v in value]).capped()


def _is_template(target: str) -> bool:
    # A prompt's name has no `{`; a template worth completing has a variable.
    return "{" in target


class Catalog:
    """What a plugin offers besides tools: resources, resource templates,
    prompts and completions, with the functions that serve them.

    Filled in by ``@resource``, ``@resource_template``, ``@prompt`` and
    ``@complete`` while the module is imported; every request then runs in a
    fresh instance, like a tool call.
    """

    def __init__(self) -> None:
        self._resources: dict[str, tuple[Resource, _Handler]] = {}
        self._templates: dict[str, tuple[ResourceTemplate, _Handler]] = {}
        self._prompts: dict[str, tuple[Prompt, _Handler]] = {}
        # (target, argument or None for every argument) -> handler
        self._completions: dict[tuple[str, str | None], _Handler] = {}

    # -- declaring --

    def add_resource(self, func: Callable[..., Any], resource: Resource) -> None:
        """Declares ``func`` (no arguments but a ``Context``) as the reader of ``resource``.

        Raises:
            SchemaError: the URI is taken, or ``func`` takes arguments.
        """
        if not resource.uri:
            raise SchemaError(f"resource {func.__name__}: the URI is empty")
        if resource.uri in self._resources:
            raise SchemaError(f"two resources have the URI {resource.uri!r}")
        handler = _handler(func, "resource")
        if handler.required:
            names = ", ".join(sorted(handler.required))
            raise SchemaError(
                f"resource {resource.uri}: {func.__name__} takes arguments ({names}); "
                "a resource at a fixed URI has none (use @resource_template)"
            )
        self._resources[resource.uri] = (resource, handler)

    def add_template(self, func: Callable[..., Any], template: ResourceTemplate) -> None:
        """Declares ``func`` as the reader of ``template``'s resources; it takes
        the template's variables as keyword arguments.

        Raises:
            SchemaError: the template is taken, has no variables, or its variables
                and ``func``'s parameters differ.
        """
        key = template.uri_template
        if key in self._templates:
            raise SchemaError(f"two resource templates are {key!r}")
        variables = template.variables
        if not variables:
            raise SchemaError(f"resource template {key}: no {{variable}} (use @resource)")
        handler = _handler(func, "resource template")
        for variable in variables:
            if variable not in handler.params:
                raise SchemaError(
                    f"resource template {key}: {func.__name__} has no parameter "
                    f"for the variable {variable!r}"
                )
        extra = sorted(handler.required - set(variables))
        if extra:
            raise SchemaError(
                f"resource template {key}: {func.__name__}'s parameter {extra[0]} "
                "is not a variable of the template"
            )
        self._templates[key] = (template, handler)

    def add_prompt(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        argument_titles: dict[str, str] | None = None,
    ) -> Prompt:
        """Declares ``func`` as a prompt: its parameters are the prompt's
        arguments (strings; required unless they have a default), its docstring
        the description and its ``Args:`` section the arguments' descriptions.

        Raises:
            SchemaError: the name is invalid or taken, or a parameter is not a string.
        """
        name = name or func.__name__
        if not _NAME.match(name):
            raise SchemaError(
                f"prompt name {name!r}: use 1 to 64 ASCII letters, digits, '_' or '-'"
            )
        if name in self._prompts:
            raise SchemaError(f"two prompts are named {name!r}")
        handler = _handler(func, "prompt")
        hints = typing.get_type_hints(func)
        for param in handler.params:
            hint = hints.get(param, str)
            if hint not in (str, typing.Optional[str]):
                raise SchemaError(
                    f"prompt {name}, parameter {param}: prompt arguments are strings, "
                    f"not {getattr(hint, '__name__', hint)}"
                )
        doc, arg_docs = _doc(func)
        titles = argument_titles or {}
        prompt = Prompt(
            name=name,
            description=doc if description is None else description,
            title=title,
            arguments=tuple(
                PromptArgument(
                    name=param,
                    title=titles.get(param),
                    description=arg_docs.get(param),
                    required=param in handler.required,
                )
                for param in handler.params
            ),
        )
        self._prompts[name] = (prompt, handler)
        return prompt

    def add_completion(
        self, func: Callable[..., Any], target: str, argument: str | None = None
    ) -> None:
        """Declares ``func`` as the completion of ``argument`` (every argument
        if ``None``) of the prompt named ``target``, or of the template whose URI
        template is ``target`` (one with a ``{``). ``func`` takes any of
        ``value`` (what the user typed so far), ``argument`` (the argument's
        name), ``context`` (the arguments already filled in, a dict) and a
        ``Context``.

        Raises:
            SchemaError: a completion for it is declared already, or ``func``
                takes another parameter.
        """
        key = (target, argument)
        if key in self._completions:
            what = f"argument {argument!r} of {target!r}" if argument else repr(target)
            raise SchemaError(f"two completions for {what}")
        handler = _handler(func, "completion")
        unknown = [p for p in handler.params if p not in ("value", "argument", "context")]
        if unknown:
            raise SchemaError(
                f"completion {func.__name__}: parameter {unknown[0]} is not one of "
                "value, argument, context (or a Context)"
            )
        self._completions[key] = handler

    def check(self) -> None:
        """Every completion is for a declared prompt's argument or template's
        variable (run once all are declared: at build time).

        Raises:
            SchemaError: one is not.
        """
        for (target, argument), handler in self._completions.items():
            if _is_template(target):
                declared = self._templates.get(target)
                names = declared[0].variables if declared else None
                kind = "resource template"
            else:
                found = self._prompts.get(target)
                names = [a.name for a in found[0].arguments] if found else None
                kind = "prompt"
            where = f"completion {handler.func.__name__}"
            if names is None:
                raise SchemaError(f"{where}: no {kind} {target!r} is declared")
            if argument is not None and argument not in names:
                raise SchemaError(f"{where}: the {kind} {target!r} has no {argument!r}")

    # -- describing --

    def resources(self) -> list[Resource]:
        """The declared resources, in order."""
        return [resource for resource, _ in self._resources.values()]

    def templates(self) -> list[ResourceTemplate]:
        """The declared resource templates, in order."""
        return [template for template, _ in self._templates.values()]

    def prompts(self) -> list[Prompt]:
        """The declared prompts, in order."""
        return [prompt for prompt, _ in self._prompts.values()]

    # -- serving --

    def read(
        self, cx: Context, uri: str, template: str | None = None,
        variables: dict[str, str] | None = None,
    ) -> list[Contents]:
        """Reads the listed resource at ``uri``, or (``template`` given) one of
        that template's URIs with its ``variables``. Contents without a URI are
        the read's; those get the declared MIME type unless they name one.

        Raises:
            ToolError: ``UnknownTool`` for a URI or template not declared; the
                reader's failure (any exception turned into one).
        """
        def run() -> list[Contents]:
            if template is not None:
                found = self._templates.get(template)
                if found is None:
                    raise UnknownTool(uri)
                declared, handler = found
                kwargs = _given(handler, variables or {})
            else:
                found = self._resources.get(uri)
                if found is None:
                    raise UnknownTool(uri)
                declared, handler = found
                kwargs = {}
            contents = into_contents(_call(handler, cx, kwargs))
            return [_defaults(c, uri, declared.mime_type) for c in contents]

        return _guard(cx, run, "resource")

    def get(self, cx: Context, name: str, arguments: dict[str, str]) -> Messages:
        """Fills in the prompt ``name`` with ``arguments``.

        Raises:
            ToolError: ``UnknownTool`` for a prompt not declared,
                ``InvalidArguments`` for a required argument missing, or the
                prompt's failure.
        """
        def run() -> Messages:
            found = self._prompts.get(name)
            if found is None:
                raise UnknownTool(name)
            _, handler = found
            return into_messages(_call(handler, cx, _given(handler, arguments)))

        return _guard(cx, run, "prompt")

    def complete(
        self, cx: Context, target: str, argument: str, value: str,
        context: dict[str, str] | None = None, *, template: bool | None = None,
    ) -> Completion:
        """Completes ``argument`` of the prompt ``target`` (or the template
        ``target``, if ``template``; by default, if it has a ``{``). A declared
        target without a handler completes nothing.

        Raises:
            ToolError: ``UnknownTool`` for a target not declared; the handler's failure.
        """
        is_template = _is_template(target) if template is None else template

        def run() -> Completion:
            declared = self._templates if is_template else self._prompts
            if target not in declared:
                raise UnknownTool(target)
            handler = self._completions.get((target, argument)) or self._completions.get(
                (target, None)
            )
            if handler is None:
                return Completion([])
            offered = {"value": value, "argument": argument, "context": dict(context or {})}
            kwargs = {p: offered[p] for p in handler.params}
            return into_completion(_call(handler, cx, kwargs))

        return _guard(cx, run, "completion of")


def _defaults(contents: Contents, uri: str, mime_type: str | None) -> Contents:
    """Fills in what a read's contents leave out: the URI read and, for the
    contents of that URI, the declared MIME type."""
    if contents.uri is None:
        contents = dataclasses.replace(contents, uri=uri)
    if contents.uri == uri and contents.mime_type is None and mime_type is not None:
        contents = dataclasses.replace(contents, mime_type=mime_type)
    return contents
