"""A tool call's arguments, from the model's JSON text to a validated model.

Everything that can be wrong with them — not JSON, not an object, a missing,
unknown or mistyped argument — becomes a `ToolError` whose message names the
argument and what is wrong with it, and lists the arguments the tool takes,
so the model can correct the call on its next step.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from pydantic import BaseModel, ValidationError

from plane.errors import ToolError
from plane.tools.base import Tool
from plane.wire.words import whole_text

MAX_REPORTED = 5
_SUBJECT = re.compile(r"^(?:input|value|string|list|dictionary|object) should ")


def parse_arguments(tool: Tool, text: str | None) -> BaseModel:
    data = _json_object(tool, text)
    try:
        return tool.args.model_validate(data)
    except ValidationError as error:
        raise ToolError(explain(tool, error)) from None


def _json_object(tool: Tool, text: str | None) -> dict[str, Any]:
    raw = (text or "").strip()
    if not raw:
        return {}  # a call with no arguments is often sent as ""
    data = _decode(tool, raw)
    if isinstance(data, str):
        # Arguments encoded twice ("{\"path\": …}") are a common slip; one more
        # decode is unambiguous when it yields an object.
        try:
            data = _decode(tool, data)
        except ToolError:
            pass
    if not isinstance(data, dict):
        raise ToolError(
            f"The arguments for {tool.name} must be a JSON object, not {_json_type(data)}. "
            f"{signature(tool)}"
        )
    return data


def _decode(tool: Tool, raw: str) -> Any:
    try:
        data = json.loads(raw)
        return _whole(data) if _ESCAPED_SURROGATE.search(raw) else data
    except json.JSONDecodeError as error:
        raise ToolError(
            f"The arguments for {tool.name} are not valid JSON ({error.msg} at character "
            f"{error.pos}); send one JSON object. {signature(tool)}"
        ) from None
    except ValueError:
        # Python reads no integer of more than 4,300 digits (int_max_str_digits).
        raise ToolError(
            f"The arguments for {tool.name} hold a number too long to read (over "
            f"{sys.get_int_max_str_digits():,} digits); send one JSON object with the "
            f"number written shorter. {signature(tool)}"
        ) from None
    except RecursionError:
        raise ToolError(
            f"The arguments for {tool.name} are nested too deeply to read; send one flat "
            f"JSON object. {signature(tool)}"
        ) from None


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
"""Half of a UTF-16 pair escaped: JSON that may decode to a lone surrogate."""


def _whole(value: Any) -> Any:
    """The decoded arguments with each lone surrogate as U+FFFD (`whole_text`)."""
    if isinstance(value, str):
        return whole_text(value)
    if isinstance(value, list):
        return [_whole(item) for item in value]
    if isinstance(value, dict):
        return {whole_text(key): _whole(item) for key, item in value.items()}
    return value


def explain(tool: Tool, error: ValidationError) -> str:
    problems = [_problem(tool, detail) for detail in error.errors(include_url=False)]
    if len(problems) > MAX_REPORTED:
        problems = [*problems[:MAX_REPORTED], f"{len(problems) - MAX_REPORTED} more"]
    return f"Invalid arguments for {tool.name}: {'; '.join(problems)}. {signature(tool)}"


def _problem(tool: Tool, detail: Any) -> str:
    where = ".".join(str(part) for part in detail["loc"])
    kind = detail["type"]
    if kind == "missing":
        return f"`{where}` is required"
    if kind == "extra_forbidden":
        return f"`{where}` is not an argument of {tool.name}"
    message = str(detail["msg"]).removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    if not where:
        return message
    return f"`{where}` {_verb(message)} (got {_short(detail.get('input'))})"


def _verb(message: str) -> str:
    """pydantic says "input should be …"; about a named argument, "should be …"."""
    return _SUBJECT.sub("should ", message, count=1)


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        try:
            text = repr(value)
        except (ValueError, RecursionError):  # an integer too long to write out
            text = f"a {type(value).__name__} too long to show"
    return text if len(text) <= 60 else text[:59] + "…"


def signature(tool: Tool) -> str:
    fields = tool.args.model_fields
    if not fields:
        return f"{tool.name} takes no arguments: send {{}}."
    names = [f"{name} (required)" if f.is_required() else name for name, f in fields.items()]
    return f"Its arguments: {', '.join(names)}."


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null"
