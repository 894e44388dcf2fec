"""The system prompt, laid out for the provider's prompt cache.

A stable prefix (who the agent is, how it works) that never changes between
turns, then a short tail for what does change. The tail changes only when
its source does — today's date, not the time — so consecutive turns share
the whole prefix and the provider serves it from cache.
"""

from __future__ import annotations

from datetime import date

from plane.agents.roster import AgentSpec

BASE = (
    "You are {name}, an agent run by plane, a control plane that meters every call "
    "you make against a daily spending ceiling. Be concise: every token is paid for. "
    "Use tools when they help; answer plainly when they do not."
)


def system_prompt(spec: AgentSpec, today: date, layers: tuple[str, ...] = ()) -> str:
    """`layers` are extra stable sections (a repo map, say), placed before the tail."""
    parts = [BASE.format(name=spec.name)]
    if spec.role:
        parts.append(spec.role)
    parts.extend(layers)
    parts.append(f"Today is {today.isoformat()} (UTC).")
    return "\n\n".join(parts)
