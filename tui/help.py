"""The help as plain text: `python -m tui.help` prints it, and
`python -m tui.help --readme` writes it in the README's "Keys" section.

What it says is the help panel's (tui/screens/help.py), read from the
widgets' own bindings and the app's.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

from tui.app import PlaneApp
from tui.screens.help import Section, sections

TEXT_WIDTH = 88
"""Columns of the plain text; a longer description wraps under itself."""


def as_text(parts: list[Section] | None = None, width: int = TEXT_WIDTH) -> str:
    """The help as plain text (the README's "Keys" section): a description
    too long for a line goes on under its own first word, never under the
    key column (a hanging indent)."""
    out: list[str] = []
    for heading, lines in parts if parts is not None else sections(PlaneApp):
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
