"""A small MCP server written with the official SDK, spoken to over stdio:
what an agent's `mcp:` block starts in the tests.

    python tests/support/mcp_notes.py

Its tools keep notes in a file of the directory it runs in (the agent's
workspace) and say where they run, so a test sees both the tool work and
the place the plane put it.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes", version="1.0")
NOTES = Path("notes.txt")
answered = 0


@server.tool()
def add_note(text: str) -> str:
    """Add a line to the notes."""
    with NOTES.open("a") as notes:
        notes.write(text + "\n")
    return f"noted ({len(NOTES.read_text().splitlines())} notes)"


@server.tool()
def read_notes() -> str:
    """Every note, one a line."""
    return NOTES.read_text() if NOTES.exists() else "(no notes)"


@server.tool()
def count() -> str:
    """How many calls this process has answered, this one included."""
    global answered
    answered += 1
    return f"call {answered} of this process"


@server.tool()
def where() -> str:
    """Where this server runs, and what of the environment it was given."""
    return f"cwd={os.getcwd()} HOME={os.environ.get('HOME')} keys={sorted(os.environ)}"


if __name__ == "__main__":
    server.run()
