"""Whether a message can fit the model's context at all, and what the plane
says when a turn does not fit.

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
from datetime import date

from plane.agents.prompt import system_prompt
from plane.agents.roster import AgentSpec
from plane.agents.session import Saved
from plane.config import Config
from plane.tools import registry
from plane.wire.words import tokens

CHARS_PER_TOKEN = 3.5


def estimate(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def too_large(config: Config, spec: AgentSpec, text: str, today: date) -> str | None:
    """The refusal for `text` sent to `spec`'s agent, or None when it fits a
    fresh session's context."""
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
    schema_chars = sum(
        len(t.name) + len(t.description) + len(str(t.parameters)) for t in registry.specs(names)
    )
    fixed = estimate(len(system_prompt(spec, today)) + schema_chars)
    room = max(0, window - answer - fixed)
    return refusal(spec, len(text), message, window, room)


def refusal(spec: AgentSpec, chars: int, message: int, window: int, room: int) -> str:
    return (
        f"Not sent: this message ({chars:,} characters, about {tokens(message)} tokens) "
        f"is more than {spec.model} can read at once: its context holds {window:,} "
        f"tokens, of which about {tokens(room)} are left for a message once the prompt "
        "and the answer's room are counted. Shorten it, or send it in parts."
    )


def overflow_notice(spec: AgentSpec, window: int, saved: Saved | None) -> str:
    """A turn the provider refused as longer than the context: what happened
    and what to do. The turn's messages are already left out of the history,
    and a history there was is saved and the session started anew (`saved`)."""
    said = (
        f"The turn stopped: what {spec.name} would read is more than {spec.model}'s "
        f"context holds ({window:,} tokens), so this turn is left out of its history "
        "and nothing was charged."
    )
    if saved is not None:
        return (
            f"{said} The plane started a new session, as /new does (the {saved.messages} "
            f"messages of the history are saved in .transcripts/{saved.file}): send it again."
        )
    return f"{said} Send a shorter message, or the same one in parts."
