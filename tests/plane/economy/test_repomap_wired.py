"""The repo map in a running plane: a file read in one session is on the
map, and the next session's system prompt carries the ## Repo Map layer —
fixed for that session, so the prompt cache is not broken by each read."""

from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG


async def test_a_read_file_reaches_the_next_turns_prompt(start_plane):
    plane = await start_plane(CONFIG + "repo_map:\n  enabled: true\n")
    workspace = plane.services.roster.get("demo").workspace
    workspace.mkdir(parents=True, exist_ok=True)  # made by its first turn: not yet
    (workspace / "billing.py").write_text(
        '"""Charges each call to the day its cost became known."""\n\n'
        "def settle(call):\n    return call\n"
    )
    plane.llm.reply("", tool_calls=[("read_file", {"path": "billing.py"})], usage=Usage())
    plane.llm.reply("Read it.", usage=Usage())
    await plane.turn("demo", "read billing.py")
    assert "## Repo Map" not in plane.llm.requests[0]["messages"][0]["content"]
    assert (workspace / "REPO_MAP.json").exists()

    plane.llm.reply("Noted.", usage=Usage())
    await plane.turn("demo", "what do you know?")
    same_session = plane.llm.requests[-1]["messages"][0]["content"]
    assert same_session == plane.llm.requests[0]["messages"][0]["content"], "cache-safe"

    await plane.services.transcript.replace("demo", [])  # a new session
    plane.llm.reply("Noted.", usage=Usage())
    await plane.turn("demo", "what do you know?")
    system = plane.llm.requests[-1]["messages"][0]["content"]
    assert "## Repo Map" in system and "billing.py" in system and "settle" in system
    assert system.endswith("(UTC)."), "the map sits in the stable part, before the date tail"
