"""Output the compressor was not tuned on: each rule on real output made on this machine.

Search locations survive a fold; what a line is wins over what it looks like;
a format never hands a text back to the one that gave it; a location is any
`dir/name.ext`; warnings about different subjects are not repeats; refs are
found as words; the package imports lazily; the runtime's command reaches
the classifier.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from plane.economy.compress import compress, engine, levels, refs_in
from plane.economy.compress.classify import classify
from plane.economy.compress.context import Compressor, Context
from plane.economy.compress.formats import compressor
from plane.economy.compress.locations import locations
from plane.economy.compress.markers import MARKER_RE
from plane.economy.compress.plan import Plan
from plane.economy.compress.salience import guard
from tests.plane.compress.helpers import (
    FIXTURES,
    fixture,
    grep_defs,
    kept_lines,
    round_trips,
    run,
)

ROOT = Path(__file__).resolve().parents[3]
_MATCH = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+):")


def _service_log(tmp_path: Path, jobs: int) -> str:
    """A worker's log from a real run of the logging module: ISO timestamps with a `T`, a few
    warnings about different shard files, one error, and a last line saying how it ended."""
    program = tmp_path / "worker.py"
    program.write_text(
        "import logging, sys, time\n"
        "tick = [0.0]\n"
        "time.time = lambda: 1741082400.0 + tick[0]\n"
        "logging.Formatter.converter = time.gmtime\n"
        "logging.basicConfig(stream=sys.stdout, level=logging.INFO, datefmt='%Y-%m-%dT%H:%M:%S',"
        " format='%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s')\n"
        "log = logging.getLogger('worker')\n"
        f"for n in range({jobs}):\n"
        "    tick[0] += 0.37\n"
        "    log.info('processed job-%03d in %d ms (queue=%d)', n % 97, 20 + n % 50, n % 61)\n"
        "    if n % 500 == 250:\n"
        "        log.warning('slow disk on /var/lib/worker/shard-%d.db: %d ms', n // 500, 900)\n"
        f"    if n == {jobs // 2}:\n"
        "        log.error('lost connection to db-replica-2.internal:5432; retrying')\n"
        f"log.info('shutting down after %d jobs', {jobs})\n"
    )
    done = subprocess.run([sys.executable, str(program)], capture_output=True, text=True)
    return done.stdout


# 1. grep/rg locations survive a fold


def test_folded_search_matches_keep_every_location() -> None:
    text, result = run("grep_self.txt")
    assert result.compressor == "search" and result.chars_out < result.chars_in
    markers = [m.group(0) for m in MARKER_RE.finditer(result.text)]
    assert any("more match" in m for m in markers)
    shown = "\n".join(kept_lines(result))
    for line in text.split("\n"):
        found = _MATCH.match(line)
        if found is None or found.group(0) in shown:
            continue
        path, number = found.group("path"), found.group("line")
        listed = re.compile(re.escape(path) + r":(?:\d+,)*" + number + r"\b")
        assert any(listed.search(m) for m in markers), f"{path}:{number} is hidden"
    assert round_trips(text, result)


def test_a_search_over_a_whole_tree_shows_each_file_once_past_the_budget() -> None:
    # `grep -rn 'def '` over a package: dozens of files, each with a few matches. The first
    # files keep four matches each; once 40 are kept, a file's lines are listed in a marker
    # by file and line number, never hidden.
    text = grep_defs()
    result = compress(text, command="grep -rn 'def ' .")
    assert result.compressor == "search"
    shown = kept_lines(result)
    files = {found.group("path") for found in map(_MATCH.match, text.split("\n")) if found}
    # a match that says no error costs its text: past the budget, one per file, and short
    # ones fold as well (a run of them costs one path and its line numbers)
    matches = [
        line for line in shown if _MATCH.match(line) and not levels.ERROR_LINE_RE.search(line)
    ]
    assert len(files) > 20 and len(matches) <= 40 + len(files)
    markers = [m.group(0) for m in MARKER_RE.finditer(result.text)]
    for line in text.split("\n"):
        found = _MATCH.match(line)
        if found is None or found.group(0) in "\n".join(shown):
            continue
        path, number = found.group("path"), found.group("line")
        listed = re.compile(re.escape(path) + r":(?:\d+,)*" + number + r"\b")
        assert any(listed.search(m) for m in markers), f"{path}:{number} is hidden"
    assert round_trips(text, result)


# 2. what a line is, before what it looks like


def test_a_log_whose_lines_start_with_iso_dates_is_a_log_and_keeps_its_tail(
    tmp_path: Path,
) -> None:
    text = _service_log(tmp_path, jobs=3000)
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", text)
    assert classify(text) == "logs"
    assert classify(text, "rg -n processed worker.log") == "logs"  # no `path:line:` match
    result = compress(text, command="python3 worker.py")
    assert result.compressor == "logs"
    shown = result.text.split("\n")
    last = text.rstrip("\n").split("\n")[-1]
    assert last in shown and "shutting down after 3000 jobs" in last
    assert any("lost connection to db-replica-2.internal:5432" in line for line in shown)
    assert len(kept_lines(result)) >= 8  # first line, warnings, error, tail: not all markers
    assert round_trips(text, result)


def test_one_line_json_with_html_in_its_strings_is_json() -> None:
    page = fixture("pydoc_textwrap.html.txt")
    text = json.dumps([{"module": "textwrap", "html": page}, {"module": "none", "html": ""}])
    assert "\n" not in text
    assert classify(text) == "json"
    assert classify(text, "cat pages.json") == "json"
    result = compress(text, command="python3 dump_pages.py")
    assert result.compressor == "json"
    assert "HTML shown as text" not in result.text
    assert round_trips(text, result)


def test_python_read_with_no_command_is_source_not_config() -> None:
    # `self.x = y` and `# comment` lines look like config; `def f(x):` never is. A
    # Python file piped to `plane compress` with no --command was kept almost whole.
    import argparse

    done = subprocess.run(
        ["head", "-c", "20480", argparse.__file__], capture_output=True, text=True, check=True
    )
    text = done.stdout[: done.stdout.rfind("\n") + 1]  # cut at a line: it need not parse
    assert classify(text) == "source"
    result = compress(text)
    assert result.compressor == "source"
    assert 1 - result.chars_out / result.chars_in > 0.4
    assert round_trips(text, result)


# 3. no hand-back between compressors; an exception is never silent


def test_python_its_parser_rejects_does_not_bounce_between_source_and_mixed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    text = fixture("python_defs.txt")  # method signatures only: every line indented
    with caplog.at_level(logging.ERROR):
        result = compress(text, command="cat defs.py")
    assert not caplog.records  # no RecursionError caught and swallowed
    # signatures with no bodies: nothing to elide, and nothing is lost saying so
    assert result.note == "not smaller" and result.compressor == "source"


def test_the_nesting_callback_refuses_a_text_handed_back(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = fixture("python_defs.txt").split("\n")
    ran: list[tuple[str, int]] = []
    real = compressor  # as the engine looks it up

    def spying(name: str) -> Compressor:
        def run(part: list[str], context: Context) -> Plan:
            ran.append((name, len(part)))
            return real(name)(part, context)

        return run

    monkeypatch.setattr(engine, "compressor", spying)
    plan = engine.context().compress(lines, "source")
    assert plan.lines == lines
    # source hands the rejected file to mixed, whose one block is the same text: mixed may
    # hand it on, but never back to source, which already has it
    assert [name for name, _ in ran] == ["source", "mixed"]
    assert ran[0][1] == ran[1][1] == len(lines)


# 4. a location is any dir/name.ext


def test_the_guard_keeps_any_dir_name_ext_but_not_caches_hashes_or_versions() -> None:
    lines = [
        "copying tui/app.py -> build/lib/tui",
        *[f"copying tui/widgets/row{n}.py -> build/lib/tui/widgets" for n in range(6)],
        "copying tui/screens/main.tcss -> build/lib/tui/screens",
        "copying plane/__pycache__/cli.cpython-311.pyc -> build/lib/plane/__pycache__",
        "Downloading https://files.pythonhosted.org/packages/3c/ab/"
        + "96f2" * 15
        + "/rich-13.7.1-py3-none-any.whl",
        "Using numpy/1.26.4 from the cache",
        "done",
    ]
    plan = Plan(list(lines))
    plan.fold(1, len(lines) - 1, "similar")
    guarded = guard(plan)
    folded = guarded.folded_mask()
    shown = [line for line, hidden in zip(lines, folded, strict=True) if not hidden]
    assert "copying tui/screens/main.tcss -> build/lib/tui/screens" in shown
    assert not any("__pycache__" in line or "pythonhosted" in line for line in shown)
    assert not any("numpy/1.26.4" in line for line in shown)
    assert locations("see assets/logo.webp and docs/index.html:12") == [
        "assets/logo.webp",
        "docs/index.html:12",
    ]


# 5. warnings about different subjects are not repeats; missing files are errors


def test_warnings_about_different_files_each_stay_visible(tmp_path: Path) -> None:
    text = _service_log(tmp_path, jobs=3000)
    warned = sorted(set(re.findall(r"/var/lib/worker/shard-\d+\.db", text)))
    assert len(warned) == 6
    result = compress(text, command="python3 worker.py")
    shown = "\n".join(kept_lines(result))
    assert all(path in shown for path in warned)


def test_no_such_file_and_not_found_count_as_errors_in_labels(tmp_path: Path) -> None:
    missing = [str(tmp_path / f"gone-{n}.txt") for n in range(40)]
    done = subprocess.run(["ls", *missing], capture_output=True, text=True)
    lines = done.stderr.rstrip("\n").split("\n")
    assert len(lines) == 40 and all("No such file or directory" in line for line in lines)
    assert levels.count_levels(lines) == (40, 0)
    shell = subprocess.run(
        ["bash", "-c", "no-such-command-1; no-such-command-2"], capture_output=True, text=True
    )
    assert levels.count_levels(shell.stderr.rstrip("\n").split("\n")) == (2, 0)
    assert levels.count_levels(["test_not_found_handler ... ok"]) == (0, 0)


def test_a_linters_report_keeps_each_rules_first_diagnostics_and_lists_the_rest(
    tmp_path: Path,
) -> None:
    # `ruff --select ALL --output-format concise` on a standard library module: a line per
    # diagnostic, the same few rules at hundreds of places. Each rule's first stays (and
    # its next two, unless they repeat its message); the rest fold, their codes and each
    # `file:line` listed in the marker.
    import shlex

    source = tmp_path / "shlex.py"
    source.write_bytes(Path(shlex.__file__).read_bytes())
    ruff = Path(sys.executable).with_name("ruff")
    args = ["check", "--no-cache", "--isolated", "--select", "ALL", "--output-format", "concise"]
    done = subprocess.run(
        [str(ruff), *args, "shlex.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    text = done.stdout
    rule = re.compile(r"^shlex\.py:(?P<line>\d+):\d+: (?P<code>[A-Z]+\d+) ")
    assert sum(1 for line in text.split("\n") if rule.match(line)) > 100
    result = compress(text, command="ruff check --select ALL shlex.py")
    assert result.compressor == "diagnostics"
    assert 1 - result.chars_out / result.chars_in > 0.4  # 15% before
    shown = kept_lines(result)
    first: set[str] = set()
    for line in text.split("\n"):
        found = rule.match(line)
        if found and found.group("code") not in first:
            first.add(found.group("code"))
            assert line in shown, f"{line} is its rule's first"
    markers = [m.group(0) for m in MARKER_RE.finditer(result.text)]
    for line in text.split("\n"):
        found = rule.match(line)
        if found is None or line in shown:
            continue
        listed = re.compile(r"shlex\.py:(?:\d+,)*" + found.group("line") + r"\b")
        assert any(found.group("code") in m and listed.search(m) for m in markers), line
    assert round_trips(text, result)


def test_a_linters_full_report_folds_a_rules_later_diagnostics_whole_and_lists_them(
    tmp_path: Path,
) -> None:
    # `ruff --output-format full`: a headline, a `--> file:line:col` line and echoed source
    # per diagnostic. Each rule's first diagnostics stay with their locations; its later
    # ones fold whole, the marker naming the code and each location as printed.
    import shlex

    source = tmp_path / "shlex.py"
    source.write_bytes(Path(shlex.__file__).read_bytes())
    ruff = Path(sys.executable).with_name("ruff")
    args = ["check", "--no-cache", "--isolated", "--select", "ALL", "--output-format", "full"]
    done = subprocess.run(
        [str(ruff), *args, "shlex.py"], cwd=tmp_path, capture_output=True, text=True
    )
    text = done.stdout
    lines = text.split("\n")
    at = re.compile(r"^\s*--> (?P<at>shlex\.py:\d+:\d+)$")
    headline = re.compile(r"^(?P<code>[A-Z]+\d+) ")
    blocks = [
        (m.group("code"), a.group("at"))
        for m, a in zip(map(headline.match, lines), map(at.match, lines[1:]), strict=False)
        if m and a
    ]
    assert len(blocks) > 100
    result = compress(text, command="ruff check --select ALL --output-format full shlex.py")
    assert result.compressor == "diagnostics"
    assert 1 - result.chars_out / result.chars_in > 0.75  # 61% before
    shown = "\n".join(kept_lines(result))
    markers = [m.group(0) for m in MARKER_RE.finditer(result.text)]
    firsts: set[str] = set()
    for code, where in blocks:
        if code not in firsts:
            firsts.add(code)
            assert where in shown, f"{code} at {where} is its rule's first"
        elif where not in shown:
            assert any(code in m and where in m for m in markers), f"{code} at {where}"
    assert round_trips(text, result)


# 6. refs are words


def test_refs_in_ignores_refs_inside_identifiers() -> None:
    text = "blk_k_ABCDEFGHIJ k_ABCDEFGHIJKL [… 3 lines ref:k_0123456789] and k_abcdefghij."
    assert refs_in(text) == ["k_0123456789", "k_abcdefghij"]


# 7. imports: lazy, and only what one call needs


def _modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return set(out.split())


def test_importing_the_cli_module_loads_no_engine_and_no_pydantic() -> None:
    loaded = _modules_after("import plane.economy.compress.cli")
    assert "plane.economy.compress.engine" not in loaded
    assert not any(m.startswith(("pydantic", "asyncio", "plane.wire.protocol")) for m in loaded)


def test_compressing_one_output_loads_only_its_format() -> None:
    loaded = _modules_after(
        "import json\nfrom plane.economy.compress import compress\n"
        "compress(json.dumps([{'id': n, 'name': f'pkg{n}'} for n in range(60)], indent=2))"
    )
    formats = {m for m in loaded if m.startswith("plane.economy.compress.formats.")}
    assert formats == {
        "plane.economy.compress.formats.jsondoc",
        "plane.economy.compress.formats.jsonline",
        "plane.economy.compress.formats.strings",
        "plane.economy.compress.formats.documents",
    }
    assert not any(m.startswith(("pydantic", "plane.wire.protocol")) for m in loaded)


# 8. the runtime's command reaches the classifier


def test_the_run_command_frame_is_kept_and_its_body_compressed_as_what_the_command_printed() -> (
    None
):
    source = fixture("textwrap_py.txt")
    command = FIXTURES["textwrap_py.txt"]
    text = f"$ {command}\n{source}[exit 0 · 0.01s]"
    result = compress(text, command=command)
    assert result.text.startswith(f"$ {command}\n") and result.text.endswith("[exit 0 · 0.01s]")
    assert "...  # [… body" in result.text  # Python parsed: bodies elided, signatures kept
    assert round_trips(text, result)
    assert compress(text).text == result.text  # the frame itself says what printed the body
