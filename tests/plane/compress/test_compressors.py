"""Each compressor on real output made on this machine: what must stay, what must go."""

from __future__ import annotations

import ast
import json
import re
from itertools import pairwise

from plane.economy.compress import Compressed, compress, expand
from plane.economy.compress.classify import classify
from plane.economy.compress.formats import markup, search
from plane.economy.compress.markers import CODE_MARKER_RE, MARKER_RE, marker, ref_for
from plane.economy.compress.plan import default_label
from tests.plane.compress.helpers import FIXTURES, fixture, kept_lines, round_trips, run


def _kept_verbatim(text: str, result: Compressed) -> bool:
    """Every line of the output is a line of the input, or a marker standing for whole lines,
    or a line of the input with parts of it folded inline (its markers expand back to it)."""
    originals = set(text.split("\n"))
    for line in result.text.split("\n"):
        if line in originals or CODE_MARKER_RE.fullmatch(line) or MARKER_RE.fullmatch(line):
            continue
        if expand(line, result.refs.__getitem__) not in originals:
            return False
    return True


def test_classifier_routes_each_fixture() -> None:
    expected = {
        "gcc.txt": "diagnostics",
        "make.txt": "build",
        "git_diff.txt": "diff",
        "ls_l.txt": "listing",
        "ps.txt": "listing",
        "grep_n.txt": "search",
        "pip_list.json.txt": "json",
        "progress.txt": "redraw",
        "readme.md.txt": "mixed",
        "pydoc_textwrap.html.txt": "html",
        "files.csv.txt": "table",
        "pip_wheel.txt": "build",
        "debconf.conf.txt": "config",
        "textwrap_py.txt": "source",
    }
    for name, kind in expected.items():
        assert classify(fixture(name), FIXTURES[name]) == kind, name


def test_kept_lines_are_never_rewritten() -> None:
    for name in FIXTURES:
        text, result = run(name)
        if result.compressor in ("html", "redraw"):
            continue  # a view and inline frames: checked on their own below
        assert _kept_verbatim(text, result), name


def test_gcc_keeps_every_diagnostic_and_drops_the_echo() -> None:
    text, result = run("gcc.txt")
    diagnostics = [line for line in text.split("\n") if re.match(r"bad\.c:\d+:\d+: ", line)]
    assert diagnostics and all(line in result.text for line in diagnostics)
    echoes = [line for line in text.split("\n") if re.match(r"\s+\d+ \| ", line)]
    assert any(line not in kept_lines(result) for line in echoes)


def test_make_folds_the_repeated_steps_and_keeps_each_warning_location() -> None:
    text, result = run("make.txt")
    assert result.chars_out < 0.85 * result.chars_in
    echoed = [line for line in text.split("\n") if line.startswith("    1 | int f")]
    assert echoed and not any(line in kept_lines(result) for line in echoed)
    for n in range(1, 41):
        assert f"f{n}.c:1:" in result.text  # every file's warning location stays visible
    assert "gcc -Wall -O2 -c f1.c -o f1.o" in result.text


def test_traceback_keeps_the_ends_and_the_exception() -> None:
    text, result = run("traceback.txt")
    lines = text.rstrip("\n").split("\n")
    assert lines[0] in result.text and lines[-1] in result.text
    assert "ValueError: depth" in result.text
    assert "stack lines" in result.text


def test_importtime_log_keeps_head_and_tail() -> None:
    text, result = run("importtime.txt")
    lines = text.rstrip("\n").split("\n")
    assert lines[0] in result.text and lines[-1] in result.text
    assert round_trips(text, result)


def test_folded_log_lines_are_labelled_as_the_spec_writes_them() -> None:
    """`[… 412 log lines omitted ref:k_…; 3 ERROR, 1 WARNING]` (DESIGN.md):
    how many lines went, that they were left out, and what they reported."""
    quiet = [f"10:00:{n % 60:02d} INFO step {n} done" for n in range(408)]
    loud = ["10:07 ERROR db timeout"] * 3 + ["10:07 WARNING slow disk"]
    head, tail = default_label("log", quiet + loud)
    ref = ref_for("\n".join(quiet + loud))
    assert marker(head, ref, tail) == f"[… 412 log lines omitted ref:{ref}; 3 ERROR, 1 WARNING]"
    _, result = run("importtime.txt")  # a real log, as the compressor folds it
    labels = re.findall(r"\[… \d+ log lines?[^\]]*\]", result.text)
    said = r"\[… \d+ log lines? omitted ref:k_\S+\]"
    assert labels and all(re.fullmatch(said, label) for label in labels)


def test_a_line_said_37_times_is_kept_once_and_counted_as_the_spec_writes_it() -> None:
    """`[×37 ref:k_Qm9v…]` (DESIGN.md): the line above, 37 times over."""
    line = "Downloading https://files.example.org/pkg.tar.gz ... 100%"
    text = "\n".join(["make: entering directory", *[line] * 37, "make: done"]) + "\n"
    result = compress(text)
    kept = result.text.split("\n")
    assert kept[:2] == ["make: entering directory", line] and kept[3:] == ["make: done", ""]
    assert re.fullmatch(r"\[×37 ref:k_[\w-]{10}\]", kept[2]), result.text
    assert round_trips(text, result)


def test_diff_keeps_headers_and_changes_and_narrows_context() -> None:
    text, result = run("git_diff.txt")
    lines = text.split("\n")
    for n, line in enumerate(lines):
        if line.startswith(("@@", "diff --git")):
            assert line in result.text
        if line.startswith(("index ", "--- a/", "+++ b/")):
            assert line not in kept_lines(result)  # `diff --git a/… b/…` already says it
        header = line.startswith(("--- ", "+++ "))
        starts_run = not header and line[:1] in ("+", "-") and lines[n - 1][:1] != line[:1]
        end = n
        while end < len(lines) and lines[end][:1] == line[:1]:
            end += 1
        replaced = line[:1] == "-" and end < len(lines) and lines[end][:1] == "+"
        if starts_run and not replaced:
            assert line in result.text  # every addition and deletion shows its first line
    assert "unchanged" in result.text and "removed line" in result.text
    assert "+def fill(text, width=72, **kwargs):" in kept_lines(result)  # the new text of a
    assert "-def fill(text, width=70, **kwargs):" not in kept_lines(result)  # replacement


def test_diff_folds_context_and_old_text_into_one_marker_with_each_part_named() -> None:
    _, result = run("git_diff.txt")
    merged = [m for m in result.text.split("\n") if "unchanged, " in m and "removed" in m]
    assert merged, "touching context and removed folds share one marker"
    assert round_trips(fixture("git_diff.txt"), result)


def test_listings_keep_head_and_tail() -> None:
    for name in ("ls_l.txt", "ps.txt"):
        text, result = run(name)
        lines = text.rstrip("\n").split("\n")
        assert lines[0] in result.text and lines[-1] in result.text
        assert result.chars_out < result.chars_in / 2, name


def test_search_keeps_the_first_matches_of_every_file_and_folds_far_context() -> None:
    text, result = run("grep_n.txt")
    per_file: dict[str, int] = {}
    for line in text.split("\n"):
        found = re.match(r"(\S+?\.py):(\d+):", line)
        if not found:
            continue
        per_file[found.group(1)] = per_file.get(found.group(1), 0) + 1
        if per_file[found.group(1)] <= search.PER_FILE or len(line) < 60:
            assert line in result.text
        else:
            assert line in result.text or any(line in chunk for chunk in result.refs.values())
    assert re.search(r"\[… \d+ context lines ref:k_", result.text)  # far context folds


def test_python_source_still_parses_with_every_signature() -> None:
    text, result = run("textwrap_py.txt")
    ast.parse(result.text)
    tree = ast.parse(text)
    lines = text.split("\n")
    for node in tree.body:
        members = node.body if isinstance(node, ast.ClassDef) else []
        for item in [node, *members]:
            if isinstance(item, ast.FunctionDef | ast.ClassDef):
                assert lines[item.lineno - 1] in result.text  # every signature stays
    assert result.chars_out < 0.6 * result.chars_in


def test_brace_source_keeps_signatures_and_balanced_braces() -> None:
    body = "\n".join(f"    total += values[{i}] * {i};" for i in range(12))
    text = "\n".join(
        f"static int sum{n}(const int *values) {{\n    int total = 0;\n{body}\n"
        "    return total;\n}\n"
        for n in range(6)
    )
    result = compress(text, command="cat sum.c")
    assert result.compressor == "source"
    for n in range(6):
        assert f"static int sum{n}(const int *values) {{" in result.text
    assert result.text.count("{") == result.text.count("}")
    assert "// [… body" in result.text


def test_json_samples_long_arrays() -> None:
    _, result = run("pip_list.json.txt")
    assert result.text.startswith("[")
    assert re.search(r"\[… \d+ lines ref:", result.text)
    assert result.chars_out < result.chars_in / 3


def test_a_readme_held_in_a_json_string_folds_to_its_outline() -> None:
    text, result = run("pip_inspect_meta.json.txt")
    assert result.chars_out < result.chars_in / 5
    shown, original = json.loads(result.text), json.loads(text)  # markers hold no quote
    assert {k: shown[k] for k in ("name", "version", "summary")} == {
        k: original[k] for k in ("name", "version", "summary")
    }
    held, readme = shown["description"].split("\n"), original["description"].split("\n")
    assert held[:6] == readme[:6]
    headings = [line for line, under in pairwise(readme) if re.fullmatch(r"=+", under)]
    assert len(headings) > 3 and all(heading in held for heading in headings)
    assert re.search(r"\[… \d+ more lines ref:k_[\w-]{10}\]", shown["description"])
    assert round_trips(text, result)


def test_a_log_held_in_a_json_string_keeps_every_name_its_failure_line_carries() -> None:
    text, result = run("pip_download_harness.json.txt")
    stderr = next(line for line in text.split("\n") if line.startswith('  "stderr"'))
    assert "Failed to establish a new connection" in stderr
    names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", stderr))
    assert all(name in result.text for name in names)
    assert round_trips(text, result)


def test_html_documentation_held_in_json_keeps_its_first_paragraph() -> None:
    text, result = run("botocore_service.json.txt")
    line = next(line for line in result.text.split("\n") if line.startswith('    "documentation"'))
    shown = json.loads("{" + line + "}")["documentation"]  # markers hold no quote: still JSON
    whole = json.loads(text)["documentation"]
    assert shown.startswith("<fullname>AWS Marketplace Entitlement Service</fullname>")
    assert re.fullmatch(r"(.*) \[… 1 more paragraph ref:k_[\w-]{10}\]", shown)
    assert whole.startswith(shown.split(" [… ")[0]) and len(whole) > 2 * len(shown)
    assert round_trips(text, result)


def test_a_long_page_keeps_every_heading_and_skims_each_section() -> None:
    text, result = run("rustdoc_how_to_write.html.txt")
    rendered = markup.as_text(text)
    headings = [line for line in rendered if line.startswith("#")]
    assert len(headings) > 5
    shown = result.text.split("\n")
    assert all(heading in shown for heading in headings)
    for heading in ("# How to write documentation", "## Documenting components"):
        opening = rendered[rendered.index(heading) + 2]  # the section's first paragraph
        assert opening in shown
    cut = [line for line in shown if re.search(r"more words ref:k_", line)]
    for line in cut:  # a later one-line paragraph keeps its first sentence
        kept = line[: line.index(" [… ")]
        whole = next(r for r in rendered if r.startswith(kept))
        said = re.search(r"\[… (\d+) more words", line)
        assert said is not None, line
        words = int(said.group(1))
        assert len(whole[len(kept) :].split()) == words
    # a paragraph that links to a page keeps the link: a URL to a file is a location
    linked = next(r for r in rendered if r.startswith("Everything before the first empty line"))
    assert "<https://doc.rust-lang.org/stable/std/env/index.html#functions>" in linked
    assert linked in shown
    assert result.chars_out < result.chars_in / 4
    assert round_trips(text, result)


def test_a_manual_page_keeps_every_heading_and_every_option_it_lists() -> None:
    text, result = run("man_find.txt")
    lines = text.split("\n")
    headings = [line for line in lines if re.fullmatch(r"[A-Z][A-Z ]+", line)]
    options = [line for line in lines if re.match(r"       -\w+(?: \S+)?$", line)]
    assert len(headings) > 4 and len(options) > 30
    shown = result.text.split("\n")
    assert all(line in shown for line in headings + options)
    assert result.chars_out < result.chars_in / 3
    assert _kept_verbatim(text, result) and round_trips(text, result)


def test_each_location_stays_under_its_own_headline_even_when_the_headline_repeats() -> None:
    text, result = run("rustc_imports.txt")
    lines, shown = text.split("\n"), result.text.split("\n")
    pairs = [
        (lines[i - 1], line) for i, line in enumerate(lines) if line.startswith(" --> lib.rs:")
    ]
    assert len(pairs) >= 6 and lines.count("error[E0432]: unresolved import `serde`") == 2
    for headline, location in pairs:
        assert shown[shown.index(location) - 1] == headline
    assert round_trips(text, result)


def test_a_note_shown_brings_the_error_it_explains() -> None:
    text, result = run("gpp_macro_notes.txt")
    lines, shown = text.split("\n"), result.text.split("\n")
    notes = [line for line in shown if ": note: " in line]
    assert notes
    for note in notes:
        report = next(line for line in reversed(lines[: lines.index(note)]) if ": error: " in line)
        assert report in shown[: shown.index(note)]
    assert round_trips(text, result)


def test_a_page_shows_what_it_loads() -> None:
    text, result = run("rustdoc_how_to_write.html.txt")
    loads = re.findall(r'<(?:link [^>]*href|script [^>]*src)="([^"]+)"', text)
    assert len(loads) > 5
    assert all(f"<{url}>" in result.text for url in loads)


def test_every_location_a_linter_prints_stays_under_its_diagnostic_or_in_its_marker() -> None:
    # A location shown stays under its own headline, never another's; a rule's later
    # diagnostics fold whole, and their marker names the rule and each location.
    text, result = run("ruff_full.txt")
    lines = text.split("\n")
    blocks = [(lines[i - 1], line.strip()) for i, line in enumerate(lines) if "--> " in line[:8]]
    assert len(blocks) > 100
    out = result.text.split("\n")
    shown = {(out[i - 1], line.strip()) for i, line in enumerate(out) if "--> " in line[:8]}
    markers = [m.group(0) for m in MARKER_RE.finditer(result.text)]
    for headline, location in blocks:
        if (headline, location) in shown:
            continue
        code, at = headline.split()[0], location.removeprefix("--> ")
        listed = re.compile(re.escape(at) + r"(?!\d)")
        assert any(code in m and listed.search(m) for m in markers), location
    assert all(pair in blocks for pair in shown)
    assert result.chars_out < result.chars_in / 4
    assert round_trips(text, result)


def test_table_keeps_the_header() -> None:
    _, result = run("files.csv.txt")
    assert result.text.split("\n")[0] == "path,size,mode\r"
    # the folded rows are counted, and the paths they hold listed (dir/{a.py,b.py})
    assert re.search(r"\[… \d+ rows: /\S+/\{[^}]+\}.* ref:", result.text)


def test_progress_keeps_only_the_last_frame() -> None:
    _, result = run("progress.txt")
    assert "downloading model.bin 100% [####################]" in result.text
    assert "downloading model.bin  50%" not in result.text
    assert "earlier frames" in result.text
    assert "done" in result.text


def test_config_drops_comments_and_keeps_settings() -> None:
    text, result = run("debconf.conf.txt")
    settings = [
        line for line in text.split("\n") if line.strip() and not line.lstrip().startswith("#")
    ]
    assert all(line in result.text for line in settings)
    assert "comment lines" in result.text


def test_mixed_document_keeps_prose_byte_identical() -> None:
    text, result = run("readme.md.txt")
    assert _kept_verbatim(text, result)
    first_paragraph = text.split("\n\n")[0]
    assert first_paragraph in result.text


def test_html_is_shown_as_text_and_expands_back() -> None:
    text, result = run("pydoc_textwrap.html.txt")
    assert result.compressor == "html"
    assert "<table" not in result.text and "TextWrapper" in result.text
    assert round_trips(text, result)


def test_errors_are_never_hidden() -> None:
    _, result = run("pip_wheel.txt")
    assert "error: invalid command 'bdist_wheel'" in result.text
    assert "exit code: 1" in result.text
