"""Markdown as styled blocks of text, for a message line to wrap.

Textual's Markdown widget builds a widget per block; twenty answers made a
few hundred widgets and took seconds to lay out. An answer in a
conversation needs less: headings, paragraphs, lists, quotes, code. This
turns Markdown (parsed by markdown-it, which Textual already depends on)
into `Block`s of `Content`, each with the prefix its first line and its
continuation lines take, so one widget draws the whole answer. Styles come
from the caller (`style(name)`), so colours stay in the theme's `.tcss`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from textual.content import Content

Style = Callable[[str], Any]
"""`style("code")` → a style for `Content`; names: heading, code, strong,
em, link, bullet, quote."""

_parser = MarkdownIt("commonmark")


@dataclass(frozen=True)
class Block:
    """A run of text wrapped as one: `first` before its first line, `rest`
    before the others. `wrap=False` keeps lines as they are (code)."""

    content: Content
    first: str = ""
    rest: str = ""
    wrap: bool = True
    gap: bool = False
    """A blank line goes before this block (not after a heading: dense)."""
    heading: bool = False


def blocks(text: str, style: Style) -> list[Block]:
    """The blocks of `text`, in order."""
    return _Walker(style).walk(_parser.parse(text))


class _Walker:
    def __init__(self, style: Style) -> None:
        self.style = style
        self.out: list[Block] = []
        self.lists: list[list[int | None]] = []
        """Open lists, innermost last: [next number] or [None] for bullets."""
        self.quote = 0
        self.prefix: tuple[str, str] | None = None
        """The marker the next paragraph of a list item starts with."""
        self.opened = ""
        """The block the next inline run belongs to: `heading` or `paragraph`."""

    def walk(self, tokens: Sequence[Token]) -> list[Block]:
        for index, token in enumerate(tokens):
            handler = getattr(self, f"_{token.type}", None)
            if handler is not None:
                handler(token, tokens[index + 1] if index + 1 < len(tokens) else None)
        return self.out

    # ── structure ──────────────────────────────────────────────────────────

    def _indent(self) -> str:
        return "▌ " * self.quote + "   " * max(0, len(self.lists) - 1)

    def _bullet_list_open(self, token: Token, _: Token | None) -> None:
        self.lists.append([None])

    def _ordered_list_open(self, token: Token, _: Token | None) -> None:
        self.lists.append([int(token.attrs.get("start", 1) or 1)])

    def _bullet_list_close(self, token: Token, _: Token | None) -> None:
        self.lists.pop()

    _ordered_list_close = _bullet_list_close

    def _list_item_open(self, token: Token, _: Token | None) -> None:
        counter = self.lists[-1]
        if counter[0] is None:
            marker = "• "
        else:
            marker = f"{counter[0]}. "
            counter[0] += 1
        indent = self._indent()
        self.prefix = (indent + marker, indent + " " * len(marker))

    def _blockquote_open(self, token: Token, _: Token | None) -> None:
        self.quote += 1

    def _blockquote_close(self, token: Token, _: Token | None) -> None:
        self.quote -= 1

    # ── leaves ─────────────────────────────────────────────────────────────

    def _inline(self, token: Token, _: Token | None) -> None:
        content = self._inline_content(token.children or [])
        if self.prefix is not None:
            first, rest = self.prefix
            self.prefix = None
            self.out.append(Block(content, first, rest))
            return
        indent = self._indent()
        heading = self.opened == "heading"
        if heading:
            content = content.stylize(self.style("heading"))
        after_heading = self.out and self.out[-1].heading
        gap = bool(self.out) and not self.lists and not heading and not after_heading
        self.out.append(Block(content, indent, indent, gap=gap, heading=heading))

    def _heading_open(self, token: Token, _: Token | None) -> None:
        self.opened = "heading"

    def _paragraph_open(self, token: Token, _: Token | None) -> None:
        self.opened = "paragraph"

    def _fence(self, token: Token, _: Token | None) -> None:
        code = token.content.rstrip("\n")
        indent = self._indent() + "  "
        self.out.append(
            Block(
                Content(code).stylize(self.style("code")),
                indent,
                indent,
                wrap=False,
                gap=bool(self.out),
            )
        )

    _code_block = _fence

    def _hr(self, token: Token, _: Token | None) -> None:
        self.out.append(Block(Content("───").stylize(self.style("bullet"))))

    # ── inline ─────────────────────────────────────────────────────────────

    def _inline_content(self, children: Sequence[Token]) -> Content:
        parts: list[Content] = []
        open_styles: list[str] = []
        for child in children:
            kind = child.type
            if kind in ("strong_open", "em_open", "link_open"):
                open_styles.append(kind.removesuffix("_open"))
            elif kind in ("strong_close", "em_close", "link_close"):
                if open_styles:
                    open_styles.pop()
            elif kind == "code_inline":
                parts.append(Content(child.content).stylize(self.style("code")))
            elif kind == "softbreak":
                parts.append(Content(" "))
            elif kind == "hardbreak":
                parts.append(Content("\n"))
            elif kind in ("text", "html_inline"):
                piece = Content(child.content)
                for name in open_styles:
                    piece = piece.stylize(self.style(name))
                parts.append(piece)
        return Content.assemble(*parts) if parts else Content("")
