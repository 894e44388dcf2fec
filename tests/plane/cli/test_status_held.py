"""`plane status` and `plane show` say why a held agent is held, whatever
holds it: a group's or the fleet's ceiling read `held  $0.08 of $5.00
resumes in …` with nothing of why (only a loop's hold said so), though the
agent's own ceiling was not reached."""

import pytest

from plane.cli.status import status_text
from plane.wire.protocol import Usage
from tests.support.command import plane_cli_async
from tests.support.fixtures_plane import CONFIG
from tests.support.scripted_llm import Reply

TWENTY_CENTS = Usage(input_tokens=100, output_tokens=50)
"""$0.20 at the test prices."""

FIVE_EACH = CONFIG.replace("defaults:\n  limitUsd: 1\n", "defaults:\n  limitUsd: 5\n")
GROUPED = FIVE_EACH + "groups:\n  research:\n    limitUsd: 0.6\n    agents: [scout, demo]\n"
FLEET = FIVE_EACH + "fleet:\n  limitUsd: 0.6\n"


@pytest.mark.parametrize(
    ("config", "whose"),
    [(GROUPED, "group research's ceiling"), (FLEET, "the fleet's ceiling")],
    ids=["group", "fleet"],
)
async def test_status_and_show_name_the_ceiling_above_the_agent_that_holds_it(
    start_plane, config, whose
):
    plane = await start_plane(config)
    plane.llm.default_reply = Reply("done", usage=TWENTY_CENTS)
    for n in range(3):
        await plane.turn("scout" if n % 2 else "demo", f"task {n}")
    await plane.send("demo", "anyone?")
    await plane.quiet()

    status = (await plane_cli_async(plane.home.root, "status")).stdout.splitlines()
    demo = next(line for line in status if line.startswith("  demo "))
    assert demo.endswith(f"$0.40 of $5.00  {whose}: resumes in 12h 00m"), demo

    show = (await plane_cli_async(plane.home.root, "show", "demo")).stdout.splitlines()
    [today] = [line for line in show if line.startswith("  today ")]
    assert today == f"  today      $0.40 spent · held · 1 waiting · {whose}: resumes at 00:00 UTC"


def held(reason: str, **row: object) -> dict[str, object]:
    """A snapshot of one agent, `demo`, held for `reason`, in group research."""
    agent = {"name": "demo", "model": "m", "status": "held", "hold_reason": reason, **row}
    return {
        "day": "2026-11-29",
        "now": "2026-11-29T12:00:00+00:00",
        "resets_at": "2026-11-30T00:00:00+00:00",
        "agents": [agent],
        "groups": [{"name": "research", "limit_usd": "0", "agents": ["demo"]}],
    }


@pytest.mark.parametrize(
    ("snapshot", "said"),
    [
        (
            held("ceiling", limit_usd="1", resumes_at="2026-11-30T00:00:00+00:00"),
            "its ceiling: resumes in 12h 00m",
        ),
        (held("ceiling", limit_usd="0"), "its ceiling is $0.00: a pause until it is raised"),
        (held("group"), "group research's ceiling is $0.00: a pause until it is raised"),
        (held("fleet"), "the fleet's ceiling is $0.00: a pause until it is raised"),
        (
            held("unpriced", price_known=False),
            "an unpriced model under a ceiling: a price in agents.yaml or no ceiling frees it",
        ),
        (held("loop"), "a loop: `plane resume demo` lets it go on"),
    ],
)
def test_each_hold_says_why_and_what_frees_it(snapshot, said):
    """A ceiling of $0.00 is a pause no day's end frees; an unpriced model
    waits for a price: neither says a time."""
    [line] = [line for line in status_text(snapshot).splitlines() if line.startswith("  demo ")]
    assert line.endswith(f"  {said}"), line
