"""Fixed scenes for snapshot tests: what a plane would have said, frozen."""

from __future__ import annotations

from plane.wire.protocol import Event, MessageAppended, Snapshot
from tests.tui.factories import RESETS, agent, cost, message, snapshot


def fleet() -> Snapshot:
    return snapshot(
        agent("demo", "4.10", status="working"),
        agent("scout", "0"),
        agent("builder", "1.37", "5"),
        agent("burner", "2.00", "2", status="held", waiting=2, resumes_at=RESETS),
        agent("reviewer", "0.42", None, model="claude-haiku-4-5", provider="anthropic"),
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
        message("demo", "plane", "demo has spent $4.10 today, 82% of its $5.00 ceiling.", minute=5),
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
            "burner reached its $2.00 ceiling for today; it takes no "
            "new turn until 00:00 UTC (3h 13m) or until you raise it: /limit 3",
            minute=41,
        ),
        message("burner", "operator", "also check the sitemap", minute=44, held=True),
        message(
            "burner",
            "plane",
            "Stored. burner is held at its ceiling; it will answer "
            "this at 00:00 UTC, or as soon as the ceiling is raised.",
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
