"""The line at the top: the selected agent, its model, its day so far.

`demo · smollm2-135m · $4.10 of $5.00 today`, or `$4.10 today, no limit`;
when the agent is amber or held, also how long until the plane's day resets.
A held agent that the reset frees says it in its own terms, `held · resumes
in 3h 13m` (the plane's `resumes_at`: the one moment it starts again on its
own); a zero ceiling is a pause, `paused`, which no reset ends (its own, or
its group's or the fleet's: held by one with no `resumes_at`); another hold
the reset does not free (an unpriced model) keeps `resets in`; one the loop
guard holds says `a loop, p resumes it`; one its group's or the fleet's
ceiling holds says whose, `held by group research · resumes in 6h 12m`,
`held by the fleet`, `paused by the fleet`. An agent on its cheaper fallback
near its ceiling says `(fallback)` after the model. An agent the
plane sees burning fast — on course to reach its ceiling before the day
resets — says when: `reaches $5.00 at 14:20 UTC at this rate` (the plane's
`reaches_ceiling_at`; the title only words it). The screen
sets `agent`, `group`, `resets_in` and `resumes_in`; the spend is coloured by the
`-warn` / `-over` classes, like a row's.
"""

from __future__ import annotations

from datetime import timedelta
from typing import ClassVar

from textual.content import Content
from textual.reactive import reactive
from textual.style import Style
from textual.widget import Widget

from plane.wire.protocol import AgentState
from plane.wire.words import UNPRICED, reaches, spend_priced
from tui.formatting import duration, spend_level, usd


def spend_phrase(agent: AgentState) -> str:
    """`$4.10 of $5.00 today` or `$4.10 today, no limit`; near a ceiling below
    a dollar, the digits that tell them apart (`$0.019 of $0.02 today`); the
    figure as its row and `/limit` say it (`spend_priced`): `$?` on a model
    with no known price, `$0.40+$?` when the rest of it is unpriced."""
    spent = spend_priced(
        agent.spend_today_usd,
        agent.limit_usd,
        price_known=agent.price_known,
        floor_priced=agent.floor_priced,
    )
    if agent.limit_usd is None:
        return f"{spent} today, no limit"
    return f"{spent} of {usd(agent.limit_usd)} today"


Part = tuple[str, Style, int]
"""Text, style, and how soon it is left out of a line too narrow for all."""
KEPT = 0
"""Never left out."""
REASON = 1
"""Why it is stopped: the last to go."""
WHEN = 2
"""When it starts again, or the day resets."""
DETAIL = 3
"""The model, the forecast."""
WHERE = 4
"""The plane that runs it: the first to go."""


def _fitted(parts: list[Part], width: int) -> Content:
    """The parts that fit `width`, dropping the soonest first (at 40 columns
    the model goes before the spend, never the spend or `held`)."""
    kept = list(parts)
    while sum(len(text) for text, _, _ in kept) > width:
        soonest = max(kept, key=lambda part: part[2])
        if soonest[2] == KEPT:
            break
        kept.remove(soonest)
    return Content.assemble(*((text, style) for text, style, _ in kept))


class TitleBar(Widget):
    """One line; empty of figures until the plane has said something."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "title-bar--name",
        "title-bar--spend",
        "title-bar--muted",
        "title-bar--held",
        "title-bar--paused",
    }

    agent: reactive[AgentState | None] = reactive(None)
    """The selected agent, as the plane last described it."""
    resets_in: reactive[timedelta | None] = reactive(None)
    """Time left in the plane's day (from the plane's clock, not this one's)."""
    resumes_in: reactive[timedelta | None] = reactive(None)
    """Time until the held agent starts again on its own, when the plane says it will."""
    group: reactive[str | None] = reactive(None)
    """The group the agent is in (the snapshot's groups; None: none, or not known)."""
    waiting_text: reactive[str] = reactive("connecting to the plane…")
    """Shown instead of figures while there is no agent to describe."""

    def render(self) -> Content:
        agent = self.agent
        muted = self.get_visual_style("title-bar--muted")
        if agent is None:
            return Content.assemble(
                ("plane", self.get_visual_style("title-bar--name")),
                (f" · {self.waiting_text}", muted),
            )
        return _fitted(self._parts(agent, muted), self.content_region.width or 1_000)

    def _parts(self, agent: AgentState, muted: Style) -> list[Part]:
        """Every part of the title, with how soon it goes when the line is
        too narrow (the name, the spend and why it is stopped never do)."""
        spend = self.get_visual_style("title-bar--spend")
        parts: list[Part] = [
            (agent.name, self.get_visual_style("title-bar--name"), KEPT),
            (f" · {agent.model}", muted, DETAIL),
            # Stepped down near its ceiling (`fallback:`): the model it runs on says so.
            *([(" (fallback)", muted, DETAIL)] if agent.stepped_down_from else []),
            # On a model with no price: its $ is not all.
            *([(f" ({UNPRICED})", muted, DETAIL)] if not agent.price_known else []),
            (" · ", muted, KEPT),
            (spend_phrase(agent), spend, KEPT),
        ]
        if agent.paused:
            parts.append((" · ", muted, KEPT))
            parts.append(("paused", self.get_visual_style("title-bar--paused"), KEPT))
        if self.has_class("-held"):
            # A zero ceiling is a pause: no day's end frees it, so no "resets in".
            zero = _paused_by_a_ceiling(agent)
            parts.append((" · ", muted, KEPT))
            parts.append(
                ("paused" if zero else "held", self.get_visual_style("title-bar--held"), KEPT)
            )
            if (holder := held_by(agent.hold_reason, self.group)) is not None:
                parts.append((f" by {holder}", self.get_visual_style("title-bar--held"), REASON))
        looping = self.has_class("-held") and agent.hold_reason == "loop"
        if looping:  # no day's end frees it: the operator does
            parts.append((" · a loop, p resumes it", muted, REASON))
        elif self.has_class("-held") and self.resumes_in is not None:
            parts.append((f" · resumes in {duration(self.resumes_in)}", muted, WHEN))
        elif (
            self.resets_in is not None
            and self.classes & {"-warn", "-over", "-held"}
            and not (self.has_class("-held") and _paused_by_a_ceiling(agent))
        ):
            parts.append((f" · resets in {duration(self.resets_in)}", muted, WHEN))
        if agent.reaches_ceiling_at is not None and agent.limit_usd is not None:
            forecast = reaches(agent.limit_usd, agent.reaches_ceiling_at)
            parts.append((f" · {forecast}", muted, DETAIL))
        if agent.plane is not None:  # several planes share the store: which one runs it
            parts.append((f" · on {agent.plane}", muted, WHERE))
        return parts

    def watch_agent(self, agent: AgentState | None) -> None:
        level = spend_level(agent) if agent is not None else "ok"
        self.set_class(level == "warn", "-warn")
        self.set_class(level == "over", "-over")
        self.set_class(agent is not None and agent.status == "held", "-held")


def _paused_by_a_ceiling(agent: AgentState) -> bool:
    """Held by a ceiling of $0.00: its own, or its group's or the fleet's,
    which the plane says by giving no time to resume (a new day does not
    end a pause, as the conversation's notice says)."""
    if agent.limit_usd == 0:
        return True
    return agent.hold_reason in ("group", "fleet") and agent.resumes_at is None


def held_by(reason: str | None, group: str | None) -> str | None:
    """Whose ceiling holds it, when not its own: `group research` (`its
    group` when the snapshot does not name it) or `the fleet`, in `plane
    status`'s words; None for any other hold (its own ceiling, a loop, …),
    which the rest of the title words."""
    if reason == "group":
        return f"group {group}" if group else "its group"
    if reason == "fleet":
        return "the fleet"
    return None
