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
import textwrap
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


def sections() -> list[Section]:
    """Everything the help panel shows, top to bottom."""
    # Imported here: the screen imports this module to show it.
    from tui.app import PlaneApp
    from tui.screens.main import MainScreen
    from tui.screens.manage import LIST_KEYS, ManageAgents
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
    from tui.widgets.composer import NEWLINE_KEYS

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


TEXT_WIDTH = 88
"""Columns of the plain text; a longer description wraps under itself."""


def as_text(parts: list[Section] | None = None, width: int = TEXT_WIDTH) -> str:
    """The help as plain text (the README's "Keys" section): a description
    too long for a line goes on under its own first word, never under the
    key column (a hanging indent)."""
    out: list[str] = []
    for heading, lines in parts if parts is not None else sections():
        column = max((len(k) for k, _ in lines), default=0)
        out.append(heading)
        for keys, what in lines:
            lead = f"  {keys:<{column}}  "
            out.extend(
                textwrap.wrap(
                    what,
                    width=max(width, len(lead) + 20),
                    initial_indent=lead,
                    subsequent_indent=" " * len(lead),
                    break_on_hyphens=False,
                )
            )
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
