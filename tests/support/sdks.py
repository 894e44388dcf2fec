"""The official SDKs, imported when a test first uses one, and the mark that
runs every test using them on one pytest-xdist worker.

Importing `anthropic` and `openai` takes about a CPU-second. Every worker
imports every test module to collect it, so with four workers the suite paid
four seconds for SDKs that the tests of one worker's share need: here a
module's `anthropic.AsyncAnthropic` imports the SDK when the test runs it, and
`ON_ONE_WORKER` (`--dist loadgroup`) puts those tests on one worker. Their
types are for the type checker only (imported under `TYPE_CHECKING`).

A test's SDK client talks to the plane on this machine over plain HTTP, so
`anthropic_sdk` and `openai_sdk` make it with the SDK's own HTTP client
(its timeouts and connection limits) without TLS: httpx read the CA bundle
for every client it made, ~17 CPU-ms, and the tests make hundreds.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import pytest

ON_ONE_WORKER = pytest.mark.xdist_group("official-sdks")


class _WhenUsed:
    """A module imported at its first attribute's reading."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):  # pytest's plugins look for markers while collecting
            raise AttributeError(attribute)
        return getattr(importlib.import_module(self.name), attribute)


if TYPE_CHECKING:
    import anthropic as anthropic
    import openai as openai
else:
    anthropic = _WhenUsed("anthropic")
    openai = _WhenUsed("openai")


def anthropic_sdk(**options: Any) -> anthropic.AsyncAnthropic:
    http = anthropic.DefaultAsyncHttpxClient(verify=False)
    return anthropic.AsyncAnthropic(http_client=http, **options)


def openai_sdk(**options: Any) -> openai.AsyncOpenAI:
    http = openai.DefaultAsyncHttpxClient(verify=False)
    return openai.AsyncOpenAI(http_client=http, **options)
