"""Keys that start a message wherever the operator happens to be.

Focus on the agent list or the conversation is focus on reading, yet a key
that types something means the operator has started to write: it should
land in the composer, not be lost. Keys a binding wants (the list's `n`,
the pane's Enter and arrows, the screen's and the app's) keep their meaning.
"""

from __future__ import annotations

from textual import events
from textual.widget import Widget


def types_text(widget: Widget, event: events.Key) -> bool:
    """Whether the key types a character: printable, and wanted by no
    active binding of `widget`'s screen."""
    if not event.is_printable or event.character is None:
        return False
    bound = widget.screen.active_bindings
    return not any(key in bound for key in event.aliases)


def typed(widget: Widget, event: events.Key) -> str | None:
    """The character of a key that `types_text`, with the key taken
    (stopped, its default prevented) so it is typed only where it is passed
    on; else None."""
    if not types_text(widget, event) or event.character is None:
        return None
    event.stop()
    event.prevent_default()
    return event.character
