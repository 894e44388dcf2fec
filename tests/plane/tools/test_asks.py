"""The tools that ask the plane: what they check, what they pass on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from .conftest import NOW, FakeContext, Run

# schedule_turn


async def test_schedule_in_seconds_books_on_the_planes_clock(run: Run, ctx: FakeContext):
    result = await run("schedule_turn", in_seconds=90, note="check the build")
    assert result.ok
    assert ctx.asked == [("schedule_turn", (NOW + timedelta(seconds=90), "check the build"))]
    assert result.text == f"Booked a turn at {(NOW + timedelta(seconds=90)).isoformat()}."


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        ("2025-06-01T14:30:00Z", datetime(2025, 6, 1, 14, 30, tzinfo=UTC)),
        ("2025-06-01T14:30:00+02:00", datetime(2025, 6, 1, 12, 30, tzinfo=UTC)),
        ("2025-06-01T14:30:00", datetime(2025, 6, 1, 14, 30, tzinfo=UTC)),  # no offset: UTC
        ("2025-07-01T11:59:00Z", datetime(2025, 7, 1, 11, 59, tzinfo=UTC)),  # just inside 30 days
    ],
)
async def test_schedule_at_a_time_is_read_as_utc(run: Run, ctx: FakeContext, at: str, expected):
    result = await run("schedule_turn", at=at, note="n")
    assert result.ok, result.text
    (_, (when, _)), *_ = ctx.asked
    assert when == expected
    assert when.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (
            {"at": "2025-06-01T11:00:00Z", "note": "n"},
            "`at` 2025-06-01T11:00:00Z is in the past; it is now 2025-06-01T12:00:00Z.",
        ),
        (
            {"at": "2025-06-01T12:00:00Z", "note": "n"},
            "`at` 2025-06-01T12:00:00Z is in the past; it is now 2025-06-01T12:00:00Z.",
        ),
        (
            {"at": "2025-07-02T00:00:00Z", "note": "n"},
            "`at` 2025-07-02T00:00:00Z is more than 30 days away; the latest is "
            "2025-07-01T12:00:00Z.",
        ),
        (
            {"at": "tomorrow at noon", "note": "n"},
            "`at` 'tomorrow at noon' is not an ISO-8601 time such as 2025-06-01T14:30:00Z.",
        ),
        (
            {"in_seconds": 30 * 86400 + 1, "note": "n"},
            "`in_seconds` should be less than or equal to 2592000 (got 2592001)",
        ),
        ({"in_seconds": 0, "note": "n"}, "`in_seconds` should be greater than or equal to 1"),
        ({"in_seconds": 60, "at": "2025-06-01T14:30:00Z", "note": "n"}, "give exactly one of"),
        ({"note": "n"}, "give exactly one of `in_seconds` or `at`"),
        ({"in_seconds": 60}, "`note` is required"),
        ({"in_seconds": 60, "note": ""}, "`note` should have at least 1 character"),
    ],
)
async def test_schedule_refusals(run: Run, ctx: FakeContext, arguments, says):
    result = await run("schedule_turn", **arguments)
    assert not result.ok
    assert says in result.text
    assert ctx.asked == []


async def test_schedule_follows_the_clock_when_it_moves(run: Run, ctx: FakeContext):
    await ctx.clock.advance(timedelta(days=1))
    assert not (await run("schedule_turn", at="2025-06-02T11:00:00Z", note="n")).ok
    assert (await run("schedule_turn", at="2025-06-02T13:00:00Z", note="n")).ok


# set_own_limit


@pytest.mark.parametrize(
    ("usd", "passed_on"),
    [("2", "2"), ("$0.50", "$0.50"), (" off ", "off"), (2, "2"), (0.25, "0.25")],
)
async def test_set_own_limit_passes_the_raw_value_to_the_plane(
    run: Run, ctx: FakeContext, usd, passed_on
):
    result = await run("set_own_limit", usd=usd)
    assert (result.ok, result.text) == (True, f"asked for {passed_on}")
    assert ctx.asked == [("ask_limit", passed_on)]


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({}, "`usd` is required"),
        ({"usd": ""}, "`usd` should have at least 1 character"),
        ({"usd": True}, "`usd` should be a valid string"),
        ({"usd": ["5"]}, "`usd` should be a valid string"),
        ({"usd": "5", "force": True}, "`force` is not an argument of set_own_limit"),
    ],
)
async def test_set_own_limit_refusals(run: Run, ctx: FakeContext, arguments, says):
    result = await run("set_own_limit", **arguments)
    assert not result.ok
    assert says in result.text
    assert ctx.asked == []


def test_set_own_limit_tells_the_model_it_can_only_lower_its_ceiling():
    from plane.tools.registry import TOOLS

    assert "may only lower your own ceiling" in TOOLS["set_own_limit"].description


# budget_status


@pytest.mark.parametrize("arguments", ["{}", "", "null"])
async def test_budget_status_takes_no_arguments(ctx: FakeContext, arguments: str):
    from plane.tools.registry import call

    result = await call("budget_status", arguments, ctx)
    if arguments == "null":
        assert not result.ok
        assert result.text.startswith("The arguments for budget_status must be a JSON object")
    else:
        assert (result.ok, result.text) == (True, "$0.42 spent today, of $5.00 a day.")


async def test_budget_status_refuses_arguments(run: Run):
    result = await run("budget_status", agent="someone-else")
    assert (result.ok, result.text) == (
        False,
        "Invalid arguments for budget_status: `agent` is not an argument of budget_status. "
        "budget_status takes no arguments: send {}.",
    )


# ask_scout


async def test_ask_scout_passes_checked_workspace_relative_paths(
    run: Run, ctx: FakeContext, workspace: Path
):
    (workspace / "logs").mkdir()
    (workspace / "logs" / "build.log").write_text("error\n")
    result = await run(
        "ask_scout", question="why did it fail?", paths=["logs/build.log", "./logs/", "."]
    )
    assert (result.ok, result.text) == (True, "The scout says: 42.")
    assert ctx.asked == [("ask_scout", ("why did it fail?", ["logs/build.log", "logs", "."]))]


@pytest.mark.parametrize(
    ("paths", "says"),
    [
        (["../elsewhere"], "`../elsewhere` is outside the workspace."),
        (["/etc/passwd"], "`/etc/passwd` is outside the workspace."),
        (["missing.log"], "`missing.log` in `paths` does not exist."),
        ("logs", "`paths` should be a valid list"),
        ([f"f{n}" for n in range(51)], "`paths` should have at most 50 items"),
    ],
)
async def test_ask_scout_refusals(run: Run, ctx: FakeContext, paths, says):
    result = await run("ask_scout", question="q", paths=paths)
    assert not result.ok
    assert says in result.text
    assert ctx.asked == []


# retrieve


async def test_retrieve_passes_its_selectors(run: Run, ctx: FakeContext):
    result = await run("retrieve", ref="k_Qm9v", lines=" 10 : 40 ", grep="ERROR")
    assert (result.ok, result.text) == (True, "retrieved")
    assert ctx.asked == [
        (
            "retrieve",
            {"ref": "k_Qm9v", "lines": "10:40", "chars": None, "pointer": None, "grep": "ERROR"},
        )
    ]
    await run("retrieve", ref="k_x", chars=":500", pointer="/items/0")
    assert ctx.asked[-1][1] == {
        "ref": "k_x",
        "lines": None,
        "chars": ":500",
        "pointer": "/items/0",
        "grep": None,
    }


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"ref": "k", "lines": "ten:20"}, '`lines` should be a range "A:B"'),
        ({"ref": "k", "lines": ":"}, '`lines` should be a range "A:B"'),
        ({"ref": "k", "chars": "40:10"}, "`chars` starts after it ends (40 > 10)"),
        ({"ref": "k", "pointer": "items/0"}, "`pointer` should be a JSON pointer"),
        ({"ref": "k", "grep": "(oops"}, "`grep` is not a valid regular expression"),
        ({"ref": ""}, "`ref` should have at least 1 character"),
        ({"lines": "1:2"}, "`ref` is required"),
    ],
)
async def test_retrieve_refusals(run: Run, ctx: FakeContext, arguments, says):
    result = await run("retrieve", **arguments)
    assert not result.ok
    assert says in result.text
    assert ctx.asked == []
