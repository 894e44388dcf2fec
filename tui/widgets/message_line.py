"""One message of a conversation: time, who, and what was said.

The kind of message is a class (`-operator`, `-agent`, `-plane`, `-ask`,
`-cost`, `-tool`, and `-held` for what waited for a hold to end), so how each
reads is decided in `app.tcss`. Long or formatted agent answers render as
Markdown; everything else is plain text, never parsed as markup (an agent
can write `[red]` and it shows as typed).
"""

from __future__ import annotations

import re

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Markdown, Static

from plane.protocol import Message
from tui.formatting import clock_time, usage_line

MARKDOWN_HINT = re.compile(r"(^|\n)(#{1,6} |[-*] |\d+\. |```|> )|\*\*|`[^`]+`|\n\n")
LONG = 240
"""An agent answer this long (or with Markdown in it) renders as Markdown."""


def speaker(message: Message) -> str:
    """The name in the second column."""
    if message.kind == "operator":
        return "you"
    if message.kind == "plane":
        return "plane"
    if message.kind == "cost":
        return ""
    return message.agent


def wants_markdown(message: Message) -> bool:
    return message.kind == "agent" and (
        len(message.text) >= LONG or MARKDOWN_HINT.search(message.text) is not None
    )


def body_text(message: Message) -> str:
    if message.kind == "cost" and (message.cost_usd is not None or message.usage is not None):
        return usage_line(message.cost_usd, message.usage)
    if message.kind == "ask":
        return f"‹ask› {message.text}"
    if message.kind == "tool":
        return f"⚙ {message.text}"
    return message.text


class MessageLine(Horizontal):
    """A message as a row of three columns: time, who, text."""

    def __init__(self, message: Message, *, who_width: int = 6) -> None:
        classes = f"-{message.kind}" + (" -held" if message.held else "")
        super().__init__(classes=classes)
        self.message = message
        self.who_width = who_width

    def compose(self) -> ComposeResult:
        message = self.message
        stamp = "" if message.kind == "cost" else clock_time(message.at)
        yield Static(stamp, classes="stamp")
        who = Static(Content(speaker(message)).truncate(self.who_width, ellipsis=True),
                     classes="who")
        who.styles.width = self.who_width + 1
        yield who
        if wants_markdown(message):
            yield Markdown(message.text, classes="body", open_links=False)
        else:
            yield Static(Content(body_text(message)), classes="body")
        if message.held:
            yield Static("held", classes="badge")
