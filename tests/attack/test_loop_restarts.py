"""The loop guard attacked by a loop spread across restarts: a plane killed
and restarted (by systemd, a crash loop, an operator) between an agent's
repeats counts them as one loop, held at the fifth overall (README "Guard
rails": the same tool call with the same result again and again is held long
before the ceiling). What the guard counted goes with its agent: renamed, it
is the new name's; deleted, an agent made later with its name starts afresh."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from plane.wire import protocol as p
from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.fixtures_plane import RunningPlane, StartPlane
from tests.support.looping import CENT, held, read_again
from tests.support.sdks import ON_ONE_WORKER, anthropic, anthropic_sdk

if TYPE_CHECKING:
    from anthropic.types import MessageParam


async def last_said(plane: RunningPlane, agent: str) -> str:
    """The last of its conversation (a hold's notice comes after the turn's cost)."""
    return (await plane.services.conversation.history(agent, 1))[-1].text


async def test_a_loop_spread_across_a_restart_is_held_at_the_fifth_repeat_overall(
    start_plane: StartPlane,
):
    """Three repeats, a restart, two more: held at the fifth, its figures
    counted from the first call before the restart. Before, the count began
    again at each start: an agent got four more repeats a restart."""
    plane = await start_plane()
    await read_again(plane, "demo", range(3))
    plane = await start_plane(restart=plane)
    await read_again(plane, "demo", range(3, 5))
    assert await last_said(plane, "demo") == held("demo")
    assert plane.llm.pending == 1, "the fifth turn's answer was never asked for"
    state = await plane.rows.state("demo")
    assert (state.status, state.hold_reason) == ("held", "loop")


async def test_a_renamed_agents_count_goes_with_it(start_plane: StartPlane):
    plane = await start_plane()
    await plane.runtime.api.handle(p.NewAgent(name="made", model="scripted-model", role="r"))
    await read_again(plane, "made", range(3))
    await plane.runtime.api.handle(p.RenameAgent(agent="made", new_name="moved"))
    plane = await start_plane(restart=plane)
    await read_again(plane, "moved", range(3, 5))
    assert await last_said(plane, "moved") == held("moved")
    kept = await plane.db.fetchall("SELECT agent FROM guard_history")
    assert [row["agent"] for row in kept] == ["moved"]


async def test_a_deleted_agents_count_goes_with_it(start_plane: StartPlane):
    """An agent made later with its name is not held for the loop of the one deleted."""
    plane = await start_plane()
    await plane.runtime.api.handle(p.NewAgent(name="made", model="scripted-model", role="r"))
    await read_again(plane, "made", range(3))
    await plane.runtime.api.handle(p.DeleteAgent(agent="made"))
    await plane.runtime.api.handle(p.NewAgent(name="made", model="scripted-model", role="r"))
    plane = await start_plane(restart=plane)
    await read_again(plane, "made", range(3, 7))
    answers = [m.text for m in await plane.services.conversation.history("made", 50)]
    assert [t for t in answers if t.startswith("Read it")][-4:] == [
        f"Read it ({n})." for n in range(3, 7)
    ]
    assert not any("is held" in t for t in answers), answers


async def resend(gw: GatewayPlane, times: int) -> None:
    """The gateway agent's client sends the same request under way `times` times."""
    conversation: list[MessageParam] = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "Hello. What shall I look at?"},
        {"role": "user", "content": "the open issues"},
    ]
    client = anthropic_sdk(base_url=gw.url, api_key=gw.keys["claude"], max_retries=0)
    async with client:
        for _ in range(times):
            await client.messages.create(
                model="scripted-model", max_tokens=10, messages=conversation
            )


@pytest.mark.slow
@ON_ONE_WORKER
@pytest.mark.timeout(60)
async def test_a_gateway_client_resending_across_a_restart_is_held_at_the_fifth(
    start_gateway: StartGateway,
):
    """The last request before the stop is counted too: nothing the plane
    writes follows it, so the stop writes it."""
    gw = await start_gateway()
    for _ in range(6):
        gw.llm.reply("the same", usage=CENT)
    await resend(gw, 3)
    gw = await start_gateway(restart=gw)
    await resend(gw, 2)
    with pytest.raises(anthropic.RateLimitError) as refused:
        await resend(gw, 1)
    assert (
        "claude is held: its client sent the same request 5 times in a row; those calls cost "
        "$0.05 since 12:00 UTC." in str(refused.value)
    )
    assert len(gw.llm.requests) == 5


async def test_a_history_the_store_will_not_take_costs_no_write_of_money(
    start_plane: StartPlane, caplog: pytest.LogCaptureFixture
):
    """The guard's history is written at the end of the transactions that
    carry the ledger's writes: one the store refuses (here its table gone) is
    dropped with one line in plane.log, and every call is still counted."""
    plane = await start_plane()
    await plane.db.write(lambda conn: conn.execute("DROP TABLE guard_history"))
    with caplog.at_level("ERROR"):
        await read_again(plane, "demo", range(2))
    calls = await plane.db.fetchall("SELECT status, cost_usd FROM calls WHERE agent = 'demo'")
    assert [tuple(row) for row in calls] == [("settled", "0.01")] * 4
    assert any("histories were not kept" in r.getMessage() for r in caplog.records)
