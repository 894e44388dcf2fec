"""Whether a message can fit the model's context at all (the refusal's
words, and those of a turn that did not fit, are `plane.agents.notices`').

A message is refused when it is sent if it could not fit even beside the
room kept for the answer, against the provider's `context_window` (the
refusal says how much room the prompt and tool schemas leave). Refused, not
compacted: compaction shortens the *history*, and a message that alone is
larger than the window has nothing left to shorten but itself — which only
its author can do well. Refusing it at the door keeps it out of the model's
history, so it cannot jam every later turn (a 20,000-character paste once
did, on the embedded model's 4,096 tokens).

A message that fits alone but not with the prompt or the history goes
through, and the provider decides: if it refuses the prompt as too long, the
turn keeps nothing of itself in the model's history and says to start a new
session. The prompt's share is left out of the refusal's test because it is
an estimate (`chars / 3.5`, which over-counts English prose): a refusal on an
estimate would turn away messages that fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date

from plane.agents import notices
from plane.agents.prompt import system_prompt
from plane.agents.roster import AgentSpec
from plane.config import Config
from plane.tools import registry
from plane.tools.base import ToolSpec

CHARS_PER_TOKEN = 3.5


def estimate(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def too_large(
    config: Config, spec: AgentSpec, text: str, today: date, mcp: Sequence[ToolSpec] = ()
) -> str | None:
    """The refusal for `text` sent to `spec`'s agent, or None when it fits a
    fresh session's context. `mcp`: the tools its MCP servers offer, where
    a session has listed them (their schemas take room as the registry's do)."""
    window = config.providers[spec.provider].context_window
    answer = config.defaults.max_output_tokens
    message = estimate(len(text))
    # Refused only when the message alone, beside the answer's room, cannot
    # fit: the prompt's share is an estimate, and a message that might fit is
    # sent (should the provider find it too long, the turn says so and keeps
    # nothing of itself, so the agent is not jammed). The prompt's share is
    # only worked out for the refusal, which says it.
    if message + answer <= window:
        return None
    names = registry.select_for_session(spec.tools, text)
    fixed = prompt_estimate(system_prompt(spec, today), (*registry.specs(names), *mcp))
    room = max(0, window - answer - fixed)
    return notices.too_large(spec, len(text), message, window, room)


def prompt_estimate(prompt: str, tools: Sequence[ToolSpec]) -> int:
    """About how many tokens the system prompt and the tools' schemas take."""
    schema_chars = sum(len(t.name) + len(t.description) + len(str(t.parameters)) for t in tools)
    return estimate(len(prompt) + schema_chars)


def crowded(config: Config, spec: AgentSpec, prompt: str, tools: Sequence[ToolSpec]) -> int | None:
    """The prompt's estimate when it alone (with the answer's room) fills the
    context, so no message could fit; else None. Used only to word a refusal
    the provider made: an estimate never refuses on its own."""
    window = config.providers[spec.provider].context_window
    fixed = prompt_estimate(prompt, tools)
    return fixed if fixed + config.defaults.max_output_tokens >= window else None
