"""What the operator does to an agent after it exists: pause and resume it,
edit it, rename it, delete it, cut its running turn, and look at it whole.

Every one is an operator action (a socket request, token-guarded); no tool
reaches any of them. Each checks everything first and changes nothing when
it refuses, in one sentence; each that changes something says so in the
agent's conversation, because a change nobody can see later is one nobody
can explain later.

- A **pause** keeps the ceiling (it is not `/limit 0`): the agent starts no
  turn, keeps what it receives, and answers what waited when resumed.
- **Deleting** keeps the agent's conversation and ledger rows, and its spend
  still counts for the day: deleting never refunds, and a new agent given the
  same name starts with that spend. Its model history is saved into its
  workspace, which is moved aside (`workspaces/.deleted/`), so the new one
  starts a fresh session in an empty directory. Agents from agents.yaml are
  the file's to delete.
- **Renaming** moves every row the name keys (conversation, ledger, ceiling,
  bookings, model history) in one transaction, and the workspace with it.
- A **gateway agent** comes only from agents.yaml, so it is never renamed or
  deleted here. That is what keeps its money whole: its client's calls in
  flight are no turn (`Ledger.flying` counts them), and one would close
  under the name it was opened with. A gateway agent made from the keyboard
  would need both refused while it has calls in flight, and the gateway's
  admission to find its name still in the roster under a lock they share.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Collection
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from sqlite3 import Connection
from typing import Literal

from plane.agents import notices
from plane.agents.crew import Crew
from plane.agents.roster import AgentSpec
from plane.agents.rows import Rows
from plane.agents.scheduler import Scheduler
from plane.agents.services import Services
from plane.agents.toolsets import SETS
from plane.config import MCP_TOOL, agent_name_refused
from plane.economy.autocompact import save
from plane.errors import AgentExists, InvalidRequest
from plane.money.limits import BadLimit, parse_limit_field
from plane.store.engine import Database
from plane.wire.protocol import (
    AgentRemoved,
    AgentRenamed,
    AgentState,
    CeilingSource,
    ShowAgentReply,
)
from plane.wire.words import file_agent_refusal

RENAMED_TABLES = (
    "calls",
    "messages",
    "context",
    "ceilings",
    "bookings",
    "notices",
    "asks",
    "spend",
    "holds_told",
    "raises",
    "guard_history",
)
"""Every table keyed by an agent's name in a column `agent`."""

AGENTS_TOLD = "cause <> 'day'"
"""The rows of `alerts_told` that name an agent (a `day` row names a day)."""

Tools = tuple[str, ...] | None | Literal["keep"]


class Lifecycle:
    def __init__(
        self,
        services: Services,
        crew: Crew,
        rows: Rows,
        scheduler: Scheduler,
        db: Database,
        cut_elsewhere: Callable[[str], Awaitable[bool | None]] | None = None,
    ) -> None:
        """`cut_elsewhere`: on a plane of a fleet, have the plane that runs an
        agent cut its turn (`plane.daemon.interrupts`): True cut and told,
        False none running, None no answer."""
        self._services = services
        self._cut_elsewhere = cut_elsewhere
        self._db = db
        self._crew = crew
        self._rows = rows
        self._scheduler = scheduler

    # ── pause, edit ────────────────────────────────────────────────────────

    async def pause(self, agent: str, paused: bool) -> AgentState:
        """Pause or resume `agent`, whichever plane runs it: the change is
        made as the store has the agent (another plane may have paused or
        held it), and its owner is told; it reads its settings again before
        each turn starts (`AgentWorker`). The line is this plane's alone."""
        if not paused and (await self._as_stored(agent)).loop is not None:
            return await self._resume_loop(agent)
        if paused:
            await self._as_stored(agent)
        spec = self._turning(agent, "pause" if paused else "resume")
        if spec.paused == paused:
            raise InvalidRequest(
                f"{agent} is already paused." if paused else await self._not_paused(agent)
            )
        worker = self._crew.workers[agent]
        worker.spec = await self._services.roster.change(agent, paused=paused)
        ceiling = self._services.gate.ceilings.of(agent)
        try:
            if paused:
                said = notices.paused_now(ceiling, worker.working)
            else:  # never "it answers" while its ceiling, say, still holds it
                said = notices.RESUMED if await worker.hold() is None else notices.RESUMED_HELD
            await self._services.add_message(agent, "plane", said)
        finally:
            self._crew.workers.wake(agent)  # here, and on the plane that runs it
        return await self._rows.publish(agent)

    async def _not_paused(self, agent: str) -> str:
        """Why `agent`, not paused, has nothing to resume; and when a hold
        of another kind keeps it quiet (its ceiling, its group's, a model
        with no price), what frees it, as its conversation says it."""
        hold = await self._crew.workers[agent].hold()
        if hold is None:
            return f"{agent} is not paused: there is nothing to resume."
        why = notices.why(hold, self._services.clock.now())
        return f"{agent} is not paused, so there is nothing to resume; {why}"

    async def _as_stored(self, agent: str) -> AgentSpec:
        """`agent` as the store has it: with several planes, the one that
        runs it may have held it (its loop guard) since this plane read it."""
        services = self._services
        if services.ownership.plane is None:
            return services.roster.get(agent)
        spec = self._crew.workers[agent].spec = await services.roster.reread(agent)
        return spec

    async def _resume_loop(self, agent: str) -> AgentState:
        """The operator lets an agent the loop guard held go on (a gateway
        agent's too; a pause is lifted with it): its guard starts afresh. The
        hold is lifted and the guard's history deleted in one transaction,
        whichever plane runs the agent; that plane, woken, sees the hold
        gone and starts its count afresh too (`AgentWorker`), and the line
        is this plane's alone (the fleet's other clients are told it)."""
        services = self._services
        worker = self._crew.workers[agent]
        worker.spec = await services.roster.change(
            agent, loop=None, paused=False, within=lambda conn: services.guards.resumed(conn, agent)
        )
        worker.guard.forget()
        gateway = worker.spec.gateway is not None
        try:
            await services.add_message(agent, "plane", notices.loop_resumed(gateway))
        finally:
            self._crew.workers.wake(agent)  # here, and on the plane that runs it
        return await self._rows.publish(agent)

    async def edit(
        self,
        agent: str,
        *,
        role: str | None = None,
        model: str | None = None,
        tools: list[str] | None = None,
        limit: str | None = None,
    ) -> AgentState:
        """Everything is checked before anything changes."""
        spec = self._turning(agent, "edit")
        if role is None and model is None and tools is None and limit is None:
            raise InvalidRequest("Nothing to change: give a role, a model, tools or a limit.")
        services = self._services
        if spec.gateway is not None and (role, model, tools) != (None, None, None):
            raise InvalidRequest(
                f"{agent} is a gateway agent: its client chooses the model, the tools and "
                "the prompt; only its limit is edited here."
            )
        if model is not None:
            services.roster.provider_for(model)  # raises why it cannot
        chosen = _tools(tools, services.config.mcp_servers_of(agent))
        ceiling: Decimal | Literal["keep"] | None = "keep"
        if limit is not None:
            try:
                ceiling = parse_limit_field(limit).usd
            except BadLimit as exc:
                raise InvalidRequest(str(exc)) from None
        worker = self._crew.workers[agent]
        worker.spec = await services.roster.change(agent, model=model, role=role, tools=chosen)
        if ceiling != "keep":
            await services.gate.ceilings.set(agent, ceiling)
            worker.hold_changed()
        worker.session.layers = None  # the next turn takes the prompt's sections anew
        await services.add_message(agent, "plane", notices.edited(model, role, chosen, ceiling))
        return await self._rows.publish(agent)

    # ── interrupt ──────────────────────────────────────────────────────────

    async def interrupt(self, agent: str) -> None:
        """Cut `agent`'s running turn, whichever plane of a fleet runs it;
        return once its conversation says what the turn cost."""
        self._services.roster.get(agent)
        worker = self._crew.workers[agent]
        if await worker.interrupt():
            return
        if worker.working:  # a scout turn another agent's ask_scout is waiting on
            raise InvalidRequest(
                f"{agent} is answering another agent's question; that turn is the asker's "
                "to wait for, and cannot be interrupted."
            )
        ownership = self._services.ownership
        owner = ownership.owners.get(agent)
        if self._cut_elsewhere is not None and owner is not None and not ownership.owns(agent):
            cut = await self._cut_elsewhere(agent)
            if cut:
                return
            if cut is None:
                raise InvalidRequest(
                    f"{agent} runs on plane {owner}, which did not answer: its turn was not "
                    "interrupted. Try again in a moment."
                )
        raise InvalidRequest(f"{agent} is not taking a turn: there is nothing to interrupt.")

    # ── rename ─────────────────────────────────────────────────────────────

    async def rename(self, agent: str, new: str) -> AgentState:
        services = self._services
        spec = self._made_here(agent, "rename")
        if (refusal := agent_name_refused(new)) is not None:
            raise InvalidRequest(refusal)
        if new == agent:
            raise InvalidRequest(f"{agent} is already called {new}.")
        if new in services.roster.names():
            raise AgentExists(f"An agent named {new!r} already exists.")
        if await services.conversation.history(new, 1):
            raise InvalidRequest(
                f"A deleted agent named {new!r} left its conversation and ledger rows; "
                "choose another name."
            )
        worker = self._crew.workers[agent]
        async with worker.turn_lock:  # no turn starts while its rows move
            if worker.working:
                raise InvalidRequest(
                    f"{agent} is taking a turn; interrupt it or wait, then rename."
                )
            workspace, moved = spec.workspace, False
            if workspace == services.home.workspace(agent):
                workspace = services.home.workspace(new)
                if workspace.exists():
                    raise InvalidRequest(f"{workspace} exists already; move it, then rename.")
                # Made by its first turn: an agent that took none has none to move.
                moved = spec.workspace.exists()
                if moved:
                    await asyncio.to_thread(os.rename, spec.workspace, workspace)
            try:
                await self._db.write(
                    lambda conn: _move_rows(conn, services, agent, new),
                    then=lambda _: self._renamed(agent, new),
                )
            except BaseException:
                if moved:
                    await asyncio.to_thread(os.rename, workspace, spec.workspace)
                raise
            renamed = replace(spec, name=new, workspace=workspace)
            services.roster.renamed(agent, renamed)
            self._crew.renamed(agent, renamed)
        await services.add_message(new, "plane", notices.renamed(agent))
        state = await self._rows.state(new)
        services.emit(AgentRenamed(old=agent, agent=state))
        return state

    def _renamed(self, old: str, new: str) -> None:
        """In memory, in the commit's own moment: nothing reads in between."""
        services = self._services
        for name in (old, new):
            self._scheduler.forget(name)
            services.transcript.forget(name)
        services.ledger.renamed(old, new)
        services.conversation.renamed(old, new)
        services.gate.ceilings.renamed(old, new)
        services.burn.renamed(old, new)

    # ── delete ─────────────────────────────────────────────────────────────

    def _deleted(self, agent: str) -> None:
        """In memory, in the commit's own moment, as `_renamed`."""
        services = self._services
        services.gate.ceilings.forget(agent)
        services.burn.forget(agent)
        services.conversation.closed(agent)
        services.transcript.forget(agent)
        self._scheduler.forget(agent)

    async def delete(self, agent: str) -> None:
        services = self._services
        spec = self._made_here(agent, "delete")
        worker = self._crew.workers[agent]
        await worker.interrupt()  # its running turn, cut and counted first
        # How its row prices its spend, read while it has one (`$?` unpriced).
        priced = self._rows.priced(agent, await services.ledger.spend_today(agent))
        services.roster.forget(agent)  # first: a request for it is now "no such agent"
        await self._crew.remove(agent)
        history = await services.transcript.load(agent)
        if history:
            await asyncio.to_thread(save, history, spec.workspace, services.clock.now())
        spent = await services.ledger.spend_today(agent)
        notice = notices.deleted(spent, priced)
        await self._db.write(
            lambda conn: _delete_rows(conn, services, agent, notice),
            then=lambda _: self._deleted(agent),
        )
        if spec.workspace == services.home.workspace(agent) and spec.workspace.exists():
            await asyncio.to_thread(_aside, spec.workspace, services.clock.now().timestamp())
        services.emit(AgentRemoved(agent=agent))

    # ── show ───────────────────────────────────────────────────────────────

    async def show(self, agent: str, ident: int) -> ShowAgentReply:
        services = self._services
        spec = services.roster.get(agent)
        ceilings = services.gate.ceilings
        said = ceilings.source(agent)
        source: CeilingSource
        if said == "file":
            block = services.config.agents.get(agent)
            source = (
                "agents.yaml" if block is not None and block.limit_usd is not None else "defaults"
            )
        else:
            source = said
        bookings = [
            f"{b.due:%Y-%m-%d %H:%M} UTC: {b.note}" for b in await self._scheduler.open(agent)
        ]
        saved = spec.workspace / ".transcripts"
        sessions = len(list(saved.glob("transcript_*.jsonl"))) if saved.is_dir() else 0
        return ShowAgentReply(
            id=ident,
            agent=await self._rows.state(agent),
            ceiling_from=source,
            made="agents.yaml" if services.roster.from_file(agent) else "run time",
            workspace=str(spec.workspace),
            bookings=bookings,
            sessions=sessions,
            session_messages=len(await services.transcript.load(agent)),
            group=None if (group := ceilings.groups.budget(agent)) is None else group.name,
        )

    # ── checks ─────────────────────────────────────────────────────────────

    def _turning(self, agent: str, what: str) -> AgentSpec:
        spec = self._services.roster.get(agent)
        # A gateway agent paused all the same (a loop guard's hold the store
        # could not read keeps it so) is resumed as any other.
        if spec.gateway is not None and (what == "pause" or (what == "resume" and not spec.paused)):
            raise InvalidRequest(
                f"{agent} is a gateway agent: its client makes its calls, so there is no turn "
                f"to {what}; /limit 0 refuses its calls."
            )
        return spec

    def _made_here(self, agent: str, what: str) -> AgentSpec:
        spec = self._services.roster.get(agent)
        if self._services.roster.from_file(agent):
            raise InvalidRequest(file_agent_refusal(agent, what))
        return spec


def _tools(tools: list[str] | None, servers: Collection[str]) -> Tools:
    """`None`: unchanged; a set's word alone (`all`, `read-only`, `none`,
    the words `plane new` and the new-agent form take): that set; `[]`:
    none; else tool names: the plane's own, and `server.tool` or `server.*`
    of one of the agent's MCP `servers` (as agents.yaml takes them)."""
    if tools is None:
        return "keep"
    from plane.tools.registry import TOOLS  # the one list of tools

    names = [t.strip() for t in tools if t.strip()]
    for word, allowed in SETS.items():
        if names == [word]:
            return allowed
    alone = [n for n in names if n in SETS]
    if alone:  # beside other names: which was meant is not known
        raise InvalidRequest(f"{alone[0]!r} stands alone: give it by itself, or only tool names.")
    for name in names:
        if name in TOOLS:
            continue
        mcp = MCP_TOOL.match(name)
        if mcp is None:
            raise InvalidRequest(
                f"{name!r} is not a tool; the tools are {', '.join(TOOLS)} "
                "(or all, read-only, or none; an MCP server's as server.tool or server.*)."
            )
        if mcp["server"] not in servers:
            have = f"its servers are {', '.join(servers)}" if servers else "it has no MCP servers"
            raise InvalidRequest(f"{name!r} names the MCP server {mcp['server']!r}; {have}.")
    mcp_tools = [n for n in dict.fromkeys(names) if n not in TOOLS]
    return (*(n for n in TOOLS if n in names), *mcp_tools)


def _move_rows(conn: Connection, services: Services, old: str, new: str) -> None:
    for table in RENAMED_TABLES:
        conn.execute(f"UPDATE {table} SET agent = ? WHERE agent = ?", (new, old))
    conn.execute("UPDATE agents SET name = ? WHERE name = ?", (new, old))
    conn.execute("UPDATE agent_settings SET name = ? WHERE name = ?", (new, old))
    # What the alerts told of it (a fleet's hold): its resume is told under its new name.
    conn.execute(f"UPDATE alerts_told SET agent = ? WHERE agent = ? AND {AGENTS_TOLD}", (new, old))
    services.guards.moved(old, new)  # its loop guard's history, kept under the new name


def _delete_rows(conn: Connection, services: Services, agent: str, notice: str) -> None:
    """The agent goes; what it said and spent stays. Its waiting messages and
    bookings are closed (nobody is left to answer them) and its model history
    (saved to its workspace first) and ceiling go, so an agent made later with
    its name starts a new session on the defaults, with the day's spend."""
    conn.execute("DELETE FROM agents WHERE name = ?", (agent,))
    conn.execute("DELETE FROM agent_settings WHERE name = ?", (agent,))
    for table in ("ceilings", "asks", "raises", "context", "holds_told", "guard_history"):
        conn.execute(f"DELETE FROM {table} WHERE agent = ?", (agent,))
    conn.execute(f"DELETE FROM alerts_told WHERE agent = ? AND {AGENTS_TOLD}", (agent,))
    services.guards.dropped(agent)  # and what its loop guard had not written yet
    conn.execute("UPDATE messages SET waiting = 0 WHERE agent = ? AND waiting = 1", (agent,))
    conn.execute("UPDATE bookings SET done = 1 WHERE agent = ? AND done = 0", (agent,))
    services.conversation.append_within(conn, agent, "plane", notice)


def _aside(workspace: Path, stamp: float) -> None:
    """Out of the way of an agent made later with the name, kept."""
    aside = workspace.parent / ".deleted" / f"{workspace.name}-{int(stamp)}"
    aside.parent.mkdir(mode=0o700, exist_ok=True)  # in the home's private `workspaces/`
    with contextlib.suppress(FileNotFoundError):
        os.rename(workspace, aside)
