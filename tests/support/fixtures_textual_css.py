"""Textual's CSS parsed once a test process, not once an app.

Each `App` builds a stylesheet of its own and parses every source in it
afresh: the TUI's `.tcss` files, each widget's `DEFAULT_CSS`, and the 168
variables of its theme, tokenized one by one. A user starts one app; a
test process starts one for each app test (144 in the fast tier), and that
parse was about a fifth of each start's CPU, ~4 CPU-seconds of the tier's
(docs/performance.md). So for the whole run the two functions the
stylesheet parses with hand back what they returned before for the same
input: the rules of a source given the same variables' tokens, the tokens
of the same variables. Textual itself hands one stylesheet's rules back
from such a cache each time it parses again; here the cache outlives the
app. A source that fails to parse is not kept: it fails again, as it
would. A theme changed mid-test is other variables, so other tokens and
other rules."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import pytest
from textual.css import stylesheet
from textual.css.model import RuleSet
from textual.css.parse import parse
from textual.css.tokenize import tokenize_values
from textual.css.tokenizer import Token

_tokens: dict[tuple[tuple[str, str], ...], dict[str, list[Token]]] = {}
_kept: set[int] = set()
"""The tokens' dicts made here, each kept alive by `_tokens`: only their identity is a key."""
_rules: dict[tuple[object, ...], list[RuleSet]] = {}


@dataclass
class Counts:
    asked: int = 0
    """Sources the stylesheets asked to be parsed."""
    parsed: int = 0
    """Of those, the ones Textual parsed."""


counts = Counts()


def tokens_once(values: dict[str, str]) -> dict[str, list[Token]]:
    """The variables' tokens, one dict a set of values (so its identity names them)."""
    key = tuple(values.items())
    if (found := _tokens.get(key)) is None:
        found = _tokens[key] = tokenize_values(values)
        _kept.add(id(found))
    return found


def rules_once(
    scope: str,
    css: str,
    read_from: tuple[str, str],
    variable_tokens: dict[str, list[Token]] | None = None,
    is_default_rules: bool = False,
    tie_breaker: int = 0,
) -> Iterator[RuleSet]:
    """A source's rules, parsed once for each set of variables' tokens."""
    source = partial(
        parse,
        scope,
        css,
        read_from,
        variable_tokens=variable_tokens,
        is_default_rules=is_default_rules,
        tie_breaker=tie_breaker,
    )
    counts.asked += 1
    if variable_tokens is not None and id(variable_tokens) not in _kept:
        counts.parsed += 1
        return iter(source())
    key = (scope, css, read_from, id(variable_tokens), is_default_rules, tie_breaker)
    if (found := _rules.get(key)) is None:
        counts.parsed += 1
        found = _rules[key] = list(source())
    return iter(found)


@pytest.fixture(autouse=True, scope="session")
def textual_css_once() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stylesheet, "tokenize_values", tokens_once)
        patch.setattr(stylesheet, "parse", rules_once)
        yield
