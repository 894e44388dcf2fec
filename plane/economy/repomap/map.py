"""The repo map: the files an agent has read, remembered across sessions.

A new session knows nothing of the files read in the last one, so the agent
reads them again and pays for every byte twice. The map keeps a line's worth
per file read — its purpose and top-level symbols (read from the text by
`plane.economy.repomap.summarise`), a hash of its content — in the workspace's
REPO_MAP.json, and a compact `## Repo Map` prompt layer renders from it, so
the next session orients without re-reading.

The layer sits in the system prompt's stable prefix, so it must be
cache-safe: it is a pure function of the map (no clock; ordered by path), and
the map changes only when a file's content does — re-reading an unchanged
file writes nothing. "Newest" is a counter bumped on each change, not a time,
so the same reads give the same bytes.

Caps (`repo_map.*`): the newest `max_files` entries are kept; files over
`max_file_bytes` are not summarised; the layer stays within
`max_snapshot_chars`. A corrupt REPO_MAP.json never fails a turn: it is
logged, and the map starts over.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeGuard

from plane.config import RepoMapConfig
from plane.economy.repomap.summarise import (
    MAX_SYMBOLS,
    PURPOSE_CHARS,
    SYMBOL_CHARS,
    clean,
    cut,
    summarise,
)
from plane.tools.files import write_bytes

log = logging.getLogger(__name__)

MAP_NAME = "REPO_MAP.json"
VERSION = 1
HASH_CHARS = 16
LINE_CHARS = 200
"""One file's line in the layer, at most."""
MAX_MAP_BYTES = 4 << 20
"""A REPO_MAP.json larger than this was not written by the plane."""
HEADER = (
    "## Repo Map\n"
    "Files you have read before — path (lines): purpose [top-level symbols]. "
    "They may have changed since; read a file again for its details."
)

_lock = threading.Lock()
"""Load → change → save is one step: two tool calls finishing together must
not lose each other's entry."""


@dataclass(frozen=True)
class Entry:
    purpose: str
    symbols: tuple[str, ...]
    sha256: str
    """A prefix of the content's sha256: the same content, the same entry."""
    lines: int
    seq: int
    """When it last changed, as a counter: the highest is the newest."""

    @classmethod
    def from_json(cls, data: object) -> Entry:
        """Strict: anything but what `asdict` gave is a ValueError (an
        agent can write this file too, and it ends up in the prompt)."""
        if not isinstance(data, dict) or sorted(data) != FIELDS:
            raise ValueError("an entry has the wrong fields")
        purpose, symbols, digest = data["purpose"], data["symbols"], data["sha256"]
        if not (
            _is_clean(purpose, PURPOSE_CHARS)
            and isinstance(symbols, list)
            and len(symbols) <= MAX_SYMBOLS
            and all(_is_clean(s, SYMBOL_CHARS) and s for s in symbols)
            and isinstance(digest, str)
            and _HEX.fullmatch(digest)
            and _count(data["lines"])
            and _count(data["seq"])
        ):
            raise ValueError("an entry has a field it could not have been given")
        return cls(purpose, tuple(symbols), digest, data["lines"], data["seq"])


FIELDS = ["lines", "purpose", "seq", "sha256", "symbols"]
_HEX = re.compile(f"[0-9a-f]{{{HASH_CHARS}}}")


def _is_clean(value: object, limit: int) -> bool:
    return isinstance(value, str) and clean(value, limit) == value


def _count(value: object) -> TypeGuard[int]:
    """A count read from the map: an int, not a bool, not negative. (A guard, not
    `TypeIs`: a negative int is still an int.)"""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# -- recording a read -------------------------------------------------------


def note_read(workspace: Path, path: str, content: str, settings: RepoMapConfig) -> bool:
    """Record that the agent read `path` (relative to `workspace`) and saw
    `content` — the file's text, or `read_file`'s output for it (its trailer
    is understood: a page from the middle of a file is not its summary).
    True if the map changed. Never raises: the map is an aid, the turn is not."""
    try:
        return _note_read(workspace, path, content, settings)
    except Exception:
        log.exception("Could not record %s in the repo map", path)
        return False


def _note_read(workspace: Path, path: str, content: str, settings: RepoMapConfig) -> bool:
    if not settings.enabled:
        return False
    rel = _relative(workspace, path)
    page = _first_page(content)
    if rel is None or rel == MAP_NAME or page is None:
        return False
    text, lines = page
    too_big = _size(workspace / rel, text) > settings.max_file_bytes
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]
    with _lock:
        files, seq = _load(workspace)
        old = files.get(rel)
        if too_big:
            if old is None:
                return False
            del files[rel]  # it grew past the cap: its old summary is no longer true
        elif old is not None and old.sha256 == digest:
            return False  # an unchanged re-read: not a byte of the map (or layer) moves
        else:
            seq += 1
            files[rel] = Entry(*summarise(rel, text), digest, lines, seq)
        return _save(workspace, _newest(files, settings.max_files), seq)


def _relative(workspace: Path, path: str) -> str | None:
    """`path` as a clean POSIX path inside the workspace, or None."""
    if not path or not path.isprintable():
        return None
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            candidate = Path(os.path.realpath(candidate)).relative_to(os.path.realpath(workspace))
        except ValueError:
            return None
    return _clean_path(candidate.as_posix())


def _clean_path(path: str) -> str | None:
    clean = os.path.normpath(path)
    if not path.isprintable() or clean in (".", "..") or clean.startswith(("../", "/")):
        return None
    return clean


_TRAILER = re.compile(r"\n\[lines ([\d,]+)–[\d,]+ of ([\d,]+)(?:; read on with offset=\d+)?\]\Z")
_EMPTY = re.compile(r"\A\(`.*` is empty\.\)\Z", re.DOTALL)


def _first_page(content: str) -> tuple[str, int] | None:
    """(text, lines in the file) from a whole file or `read_file`'s first
    page of it; None for a page that starts further in."""
    if _EMPTY.match(content):
        return "", 0
    trailer = _TRAILER.search(content)
    if trailer is None:
        return content, len(content.splitlines())
    if trailer.group(1) != "1":
        return None
    return content[: trailer.start()], int(trailer.group(2).replace(",", ""))


def _size(file: Path, text: str) -> int:
    """The file's size on disk (a read shows at most a page of it), or the
    text's when the file cannot be looked at."""
    try:
        on_disk = file.stat().st_size
    except (OSError, ValueError):
        on_disk = 0
    return max(on_disk, len(text.encode("utf-8", "surrogatepass")))


def _newest(files: dict[str, Entry], limit: int) -> dict[str, Entry]:
    keep = sorted(files.items(), key=lambda item: (-item[1].seq, item[0]))[:limit]
    return dict(keep)


# -- REPO_MAP.json ----------------------------------------------------------


def _load(workspace: Path) -> tuple[dict[str, Entry], int]:
    """(entries by path, the counter); empty when there is no map, and, with
    a warning, when the map cannot be read or trusted."""
    target = workspace / MAP_NAME
    try:
        # O_NOFOLLOW: a symlink planted here must not feed another file to the prompt.
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return {}, 0
    except OSError as error:
        return _start_over(target, error)
    try:
        with os.fdopen(fd, "rb") as f:
            raw = f.read(MAX_MAP_BYTES + 1)
        if len(raw) > MAX_MAP_BYTES:
            raise ValueError(f"it is over {MAX_MAP_BYTES:,} bytes")
        return _parse(json.loads(raw))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as error:
        return _start_over(target, error)


def _parse(doc: object) -> tuple[dict[str, Entry], int]:
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        raise ValueError(f"it is not a version {VERSION} repo map")
    files, seq = doc.get("files"), doc.get("seq")
    if not isinstance(files, dict) or not _count(seq):
        raise ValueError("it has no files or no counter")
    if any(_clean_path(path) != path for path in files):
        raise ValueError("it names a path outside the workspace, or not as the plane would")
    entries = {path: Entry.from_json(data) for path, data in files.items()}
    if any(entry.seq > seq for entry in entries.values()):
        raise ValueError("an entry is newer than the map")
    return entries, seq


def _start_over(target: Path, error: BaseException) -> tuple[dict[str, Entry], int]:
    log.warning("Ignoring %s and starting the repo map over: %s", target, error)
    return {}, 0


def _save(workspace: Path, files: dict[str, Entry], seq: int) -> bool:
    """Atomically (temporary file, then rename), as deterministic JSON."""
    doc = {
        "version": VERSION,
        "seq": seq,
        "files": {path: asdict(entry) for path, entry in files.items()},
    }
    data = json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    try:
        write_bytes(workspace / MAP_NAME, data.encode("utf-8", "replace"))
    except OSError as error:
        log.warning("Could not write %s: %s", workspace / MAP_NAME, error)
        return False
    return True


# -- the prompt layer -------------------------------------------------------


def layer(workspace: Path, settings: RepoMapConfig) -> str:
    """The `## Repo Map` section of the system prompt ("" when disabled or
    empty): the newest entries that fit `max_snapshot_chars`, by path."""
    if not settings.enabled:
        return ""
    try:
        files, _ = _load(workspace)  # written by renaming: never seen half-written
        return render(files, settings.max_snapshot_chars)
    except Exception:
        log.exception("Could not render the repo map of %s", workspace)
        return ""


def render(files: dict[str, Entry], cap: int) -> str:
    """A pure function of the entries: the same map, the same bytes."""
    budget = cap - len(HEADER) - len(_more(len(files))) - 1
    chosen: list[tuple[str, str]] = []
    for path, entry in sorted(files.items(), key=lambda item: (-item[1].seq, item[0])):
        line = _line(path, entry)
        if len(line) + 1 > budget:
            break
        budget -= len(line) + 1
        chosen.append((path, line))
    if not chosen:
        return ""
    lines = [HEADER, *(line for _, line in sorted(chosen))]
    if len(chosen) < len(files):
        lines.append(_more(len(files) - len(chosen)))
    return "\n".join(lines)


def _more(count: int) -> str:
    return f"- … {count} more in {MAP_NAME}"


def _line(path: str, entry: Entry) -> str:
    """path (lines): purpose [symbols, as many as fit, then +N]."""
    head = f"- {path} ({entry.lines})" + (f": {entry.purpose}" if entry.purpose else "")
    head = cut(head, LINE_CHARS)
    symbols = list(entry.symbols)
    while symbols:
        hidden = len(entry.symbols) - len(symbols)
        line = f"{head} [{', '.join(symbols + ([f'+{hidden}'] if hidden else []))}]"
        if len(line) <= LINE_CHARS:
            return line
        symbols.pop()
    return head
