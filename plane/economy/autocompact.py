"""Auto-compact: when the prompt nears the context window, summarise.

The whole history is saved first, as JSONL under the agent's workspace
(`.transcripts/transcript_{timestamp}.jsonl`), so nothing is lost; the
model is asked for a summary in nine parts; the history becomes that one
message plus the files read most recently. The ask goes after the history,
with the same system prompt and tools as the calls before it, so the
provider reads the history from its cache rather than anew. Three failures in a row trip a
breaker, and the agent stops trying (a summary that keeps failing is a bill
that keeps growing).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from plane.providers.base import ChatMessage, ToolSpec

RESERVE_TOKENS = 13_000
"""Head-room kept free below the window (a quarter of it, on small windows)."""
BREAKER_TRIPS_AT = 3
RECENT_FILES = 10

SUMMARY_ASK = """Summarise this conversation so far so that it can continue from your summary alone.
Answer with the summary as text; call no tool.
Write nine short sections, with these headings:
1. Request — what the operator asked for, in their words where it matters.
2. Concepts — the technical ideas and decisions in play.
3. Files — the files read or changed, and why each matters.
4. Errors — errors met, verbatim where short.
5. Fixes — what fixed them.
6. User messages — every operator message, briefly, in order.
7. To-dos — what is still open.
8. Current work — what was being done just now.
9. Next step — the very next thing to do."""


def over_budget(
    system: str,
    history: list[ChatMessage],
    context_window: int,
    max_output: int,
    tools: Sequence[ToolSpec] = (),
) -> bool:
    """Whether the estimated prompt leaves less than the reserve free. The
    prompt is the system prompt, the history and the tools' schemas (an MCP
    server's can be thousands of tokens: more than the reserve)."""
    reserve = min(RESERVE_TOKENS, context_window // 4)
    chars = len(system) + sum(len(m.content) for m in history)
    chars += sum(len(t.name) + len(t.description) + len(str(t.parameters)) for t in tools)
    chars += sum(len(c.arguments) for m in history for c in m.tool_calls)
    return math.ceil(chars / 3.5) > context_window - max_output - reserve


def save(history: list[ChatMessage], workspace: Path, now: datetime) -> Path:
    """The whole history as JSONL, one message a line."""
    folder = workspace / ".transcripts"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"transcript_{now:%Y%m%dT%H%M%S%fZ}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for message in history:
            row = {
                "role": message.role,
                "content": message.content,
                "tool_calls": [c.__dict__ for c in message.tool_calls],
                "tool_call_id": message.tool_call_id,
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def recent_files(history: list[ChatMessage]) -> list[str]:
    """Paths the agent read, most recent first, each once."""
    seen: list[str] = []
    for message in reversed(history):
        for call in message.tool_calls:
            if call.name != "read_file":
                continue
            try:
                path = json.loads(call.arguments).get("path")
            except (ValueError, AttributeError):
                continue
            if isinstance(path, str) and path not in seen:
                seen.append(path)
    return seen[:RECENT_FILES]


def replacement(summary: str, files: list[str], saved: Path) -> list[ChatMessage]:
    """The one message the history becomes. `saved` is where the whole history
    is, relative to the workspace: the path the agent's `read_file` takes."""
    listed = "\n".join(f"- {f}" for f in files) or "- (none)"
    return [
        ChatMessage(
            "user",
            f"[The conversation so far was summarised to fit the context window; the full "
            f"transcript is in {saved}.]\n\n{summary}\n\nFiles read most recently:\n{listed}",
        )
    ]


@dataclass
class Breaker:
    """One agent's summaries that failed in a row; tripped at three."""

    failures: int = 0

    @property
    def tripped(self) -> bool:
        return self.failures >= BREAKER_TRIPS_AT

    def failed(self) -> bool:
        """Count a failure; True when this one trips the breaker."""
        self.failures += 1
        return self.failures == BREAKER_TRIPS_AT

    def succeeded(self) -> None:
        self.failures = 0
