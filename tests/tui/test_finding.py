"""Finding an agent among 55: the fleet line, `/` to filter by name, `f` by
state, `s` to sort; held and amber rows stay in sight however far the
cursor goes."""

from __future__ import annotations

from decimal import Decimal

import pytest

from plane.wire import protocol as p
from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, snapshot
from tui.app import PlaneApp
from tui.fleet import Tally
from tui.screens.main import FLEET_S
from tui.widgets.agent_list import RESORT_S, AgentList
from tui.widgets.fleet_line import FleetLine

SIZE = (100, 30)


def fifty_five():
    held = [agent(f"held-{n}", "0.20", "0.20", status="held") for n in range(3)]
    amber = [agent("scout", "0.45", "0.50")]
    working = [agent("poet", "0.07", status="working")]
    working += [agent(f"worker-{n}", status="working") for n in range(3)]
    idle = [agent(f"agent-{n:02}") for n in range(47)]
    # Configured with the alarming ones in the middle, where 55 rows would bury them.
    return snapshot(*idle[:20], *held[:2], *working, *idle[20:40], *amber, held[2], *idle[40:])


def fleet_text(app: PlaneApp) -> str:
    return app.main_screen.query_one(FleetLine).render().plain


def on_screen(app: PlaneApp) -> list[str]:
    """The rows the list draws, top to bottom (names only)."""
    agents = app.main_screen.query_one(AgentList)
    lines = [agents.render_line(y).text.split() for y in range(agents.size.height)]
    return [words[1] for words in lines if len(words) >= 2 and words[0] in "○●■"]


async def started(pilot) -> AgentList:
    feed(pilot.app, fifty_five())
    await redrawn(pilot)
    return pilot.app.main_screen.query_one(AgentList)


async def redrawn(pilot) -> None:
    """Past the fleet line's and the rows' short redraw delays."""
    await settle(pilot)
    await pilot.pause(max(FLEET_S, RESORT_S) * 2)
    await settle(pilot)


def test_the_fleet_line_counts_by_state_and_sums_the_day() -> None:
    assert Tally.of(fifty_five().agents).fleet().text() == (
        "55 agents · 4 working · 1 amber · 3 held · $1.12 today"
    )
    calm = Tally.of([agent("demo"), agent("scout")]).fleet()
    assert calm.text() == "2 agents · $0.00 today", "a count of zero says nothing"


def test_the_fleet_line_counts_paused_agents() -> None:
    agents = [agent("demo", status="paused"), agent("scout", status="working"), agent("poet")]
    assert Tally.of(agents).fleet().text() == "3 agents · 1 working · 1 paused · $0.00 today"


def test_the_fleet_line_never_reads_at_its_ceiling_short_of_it() -> None:
    """As an agent's spend does: the digits that tell the two apart, rounded
    away from the ceiling, never `$50.00 of $50.00` unless it is exactly there."""
    under = Tally.of([agent("a", "49.996", None)]).fleet(Decimal(50))
    assert under.text() == "1 agent · $49.996 of $50.00 today"
    over = Tally.of([agent("a", "50.004", None)]).fleet(Decimal(50))
    assert over.text() == "1 agent · $50.004 of $50.00 today"
    at = Tally.of([agent("a", "50", None)]).fleet(Decimal(50))
    assert at.text() == "1 agent · $50.00 of $50.00 today"


def test_the_fleet_line_says_while_a_call_of_the_day_was_priced_at_a_floor() -> None:
    """As the title bar says it of the agent, with or without the fleet's
    ceiling, and no more once that agent's row does not (its spend dropped)."""
    tally = Tally.of([agent("aider", "0.40", floor_priced=True), agent("demo", "1.00")])
    assert tally.fleet().text() == "2 agents · $1.40 + unpriced today"
    assert tally.fleet(Decimal(5)).text() == "2 agents · $1.40 + unpriced of $5.00 today"
    tally.put(agent("aider", "0.40"))  # the next day's row, say
    assert tally.fleet().text() == "2 agents · $1.40 today"


@pytest.mark.slow
async def test_the_fleet_line_is_on_screen_and_follows_the_plane() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        assert fleet_text(app) == "55 agents · 4 working · 1 amber · 3 held · $1.12 today"
        from plane.wire.protocol import AgentUpdated

        feed(app, AgentUpdated(agent=agent("poet", "0.10")))  # its turn ended, dearer
        await redrawn(pilot)
        assert fleet_text(app) == "55 agents · 3 working · 1 amber · 3 held · $1.15 today"


@pytest.mark.slow
async def test_held_and_amber_rows_come_first_and_stay_in_sight_at_the_bottom() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        agents = await started(pilot)
        alarms = {"held-0", "held-1", "held-2", "scout"}
        assert set(agents.names[:4]) == alarms
        await pilot.press("ctrl+l", "end")  # to `+ new agent`, 51 rows down
        await settle(pilot)
        assert agents.scroll_offset.y > 0
        seen = on_screen(app)
        assert alarms <= set(seen[:4]), seen
        assert "agent-46" in seen, "the bottom rows show under the pinned ones"
        await pilot.press("up")
        await settle(pilot)
        assert app.main_screen.selected == "agent-46"
        await pilot.press("home")
        await settle(pilot)
        assert app.main_screen.selected == agents.names[0]
        assert on_screen(app)[:6] == agents.names[:6], "back at the top, nothing hidden"


@pytest.mark.slow
async def test_slash_filters_by_a_piece_of_the_name_and_esc_clears_it() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        agents = await started(pilot)
        await pilot.press("ctrl+l", "/")
        await settle(pilot)
        await pilot.press(*"WORK")
        await settle(pilot)
        assert agents.names == ["worker-0", "worker-1", "worker-2"]
        assert agents.border_title == "agents · /WORK"
        assert fleet_text(app).startswith("55 agents"), "the fleet line counts every agent"
        await pilot.press("enter")  # keep it, back to the rows
        await settle(pilot)
        assert app.focused is agents and app.main_screen.selected == "worker-0"
        await pilot.press("down")
        await settle(pilot)
        assert app.main_screen.selected == "worker-1"
        await pilot.press("/", "escape")
        await settle(pilot)
        assert len(agents.names) == 55 and agents.border_title == "agents"
        assert app.main_screen.selected == "worker-1", "clearing keeps the selection"


@pytest.mark.slow
async def test_f_steps_through_the_states_and_s_through_the_sorts() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        agents = await started(pilot)
        await pilot.press("ctrl+l", "f")
        await settle(pilot)
        assert agents.state_filter == "working"
        assert agents.names == ["poet", "worker-0", "worker-1", "worker-2"]
        await pilot.press("f")
        assert agents.names == ["held-0", "held-1", "held-2"]
        assert agents.border_title == "agents · held"
        await pilot.press("f", "f")  # paused (none), then amber
        assert agents.names == ["held-0", "held-1", "scout", "held-2"], "amber or red"
        await pilot.press("f", "f")  # unread (none), then every agent again
        assert len(agents.names) == 55 and agents.state_filter is None

        await pilot.press("s")  # by state: held, then red/amber, working, idle
        assert agents.names[:8] == [
            "held-0",
            "held-1",
            "held-2",
            "scout",
            "poet",
            "worker-0",
            "worker-1",
            "worker-2",
        ]
        await pilot.press("s")  # by spend, the alarming ones still first
        assert agents.names[:5] == ["scout", "held-0", "held-1", "held-2", "poet"]
        assert agents.border_title == "agents · by spend"
        await pilot.press("s")  # by name
        assert agents.names[4:7] == ["agent-00", "agent-01", "agent-02"]
        await pilot.press("s")  # as configured
        assert agents.names[4] == "agent-00" and agents.border_title == "agents"


@pytest.mark.slow
async def test_a_row_that_turns_amber_moves_up_into_sight() -> None:
    from plane.wire.protocol import AgentUpdated

    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        agents = await started(pilot)
        assert "agent-46" not in on_screen(app)
        feed(app, AgentUpdated(agent=agent("agent-46", "4.50", "5")))
        await redrawn(pilot)  # rows an update moves are ordered again soon after
        assert "agent-46" in agents.names[:5] and "agent-46" in on_screen(app)


@pytest.mark.slow
async def test_the_fleet_line_says_the_fleets_ceiling_and_follows_limit_fleet() -> None:
    """Several planes on one store share a fleet ceiling (`/limit fleet`):
    the line says it beside the day's spend, and a change reaches every
    client as it is made."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("a", "1.50"), agent("b", "0.50"), fleet_limit_usd=Decimal(50)))
        await redrawn(pilot)
        assert fleet_text(app) == "2 agents · $2.00 of $50.00 today"
        feed(app, p.FleetChanged(limit_usd=Decimal(20)))
        await redrawn(pilot)
        assert fleet_text(app) == "2 agents · $2.00 of $20.00 today"
        feed(app, p.FleetChanged(limit_usd=None))
        await redrawn(pilot)
        assert fleet_text(app) == "2 agents · $2.00 today"


@pytest.mark.slow
async def test_the_fleet_line_counts_what_deleted_agents_spent_today() -> None:
    """Deleting never refunds: the fleet's ceiling still counts an agent
    deleted today, so the line says the same figure, not the rows' sum."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        shown = snapshot(agent("a", "1.50"), agent("b", "0.50"), fleet_limit_usd=Decimal(50))
        feed(app, shown.model_copy(update={"fleet_spend_today_usd": Decimal(5)}))
        await redrawn(pilot)
        assert fleet_text(app) == "2 agents · $5.00 of $50.00 today"
        feed(app, p.AgentUpdated(agent=agent("b", "1.00")))
        await redrawn(pilot)
        assert fleet_text(app) == "2 agents · $5.50 of $50.00 today"
        feed(app, p.AgentRemoved(agent="a"))
        await redrawn(pilot)
        assert fleet_text(app) == "1 agent · $5.50 of $50.00 today"
        feed(app, shown)  # an older plane says no fleet figure: the rows' sum
        await redrawn(pilot)
        assert fleet_text(app) == "2 agents · $2.00 of $50.00 today"


@pytest.mark.slow
async def test_an_agent_made_again_under_a_name_deleted_today_is_counted_once() -> None:
    """A new agent given a deleted one's name starts with that name's spend
    today: the fleet line counts it in its row, not also as a deleted
    agent's, and says what `plane status` says."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        shown = snapshot(agent("a", "1.50"), agent("b", "0.50"))
        feed(app, shown.model_copy(update={"fleet_spend_today_usd": Decimal(2)}))
        await redrawn(pilot)
        feed(app, p.AgentRemoved(agent="a"))
        await redrawn(pilot)
        assert fleet_text(app) == "1 agent · $2.00 today"
        feed(app, p.AgentUpdated(agent=agent("a", "1.50")))
        await redrawn(pilot)
        assert fleet_text(app) == "2 agents · $2.00 today"
        feed(app, p.AgentUpdated(agent=agent("c", "0")))
        await redrawn(pilot)
        assert fleet_text(app) == "3 agents · $2.00 today"


@pytest.mark.slow
async def test_the_banner_says_since_when_the_planes_store_is_unreachable() -> None:
    """Several planes on one PostgreSQL: while the store is away the plane
    still answers, and the banner says since when its figures are stale;
    told it is back, the banner goes."""
    from datetime import UTC, datetime

    from tui.widgets.connection_banner import ConnectionBanner

    since = datetime(2025, 3, 14, 10, 4, 5, tzinfo=UTC)
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("a", "1.50"), store_unreachable_since=since))
        await redrawn(pilot)
        banner = app.main_screen.query_one(ConnectionBanner)
        assert banner.lost == (
            "The store is unreachable since 10:04:05 UTC: spend as last read; "
            "sends are refused until it is back."
        )
        feed(app, p.StoreChanged(unreachable_since=None))
        await redrawn(pilot)
        assert banner.lost is None
        feed(app, p.StoreChanged(unreachable_since=since))
        await redrawn(pilot)
        assert banner.lost is not None and "10:04:05 UTC" in banner.lost


async def test_a_deleted_agents_neighbour_takes_the_selection_not_the_first_row() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(*(agent(name) for name in ("ant", "bee", "cat", "dog"))))
        await settle(pilot)
        agents = app.main_screen.query_one(AgentList)
        agents.select("cat")
        await settle(pilot)
        feed(app, p.AgentRemoved(agent="cat"))
        await settle(pilot)
        assert app.main_screen.selected == "dog", "the one after it"
        feed(app, p.AgentRemoved(agent="dog"))
        await settle(pilot)
        assert app.main_screen.selected == "bee", "the last went: the one before it"


async def test_a_filter_that_leaves_no_row_says_so_and_how_to_move_on() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        agents = app.main_screen.query_one(AgentList)
        await pilot.press("ctrl+l", "f")  # working: nobody is
        await settle(pilot)
        assert drawn(agents) == "+ new agent no agent is working · f: next filter"
        await pilot.press("f")
        await settle(pilot)
        assert drawn(agents) == "+ new agent no agent is held · f: next filter"
        await pilot.press("slash", *"zz")
        await settle(pilot)
        assert drawn(agents) == "+ new agent no agent's name has 'zz' · Esc clears"


def drawn(agents: AgentList) -> str:
    """Every line the list draws, joined by single spaces."""
    return " ".join(" ".join(agents.render_line(y).text.split()) for y in range(6)).strip()


async def test_the_name_filter_is_built_on_its_first_slash_and_works_from_there() -> None:
    """The filter box costs the start nothing until `/` asks for it: then it
    opens above the rows with the focus, narrows as typed, and Esc clears it
    and gives the rows the focus back; a second `/` opens the same box."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("poet"), agent("scout"), agent("worker")))
        await pilot.pause()
        agents = app.main_screen.query_one(AgentList)
        assert not app.main_screen.query("#filter"), "no filter box before `/`"
        await pilot.press("ctrl+l", "/")
        await pilot.pause()
        box = app.main_screen.query_one("#filter")
        assert box.display and box.region.height == 3 and box.region.y < agents.region.y
        assert app.focused is box
        await pilot.press(*"wor")
        assert agents.names == ["worker"] and agents.border_title == "agents · /wor"
        await pilot.press("escape")
        assert len(agents.names) == 3 and not box.display and app.focused is agents
        await pilot.press("/")
        await pilot.pause()
        assert app.main_screen.query("#filter").nodes == [box] and app.focused is box


@pytest.mark.slow
async def test_held_rows_past_the_pinned_half_say_how_many_are_out_of_view() -> None:
    """Pinned rows take at most half the list, so the rest of the fleet keeps
    lines to scroll through: with 10 held agents at 80x24 some scroll with
    the rest, and while they are out of view the list's border counts them."""
    held = [agent(f"held-{n}", "0.20", "0.20", status="held") for n in range(10)]
    app = PlaneApp(None)
    async with app.run_test(size=(80, 24)) as pilot:
        feed(app, snapshot(*held, *(agent(f"agent-{n:02}") for n in range(40))))
        await redrawn(pilot)
        agents = app.main_screen.query_one(AgentList)
        assert agents.pinned < 10, "the cap this test is about"
        assert set(on_screen(app)) >= {f"held-{n}" for n in range(10)}
        assert not agents.border_subtitle, "at the top every held row shows"
        await pilot.press("ctrl+l", "end")
        await redrawn(pilot)
        out_of_view = 10 - len([name for name in on_screen(app) if name.startswith("held-")])
        assert out_of_view > 0
        assert agents.border_subtitle == f"+{out_of_view} more held"
        await pilot.press("home")
        await redrawn(pilot)
        assert not agents.border_subtitle
