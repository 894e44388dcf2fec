"""Every sentence an agent's conversation is told by the plane, and the
refusal of a message it will never be told. The words only: the gate,
the worker, the turn, the fit and the crew decide *when* each is said.

Money decides and never speaks: the gate answers with a `Hold` in figures
(`plane.money.gate`), and `why` words it here, so the notices that say why
an agent is quiet, what a turn cost and what went wrong read as one voice.
`plane.wire.words.notice_kind` tells the loudest of them apart by their
opening words; tests/plane/agents/test_notice_kinds.py holds every one to it.

Each figure of spend stands beside its ceiling with the digits it takes to
tell the two apart (`spend_against`): below a dollar, `$0.02 over its
$0.02 ceiling` would read as a contradiction.

Two kinds of sentence are not here, and say why where they are: a slash
command's reply (`plane.money.limits` for /limit: the command's answer,
character for character as the spec gives it, beside its parser), and a
tool's refusal (`plane.tools.sandbox`: the tools sit below the agents, and
the refusal is the tool's result, which the model reads).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Literal

from plane.agents.guard import Loop, Looping
from plane.agents.roster import AgentSpec
from plane.agents.session import Saved
from plane.agents.toolsets import described
from plane.clock import until
from plane.money.budgets import Full
from plane.money.gate import AboveAgent, AtCeiling, Hold, Paused, TooDear, Unpriced
from plane.money.ledger import Interrupted
from plane.money.limits import ALL_PRICED, Priced
from plane.wire.words import (
    UNPRICED,
    apart,
    more_than,
    pace,
    spend_against,
    tokens,
    turn_cost,
    usd,
    usd_exact,
)

# ── why an agent is quiet ──────────────────────────────────────────────────


def why(hold: Hold, now: datetime) -> str:
    """What the conversation is told of `hold`, worded at `now`."""
    match hold:
        case Paused():
            return paused_by_operator(hold.agent)
        case Looping():
            return looping(hold.agent, hold.loop)
        case Unpriced():
            return unpriced_held(hold.agent, hold.model, hold.scope, hold.name)
        case AtCeiling():
            priced = Priced(floor_priced=hold.floor_priced)
            resets_in = until(now, hold.resets_at)
            notice = held(hold.agent, hold.ceiling, hold.spent, resets_in, priced)
            return notice if hold.behind is None else f"{notice} {clock_behind(*hold.behind)}"
        case AboveAgent():
            return above_agent(hold.agent, hold.full, until(now, hold.resets_at))
        case TooDear():
            resets_in = until(now, hold.resets_at)
            whose = whose_ceiling(hold.scope, hold.name)
            return too_dear(hold.agent, hold.likely, hold.left, hold.ceiling, resets_in, whose)
    raise TypeError(f"a hold with no words: {hold!r}")


def ceiling_reached(
    agent: str, ceiling: Decimal, spent: Decimal, resets_in: str, priced: Priced = ALL_PRICED
) -> str:
    """The agent's spend reached its ceiling; the spend as its row says it
    (`$1.05+$?` when part of it is a floor or has no price)."""
    return (
        f"{agent} has reached its {usd_exact(ceiling)} daily ceiling "
        f"({priced.spend(spent, ceiling)} spent) and starts no new turn until 00:00 UTC, in "
        f"{resets_in}, or until the limit is raised."
    )


def held(
    agent: str, ceiling: Decimal, spent: Decimal, resets_in: str, priced: Priced = ALL_PRICED
) -> str:
    """Why an agent at or over its ceiling is not answering, and when it
    will; the spend as its row says it (`$1.05+$?`: a floor, the rest unpriced)."""
    if ceiling == 0:
        return paused(agent)
    where = "at" if spent == ceiling else "over"
    return (
        f"{agent} has spent {priced.spend(spent, ceiling)} today, {where} its "
        f"{usd_exact(ceiling)} daily ceiling; it answers at 00:00 UTC, in {resets_in}, "
        "or when the limit is raised."
    )


def looping(agent: str, loop: Loop) -> str:
    """Why an agent the loop guard holds is quiet: what repeated, how many
    times and what it cost, and what lets it go on (the day's end does not)."""
    times = loop.times
    match loop.kind:
        case "tool":
            said = f"it called {loop.what[0]} {times} times in a row with the same result"
        case "round":
            calls = "; ".join(loop.what)
            said = (
                f"it made the same {len(loop.what)} calls ({calls}) {times} times over "
                "with the same results"
            )
        case "answer":
            said = (
                f"it gave the same answer {times} times in a row with nothing new between "
                f"(“{loop.what[0]}”)"
            )
        case "request":
            said = f"its client sent the same request {times} times in a row"
        case _:
            said = (
                f"its last {times} calls brought nothing new (no new tool result, answer, "
                "message or file change)"
            )
    cost = f"; those calls cost {turn_cost(loop.cost)}" if loop.cost else ""
    return (
        f"{agent} is held: {said}{cost} since {loop.since:%H:%M} UTC. It stays held until "
        f"the operator resumes it (p in the TUI, `plane resume {agent}`), which lets it go on."
    )


def loop_resumed(gateway: bool) -> str:
    """The operator let an agent the loop guard held go on."""
    then = "its client's calls go through again" if gateway else "it answers what waited"
    return (
        "Resumed by the operator: the loop guard's hold is lifted and its count starts "
        f"afresh; {then}."
    )


def stepped_down(
    agent: str,
    model: str,
    spent: Decimal,
    ceiling: Decimal,
    at: float,
    priced: Priced = ALL_PRICED,
) -> str:
    """An agent switched to its cheaper fallback model near its ceiling (once
    a day); the spend as its row says it (`$0.85+$?` past a floor)."""
    return (
        f"{agent} switched to {model} at {priced.spend(spent, ceiling)} of "
        f"{usd_exact(ceiling)} today (fallback at {at:.0%}); it goes back at 00:00 UTC."
    )


def back_on(
    agent: str,
    model: str,
    spent: Decimal,
    ceiling: Decimal | None,
    at: float,
    priced: Priced = ALL_PRICED,
) -> str:
    """An agent on its fallback went back to its own model before the day
    ended: its ceiling was raised (or removed) above its fallback's ratio.
    Said once per switch back, as `stepped_down` is once per switch down."""
    if ceiling is None:
        return f"{agent} is back on {model}: it has no daily ceiling now."
    return (
        f"{agent} is back on {model}: {priced.spend(spent, ceiling)} of "
        f"{usd_exact(ceiling)} today is under its fallback's {at:.0%}."
    )


def clock_behind(clock_day: date, day: date) -> str:
    """Said after a hold while the clock reads a day before the plane's."""
    return (
        f"The clock moved back to {clock_day}, before {day}, a day already "
        f"counted: spend counts against {day} until the clock passes it."
    )


def above_agent(agent: str, full: Full, resets_in: str) -> str:
    """Why a call was refused at admission, or an agent is held, by a ceiling
    above its own (the fleet's, its group's, its tag's): what was spent under
    it (`full.spent`, calls in flight left out: they hold no one). A ceiling
    of zero is a pause (`paused_above`)."""
    if full.ceiling == 0:
        return paused_above(agent, full)
    figure = spend_against(full.spent, full.ceiling)
    ceiling = usd_exact(full.ceiling)
    if full.scope == "fleet":
        where = "at" if full.spent == full.ceiling else "over"
        return (
            f"{agent} is not answering: the fleet has spent {figure} today, {where} its "
            f"{ceiling} daily ceiling; it answers at 00:00 UTC, in {resets_in}, or when the "
            "fleet limit is raised."
        )
    if full.scope == "group":
        return (
            f"{agent} is held: {full.whose(full.name)} has spent {figure} of {ceiling} today; "
            f"it answers at 00:00 UTC, in {resets_in}, or when the group limit is raised."
        )
    return (
        f"{agent} is not answering this call: calls tagged {full.name} have spent {figure} "
        f"of {ceiling} today; calls with the tag go again at 00:00 UTC, in {resets_in}, or "
        "when its ceiling (tags: in agents.yaml) is raised."
    )


def paused_above(agent: str, full: Full) -> str:
    """Why a call or a turn waits on a ceiling of zero above the agent's (the
    fleet's, its group's, its tag's): a pause, which a new day does not end,
    only the limit raised or removed."""
    if full.scope == "fleet":
        return (
            f"{agent} is paused: the fleet's daily ceiling is $0.00, so no agent takes a turn "
            "until the fleet limit is raised (/limit fleet 5, or /limit fleet off); a new day "
            "does not end a pause."
        )
    if full.scope == "group":
        return (
            f"{agent} is paused: {full.whose(full.name)}'s daily ceiling is $0.00, so none of "
            f"the group's agents takes a turn until the group limit is raised (/limit group "
            f"{full.name} 5, or /limit group {full.name} off); a new day does not end a pause."
        )
    return (
        f"{agent} is not answering this call: calls tagged {full.name} have a daily ceiling "
        "of $0.00, a pause, so none goes until that ceiling is raised or removed (tags: in "
        "agents.yaml); a new day does not end it. Its calls without the tag go on."
    )


def unpriced_held(
    agent: str, model: str, scope: str = "agent", group: str = "", *, off: str = "/limit off"
) -> str:
    """Why an agent under a ceiling (its own, its group's or the fleet's)
    takes no turn on a model with no price. `off`: how its own limit is
    removed where the sentence is read (the conversation's `/limit off`;
    the command line's `plane edit NAME --limit off`)."""
    if scope == "fleet":
        return (
            f"{agent} is not answering: no price is known for {model}, and the fleet "
            "is under a ceiling, which counts every turn. Add the model under "
            "`pricing:` in agents.yaml, or remove the fleet limit with /limit fleet off."
        )
    if scope == "group":
        return (
            f"{agent} is not answering: no price is known for {model}, and its group "
            f"{group} is under a ceiling, which counts every turn. Add the model "
            "under `pricing:` in agents.yaml, or remove the group limit with "
            f"/limit group {group} off."
        )
    return (
        f"{agent} is not answering: no price is known for {model}, and an agent "
        "under a ceiling takes no turn it cannot count. Add the model under "
        f"`pricing:` in agents.yaml, or remove the limit with {off}."
    )


@dataclass(frozen=True)
class Whose:
    """Whose ceiling a gateway call is weighed against: the agent's own, its
    group's or its tag's, as the sentences name it."""

    ceiling: str = "its"
    """`its`, `its group research's`, `the tag ticket-123's`."""
    raised: str = "the limit"
    """What raising it is called: `the limit`, `the group limit`, …"""
    calls: str = "calls"
    """Whose calls in flight: the agent's (`calls`), or the group's or tag's."""


ITS = Whose()


def whose_ceiling(scope: str, name: str = "") -> Whose:
    """`scope` (`agent`, `group`, `tag`, `fleet`) as the sentences name it."""
    if scope == "fleet":
        return Whose("the fleet's", "the fleet limit", "fleet's calls")
    if scope == "group":
        return Whose(f"its group {name}'s", "the group limit", f"group {name}'s calls")
    if scope == "tag":
        return Whose(f"the tag {name}'s", "that ceiling", f"calls tagged {name}")
    return ITS


def too_dear(
    agent: str,
    likely: Decimal,
    left: Decimal,
    ceiling: Decimal,
    resets_in: str,
    whose: Whose = ITS,
) -> str:
    """Why a call is refused before it is sent: its own likely cost does not
    fit in what is left today, whatever the calls in flight do. The two
    figures say which is larger, however small they are."""
    cost, rest = apart(likely, left)
    return (
        f"{agent} is not answering this call: it would cost about {cost}, and "
        f"{rest} is left of {whose.ceiling} {usd_exact(ceiling)} daily ceiling today; it "
        f"answers calls that fit at 00:00 UTC, in {resets_in}, or when {whose.raised} is raised."
    )


def in_flight(
    agent: str,
    flying: Decimal,
    likely: Decimal,
    left: Decimal,
    ceiling: Decimal,
    retry_s: int,
    whose: Whose = ITS,
) -> str:
    """Why a call that would fit alone waits: the calls in flight may fill the
    day. The three figures add up as the sentence says (`more_than`)."""
    said = f"{agent}'s calls" if whose is ITS else f"the {whose.calls}"
    (others, this), rest = more_than((flying, likely), left)
    return (
        f"{said} in flight (about {others}) and this one (about {this}) "
        f"would take more than the {rest} left of {whose.ceiling} {usd_exact(ceiling)} "
        f"daily ceiling today; it waits for them to settle: retry in {retry_s} seconds."
    )


def may_overshoot(
    agent: str, left: Decimal, ceiling: Decimal, retry_s: int, whose: Whose = ITS
) -> str:
    """Why a call waits while the calls in flight, if each cost all it may,
    would take the day more than one call past the ceiling."""
    said = f"{agent}'s calls" if whose is ITS else f"the {whose.calls}"
    return (
        f"{said} in flight, if they cost all they may, would take it more than one "
        f"call past {whose.ceiling} {usd_exact(ceiling)} daily ceiling ({usd(left)} is left "
        f"today); this call waits for them to settle: retry in {retry_s} seconds."
    )


def paused(agent: str) -> str:
    """A ceiling of zero is a pause: the day turning over does not end it."""
    return (
        f"{agent} is paused: its daily ceiling is $0.00, so it takes no turn until the "
        "limit is raised (/limit 5, or /limit off); a new day does not end a pause."
    )


def paused_by_operator(agent: str) -> str:
    """Why a paused agent is quiet (the operator's pause, not a zero ceiling)."""
    return (
        f"{agent} is paused: it takes no turn until it is resumed (p in the TUI, "
        f"`plane resume {agent}`), and answers then what waited. Its ceiling is kept."
    )


def warning(agent: str, ceiling: Decimal, spent: Decimal, priced: Priced = ALL_PRICED) -> str:
    """Crossing `warnRatio` of the ceiling, said once a day; the spend as the
    agent's row says it (`$0.85+$?` when it is a floor or partly unpriced)."""
    share = int(spent / ceiling * 100)
    figure = priced.spend(spent, ceiling)
    return f"{agent} has spent {figure} today, {share}% of its {usd_exact(ceiling)} daily ceiling."


def unpriced(model: str) -> str:
    return (
        f"No price is known for {model}, so this turn's cost is not counted; "
        "add the model under `pricing:` in agents.yaml."
    )


def spike(
    agent: str, hour_usd: Decimal, day_usd: Decimal, times: float, reaches_at: datetime | None
) -> str:
    """A pace far above the agent's own trailing one, said once a day before amber."""
    said = (
        f"{agent} is spending {pace(hour_usd)} over the last hour, {times:.0f}× its "
        f"{pace(day_usd)} over the past day."
    )
    if reaches_at is not None:
        said += f" At this rate it reaches its ceiling at {reaches_at:%H:%M} UTC."
    return said


def raised(to: Decimal) -> str:
    """The operator raised the ceiling from an alert's link, for the rest of the day."""
    return f"Raised to {usd_exact(to)} until 00:00 UTC from the alert."


def declined(to: Decimal) -> str:
    """The operator declined the raise an alert offered."""
    return f"The operator declined the raise to {usd_exact(to)} from the alert."


# ── a turn that stopped ────────────────────────────────────────────────────

TURN_FAILED = "The turn failed inside the plane; see plane.log."
CUT_OFF = "The connection to the provider broke mid-answer; what arrived is kept, at an estimate."
BREAKER = (
    "Summarising the history failed three times in a row; auto-compact is off for this agent "
    "until the plane restarts."
)


def unrecorded(error: Exception) -> str:
    """Money that could not be recorded stopped the turn."""
    return (
        f"The turn stopped. {error} No LLM call is made while the ledger cannot record "
        "spend; see plane.log."
    )


def failed(error: str) -> str:
    """A call that got no usable answer (and was not billed): what happened, and what to do."""
    return f"The turn stopped: {error} Nothing was charged; send the message again to retry."


def broken(failure: str) -> str:
    """A reply that broke off: the provider may bill it, so the plane counts an estimate."""
    return (
        f"The turn stopped: {failure} The call is counted at an estimate; "
        "send the message again to retry."
    )


def capped(cap: int) -> str:
    return f"The turn ended after {cap} LLM calls, the per-turn cap; ask again to continue."


def cut_mark(max_output_tokens: int) -> str:
    """What people read after an answer the output limit cut: ` (cut at 256 tokens)`."""
    return f" (cut at {max_output_tokens:,} tokens)"


def echoed(agent: str) -> str:
    """What the conversation says in place of an echoed answer."""
    return (
        f"{agent} answered only by repeating the plane's own words to it, so that is not "
        "shown as its answer. Ask again, or put the question another way."
    )


def empty(agent: str) -> str:
    """What the conversation says when the model's answer was empty."""
    return (
        f"{agent} gave an empty answer, so there is nothing to show. Ask again, or put the "
        "question another way."
    )


def summarised(saved: Path) -> str:
    """The history was summarised (auto-compact); `saved` is where the whole of it is."""
    return (
        f"The history was summarised to fit the context window; "
        f"the whole of it is saved in {saved}."
    )


def overflowed(
    spec: AgentSpec, window: int, saved: Saved | None, crowded: int | None = None
) -> str:
    """A turn the provider refused as longer than the context: what happened
    and what to do. The turn's messages are already left out of the history,
    and a history there was is saved and the session started anew (`saved`).
    `crowded`: the role and tools' estimate in tokens, when they alone leave
    no room for a message (then no shorter message would do)."""
    said = (
        f"The turn stopped: what {spec.name} would read is more than {spec.model}'s "
        f"context holds ({window:,} tokens), so this turn is left out of its history "
        "and nothing was charged."
    )
    if saved is not None:
        return (
            f"{said} The plane started a new session, as /new does (the {saved.messages} "
            f"messages of the history are saved in .transcripts/{saved.file}): send it again."
        )
    if crowded is not None:
        return (
            f"{said} Its role and tools alone come to about {tokens(crowded)} tokens, which "
            "leaves no room for a message: shorten its role, or give it fewer tools "
            f"(`plane edit {spec.name}`, or e in the agent list)."
        )
    return f"{said} Send a shorter message, or the same one in parts."


def too_large(spec: AgentSpec, chars: int, message: int, window: int, room: int) -> str:
    """The refusal of a message no context of the model could hold (never stored)."""
    return (
        f"Not sent: this message ({chars:,} characters, about {tokens(message)} tokens) "
        f"is more than {spec.model} can read at once: its context holds {window:,} "
        f"tokens, of which about {tokens(room)} are left for a message once the prompt "
        "and the answer's room are counted. Shorten it, or send it in parts."
    )


# ── a turn cut ─────────────────────────────────────────────────────────────


def interrupted(cost: Decimal, cut: Interrupted) -> str:
    """What the conversation says of a turn the operator cut."""
    said = f"Interrupted by the operator. The cut-off turn cost {turn_cost(cost)}"
    if cut.calls == 1:
        said += f", the call in flight counted at its estimate, {turn_cost(cut.estimate_usd)}"
    elif cut.calls:
        said += (
            f", the {cut.calls} calls in flight counted at their estimates, "
            f"{turn_cost(cut.estimate_usd)}"
        )
    return said + "."


def unpriced_cut(model: str, cut: Interrupted) -> str:
    """What the conversation says of a cut turn on a model with no price."""
    said = (
        "Interrupted by the operator. The cut-off turn cost is not known: "
        f"no price is known for {model}"
    )
    if cut.calls == 1:
        said += ", so its call in flight is not counted"
    elif cut.calls:
        said += f", so its {cut.calls} calls in flight are not counted"
    return said + "."


def cut_by_a_stop(cut: Interrupted, waiting: int) -> str:
    """What an agent's conversation says after a restart found its turn cut.
    A call of a model with no price counts no estimate: said so, never $0.00."""
    if cut.unpriced == cut.calls:
        counted = (
            "the call in flight is not counted"
            if cut.calls == 1
            else f"the {cut.calls} calls in flight are not counted"
        ) + ": no price is known for its model"
    elif cut.calls == 1:
        counted = f"the call in flight is counted at its estimate, {turn_cost(cut.estimate_usd)}"
    else:
        counted = (
            f"the {cut.calls} calls in flight are counted at their estimates, "
            f"{turn_cost(cut.estimate_usd)}"
        )
    if cut.unpriced and cut.unpriced < cut.calls:
        counted += f" ({cut.unpriced} {UNPRICED}, not counted)"
    notice = f"The plane stopped during this agent's turn; {counted}."
    if waiting:
        notice += " It now answers what it had not answered."
    return notice


# ── who is asking, and the operator's changes ──────────────────────────────


def gateway_agent(agent: str) -> str:
    """Said when the operator types to a gateway agent, which only its client asks."""
    return (
        f"{agent} is a gateway agent: its calls come from its own client (`plane gateway "
        f"env {agent}` says how to point one at the plane), so it answers nothing typed here. "
        "/limit works as on any agent."
    )


def scout_asked(asker: str, question: str, paths: list[str]) -> str:
    """The asking agent's words in the scout's conversation, never shown as the operator's."""
    listed = ", ".join(paths) if paths else "the workspace"
    return f"{asker} asks: {question} ({listed})"


RESUMED = "Resumed by the operator: it answers what waited."
RESUMED_HELD = (
    "Resumed by the operator: the pause is lifted, but it is still held; it answers what "
    "waited once that hold ends."
)
"""A resume that leaves another hold (its ceiling, a model with no price):
no promise of an answer; the hold's own notice says which and when."""


def paused_now(ceiling: Decimal | None, working: bool) -> str:
    """The operator paused the agent; what it keeps, and the turn in flight."""
    kept = "no ceiling" if ceiling is None else f"its {usd_exact(ceiling)} daily ceiling"
    line = f"Paused by the operator: it starts no new turn until resumed; {kept} is kept."
    return line + (" The turn in flight finishes." if working else "")


def edited(
    model: str | None,
    role: str | None,
    tools: tuple[str, ...] | Literal["keep"] | None,
    ceiling: Decimal | Literal["keep"] | None,
) -> str:
    """What the operator's edit changed (`"keep"`: tools or ceiling unchanged)."""
    changed = []
    if model is not None:
        changed.append(f"model {model}")
    if role is not None:
        changed.append("role changed" if role else "role cleared")
    if tools != "keep":
        changed.append(described(tools))
    if ceiling != "keep":
        changed.append(
            "no spending limit" if ceiling is None else f"ceiling {usd_exact(ceiling)} a day"
        )
    return f"Edited by the operator: {'; '.join(changed)}."


def renamed(old: str) -> str:
    return f"Renamed from {old} by the operator."


def deleted(spent: Decimal, priced: Priced = ALL_PRICED) -> str:
    """The operator deleted the agent; what it spent today, as its row said
    it (`$?` on a model with no known price, never `$0.00`)."""
    return (
        f"Deleted by the operator. Its conversation and ledger rows are kept, and its "
        f"{priced.spend(spent, None)} today still counts: deleting never refunds."
    )
