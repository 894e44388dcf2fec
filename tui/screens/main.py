"""The one screen the operator lives in: rows, title, conversation, input.

The screen mediates: widgets post messages up, the screen sets attributes
down, and the store's signals tell it what the plane changed. Network work
(history, sending) runs in workers of a few lines: each calls the link and
posts one message for its answer; a failure is caught in one place
(`_worker_ended`) and becomes one `Failed` message, which says it. The store
is the only writer of what the plane said; the screen hands it what arrived.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Input, Static, TextArea
from textual.worker import Worker, WorkerState

from plane.wire.protocol import AgentRenamed, AgentState, ConversationMessage, History, Send
from plane.wire.words import store_unreachable
from tui.commands import Commands
from tui.drafts import Drafts
from tui.link import Link, LinkFailed
from tui.messages import Failed
from tui.screens.manage import ManageAgents
from tui.screens.new_agent import NewAgentScreen
from tui.store import Store, Streaming
from tui.widgets.agent_list import AgentList
from tui.widgets.composer import Composer
from tui.widgets.connection_banner import ConnectionBanner
from tui.widgets.conversation import WINDOW, ConversationPane
from tui.widgets.fleet_line import FleetLine
from tui.widgets.keys_footer import KeysFooter
from tui.widgets.message_line import STACKED
from tui.widgets.title_bar import TitleBar

log = logging.getLogger(__name__)

FLEET_S = 0.25
"""The fleet line is redrawn at most this often."""

TINY = 60
"""Below this it folds away."""
SIDE_ROOM = 16
"""Columns of a row besides the name: borders, margins, glyph, a figure
(`$0.40+$?`), the scrollbar."""
SIDE_LEAST, SIDE_MOST = 18, 28
"""The agent list's width, at least and at most (28 only for names that need
it: with short ones it took 28 columns, mostly empty, from the conversation)."""
TALK_FRAME = 5
"""Columns of the conversation besides its lines: borders, padding, the scrollbar."""
TALK_LEAST = STACKED + TALK_FRAME
"""The conversation's width that keeps a message's time and who beside its
text (`STACKED`): the list takes what its rows need up to this. Held to a
quarter of the screen instead, at 80 columns the list had 20 and cut every
`agent-0001` to `agent-0…`, leaving a fleet's rows alike; with 27, names of
12 characters show whole beside their spend (with a scrollbar, and a figure
under $100), and the conversation keeps 53."""

UNREAD_KINDS = frozenset({"agent", "ask"})
"""What makes an agent unread: it answered (or asked) while not shown."""


WAITING = "Waiting a moment for the plane to come back: the message stays here until it is sent."
"""Said at once for a message sent while the link is down."""

HISTORY = 200
"""The newest messages fetched when an agent is shown; earlier ones come a
page (`WINDOW`) at a time as the operator scrolls back."""


class MainScreen(ManageAgents):
    """Agents on the left, the selected one's conversation on the right."""

    CSS_PATH = Path(__file__).with_name("main.tcss")
    AUTO_FOCUS = "#composer"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "new_agent", "New agent"),
        Binding("ctrl+l", "focus_agents", "Agents"),
        # escape: in ManageAgents (interrupt a running turn, else `back`)
        Binding("alt+up,ctrl+up", "step(-1)", "Previous agent", show=False),
        Binding("alt+down,ctrl+down", "step(1)", "Next agent", show=False),
    ]

    lost: reactive[str | None] = reactive(None)
    """Why the plane is not connected (and when the next try is), or None."""

    @dataclass
    class Delivered(Message):
        """What the plane stored and answered for something sent or fetched."""

        agent: str
        messages: list[ConversationMessage]
        whole_history: bool = False
        sent: str | None = None
        """The text sent, when these are the plane's answer to a send."""

    @dataclass
    class Paged(Message):
        """A page of earlier messages."""

        agent: str
        messages: list[ConversationMessage]
        reached_start: bool = False

    def __init__(self, store: Store, link: Link, commands: Commands) -> None:
        super().__init__()
        self.store = store
        self.link = link
        self.commands = commands
        self.drafts = Drafts()
        self._fleet_due: Timer | None = None
        self._activity_shown = ""
        """What the activity line says (it starts empty)."""
        self._hint_shown = ""
        """What the command hint line says."""
        self.remembered: str | None = None
        """The agent shown when this app last closed: selected once its row exists."""

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        yield FleetLine(id="fleet")
        yield ConnectionBanner(id="banner")
        with Horizontal(id="body"):
            with Vertical(id="side"):
                # The name filter (#filter) is built on its first `/` (`_filter_wanted`).
                yield AgentList(self.store, id="agents")
            with Vertical(id="talk"):
                yield ConversationPane(id="conversation")
                yield Static("", id="activity")
                yield Static("", id="hint")
                yield Composer(self.commands, id="composer")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.store.roster_changed.subscribe(self, self._roster_changed, immediate=True)
        self.store.agent_changed.subscribe(self, self._agent_changed, immediate=True)
        self.store.message_added.subscribe(self, self._message_added, immediate=True)
        self.store.streaming.subscribe(self, self._streaming, immediate=True)
        self.store.activity_changed.subscribe(self, self._activity_changed, immediate=True)
        self.store.agent_removed.subscribe(self, self._agent_removed, immediate=True)
        self.store.agent_renamed.subscribe(self, self._agent_renamed, immediate=True)
        self.store.agents_missing.subscribe(self, self._agents_missing, immediate=True)
        self.set_interval(1.0, self.tick)
        self.query_one(AgentList).border_title = "agents"
        self.query_one(ConversationPane).border_title = "conversation"
        self.query_one(ConversationPane).show(None, [])
        if self.remembered is not None:
            self.select_agent(self.remembered)

    # ── what the store says ────────────────────────────────────────────────

    @property
    def selected(self) -> str | None:
        return self._managed()

    def _roster_changed(self, names: list[str]) -> None:
        self._show_banner()
        self._fit()
        self._show_title()
        self._draw_fleet()  # with the rows: the snapshot's line waits for no pause
        pane = self.query_one(ConversationPane)
        if not self.store.agents and pane.config != self.store.config:
            pane.config = self.store.config
            pane.show(None, [])
        agent = self.selected
        if agent is not None and not self.store.conversation(agent).loaded:
            self.load_history(agent)

    def _agent_removed(self, agent: str) -> None:
        """The agent shown was deleted (elsewhere: from here the confirmation
        says it): the pane moves to another agent's conversation, so say why.
        What was being written to it stays in the composer, unsent."""
        deleted_here = agent in self.deleting
        self.deleting.discard(agent)
        if agent == self.drafts.writing_to:
            said = [] if deleted_here else [f"{agent} was deleted."]
            self._shown_gone(agent, "was deleted", said)

    def _agents_missing(self, agents: list[str]) -> None:
        """Back on the plane, the agent shown is no longer listed: deleted or
        renamed while the link was down (the snapshot does not say which)."""
        agent = self.drafts.writing_to
        if agent in agents:
            said = f"{agent} is no longer on the plane: deleted or renamed while disconnected."
            self._shown_gone(agent, "is no longer on the plane", [said])

    def _shown_gone(self, agent: str, fate: str, said: list[str]) -> None:
        """The pane moves to another agent's conversation, so say why; what
        was being written to `agent` stays in the composer, unsent."""
        if self.drafts.went_away(agent, fate, self.query_one(Composer).value):
            said.append(f"What you were writing to {agent} is still in the composer, not sent.")
        if said:
            self.notify(" ".join(said), markup=False)

    def _agent_renamed(self, renamed: AgentRenamed) -> None:
        self.drafts.renamed(renamed.old, renamed.agent.name)

    def _agent_changed(self, agent: AgentState) -> None:
        self._show_fleet()
        if agent.name == self.selected:
            self._show_title()

    def _show_fleet(self) -> None:
        """At most every `FLEET_S` for a row's update: with 100 spend updates
        a second, redrawing the line for each made the screen repaint five
        times as often. A change of the roster (the snapshot, an agent made
        or deleted, the fleet's ceiling) draws it at once (`_draw_fleet`), so
        the line comes with the rows instead of a pause after them."""
        if self._fleet_due is None:
            self._fleet_due = self.set_timer(FLEET_S, self._fleet_now)

    def _fleet_now(self) -> None:
        self._fleet_due = None
        self._draw_fleet()

    def _draw_fleet(self) -> None:
        ceiling = self.store.fleet_limit_usd
        unlisted = self.store.unlisted_spend_usd
        line = self.store.tally.fleet(ceiling, unlisted) if self.store.day else None
        fleet = self.query_one(FleetLine)
        fleet.fleet = line
        # Agents shown, but not the file's: a plane started where there is no agents.yaml.
        fleet.config = self.store.config if self.store.config_not_found else ""

    def _message_added(self, message: ConversationMessage) -> None:
        if message.agent == self.selected:
            self.query_one(ConversationPane).append(message)
        elif message.kind in UNREAD_KINDS:
            self.query_one(AgentList).mark_unread(message.agent, True)

    def _activity_changed(self, agent: str) -> None:
        if agent == self.selected:
            self._show_activity()

    def _show_activity(self) -> None:
        """`poet is thinking · 12 s · called grep` under the conversation, while a turn runs."""
        text = self.store.activity_text(self.selected or "")
        if text == self._activity_shown:
            return  # an update lays the screen out again: on every key, for the same ""
        self._activity_shown = text
        line = self.query_one("#activity", Static)
        line.update(text)
        line.set_class(bool(text), "-shown")

    def _streaming(self, streaming: Streaming) -> None:
        if streaming.agent == self.selected:
            self.query_one(ConversationPane).stream(streaming.text)

    def _show_title(self) -> None:
        title = self.query_one(TitleBar)
        agent = self.store.agents.get(self.selected or "")
        title.agent = agent
        title.group = self.store.group_of(agent.name) if agent is not None else None
        self.tick()
        if self.lost:
            title.waiting_text = "not connected"
        elif self.store.day is None:
            title.waiting_text = "connecting to the plane…"
        else:
            # Agents missing: perhaps not the agents.yaml meant (a plane started elsewhere).
            title.waiting_text = f"no agents yet: ctrl+n creates one · {self.store.config}"

    def tick(self) -> None:
        """The title's countdowns, from the plane's clock (each second, and on change)."""
        title = self.query_one(TitleBar)
        title.resets_in = self.store.resets_in()
        title.resumes_in = self.store.time_until(title.agent.resumes_at if title.agent else None)
        self._show_activity()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """The agent list takes what its rows need, up to what leaves the
        conversation `TALK_LEAST`; below 60 columns it folds away, and ctrl+l
        shows it in place of the conversation (see main.tcss)."""
        width = self.app.size.width
        self.set_class(width < TINY, "-tiny")
        side = self.query_one("#side")
        if width < TINY:
            side.styles.width = None  # main.tcss: folded, or the whole width while browsing
        else:  # as wide as its rows need, leaving the conversation its two columns
            longest = max((len(name) for name in self.store.agents), default=0)
            most = max(SIDE_LEAST, min(SIDE_MOST, width - TALK_LEAST))
            side.styles.width = max(SIDE_LEAST, min(most, longest + SIDE_ROOM))
        self.query_one(KeysFooter).tight = width < TINY

    def _browse(self, browsing: bool) -> None:
        """On a tiny screen, show the list in place of the conversation (or not)."""
        self.set_class(browsing, "-browsing")

    def watch_lost(self, lost: str | None) -> None:
        banners = self.query(ConnectionBanner)
        if not banners:
            return  # the app is closing: its last connection drop needs no banner
        self.set_class(lost is not None, "-lost")
        self._show_banner()
        self._show_title()

    def _show_banner(self) -> None:
        """The banner says the plane is not answering; or, answering, that
        its shared store is away (its figures are as last read)."""
        banners = self.query(ConnectionBanner)
        if not banners:
            return
        since = None if self.lost else self.store.store_unreachable_since
        banners.first().lost = self.lost or (
            f"{store_unreachable(since)}: spend as last read; sends are refused until it is back."
            if since is not None
            else None
        )

    # ── what the widgets say ───────────────────────────────────────────────

    @on(AgentList.Selected)
    def _agent_selected(self, event: AgentList.Selected) -> None:
        """One paint for all of it: the row, the title and the conversation."""
        with self.app.batch_update():
            self._swap_draft(event.agent)
            self.query_one(AgentList).mark_unread(event.agent, False)
            pane = self.query_one(ConversationPane)
            pane.border_title = event.agent
            conversation = self.store.conversation(event.agent)
            self._show_title()
            self.load_history(event.agent)
            pane.show(
                event.agent,
                conversation.ordered(),
                earlier_on_plane=conversation.earlier_on_plane,
                not_fetched=not conversation.loaded,
            )
            if conversation.streaming:
                pane.stream(conversation.streaming)

    @on(AgentList.Chosen)
    def _agent_chosen(self) -> None:
        self.action_focus_composer()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._browse(event.widget.id in ("agents", "filter"))

    @on(AgentList.Typed)
    @on(ConversationPane.Typed)
    def _typed(self, event: AgentList.Typed | ConversationPane.Typed) -> None:
        """Typing begun while reading the list or the conversation is a message."""
        self._browse(False)
        composer = self.query_one(Composer)
        composer.focus()
        composer.insert_text_at_cursor(event.character)

    def focus_composer(self) -> None:
        """At once, when it can take the focus: the next key routed goes to it."""
        composer = self.query_one(Composer)
        if composer.focusable:
            self._browse(False)
            self.set_focus(composer)

    @on(AgentList.NewAgentWanted)
    def _new_agent_wanted(self) -> None:
        self.open_new_agent()

    @on(AgentList.FilterWanted)
    async def _filter_wanted(self) -> None:
        box = await self._filter_box()
        box.add_class("-shown")
        box.focus()

    async def _filter_box(self) -> Input:
        """The name filter above the rows, built the first time it is wanted:
        hidden until then, it cost every start its styling and its mount."""
        boxes = self.query("#filter").results(Input)
        if box := next(boxes, None):
            return box
        box = Input(placeholder="a piece of a name", id="filter", classes="-shown")
        await self.query_one("#side").mount(box, before="#agents")
        return box

    @on(AgentList.Narrowed)
    def _narrowed(self) -> None:
        agents = self.query_one(AgentList)
        agents.border_title = agents.describe()

    @on(Input.Changed, "#filter")
    def _filter_typed(self, event: Input.Changed) -> None:
        self.query_one(AgentList).narrow(name=event.value.strip())

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        """Enter keeps the filter and goes back to the rows (it hides when empty)."""
        event.input.set_class(bool(event.value.strip()), "-shown")
        self.query_one(AgentList).focus()

    def _clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.remove_class("-shown")
        self.query_one(AgentList).narrow(name="")
        self.query_one(AgentList).focus()

    def _swap_draft(self, agent: str) -> None:
        """Keep the text written to the agent left; bring back the one for `agent`."""
        composer = self.query_one(Composer)
        text = self.drafts.shown(agent, composer.value)
        if text is None:
            return
        if composer.value != text:
            composer.value = text
        else:  # setting it to itself laid the screen out again, on every key
            composer.history.clear()  # as setting it does: no undo into another's draft

    @on(Composer.Page)
    async def _page(self, event: Composer.Page) -> None:
        """Through Textual's action dispatch, never a direct call: a scroll
        action with nothing to scroll raises `SkipAction`, which only the
        dispatch catches (called directly, it ended the app on a newcomer's
        first PageUp over an empty conversation)."""
        pane = self.query_one(ConversationPane)
        await pane.run_action("page_up" if event.delta < 0 else "page_down")

    @on(TextArea.Changed, "#composer")
    def _typing(self, event: TextArea.Changed) -> None:
        if not event.text_area.text.strip():
            self.drafts.cleared()
        matches = self.commands.completions(event.text_area.text.split(" ")[0])
        hint = "   ".join(f"{c.usage}  {c.help}" for c in matches[:2])
        if hint == self._hint_shown:
            return
        self._hint_shown = hint
        self.query_one("#hint", Static).update(hint)
        self.query_one("#hint").set_class(bool(hint), "-shown")

    @on(Composer.Submitted)
    async def _submitted(self, event: Composer.Submitted) -> None:
        text = event.value.strip()
        shown = self.selected
        if text and shown is not None and (held := self.drafts.held_back(shown)) is not None:
            self.notify(held, markup=False)
            return
        if shown is not None and self.drafts.is_waiting(shown, text):
            self.notify(WAITING, markup=False)  # Enter again would send it twice
            return
        event.composer.clear()
        event.composer.remember(text)
        if text:
            # What the operator sends, and what answers it, is shown: a pane
            # they had scrolled up in follows the newest again.
            self.query_one(ConversationPane).anchor()
            await self.commands.dispatch(self, text)

    @on(ConversationPane.EarlierWanted)
    def _earlier_wanted(self, event: ConversationPane.EarlierWanted) -> None:
        self.load_earlier(event.agent, event.before_id)

    @on(Delivered)
    async def _delivered(self, event: Delivered) -> None:
        if event.sent is not None:
            self._no_longer_waiting(event.agent, event.sent, taken=True)
        if not event.whole_history:
            self.store.add_messages(event.messages)
            return
        whole = len(event.messages) < HISTORY
        fresh = self.store.history_arrived(event.agent, event.messages, whole=whole)
        if event.agent != self.selected:
            return
        conversation = self.store.conversation(event.agent)
        pane = self.query_one(ConversationPane)
        if fresh or pane.agent != event.agent or pane.not_fetched:  # fetched now
            pane.show(
                event.agent, conversation.ordered(), earlier_on_plane=conversation.earlier_on_plane
            )
            pane.stream(conversation.streaming)
        else:
            await pane.offer_earlier(conversation.earlier_on_plane)

    @on(Paged)
    async def _paged(self, event: Paged) -> None:
        self.store.earlier_arrived(event.agent, event.messages, reached_start=event.reached_start)
        conversation = self.store.conversation(event.agent)
        await self.query_one(ConversationPane).earlier_arrived(
            event.agent, event.messages, earlier_on_plane=conversation.earlier_on_plane
        )

    @on(Worker.StateChanged)
    def _worker_ended(self, event: Worker.StateChanged) -> None:
        """The one place a request's failure is caught: it becomes one `Failed`."""
        if event.state is not WorkerState.ERROR:
            return
        error = event.worker.error
        if isinstance(error, LinkFailed):
            if isinstance(error.request, Send):
                # A timeout is not given back: the plane may have it (the line quotes it).
                taken = error.failure == "timeout"
                self._no_longer_waiting(error.request.agent, error.request.text, taken=taken)
                if not taken:
                    self._keep_unsent(error.request)
            self.post_message(Failed(error.request, _failure(error)))
        else:  # a defect, not the plane: say so, keep the details for the log
            log.error("worker %s failed", event.worker.name, exc_info=error)
            self.post_message(Failed(None, f"Something went wrong in this client: {error!r}"))

    def _no_longer_waiting(self, agent: str, text: str, *, taken: bool) -> None:
        composer = self.query_one(Composer)
        if self.drafts.settled(agent, text, composer.value, taken=taken):
            composer.clear()

    def _keep_unsent(self, request: Send) -> None:
        """A message the plane refused (too long) or never got (no plane) is
        stored nowhere: it goes back where it was written, to be shortened
        or sent again, unless something new has been written there since.
        (A timeout is not this: the plane may have it.)"""
        if not self.drafts.refused(request.agent, request.text):
            return
        composer = self.query_one(Composer)
        if not composer.value.strip():
            composer.value = request.text

    @on(Failed)
    def _failed(self, event: Failed) -> None:
        request, agent = event.request, event.agent
        if isinstance(request, History) and request.before_id is not None and agent is not None:
            self.post_message(self.Paged(agent, []))  # the pane stops waiting for the page
            self.notify(event.text, severity="error")
        elif not event.text:
            return  # nothing worth a line: the banner already says it
        elif agent is None or agent == self.selected:
            self.query_one(ConversationPane).note(event.text)
        else:
            self.notify(event.text, severity="error")

    # ── CommandContext: what slash commands may do ─────────────────────────

    def send_to_plane(self, text: str) -> None:
        agent = self.selected
        if agent is None:
            self.show_local("There is no agent to send to yet: ctrl+n creates one.")
            self.prefill(text)  # kept, to send once there is one
            return
        if not self.link.connected:
            # The send waits a moment for the link to come back; until the
            # plane takes it, it stays where it was written, never seeming gone.
            self.drafts.wait(agent, text)
            self.prefill(text)
            if self.link.reconnecting:  # else it is refused at once, and the pane says so
                self.notify(WAITING, markup=False)
        self.send(agent, text)

    def show_local(self, text: str) -> None:
        self.query_one(ConversationPane).note(text)

    def open_new_agent(self) -> None:
        store = self.store
        screen = NewAgentScreen(
            store.models,
            self.link,
            default_model=store.default_model,
            default_limit=store.default_limit_usd,
            tool_defaults=store.tool_defaults,
        )
        self.app.push_screen(screen, callback=self._created)

    def select_agent(self, agent: str) -> None:
        self.query_one(AgentList).select(agent)

    def prefill(self, text: str) -> None:
        composer = self.query_one(Composer)
        composer.value = text
        composer.focus()

    def quit(self) -> None:
        self.app.exit()

    def _created(self, agent: AgentState | None) -> None:
        if agent is not None:
            self.store.upsert(agent)
            self.query_one(AgentList).select(agent.name)
        self.action_focus_composer()

    # ── workers: each calls the link and posts its answer; `_worker_ended` its failure ──

    @work(exclusive=True, group="history", exit_on_error=False)
    async def load_history(self, agent: str) -> None:
        reply = await self.link.request(History(agent=agent, limit=HISTORY))
        self.post_message(self.Delivered(agent, reply.messages, whole_history=True))

    @work(exclusive=True, group="earlier", exit_on_error=False)
    async def load_earlier(self, agent: str, before_id: int) -> None:
        reply = await self.link.request(History(agent=agent, limit=WINDOW, before_id=before_id))
        reached_start = len(reply.messages) < WINDOW
        self.post_message(self.Paged(agent, reply.messages, reached_start=reached_start))

    # Not exclusive: a second message must not cancel the first on its way.
    @work(group="send", exit_on_error=False)
    async def send(self, agent: str, text: str) -> None:
        sent = await self.link.request(Send(agent=agent, text=text))
        self.post_message(self.Delivered(agent, sent.messages, sent=text))

    # ── actions ────────────────────────────────────────────────────────────

    def action_new_agent(self) -> None:
        self.open_new_agent()

    def action_focus_agents(self) -> None:
        self._browse(True)  # on a tiny screen the list shows only while in use
        self.query_one(AgentList).focus()

    def action_focus_composer(self) -> None:
        self._browse(False)
        self.query_one(Composer).focus()

    def action_back(self) -> None:
        """Esc: close Textual's keys panel if it is open, else go back to typing."""
        if self.query("HelpPanel"):
            self.app.action_hide_help_panel()
        elif self.focused is not None and self.focused.id == "filter":
            self._clear_filter()
        else:
            self.action_focus_composer()

    def action_step(self, delta: int) -> None:
        self.query_one(AgentList).step(delta)


def _failure(error: LinkFailed) -> str:
    """The sentence for a request that did not go through ("" for none)."""
    request, reason = error.request, str(error)
    if isinstance(request, History) and request.before_id is not None:
        return f"Earlier messages could not be fetched: {reason}."
    if isinstance(request, History):
        # Offline, the banner says so, and the reconnect fetches it.
        return (
            ""
            if error.failure == "offline"
            else f"The conversation could not be fetched: {reason}."
        )
    if isinstance(request, Send) and error.failure != "refused":
        if error.failure == "timeout":
            return f"No answer from the plane in time (it may have the message): {request.text}"
        return f"Not sent (no connection to the plane): {request.text}"
    return reason  # the plane's own sentence
