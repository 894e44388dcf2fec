"""The plane's terminal client.

The app owns the three non-widgets (the store, the link to the plane, the
command registry), hands them down to the main screen, and routes what the
link posts: a snapshot into the store, an event into the store, a lost connection
onto the screen's banner. It decides nothing about money or days.
"""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import ClassVar

from textual import events, on
from textual.app import App
from textual.binding import Binding, BindingType
from textual.timer import Timer

from tui import heap
from tui.commands import Commands, client_commands
from tui.keys import types_text
from tui.link import Address, Backoff, Link, Timeouts
from tui.memory import Memory
from tui.messages import PlaneConnected, PlaneEvent, PlaneLost
from tui.palette import PlaneCommands
from tui.screens.agent_form import AgentForm
from tui.screens.help import HelpScreen
from tui.screens.main import MainScreen
from tui.screens.new_agent import NewAgentScreen
from tui.screens.spend import SpendScreen
from tui.store import Store
from tui.widgets.agent_list import AgentList
from tui.widgets.conversation import ConversationPane

REMEMBER_S = 1.0
"""The agent shown is written down once the selection has rested this long
(and on quitting): writing the file on every arrow key cost a keypress 5 to
50 ms of disk (bench/tui.py)."""


class PlaneApp(App[None]):
    """`PlaneApp(Address(path=…))` connects on start; `address=None` stays
    offline (tests feed it frames as the link would post them)."""

    CSS_PATH: ClassVar[list[str | PurePath]] = [
        Path(__file__).with_name("app.tcss"),
        # Every screen's file too, parsed once at start: a file Textual first
        # meets when its screen opens has it parse every file again (20-50 ms
        # on the first F1, ctrl+n, ctrl+g or edit form). Live from the start,
        # each file's rules are nested in its own screen.
        MainScreen.CSS_PATH,
        NewAgentScreen.CSS_PATH,
        SpendScreen.CSS_PATH,
        AgentForm.CSS_PATH,
        HelpScreen.CSS_PATH,
    ]
    TITLE = "plane"
    COMMANDS = App.COMMANDS | {PlaneCommands}
    COMMAND_PALETTE_BINDING = "ctrl+p"

    BINDINGS: ClassVar[list[BindingType]] = [
        # Priority: F1 works over the form and inside its inputs too.
        Binding("f1", "help", "Help", priority=True),
        Binding("ctrl+t", "toggle_theme", "Light/dark"),
        Binding("ctrl+g", "spend", "Spend charts", show=False),
        Binding("ctrl+q", "quit", "Quit", priority=True, tooltip="Quit (the plane keeps running)"),
    ]

    def __init__(
        self,
        address: Address | None,
        *,
        commands: Commands | None = None,
        backoff: Backoff | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        super().__init__()
        self.address = address
        self.store = Store(self)
        self.link = Link(
            address or Address(), self.post_message, backoff=backoff, timeouts=timeouts
        )
        self.commands = commands or client_commands()
        self.main_screen = MainScreen(self.store, self.link, self.commands)
        self.memory = Memory.for_socket(address.path) if address is not None else None
        """The agent shown last time (none offline: tests and scenes stay as fed)."""
        if self.memory is not None and address is not None:
            self.main_screen.remembered = self.memory.recall(str(address))
        self._to_remember: str | None = None
        self._remembering: Timer | None = None

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            self._typing_starts_a_message(event)
        await super().on_event(event)

    def _typing_starts_a_message(self, event: events.Key) -> None:
        """A character typed while the list or the conversation has the
        focus: the composer takes the focus before the key is routed, so
        this key and every one after it reach the composer in the order
        typed. (Passed on by the widget instead, a key could land after keys
        typed after it, once the focus had moved: "/limi 0.t5".) Where the
        composer cannot take the focus yet (a tiny screen showing the list),
        the widget passes the key on itself."""
        focused = self.focused
        if isinstance(focused, AgentList | ConversationPane) and types_text(focused, event):
            self.main_screen.focus_composer()

    def on_mount(self) -> None:
        heap.hold()
        self.set_interval(heap.FULL_PASS_S, self._full_pass_due)
        self.push_screen(self.main_screen)
        if self.is_web:  # `plane web`: its banners speak of the page, not a terminal
            self.link.in_browser = True
        if self.address is not None:
            self.run_worker(self.link.run(), name="plane-link", exit_on_error=False)

    def on_unmount(self) -> None:
        self._remember_now()
        heap.release()

    def _full_pass_due(self) -> None:
        """The collector's full pass, just after the next screen update (see heap.py)."""
        self.call_after_refresh(heap.full_pass)

    @on(AgentList.Selected)
    def _selected(self, event: AgentList.Selected) -> None:
        if self.memory is None:
            return
        self._to_remember = event.agent
        if self._remembering is not None:
            self._remembering.stop()
        self._remembering = self.set_timer(REMEMBER_S, self._remember_now)

    def _remember_now(self) -> None:
        self._remembering = None
        agent, self._to_remember = self._to_remember, None
        if agent is not None and self.memory is not None and self.address is not None:
            self.memory.remember(str(self.address), agent)

    @on(PlaneConnected)
    def _connected(self, event: PlaneConnected) -> None:
        self.main_screen.lost = None
        self.commands.load_plane(event.snapshot.commands)
        self.store.load(event.snapshot)
        heap.settle()

    @on(PlaneLost)
    def _lost(self, event: PlaneLost) -> None:
        if event.final:
            self.main_screen.lost = event.reason
            return
        wait = f"{event.retry_in:.0f}s" if event.retry_in >= 1 else "a moment"
        self.main_screen.lost = (
            f"{event.reason} Reconnecting to {event.address} in {wait} (try {event.attempt})."
        )

    @on(PlaneEvent)
    def _event(self, event: PlaneEvent) -> None:
        self.store.apply(event.event)

    def action_spend(self) -> None:
        """Spend over time for the selected agent (tui/screens/spend.py)."""
        if not isinstance(self.screen, SpendScreen):
            chosen = self.main_screen.selected
            grouped = bool(self.store.groups)
            self.push_screen(
                SpendScreen(self.link, chosen, self.store.agent_changed, grouped=grouped)
            )

    def action_help(self) -> None:
        """The keys and the rows' legend (F1 anywhere, `?` in the list); F1 again closes it."""
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
        else:
            self.push_screen(HelpScreen())

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"
