"""Which compressor an output goes to: the command when it says, else the content.

The command is a hint, not a verdict: `cat` says nothing until its file's
extension does, and a pipeline's last stage (`| python -m json.tool`) or the
content itself (a diff is a diff whoever printed it) decides the rest.
Content tests look at a bounded sample of lines so classifying costs little
however long the output is.
"""

from __future__ import annotations

import re

from plane.economy.compress import sniff
from plane.economy.compress.patterns import lazy

_EXTENSIONS = {
    "source": "py pyi js mjs cjs ts tsx jsx go rs c h cc cpp cxx hpp hh java kt cs rb php swift",
    "config": "toml yaml yml ini cfg conf lock properties env txt-cfg cmake",
    "json": "json jsonl ndjson ipynb",
    "html": "html htm xhtml xml svg",
    "mixed": "md markdown rst adoc",
    "logs": "log",
    "table": "csv tsv",
}
_BY_EXTENSION = {ext: kind for kind, exts in _EXTENSIONS.items() for ext in exts.split()}
_BY_NAME = {
    "cmakelists.txt": "config",
    "makefile": "source",
    "dockerfile": "config",
    "license": "plain",
    "licence": "plain",
    "copying": "plain",
    "metadata": "mixed",
    "pkg-info": "mixed",
    "readme": "mixed",
    "changelog": "mixed",
    "changes": "mixed",
    "news": "mixed",
}
_PROGRAMS = [
    (
        lazy(
            r"\bstrace\b|\bjournalctl\b|\bdmesg\b|-X\s*importtime|/var/log/"
            r"|\bgit\s+(?:log|reflog|shortlog)\b(?![^|]*\s-p\b)(?![^|]*--patch)"
        ),
        "logs",
    ),
    (
        lazy(r"\bgit\s+(?:diff|show|log\s+[^|]*-p|format-patch)\b|\bdiff\s+-[a-zA-Z]*u"),
        "diff",
    ),
    (lazy(r"\b(?:grep|rg|ag|ack|git\s+grep)\b(?![/.-])[^|]*$"), "search"),
    (
        lazy(
            r"\b(?:pip|pip3|npm|yarn|pnpm|apt|apt-get|dpkg|make|cmake|ctest|cargo\s+build"
            r"|pytest|tox|mvn|gradle|bundle|gem)\b(?![/.-])"
        ),
        "build",
    ),
    (
        lazy(
            r"\b(?:gcc|g\+\+|clang|clang\+\+|cc|rustc|tsc|mypy|ruff|eslint|pylint|flake8"
            r"|javac|go\s+vet|go\s+build|node\s+--check|cargo\s+(?:check|clippy))\b(?![/.-])"
        ),
        "diagnostics",
    ),
    (
        lazy(
            r"(?:^|[;&|(]\s*)(?:ls|find|tree|du|df|ps|file|nm|readelf|objdump|xxd|hexdump"
            r"|od|lsof|ss|netstat|unzip\s+-l|tar\s+-?t|git\s+ls-tree|git\s+ls-files|dpkg\s+-l"
            r"|pip\s+list|docker\s+ps|strings)\b(?![/.-])"
        ),
        "listing",
    ),
    (lazy(r"\b(?:wget|curl|dd|rsync|git\s+clone|tqdm)\b(?![/.-])"), "redraw"),
]
# A program's name is followed by a space or the end (`(?![/.-])`): `npm` in
# `cat /usr/lib/node_modules/npm/lib/x.js` is a directory, not the program.
_CAT = lazy(
    r"\b(?:cat|zcat|bat|head|tail|less|more|sed\s+-n\s+\S+)\s+(?:-\S+\s+)*(?:\S+\s+)*(\S+)\s*$"
)


def classify(text: str, command: str | None = None) -> str:
    """The name of the compressor for this output."""
    sample = sniff.Sample(text)
    structural = sniff.structural(sample)
    if structural is not None:
        return structural
    hinted = _from_command(command) if command else None
    if hinted is not None and sniff.agrees(hinted, sample):
        return hinted
    return sniff.by_content(sample)


_HELP = lazy(r"(?:^|\s)(?:--help(?:[\s=]|$)|-h(?:\s|$)|help(?:\s|$))")


def _from_command(command: str) -> str | None:
    last = command.split("|")[0] if "| head" in command or "| tail" in command else command
    if _HELP.search(_last_stage(last)):
        return "plain"  # `curl --help all` prints a manual, not a download
    for pattern, kind in _PROGRAMS:
        if pattern.search(last):
            return kind
    found = _CAT.search(_last_stage(command))
    if found is None:
        return None
    return _by_path(found.group(1).strip("'\""))


_REDIRECT = lazy(r"\s+\d?>>?\s*(?:&\d|\S+)")


def _last_stage(command: str) -> str:
    """The stage that printed the output, its redirections (`2>/dev/null`) dropped."""
    stages = [s for s in re.split(r"\|(?!\|)", command) if not re.match(r"\s*(?:head|tail)\b", s)]
    return _REDIRECT.sub("", stages[-1] if stages else command)


def _by_path(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1].lower()
    if name in _BY_NAME or name.split(".")[0] in _BY_NAME:
        return _BY_NAME.get(name) or _BY_NAME[name.split(".")[0]]
    if "." not in name:
        return None
    ext = name.rsplit(".", 1)[-1].rstrip("*")
    return _BY_EXTENSION.get(ext)
