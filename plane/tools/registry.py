"""Every tool, the capability diet, and the one door a tool call goes through.

`call` is what the turn loop uses: it never raises for anything the model
sent. An unknown tool, arguments that are not JSON or do not validate, a
refusal (`ToolError`), a timeout, even a bug in a tool all come back as
`ToolResult(ok=False)` with a sentence the model can act on; bugs are also
logged. The one exception is `LedgerError`: money that could not be recorded
stops the turn, as it stops everything else.

The diet (DESIGN lever 6): core tools are always on; a heavy tool is loaded
into a session only when the session's founding message mentions one of its
keywords. `select_for_session` is called once per session, and `specs` gives
the same bytes for the same names every time, so the prompt cache stays warm.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Collection, Iterable, Mapping
from types import MappingProxyType

from plane.errors import LedgerError, ToolError
from plane.tools import asks, files, patch, schedule, search, shell
from plane.tools.arguments import parse_arguments
from plane.tools.base import Tool, ToolContext, ToolResult, ToolSpec
from plane.tools.schema import arguments_schema

__all__ = ["CORE", "TOOLS", "Tool", "ToolResult", "call", "select_for_session", "specs"]

log = logging.getLogger(__name__)

_ORDER = (
    shell.TOOL,
    files.READ,
    files.WRITE,
    files.LIST,
    search.TOOL,
    schedule.TOOL,
    asks.LIMIT,
    asks.BUDGET,
    asks.SCOUT,
    asks.RETRIEVE,
    patch.TOOL,
)

TOOLS: Mapping[str, Tool] = MappingProxyType({tool.name: tool for tool in _ORDER})
"""Every tool, in the one order all tool lists use."""

CORE: tuple[str, ...] = tuple(name for name, tool in TOOLS.items() if not tool.keywords)
"""Always on (within the agent's allowlist)."""

_SPECS = {
    name: ToolSpec(name=name, description=tool.description, parameters=arguments_schema(tool.args))
    for name, tool in TOOLS.items()
}

_SCHEMAS = {name: json.dumps(spec.parameters) for name, spec in _SPECS.items()}

_SUFFIXES = r"(?:s|es|d|ed|ing|er|ers)?"


def _keyword_pattern(keywords: tuple[str, ...]) -> re.Pattern[str] | None:
    if not keywords:
        return None
    words = "|".join(r"\s+".join(map(re.escape, word.split())) for word in keywords)
    return re.compile(rf"\b(?:{words}){_SUFFIXES}\b", re.IGNORECASE)


_KEYWORDS = {name: _keyword_pattern(tool.keywords) for name, tool in TOOLS.items()}


def specs(names: Iterable[str]) -> tuple[ToolSpec, ...]:
    """The specs of `names`, in registry order, each once. An unknown name is a
    programming error (the allowlist is checked when the config loads)."""
    wanted = set(names)
    unknown = wanted - TOOLS.keys()
    if unknown:
        raise KeyError(f"no such tools: {', '.join(sorted(unknown))}")
    # A copy each (the schema read back from its JSON: a deep copy, many times
    # cheaper than copy.deepcopy, which cost a quarter of a metered call's CPU).
    return tuple(
        ToolSpec(spec.name, spec.description, json.loads(_SCHEMAS[name]))
        for name, spec in _SPECS.items()
        if name in wanted
    )


def select_for_session(allowed: Iterable[str] | None, founding_message: str) -> tuple[str, ...]:
    """The tools of a session: core tools, plus heavy tools whose keywords the
    founding message mentions (case-insensitive, whole words, plural and verb
    endings allowed: `patch` matches "patches", not "dispatch"), within the
    agent's allowlist (None: every tool). Names the registry does not know are
    ignored here; the config loader is where they are an error."""
    permitted = set(TOOLS) if allowed is None else set(allowed)
    chosen: list[str] = []
    for name in TOOLS:
        pattern = _KEYWORDS[name]
        if name in permitted and (pattern is None or pattern.search(founding_message)):
            chosen.append(name)
    return tuple(chosen)


async def call(
    name: str,
    arguments: str,
    ctx: ToolContext,
    *,
    available: Collection[str] | None = None,
) -> ToolResult:
    """Run one tool call. `available` is the session's selection: pass it, so a
    model cannot call a tool its allowlist or diet left out by naming it."""
    tool = TOOLS.get(name)
    if tool is None or (available is not None and name not in available):
        names = [n for n in TOOLS if available is None or n in available]
        return ToolResult(
            f"There is no tool named {name[:80]!r} here; the tools are: {', '.join(names)}.",
            ok=False,
        )
    try:
        args = parse_arguments(tool, arguments)
        text = await asyncio.wait_for(tool.run(args, ctx), tool.timeout_s)
    except ToolError as error:
        return ToolResult(str(error), ok=False)
    except TimeoutError:
        return ToolResult(
            f"{name} was stopped after {tool.timeout_s:g}s without finishing.", ok=False
        )
    except LedgerError:
        raise
    except Exception as error:
        log.exception("tool %s failed for agent %s", name, getattr(ctx, "agent", "?"))
        detail = f"{type(error).__name__}: {error}"[:300]
        return ToolResult(
            f"{name} failed unexpectedly ({detail}); the plane has logged it.", ok=False
        )
    return ToolResult(text or "(no output)", ok=True)
