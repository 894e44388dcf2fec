"""Which plane of a fleet tells a fold's alert (plane/daemon/alert_folds.py),
or the alert of an agent no plane runs: the one whose claim in the store
takes it.

Each plane of a fleet shows every agent's row, so each folds a fleet's or a
group's hold alike and would push it: with three planes, three pushes for
one `/limit fleet 0`. Each agent a fold told held is a row of `alerts_told`
(its cause, the day it was told, the plane that told it): the plane whose
insert makes the row tells the agent held, the plane whose delete takes it
away tells it resumed, and a plane whose insert or delete finds the work
done tells nothing. Each is one statement, so whichever plane comes first,
and whichever order the planes saw the rows in, each agent is told once.
The day turning is a row too (`day`, the day), inserted once. An agent
that leaves a fold for a hold of its own (its ceiling, reached first) is
deleted as well, told nothing: the cause's next hold of it is told anew.
The day a row names is the plane's (plane/money/plane_day.py), never its
clock's date: a clock a moment off around 00:00 UTC splits or merges no
day's claims.

A hold told on one day and not freed by the day turning (a pause, a
ceiling of zero) stays told; the agents the day freed are forgotten, their
rows of the days before deleted, so a hold on the new day is told anew.
With no plane running at 00:00 UTC none deletes them: a hold's row of a day
before is taken over by the insert of the new day's, told anew too.

An agent no plane runs (a gateway agent: its client calls through any
plane) has its own alerts claimed so too, each a row of its own
(`agent held`, `agent amber`): the plane whose insert makes the row tells
it held (or amber), the plane whose delete takes it away tells it resumed
(or back under its amber line, told to no one). Its next hold, the same
day or not, is a new row, told once again. A fold's hold of it is the
fold's row, not its own: leaving the fold still held by a hold of its own
(its ceiling, a pause) makes its `agent held` row then, told once. A row
of a day before is taken over by an insert (its delete was missed: a
plane stopped): a new day's event is never kept untold by an old one.

The claim is of the row as each plane sees it change, not of one event
each plane names alike: a plane that shows an agent's hold only after
another plane has shown the hold and the resume both (seconds behind)
finds the row gone and tells the hold again. A fold's delete ends only the
hold the plane claimed: each claim's row is stamped with the hold it is
(`hold`, new at each insert), which the plane that inserted it remembers,
and a plane that found it inserted reads; the delete names it. So a plane
that sees a hold end late, after another plane has claimed the agent's
next hold by the same cause (that day or a later one), deletes nothing,
where it took that row (the next hold's resume went untold, or was told
twice). A plane that missed a hold cannot name it: one held when it
started (or claimed before holds were stamped) ends it whichever it is,
as a plane a whole hold behind (it claims the hold after another has
claimed the next, and finds that one) ends the next; and a hold whose end
no plane saw is decided by its row's day, as above: the next day's claim
takes it over.

The trade: the claim commits before the alert is sent. A plane that dies
between the two loses the alert as a plane alone loses what its queue held
when it stopped; a claim the store cannot take (it is away) is not waited
for, the alert is sent anyway, maybe by another plane too: an alert twice
is better than none (`Folds._claimed`, `Notifier._claim`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from sqlite3 import Connection

from plane.daemon.alert_folds import Cause, Told
from plane.store.engine import Database

TOLD = (
    "INSERT INTO alerts_told (cause, agent, day, plane, hold)"
    " SELECT ?1, told.agent, ?2, ?3, ?5 FROM unnest(?4::text[]) AS told (agent)"
    " ON CONFLICT (cause, agent) DO UPDATE"
    " SET day = excluded.day, plane = excluded.plane, hold = excluded.hold"
    " WHERE alerts_told.day < excluded.day RETURNING agent"
)
"""Those of `?4` no plane told `?1` holds yet, told now by `?3` on day `?2`,
their hold stamped `?5` (a row of a day before: its end was missed, told
anew). The row of each other one is locked until the claim commits."""
HOLDS = "SELECT agent, hold FROM alerts_told WHERE cause = ? AND agent = ANY(?)"
"""Which hold the rows of some agents by a cause are: after `TOLD`, the
stamps another plane wrote of the holds it found claimed."""
FREED = "DELETE FROM alerts_told WHERE cause = ? AND agent = ANY(?) AND hold = ? RETURNING agent"
"""Those of some agents told held by a cause, in the hold stamped so, no
plane told freed yet: a hold claimed since is not theirs to end."""
FREED_ANY = "DELETE FROM alerts_told WHERE cause = ? AND agent = ANY(?) RETURNING agent"
"""The same, of holds the plane cannot name (standing when it first
showed them, or told before holds were stamped): whichever hold it is."""
FORGOTTEN = "DELETE FROM alerts_told WHERE agent = ANY(?) AND day < ?"
"""The holds told on the days before of the agents a day turning freed."""
DAY = (
    "INSERT INTO alerts_told (cause, agent, day, plane) VALUES ('day', ?1, ?1, ?2)"
    " ON CONFLICT (cause, agent) DO NOTHING RETURNING agent"
)
AGENT_TOLD = (
    "INSERT INTO alerts_told (cause, agent, day, plane, hold) VALUES (?1, ?2, ?3, ?4, ?5)"
    " ON CONFLICT (cause, agent) DO UPDATE"
    " SET day = excluded.day, plane = excluded.plane, hold = excluded.hold"
    " WHERE alerts_told.day < excluded.day RETURNING agent"
)
"""An agent's event `?1` on day `?3`, stamped `?5`, told now by `?4`
unless another plane told it (a row of a day before: its end was missed,
told anew). Another plane's row is locked until the claim commits."""
AGENT_HOLD = "SELECT hold FROM alerts_told WHERE cause = ? AND agent = ?"
"""The stamp of an agent's event, after `AGENT_TOLD` found it told."""
AGENT_FREED = "DELETE FROM alerts_told WHERE cause = ? AND agent = ? AND hold = ? RETURNING agent"
"""An agent's event, the one stamped so, over (resumed, back under its
amber line), unless another plane said so already: one claimed since is
not its to end."""
AGENT_FREED_ANY = "DELETE FROM alerts_told WHERE cause = ? AND agent = ? RETURNING agent"
"""The same, of an event the plane cannot name: whichever it is."""
OLD_DAYS = "DELETE FROM alerts_told WHERE cause = 'day' AND day < ?"
"""The turnings of the days before: done with."""


def cause_key(cause: Cause) -> str:
    """`fleet`, `group research`, `fleet unpriced other-model`: a cause as
    its rows name it."""
    key = cause.scope if not cause.name else f"{cause.scope} {cause.name}"
    return key if not cause.model else f"{key} unpriced {cause.model}"


def agent_key(what: str) -> str:
    """`agent held`, `agent amber`: an agent's own event as its row names it."""
    return f"agent {what}"


def _ended(conn: Connection, key: str, agents: list[str], hold: str | None) -> list[str]:
    """Those of `agents` whose hold by `key` stamped `hold` (None: whichever
    it is) this delete ends: no plane ended it yet."""
    if hold is None:
        return [a for (a,) in conn.execute(FREED_ANY, (key, agents))]
    return [a for (a,) in conn.execute(FREED, (key, agents, hold))]


class StoreClaims:
    """`alert_folds.Claims`, in the store the planes share, as plane `plane`."""

    def __init__(self, db: Database, plane: str) -> None:
        self._db = db
        self._plane = plane

    async def told(
        self,
        cause: Cause,
        held: list[str],
        hold: str,
        freed: Mapping[str, str | None],
        day: date,
        left: Mapping[str, str | None],
    ) -> Told:
        key, plane = cause_key(cause), self._plane
        by_hold: dict[str | None, list[str]] = {}
        for agent, stamp in [*freed.items(), *left.items()]:
            by_hold.setdefault(stamp, []).append(agent)

        def claim(conn: Connection) -> Told:
            newly, holds = [], {}
            if held:
                told = conn.execute(TOLD, (key, day.isoformat(), plane, held, hold))
                newly = [a for (a,) in told]
                holds = {a: found for a, found in conn.execute(HOLDS, (key, held))}
            gone = [a for stamp, ended in by_hold.items() for a in _ended(conn, key, ended, stamp)]
            return Told(sorted(newly), sorted(a for a in gone if a in freed), holds)

        return await self._db.write(claim)

    async def day_turned(self, freed: list[str], day: date) -> bool:
        when, plane = day.isoformat(), self._plane

        def claim(conn: Connection) -> bool:
            conn.execute(FORGOTTEN, (freed, when))
            conn.execute(OLD_DAYS, (when,))
            return conn.execute(DAY, (when, plane)).fetchone() is not None

        return await self._db.write(claim)

    async def agent_told(
        self, agent: str, what: str, day: date, hold: str
    ) -> tuple[bool, str | None]:
        key, when, plane = agent_key(what), day.isoformat(), self._plane

        def claim(conn: Connection) -> tuple[bool, str | None]:
            if conn.execute(AGENT_TOLD, (key, agent, when, plane, hold)).fetchone() is not None:
                return True, hold
            found = conn.execute(AGENT_HOLD, (key, agent)).fetchone()
            return False, None if found is None else found[0]

        return await self._db.write(claim)

    async def agent_freed(self, agent: str, what: str, hold: str | None) -> bool:
        key = agent_key(what)

        def claim(conn: Connection) -> bool:
            if hold is None:
                return conn.execute(AGENT_FREED_ANY, (key, agent)).fetchone() is not None
            return conn.execute(AGENT_FREED, (key, agent, hold)).fetchone() is not None

        return await self._db.write(claim)
