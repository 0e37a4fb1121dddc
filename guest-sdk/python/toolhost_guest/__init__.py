"""Write toolhost tools in Python: a typed function with a docstring is a tool.

::

    from toolhost_guest import tool

    @tool
    def search_flights(destination: str, departure_date: str, flexible_days: int = 0) -> dict:
        \"\"\"Searches for flights.

        Args:
            destination: The city to fly to.
            departure_date: The day to leave, as YYYY-MM-DD.
            flexible_days: How many days earlier or later are fine.
        \"\"\"
        return {"flights": []}

    from toolhost_guest.component import Tools  # noqa: E402,F401  (exports the tools)

``@tool`` derives the declaration: the name from the function, the description
from the docstring, parameter descriptions from its ``Args:`` section and the
JSON Schema from the type hints (a parameter with a default, or ``Optional``, is
not required). Optional means nullable: a parameter or field with a default also
accepts ``null``, which means "use the default" (OpenAI strict mode and Gemini
need it). A generator function is a streaming tool. Raise ``ToolError`` (or
``InvalidArguments``) for failures the model can act on; any other exception is
reported as a failure too.

Besides tools, a plugin may offer resources, resource templates, prompts and
completions (MCP's other server features)::

    from toolhost_guest import Completion, resource, resource_template, prompt, complete

    @resource("notes://today", mime_type="text/plain")
    def today() -> str:
        return "Buy milk."

    @resource_template("notes://day/{day}", mime_type="text/plain")
    def day(day: str) -> str:
        return f"Notes of {day}."

    @prompt
    def summarize(day: str) -> str:
        \"\"\"Summarizes a day's notes.

        Args:
            day: Which day.
        \"\"\"
        return f"Summarize the notes of {day}."

    @complete("summarize", "day")
    def days(value: str) -> Completion:
        return Completion.matching(["today", "tuesday", "yesterday"], value)

    from toolhost_guest.component import Catalog, Tools  # noqa: E402,F401

A tool may ask its user a question mid-call (``cx.ask``). Build with
``componentize-py -d wit -w catalog-plugin componentize -p <sdk> app -o
app.wasm`` (``cargo xtask guests`` does it); a plugin without a catalog exports
an empty one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from ._catalog import (
    Catalog,
    Completion,
    Contents,
    Message,
    Messages,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    assistant,
    user,
)
from ._core import (
    Answer,
    AskError,
    Caller,
    Context,
    Declaration,
    InvalidArguments,
    Output,
    Part,
    Registry,
    ToolError,
    ToolHints,
    UnknownTool,
)
from ._schema import SchemaError, parse_docstring, schema_of

__all__ = [
    "Answer",
    "AskError",
    "Caller",
    "Completion",
    "Contents",
    "Context",
    "Declaration",
    "InvalidArguments",
    "Message",
    "Messages",
    "Output",
    "Part",
    "Prompt",
    "PromptArgument",
    "Resource",
    "ResourceTemplate",
    "SchemaError",
    "ToolError",
    "ToolHints",
    "UnknownTool",
    "assistant",
    "catalog",
    "complete",
    "declarations",
    "parse_docstring",
    "prompt",
    "registry",
    "resource",
    "resource_template",
    "schema_of",
    "tool",
    "user",
]

F = TypeVar("F", bound=Callable[..., Any])

registry = Registry()
"""The tools of this plugin, as declared with ``@tool``."""

catalog = Catalog()
"""The resources, templates, prompts and completions of this plugin, as
declared with ``@resource``, ``@resource_template``, ``@prompt`` and ``@complete``."""


@overload
def tool(func: F) -> F: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    long_running: bool = False,
    output_schema: dict[str, Any] | None = None,
    allow_unknown_args: bool = False,
    title: str | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
) -> Callable[[F], F]: ...


def tool(
    func: F | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    long_running: bool = False,
    output_schema: dict[str, Any] | None = None,
    allow_unknown_args: bool = False,
    title: str | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
) -> F | Callable[[F], F]:
    """Declares a function as a tool of this plugin; returns the function unchanged.

    Use it bare (``@tool``) or with options (``@tool(name="x", long_running=True)``).
    The declaration is computed at once, so a signature without a schema fails
    the build, not a call.

    Arguments the function does not take are refused (the schema says
    ``"additionalProperties": false``), so a model's misspelt key is an error
    it can fix; ``allow_unknown_args=True`` accepts and ignores them instead.

    ``title``, ``read_only``, ``destructive``, ``idempotent`` and ``open_world``
    are hints about the tool's behaviour, which MCP clients see as its
    ``annotations`` (e.g. ``@tool(read_only=True, open_world=False)``). Left
    out (``None``), a hint is not sent; the host enforces none of them.

    Raises:
        SchemaError: the name is invalid or taken, or a parameter has no schema.
    """

    def register(f: F) -> F:
        registry.add(
            f,
            name=name,
            description=description,
            long_running=long_running,
            output_schema=output_schema,
            allow_unknown_args=allow_unknown_args,
            hints=ToolHints(
                title=title,
                read_only=read_only,
                destructive=destructive,
                idempotent=idempotent,
                open_world=open_world,
            ),
        )
        return f

    return register(func) if func is not None else register


def declarations() -> list[Declaration]:
    """The declarations of every tool registered with ``@tool``."""
    return registry.declarations()


def resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    size: int | None = None,
) -> Callable[[F], F]:
    """Declares a function as the reader of the resource at ``uri``; returns it unchanged.

    The function takes no arguments (but may take a ``Context``) and returns
    the content: a ``str`` (text), ``bytes``, a :class:`Contents` (to set its
    MIME type or URI), or a list of them (the resource and sub-resources,
    whose ``Contents`` name their URIs). Contents without a URI are the
    resource's, and they get ``mime_type`` unless they name one. The name
    defaults to the function's, the description to its docstring. Use a URI
    scheme of your own (``notes://today``): the operator sees clashes between
    plugins.

    Raises:
        SchemaError: the URI is taken, or the function takes arguments.
    """

    def register(f: F) -> F:
        doc = parse_docstring(f.__doc__)[0] or None
        catalog.add_resource(
            f,
            Resource(
                uri=uri,
                name=name or f.__name__,
                title=title,
                description=doc if description is None else description,
                mime_type=mime_type,
                size=size,
            ),
        )
        return f

    return register


def resource_template(
    uri_template: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
) -> Callable[[F], F]:
    """Declares a function as the reader of the resources whose URIs match the
    RFC 6570 ``uri_template`` (``notes://day/{day}``); returns it unchanged.

    The host matches a read's URI against the template (``{name}`` matches one
    path segment, ``{+name}`` any text) and the function gets the variables,
    percent-decoded, as keyword arguments (``def day(day: str)``), and a
    ``Context`` if it takes one (``cx.tool`` is the URI read). It returns what
    a ``@resource`` function does.

    Raises:
        SchemaError: the template is taken or has no variable, or the
            function's parameters are not its variables.
    """

    def register(f: F) -> F:
        doc = parse_docstring(f.__doc__)[0] or None
        catalog.add_template(
            f,
            ResourceTemplate(
                uri_template=uri_template,
                name=name or f.__name__,
                title=title,
                description=doc if description is None else description,
                mime_type=mime_type,
            ),
        )
        return f

    return register


@overload
def prompt(func: F) -> F: ...


@overload
def prompt(
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    argument_titles: dict[str, str] | None = None,
) -> Callable[[F], F]: ...


def prompt(
    func: F | None = None,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    argument_titles: dict[str, str] | None = None,
) -> F | Callable[[F], F]:
    """Declares a function as a prompt (messages a user picks, filled in with
    arguments); returns it unchanged. Use it bare (``@prompt``) or with options.

    The function's parameters are the prompt's arguments: strings, required
    unless they have a default; a ``Context`` parameter is not one. The name
    comes from the function, the description from its docstring and the
    arguments' descriptions from its ``Args:`` section. It returns a ``str``
    (one user message), a :class:`Message` (:func:`user`, :func:`assistant`),
    a list of them, or :class:`Messages` (to describe the filled-in prompt).
    A message holds text, a :class:`Part` (``Part.image(...)``) or an embedded
    resource (``Contents(..., uri=...)``).

    Raises:
        SchemaError: the name is invalid or taken, or a parameter is not a string.
    """

    def register(f: F) -> F:
        catalog.add_prompt(
            f, name=name, title=title, description=description,
            argument_titles=argument_titles,
        )
        return f

    return register(func) if func is not None else register


def complete(target: str, argument: str | None = None) -> Callable[[F], F]:
    """Declares a function as the completion of an argument: of the prompt
    named ``target``, or of a variable of the resource template whose URI
    template is ``target`` (``notes://day/{day}``). Without ``argument``, it
    completes every argument of the target. Returns the function unchanged.

    The function takes any of ``value`` (what the user typed so far),
    ``argument`` (the argument's name), ``context`` (a dict of the arguments
    already filled in) and a ``Context``, and returns the suggestions, best
    first: a list of strings or a :class:`Completion`
    (``Completion.matching(candidates, value)``). At most 100 are served. An
    argument without a completion completes nothing.

    Raises:
        SchemaError: a completion for it exists already, or the function takes
            another parameter; at build time, the target or argument is not
            declared.
    """

    def register(f: F) -> F:
        catalog.add_completion(f, target, argument)
        return f

    return register
