"""HTML: shown as text, then folded like any document.

Markup is most of an HTML page's bytes and none of what a model reads. The
page is shown as its text (block elements on their own lines, headings marked
as in Markdown, scripts and styles dropped, each distinct link target and
resource once, in angle brackets), inside a view whose ref restores the original page byte for
byte. No article extraction: the text is folded like any long document's.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.formats import plain
from plane.economy.compress.levels import error_lines
from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Plan
from plane.economy.compress.visible import IDENT_RE

_BLOCK = frozenset(
    "address article aside blockquote body br dd div dl dt fieldset figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section table tbody thead tfoot tr ul "
    "title caption".split()
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_RESOURCES = {"link": "href", "script": "src", "img": "src", "iframe": "src", "source": "src"}
_NOT_SHOWN = ("#", "javascript:", "data:")
MAX_URL = 300
_SKIP = frozenset(("script", "style", "noscript", "template", "svg"))
_START = lazy(r"\s*<(?:!DOCTYPE|html|head|body)\b", re.I)
_SPACES = lazy(r"[ \t\r\f\v]+")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0
        self.pre = 0
        self.links: dict[str, None] = {}
        self.href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skipping += 1
        elif tag in _BLOCK:
            self.parts.append("\n")
        if tag in _HEADINGS:  # shown as Markdown, so a long page skims section by section
            self.parts.append("#" * _HEADINGS[tag] + " ")
        if tag == "pre":
            self.pre += 1
        if tag in ("td", "th"):
            self.parts.append(" ")
        if tag == "a":
            self.href = dict(attrs).get("href")
        elif tag in _RESOURCES:  # what the page loads: its styles, scripts, images
            self._link(dict(attrs).get(_RESOURCES[tag]))

    def _link(self, url: str | None) -> None:
        if url and len(url) <= MAX_URL and not url.startswith(_NOT_SHOWN) and url not in self.links:
            self.links[url] = None
            self.parts.append(f" <{url}>")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag == "a" and self.href:
            href, self.href = self.href, None
            self._link(href)

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        self.parts.append(data if self.pre else _SPACES.sub(" ", data.replace("\n", " ")))


def as_text(html: str) -> list[str]:
    """The page's text, one block a line, blank runs collapsed."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    lines: list[str] = []
    for line in "".join(parser.parts).split("\n"):
        line = line.rstrip()
        if line.strip() or (lines and lines[-1]):
            lines.append(line if line.strip() else "")
    while lines and not lines[-1]:
        lines.pop()
    return lines


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    """The page as text in a view; lines before the markup (a tool's warnings) shown as they are."""
    start = next((i for i, line in enumerate(lines) if _START.match(line)), 0)
    text = "\n".join(lines)
    shown = lines[:start] + as_text("\n".join(lines[start:]))
    plan = plain.compress(shown, context)
    hidden = markup_names(lines, shown)
    if hidden:
        plan.lines.append(NAMES + ", ".join(hidden))  # after every fold: always shown
    plan.view_of = text
    return plan


NAMES = "names in the markup of the page's error and warning lines: "


def markup_names(page: list[str], shown: list[str]) -> list[str]:
    """The names on the page's lines that report an error or a warning which its text does
    not show: a tag, an attribute or a class on such a line (`<p class="system-message">
    ERROR/3`) is a name on an error line, which the guard keeps visible in any other
    output; the text view drops markup, so the view names them once, sorted."""
    flagged = error_lines(page)
    names = {name for i, line in enumerate(page) if flagged[i] for name in IDENT_RE.findall(line)}
    if not names:
        return []
    text = "\n".join(shown)
    return sorted(name for name in names if name not in text)
