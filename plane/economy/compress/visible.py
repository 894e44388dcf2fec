"""What kept text shows, asked many times over: the guard's (`plane.economy.compress.salience`)
questions of a plan's kept lines, answered fast and always as a plain search would.

Each way of answering faster than a search, here, is checked against the search itself
(tests/plane/compress/test_shortcuts.py): the lines holding a path found in one pass, and
the words of kept text indexed once many questions come.
"""

from __future__ import annotations

from plane.economy.compress.locations import EXT, locations
from plane.economy.compress.patterns import lazy

IDENT_RE = lazy(r"[A-Za-z_][A-Za-z0-9_]{3,}")
PATH_HINT = lazy(r"/[\w.@+-]*\.[A-Za-z]|\.(?:" + EXT + r")\b")
"""Something on a line that may be a path (`/src/app.py`, `app.py`): what the guard then
looks at closely."""


def path_hint_lines(lines: list[str], start: int, end: int) -> list[int]:
    """The lines of [start, end) where `PATH_HINT` finds something, found in one pass over
    them joined (it matches no newline and looks at nothing before where it starts)."""
    text = "\n".join(lines[start:end])
    found: list[int] = []
    line, at = start, 0
    hit = PATH_HINT.search(text)
    while hit is not None:
        line += text.count("\n", at, hit.start())
        found.append(line)
        newline = text.find("\n", hit.end())  # the line's end: go on from the next line
        if newline < 0:
            break
        line, at = line + 1, newline + 1
        hit = PATH_HINT.search(text, at)
    return found


class Visible:
    """What kept text shows. A detail is shown when it occurs anywhere in it, inside a
    longer word too (`Error` in `TypeError`, `app.py` in `src/app.py:3`): that is what a
    reader searching the text finds, and every answer is remembered.

    The first questions search the texts themselves. Past INDEXED_AFTER of them (a search
    output, whose every match may ask), the texts' words and locations are indexed, once:
    whole words are then a set lookup, a name is looked for in the distinct words, a path
    in the texts. Both give the same answers (every word and location is a piece of the
    text; a name lies inside one run of word characters); the index costs more than a few
    questions do."""

    INDEXED_AFTER = 64

    def __init__(self, text: str) -> None:
        self.texts: list[str] = []
        self.found: dict[str, bool] = {}
        self.asked = 0
        self.words: set[str] | None = None  # the index, once built
        self.runs: dict[str, None] = {}
        self.joined: list[str] = []
        self.add(text)

    def add(self, text: str) -> None:
        self.texts.append(text)
        if self.words is not None:
            self._index(text)
        self.found = {k: v for k, v in self.found.items() if v}

    def _index(self, text: str) -> None:
        assert self.words is not None
        self.words |= _words(text)
        new = [run for run in dict.fromkeys(_RUN_RE.findall(text)) if run not in self.runs]
        self.runs.update(dict.fromkeys(new))
        self.joined.append("\n".join(new))

    def shows(self, wanted: set[str]) -> bool:
        return all(self._shown(w) for w in wanted)

    def _shown(self, token: str) -> bool:
        known = self.found.get(token)
        if known is not None:
            return known
        self.asked += 1
        if self.words is None and self.asked > self.INDEXED_AFTER:
            self.words = set()
            for text in self.texts:
                self._index(text)
        if self.words is None:
            known = any(token in text for text in self.texts)
        elif token in self.words:
            known = True
        else:
            where = self.joined if _RUN_RE.fullmatch(token) else self.texts
            known = any(token in text for text in where)
        self.found[token] = known
        return known


_RUN_RE = lazy(r"\w+")


def _words(text: str) -> set[str]:
    found = set(IDENT_RE.findall(text))
    found.update(locations(text))
    return found
