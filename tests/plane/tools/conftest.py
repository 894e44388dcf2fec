"""A fake `ToolContext`: the plane's side of the delegating tools, recorded.

The context is an in-process protocol (the runtime implements it), so a fake
that records what it was asked and answers plainly tests the tools' side
exactly: what they validate, what they pass on, what they give back.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from plane.clock import ManualClock
from plane.tools import registry
from plane.tools.base import ToolResult

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@dataclass
class FakeContext:
    agent: str
    workspace: Path
    clock: ManualClock
    sandboxed: bool = False
    asked: list[tuple[str, Any]] = field(default_factory=list)

    async def schedule_turn(self, at: datetime, note: str) -> str:
        self.asked.append(("schedule_turn", (at, note)))
        return f"Booked a turn at {at.isoformat()}."

    async def ask_limit(self, value: str) -> str:
        self.asked.append(("ask_limit", value))
        return f"asked for {value}"

    async def budget_status(self) -> str:
        self.asked.append(("budget_status", None))
        return "$0.42 spent today, of $5.00 a day."

    async def ask_scout(self, question: str, paths: list[str]) -> str:
        self.asked.append(("ask_scout", (question, paths)))
        return "The scout says: 42."

    async def retrieve(
        self,
        ref: str,
        *,
        lines: str | None,
        chars: str | None,
        pointer: str | None,
        grep: str | None,
    ) -> str:
        self.asked.append(
            (
                "retrieve",
                {"ref": ref, "lines": lines, "chars": chars, "pointer": pointer, "grep": grep},
            )
        )
        return "retrieved"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
def ctx(workspace: Path) -> FakeContext:
    return FakeContext(agent="demo", workspace=workspace, clock=ManualClock(NOW))


Run = Callable[..., Awaitable[ToolResult]]


@pytest.fixture
def run(ctx: FakeContext) -> Run:
    """`await run("read_file", path="a.txt")`: a call through the registry,
    with keyword arguments as the model's JSON."""

    async def _run(name: str, /, **arguments: Any) -> ToolResult:
        return await registry.call(name, json.dumps(arguments), ctx)

    return _run
