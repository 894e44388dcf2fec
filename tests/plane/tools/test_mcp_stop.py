"""Stopping an MCP server never swallows the stopper's own stop: a turn cut,
or a plane stopping, while a server closes still ends."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from plane.config import McpServerConfig

NOTES = Path(__file__).parents[2] / "support" / "mcp_notes.py"


@pytest.mark.slow
async def test_a_stopper_cancelled_while_the_server_closes_is_cancelled_and_the_link_starts_afresh(
    tmp_path: Path,
) -> None:
    from plane.tools.mcp.link import Link  # here: every worker collects this module

    config = McpServerConfig(command=sys.executable, args=[str(NOTES)])
    link = Link("notes", config, tmp_path, sandboxed=False)
    assert "add_note" in [tool.name for tool in await link.start()]
    stopping = asyncio.create_task(link.stop())
    await asyncio.sleep(0)  # told to stop: it waits for the server to close
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    # The link is left as stopped: its next call starts the server afresh.
    result = await link.call("count", {})
    assert "call 1 of this process" in str(result.content)
    await link.stop()
