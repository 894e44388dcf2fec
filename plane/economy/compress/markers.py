"""Markers: the only thing compression ever puts in place of a kept line.

A marker is `[<label> ref:k_XXXXXXXXXX<tail>]`. The ref is a content hash of
exactly the text the marker stands for, so the same removed text always gets
the same ref (cache-safe, and stored once however many agents see it), and
expanding every marker gives the input back byte for byte.

Two shapes exist:

- an inline marker, `[… 36 lines like those above ref:k_…]`, replaced by its
  content exactly where it stands (most markers are alone on their line);
- a code marker, a whole line such as `    ...  # [… body, 30 lines ref:k_…]`
  or `    // [… body, 30 lines ref:k_…]`, so that source with elided bodies
  still parses; the whole line (indent and comment leader included) is
  replaced by the content.

A view (`[… HTML shown as text ref:k_A]` … `[end of view ref:k_A]`) stands for
its whole region: what lies between the two lines is a rendering, not a
verbatim copy, and expanding the view puts the original region back.
"""

from __future__ import annotations

import re
from binascii import b2a_base64
from collections.abc import Callable

try:  # the builtin module: `hashlib` loads OpenSSL, a tenth of a `plane compress` call
    from _sha256 import sha256  # type: ignore[import-not-found]  # CPython 3.11
except ImportError:  # pragma: no cover - 3.12 renamed it; anything else has hashlib
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]
    except ImportError:
        from hashlib import sha256

from plane.economy.compress.patterns import lazy

REF_CHARS = 10
_URLSAFE = bytes.maketrans(b"+/", b"-_")
_REF = r"k_[A-Za-z0-9_-]{" + str(REF_CHARS) + "}"


def _inline(name: str) -> str:
    return r"\[[^\[\]\n]*?ref:(?P<" + name + ">" + _REF + r")[^\[\]\n]*\]"


CODE_MARKER_RE = lazy(
    r"^[ \t]*(?:\.\.\.[ \t]+)?(?:#|//|--|;|%|/\*) " + _inline("cref") + r"(?: \*/)?$",
    re.M,
)
VIEW_RE = lazy(
    r"\[[^\[\]\n]*? view ref:(?P<vref>"
    + _REF
    + r")\]\n(?P<body>[\s\S]*?)\n\[end of view ref:(?P=vref)\]"
)
MARKER_RE = lazy(_inline("ref"))
# Anything that looks like a marker in an input: expanding could not tell it from ours, so
# the engine folds every line holding one (what a marker puts back is never read again).
LOOKS_LIKE_MARKER_RE = lazy(r"ref:" + _REF)


def ref_for(content: str) -> str:
    """The ref of a removed chunk: sha256 of its UTF-8 bytes, base64url, cut short.

    Sixty bits: two different chunks meeting in one store within the hour it
    keeps them is not a practical concern, and every marker stays short.
    """
    return ref_of(content.encode("utf-8", "surrogatepass"))


def ref_of(data: bytes) -> str:
    """The ref of a chunk's UTF-8 bytes, as the store keeps them."""
    encoded = b2a_base64(sha256(data).digest(), newline=False).translate(_URLSAFE)  # base64url
    return "k_" + encoded.decode("ascii")[:REF_CHARS]


def marker(label: str, ref: str, tail: str = "") -> str:
    """`[label ref:k_… tail]` with any bracket or newline in the label made harmless."""
    return f"[{_clean(label)} ref:{ref}{_clean(tail)}]"


def _clean(text: str) -> str:
    return text.replace("[", "(").replace("]", ")").replace("\n", " ")


def expand(text: str, lookup: Callable[[str], str]) -> str:
    """Put back what every marker in `text` stands for.

    `lookup(ref)` returns the removed content (a dict's `__getitem__`, or a
    store's `get`); whatever it raises for an unknown ref propagates.

    As `ANY_RE.sub` would, but the pattern is tried only from lines that hold `ref:`:
    every marker holds it on the line it starts on (nothing before a marker's first ref
    is a newline), and searching every position of a 100 KB output for the line a code
    marker starts cost more than the rest of the round trip.
    """
    pieces: list[str] = []
    done = 0
    at = text.find("ref:")
    while at >= 0:
        found = ANY_RE.search(text, max(done, text.rfind("\n", 0, at) + 1))
        if found is None:
            break
        pieces.append(text[done : found.start()])
        pieces.append(lookup(found["vref"] or found["cref"] or found["ref"]))
        done = found.end()
        at = text.find("ref:", done)
    pieces.append(text[done:])
    return "".join(pieces)


# Views, code markers and inline markers in one pass, left to right: what a marker puts
# back is never read again, so an output that itself shows a marker (a README about
# this very compressor) round-trips once its own marker-like lines are folded.
ANY_RE = lazy(
    "|".join(p.pattern for p in (VIEW_RE, CODE_MARKER_RE, MARKER_RE)),
    re.M,
)


# A ref standing on its own: not the tail of an identifier (`blk_k_…`), nor the start of a
# longer one.
_REF_WORD = lazy(r"(?<![\w-])" + _REF + r"(?![\w-])")


def refs_in(text: str) -> list[str]:
    """Every ref mentioned in a compressed text, in order of first appearance."""
    seen: dict[str, None] = {}
    for found in _REF_WORD.finditer(text):
        seen.setdefault(found.group(0), None)
    return list(seen)
