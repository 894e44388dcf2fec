"""Protocol frames for tests that feed the app directly (widgets in isolation,
snapshots). Fixed times, so pictures do not change from run to run."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from plane.agents.commands import registry
from plane.money.limits import spend_level
from plane.wire.protocol import AgentState, ConversationMessage, MessageKind, Snapshot, Usage
from plane.wire.words import turn_line

NOW = datetime(2025, 3, 14, 20, 47, 0, tzinfo=UTC)
RESETS = datetime(2025, 3, 15, 0, 0, 0, tzinfo=UTC)


def agent(name: str, spend: str = "0", limit: str | None = "5", **fields: Any) -> AgentState:
    """A row as the plane would send it, its spend level decided the plane's way."""
    ceiling = Decimal(limit) if limit is not None else None
    warn_ratio = fields.pop("warn_ratio", 0.8)
    return AgentState(
        name=name,
        model=fields.pop("model", "smollm2-135m"),
        provider=fields.pop("provider", "local"),
        spend_today_usd=Decimal(spend),
        limit_usd=ceiling,
        warn_ratio=warn_ratio,
        spend_level=spend_level(Decimal(spend), ceiling, warn_ratio),
        **fields,
    )


def snapshot(*agents: AgentState, models: list[str] | None = None, **fields: Any) -> Snapshot:
    return Snapshot(
        day=date(2025, 3, 14),
        now=NOW,
        resets_at=RESETS,
        agents=list(agents),
        models=models if models is not None else ["smollm2-135m", "claude-haiku-4-5"],
        default_model=fields.pop("default_model", "smollm2-135m"),
        default_limit_usd=fields.pop("default_limit_usd", Decimal(5)),
        commands=fields.pop("commands", registry()),
        **fields,
    )


_ids = iter(range(1, 1_000_000))


def message(
    agent: str, kind: MessageKind, text: str, *, minute: int = 2, **fields: Any
) -> ConversationMessage:
    return ConversationMessage(
        id=next(_ids),
        agent=agent,
        at=NOW.replace(hour=14, minute=minute),
        kind=kind,
        text=text,
        **fields,
    )


def cost(
    agent: str, usd: str, tokens_in: int, cached: int, out: int, **fields: Any
) -> ConversationMessage:
    """A turn's cost line, its text in the plane's words (what the TUI shows)."""
    used = Usage(input_tokens=tokens_in, cache_read_tokens=cached, output_tokens=out)
    text = turn_line(Decimal(usd), used)
    return message(agent, "cost", text, cost_usd=Decimal(usd), usage=used, **fields)
