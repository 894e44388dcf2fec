"""A gateway client's conversations as Chat Completions takes them: an
honest session that reads files and fixes tests, which no loop guard may
hold, on one plane or across a fleet's."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
    )

HONEST_READS = [(f"src/m{n % 20}.py", f"def f{n % 20}(): ...") for n in range(25)] + [
    ("pytest", f"FAILED test_x - assert {n} == 15\n1 failed, {n} passed") for n in range(15)
]
"""Forty calls' reads: twenty files (some twice, unchanged), then a test-fix
cycle whose output is alike but changes each time."""


def chat_with_reads(reads: list[tuple[str, str]]) -> list[ChatCompletionMessageParam]:
    """A Chat Completions conversation: a question, then each (file, what the
    read returned) as a tool call and its result."""
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "fix the build"}]
    for n, (path, result) in enumerate(reads):
        call: ChatCompletionMessageFunctionToolCallParam = {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": path})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": result})
    return messages
