"""The loop and stall guard on scripted sessions: how soon each loop is held
and what it cost, and whether honest sessions of the same length are ever held.

    .venv/bin/python bench/guard.py [--turns N]

Each session runs on a real plane of its own (a temporary home, its SQLite
file, its gateway on a real port), its model the scripted LLM server
(tests/support/scripted_llm.py) over real sockets, with the guard's default
settings. The plane's own agent works in ambient turns, one a minute on the
plane's clock (no message from anyone: nothing that is news by itself), or
in one turn given one message; a gateway agent's client is the official
SDK. Every call uses 8,000 prompt tokens and 300 output tokens at $3 and $15
per million (a mid-sized model's prices): $0.0285 a call.

Loops: the same tool call with the same result (within a turn; across
turns), two calls alternating with the same results, the same answer turn
after turn, a stall (files read over and over in no fixed order, nothing
new), a gateway client resending its request, one cutting every stream
after its first event and asking the same again, a gateway client bringing
the same tool result request after request. Honest sessions, `--turns`
calls long: a refactor that reads many files (some twice) and writes them, a
test-fix cycle whose test log is alike but changes every run, a poll whose
results change while its answer stays the same, a gateway session reading
files and fixing tests, a gateway client's fan-out of the same request, one
asking the same question each run, one whose provider cuts four streams in
five (a reset, an `overloaded_error` event) and whose client asks again.

It prints, for each loop, the calls and the repeats until it was held, the
dollars spent until then, and the time: on the plane's clock (ambient turns
a minute apart) and in this run (sockets, SQLite, the scripted server: read
high on a loaded machine). Aims: every loop held within 10 repeats and
before $0.50; 0 holds on the honest sessions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import anthropic  # noqa: E402
import httpx  # noqa: E402
import openai  # noqa: E402

from plane.clock import ManualClock  # noqa: E402
from plane.config import parse_config  # noqa: E402
from plane.daemon.server import Plane  # noqa: E402
from plane.gateway.keys import Keys  # noqa: E402
from plane.home import Home  # noqa: E402
from plane.wire import protocol as p  # noqa: E402
from plane.wire.protocol import Usage  # noqa: E402
from tests.support.gateway_sessions import chat_with_reads  # noqa: E402
from tests.support.scripted_llm import (  # noqa: E402
    CutStream,
    Reply,
    ScriptedLLM,
    Step,
    Verbatim,
)

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
USAGE = Usage(input_tokens=8000, output_tokens=300)
CONFIG = """
defaults:
  limitUsd: 20
  provider: scripted
  model: bench-model
  max_calls_per_turn: 100
providers:
  scripted: {{kind: openai-compatible, base_url: "{base_url}", models: [bench-model]}}
  scripted-anthropic: {{kind: anthropic, base_url: "{anthropic_url}", models: [bench-model]}}
pricing:
  bench-model: {{input: 3, cached_input: 0.3, output: 15}}
agents:
  demo: {{ambient: {{every_minutes: 1, note: Carry on with the work.}}}}
  solo: {{}}
  claude: {{provider: scripted-anthropic, gateway: {{}}}}
  aider: {{provider: scripted, gateway: {{}}}}
"""
"""`solo` works in one turn given one message; `demo` in ambient turns."""

Call = tuple[str, dict[str, Any]]
Script = Callable[[int], Call | str]
"""Turn n (from 0) → the tool call it makes, then its answer; or its answer alone."""


@dataclass
class Outcome:
    held: bool
    calls: int
    repeats: int
    spent: Decimal
    clock_min: float
    wall_s: float


class Bench:
    def __init__(self, llm: ScriptedLLM, tmp: Path) -> None:
        self.llm, self.tmp, self.made = llm, tmp, 0

    async def session(
        self, agent: str, run: Callable[[Plane, ManualClock, Keys, str], Awaitable[None]]
    ) -> Outcome:
        """A plane of its own, `run` until it returns, and what it came to."""
        self.made += 1
        home = Home(self.tmp / f"home-{self.made}")
        clock = ManualClock(NOON)
        text = CONFIG.format(base_url=self.llm.base_url, anthropic_url=self.llm.anthropic_url)
        plane = Plane(parse_config(text), home, clock, http=("127.0.0.1", 0))
        await plane.startup()
        asked_before = len(self.llm.requests)
        start = time.perf_counter()
        try:
            url = f"http://127.0.0.1:{plane.http_port}"
            await run(plane, clock, Keys(home.gateway_keys), url)
            wall = time.perf_counter() - start
            runtime = plane.runtime
            assert runtime is not None
            spec = runtime.services.roster.get(agent)
            spent = await runtime.services.ledger.spend_today(agent)
            return Outcome(
                spec.loop is not None,
                len(self.llm.requests) - asked_before,
                spec.loop.times if spec.loop else 0,
                spent,
                (clock.now() - NOON).total_seconds() / 60,
                wall,
            )
        finally:
            plane.stop_event.set()
            await plane.shutdown()


def model(script: Script) -> Callable[[dict[str, Any], int], Reply]:
    """The scripted model: a turn's first call makes the turn's tool call
    (or answers); once the tool's result is in, it answers."""
    turn = [-1]

    def respond(body: dict[str, Any], serial: int) -> Reply:
        last = body["messages"][-1]
        if last.get("role") != "tool":
            turn[0] += 1
        step = script(turn[0])
        if isinstance(step, str) or last.get("role") == "tool":
            answer = step if isinstance(step, str) else f"Done with step {turn[0]}."
            return Reply(answer, USAGE)
        return Reply("", USAGE, tool_calls=(step,))

    return respond


def always(call: Call) -> Callable[[dict[str, Any], int], Reply]:
    """A model that makes the same call whatever it is told (one turn)."""
    return lambda body, serial: Reply("", USAGE, tool_calls=(call,))


async def idle(plane: Plane) -> None:
    assert plane.runtime is not None
    for _ in range(4000):
        await asyncio.sleep(0.005)
        if all(w.idle for w in plane.runtime.crew.workers.values()):
            return
    raise TimeoutError("the agents kept working")


def workspace(plane: Plane, agent: str) -> Path:
    """The agent's workspace, made now (its first turn would make it)."""
    assert plane.runtime is not None
    made = plane.runtime.services.roster.get(agent).workspace
    made.mkdir(parents=True, exist_ok=True)
    return made


async def ambient(
    plane: Plane, clock: ManualClock, turns: int, before: Callable[[int], None] | None = None
) -> None:
    """`turns` minutes, each its ambient turn to its end; stops once held."""
    assert plane.runtime is not None
    for n in range(turns):
        if plane.runtime.services.roster.get("demo").loop is not None:
            return
        if before is not None:
            before(n)
        subscription = plane.bus.subscribe()
        try:
            await clock.advance(timedelta(seconds=61))
            while True:
                event = await asyncio.wait_for(subscription.next(), 30)
                if isinstance(event, p.TurnFinished) and event.agent == "demo":
                    break
        finally:
            plane.bus.unsubscribe(subscription)
        await idle(plane)


def files(plane: Plane, agent: str, count: int, text: str = "def f(): ...\n") -> None:
    for n in range(count):
        (workspace(plane, agent) / f"m{n}.py").write_text(text.replace("f", f"f{n}"))


def read(path: str) -> Call:
    return ("read_file", {"path": path})


# ── the sessions ─────────────────────────────────────────────────────────────


def plane_loops(bench: Bench, llm: ScriptedLLM) -> dict[str, Callable[[], Awaitable[Outcome]]]:
    async def within_a_turn(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        files(plane, "solo", 1)
        llm.responder = always(read("m0.py"))
        assert plane.runtime is not None
        await plane.runtime.api.handle(p.Send(agent="solo", text="Find the bug in m0.py."))
        await idle(plane)

    async def across_turns(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        files(plane, "demo", 1)
        llm.responder = model(lambda n: read("m0.py"))
        await ambient(plane, clock, 30)

    async def alternating(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        files(plane, "demo", 2)
        llm.responder = model(lambda n: read(f"m{n % 2}.py"))
        await ambient(plane, clock, 30)

    async def same_answer(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        llm.responder = model(lambda n: "Nothing needs doing right now.")
        await ambient(plane, clock, 30)

    async def stall(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        files(plane, "demo", 4)
        order = "abcdbadccdabacbddbcabcaddcbacbdaadcbbdca"
        answers = ["Looked.", "Checked.", "Seen."]

        def script(n: int) -> Call:
            return read(f"m{'abcd'.index(order[n % len(order)])}.py")

        respond = model(script)

        def varied(body: dict[str, Any], serial: int) -> Reply:
            reply = respond(body, serial)
            return Reply(answers[serial % 3], USAGE) if reply.text else reply

        llm.responder = varied
        await ambient(plane, clock, 40)

    def on(agent: str, run: Any) -> Callable[[], Awaitable[Outcome]]:
        return lambda: bench.session(agent, run)

    return {
        "same call, same result, in one turn": on("solo", within_a_turn),
        "same call, same result, across turns": on("demo", across_turns),
        "two calls alternating": on("demo", alternating),
        "same answer turn after turn": on("demo", same_answer),
        "stall: nothing new": on("demo", stall),
    }


async def chat_session(url: str, key: str, reads: list[tuple[str, str]]) -> None:
    """A Chat Completions client whose conversation grows by one read a call;
    it stops when the plane refuses it."""
    async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0) as client:
        for n in range(1, len(reads) + 1):
            try:
                await client.chat.completions.create(
                    model="bench-model", max_tokens=300, messages=chat_with_reads(reads[:n])
                )
            except openai.BadRequestError:
                return


ASKED = [
    {"role": "user", "content": "Summarise the open issues."},
    {"role": "assistant", "content": "Which repository?"},
    {"role": "user", "content": "plane."},
]
OVERLOADED = (
    b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error",'
    b' "message": "Overloaded"}}\n\n'
)


def messages_start(usage: Usage) -> bytes:
    """Anthropic's first event of a stream, announcing the prompt's tokens."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "bench-model",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": 1},
    }
    data = json.dumps({"type": "message_start", "message": message})
    return f"event: message_start\ndata: {data}\n\n".encode()


def chat_anthropic(calls: int) -> list[dict[str, Any]]:
    """A Messages conversation that reads a new file or test run each call."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix the build"}]
    for n in range(calls - 1):
        use = {"type": "tool_use", "id": f"t{n}", "name": "read_file", "input": {"n": n}}
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"m{n}.py: x = {n}"}
        messages.append({"role": "assistant", "content": [use]})
        messages.append({"role": "user", "content": [result]})
    return messages


def gateway_sessions(
    bench: Bench, llm: ScriptedLLM, turns: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    async def resending(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        llm.responder = lambda body, serial: Reply("The same.", USAGE)
        key = keys.make("claude")
        hello = [  # a conversation under way, sent again and again
            {"role": "user", "content": "Summarise the open issues."},
            {"role": "assistant", "content": "Which repository?"},
            {"role": "user", "content": "plane."},
        ]
        async with anthropic.AsyncAnthropic(base_url=url, api_key=key, max_retries=0) as client:
            for _ in range(30):
                try:
                    await client.messages.create(
                        model="bench-model", max_tokens=300, messages=hello
                    )
                except anthropic.RateLimitError:
                    return

    async def same_result(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        llm.responder = lambda body, serial: Reply("", USAGE, tool_calls=(read("a.py"),))
        await chat_session(url, keys.make("aider"), [("a.py", "x = 1\n")] * 30)

    async def alternating(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        llm.responder = lambda body, serial: Reply("", USAGE, tool_calls=(read("a.py"),))
        await chat_session(url, keys.make("aider"), [("a.py", "A"), ("b.py", "B")] * 15)

    async def honest(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        llm.responder = lambda body, serial: Reply("ok", USAGE)
        half = turns // 2
        reads = [(f"src/m{n % 20}.py", f"def f{n % 20}(): ...") for n in range(half)]
        reads += [
            ("pytest", f"FAILED test_x - assert {n} == {turns}\n1 failed, {n} passed")
            for n in range(turns - half)
        ]
        await chat_session(url, keys.make("aider"), reads)

    async def fan_out(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        llm.responder = lambda body, serial: Reply("ok", USAGE, delay_s=0.05)
        key = keys.make("claude")
        hello = [{"role": "user", "content": "Classify this ticket."}]
        async with anthropic.AsyncAnthropic(base_url=url, api_key=key, max_retries=0) as client:
            for _ in range(max(1, turns // 8)):
                await asyncio.gather(
                    *(
                        client.messages.create(model="bench-model", max_tokens=300, messages=hello)
                        for _ in range(8)
                    )
                )

    async def scheduled(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        """A schedule opening a session with the same question every ten minutes."""
        llm.responder = lambda body, serial: Reply("The build is green.", USAGE)
        key = keys.make("claude")
        asked = [{"role": "user", "content": "Is the build green?"}]
        async with anthropic.AsyncAnthropic(base_url=url, api_key=key, max_retries=0) as client:
            for _ in range(turns):
                await client.messages.create(model="bench-model", max_tokens=300, messages=asked)
                await clock.advance(timedelta(minutes=10))

    async def cutting(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        """A client that gives up on every answer after its first event (its
        own timeout) and asks the same again."""
        llm.responder = lambda body, serial: Reply("The same.", USAGE, pause_s=0.2)
        heads = {"x-api-key": keys.make("claude"), "anthropic-version": "2023-06-01"}
        body = {"model": "bench-model", "max_tokens": 300, "stream": True, "messages": ASKED}
        for _ in range(30):
            async with httpx.AsyncClient(base_url=url, timeout=30) as http:
                async with http.stream("POST", "/v1/messages", json=body, headers=heads) as answer:
                    if answer.status_code == 429:
                        return
                    async for _chunk in answer.aiter_bytes():
                        break
            await asyncio.sleep(0.3)  # the plane finds it gone as the rest of the answer comes

    async def provider_cuts(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        """Files read and tests fixed, each call's stream cut by its provider
        (a reset, an `overloaded_error` event) four times before it is
        answered: the client asks the same five times in a row, which would
        be held if the provider's cuts were taken for the client's repeats."""
        started = messages_start(USAGE)

        def flaky(body: dict[str, Any], serial: int) -> Step:
            if serial % 5 in (1, 3):
                return CutStream("The answer beg", reset=True, usage=USAGE)
            if serial % 5 in (2, 4):
                return Verbatim((started, OVERLOADED))
            return Reply("ok", USAGE)

        llm.responder = flaky
        key = keys.make("claude")
        async with anthropic.AsyncAnthropic(base_url=url, api_key=key, max_retries=0) as client:
            for n in range(1, turns + 1):
                messages = chat_anthropic(n)
                for _ in range(5):
                    try:
                        async with client.messages.stream(
                            model="bench-model", max_tokens=300, messages=messages
                        ) as stream:
                            await stream.get_final_message()
                        break
                    except anthropic.RateLimitError:
                        return
                    except (anthropic.APIConnectionError, anthropic.APIStatusError):
                        continue  # the provider failed: asked again

    def on(agent: str, run: Any) -> Callable[[], Awaitable[Outcome]]:
        return lambda: bench.session(agent, run)

    loops = {
        "gateway: client resends its request": on("claude", resending),
        "gateway: client cuts streams, asks again": on("claude", cutting),
        "gateway: same tool result each request": on("aider", same_result),
        "gateway: two results alternating": on("aider", alternating),
    }
    fine = {
        "gateway: reads files, fixes tests": on("aider", honest),
        "gateway: fan-out of one request": on("claude", fan_out),
        "gateway: the same question each run": on("claude", scheduled),
        "gateway: retries after provider cuts": on("claude", provider_cuts),
    }
    return loops, fine


def plane_honest(
    bench: Bench, llm: ScriptedLLM, turns: int
) -> dict[str, Callable[[], Awaitable[Outcome]]]:
    async def refactor(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        files(plane, "demo", 30)
        count = 30

        def script(n: int) -> Call:
            if n % 3 == 2:  # every third turn writes what it read
                return ("write_file", {"path": f"m{n % count}.py", "content": f"# v{n}\n"})
            return read(f"m{(n * 7) % count}.py")  # some files again, some changed since

        llm.responder = model(script)
        await ambient(plane, clock, turns)

    async def test_fix(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        log = workspace(plane, "demo") / "test.log"

        def run_tests(n: int) -> None:  # what its last fix changed
            failing = max(0, 12 - n // 3)
            log.write_text(f"collected 40 items\n{failing} failed, {40 - failing} passed\n")

        def script(n: int) -> Call:
            if n % 2:
                return ("write_file", {"path": "fix.py", "content": f"# attempt {n}\n"})
            return read("test.log")

        llm.responder = model(script)
        await ambient(plane, clock, turns, run_tests)

    async def poll(plane: Plane, clock: ManualClock, keys: Keys, url: str) -> None:
        status = workspace(plane, "demo") / "status.txt"
        scripted = model(lambda n: read("status.txt"))

        def same_words(body: dict[str, Any], serial: int) -> Reply:
            reply = scripted(body, serial)
            return Reply("Still building.", USAGE) if reply.text else reply

        llm.responder = same_words
        done = turns

        def progress(n: int) -> None:
            status.write_text(f"build {n * 100 // done}% done\n")

        await ambient(plane, clock, turns, progress)

    def on(run: Any) -> Callable[[], Awaitable[Outcome]]:
        return lambda: bench.session("demo", run)

    return {
        "refactor: reads and writes 30 files": on(refactor),
        "test-fix cycle, alike but changing": on(test_fix),
        "poll, same answer, changing results": on(poll),
    }


async def main(turns: int) -> None:
    with ScriptedLLM() as llm, tempfile.TemporaryDirectory(prefix="plane-bench-guard-") as tmp:
        bench = Bench(llm, Path(tmp))
        gateway_loops, gateway_fine = gateway_sessions(bench, llm, turns)
        loops = {**plane_loops(bench, llm), **gateway_loops}
        fine = {**plane_honest(bench, llm, turns), **gateway_fine}
        each = f"{USAGE.input_tokens:,} in + {USAGE.output_tokens} out at $3/$15 per M"
        print(f"loops (each call {each})")
        print(
            f"  {'session':<40} {'held':>4} {'calls':>5} {'times':>7} {'spent':>7} "
            f"{'clock':>6} {'this run':>8}"
        )
        worst_repeats, worst_spent, missed = 0, Decimal(0), 0
        for name, run in loops.items():
            o = await run()
            missed += not o.held
            worst_repeats, worst_spent = max(worst_repeats, o.repeats), max(worst_spent, o.spent)
            print(
                f"  {name:<40} {'yes' if o.held else 'NO':>4} {o.calls:>5} {o.repeats:>7} "
                f"${o.spent:>6.2f} {o.clock_min:>4.0f} m {o.wall_s:>6.2f} s"
            )
        print(f"honest sessions ({turns} turns or calls each)")
        false_holds = 0
        for name, run in fine.items():
            o = await run()
            false_holds += o.held
            print(
                f"  {name:<40} {'HELD' if o.held else 'no':>4} {o.calls:>5} "
                f"{'':>7} ${o.spent:>6.2f} {o.clock_min:>4.0f} m {o.wall_s:>6.2f} s"
            )
        aims = missed == 0 and worst_repeats <= 10 and worst_spent < Decimal("0.50")
        print(
            f"every loop held: {'yes' if missed == 0 else f'no, {missed} not'}; most repeats "
            f"{worst_repeats} (aim <= 10); most spent ${worst_spent:.2f} (aim < $0.50); "
            f"false holds {false_holds} (aim 0): "
            f"{'aims met' if aims and not false_holds else 'AIMS MISSED'}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40, help="length of each honest session")
    asyncio.run(main(parser.parse_args().turns))
