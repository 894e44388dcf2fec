"""An agent in a loop the guard holds: it reads the same unchanged file each
turn, a cent a call at the scripted price, and the sentence it is held with."""

from __future__ import annotations

from plane.wire.protocol import Usage
from tests.support.fixtures_plane import RunningPlane

CENT = Usage(input_tokens=10)
"""$0.01 at the scripted price ($0.001 a token)."""
READ = ("read_file", {"path": "a.txt"})


def held(agent: str) -> str:
    """What the guard says when it holds `agent` at its fifth read, $0.09 in."""
    return (
        f'{agent} is held: it called read_file {{"path": "a.txt"}} 5 times in a row with the '
        "same result; those calls cost $0.09 since 12:00 UTC. It stays held until the operator "
        f"resumes it (p in the TUI, `plane resume {agent}`), which lets it go on."
    )


async def read_again(plane: RunningPlane, agent: str, turns: range) -> None:
    """`agent` reads the same unchanged file in each of `turns` and answers
    (a turn its read holds leaves its answer unasked for)."""
    workspace = plane.services.roster.get(agent).workspace
    workspace.mkdir(parents=True, exist_ok=True)  # made by its first turn: not yet
    if not (workspace / "a.txt").exists():
        (workspace / "a.txt").write_text("the same every time\n")
    for n in turns:
        plane.llm.reply("", tool_calls=[READ], usage=CENT)
        plane.llm.reply(f"Read it ({n}).", usage=CENT)
        await plane.turn(agent, f"look at a.txt, time {n}")
    await plane.quiet()
