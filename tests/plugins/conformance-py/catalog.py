"""The conformance plugin's catalog in Python, the same as every language's:
resources (text, bytes, several contents, the request's IDs, a failure),
templates (``{name}`` and ``{+name}``), prompts (arguments, roles, an embedded
resource, an image, JSON, a description, a refusal) and completions (by prefix,
from the context, past the cap). ``host/tests/all/conformance/catalog.rs``
states what each must do; ``tests/plugins/conformance-c/catalog.c`` is the C one.

Imported by ``app.py``: the decorators declare as the module loads.
"""

from __future__ import annotations

import json
from typing import Optional

from toolhost_guest import (
    Completion,
    Contents,
    Context,
    InvalidArguments,
    Messages,
    Part,
    ToolError,
    assistant,
    complete,
    prompt,
    resource,
    resource_template,
    user,
)

# A 1x1 red RGBA PNG (the same bytes as app.py's).
PIXEL_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8cfc0f01f000500"
    "01ff56c72f0d0000000049454e44ae426082"
)


@resource(
    "conformance://greeting",
    title="A greeting",
    description="Says hello.",
    mime_type="text/plain",
    size=12,
)
def greeting() -> str:
    # No MIME type: the declared one.
    return "Hello there!"


@resource("conformance://pixel", mime_type="image/png", size=len(PIXEL_PNG))
def pixel() -> bytes:
    return PIXEL_PNG


@resource("conformance://bundle", mime_type="text/plain")
def bundle() -> list[Contents]:
    # The resource read, then a sub-resource with a type of its own.
    return [
        Contents("the bundle"),
        Contents('{"part": 1}', uri="conformance://bundle/part", mime_type="application/json"),
    ]


@resource("conformance://request", mime_type="application/json")
def request(cx: Context) -> str:
    return json.dumps(
        {
            "call_id": cx.call_id,
            "invocation_id": cx.invocation_id,
            "uri": cx.tool,
            "caller": cx.caller.subject if cx.caller is not None else None,
        }
    )


@resource("conformance://broken")
def broken() -> str:
    raise ToolError("the resource is broken")


@resource_template(
    "conformance://words/{word}",
    name="words",
    description="A word, and where it was read.",
    mime_type="text/plain",
)
def word(word: str, cx: Context) -> str:
    return f"{word} at {cx.tool}"


@complete("conformance://words/{word}")
def words(argument: str, value: str) -> Completion:
    if argument != "word":
        raise InvalidArguments(f"no variable `{argument}`")
    return Completion.matching(["alpha", "beta", "bravo"], value)


@resource_template("conformance://files/{+path}", name="files")
def file(path: str) -> Contents:
    # A MIME type of its own, where the template declares none.
    return Contents(path, mime_type="text/markdown")


@prompt(title="Greeting", argument_titles={"style": "Style"})
def greet(name: str, style: Optional[str] = None) -> Messages:
    """Greets someone, in a style if given.

    Args:
        name: Who to greet.
        style: How to greet.
    """
    messages = [user(f"Greet {name}.")]
    if style is not None:
        messages.append(assistant(f"In a {style} style."))
    return Messages(messages, description=f"A greeting for {name}")


@complete("greet")
def greet_completions(argument: str, value: str, context: dict[str, str]) -> Completion:
    if argument == "style":
        return Completion.matching(["formal", "friendly", "funny"], value)
    if context.get("style") == "formal":
        return Completion(["Dr. Ada"])
    return Completion(["Ada"])


@prompt
def show() -> list:
    """Shows a resource and an image."""
    return [
        user(Contents("Hello there!", uri="conformance://greeting", mime_type="text/plain")),
        assistant(Part.image("image/png", PIXEL_PNG)),
        assistant(Part.json({"shown": 2})),
    ]


@prompt
def many(value: str = "?") -> str:
    """Offers more values than a completion serves."""
    return f"Pick {value}."


@complete("many")
def many_completions() -> list[str]:
    return [f"v{i:03}" for i in range(150)]


@prompt
def refuse() -> str:
    """Always refuses."""
    raise InvalidArguments("no prompt today")
