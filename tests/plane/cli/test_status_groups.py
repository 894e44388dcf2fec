"""`plane status` says a group in one line, its agents as the first few and
how many more: at 10,000 agents in eight groups each group's line listed
its 500 agents, 8,000 characters a line."""

from plane.cli.status import status_text

MEMBERS = [f"agent-{n:03d}" for n in range(25)]
SNAPSHOT = {
    "day": "2026-11-29",
    "now": "2026-11-29T12:00:00+00:00",
    "resets_at": "2026-11-30T00:00:00+00:00",
    "agents": [{"name": name, "model": "m", "status": "idle"} for name in MEMBERS],
    "groups": [
        {"name": "big", "spend_today_usd": "0.5", "limit_usd": "20", "agents": MEMBERS},
        {"name": "small", "spend_today_usd": "0", "limit_usd": None, "agents": MEMBERS[:2]},
    ],
}


def group_line(name: str) -> str:
    return next(line for line in status_text(SNAPSHOT).splitlines() if f"group {name}" in line)


def test_a_large_groups_line_names_its_first_agents_and_counts_the_rest():
    line = group_line("big")
    assert line.endswith(", agent-019, and 5 more")
    assert "agent-020" not in line
    assert line.startswith("  group big    $0.50 of $20.00  agent-000, agent-001,")


def test_a_small_groups_line_names_every_agent():
    assert group_line("small") == "  group small  $0.00 no limit  agent-000, agent-001"
