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
reported as a failure too. Build with ``componentize-py -d wit -w plugin
componentize -p <sdk> app -o app.wasm`` (``cargo xtask guests`` does it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from ._core import (
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
    "Caller",
    "Context",
    "Declaration",
    "InvalidArguments",
    "Output",
    "Part",
    "SchemaError",
    "ToolError",
    "ToolHints",
    "UnknownTool",
    "declarations",
    "parse_docstring",
    "registry",
    "schema_of",
    "tool",
]

F = TypeVar("F", bound=Callable[..., Any])

registry = Registry()
"""The tools of this plugin, as declared with ``@tool``."""


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
