"""The tools a new agent gets: none, read-only, or all, and which suits a model.

An agent made from the keyboard used to get every tool. On the embedded
model that made its first turn cost 12–20× the demo's (eleven tool schemas
in a 4,096-token context) while the model flailed at them, so there a new
agent gets none unless asked; on a real provider's model, all, as an agent
in agents.yaml without a `tools:` list does.
"""

from __future__ import annotations

from plane.config import EMBEDDED, Config
from plane.wire.protocol import READ_ONLY_TOOLS, ToolSet

READ_ONLY = READ_ONLY_TOOLS
"""Tools that look and change nothing: no command, no write, no patch, no
booking, no spend on another agent (the scout)."""

SETS: dict[ToolSet, tuple[str, ...] | None] = {"none": (), "read-only": READ_ONLY, "all": None}
"""Each set as an allowlist (None: every tool)."""


def suited(config: Config, provider: str) -> ToolSet:
    """The set a new agent on `provider` gets unless told otherwise."""
    return "none" if config.providers[provider].kind == EMBEDDED else "all"


def allowlist(tool_set: ToolSet) -> tuple[str, ...] | None:
    return SETS[tool_set]


def set_of(tools: tuple[str, ...] | list[str] | None) -> ToolSet | None:
    """The named set an allowlist is, or None when it is some other list."""
    if tools is None:
        return "all"
    chosen = set(tools)
    for name, names in SETS.items():
        if names is not None and chosen == set(names):
            return name
    return None


def described(tools: tuple[str, ...] | list[str] | None) -> str:
    """`no tools`, `read-only tools`, `every tool`, or the names."""
    named = set_of(tools)
    if named == "none":
        return "no tools"
    if named == "read-only":
        return "read-only tools (" + ", ".join(READ_ONLY) + ")"
    if named == "all":
        return "every tool"
    return "tools: " + ", ".join(tools or ())
