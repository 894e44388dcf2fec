"""Where the operator types: messages and slash commands.

A `TextArea`, not a one-line `Input`: a pasted log keeps every line (an
`Input` kept the first and dropped the rest, silently). Enter sends;
shift+enter or ctrl+j starts a new line (most terminals send shift+enter as
plain Enter, so ctrl+j is the one that always works). The area grows with
its text up to a few lines, then scrolls.

Up on the first line and Down on the last walk the input history (what was
sent from here, newest last), keeping what was being written as the line
past the newest. PageUp and PageDown scroll the conversation (`Page`), since
the operator reading an answer is usually typing the next message. The
registry's completion of a slash command shows greyed after the cursor;
Right or End takes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from tui.commands import Commands

NEWLINE_KEYS = ("ctrl+j", "shift+enter", "alt+enter")
"""Keys that start a new line in the composer instead of sending."""
HISTORY_SIZE = 200
"""Sent lines remembered for Up/Down (for this window's life)."""


class Composer(TextArea):
    """The input under the conversation: Enter sends, ctrl+j is a new line."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Cursor up / earlier input", show=False),
        Binding("down", "cursor_down", "Cursor down / later input", show=False),
        Binding("pageup", "page(-1)", "Scroll the conversation up", show=False),
        Binding("pagedown", "page(1)", "Scroll the conversation down", show=False),
        Binding("end,ctrl+e", "cursor_line_end", "Line end / take the completion", show=False),
    ]

    @dataclass
    class Submitted(Message):
        """Enter: `value` is everything written (it may span lines)."""

        composer: Composer
        value: str

        @property
        def control(self) -> Composer:
            return self.composer

    @dataclass
    class Page(Message):
        """PageUp (-1) or PageDown (1): scroll the conversation a page."""

        delta: int

    def __init__(self, commands: Commands, *, id: str | None = None) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            highlight_cursor_line=False,
            placeholder="Message the agent, or /help  (ctrl+j: new line)",
        )
        self._commands = commands
        self.sent: list[str] = []
        """What was sent from here, oldest first."""
        self._browsing: int | None = None
        """The history entry shown, or None: the operator's own text."""
        self._own = ""
        """What was being written when the history walk began."""

    # ── the value, as `Input` called it (tests and the screen read it) ─────

    @property
    def value(self) -> str:
        return self.text

    @value.setter
    def value(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)

    def insert_text_at_cursor(self, text: str) -> None:
        self.insert(text)

    def remember(self, text: str) -> None:
        """Add a sent line to the history (not twice in a row)."""
        if text and (not self.sent or self.sent[-1] != text):
            self.sent.append(text)
            del self.sent[:-HISTORY_SIZE]
        self._browsing = None

    # ── keys ───────────────────────────────────────────────────────────────

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self._browsing = None
            self.post_message(self.Submitted(self, self.text))
        elif event.key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self.insert("\n")

    def update_suggestion(self) -> None:
        """The rest of a slash command's name, while only its start is typed."""
        text = self.text
        at_end = self.cursor_location == self.document.end
        whole = self._commands.completion(text) if at_end and "\n" not in text else None
        self.suggestion = whole[len(text) :] if whole else ""

    def action_cursor_up(self, select: bool = False) -> None:
        if not select and self.cursor_at_first_line and self.sent:
            self._walk(-1)
        else:
            super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        if not select and self.cursor_at_last_line and self._browsing is not None:
            self._walk(1)
        else:
            super().action_cursor_down(select)

    def action_cursor_line_end(self, select: bool = False) -> None:
        if self.suggestion and not select:
            self.insert(self.suggestion)
        else:
            super().action_cursor_line_end(select)

    def action_page(self, delta: int) -> None:
        self.post_message(self.Page(delta))

    def _walk(self, step: int) -> None:
        """Show the history entry `step` away; past the newest, the own text."""
        if self._browsing is None:
            self._own = self.text
            here = len(self.sent)
        else:
            here = self._browsing
        there = max(0, min(len(self.sent), here + step))
        self._browsing = None if there == len(self.sent) else there
        self.value = self._own if self._browsing is None else self.sent[there]
