"""Fixtures for LLM calls:

- `scripted_llm`: a real local HTTP server speaking OpenAI's and Anthropic's
  APIs with scripted replies (one per test);
- `embedded_model`: the real embedded model (llama.cpp + SmolLM2 in a child
  process), started once per test session.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from plane.providers.local import EmbeddedModel
from tests.support.scripted_llm import ScriptedLLM


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A started `ScriptedLLM`; `.base_url` for OpenAI-style clients,
    `.anthropic_url` for Anthropic's. Stopped (every connection dropped) after
    the test."""
    with ScriptedLLM() as llm:
        yield llm


@pytest.fixture(scope="session")
def embedded_model() -> Iterator[EmbeddedModel]:
    """One started `EmbeddedModel` for the whole session: `.base_url` (ending
    in /v1) and `.api_key`. Started and stopped without an event loop, so any
    test's loop can use it. Tests share its prompt cache: measure cached
    tokens on prefixes of your own.

    One thread: on this 2-core machine, shared with other test processes,
    llama.cpp's two threads spin-wait on each other and run 3-10x slower
    than one."""
    model = EmbeddedModel(threads=1)
    model.start_blocking()
    try:
        yield model
    finally:
        model.stop_blocking()
