"""Narrowing: diffs kept to what changed, touching markers merged, details found inside words,
brace bodies elided around their control blocks, and outputs routed by what printed them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from plane.economy.compress import engine, expand, levels
from plane.economy.compress.classify import classify
from plane.economy.compress.formats import strings
from plane.economy.compress.plan import Plan, render
from plane.economy.compress.salience import guard
from tests.plane.compress.helpers import FIXTURES, fixture, kept_lines, round_trips, run


def test_diff_keeps_each_new_line_once_and_folds_its_repeats_in_later_files() -> None:
    text, result = run("git_diff_repeated.txt")
    kept = kept_lines(result)
    new = "+      - uses: actions/checkout@v4  # pinned for the node 20 runtime"
    assert kept.count(new) == 1  # three files got the same line: the first shows it
    assert text.count(new) == 3
    assert "-      - uses: actions/checkout@v3" not in kept  # replaced: the new text is kept
    assert all(f"diff --git a/{f}.yaml b/{f}.yaml" in kept for f in "abc")
    assert round_trips(text, result)


def test_touching_folds_of_different_kinds_are_one_marker_naming_each() -> None:
    lines = [f"line {n}" * 3 for n in range(12)]
    p = Plan(lines)
    p.fold(1, 4, "context")
    p.fold(4, 6, "replaced")
    p.fold(6, 7, "context")
    p.fold(9, 11, "context")
    out, refs = render(p)
    markers = [line for line in out.split("\n") if "ref:k_" in line]
    assert len(markers) == 2
    assert markers[0].startswith("[… 4 unchanged, 2 removed lines ref:k_")
    assert expand(out, refs.__getitem__) == "\n".join(lines)


def test_code_folds_stay_apart_so_each_stays_a_comment_line() -> None:
    lines = [f"    x{n} = {n}" for n in range(10)]
    p = Plan(lines, comment="...  # ")
    p.fold(1, 4, "body", atomic=True)
    p.fold(4, 8, "comments")
    assert len(p.merged()) == 2


def test_the_guard_counts_a_name_shown_inside_a_longer_word() -> None:
    lines = [
        "raise TypeError(mismatch) if error in parser",
        *[f"padding line {n} that is long enough to fold" for n in range(6)],
        "error: Type mismatch",  # `Type` shows inside `TypeError` above
        "error: KeyMissing in table",  # `KeyMissing` shows nowhere else
    ]
    p = Plan(lines)
    p.fold(1, len(lines), "lines")
    guarded = guard(p)
    folded = guarded.folded_mask()
    assert folded[7], "a name visible inside a kept word needs no second copy"
    assert not folded[8], "a name nothing kept shows is pinned"


def test_a_function_body_that_is_mostly_one_if_block_is_elided() -> None:
    text, result = run("book_js.txt")
    kept = kept_lines(result)
    assert "function playground_text(playground, hidden = true) {" in kept
    assert "    const code_block = playground.querySelector('code');" in text
    assert "    const code_block = playground.querySelector('code');" not in kept
    assert "body 10 lines" in result.text
    assert round_trips(text, result)


def test_printed_number_arrays_are_tables() -> None:
    text = fixture("numpy_array.txt")
    assert classify(text, FIXTURES["numpy_array.txt"]) == "table"
    _, result = run("numpy_array.txt")
    assert result.chars_out < result.chars_in / 2
    assert text.split("\n")[0] in kept_lines(result)


def test_cat_of_several_files_with_redirections_goes_by_the_file_name() -> None:
    text = fixture("metadata.txt")
    assert classify(text, FIXTURES["metadata.txt"]) == "mixed"
    assert classify(text, "cat a/METADATA b/METADATA 2>&1") == "mixed"


def test_merged_labels_count_errors_once() -> None:
    lines = [
        "the first line, kept",
        " ok: an unchanged line of context",
        " error: boom, in another unchanged line",
        "-error: gone, in a removed line",
        "the last line, kept",
    ]
    p = Plan(lines)
    p.fold(1, 3, "context")
    p.fold(3, 4, "replaced")
    marker = render(p)[0].split("\n")[1]
    assert marker.startswith("[… 2 unchanged, 1 removed line ref:")
    assert marker.endswith("; 2 ERROR]")


def test_a_path_mentioned_in_a_page_long_line_does_not_reopen_the_page() -> None:
    page = "Install it, then see docs/setup.py for the options. " + "More prose here. " * 300
    lines = ["header line", "see src/tool.py for details", page, "footer"]
    p = Plan(lines)
    p.fold(1, 3, "lines")
    folded = guard(p).folded_mask()
    assert not folded[1], "a path reported on a line of output stays visible"
    assert folded[2], "a page is not reopened for one file name in it"


def test_a_kept_statement_stays_whole_so_the_code_still_parses(tmp_path: Path) -> None:
    text, result = run("book_js_functions.txt")
    assert round_trips(text, result)
    kept = kept_lines(result)
    assert "        // [… body 29 lines" in result.text  # the body before it still folds
    assert "            .then(response => response.json())" in kept  # the chain is one statement
    assert "        } catch {" in kept  # a try/catch holding an error line is not cut inside
    _parses_as_javascript(result.text, tmp_path)


def test_the_guard_reopens_the_cheapest_line_that_shows_a_name() -> None:
    long_one = "error: ConnectionReset while fetching index " + "with a long tail " * 8
    lines = [
        "kept header: while fetching index with a long tail",
        long_one,
        "error: ConnectionReset",  # the same name, in a tenth of the characters
        "error: QuotaExceeded in upload",  # only this line names QuotaExceeded
    ]
    p = Plan(lines)
    p.fold(1, len(lines), "lines")
    folded = guard(p).folded_mask()
    assert folded[1] and not folded[2], "the short line shows ConnectionReset for less"
    assert not folded[3], "a name only one line carries reopens that line"


def test_the_guard_reopens_only_the_pieces_of_a_held_string_that_carry_an_unshown_name() -> None:
    held = ["Traceback (most recent call last):", *[f"  step {n} of the job" for n in range(12)]]
    held.append("ValueError: checksum mismatch in bundle")
    line = '  "stderr": "' + "\\n".join(held) + " padding" * 120 + '"'
    lines = ["{", line, "}"]
    p = Plan(lines, reshape=strings.reshaper(engine.context()))
    p.fold(1, 2, "items")
    guarded = guard(p)
    assert 1 in guarded.inlines and not guarded.folded_mask()[1]
    out, refs = render(guarded)
    assert "ValueError: checksum mismatch in bundle" in out
    assert "step 5 of the job" not in out  # no name of its own: it stays folded
    assert expand(out, refs.__getitem__) == "\n".join(lines)


def test_labels_count_lines_that_report_an_error_not_lines_that_mention_one() -> None:
    lines = [
        "test_broken_pipe_error (test.test_json.test_dump.TestPyDump) ... ok",
        "Setting up libgpg-error-dev:amd64 (1.46-1) ...",
        "E       itsdangerous.exc.BadSignature: Signature b'x' does not match",
        "TypeError: unsupported operand",
        "-error: gone",
        "foo.py:3: DeprecationWarning: use bar",
        "1 - Create a string and obtain the length: PASSED",
    ]
    assert levels.count_levels(lines) == (3, 1)


def test_grep_over_one_file_prints_lines_not_locations_and_folds_as_a_log() -> None:
    text, result = run("dpkg_grep.txt")
    lines = text.rstrip("\n").split("\n")
    assert result.compressor == "logs"
    assert lines[0] in result.text and lines[-1] in result.text
    assert "context line" not in result.text and result.chars_out < result.chars_in / 5


def test_addresses_in_angle_brackets_are_not_html() -> None:
    text, result = run("shortlog.txt")
    assert result.compressor != "html" and "view" not in result.text
    assert text.split("\n")[0] in result.text and round_trips(text, result)


def test_json_after_the_lines_a_tool_printed_first_is_json() -> None:
    text, result = run("ruff_json.txt")
    warnings = text.split("\n")[:2]
    assert all(line.startswith("warning: ") for line in warnings)
    assert result.compressor == "json" and all(line in result.text for line in warnings)
    assert result.chars_out < result.chars_in / 10


def test_a_passing_unittest_run_is_a_build_log_and_no_marker_counts_an_error() -> None:
    text, result = run("unittest_json.txt")
    assert result.compressor == "build"
    assert "OK (skipped=1)" in result.text and "ERROR" not in result.text
    assert "test_broken_pipe_error" in text


def test_help_output_is_a_document_whatever_the_program() -> None:
    text = fixture("man_find.txt")
    assert classify(text, "curl --help all") in ("plain", "mixed")
    assert classify(text, "cargo build --help") in ("plain", "mixed")


def test_javascript_with_doc_comments_and_else_blocks_still_parses(tmp_path: Path) -> None:
    text, result = run("selector_attribute_js.txt")
    assert result.compressor == "source"  # `npm` in the path is a directory, not the program
    assert "comment lines ref:" in result.text and "// [… body" in result.text
    assert round_trips(text, result)
    _parses_as_javascript(result.text, tmp_path)


def test_json_whose_items_open_and_close_on_shared_lines_is_sampled() -> None:
    text, result = run("ip_json.txt")  # `[ {` … `},{` … `} ]`, three documents in a row
    assert result.compressor == "json" and result.chars_out < 0.6 * result.chars_in
    lines = text.rstrip("\n").split("\n")
    assert result.text.rstrip("\n").split("\n")[-1] == lines[-1]
    assert round_trips(text, result)


def _parses_as_javascript(text: str, tmp_path: Path) -> None:
    """`node --check` accepts the text (where node is installed; it is in CI)."""
    node = shutil.which("node")
    if node is not None:
        out = tmp_path / "out.js"
        out.write_text(text)
        check = subprocess.run([node, "--check", str(out)], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
