"""Conformance plugin in Python: the tool set every guest language implements.

The host's `conformance` tests run one suite against each language's build; see
`host/tests/all/conformance.rs` for the behaviour each tool must show, and
`catalog.py` for its resources, templates and prompts.
"""

from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from toolhost_guest import Context, InvalidArguments, Output, Part, ToolError, tool

# A 1x1 red RGBA PNG (the same bytes as the Rust conformance plugin's).
PIXEL_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8cfc0f01f000500"
    "01ff56c72f0d0000000049454e44ae426082"
)

SIZES_ML = {"small": 250, "medium": 350, "large": 500}


@dataclasses.dataclass
class Inner:
    """The innermost level.

    Attributes:
        depth: How deep this is.
    """

    depth: int


@dataclasses.dataclass
class Nested:
    """Structured data inside the echo arguments.

    Attributes:
        label: A label.
        tags: Any tags.
        inner: A deeper level.
    """

    label: str
    tags: list[str] = dataclasses.field(default_factory=list)
    inner: Optional[Inner] = None


@tool
def echo(message: str, nested: Optional[Nested] = None) -> dict:
    """Echoes its arguments back as a JSON object.

    Args:
        message: The message to echo.
        nested: Optional structured data, echoed as given.
    """
    return {"message": message, "nested": nested}


@tool
def greet(name: str, greeting: str = "Hello", times: int = 1) -> dict:
    """Greets someone, optionally several times.

    Args:
        name: Who to greet.
        greeting: The word of greeting.
        times: How many greetings, from 1 to 5.
    """
    if not 1 <= times <= 5:
        raise InvalidArguments("`times` must be from 1 to 5")
    return {"text": " ".join([f"{greeting}, {name}!"] * times)}


@tool(title="Add", read_only=True, idempotent=True, open_world=False)
def add(a: int, b: int) -> int:
    """Adds two integers; the host wraps the bare number as {"result": n}.

    Args:
        a: The first term.
        b: The second term.
    """
    return a + b


@tool
def order(item: str, size: Literal["small", "medium", "large"]) -> dict:
    """Orders a drink in one of three sizes.

    Args:
        item: What to order.
        size: The size.
    """
    return {"item": item, "size": size, "ml": SIZES_ML[size]}


@tool
def fail(message: str, invalid: bool = False) -> None:
    """Always fails with the given message.

    Args:
        message: The failure message.
        invalid: Report invalid arguments instead of a failure.
    """
    if invalid:
        raise InvalidArguments(message)
    raise ToolError(message)


@tool
def countdown(start: int):
    """Counts down to zero, one line per number, as a stream.

    Args:
        start: Where to start.
    """
    for i in range(start, -1, -1):
        yield f"{i}\n"


@tool
def pixel() -> Output:
    """Returns a caption and a 1x1 red PNG image."""
    return Output(parts=[Part.text("a 1x1 red pixel"), Part.image("image/png", PIXEL_PNG)])


@tool
def remember(cx: Context, key: str, value: Optional[str] = None) -> dict:
    """Stores a value in the invocation's scratch state, or reads it back.

    Args:
        key: The key.
        value: The value to store; omit it to read the key instead.
    """
    if value is None:
        return {"value": cx.state_get(key)}
    cx.state_set(key, value)
    return {"stored": key}


@tool
def whoami(cx: Context) -> dict:
    """Tells the caller the IDs of this call."""
    cx.info("whoami called")
    out = {"call_id": cx.call_id, "invocation_id": cx.invocation_id}
    if cx.caller is not None:
        out["caller"] = cx.caller.to_json()
    return out


@tool
def crash(divisor: int = 0) -> float:
    """Divides one by the divisor: a bug when it is zero.

    Args:
        divisor: The divisor.
    """
    return 1 / divisor


import catalog  # noqa: E402,F401  (declares the resources, templates and prompts)
from toolhost_guest.component import Catalog, Tools  # noqa: E402,F401  (exports them)
