"""The help panel: this app's keys and the rows' legend, over the screen.

Opened by F1 anywhere or `?` in the agent list; Esc, F1, `?` or q closes it.

The keys are read from the widgets' own `BINDINGS` (each class's, not what
it inherits: a TextArea's forty cursor keys are not this app's), so a key
added anywhere shows up here with the description it was bound with; the
few keys a widget handles itself (the composer's Enter) are listed beside
them. The legend is the agent list's own table of glyphs. The README's
"Keys" section is this same text (`python -m tui.help` prints it).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.screens.main import MainScreen
from tui.screens.manage import LIST_KEYS, ManageAgents
from tui.screens.styled import StyledOnce
from tui.widgets.agent_list import GLYPH_MEANINGS, MARK_MEANINGS, AgentList
from tui.widgets.composer import NEWLINE_KEYS, Composer
from tui.widgets.conversation import ConversationPane

Section = tuple[str, list[tuple[str, str]]]
"""A heading and its (key, what it does) lines."""

KEY_NAMES = {
    "up": "↑",
    "down": "↓",
    "left": "←",
    "right": "→",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "question_mark": "?",
    "slash": "/",
    "escape": "Esc",
    "enter": "Enter",
    "home": "Home",
    "end": "End",
    "tab": "Tab",
    "delete": "Del",
}


def key_name(key: str) -> str:
    """`ctrl+n` → `ctrl+n`, `pageup` → `PgUp`, `alt+up` → `alt+↑`."""
    *mods, last = key.split("+")
    return "+".join([*mods, KEY_NAMES.get(last, last.upper() if len(last) == 2 else last)])


def bound(bindings: Iterable[object]) -> list[tuple[str, str]]:
    """(keys, description) of each described binding, keys joined by `/`:
    its tooltip where it has one (the footer's word is short, `Delete`; the
    panel has room for what the key does). Two bindings that say the same
    are one line (`Esc / ctrl+c`)."""
    lines: dict[str, list[str]] = {}
    for binding in bindings:
        if not isinstance(binding, Binding) or not binding.description:
            continue
        keys = [key_name(k.strip()) for k in binding.key.split(",")]
        lines.setdefault(binding.tooltip or binding.description, []).extend(keys)
    return [(" / ".join(keys), what) for what, keys in lines.items()]


def own_bindings(cls: type, actions: Iterable[str] | None = None) -> list[object]:
    """The bindings `cls` declares itself (those of `actions`, if given)."""
    wanted = set(actions) if actions is not None else None
    return [
        binding
        for binding in cls.__dict__.get("BINDINGS", [])
        if wanted is None or (isinstance(binding, Binding) and binding.action in wanted)
    ]


CONVERSATION = [
    ("↑ ↓ PgUp PgDn", "Scroll; further up from the top lays out earlier messages"),
    ("Home / End", "The top, the newest"),
]
"""The pane's scrolling keys are Textual's own, so no binding of ours names them."""


def sections(app: type[App[Any]]) -> list[Section]:
    """Everything the help panel shows, top to bottom; `app` is the app's
    class, whose own keys are the first (given, not imported: the app opens
    this screen)."""

    anywhere = [
        ("F1", "This help (also ? in the agent list)"),
        ("Esc", "Close a panel, a form or the palette; else back to the composer"),
        ("Tab / shift+Tab", "Composer → agents → conversation → its lines that open"),
        *bound(own_bindings(MainScreen)),
        *bound(own_bindings(app)),
    ]
    interrupt = bound(own_bindings(ManageAgents, ["interrupt"]))
    composer = [
        ("Enter", "Send"),
        (key_name(NEWLINE_KEYS[0]), _newline()),
        *bound(own_bindings(Composer)),
        *interrupt,
    ]
    agent_list = [
        *bound(own_bindings(AgentList)),
        *bound(own_bindings(ManageAgents, sorted(LIST_KEYS))),
    ]
    conversation = [*CONVERSATION, *bound(own_bindings(ConversationPane)), *interrupt]
    legend = [(glyph, meaning) for glyph, meaning in GLYPH_MEANINGS]
    legend += [(mark, meaning) for mark, meaning in MARK_MEANINGS]
    return [
        ("Anywhere", _unique(anywhere)),
        ("Composer", _unique(composer)),
        ("Agent list", _unique(agent_list)),
        ("Conversation", _unique(conversation)),
        ("Rows", legend),
    ]


def _newline() -> str:
    """The composer's new line: the key every terminal sends first (a key
    column as wide as three names pushed every description to the right)."""
    others = " or ".join(key_name(k) for k in NEWLINE_KEYS[1:])
    return f"New line (also {others}, where the terminal sends them; a paste keeps its lines)"


def _unique(lines: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop a line said twice (Esc is bound on several screens)."""
    seen: set[str] = set()
    kept = []
    for keys, what in lines:
        if keys not in seen:
            seen.add(keys)
            kept.append((keys, what))
    return kept


class HelpScreen(StyledOnce, ModalScreen[None]):
    """Keys by where they work, then what the marks in a row mean."""

    CSS_PATH = Path(__file__).with_name("help.tcss")

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,question_mark,q", "dismiss", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help") as panel:
            panel.border_title = "keys and marks"
            panel.border_subtitle = "Esc closes"
            for heading, lines in sections(type(self.app)):
                yield Static(Content(heading), classes="heading")
                # A grid of two columns, so a description that wraps goes on
                # under itself, never under the keys (a hanging indent).
                with Grid(classes="keys"):
                    for keys, what in lines:
                        yield Static(Content(keys), classes="key")
                        yield Static(Content(what), classes="what")

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
