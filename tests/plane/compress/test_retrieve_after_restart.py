"""What compression folded out of a tool result comes back after the plane restarts, through
the agent's `retrieve` tool, by every mode (`plane retrieve` from a shell: test_cli)."""

import json
import re

from plane.wire.protocol import Usage

FREE = Usage()
PACKAGES = "packages.json"
LISTING = json.dumps([{"id": n, "name": f"pkg{n}"} for n in range(60)], indent=2)


def tool_results(request):
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def test_every_retrieve_mode_works_in_a_restarted_plane(start_plane):
    plane = await start_plane()
    workspace = plane.services.roster.get("demo").workspace
    workspace.mkdir(parents=True, exist_ok=True)  # made by its first turn: not yet
    (workspace / PACKAGES).write_text(LISTING)
    plane.llm.reply("", tool_calls=[("run_command", {"command": f"cat {PACKAGES}"})], usage=FREE)
    plane.llm.reply("Read it.", usage=FREE)
    await plane.turn("demo", "read the packages")
    [shown] = tool_results(plane.llm.requests[-1])
    [ref] = re.findall(r"ref:(k_[A-Za-z0-9_-]+)", shown)
    assert '"pkg30"' not in shown

    plane = await start_plane(restart=plane)
    asks = {
        "whole": {},
        "lines": {"lines": "2:3"},
        "chars": {"chars": "1:40"},
        "pointer": {"pointer": "/27/name"},
        "grep": {"grep": 'pkg3[0-9]"'},
    }
    for args in asks.values():
        plane.llm.reply("", tool_calls=[("retrieve", {"ref": ref, **args})], usage=FREE)
    plane.llm.reply("Got them.", usage=FREE)
    await plane.turn("demo", "look closer")
    got = dict(zip(asks, tool_results(plane.llm.requests[-1])[-len(asks) :], strict=True))

    assert '"name": "pkg30"' in got["whole"] and got["whole"] in LISTING
    first = got["whole"].split("\n")
    assert got["lines"] == "\n".join(first[1:3])
    assert got["chars"] == got["whole"][:40]
    assert got["pointer"] == "pkg30"  # the folded run starts at the fourth item: 3 + 27
    assert got["grep"].count("pkg3") == 10
