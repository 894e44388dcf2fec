"""Fixed scenes for snapshot tests: what a plane would have said, frozen."""

from __future__ import annotations

from decimal import Decimal

from plane.agents import notices
from plane.wire.protocol import Event, MessageAppended, Snapshot
from tests.tui.factories import RESETS, agent, cost, message, snapshot


def fleet() -> Snapshot:
    return snapshot(
        agent("demo", "4.10", status="working"),
        agent("scout", "0"),
        agent("builder", "1.37", "5"),
        agent("burner", "2.00", "2", status="held", waiting=2, resumes_at=RESETS),
        agent("reviewer", "0.42", None, model="claude-haiku-4-5", provider="anthropic"),
        agent("poet", "0.12", status="paused", paused=True),
    )


def demo_conversation() -> list[Event]:
    said = [
        message("demo", "operator", "what failed in the last build?", minute=2),
        message("demo", "tool", "shell: make -j2 → exit 2 (412 log lines, compressed)", minute=2),
        message(
            "demo",
            "agent",
            "The linker could not find `libssl`: the build image lost "
            "`libssl-dev` when the base moved to bookworm.\n\n- add `libssl-dev` to the "
            "Dockerfile\n- pin the base image digest",
            minute=3,
        ),
        cost("demo", "0.03", 12_400, 11_900, 320, minute=3),
        message("demo", "operator", "/limit", minute=5),
        message("demo", "plane", "$4.10 spent today, of $5.00 a day.", minute=5),
        message("demo", "plane", notices.warning("demo", Decimal(5), Decimal("4.10")), minute=5),
        message("demo", "operator", "/limit 5", minute=6),
        message(
            "demo",
            "plane",
            "Spending limit set to $5.00 a day. $4.10 spent today, of $5.00 a day.",
            minute=6,
        ),
    ]
    return [MessageAppended(message=m) for m in said]


def burner_conversation() -> list[Event]:
    said = [
        message("burner", "agent", "Crawled 40 pages; summarising.", minute=40),
        cost("burner", "0.61", 48_200, 2_100, 1_900, minute=40),
        message(
            "burner",
            "plane",
            notices.ceiling_reached("burner", Decimal(2), Decimal("2.00"), "3h 13m"),
            minute=41,
        ),
        message("burner", "operator", "also check the sitemap", minute=44, held=True),
        message(
            "burner",
            "plane",
            notices.held("burner", Decimal(2), Decimal("2.00"), "3h 13m"),
            minute=44,
        ),
        message("burner", "ask", "/limit 50", minute=45),
        message(
            "burner",
            "plane",
            "This agent asked for a ceiling of $50.00 a day, which is "
            "above the $2.00 it has. It can ask to be held to less, never to more: "
            "/limit $50.00, if you meant it.",
            minute=45,
        ),
    ]
    return [MessageAppended(message=m) for m in said]
