"""The repo map: files read are summarised into REPO_MAP.json, and the
`## Repo Map` layer is capped and cache-safe (same map, same bytes)."""

import json
import logging
import os
from pathlib import Path

import pytest

from plane.config import RepoMapConfig
from plane.economy.repomap.map import MAP_NAME, layer, note_read
from plane.economy.repomap.summarise import summarise

ON = RepoMapConfig(enabled=True)

CONFIG_PY = '''"""The agents.yaml models.

More words that are not the purpose.
"""

import os

LIMIT = 5


class Config:
    def method(self):
        pass


def _private():
    pass


async def load_config(path):
    def inner():
        pass
'''


def write(workspace: Path, path: str, text: str) -> str:
    """A real file in the workspace; returns its text, as read_file would see it."""
    target = workspace / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return text


def saved(workspace: Path) -> dict:
    return json.loads((workspace / MAP_NAME).read_text())


def test_a_read_python_file_is_summarised_by_its_docstring_and_top_level_symbols(tmp_path):
    text = write(tmp_path, "plane/config.py", CONFIG_PY)
    assert note_read(tmp_path, "plane/config.py", text, ON) is True
    entry = saved(tmp_path)["files"]["plane/config.py"]
    assert entry["purpose"] == "The agents.yaml models."
    assert entry["symbols"] == ["Config", "load_config"]  # no methods, nested or private defs
    assert entry["lines"] == CONFIG_PY.count("\n")
    assert len(entry["sha256"]) == 16
    section = layer(tmp_path, ON)
    assert section.startswith("## Repo Map\n")
    assert "- plane/config.py (22): The agents.yaml models. [Config, load_config]" in section


@pytest.mark.parametrize(
    ("path", "text", "purpose", "symbols"),
    [
        (
            "web/app.ts",
            "// The web client's entry point.\nimport x from 'y';\n"
            "export async function start() {}\nexport class App {}\nexport interface Props {}\n"
            "const limit = 3;\n  function nested() {}\n",
            "The web client's entry point.",
            ("start", "App", "Props", "limit"),
        ),
        (
            "cmd/main.go",
            "// Package main serves the plane.\npackage main\n\nfunc main() {}\n"
            "func (s *Server) Serve() error {}\ntype Server struct {}\n",
            "Package main serves the plane.",
            ("main", "Serve", "Server"),
        ),
        (
            "src/lib.rs",
            "//! Ledger maths.\npub fn total() {}\nstruct Row;\npub(crate) enum Kind {}\n",
            "Ledger maths.",
            ("total", "Row", "Kind"),
        ),
        (
            "lib/store.c",
            "/*\n * The on-disk store.\n */\n#include <stdio.h>\n\n"
            "struct row {\nint main(int argc, char **argv)\n{\n  if (x) {\n",
            "The on-disk store.",
            ("row", "main"),
        ),
        (
            "run.sh",
            "#!/bin/sh\n# Starts the daemon.\nstart() {\n}\nfunction stop {\n}\n",
            "Starts the daemon.",
            ("start", "stop"),
        ),
        (
            "agents.yaml",
            "# plane's configuration.\ndefaults:\n  limitUsd: 5\nagents:\n  demo: {}\n",
            "plane's configuration.",
            ("defaults", "agents"),
        ),
        (
            "pyproject.toml",
            "[project]\nname = 'x'\n[tool.ruff]\n[[tool.contracts]]\n",
            "",
            ("project", "tool.ruff", "tool.contracts"),
        ),
        (
            "Makefile",
            "# The README's commands.\nrun: .venv\n\tplane\nX := 1\ntest:\n",
            "The README's commands.",
            ("run", "test"),
        ),
        (
            "README.md",
            "# plane\n\nA control plane.\n\n## Two commands\n### Deeper\n## The TUI\n",
            "plane",
            ("Two commands", "The TUI"),
        ),
        ("data.json", '{"b": 1, "a": {"deep": 2}}', "", ("b", "a")),
        ("NOTES", "\n\nRemember the milk.\nAnd the bread.\n", "Remember the milk.", ()),
    ],
)
def test_each_kind_of_file_gets_a_purpose_and_symbols(path, text, purpose, symbols):
    assert summarise(path, text) == (purpose, symbols)


def test_a_python_page_that_does_not_parse_still_gets_its_symbols():
    text = "# Half a file.\nclass Kept:\n    def cut_off(self):\n        return (\ndef _hidden():\n"
    assert summarise("half.py", text) == ("Half a file.", ("Kept",))


def test_the_purpose_is_one_line_and_capped():
    purpose, _ = summarise("long.py", '"""' + "word " * 100 + '"""\n')
    assert len(purpose) == 100 and purpose.endswith("…") and "\n" not in purpose


def test_the_layer_orders_files_by_path_whatever_order_they_were_read_in(tmp_path):
    for name in ("b.py", "c.py", "a.py"):
        note_read(tmp_path, name, write(tmp_path, name, f'"""{name} module."""\n'), ON)
    lines = layer(tmp_path, ON).splitlines()[2:]
    assert [line.split()[1] for line in lines] == ["a.py", "b.py", "c.py"]


def test_rereading_an_unchanged_file_changes_nothing(tmp_path):
    text = write(tmp_path, "plane/config.py", CONFIG_PY)
    note_read(tmp_path, "plane/config.py", text, ON)
    before_map, before_layer = (tmp_path / MAP_NAME).read_bytes(), layer(tmp_path, ON)
    stamp = (tmp_path / MAP_NAME).stat().st_mtime_ns
    assert note_read(tmp_path, "./plane/config.py", text, ON) is False
    assert (tmp_path / MAP_NAME).read_bytes() == before_map
    assert (tmp_path / MAP_NAME).stat().st_mtime_ns == stamp  # not even rewritten
    assert layer(tmp_path, ON) == before_layer


def test_a_changed_file_updates_its_entry_and_the_layer(tmp_path):
    note_read(tmp_path, "a.py", write(tmp_path, "a.py", "def old():\n    pass\n"), ON)
    before = layer(tmp_path, ON)
    assert note_read(tmp_path, "a.py", write(tmp_path, "a.py", "def new():\n    pass\n"), ON)
    after = layer(tmp_path, ON)
    assert "[new]" in after and "old" not in after and after != before


def test_the_same_reads_give_the_same_bytes_in_two_workspaces(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    for workspace in (first, second):
        for name in ("z.py", "a.md", "m/x.go"):
            text = write(workspace, name, "# Some file.\n")
            note_read(workspace, name, text, ON)
    assert (first / MAP_NAME).read_bytes() == (second / MAP_NAME).read_bytes()
    assert layer(first, ON) == layer(second, ON)
    raw = (first / MAP_NAME).read_text()
    assert raw == json.dumps(json.loads(raw), sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def test_the_layer_is_the_same_bytes_every_time_it_is_built(tmp_path):
    note_read(tmp_path, "a.py", write(tmp_path, "a.py", CONFIG_PY), ON)
    assert len({layer(tmp_path, ON) for _ in range(5)}) == 1


def test_only_the_newest_max_files_are_kept(tmp_path):
    settings = RepoMapConfig(enabled=True, max_files=3)
    for n in range(5):
        note_read(tmp_path, f"f{n}.py", write(tmp_path, f"f{n}.py", f"X = {n}\n"), settings)
    assert sorted(saved(tmp_path)["files"]) == ["f2.py", "f3.py", "f4.py"]
    # Re-reading an old, unchanged file does not make it newer...
    note_read(tmp_path, "f2.py", "X = 2\n", settings)
    note_read(tmp_path, "f5.py", write(tmp_path, "f5.py", "X = 5\n"), settings)
    assert sorted(saved(tmp_path)["files"]) == ["f3.py", "f4.py", "f5.py"]
    # ...but changing one does.
    note_read(tmp_path, "f3.py", write(tmp_path, "f3.py", "X = 33\n"), settings)
    note_read(tmp_path, "f6.py", write(tmp_path, "f6.py", "X = 6\n"), settings)
    assert sorted(saved(tmp_path)["files"]) == ["f3.py", "f5.py", "f6.py"]


def test_a_file_over_max_file_bytes_is_not_summarised(tmp_path):
    settings = RepoMapConfig(enabled=True, max_file_bytes=1000)
    big = write(tmp_path, "big.py", "x = 1\n" * 200)
    assert note_read(tmp_path, "big.py", big, settings) is False
    assert not (tmp_path / MAP_NAME).exists()
    # A read shows a page, but the file on disk is what is measured.
    write(tmp_path, "paged.py", "x = 1\n" * 200)
    page = "x = 1\n" * 9 + "x = 1\n[lines 1–10 of 200; read on with offset=11]"
    assert note_read(tmp_path, "paged.py", page, settings) is False


def test_a_file_that_grows_past_the_cap_leaves_the_map(tmp_path):
    settings = RepoMapConfig(enabled=True, max_file_bytes=1000)
    note_read(tmp_path, "a.py", write(tmp_path, "a.py", "def f():\n    pass\n"), settings)
    assert note_read(tmp_path, "a.py", write(tmp_path, "a.py", "x = 1\n" * 200), settings)
    assert saved(tmp_path)["files"] == {}
    assert layer(tmp_path, settings) == ""


def test_the_layer_keeps_within_max_snapshot_chars_and_shows_the_newest(tmp_path):
    settings = RepoMapConfig(enabled=True, max_snapshot_chars=600)
    for n in range(30):
        name = f"pkg/module_{n:02}.py"
        note_read(tmp_path, name, write(tmp_path, name, f'"""Module number {n}."""\n'), settings)
    section = layer(tmp_path, settings)
    assert len(section) <= 600
    shown = [line.split()[1] for line in section.splitlines()[2:-1]]
    assert shown == sorted(shown) and "pkg/module_29.py" in shown
    assert "pkg/module_00.py" not in shown
    assert section.endswith(f"- … {30 - len(shown)} more in {MAP_NAME}")


def test_a_line_shows_the_symbols_that_fit_and_counts_the_rest(tmp_path):
    text = "".join(f"def function_number_{n}():\n    pass\n" for n in range(40))
    note_read(tmp_path, "many.py", write(tmp_path, "many.py", text), ON)
    line = layer(tmp_path, ON).splitlines()[2]
    assert len(line) <= 200 and line.startswith("- many.py (80) [function_number_0, ")
    assert line.endswith("]") and ", +" in line


def test_a_cap_too_small_for_any_file_gives_no_layer(tmp_path):
    note_read(tmp_path, "a.py", write(tmp_path, "a.py", CONFIG_PY), ON)
    assert layer(tmp_path, RepoMapConfig(enabled=True, max_snapshot_chars=50)) == ""


def test_disabled_does_nothing(tmp_path):
    off = RepoMapConfig()
    assert note_read(tmp_path, "a.py", write(tmp_path, "a.py", CONFIG_PY), off) is False
    assert not (tmp_path / MAP_NAME).exists()
    note_read(tmp_path, "a.py", CONFIG_PY, ON)
    assert layer(tmp_path, off) == ""


def test_an_empty_map_gives_no_layer(tmp_path):
    assert layer(tmp_path, ON) == ""


@pytest.mark.parametrize(
    "garbage",
    [
        b"{not json",
        b"\xff\xfe",
        b"[]",
        b'{"version": 1, "seq": 1, "files": {"a.py": {"purpose": 3}}}',
        b'{"version": 99, "seq": 0, "files": {}}',
        b'{"version": 1, "seq": 1, "files": {"../../etc/passwd": '
        b'{"lines": 1, "purpose": "", "seq": 1, "sha256": "0123456789abcdef", "symbols": []}}}',
        b'{"version": 1, "seq": 1, "files": {"a.py": {"lines": 1, "purpose": "a\\nb", '
        b'"seq": 1, "sha256": "0123456789abcdef", "symbols": []}}}',
    ],
)
def test_a_corrupt_map_is_logged_and_started_over(tmp_path, caplog, garbage):
    (tmp_path / MAP_NAME).write_bytes(garbage)
    with caplog.at_level(logging.WARNING, logger="plane.economy.repomap.map"):
        assert layer(tmp_path, ON) == ""
        assert note_read(tmp_path, "a.py", write(tmp_path, "a.py", CONFIG_PY), ON) is True
    assert "starting the repo map over" in caplog.text
    assert list(saved(tmp_path)["files"]) == ["a.py"]
    assert "[Config, load_config]" in layer(tmp_path, ON)


def test_a_map_that_is_a_directory_never_fails_the_turn(tmp_path, caplog):
    (tmp_path / MAP_NAME).mkdir()
    with caplog.at_level(logging.WARNING, logger="plane.economy.repomap.map"):
        assert layer(tmp_path, ON) == ""
        assert note_read(tmp_path, "a.py", write(tmp_path, "a.py", CONFIG_PY), ON) is False
    assert "Could not write" in caplog.text


def test_a_symlinked_map_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere.json"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    note_read(workspace, "a.py", write(workspace, "a.py", CONFIG_PY), ON)
    os.replace(workspace / MAP_NAME, elsewhere)
    (workspace / MAP_NAME).symlink_to(elsewhere)
    assert layer(workspace, ON) == ""
    note_read(workspace, "b.py", write(workspace, "b.py", "X = 1\n"), ON)
    assert not (workspace / MAP_NAME).is_symlink()  # replaced, not written through
    assert list(json.loads(elsewhere.read_text())["files"]) == ["a.py"]


def test_the_map_is_written_by_renaming_a_temporary_file(tmp_path):
    note_read(tmp_path, "a.py", write(tmp_path, "a.py", CONFIG_PY), ON)
    assert sorted(p.name for p in tmp_path.iterdir()) == [MAP_NAME, "a.py"]


@pytest.mark.parametrize("path", ["../outside.py", "/etc/passwd", "", ".", "a\nb.py", MAP_NAME])
def test_paths_outside_the_workspace_or_the_map_itself_are_not_recorded(tmp_path, path):
    assert note_read(tmp_path, path, CONFIG_PY, ON) is False
    assert not (tmp_path / MAP_NAME).exists()


def test_an_absolute_path_inside_the_workspace_is_recorded_relative(tmp_path):
    write(tmp_path, "src/a.py", CONFIG_PY)
    assert note_read(tmp_path, str(tmp_path / "src" / "a.py"), CONFIG_PY, ON)
    assert list(saved(tmp_path)["files"]) == ["src/a.py"]


def test_read_file_pages_are_understood(tmp_path):
    write(tmp_path, "long.py", '"""Long."""\n' + "x = 1\n" * 50)
    first = '"""Long."""\nx = 1\n[lines 1–2 of 51; read on with offset=3]'
    assert note_read(tmp_path, "long.py", first, ON)
    entry = saved(tmp_path)["files"]["long.py"]
    assert (entry["purpose"], entry["lines"]) == ("Long.", 51)
    later = "x = 1\nx = 1\n[lines 3–4 of 51; read on with offset=5]"
    assert note_read(tmp_path, "long.py", later, ON) is False  # the middle is no summary
    assert saved(tmp_path)["files"]["long.py"] == entry
    write(tmp_path, "empty.py", "")
    assert note_read(tmp_path, "empty.py", "(`empty.py` is empty.)", ON)
    assert saved(tmp_path)["files"]["empty.py"]["purpose"] == ""
