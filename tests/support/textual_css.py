"""Each Textual app parses the CSS of every widget it shows afresh: its
stylesheet keeps what it parsed only for itself, and a screen pushed with CSS
of its own starts a new stylesheet that parses everything again. The TUI's
tests start a new app for each test, so a worker parsed the same few dozen
sources a few hundred times (a quarter of the CPU of starting an app).

This plugin keeps the rules parsed from each source for the whole worker.
The key is everything the parse reads: the source's text, where it was read
from, its priority, its scope and the theme's variables; a source that does
not parse raises each time, as before (nothing is kept for it). The rules are
the same objects Textual's own per-stylesheet cache hands out again, which
nothing changes after the parse.

It replaces `Stylesheet._parse_rules`, a private method, so only on the
Textual release it was read against: on another the tests run as they are,
only slower, until this is read again.
"""

from __future__ import annotations

import inspect

import textual
from textual.css.model import RuleSet
from textual.css.stylesheet import Stylesheet
from textual.css.types import CSSLocation

READ_AGAINST = "8.2.8"
SIGNATURE = "(self, css: 'str', read_from: 'CSSLocation', is_default_rules: 'bool' = False, tie_breaker: 'int' = 0, scope: 'str' = '') -> 'list[RuleSet]'"  # noqa: E501

_parsed: dict[tuple, list[RuleSet]] = {}


def pytest_configure() -> None:
    parse_rules = Stylesheet._parse_rules
    if textual.__version__ != READ_AGAINST or str(inspect.signature(parse_rules)) != SIGNATURE:
        return

    def shared(
        self: Stylesheet,
        css: str,
        read_from: CSSLocation,
        is_default_rules: bool = False,
        tie_breaker: int = 0,
        scope: str = "",
    ) -> list[RuleSet]:
        variables = tuple(sorted(self._variables.items()))
        key = (css, read_from, is_default_rules, tie_breaker, scope, variables)
        rules = _parsed.get(key)
        if rules is None:
            rules = _parsed[key] = parse_rules(
                self, css, read_from, is_default_rules, tie_breaker, scope
            )
        return rules

    Stylesheet._parse_rules = shared
