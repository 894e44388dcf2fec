"""A tool result reaches the model compressed as what printed it: the runtime hands the
compressor the command (run_command's command line, read_file's path), and the plane's
own `$ command … [exit N · Ts]` frame stays around the compressed body."""

from __future__ import annotations

from pathlib import Path

from plane.wire.protocol import Usage

FREE = Usage()
SOURCE = Path("/usr/lib/python3.11/textwrap.py")


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def test_a_python_file_read_by_command_or_tool_is_compressed_as_python(start_plane):
    plane = await start_plane()
    workspace = plane.services.roster.get("demo").workspace
    workspace.mkdir(parents=True, exist_ok=True)  # made by its first turn: not yet
    (workspace / "wrap.py").write_text(SOURCE.read_text())
    plane.llm.reply("", tool_calls=[("run_command", {"command": "cat wrap.py"})], usage=FREE)
    plane.llm.reply("", tool_calls=[("read_file", {"path": "wrap.py"})], usage=FREE)
    plane.llm.reply("Read it.", usage=FREE)
    await plane.turn("demo", "read wrap.py")
    ran, read = tool_results(plane.llm.requests[-1])

    assert ran.startswith("$ cat wrap.py\n") and ran.rstrip().endswith("s]")
    assert "[exit 0 · " in ran.split("\n")[-1]
    for shown in (ran, read):
        assert "...  # [… body" in shown  # parsed as Python: signatures kept, bodies elided
        assert "def dedent(text):" in shown
