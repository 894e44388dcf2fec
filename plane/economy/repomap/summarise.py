"""A file's purpose and top-level symbols, read from its text: the repo
map's line for it.

No model is asked (a summary must cost nothing and come out the same for the
same text, since it ends up in a cache-safe prompt layer). The file's name
says how to read it: Python through `ast`, Markdown by its headings, JSON by
its top-level keys, and every other known format by a few line patterns;
the purpose is the first docstring, heading or leading comment line. A file
in no known format gets its first line of prose.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import PurePosixPath

PURPOSE_CHARS = 100
SYMBOL_CHARS = 60
MAX_SYMBOLS = 40
"""Per file, in REPO_MAP.json; the layer shows as many as fit its line."""


def summarise(path: str, text: str) -> tuple[str, tuple[str, ...]]:
    """(purpose, top-level symbols) of a file, by what its name says it is."""
    name = PurePosixPath(path).name
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in (".py", ".pyi"):
        purpose, symbols = _python(text)
    elif suffix in (".md", ".markdown"):
        purpose, symbols = _markdown(text)
    elif suffix == ".json":
        purpose, symbols = "", _json_keys(text)
    else:
        patterns = _PATTERNS.get(suffix) or _PATTERNS.get(name.lower(), ())
        purpose, symbols = _comment(text, prose=not patterns), _matches(text, patterns)
    return clean(purpose, PURPOSE_CHARS), _unique(symbols)


def _python(text: str) -> tuple[str, list[str]]:
    """`ast` when the text parses (a page cut mid-function may not). Private
    names are the module's own business; the map has room for the rest."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        purpose, symbols = _comment(text, prose=False), _matches(text, _PY)
    else:
        docstring = (ast.get_docstring(tree, clean=True) or "").strip()
        purpose = docstring.splitlines()[0] if docstring else _comment(text, prose=False)
        kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        symbols = [node.name for node in tree.body if isinstance(node, kinds)]
    return purpose, [name for name in symbols if not name.startswith("_")]


def _markdown(text: str) -> tuple[str, list[str]]:
    """The first heading says what it is; the second-level ones, what is in it."""
    headings = re.findall(r"^(#{1,2})[ \t]+(.+?)[ \t#]*$", text, re.MULTILINE)
    title = next((words for marks, words in headings if marks == "#"), "")
    symbols = [words for marks, words in headings if marks == "##"]
    return title or _comment(text, prose=True), symbols


def _json_keys(text: str) -> list[str]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return []
    return list(data)[:MAX_SYMBOLS] if isinstance(data, dict) else []


_COMMENT = re.compile(r"^(?:#+|//+!?|/\*+!?|\*+|--+|;+|%+|<!--|\"\"\"|'''|rem\b)\s*", re.IGNORECASE)
_DIRECTIVE = re.compile(r"#\s*(?:include|define|if|ifdef|ifndef|pragma|import|endif)\b")
_BOILERPLATE = re.compile(
    r"^(?:#!|.*-\*-.*-\*-|.*\bSPDX-License|.*\bcopyright\b|.*\blicen[cs]ed?\b)", re.IGNORECASE
)


def _comment(text: str, *, prose: bool) -> str:
    """The first line of the leading comment; for prose (no known code
    format), the first line that says something."""
    for raw in text.splitlines()[:40]:
        line = raw[:300].strip()
        if not line or _BOILERPLATE.match(line):
            continue
        said = None if _DIRECTIVE.match(line) else _COMMENT.match(line)
        if said is None and not prose:
            return ""  # the code has started: there is no header comment
        words = re.sub(r"(?:\*+/|-->|\"\"\"|''')\s*$", "", line[said.end() :] if said else line)
        if re.search(r"\w", words):
            return words
    return ""


def _matches(text: str, patterns: tuple[re.Pattern[str], ...]) -> list[str]:
    """Names the patterns capture, in the order they appear. Lines are cut
    first, so a minified file cannot make a pattern backtrack for long."""
    found: list[str] = []
    for raw in text.splitlines():
        line = raw[:300]
        for pattern in patterns:
            match = pattern.match(line)
            if match:
                found.append(match.group(1))
                break
        if len(found) >= MAX_SYMBOLS * 2:
            break
    return found


def _unique(symbols: list[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for symbol in symbols:
        name = clean(symbol, SYMBOL_CHARS)
        if name:
            seen.setdefault(name, None)
    return tuple(seen)[:MAX_SYMBOLS]


def clean(text: str, limit: int) -> str:
    """One printable line, whitespace collapsed, cut to `limit`."""
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    text = text.encode("utf-8", "replace").decode("utf-8")
    return cut(" ".join(text.split()), limit)


def cut(text: str, limit: int) -> str:
    """`text`, or as much as fits `limit` with an ellipsis saying it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compile(*patterns: str, flags: int = 0) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, flags) for p in patterns)


_PY = _compile(r"(?:async\s+)?def\s+(\w+)", r"class\s+(\w+)")
_JS = _compile(
    r"(?:export\s+(?:default\s+)?)?(?:async\s+)?function\*?\s*([A-Za-z_$][\w$]*)",
    r"(?:export\s+(?:default\s+)?)?(?:abstract\s+)?class\s+([A-Za-z_$][\w$]*)",
    r"(?:export\s+)?(?:declare\s+)?(?:interface|type|enum)\s+([A-Za-z_$][\w$]*)",
    r"(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)",
)
_GO = _compile(r"func\s+(?:\([^)]*\)\s*)?(\w+)", r"type\s+(\w+)")
_RUST = _compile(
    r"(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:unsafe\s+)?"
    r"(?:fn|struct|enum|trait|mod|type|union)\s+(\w+)"
)
_JVM = _compile(
    r"(?:(?:public|private|protected|internal|abstract|final|sealed|static|data|open)\s+)*"
    r"(?:class|interface|enum|record|object|struct)\s+(\w+)"
)
_C = _compile(
    r"(?:typedef\s+)?(?:struct|enum|union|class|namespace)\s+(\w+)\s*\{?\s*$",
    r"(?!(?:if|for|while|switch|return|else|do)\b)[A-Za-z_][\w \t*&:<>,]*?[ \t*&]"
    r"([A-Za-z_]\w*)\s*\([^;]*$",
)
_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    **dict.fromkeys((".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx"), _JS),
    ".go": _GO,
    ".rs": _RUST,
    **dict.fromkeys((".java", ".kt", ".scala", ".cs"), _JVM),
    **dict.fromkeys((".c", ".h", ".cc", ".cpp", ".hpp", ".cxx"), _C),
    ".rb": _compile(r"(?:class|module)\s+([\w:]+)", r"def\s+((?:self\.)?\w+[?!=]?)"),
    **dict.fromkeys(
        (".sh", ".bash", ".zsh"),
        _compile(r"function\s+([A-Za-z_][\w-]*)", r"([A-Za-z_][\w-]*)\s*\(\)"),
    ),
    ".php": _compile(
        r"(?:abstract\s+|final\s+)?(?:class|interface|trait)\s+(\w+)", r"function\s+(\w+)"
    ),
    ".lua": _compile(r"(?:local\s+)?function\s+([\w.:]+)"),
    **dict.fromkeys((".yaml", ".yml"), _compile(r"([A-Za-z_][\w.-]*)\s*:")),
    ".toml": _compile(r"\[\[?([^\]]+)\]\]?"),
    **dict.fromkeys((".ini", ".cfg"), _compile(r"\[([^\]]+)\]")),
    ".sql": _compile(
        r"create\s+(?:or\s+replace\s+)?(?:table|view|index|function|procedure|trigger)\s+"
        r"(?:if\s+not\s+exists\s+)?([\w.\"]+)",
        flags=re.IGNORECASE,
    ),
    **dict.fromkeys(("makefile", "gnumakefile", ".mk"), _compile(r"([A-Za-z_][\w.-]*)\s*:(?!=)")),
}
