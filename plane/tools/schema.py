"""JSON schemas for the model, from the tools' pydantic models.

The tool schemas sit in the cached prefix of every prompt, so they must be
the same bytes every time, in every process: built from the models alone
(never from sets or anything run-dependent), and trimmed of what only costs
tokens — pydantic's titles, `anyOf [T, null]` for an optional argument, and
`default: null`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def arguments_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema()
    if "$defs" in raw:
        raise ValueError(f"{model.__name__}: nested models are not supported in tool arguments")
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: _property(sub) for name, sub in raw.get("properties", {}).items()},
    }
    if raw.get("required"):
        schema["required"] = list(raw["required"])
    schema["additionalProperties"] = False
    return schema


def _property(schema: dict[str, Any]) -> dict[str, Any]:
    schema = _trim(schema)
    branches = schema.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        (kept,) = (branch for branch in branches if branch != {"type": "null"})
        rest = {key: value for key, value in schema.items() if key != "anyOf"}
        schema = {**kept, **rest}
    if "default" in schema and schema["default"] is None:
        del schema["default"]
    return {key: schema[key] for key in sorted(schema, key=_key_order)}


def _key_order(key: str) -> tuple[int, str]:
    """type and description first, for whoever reads the prompt; then alphabetical."""
    return ({"type": 0, "description": 1}.get(key, 2), key)


def _trim(value: Any) -> Any:
    """Drop `title` keywords at every depth (never a property named title)."""
    if isinstance(value, list):
        return [_trim(item) for item in value]
    if not isinstance(value, dict):
        return value
    trimmed: dict[str, Any] = {}
    for key, item in value.items():
        if key == "title" and isinstance(item, str):
            continue
        if key == "properties" and isinstance(item, dict):
            trimmed[key] = {name: _trim(sub) for name, sub in item.items()}
        else:
            trimmed[key] = _trim(item)
    return trimmed
