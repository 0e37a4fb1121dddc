"""The catalog: what a plugin offers besides tools (resources, resource
templates, prompts and completions), the values that describe it, and the
dispatch of its requests, independent of the WIT bindings.

Like ``_core`` it runs natively with a stand-in host; ``toolhost_guest.component``
adapts it to the WIT types.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

from ._core import _NAME, Context, InvalidArguments, Part, ToolError, UnknownTool, _guard
from ._schema import SchemaError, parse_docstring

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
