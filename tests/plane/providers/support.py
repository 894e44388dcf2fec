"""Helpers shared by the provider tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plane.providers.base import ChatMessage, CompletionRequest

SECRET = "sk-test-0123456789abcdefSECRET"
"""The API key every scripted provider carries; no error may contain it."""


@dataclass
class Sleeps:
    """An injectable sleep that records its waits and returns at once."""

    waits: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@dataclass
class Collected:
    """An `on_text` that keeps what streamed."""

    pieces: list[str] = field(default_factory=list)

    async def __call__(self, text: str) -> None:
        self.pieces.append(text)


def ask(text: str = "hello there", *, stream: bool = True, **kw: Any) -> CompletionRequest:
    return CompletionRequest(
        model=kw.pop("model", "test-model"),
        system=kw.pop("system", "You are terse."),
        messages=(ChatMessage("user", text),),
        stream=stream,
        **kw,
    )
