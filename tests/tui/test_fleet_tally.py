"""The fleet line kept as rows change (`tui.fleet.Tally`) says what a
fresh count over every row says (`tui.fleet.fleet`), after any sequence
of updates, deletions and renames: the line at 100,000 agents is no longer
counted afresh, so it must never drift from the count."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from plane.wire.protocol import AgentState
from plane.wire.words import spend_total
from tests.support.fixtures_examples import examples
from tests.tui.factories import agent
from tui.fleet import Fleet, Tally
from tui.formatting import spend_level

NAMES = st.sampled_from(["demo", "scout", "poet", "a", "b"])
SPENDS = st.sampled_from(["0", "0.0057", "0.0125", "0.004", "0.02", "1.234", "2", "4.999", "5"])
LIMITS = st.sampled_from([None, "0.01", "0.02", "5"])
STATUSES = st.sampled_from(["idle", "working", "held", "paused"])
ROWS = st.builds(
    lambda name, spend, limit, status: agent(name, spend, limit, status=status),
    NAMES,
    SPENDS,
    LIMITS,
    STATUSES,
)
CHANGES = st.lists(
    st.one_of(
        st.tuples(st.just("put"), ROWS),
        st.tuples(st.just("drop"), NAMES),
        st.tuples(st.just("rename"), NAMES, NAMES),
    ),
    max_size=40,
)


def counted_afresh(
    agents: Iterable[AgentState], ceiling: Decimal | None = None, unlisted: Decimal = Decimal(0)
) -> Fleet:
    """The fleet line counted afresh over every row, the plain way: what a
    kept tally must always say."""
    rows = list(agents)
    return Fleet(
        agents=len(rows),
        working=sum(a.status == "working" for a in rows),
        amber=sum(spend_level(a) == "warn" for a in rows),
        held=sum(a.status == "held" for a in rows),
        paused=sum(a.status == "paused" for a in rows),
        spent=sum((a.spend_today_usd for a in rows), unlisted),
        ceiling=ceiling,
        spent_shown=spend_total(((a.spend_today_usd, a.limit_usd) for a in rows), unlisted),
    )


@settings(max_examples=examples(300), deadline=None)
@given(start=st.lists(ROWS, max_size=5), changes=CHANGES, unlisted=SPENDS, ceiling=LIMITS)
def test_a_kept_tally_says_what_a_fresh_count_says(start, changes, unlisted, ceiling) -> None:
    rows: dict[str, AgentState] = {row.name: row for row in start}
    tally = Tally()
    tally.reset(rows.values())
    for change in changes:
        if change[0] == "put":
            row = change[1]
            rows[row.name] = row
            tally.put(row)
        elif change[0] == "drop":
            rows.pop(change[1], None)
            tally.drop(change[1])
        elif change[1] in rows and change[2] not in rows:
            renamed = rows.pop(change[1]).model_copy(update={"name": change[2]})
            rows[renamed.name] = renamed
            tally.drop(change[1])
            tally.put(renamed)
    limit = Decimal(ceiling) if ceiling is not None else None
    kept = tally.fleet(limit, Decimal(unlisted))
    counted = counted_afresh(rows.values(), limit, Decimal(unlisted))
    assert kept == counted
    assert kept.text() == counted.text()


def test_one_agent_spending_alone_is_the_line_s_figure_until_another_spends() -> None:
    tally = Tally()
    tally.reset([agent("demo", "0.0057", "0.01"), agent("scout")])
    assert tally.fleet().text() == "2 agents · $0.005 today"
    tally.put(agent("scout", "0.02"))
    assert tally.fleet().text() == "2 agents · $0.026 today"
    tally.drop("scout")
    assert tally.fleet().text() == "1 agent · $0.005 today", "scout's spend went with its row"
