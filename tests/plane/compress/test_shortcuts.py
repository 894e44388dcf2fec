"""The compressor's shortcuts answer as the plain way does.

Each shortcut replaces a per-line loop with one pass over the joined text, a
cheap test before an expensive one, or an index built only when many questions
come. Each is checked here against the plain definition it replaced, on texts
made of the pieces the patterns care about, so that a shortcut that is wrong
for some input fails here, not only on the pinned fixtures.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from plane.economy.compress import frame, levels, margins, markers, sniff
from plane.economy.compress.formats import logs, source_python
from plane.economy.compress.levels import count_levels, reports_level
from plane.economy.compress.plan import Fold, Plan
from plane.economy.compress.visible import PATH_HINT, Visible, path_hint_lines
from tests.support.fixtures_examples import examples

PIECES = [
    "\n",
    "\n",
    " ",
    "\t",
    "  ",
    "x",
    "12",
    "7",
    ":",
    "-",
    "→",
    "#3 0x",
    "#",
    'File "a.py", line 3',
    "at f (",
    "at g:12",
    "Process exited with code 1",
    "Process exited with code -2",
    "[exit code: 3]",
    "[exit 1 · 2.5s]",
    "[killed by timeout · 10s]",
    "[exit",
    "src/app.py",
    "/usr/lib/x.so",
    ".py",
    ".toml",
    "py",
    "Error",
    "TypeError",
    "$ ",
    "ls",
    "é",
    "\r",
    "\x0b",
]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
TRAILERS = [p for p in PIECES if p.startswith(("Process", "[exit", "[killed"))]
ending = st.tuples(texts, st.sampled_from(["\n", ""]), st.sampled_from(TRAILERS), texts)
texts_with_trailers = texts | ending.map("".join)


@settings(max_examples=examples(400), deadline=None)
@given(texts_with_trailers)
def test_the_trailer_is_found_where_the_expression_finds_it(text: str) -> None:
    _, body, tail = frame.split(text)
    framed = body + tail
    found = frame.TRAILER.search(framed)
    assert tail == ("" if found is None or found.start() == 0 else framed[found.start() :])


@settings(max_examples=examples(400), deadline=None)
@given(texts, st.integers(0, 5), st.integers(0, 40))
def test_path_hints_found_in_one_pass_are_the_lines_that_hold_one(
    text: str, start: int, end: int
) -> None:
    lines = text.split("\n")
    end = min(end, len(lines))
    expected = [i for i in range(start, end) if PATH_HINT.search(lines[i])]
    assert path_hint_lines(lines, start, end) == expected


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(texts, min_size=1, max_size=4), st.lists(texts, max_size=30))
def test_what_text_shows_is_the_same_before_and_after_it_is_indexed(
    kept: list[str], asked: list[str]
) -> None:
    plain, indexed = Visible(kept[0]), Visible(kept[0])
    indexed.INDEXED_AFTER = 0  # indexed from the first question on
    for more in kept[1:]:
        plain.add(more)
        indexed.add(more)
    for question in asked:
        wanted = {question, *question.split()}
        assert (
            plain.shows(wanted)
            == indexed.shows(wanted)
            == all(any(w in t for t in kept) for w in wanted)
        )


@contextmanager
def replaced(module: object, name: str, pattern: str) -> Iterator[None]:
    """The module's pattern `name` replaced for a while: the plain way is the shortcut off."""
    kept = getattr(module, name)
    setattr(module, name, re.compile(pattern))
    try:
        yield
    finally:
        setattr(module, name, kept)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(texts, max_size=40))
def test_a_margin_is_found_whether_or_not_the_quick_count_runs(lines: list[str]) -> None:
    quick = margins.strip(lines)
    kept = margins.few_open_with_a_number
    margins.few_open_with_a_number = lambda lines, nonempty: False  # every text passes
    try:
        plain = margins.strip(lines)
    finally:
        margins.few_open_with_a_number = kept
    assert quick == plain


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(texts, max_size=40).map(lambda texts: "\n".join(texts).split("\n")))
def test_lines_opening_with_a_number_are_counted_as_the_pattern_counts_them(
    lines: list[str],
) -> None:
    """Read line by line until settled, the count says what the pattern's count over the
    whole text says (of lines as the engine splits them: none holds a newline)."""
    nonempty = len(lines) - lines.count("")
    counted = len(re.findall(r"\n *\d", "\n" + "\n".join(lines)))
    few = counted < 0.9 * nonempty
    assert margins.few_open_with_a_number(lines, nonempty) == few


def test_numbered_lines_keep_their_margin() -> None:
    lines = [f"{n:>6}\tline {n}" for n in range(1, 20)]
    found = margins.strip(lines)
    assert found is not None and found.bodies == [f"line {n}" for n in range(1, 20)]


FRAME_LINES = [
    '  File "a.py", line 3, in f',
    "    at f (a.js:1:2)",
    "\tat g:12",
    "#3 0x0000 in main ()",
    "#4  0x1",
    "    x = f(y)",
    "Traceback (most recent call last):",
    "ValueError: no",
    "",
]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(FRAME_LINES), max_size=60) | st.lists(texts, max_size=60))
@example(["Error: no", *["    at f (a.js:1:2)"] * 10])
@example(["Segmentation fault", *["#3 0x0000 in main ()"] * 10])
def test_frames_collapse_as_they_did_line_by_line(texts: list[str]) -> None:
    lines = [line for text in texts for line in text.split("\n")]
    quick, plain = Plan(list(lines)), Plan(list(lines))
    logs.collapse_frames(quick)
    with replaced(logs, "_FRAME_OPENING", ""):  # every text passes the look
        logs.collapse_frames(plain)
    assert quick.folds == plain.folds


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(1, 50), st.lists(st.tuples(st.integers(0, 49), st.integers(0, 50))))
def test_the_folded_mask_marks_every_folded_line(size: int, spans: list[tuple[int, int]]) -> None:
    plan = Plan(["x"] * size)
    plan.folds = [Fold(a, b, "lines") for a, b in spans if b <= size]
    expected = [any(f.start <= i < f.end for f in plan.folds) for i in range(size)]
    assert plan.folded_mask() == expected


DIFF_LINES = [
    "diff --git a/x.py b/x.py",
    "index 1a2b3c4..5d6e7f8 100644",
    "index",
    "--- a/x.py",
    "--- b",
    "+++ b/x.py",
    "@@ -1,3 +1,4 @@ def f():",
    "@@ -1 +1 @@",
    "-old",
    "+new",
    " same",
    "import time: 12 | x",
    "done",
]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(DIFF_LINES) | texts, max_size=50))
def test_a_diff_s_lines_are_counted_as_the_pattern_counts_them(lines: list[str]) -> None:
    sample = sniff.Sample("\n".join(lines))
    assert sample.share(sniff.DIFF, starts=sniff.DIFF_STARTS) == sample.share(sniff.DIFF)


MARKER_PIECES = [
    "\n",
    " ",
    "x",
    "[",
    "]",
    "ref:",
    "ref:k_",
    "k_AAAAAAAAAA",
    "[… 3 lines ref:k_AAAAAAAAAA]",
    "[… 3 lines ref:k_BBBBBBBBBB, 2 more]",
    "    ...  # [… body, 30 lines ref:k_CCCCCCCCCC]",
    "// [… body ref:k_DDDDDDDDDD]",
    "# ",
    "...  ",
    "[… HTML shown as text view ref:k_EEEEEEEEEE]\n",
    "\n[end of view ref:k_EEEEEEEEEE]",
    "\n[end of view ref:k_AAAAAAAAAA]",
    "é",
]


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(st.sampled_from(MARKER_PIECES), max_size=30).map("".join))
def test_markers_are_expanded_as_one_pass_of_the_pattern_expands_them(text: str) -> None:
    """`expand` tries the pattern only from lines holding `ref:`, and finds what a
    substitution over the whole text finds, in the same order."""
    asked: list[str] = []

    def lookup(ref: str) -> str:
        asked.append(ref)
        return f"<{ref}>"

    expected = markers.ANY_RE.sub(lambda m: lookup(m["vref"] or m["cref"] or m["ref"]), text)
    wanted, asked[:] = list(asked), []
    assert markers.expand(text, lookup) == expected
    assert asked == wanted


def test_a_text_without_refs_is_expanded_without_compiling_the_pattern() -> None:
    """As `plane compress` checks its own output: the search runs only where a ref is."""
    code = (
        "from plane.economy.compress import markers\n"
        "text = 'x = [1]  # not a marker\\n' * 5000\n"
        "assert markers.expand(text, {}.__getitem__) == text\n"
        "print('search' in vars(markers.ANY_RE))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


PYTHON_PIECES = [
    "def ",
    "class ",
    "import ",
    "from ",
    "async def ",
    "async ",
    "@",
    " import ",
    "import",
    "from",
    "x",
    "_",
    "é",
    "٣",  # a digit, not ASCII: \w
    "½",  # numeric: \w too
    ".",
    "-",
    " ",
    "\t",
    "\u00a0",  # a space to \s and to str.isspace
    "\u2003",
    "\x0b",
    "\x1c",  # a separator both call a space
    "\n",
    "\r",
]


@settings(max_examples=examples(1000), deadline=None)
@given(st.lists(st.sampled_from(PYTHON_PIECES), max_size=12).map("".join))
@example("from a.b import c")
@example("from  a import b")
@example("from a  import b")
@example("from\u00a0a import b")
@example("from a\u00a0import b")
@example("  @dataclass")
@example("@ x")
def test_a_line_opens_python_where_the_pattern_says_it_does(line: str) -> None:
    assert source_python.pythonic(line) == bool(re.match(source_python.PYTHONIC, line))


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.sampled_from(["<a>", "<", "x < y", "<div>", "<p>", "text", "<html>"]), max_size=60)
)
def test_a_share_asked_to_be_over_a_bound_is_the_share_wherever_it_could_be(
    lines: list[str],
) -> None:
    """`over` rules out, without compiling, only shares that could not be over it."""
    sample = sniff.Sample("\n".join(lines))
    tag = re.compile("<[a-z]+>")
    for bound in (0.0, 0.1, 0.3, 0.5):
        bounded = sample.share(tag, holds="<", over=bound)
        assert (bounded > bound) == (sample.share(tag) > bound)
        assert bounded in (0.0, sample.share(tag))


def test_a_python_module_is_compressed_compiling_only_the_patterns_it_needs() -> None:
    """As `plane compress` runs on a module (the start of argparse.py, as the bench's): no
    pattern a plain string test decides is compiled (the HTML tag of the classifier, the
    lines that open Python, comment lines), nine in all where twelve were."""
    code = (
        "import argparse, re\n"
        "compiled = set()\n"
        "real = re._compile\n"
        "def spy(pattern, flags):\n"
        "    compiled.add(pattern)\n"
        "    return real(pattern, flags)\n"
        "re._compile = spy\n"
        "from plane.economy.compress.engine import compress\n"
        "text = open(argparse.__file__).read()[:20480]\n"
        "assert compress(text * 5).compressor == 'source'\n"
        "print(repr(sorted(compiled)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    compiled = ast.literal_eval(done.stdout)
    assert source_python.PYTHONIC not in compiled
    assert not [p for p in compiled if p.startswith(("<(?:", "^([ \\t]*)#"))], compiled
    assert len(compiled) <= 9, compiled


LEVEL_PIECES = [
    "E ",
    "E  ",
    "error",
    "Error",
    "TypeError",
    "errors",
    "warning",
    "WARN",
    "UserWarning",
    "fail",
    "FAILED",
    "passed",
    " ... ok",
    "no such file or directory",
    "not found",
    "panic",
    "-x",
    "x",
    " ",
    ":",
]


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(st.lists(st.sampled_from(LEVEL_PIECES), max_size=6).map("".join), max_size=12))
def test_a_label_counts_the_lines_that_report_a_level_as_each_line_alone_would(
    lines: list[str],
) -> None:
    """`count_levels` answers a text with no level word and no `E ` line at once, without
    the line-by-line pass: the counts are those of its lines one by one, and as many as the
    lines `reports_level` says report one."""
    errors, warnings = count_levels(lines)
    alone = [count_levels([line]) for line in lines]
    assert (errors, warnings) == (sum(e for e, _ in alone), sum(w for _, w in alone))
    assert errors + warnings == sum(map(reports_level, lines))


def test_a_fold_without_a_level_word_is_counted_without_the_line_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Most of a module's folds (a label is counted for each) hold no level word: their
    count is (0, 0) from one look at their text, the line-by-line pass never run."""

    def line_by_line(lines: list[str], words: tuple[str, ...] = ()) -> list[bool]:
        raise AssertionError("the line-by-line pass ran")

    monkeypatch.setattr(levels, "error_lines", line_by_line)
    assert count_levels(["    x = parse(text)", "    return x  # E here", "Ex"]) == (0, 0)
