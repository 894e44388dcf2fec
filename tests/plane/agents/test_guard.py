"""The loop and stall guard on its own: each shape of loop is found at its
threshold and not a call before, with what repeated, how many times, what
the calls since it began cost and since when; the honest sessions beside
them (a poll whose results change, a long refactor that reads many files, a
test-fix cycle whose output is similar but changing) are never held."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from plane.agents.guard import Guard, Loop, Seen, Step, seen, workspace_digest
from plane.config import GuardConfig

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CENT = Decimal("0.01")


class Keeper:
    """Where a guard's history goes, as the store would keep it."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str] | None] = []

    def __call__(self, kept: tuple[str, str] | None) -> None:
        self.told.append(kept)


class Run:
    """A guard fed one call a second, a cent each."""

    def __init__(self, keep: Keeper | None = None, **settings: object) -> None:
        self.guard = Guard(GuardConfig.model_validate(settings), keep=keep)
        self.at = T0
        self.found: list[tuple[int, Loop]] = []
        self.calls = 0

    def call(
        self,
        *tools: Seen,
        answer: str | None = None,
        request: bytes | None = None,
        news: bool = False,
        texts: tuple[bytes, ...] = (),
        after: timedelta = timedelta(seconds=1),
    ) -> Loop | None:
        self.at += after
        self.calls += 1
        step = Step(CENT, self.at, tools, answer, request, texts, news)
        loop = self.guard.step(step)
        if loop is not None:
            self.found.append((self.calls, loop))
        return loop


def read(path: str, text: str = "same") -> Seen:
    return seen("read_file", f'{{"path": "{path}"}}', text)


def test_the_same_call_with_the_same_result_is_held_at_the_fifth():
    run = Run()
    for _ in range(4):
        assert run.call(read("a.txt")) is None
    loop = run.call(read("a.txt"))
    assert loop == Loop(
        "tool", 5, Decimal("0.05"), T0 + timedelta(seconds=1), ('read_file {"path": "a.txt"}',)
    )


def test_a_poll_whose_results_change_is_not_a_loop():
    run = Run()
    for n in range(200):
        run.call(seen("run_command", '{"command": "make status"}', f"building: {n}% done"))
        run.call(answer="Still building.")
    assert run.found == []


def test_two_calls_in_turn_with_the_same_results_are_held_after_four_rounds():
    run = Run()
    for _ in range(3):
        run.call(read("a.txt"))
        run.call(read("b.txt"))
    assert run.call(read("a.txt")) is None
    loop = run.call(read("b.txt"))
    assert loop is not None and loop.kind == "round" and loop.times == 4
    assert loop.what == ('read_file {"path": "a.txt"}', 'read_file {"path": "b.txt"}')
    assert loop.cost == Decimal("0.08") and run.calls == 8


def test_a_round_of_three_is_held_and_a_round_of_four_is_a_stall():
    three = Run()
    for _ in range(5):
        for name in "abc":
            three.call(read(name))
    assert [(at, loop.kind, loop.times) for at, loop in three.found][:1] == [(9, "round", 3)]
    four = Run()
    for _ in range(5):
        for name in "abcd":
            four.call(read(name))
    # Four new results, then ten calls that bring nothing new.
    assert [(at, loop.kind, loop.times) for at, loop in four.found][:1] == [(14, "stall", 10)]


def test_two_files_read_twice_over_is_no_round():
    run = Run()
    for _ in range(2):
        run.call(read("a"))
        run.call(read("b"))
    run.call(answer="Both unchanged.")
    assert run.found == []


def test_the_same_answer_with_nothing_new_between_is_held_at_the_fifth():
    run = Run()
    for _ in range(4):
        assert run.call(answer="Nothing new.  ") is None
    loop = run.call(answer="Nothing   new.")  # whitespace aside, the same words
    assert loop is not None and (loop.kind, loop.times, loop.what) == (
        "answer",
        5,
        ("Nothing new.",),
    )


def test_the_same_answer_to_new_messages_or_after_new_results_is_not_a_loop():
    asked = Run()
    for _ in range(20):
        asked.call(answer="Done.", news=True)  # each answering someone's new message
    moved = Run()
    for n in range(20):
        moved.call(seen("rename", f'{{"to": "x{n}"}}', "renamed"))
        moved.call(answer="Done.")
    assert asked.found == [] and moved.found == []


def test_a_client_s_same_request_is_held_at_the_fifth():
    run = Run()
    for _ in range(4):
        assert run.call(request=b"body") is None
    loop = run.call(request=b"body")
    assert loop is not None and (loop.kind, loop.times) == ("request", 5)


def test_calls_that_bring_nothing_new_are_a_stall_at_the_tenth():
    run = Run()
    run.call(read("a"), read("b"), read("c"), read("d"))  # new
    orders = ["dcba", "badc", "cdab", "acbd", "dbca", "bcad", "adcb", "cbda", "dacb"]
    for order in orders:
        assert run.call(*(read(n) for n in order)) is None  # seen, not a round
    loop = run.call(read("b"), read("a"), read("d"), read("c"))
    assert loop is not None and (loop.kind, loop.times) == ("stall", 10)
    assert loop.cost == Decimal("0.10") and loop.since == T0 + timedelta(seconds=2)


def test_a_file_changed_or_a_new_message_is_news():
    run = Run()
    for _ in range(5):
        run.call(read("a"), news=True)
    assert run.found[:1] == [(5, run.found[0][1])] and run.found[0][1].kind == "tool"
    stalled = Run()
    stalled.call(read("a"), read("b"), read("c"), read("d"))
    for n in range(40):
        stalled.call(read("abcd"[n % 4]), read("abcd"[(n * 3 + 1) % 4]), news=n % 10 == 9)
    assert stalled.found == [], "a file changed (or a message) every ten calls: not a stall"
    texts = Run()
    for n in range(30):
        texts.call(texts=(f"message {n % 3}".encode(),))  # three texts, over and over
    assert [loop.kind for _, loop in texts.found][:1] == ["stall"]


def test_calls_further_apart_than_the_window_start_afresh():
    hourly = Run(within_minutes=60)
    for _ in range(20):
        hourly.call(read("inbox"), after=timedelta(minutes=61))
        hourly.call(answer="Nothing to do.")
    assert hourly.found == []
    fast = Run(within_minutes=60)
    for _ in range(5):
        fast.call(read("inbox"), after=timedelta(minutes=10))
    assert [loop.kind for _, loop in fast.found] == ["tool"]


def test_bookkeeping_tools_are_known_by_the_call_alone():
    run = Run()
    for n in range(5):
        run.call(
            seen("schedule_turn", '{"in_seconds": 60}', f"Booked for 12:0{n}", bookkeeping=True)
        )
    assert [loop.kind for _, loop in run.found] == ["tool"]


def test_a_guard_turned_off_finds_nothing_and_forgetting_starts_afresh():
    off = Run(enabled=False)
    for _ in range(50):
        off.call(read("a"))
    assert off.found == []
    run = Run()
    for _ in range(4):
        run.call(read("a"))
    run.guard.forget()
    for _ in range(4):
        assert run.call(read("a")) is None
    assert run.call(read("a")) is not None


def test_thresholds_are_the_agent_s():
    run = Run(repeats=8)
    for _ in range(7):
        run.call(read("a"))
    assert run.found == []
    run.call(read("a"))
    assert run.found[0][1].times == 8


def test_a_long_honest_refactor_and_a_test_fix_cycle_are_never_held():
    refactor = Run()
    for n in range(300):  # reads many files, re-reads some, edits, greps
        refactor.call(read(f"src/mod{n % 120}.py", f"def f{n % 120}(): ..."))
        if n % 3 == 0:
            refactor.call(seen("edit_file", f'{{"path": "src/mod{n}.py", "n": {n}}}', "ok"))
        if n % 7 == 0:
            refactor.call(seen("grep", '{"pattern": "old_name"}', f"{300 - n} matches"))
    fixing = Run()
    for n in range(100):  # similar but changing output each time
        failing = 40 - n % 40
        fixing.call(seen("run_command", '{"command": "pytest -q"}', f"{failing} failed, 60 passed"))
        fixing.call(seen("edit_file", f'{{"path": "src/fix.py", "line": {n}}}', "ok"))
        fixing.call(answer="Fixed one; running the tests again.")
    assert refactor.found == [] and fixing.found == []


def test_the_workspace_digest_moves_with_a_file_and_not_with_a_look(tmp_path: Path):
    (tmp_path / "a.txt").write_text("one")
    (tmp_path / ".transcripts").mkdir()
    first = workspace_digest(tmp_path)
    assert workspace_digest(tmp_path) == first
    (tmp_path / ".transcripts" / "t.jsonl").write_text("saved")
    assert workspace_digest(tmp_path) == first, "the plane's own saves are not the agent's work"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("two")
    assert workspace_digest(tmp_path) != first
    guard = Guard(GuardConfig())
    assert not guard.workspace_changed(first), "the first look is where changes count from"
    assert not guard.workspace_changed(first)
    assert guard.workspace_changed(workspace_digest(tmp_path / "sub"))
    assert guard.workspace_changed(None), "too large to watch is taken as changed"


def test_what_a_guard_keeps_carries_each_shape_of_loop_across_a_restart():
    """Three calls before the restart, two after: held at the fifth overall,
    at the same figures as a guard never restarted; a stall and an answer
    counted on the same way."""
    for before, after, expected in (
        ([read("a.txt")] * 3, [read("a.txt")] * 2, ("tool", 5)),
        ([read("a.txt"), read("b.txt")] * 2, [read("a.txt"), read("b.txt")] * 2, ("round", 4)),
    ):
        kept = Keeper()
        run = Run(kept)
        for tool in before:
            assert run.call(tool) is None
        restarted = Guard(GuardConfig())
        last = kept.told[-1]
        assert last is not None
        restarted.take_back(last)
        run.guard = restarted
        found = [run.call(tool) for tool in after]
        loop = found[-1]
        assert found[:-1] == [None] * (len(after) - 1)
        assert loop is not None and (loop.kind, loop.times) == expected
        calls = len(before) + len(after)
        assert (loop.cost, loop.since) == (CENT * calls, T0 + timedelta(seconds=1))

    kept = Keeper()
    run = Run(kept)
    for _ in range(4):
        run.call(answer="Nothing needs doing.")
    last = kept.told[-1]
    assert last is not None
    run.guard = Guard(GuardConfig())
    run.guard.take_back(last)
    loop = run.call(answer="Nothing needs doing.")
    assert loop is not None and (loop.kind, loop.times) == ("answer", 5)


@pytest.mark.parametrize(
    "calls",
    [
        lambda n: (read(f"{n}.txt"), read(f"{n}.txt", "other")),  # each something new
        lambda n: (read(f"{n % 4}.txt"),),  # a stall going round four files
    ],
)
def test_what_a_guard_keeps_is_bounded_and_forgetting_keeps_nothing(
    calls: Callable[[int], tuple[Seen, ...]],
):
    """However long the agent runs, what is written with each call stays a
    few kilobytes (a stall of a thousand calls, long allowed, among them);
    resumed by the operator, nothing is kept."""
    kept = Keeper()
    run = Run(kept, stall=1000)
    for n in range(999):
        assert run.call(*calls(n)) is None
    last = kept.told[-1]
    assert last is not None
    assert len(last[1]) < 5000, len(last[1])
    run.guard.forget()
    assert kept.told[-1] is None


STREAKS = '"streaks":[[null,0,0],[null,0,0],[null,0,0]]'
NOT_KEPT = [
    ("2026-11-29T12:00:00+00:00", "{bad"),
    ("2026-11-29T12:00:00+00:00", "[]"),
    ("2026-11-29T12:00:00+00:00", '{"index": 1}'),
    (
        "2026-11-29T12:00:00+00:00",
        '{"index":1,"steps":[],"tools":[["zz","x",0]],' + STREAKS + ',"known":"","workspace":null}',
    ),
    (
        "2026-11-29T12:00:00+00:00",
        '{"index":1,"steps":[[0,0,"abc"]],"tools":[],' + STREAKS + ',"known":"","workspace":null}',
    ),
    ("noon", '{"index":0,"steps":[],"tools":[],' + STREAKS + ',"known":"","workspace":null}'),
]


@pytest.mark.parametrize("kept", NOT_KEPT)
def test_a_history_no_plane_wrote_is_refused_and_changes_nothing(kept: tuple[str, str]):
    guard = Guard(GuardConfig())
    with pytest.raises(ValueError):
        guard.take_back(kept)
    assert guard.kept() is None
