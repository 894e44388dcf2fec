"""How an MCP server's tool is named: `server.tool` where people name it (the
allowlist, the conversation), `server__tool` where a model does.

Providers take tool names of letters, digits, `_` and `-` only (OpenAI and
Anthropic alike, 64 characters at most), so the dot people write cannot go
on the wire. A server's name never holds `__` (the config refuses it), so the
first `__` of a wire name always ends the server's name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SEPARATOR = "__"
MAX_WIRE = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def wire_name(server: str, tool: str) -> str | None:
    """The name a model calls `tool` of `server` by; None when it cannot have
    one (too long for a provider)."""
    name = f"{server}{SEPARATOR}{_UNSAFE.sub('_', tool)}"
    return name if 0 < len(tool) and len(name) <= MAX_WIRE else None


def shown(server: str, tool: str) -> str:
    """The name people read and write: `time.get_current_time`."""
    return f"{server}.{tool}"


def allows(allowlist: Iterable[str] | None, server: str, tool: str) -> bool:
    """Whether an agent's `tools:` lets it use `tool` of `server` (None: every tool)."""
    if allowlist is None:
        return True
    chosen = set(allowlist)
    return f"{server}.*" in chosen or shown(server, tool) in chosen


def may_allow(allowlist: Iterable[str] | None, server: str) -> bool:
    """Whether `tools:` lets the agent use any tool of `server`: a server none of
    whose tools it may call is not started at all."""
    return allowlist is None or any(name.startswith(f"{server}.") for name in allowlist)
