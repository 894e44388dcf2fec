"""What the official SDKs' replies say, read as their types allow."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from anthropic.types import Message


def text_of(reply: Message) -> str:
    """The text of a Messages reply's first block: the scripted provider
    answers in text, so a block of another kind (a tool call, thinking) fails
    here, by its kind."""
    from anthropic.types import TextBlock  # the SDK is imported by the test using it

    block = reply.content[0]
    assert isinstance(block, TextBlock), f"a {block.type} block, not text"
    return block.text
