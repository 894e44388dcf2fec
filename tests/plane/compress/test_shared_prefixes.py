"""Rules that remove more without hiding a detail, each on real output made on this machine.

A list of paths writes each directory once, its entries in braces; folded rows list
the files they name; long Python comment blocks keep their first line; a search past
its budget lists further matches by location only.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from plane.economy.compress import compress
from plane.economy.compress.markers import MARKER_RE
from tests.plane.compress.helpers import grep_defs, kept_lines, round_trips


def _expand(word: str) -> list[str]:
    """A shell's brace expansion of one word: `a/{b/{x,y},c}` is a/b/x, a/b/y, a/c."""
    start = word.find("{")
    if start < 0:
        return [word]
    depth, last, alternatives = 0, start + 1, []
    for i in range(start, len(word)):
        depth += {"{": 1, "}": -1}.get(word[i], 0)
        if (word[i] == "," and depth == 1) or (word[i] == "}" and depth == 0):
            alternatives.append(word[last:i])
            last = i + 1
        if word[i] == "}" and depth == 0:
            return [x for a in alternatives for x in _expand(word[:start] + a + word[i + 1 :])]
    return [word]


def _listed(markers: list[str]) -> set[str]:
    """Every path a marker lists, brace expressions expanded."""
    return {path for text in markers for word in text.split() for path in _expand(word)}


def test_a_list_of_paths_keeps_every_path_with_each_directory_written_once() -> None:
    import email

    tree = str(Path(email.__file__).parent)
    text = subprocess.run(["find", tree], capture_output=True, text=True, check=True).stdout
    result = compress(text, command=f"find {tree}")
    assert result.compressor == "listing"
    markers = [m.group(0) for m in MARKER_RE.finditer(result.text)]
    assert any(" paths: " in m and "/{" in m for m in markers)
    shown = set(kept_lines(result)) | _listed(markers)
    hidden = [line for line in text.split("\n") if line and line not in shown]
    assert not hidden, hidden[:3]
    # the shared prefix `/usr/lib/python3.11/email/…` is written once per directory
    assert len(result.text) < 0.6 * len(text)
    assert round_trips(text, result)


def test_a_long_ls_l_keeps_every_file_name_in_view_and_folds_the_rest_of_its_rows() -> None:
    # `ls -l` of the standard library: hundreds of rows, each naming one file. Folded rows
    # keep their names in the marker; their modes, sizes and dates are behind the ref.
    import json

    tree = str(Path(json.__file__).parents[1])
    done = subprocess.run(["ls", "-l", tree], capture_output=True, text=True, check=True)
    text = done.stdout
    result = compress(text, command=f"ls -l {tree}")
    assert result.compressor in ("listing", "table")
    markers = [m.group(0) for m in MARKER_RE.finditer(result.text)]
    assert any(" entries: " in m for m in markers)
    shown = "\n".join(kept_lines(result)) + "\n" + "\n".join(markers)
    names = [line.split()[-1] for line in text.split("\n")[1:] if line.endswith(".py")]
    assert len(names) > 100
    assert all(name in shown for name in names)
    assert len(result.text) < 0.5 * len(text)
    assert round_trips(text, result)


def test_long_python_comment_blocks_keep_their_first_line_and_the_file_still_parses() -> None:
    import ast
    import subprocess as module

    text = Path(module.__file__).read_text(encoding="utf-8")
    result = compress(text, command="cat subprocess.py")
    assert result.compressor == "source"
    markers = [m.group(0) for m in MARKER_RE.finditer(result.text)]
    assert any("comment lines" in m for m in markers)
    ast.parse(result.text)
    # the line that says what the comment is about stays
    assert "# This lists holds Popen instances for which the underlying process had not" in (
        result.text
    )
    assert round_trips(text, result)


_AT = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+):")


def test_a_search_past_its_budget_lists_every_further_match_by_location_only() -> None:
    # `grep -rn 'def '` over a package: the first 40 matches show whole; every later one is
    # its file and line number in a marker, unless it reports an error (the guard keeps it).
    from plane.economy.compress import levels

    text = grep_defs()
    result = compress(text, command="grep -rn 'def ' .")
    assert result.compressor == "search"
    shown = kept_lines(result)
    matches = [line for line in shown if _AT.match(line) and not levels.ERROR_LINE_RE.search(line)]
    assert 0 < len(matches) <= 40
    markers = " ".join(m.group(0) for m in MARKER_RE.finditer(result.text))
    for line in text.split("\n"):
        found = _AT.match(line)
        if found is None or line in shown:
            continue
        path, number = found.group("path"), found.group("line")
        listed = re.compile(re.escape(path) + r":(?:\d+,)*" + number + r"\b")
        assert listed.search(markers), f"{path}:{number} is hidden"
    assert len(result.text) < 0.3 * len(text)
    assert round_trips(text, result)
