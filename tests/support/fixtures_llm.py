"""Fixtures for LLM calls: `scripted_llm`, a real local HTTP server speaking
OpenAI's and Anthropic's APIs with scripted replies (one per test)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.scripted_llm import ScriptedLLM


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A started `ScriptedLLM`; `.base_url` for OpenAI-style clients,
    `.anthropic_url` for Anthropic's. Stopped (every connection dropped) after
    the test."""
    with ScriptedLLM() as llm:
        yield llm
