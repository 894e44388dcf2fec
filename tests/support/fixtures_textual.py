"""Textual's parsed CSS, shared by the apps a test process starts.

Each app parses the CSS of every widget again: its stylesheet keeps what it
parsed for itself only, and a change of theme starts a fresh one. That was a
quarter of an app's start (~30 of ~110 CPU-ms), paid by every test that runs
an app, some two hundred a worker. The same text under the same variables
parses to the same rules, which Textual itself reuses from one parse to the
next without copying them, so here the process keeps them, by the variables,
the text and where it came from. What fails to parse is not kept: it fails
again, as it would have.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.css.model import RuleSet
from textual.css.stylesheet import Stylesheet
from textual.css.types import CSSLocation

_parse = Stylesheet._parse_rules
_parsed: dict[tuple[Any, ...], list[RuleSet]] = {}


def _parse_once(
    self: Stylesheet,
    css: str,
    read_from: CSSLocation,
    is_default_rules: bool = False,
    tie_breaker: int = 0,
    scope: str = "",
) -> list[RuleSet]:
    variables = tuple(sorted(self._variables.items()))
    key = (variables, css, read_from, is_default_rules, tie_breaker, scope)
    if key not in _parsed:
        _parsed[key] = _parse(self, css, read_from, is_default_rules, tie_breaker, scope)
    return _parsed[key]


def pytest_configure(config: pytest.Config) -> None:
    setattr(Stylesheet, "_parse_rules", _parse_once)  # noqa: B010 (a method, not an attribute)
