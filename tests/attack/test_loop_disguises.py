"""The loop guard attacked by an agent whose repeats are dressed differently
each time, and by honest work that looks like a repeat. DESIGN, "Guard
rails beyond a ceiling": "An agent that repeats itself — the same tool call
with the same result again and again, turns whose answers are the same, a
gateway client resending the same request — is held like a ceiling holds
… long before the ceiling."

A command run again with nothing changed gives the same result but for the
colours it prints, the spaces at its lines' ends and the time it took or
was run at: that is the same result, held at the fifth. What a poll counts
(a percentage, tests passed) is its news, never dressed away."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from plane.agents.guard import Guard, Loop, Seen, Step, seen
from plane.config import GuardConfig
from plane.gateway.repeats import chat_look

T0 = datetime(2026, 11, 29, 12, tzinfo=UTC)
CENT = Decimal("0.01")
PYTEST = '{"command": "pytest -q"}'


def fed(*calls: tuple[Seen, ...] | Step) -> list[Loop | None]:
    """What a guard with the default settings finds at each call, a second apart."""
    guard = Guard(GuardConfig())
    found = []
    for n, call in enumerate(calls):
        at = T0 + timedelta(seconds=n)
        found.append(guard.step(call if isinstance(call, Step) else Step(CENT, at, call)))
    return found


def runs(results: list[str]) -> list[Loop | None]:
    return fed(*((seen("run_command", PYTEST, result),) for result in results))


def held_at(found: list[Loop | None]) -> list[tuple[int, str, int]]:
    return [(n + 1, loop.kind, loop.times) for n, loop in enumerate(found) if loop is not None]


def test_the_same_result_in_other_colours_or_spacing_is_held_at_the_fifth():
    coloured = [f"\x1b[3{n}m1 failed\x1b[0m, \x1b[32m3 passed\x1b[0m" for n in range(1, 6)]
    assert held_at(runs(coloured)) == [(5, "tool", 5)]
    spaced = ["1 failed, 3 passed" + " " * n + ("\r\n" if n % 2 else "\n") for n in range(5)]
    assert held_at(runs(spaced)) == [(5, "tool", 5)]


def test_the_same_result_but_the_time_it_took_or_was_run_at_is_held_at_the_fifth():
    timed = [f"1 failed, 3 passed in 0.{41 + n * 7}s" for n in range(5)]
    assert held_at(runs(timed)) == [(5, "tool", 5)]
    stamped = [f"2026-11-29T12:00:0{n}.{n}31Z FAILED test_x (took {n + 12}ms)" for n in range(5)]
    assert held_at(runs(stamped)) == [(5, "tool", 5)]
    clocked = [f"[12:0{n}:17] build 41 still running" for n in range(5)]
    assert held_at(runs(clocked)) == [(5, "tool", 5)]


def test_the_same_answer_but_the_time_it_was_given_at_is_held_at_the_fifth():
    """Turns whose answers are the same: an ambient turn that says the time
    it looked gives the same answer each minute."""
    answers = [f"Checked at 2026-11-29 12:0{n}:00 UTC: nothing needs doing." for n in range(5)]
    steps = [Step(CENT, T0 + timedelta(minutes=n), answer=a) for n, a in enumerate(answers)]
    assert held_at(fed(*steps)) == [(5, "answer", 5)]


def test_what_a_poll_counts_is_news_however_it_is_dressed():
    """A poll that moves (tests passing one more each run, a build further
    along, a countdown) is never held, whatever its colours and timings."""
    counted = [f"\x1b[31m1 failed\x1b[0m, {n} passed in 0.{n % 9}1s" for n in range(40)]
    building = [f"[12:{n // 60:02d}:{n % 60:02d}] building: {n // 2}% done" for n in range(40)]
    counting = [f"deploy starts in {60 - n}s" for n in range(40)]
    assert held_at(runs(counted)) == []
    assert held_at(runs(building)) == []
    assert held_at(runs(counting)) == []


def test_the_same_request_with_its_keys_reordered_and_another_user_is_a_resend():
    """A gateway client resending the same request: its `user` and the order
    of its keys move, the request stays the same."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "What shall I look at?"},
        {"role": "user", "content": "the open issues"},
    ]
    bodies = []
    for n in range(5):
        body = {"model": "m", "messages": messages, "user": f"u{n}", "temperature": 0}
        bodies.append(dict(reversed(body.items())) if n % 2 else body)
    steps = [chat_look(b).step(CENT, T0 + timedelta(seconds=n)) for n, b in enumerate(bodies)]
    assert held_at(fed(*steps)) == [(5, "request", 5)]


def test_past_what_the_guard_reads_as_words_a_result_is_compared_as_it_is() -> None:
    """A gateway client's result may be megabytes, read on the event loop:
    only its first `WORDS_CHARS` lose their timings; the rest is compared as
    it is, so a run time that differs past them makes the result news."""
    from plane.agents.guard_words import WORDS_CHARS

    head = "ok\n" * (WORDS_CHARS // 3)
    early = [f"ran in 0.{n}s\n" + head + "tail" for n in range(5)]
    late = [head + f"tail ran in 0.{n}s" for n in range(5)]
    assert runs(early)[-1] is not None, "timings in the head: the same result"
    assert runs(late) == [None] * 5, "past the head: compared as it is"
