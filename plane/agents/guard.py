"""The loop and stall guard: an agent's calls, as digests, watched for an
agent that repeats itself (README, "Guard rails"; `guard:` in agents.yaml).

Exact and cheap: each LLM call is seen once as a `Step` — what it cost, the
tool results it brought (a digest of tool, arguments and result), the answer
it gave, a gateway request's digest — and the guard keeps digests and a few
counters, never the texts, and asks no model. It finds:

- the same tool call with the same result `repeats` times in a row (within
  a turn and across turns), or a round of two or three calls with the same
  results over and over (`round_times`: about as many calls);
- the same answer `answers` times in a row with nothing new between them
  (a poll whose results change may answer the same every time);
- a gateway client's same request `repeats` times in a row;
- a stall: `stall` calls in a row that brought nothing new — every tool
  result one seen before, no answer not given before, no new message, no
  file changed in the workspace.

Calls further apart than `within_minutes` start the count afresh. What it
finds is a `Loop`, in figures: the agent's worker keeps it as a hold
(`Looping`, worded by `plane.agents.notices`) until the operator resumes it.
A guard is one agent's, owned by its worker; what it counts is kept across
restarts (`Guard.kept`, plane/agents/guard_book.py), so a loop spread across
them is held as one.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from plane.agents.guard_kept import DIGEST_BYTES, History, Kept
from plane.agents.guard_words import words
from plane.config import GuardConfig
from plane.money.gate import Hold
from plane.tools.registry import TOOLS

ROUND = 3
"""The longest round of calls looked for: A B A B … is a round of two."""
KNOWN = 4096
"""Digests remembered for telling new from seen (the oldest go first)."""
KEPT_KNOWN = 64
"""Of those, kept across a restart (the newest): a stall goes round what it
read lately (`stall` calls, 10 by default), and what is kept is written with
every call (1 KB of digests)."""
BOOKKEEPING = frozenset({"schedule_turn", "budget_status", "set_own_limit"})
"""The plane's own tools, whose results move with every call (the time a
turn is booked for, the spend so far): a call of one is known by the call
alone, or a loop that books its next turn would never repeat."""
LABEL_CHARS = 80
ONE_FORM_CHARS = 16_384
"""Arguments longer than this are taken as given, not parsed into one form:
each call is asked about several times, and on the event loop."""
WORKSPACE_ENTRIES = 5000
"""Files looked at for a change in the workspace; a larger one is taken as
changed (so never stalled): walking it would not be cheap."""

LoopKind = Literal["tool", "round", "answer", "request", "stall"]


def digest(*parts: str) -> bytes:
    """A short exact digest of `parts` (collisions are 2⁻¹²⁸-unlikely)."""
    hashed = hashlib.blake2b(digest_size=DIGEST_BYTES)
    for part in parts:
        hashed.update(part.encode("utf-8", "surrogatepass"))
        hashed.update(b"\0")
    return hashed.digest()


def round_times(size: int, repeats: int) -> int:
    """How many times over a round of `size` different calls is held: about
    as many calls as one call repeated `repeats` times, and two more (a
    round of two at 5: 4 times over, 8 calls; of three: 3 times, 9 calls),
    never fewer than 3 times (two files read twice over is no loop)."""
    return max(3, -(-(repeats + 2) // size))


@dataclass(frozen=True)
class Seen:
    """One tool result as the guard keeps it: what to call it, and its digest."""

    label: str
    digest: bytes


@functools.lru_cache(maxsize=16)  # a turn asks of each call several times
def call_arguments(arguments: str) -> str:
    """A call's arguments as one form: JSON spaced and ordered one way, so
    `{"path":"a"}` and `{ "path": "a" }` are the same call (a model that
    respaces them each time still repeats itself); anything else, or
    arguments over `ONE_FORM_CHARS` (a whole file written), as given."""
    if len(arguments) > ONE_FORM_CHARS:
        return arguments
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments
    return json.dumps(parsed, sort_keys=True, ensure_ascii=False)


def call_signature(tool: str, arguments: str) -> tuple[str, str]:
    """What makes a call the same call again in a turn: its tool and its
    arguments, however they are spaced or ordered."""
    return tool, call_arguments(arguments)


def changes_nothing(tool: str) -> bool:
    """Whether a call of `tool` only reads (an MCP server's tool may do anything)."""
    known = TOOLS.get(tool)
    return known is not None and known.changes_nothing


def seen(tool: str, arguments: str, result: str, *, bookkeeping: bool = False) -> Seen:
    """A tool call and its result (its `words`); with `bookkeeping`, the call alone."""
    arguments = call_arguments(arguments)
    label = f"{tool} {' '.join(arguments.split())}".strip()
    if len(label) > LABEL_CHARS:
        label = label[: LABEL_CHARS - 1] + "…"
    return Seen(label, digest("tool", tool, arguments, "" if bookkeeping else words(result)))


def answer_digest(text: str) -> bytes:
    """An answer, whitespace and timings aside: the same `words` are the same answer."""
    return digest("answer", words(text))


@dataclass(frozen=True)
class Step:
    """One LLM call, as the guard sees it."""

    cost: Decimal
    at: datetime
    tools: tuple[Seen, ...] = ()
    """The tool results it brought (its tool calls', a gateway request's newest)."""
    answer: str | None = None
    """The answer it gave, when it ended a turn (a gateway request's last answer)."""
    request: bytes | None = None
    """A gateway request's digest (its body less what moves between resends)."""
    texts: tuple[bytes, ...] = ()
    """Digests of what someone wrote for it (a gateway client's newest text):
    one not seen before is news."""
    news: bool = False
    """Something new its digests do not show: a message to answer, a file changed."""


@dataclass(frozen=True)
class Loop:
    """What the guard found, in figures: what repeated, how many times, what
    the calls since it began cost and since when."""

    kind: LoopKind
    times: int
    cost: Decimal
    since: datetime
    what: tuple[str, ...] = ()
    """The calls of a round (`read_file {"path": "a"}`), or the answer's words."""

    def stored(self) -> str:
        """As the store keeps it (`agent_settings.loop`)."""
        return json.dumps(
            {
                "kind": self.kind,
                "times": self.times,
                "cost": str(self.cost),
                "since": self.since.isoformat(),
                "what": list(self.what),
            }
        )

    @classmethod
    def read(cls, stored: str) -> Loop:
        data: dict[str, Any] = json.loads(stored)
        return cls(
            data["kind"],
            int(data["times"]),
            Decimal(data["cost"]),
            datetime.fromisoformat(data["since"]),
            tuple(data["what"]),
        )


@dataclass(frozen=True)
class Looping(Hold):
    """The guard held the agent: it takes no turn (a gateway agent's calls
    are refused) until the operator resumes it; a new day does not end it."""

    loop: Loop

    @property
    def reason(self) -> str:
        return "loop"


@dataclass
class _Streak:
    digest: bytes | None = None
    count: int = 0
    first: int = 0
    """The step it began at."""


class Guard:
    def __init__(
        self, settings: GuardConfig, keep: Callable[[Kept | None], None] | None = None
    ) -> None:
        """`keep` is told what to keep across a restart (None: nothing) each
        time that changes: after each call seen, and when it starts afresh."""
        self.settings = settings
        self._keep = keep
        self._afresh()

    def forget(self) -> None:
        """Start afresh, and keep nothing: resumed by the operator."""
        self._afresh()
        if self._keep is not None:
            self._keep(None)

    def afresh(self) -> None:
        """Start afresh, as the store has it already: nothing kept there (an
        agent taken from another plane that kept nothing of it)."""
        self._afresh()

    def _afresh(self) -> None:
        """Start afresh: resumed, a long quiet, or before what a restart kept."""
        settings = self.settings
        spans = [size * round_times(size, settings.repeats) for size in range(2, ROUND + 1)]
        tools = max(settings.repeats, *spans)
        longest = max(tools, settings.answers, settings.stall)
        self._index = 0
        self._last_at: datetime | None = None
        self._steps: deque[tuple[int, datetime, Decimal]] = deque(maxlen=4 * longest + 16)
        self._tools: deque[tuple[bytes, str, int]] = deque(maxlen=tools)
        self._known: OrderedDict[bytes, None] = OrderedDict()
        self._answer = _Streak()
        self._request = _Streak()
        self._stalled = _Streak()
        self.workspace: bytes | None = None
        """The workspace's digest when last looked at (`workspace_changed`)."""

    def brings_news(self, step: Step) -> bool:
        """Whether `step` brings something not seen before (asked before it is seen)."""
        answer = None if step.answer is None else answer_digest(step.answer)
        return self._news_besides_answer(step) or (answer is not None and answer not in self._known)

    def _news_besides_answer(self, step: Step) -> bool:
        digests = [one.digest for one in step.tools] + list(step.texts)
        return step.news or any(d not in self._known for d in digests)

    def workspace_changed(self, now: bytes | None) -> bool:
        """`now`, the workspace's digest (None: too large to look at): whether
        it changed since the last look. The first look is where changes are
        counted from; a workspace too large to watch counts as changed."""
        before, self.workspace = self.workspace, now
        return now is None or (before is not None and before != now)

    def step(self, step: Step) -> Loop | None:
        """See one call; the loop it completes, if it does."""
        settings = self.settings
        if not settings.enabled:
            return None
        quiet = timedelta(minutes=settings.within_minutes)
        if self._last_at is not None and step.at - self._last_at > quiet:
            self._afresh()
        self._last_at = step.at
        index, self._index = self._index, self._index + 1
        self._steps.append((index, step.at, step.cost))
        news, others = self.brings_news(step), self._news_besides_answer(step)
        answer = None if step.answer is None else answer_digest(step.answer)
        digests = [one.digest for one in step.tools] + list(step.texts)
        self._remember(digests if answer is None else [*digests, answer])
        # A resent request is said as one, before the answer it carries again.
        found = (
            self._tool_rounds(step, index)
            or self._requests(step, index)
            or self._answers(step, answer, others, index)
            or self._stall(news, index)
        )
        if self._keep is not None:
            self._keep(self.kept())
        return found

    def _remember(self, digests: list[bytes]) -> None:
        known = self._known
        for one in digests:
            known[one] = None
            known.move_to_end(one)
        while len(known) > KNOWN:
            known.popitem(last=False)

    def _tool_rounds(self, step: Step, index: int) -> Loop | None:
        repeats = self.settings.repeats
        for one in step.tools:
            self._tools.append((one.digest, one.label, index))
            for size in range(1, ROUND + 1):
                if (found := self._round(size, repeats)) is not None:
                    self._tools.clear()
                    return found
        return None

    def _round(self, size: int, repeats: int) -> Loop | None:
        """The last tool results, if they are one round of `size` different
        calls over and over (`repeats` times for one call; a longer round
        `round_times`)."""
        times = repeats if size == 1 else round_times(size, repeats)
        span = size * times
        if len(self._tools) < span:
            return None
        tail = list(self._tools)[-span:]
        digests = [d for d, _, _ in tail]
        if any(digests[i] != digests[i + size] for i in range(span - size)):
            return None
        if size > 1 and len(set(digests[:size])) == 1:
            return None  # one call over and over: a round of one, found first
        what = tuple(label for _, label, _ in tail[:size])
        return self._loop("tool" if size == 1 else "round", times, tail[0][2], what)

    def _answers(
        self, step: Step, answer: bytes | None, tools_new: bool, index: int
    ) -> Loop | None:
        streak = self._answer
        if tools_new:
            streak.digest, streak.count = None, 0
        if answer is None:
            return None
        if answer == streak.digest:
            streak.count += 1
        else:
            streak.digest, streak.count, streak.first = answer, 1, index
        if streak.count < self.settings.answers:
            return None
        words = " ".join((step.answer or "").split())
        words = words if len(words) <= LABEL_CHARS else words[: LABEL_CHARS - 1] + "…"
        return self._loop("answer", streak.count, streak.first, (words,))

    def _requests(self, step: Step, index: int) -> Loop | None:
        if step.request is None:
            return None
        streak = self._request
        if step.request == streak.digest:
            streak.count += 1
        else:
            streak.digest, streak.count, streak.first = step.request, 1, index
        if streak.count < self.settings.repeats:
            return None
        return self._loop("request", streak.count, streak.first)

    def _stall(self, news: bool, index: int) -> Loop | None:
        streak = self._stalled
        if news:
            streak.count = 0
            return None
        if streak.count == 0:
            streak.first = index
        streak.count += 1
        if streak.count < self.settings.stall:
            return None
        return self._loop("stall", streak.count, streak.first)

    def _loop(self, kind: LoopKind, times: int, first: int, what: tuple[str, ...] = ()) -> Loop:
        """The loop found, its cost the calls' from the step it began at."""
        spanned = [(at, cost) for i, at, cost in self._steps if i >= first]
        since = spanned[0][0] if spanned else self._last_at
        assert since is not None
        cost = sum((cost for _, cost in spanned), Decimal(0))
        return Loop(kind, times, cost, since, what)

    def kept(self) -> Kept | None:
        """What a restart must not lose (None: nothing seen since it started
        afresh): the digests it counts, the newest `KEPT_KNOWN` it knows, and
        the steps a loop found later may be priced from (each step a count
        or a tool result began at, with the cost of those after it up to the
        next such step: the same sums, from fewer steps). Bounded by its
        settings, whatever the agent does."""
        if self._last_at is None:
            return None
        streaks = (self._answer, self._request, self._stalled)
        begun = {i for _, _, i in self._tools} | {s.first for s in streaks if s.count}
        lowest, spent, steps = min(begun, default=self._index), Decimal(0), []
        oldest: tuple[int, datetime] | None = None
        for i, at, cost in reversed(self._steps):  # the newest first: a few of them
            if i < lowest:
                break
            spent += cost
            if i in begun:
                steps.append((i, at, spent))
                spent, oldest = Decimal(0), None
            else:
                oldest = (i, at)
        if oldest is not None:  # the step it began at is gone: from the oldest held
            steps.append((*oldest, spent))
        steps.reverse()
        newest = list(itertools.islice(reversed(self._known), KEPT_KNOWN))
        return History(
            self._index,
            self._last_at,
            steps,
            list(self._tools),
            [(s.digest, s.count, s.first) for s in streaks],
            newest[::-1],
            self.workspace,
        ).kept()

    def take_back(self, kept: Kept) -> None:
        """Go on from what a plane before the restart kept (`kept`); a
        history no plane wrote raises ValueError and changes nothing."""
        history = History.read(kept, LABEL_CHARS)
        self._afresh()
        self._index, self._last_at = history.index, history.last_at
        self._steps.extend(history.steps)
        self._tools.extend(history.tools)
        self._answer, self._request, self._stalled = (_Streak(*s) for s in history.streaks)
        self._remember(history.known)
        self.workspace = history.workspace


def workspace_digest(root: Path, *, leave_out: str = ".transcripts") -> bytes | None:
    """What the files under `root` are, cheaply: each one's path, size and
    modification time (None: more than `WORKSPACE_ENTRIES`, not looked at)."""
    hashed = hashlib.blake2b(digest_size=16)
    entries = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            listed = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in listed:
            entries += 1
            if entries > WORKSPACE_ENTRIES:
                return None
            if entry.name == leave_out and folder == root:
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            hashed.update(f"{entry.path}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
    return hashed.digest()
