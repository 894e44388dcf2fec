"""Content tests for the classifier, each on a bounded sample of lines."""

from __future__ import annotations

import re

from plane.economy.compress.patterns import lazy

_SAMPLE_LINES = 400


class Sample:
    """Up to 400 lines from the start, middle and end, and the text's first 4 KB."""

    lines: list[str]
    start: str
    carriage_returns: int
    text_len: int

    def __init__(self, text: str) -> None:
        all_lines = text.split("\n")
        if len(all_lines) > _SAMPLE_LINES:
            third = _SAMPLE_LINES // 3
            mid = len(all_lines) // 2
            all_lines = all_lines[:third] + all_lines[mid : mid + third] + all_lines[-third:]
        self.lines = [line for line in all_lines if line.strip()]
        self.start = text[:4096].lstrip()
        self.carriage_returns = text.count("\r") - text.count("\r\n")
        self.text_len = len(text)
        self.text = text

    def share(
        self,
        pattern: re.Pattern[str],
        starts: tuple[str, ...] = (),
        holds: str = "",
        over: float = 0.0,
    ) -> float:
        """The share of lines the pattern finds. `starts` (what a matching line can start
        with) and `holds` (what every matching line has) rule lines out as plain string
        tests first: with none left, the pattern is not even compiled, nor with too few
        left for the share to be `over` what the caller asks it to be (then 0.0: a `<` in
        a tenth of a Python module's lines cannot make a third of them HTML tags)."""
        if not self.lines:
            return 0.0
        lines = self.lines
        if starts:
            lines = [line for line in lines if line.startswith(starts)]
        if holds:
            lines = [line for line in lines if holds in line]
        if not lines or len(lines) <= over * len(self.lines):
            return 0.0
        return len(list(filter(None, map(pattern.search, lines)))) / len(self.lines)

    def logs(self) -> float:
        """The share of lines that are log lines: a timestamp or a log's opening, or a level
        word anywhere (looked for as plain text first: a regular expression searching every
        position of every line costs a call more than the rest of the classifier)."""
        if not self.lines:
            return 0.0
        found = 0
        for line in self.lines:
            if _LOG_START.match(line) or (
                any(level in line for level in _LEVELS) and _LEVEL.search(line)
            ):
                found += 1
        return found / len(self.lines)


DIFF = lazy(r"^(?:diff --git |@@ -\d+(?:,\d+)? \+\d+|\+\+\+ |--- a/|index [0-9a-f]+\.\.)")
DIFF_STARTS = ("diff --git ", "@@ -", "+++ ", "--- a/", "index ")
"""What a line `DIFF` finds starts with: lines that start otherwise are ruled out as plain
string tests before the pattern is compiled."""
_HTML = lazy(r"<(?:!DOCTYPE html|html|head|body|div|p|table|span|a )\b", re.I)
# A tag, not an address in angle brackets (`<jane@example.org>` in `git shortlog -e`).
_TAG = lazy(r"<(?:[a-zA-Z][\w-]*(?:\s[^<>@]*)?/?|/[a-zA-Z][\w-]*|!\w[^>]*)>")
# `path:12:` or `path-12-`, where the path has a letter, a dot or a slash in it: a log's
# `2026-05-09 07:41` is a date, and so is `2026-05-09T07:41:12` (a line that starts with a
# date is a log line, whatever follows).
_DATE = r"\[?\d{4}-\d\d-\d\d"
_SEARCH = lazy(
    r"^(?!" + _DATE + r")(?:\./)?(?=[\w./@+-]*[A-Za-z_./])[\w./@+-]+[:=-]\d+[:=-]"
    r"|^(?!" + _DATE + r")(?:\./)?[\w./@+-]+\.\w+:\d+$"
)
# A match (`path:12:`), not only context (`path-12-`): search output has at least one.
_SEARCH_MATCH = lazy(r"^(?!" + _DATE + r")(?:\./)?(?=[\w./@+-]*[A-Za-z_./])[\w./@+-]+:\d+:")
_DIAG = lazy(
    r"^\S+?:\d+(?::\d+)?:? (?:fatal )?(?:error|warning|note)\b|^(?:error|warning)(?:\[\w+\])?: "
    r"|^\s*--> \S+:\d+:\d+|^\S+\(\d+,\d+\): error TS\d+|^\s+\d+:\d+\s+(?:error|warning)\s"
    r"|^\S+:\d+:\d+: [A-Z]+\d+ |^\S+:\d+: error:|^SyntaxError:|^\s+\^+\s*$"
)
_LISTING = lazy(
    r"^[-dlcbps][rwxsStT-]{9}[.+@]?\s|^[0-9a-f]{7,16}:? (?:[0-9a-f]{2,8} ){2}"
    r"|^[0-9a-f]{8,16} [A-Za-z] \S|^\s*[0-9a-f]{8,16}:\s|^[\d.]+[KMGT]?\s+[./]"
    r"|^\s*\d+\s+\d+\s+[\d.]+\s+[\d.]+\s|^\s*(?:[│├└]|\|--|`--)"
    r"|^\s+\d+: [0-9a-f]{16}\s+\d+ |^\s*\[\s*\d+\] "
)
# Every alternative is anchored, so a line that does not start like a log line fails at
# once; the level words, which may stand anywhere, are looked for apart (see `Sample.logs`).
_LOG_START = lazy(
    r"^\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d|^\w{3} [ \d]\d \d\d:\d\d:\d\d|^\d\d:\d\d:\d\d"
    r"|^import time:|^\[pid +\d+\]|^\d+ +\d\d:\d\d:\d\d|^Traceback |^  File \"|^commit [0-9a-f]{40}"
)
_LEVELS = ("DEBUG", "INFO", "WARN", "ERROR", "CRITICAL", "TRACE")  # WARNING holds WARN
_LEVEL = lazy(r"\b(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|TRACE)\b")
# `(?=(?>\S+) …)` reads the first word once: `\S+::\S+` alone backtracked over a line of
# colons in time growing with its square.
_BUILD = lazy(
    r"^(?:Collecting|Downloading|Installing|Requirement already|Successfully|Building|Using "
    r"cached|Obtaining|Preparing|Unpacking|Setting up|Selecting|Processing|Get:\d|Hit:\d"
    r"|Fetched|Reading|Created wheel|Stored in|npm (?:http|info|verb|sill|WARN|ERR)|added \d+"
    r"|Scanning|Linking|Compiling|\[ *\d+%\]|make(?:\[\d+\])?:|-- |\s*(?:CC|LD|AR|CXX) "
    r"|=+ .* =+$|PASSED|FAILED"
    r"|(?=(?>\S+) (?:PASSED|FAILED|SKIPPED))\S+::\S+ (?:PASSED|FAILED|SKIPPED)"
    r"|\d+: Test|test \S+ \.\.\. "
    r"|\w+ \([\w.]+\)(?: \S.*)? \.\.\. (?:ok|FAIL|ERROR|skipped|expected failure))"
)
_SOURCE = lazy(
    r"^\s*(?:def |class |import |from \S+ import|fn |pub |impl |use |func |package |#include"
    r"|#define|static |struct |enum |const |let |var |function |return\b|if \(|for \(|}\s*$"
    r"|\w+\([^)]*\)\s*\{$|public |private |namespace |@\w+|//|/\*|\* |async |export )"
)
_CONFIG = lazy(
    r"^\s*(?:\[[\w.\-\" ]+\]|[\w.\-\"]+\s*=\s*\S|[\w.\-\"]+:\s*\S|[\w.\-\"]+:\s*$|- [\w\"]+"
    r"|#|;|[\w-]+\s+[\w\"/.-]+$)"
)
_TABLE_SEP = lazy(r"^\s*\|.*\|\s*$|^[+|][-=+|]{6,}")
_PROSE = lazy(r"(?:\b[a-z][a-z']+\b[,;]? ){5}")
_MARKDOWN = lazy(r"^(?:#{1,6} |```|~~~|\* |- |\d+\. |> |\.\. |={3,}|-{3,})")


def structural(sample: Sample) -> str | None:
    """A type the content makes unmistakable, whatever the command was. Text that parses
    as JSON is JSON, whatever markup its strings hold."""
    if sample.carriage_returns >= 8:
        return "redraw"
    if sample.share(DIFF, starts=DIFF_STARTS) > 0.02 and any(
        DIFF.match(x) for x in sample.lines[:40]
    ):
        return "diff"
    if _looks_json(sample) or _parses_whole(sample):
        return "json"
    if sample.share(_TAG, holds="<", over=0.3) > 0.3 and any(
        _HTML.search(line) for line in sample.lines[:200]
    ):
        return "html"
    return None


def _looks_json(sample: Sample) -> bool:
    """JSON, or JSON Lines, from the start or after a few lines a tool printed first
    (`warning: … are incompatible` before ruff's JSON report)."""
    lead = next((n for n, line in enumerate(sample.lines[:6]) if line[:1] in "{["), None)
    if lead is None:
        return False
    head = sample.lines[lead : lead + 40]
    if sum(1 for line in head if line.startswith("{") and line.rstrip().endswith("}")) > 0.8 * len(
        head
    ):
        return all(_parses(line) for line in head[:5])
    json_line = re.compile(r'^\s*(?:"[^"]*"\s*:|[\[\]{}],?\s*$|"[^"]*",?\s*$|-?\d|true|false|null)')
    return sample.share(json_line) > 0.85


def _parses_whole(sample: Sample) -> bool:
    text = sample.start
    if not text or text[0] not in "{[":
        return False
    return _parses(sample.text)


def _parses(line: str) -> bool:
    import json  # only an output that starts like JSON gets here

    try:
        json.loads(line)
    except (ValueError, RecursionError):  # nested deeper than Python reads: not for us
        return False
    return True


_AGREEMENT = {
    "search": (_SEARCH, 0.5),
    "diagnostics": (_DIAG, 0.05),
    "source": (_SOURCE, 0.04),
}


def agrees(kind: str, sample: Sample) -> bool:
    """Whether the content does not contradict the command's hint."""
    test = _AGREEMENT.get(kind)
    if test is None:
        return True
    if kind == "search" and not sample.share(_SEARCH_MATCH):
        return False  # no `path:line:` match at all: not search output, whatever printed it
    pattern, share = test
    return sample.share(pattern) >= share


def by_content(sample: Sample) -> str:
    """The best guess from the lines alone."""
    if plainly_python(sample):
        return "source"
    scores = {
        "search": sample.share(_SEARCH) * 1.2 if sample.share(_SEARCH_MATCH) else 0.0,
        "diagnostics": sample.share(_DIAG) * 2.5,
        "listing": sample.share(_LISTING),
        "logs": sample.logs(),
        "build": sample.share(_BUILD),
        "table": _table_score(sample),
        "source": sample.share(_SOURCE) * 0.9,
        "config": sample.share(_CONFIG) * 0.8,
    }
    if _defines_python(sample):
        # `self.x = y` and `# comment` look like config; `def f(x):` never is.
        scores["source"] = max(scores["source"], scores["config"])
        scores["config"] = 0.0
    best = max(scores, key=lambda k: scores[k])
    if scores[best] >= 0.35:
        return best
    if sample.share(_MARKDOWN) > 0.05:
        return "mixed"
    if len(sample.lines) >= 60 and sample.share(_PROSE) < 0.2:
        return "listing"
    return "plain"


_HEAD_LINES = _SAMPLE_LINES // 3
_PY_DEFINES = ("def ", "class ", "async def ")
_PY_LINE_STARTS = frozenset("_#@\"'()[]{}")


def plainly_python(sample: Sample) -> bool:
    """A Python module, told from its first lines (the sample's first third: a module's
    docstring and imports) by plain string tests: three or more open a top-level import,
    `def` or `class`, every line at the margin starts as Python's lines can (no `$`, `>>>`,
    fence, bullet or number) and none ends as a brace language's (`;`, `{`). Scoring each
    format's patterns, which must be compiled first, cost a 100 KB module more than the
    rest of its classification, and scored most modules `listing` (their lines alike)."""
    top = [line for line in sample.lines[:_HEAD_LINES] if line[0] != " " and line[0] != "\t"]
    opened = 0
    for line in top:
        if not (line[0].isalpha() or line[0] in _PY_LINE_STARTS) or line.endswith((";", "{")):
            return False
        opened += _opens_python(line)
    return opened >= 3


def _opens_python(line: str) -> bool:
    """A top-level import, or the header of a `def` or `class` (not `import time: self [us]
    | …`, Python's own import trace)."""
    code = line.split("#", 1)[0]
    if line.startswith(_PY_DEFINES):
        return "(" in code or code.rstrip().endswith(":")
    if ":" in code or "|" in code:
        return False
    return line.startswith("import ") or (line.startswith("from ") and " import " in code)


# A Python definition: a `def` or `class` line ending its header with a colon.
_PY_DEFINITION = lazy(r"^\s*(?:async\s+def|def|class)\s+[A-Za-z_]\w*\s*[(:].*:\s*(?:#.*)?$")


def _defines_python(sample: Sample) -> bool:
    """Python code: a few definitions (config never has one)."""
    return sum(1 for line in sample.lines if _PY_DEFINITION.match(line)) >= 3


_NUMBER = r"(?>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?)"
# Numbers need a separator between them, so the pattern cannot split a digit run two ways.
_MATRIX = lazy(r"^\s*\[*\s*" + _NUMBER + r"(?:(?:\s+|,\s*)" + _NUMBER + r")*+\s*\]*,?$")


def _table_score(sample: Sample) -> float:
    if sample.share(_TABLE_SEP) > 0.5:
        return 0.9
    if _matrix(sample.lines):  # a printed array (numpy, torch): rows of numbers
        return 0.9
    lines = sample.lines
    if len(lines) < 5:
        return 0.0
    for sep in ("\t", ","):
        counts = [line.count(sep) for line in lines]
        common = max(sorted(set(counts)), key=counts.count)
        if common >= 1 and counts.count(common) > 0.8 * len(counts):
            return 0.85 if sep == "\t" else 0.6
    return _column_score(lines)


_NUMBER_START = frozenset("-+.0123456789")


def _matrix(lines: list[str]) -> bool:
    """Whether over 80% of the lines are rows of numbers. Lines that cannot be (they do not
    open with a number after their spaces and brackets) are counted out first, as plain
    string tests: compiling `_MATRIX` alone costs more than classifying a 20 KB output."""
    if not lines:
        return False
    rows = [line for line in lines if line.lstrip().lstrip("[").lstrip()[:1] in _NUMBER_START]
    if len(rows) <= 0.8 * len(lines):
        return False
    return sum(1 for line in rows if _MATRIX.search(line)) > 0.8 * len(lines)


def _column_score(lines: list[str]) -> float:
    """Space-aligned columns: many lines whose word starts line up."""
    fields = [len(line.split()) for line in lines]
    common = max(sorted(set(fields)), key=fields.count)
    if common < 3:
        return 0.0
    return 0.6 * fields.count(common) / len(fields)
