"""The operator's keys for managing agents, as part of the main screen:
on the focused agent list `d` deletes (after a confirmation), `p` pauses or
resumes, `r` renames, `e` edits; Esc or ctrl+c in the conversation or the
composer interrupts the selected agent's running turn.

A base class of `MainScreen` rather than lines in it: the keys, when they
apply and what they do are one concern, kept in one file. Each key applies
only where it says (`check_action`): elsewhere it is not bound at all, so
`d` in the composer is a letter, and Esc or ctrl+c with no turn running keep
their usual meaning (focus the composer, copy).

The plane decides everything; these only ask (`tui.link`), in workers whose
failures the main screen turns into one line, like any request's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual import on, work
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input

from plane.wire.protocol import AgentState, Interrupt, PauseAgent
from plane.wire.words import file_agent_refusal
from tui.link import Link
from tui.screens.confirm_delete import ConfirmDelete
from tui.screens.edit_agent import EditAgent
from tui.screens.rename_agent import RenameAgent
from tui.screens.styled import StyledOnce
from tui.store import Store
from tui.widgets.agent_list import AgentList

LIST_KEYS = frozenset({"delete_agent", "pause_agent", "rename_agent", "edit_agent"})
"""Actions of the focused agent list."""
MANAGE_KEYS = (*sorted(LIST_KEYS), "interrupt")
"""Every action whose applying moves with the selected agent."""

DELETE = "Delete it, after a confirmation (its conversation and ledger rows stay)"
PAUSE = "Pause it, or resume it (a pause keeps its ceiling)"
RENAME = "Rename it: its conversation, spend and ceiling follow the name"
EDIT = "Edit its role, model, tools and ceiling"
INTERRUPT = "While a turn runs: interrupt it (the conversation says what it cost)"


class ManageAgents(StyledOnce, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        # The tooltip is the longer sentence the help panel (F1) shows.
        Binding("d", "delete_agent", "Delete", tooltip=DELETE),
        Binding("p", "pause_agent", "Pause/resume", tooltip=PAUSE),
        Binding("r", "rename_agent", "Rename", tooltip=RENAME),
        Binding("e", "edit_agent", "Edit", tooltip=EDIT),
        # Priority, so the composer's own keys do not come first; when no turn
        # runs they do not apply, and the key goes on to the binding after it.
        Binding("escape", "interrupt", "Interrupt", priority=True, tooltip=INTERRUPT),
        Binding(
            "escape", "back", "Close the keys panel or the filter; else to the composer", show=False
        ),
        Binding("ctrl+c", "interrupt", "Interrupt", show=False, priority=True, tooltip=INTERRUPT),
        Binding("ctrl+c", "screen.copy_text", "Copy selected text", show=False),
    ]
    """One class's list keeps every binding of a key; a subclass's binding of
    a key would replace them all (Textual merges by key), so Esc and ctrl+c
    are bound here and only here."""

    store: Store
    link: Link

    _keys_shown: tuple[bool | None, ...] | None = None
    """What `check_action` answered when the footer was last told."""

    def __init__(self) -> None:
        super().__init__()
        self.deleting: set[str] = set()
        """Agents deleted from this screen (asked, or on their way out): the
        confirmation says so, so their removal is not told a second time."""

    def on_mount(self) -> None:
        # Whether Interrupt applies moves with the selected agent's state.
        # Immediate: posted instead, each of 200 updates a second was one
        # more callback for the screen to run between a key and its paint.
        self.store.agent_changed.subscribe(self, self._state_changed, immediate=True)

    def _state_changed(self, agent: AgentState) -> None:
        if agent.name == self._managed():
            self._keys_may_have_changed()

    @on(AgentList.Selected)
    def _selection_changed(self) -> None:
        self._keys_may_have_changed()

    def _keys_may_have_changed(self) -> None:
        """Tell the footer only when a key came or went: it rebuilds itself
        whole each time it is told (14 ms a time with 1,000 agents, on
        every arrow key in the list, measured by bench/tui.py)."""
        shown = tuple(self.check_action(action, ()) for action in MANAGE_KEYS)
        if shown != self._keys_shown:
            self._keys_shown = shown
            self.refresh_bindings()

    def _managed(self) -> str | None:
        """The agent the keys act on: the selected one."""
        rows = self.agent_list
        return rows.selected if rows is not None else None

    _agent_list: AgentList | None = None

    @property
    def agent_list(self) -> AgentList | None:
        """The screen's agent list (None while it is not mounted). Found once:
        looking it up walked every widget of the screen, for each of 200
        spend updates a second."""
        if self._agent_list is None or not self._agent_list.is_attached:
            lists = self.query(AgentList)
            self._agent_list = lists.first() if lists else None
        return self._agent_list

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        agent = self.store.agents.get(self._managed() or "")
        on_list = isinstance(self.focused, AgentList)
        if action in LIST_KEYS:
            return on_list and agent is not None
        if action == "interrupt":
            # Not from the list (its keys are its own), nor from the list's
            # filter (an Input: Esc there clears the filter).
            elsewhere = on_list or isinstance(self.focused, Input)
            return not elsewhere and agent is not None and agent.status == "working"
        return super().check_action(action, parameters)

    # ── actions ────────────────────────────────────────────────────────────

    def action_delete_agent(self) -> None:
        agent = self._managed()
        if agent is not None and self._made_here(agent, "delete"):
            self.deleting.add(agent)
            self.app.push_screen(ConfirmDelete(agent, self.link), callback=self._deleted(agent))

    def _made_here(self, agent: str, change: str) -> bool:
        """An agent from agents.yaml is the file's to rename or delete: said
        when the key is pressed, not after a form that could only fail."""
        state = self.store.agents.get(agent)
        if state is not None and state.from_file:
            self.notify(file_agent_refusal(agent, change))
            return False
        return True

    def _deleted(self, agent: str) -> Callable[[bool | None], None]:
        def done(deleted: bool | None) -> None:
            if deleted:
                self.notify(f"Deleted {agent}; its conversation and ledger rows are kept.")
            else:
                self.deleting.discard(agent)

        return done

    def action_pause_agent(self) -> None:
        agent = self.store.agents.get(self._managed() or "")
        if agent is not None:
            # `p` resumes an agent the loop guard holds, as it does a paused one.
            resume = agent.paused or (agent.status == "held" and agent.hold_reason == "loop")
            self.pause(agent.name, not resume)

    def action_rename_agent(self) -> None:
        agent = self._managed()
        if agent is not None and self._made_here(agent, "rename"):
            self.app.push_screen(RenameAgent(agent, self.link), callback=self._changed)

    def action_edit_agent(self) -> None:
        agent = self.store.agents.get(self._managed() or "")
        if agent is not None:
            form = EditAgent(agent, self.store.models, self.link)
            self.app.push_screen(form, callback=self._changed)

    def action_interrupt(self) -> None:
        agent = self._managed()
        if agent is not None:
            self.interrupt(agent)

    def _changed(self, agent: AgentState | None) -> None:
        if agent is not None:
            self.store.upsert(agent)
            self.query_one(AgentList).select(agent.name)

    # ── workers: each asks the plane once; the screen says a failure ──────

    @work(group="manage", exit_on_error=False)
    async def pause(self, agent: str, paused: bool) -> None:
        reply = await self.link.request(PauseAgent(agent=agent, paused=paused))
        self.store.upsert(reply.agent)

    @work(group="manage", exit_on_error=False)
    async def interrupt(self, agent: str) -> None:
        await self.link.request(Interrupt(agent=agent))
