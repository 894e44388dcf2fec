"""What the help panel says: this app's keys, and what a row's marks mean.

The keys are read from the widgets' own `BINDINGS` (each class's, not what
it inherits: a TextArea's forty cursor keys are not this app's), so a key
added anywhere shows up here with the description it was bound with; the
few keys a widget handles itself (the composer's Enter) are listed beside
them. The legend is the agent list's own table of glyphs. The README's
"Keys" section is this same text (`python -m tui.help` prints it).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

from textual.binding import Binding

from tui.widgets.agent_list import GLYPH_MEANINGS, MARK_MEANINGS

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
    """(keys, description) of each described binding, keys joined by `/`."""
    lines: list[tuple[str, str]] = []
    for binding in bindings:
        if not isinstance(binding, Binding) or not binding.description:
            continue
        keys = " / ".join(key_name(k.strip()) for k in binding.key.split(","))
        lines.append((keys, binding.description))
    return lines


def own_bindings(cls: type) -> list[object]:
    return list(cls.__dict__.get("BINDINGS", []))


CONVERSATION = [
    ("↑ ↓ PgUp PgDn", "Scroll; further up from the top lays out earlier messages"),
    ("Home / End", "The top, the newest"),
]
"""The pane's scrolling keys are Textual's own, so no binding of ours names them."""


def sections() -> list[Section]:
    """Everything the help panel shows, top to bottom."""
    # Imported here: the screen imports this module to show it.
    from tui.app import PlaneApp
    from tui.screens.main import MainScreen
    from tui.widgets.agent_list import AgentList
    from tui.widgets.composer import NEWLINE_KEYS, Composer
    from tui.widgets.conversation import ConversationPane

    anywhere = [
        ("F1", "This help (also ? in the agent list)"),
        ("Esc", "Close a panel, a form or the palette; else back to the composer"),
        ("Tab / shift+Tab", "Composer → agents → conversation → its lines that open"),
        *bound(own_bindings(MainScreen)),
        *bound(own_bindings(PlaneApp)),
    ]
    composer = [
        ("Enter", "Send"),
        (" / ".join(key_name(k) for k in NEWLINE_KEYS), "New line (a paste keeps its lines)"),
        *bound(own_bindings(Composer)),
    ]
    legend = [(glyph, meaning) for glyph, meaning in GLYPH_MEANINGS]
    legend += [(mark, meaning) for mark, meaning in MARK_MEANINGS]
    return [
        ("Anywhere", _unique(anywhere)),
        ("Composer", _unique(composer)),
        ("Agent list", _unique(bound(own_bindings(AgentList)))),
        (
            "Conversation",
            _unique(
                [
                    *CONVERSATION,
                    *bound(own_bindings(ConversationPane)),
                ]
            ),
        ),
        ("Rows", legend),
    ]


def _unique(lines: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop a line said twice (Esc is bound on several screens)."""
    seen: set[str] = set()
    kept = []
    for keys, what in lines:
        if keys not in seen:
            seen.add(keys)
            kept.append((keys, what))
    return kept


def as_text(parts: list[Section] | None = None) -> str:
    """The help as plain text (the README's "Keys" section)."""
    out: list[str] = []
    for heading, lines in parts if parts is not None else sections():
        width = max((len(k) for k, _ in lines), default=0)
        out.append(heading)
        out.extend(f"  {keys:<{width}}  {what}" for keys, what in lines)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


README_INTRO = (
    "F1 anywhere (or `?` in the agent list) shows this in the app; Esc closes it,\n"
    "and any other panel (Textual's keys panel, the palette, a form). Printed by\n"
    "`python -m tui.help`, from the widgets' own bindings\n"
    "(`python -m tui.help --readme` rewrites this section):\n"
)


def rewrite_readme(path: Path) -> None:
    """Put the help text in the README's `## Keys` section (before
    `## Configuration` if there is none yet)."""
    section = f"## Keys\n\n{README_INTRO}\n```\n{as_text()}```\n\n"
    readme = path.read_text()
    if "\n## Keys\n" in readme:
        readme = re.sub(r"^## Keys\n.*?(?=^## )", lambda _: section, readme, flags=re.S | re.M)
    else:
        readme = readme.replace("## Configuration\n", section + "## Configuration\n", 1)
    path.write_text(readme)


if __name__ == "__main__":
    if sys.argv[1:] == ["--readme"]:
        rewrite_readme(Path(__file__).resolve().parents[1] / "README.md")
    else:
        print(as_text(), end="")
