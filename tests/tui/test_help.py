"""Help: F1 anywhere and `?` in the agent list show this app's keys and the
rows' legend; Esc closes any panel (help, Textual's keys panel, the palette,
the form)."""

from __future__ import annotations

import pytest
from textual.command import CommandPalette

from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, snapshot
from tests.tui.test_conversation_lines import view
from tui.app import PlaneApp
from tui.help import as_text
from tui.screens.help import HelpScreen, sections
from tui.screens.main import MainScreen
from tui.screens.new_agent import NewAgentScreen
from tui.widgets.agent_list import GLYPHS, UNREAD
from tui.widgets.composer import Composer
from tui.widgets.conversation import ConversationPane

SIZE = (100, 40)


def help_text(app: PlaneApp) -> str:
    """Each line of the panel as `keys  what it does`."""
    return "\n".join(f"{keys}  {what}" for keys, what in _help_rows(app))


NAMED = [
    ("d", "Delete it, after a confirmation"),
    ("p", "Pause it, or resume it"),
    ("r", "Rename it"),
    ("e", "Edit its role, model, tools and ceiling"),
    ("Esc / ctrl+c", "While a turn runs: interrupt it"),
]
"""Keys the panel names with what they do: delete, pause, rename, edit and
the interrupt."""


async def started(pilot) -> None:
    feed(pilot.app, snapshot(agent("demo"), agent("scout")))
    await settle(pilot)


async def test_f1_from_the_composer_shows_the_keys_and_every_glyph_and_esc_closes_it() -> None:
    """Among the keys: delete, pause, rename, edit and the interrupt, each
    with what it does."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        text = help_text(app)
        for glyph in GLYPHS.values():
            assert glyph in text, f"{glyph} is not explained"
        for key, what in [("ctrl+j", "New line"), ("ctrl+n", "New agent"), ("?", "Help")]:
            line = next((ln for ln in text.splitlines() if ln.strip().startswith(key)), "")
            assert what in line, f"{key}: {line!r}"
        assert "held at its" in text and "working: a turn is running" in text
        rows = dict(_help_rows(app))
        for key, words in NAMED:
            assert words in rows.get(key, ""), f"{key}: {rows.get(key)!r}"
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen) and isinstance(app.focused, Composer)
        assert app.screen.query_one(Composer).value == "", "F1 and Esc typed nothing"


@pytest.mark.slow
async def test_question_mark_is_help_in_the_list_and_text_in_the_composer() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        await pilot.press("?")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert app.screen.query_one(Composer).value == "?"
        await pilot.press("ctrl+l", "?")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("?")  # the same key closes it
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)


@pytest.mark.slow
async def test_f1_works_over_the_form_and_esc_closes_each_panel_in_turn() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, NewAgentScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)

        await pilot.press("ctrl+p")
        await settle(pilot)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)


@pytest.mark.slow
async def test_esc_closes_textuals_keys_panel() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        app.action_show_help_panel()  # the palette's "Keys" entry
        await settle(pilot)
        assert app.screen.query("HelpPanel")
        await pilot.press("escape")
        await settle(pilot)
        assert not app.screen.query("HelpPanel")


async def test_slash_help_is_one_style_wraps_under_its_column_and_names_every_mark() -> None:
    """The plane's entries and this client's read alike; a long one goes on
    under its own column; the last line names every mark a row can show."""
    app = PlaneApp(None)
    async with app.run_test(size=(80, 40)) as pilot:
        await started(pilot)
        await pilot.press(*"/help", "enter")
        await settle(pilot)
        pane = app.screen.query_one(ConversationPane)
        (text,) = pane.notes
        painted = [line for line in view(pane) if line.strip()]
    entries = [line.split("  ", 1)[-1].strip() for line in text.splitlines()]
    assert len(entries) == len(list(app.commands)) + 1, "every command, then the keys"
    assert all(entry[:1].islower() and not entry.endswith(".") for entry in entries), entries
    column = 6 + text.splitlines()[0].index(entries[0])
    indents = [len(line) - len(line.lstrip()) for line in painted]
    assert len(painted) > len(entries), "at 80 columns some entries wrap"
    assert set(indents) == {6, column}, painted
    marks = text.splitlines()[-1]
    for state, glyph in GLYPHS.items():
        assert f"{glyph} {state}" in marks, f"{glyph} is not named"
    assert f"{UNREAD} unread" in marks


def test_the_legend_says_what_frees_each_hold_and_p_resumes_only_a_loop() -> None:
    """`p` on a row its ceiling holds pauses the agent: only a loop's hold is
    one `p` resumes, and a ceiling may be its own, its group's or the fleet's."""
    rows = dict(sections(PlaneApp))["Rows"]
    held = [what for glyph, what in rows if glyph == GLYPHS["held"]]
    loop = [what for what in held if "loop" in what]
    others = [what for what in held if "loop" not in what]
    assert len(loop) == 1 and "p resumes it" in loop[0], held
    assert others and not any("p resumes" in what for what in others), held
    ceiling = next(what for what in others if "ceiling:" in what)
    assert "its group's" in ceiling and "the fleet's" in ceiling and "00:00 UTC" in ceiling
    assert any("no known price" in what for what in others), held


def test_the_readme_keys_section_is_the_help_panels_text() -> None:
    readme = (__import__("pathlib").Path(__file__).parents[2] / "README.md").read_text()
    assert as_text() in readme, "README's Keys section is stale: python -m tui.help prints it"


def _help_rows(app: PlaneApp) -> list[tuple[str, str]]:
    statics = list(app.screen.query("#help .keys Static"))
    return [
        (str(key.render()), str(what.render()))
        for key, what in zip(statics[::2], statics[1::2], strict=True)
    ]


def test_the_readme_keys_name_delete_pause_rename_edit_and_the_interrupt() -> None:
    """The panel's own rows for them are read in the F1 test above."""
    text = as_text()
    for line in ("  d  ", "  p  ", "  r  ", "  e  ", "  Esc / ctrl+c  "):
        assert line in text, f"the README's keys leave out {line.strip()}"


async def test_a_long_description_wraps_under_itself_not_under_the_keys() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=(60, 50)) as pilot:
        await started(pilot)
        await pilot.press("f1")
        await settle(pilot)
        for grid in app.screen.query("#help .keys"):
            keys = list(grid.query(".key"))
            whats = list(grid.query(".what"))
            assert len({w.region.x for w in whats}) == 1, "descriptions start in one column"
            assert all(w.region.x > k.region.right for k, w in zip(keys, whats, strict=True))
        wrapped = [w for w in app.screen.query("#help .what") if w.region.height > 1]
        assert wrapped, "at 60 columns some description wraps"
    column = 0
    for line in as_text(width=60).splitlines():
        indent = len(line) - len(line.lstrip())
        if indent == 2:  # a key's line: its description starts after the padding
            gap = line.index("  ", 2)
            column = gap + len(line[gap:]) - len(line[gap:].lstrip())
        elif indent > 2:  # a description going on: under its own first word
            assert indent == column, f"under the keys: {line!r}"
