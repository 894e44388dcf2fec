"""`plane ledger --summary`, run as a user runs it, on a ledger a real Ledger
wrote into a real SQLite file (the plane's database still open, as a running
plane holds it)."""

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.config import load_config, store_of
from plane.home import Home
from plane.money.ledger import Ledger
from plane.store import open_store
from plane.store.sqlite import SqliteDatabase
from plane.wire.protocol import Usage
from plane.wire.words import FLOOR
from tests.support.command import plane_cli, plane_cli_async
from tests.support.fixtures_gateway import CONFIG, StartGateway
from tests.support.local_http import local_client
from tests.support.stream_events import chat_reply

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


async def _call(ledger: Ledger, agent: str, model: str, cost: str, usage: Usage) -> None:
    call = await ledger.open_call(agent, "p", model, Decimal("0.5"), "estimate")
    await ledger.settle(call, usage, Decimal(cost), "table")


@pytest.fixture
async def written(tmp_path):
    """Three days of calls; the database left open, as a running plane's is."""
    home = Home(tmp_path / "home").ensure()
    clock = ManualClock(NOON - timedelta(days=2))
    db = await SqliteDatabase.open(home.db)
    ledger = Ledger(db, clock)
    await _call(ledger, "demo", "gpt-a", "0.1", Usage(input_tokens=1000, output_tokens=10))
    await clock.advance(timedelta(days=1))
    await _call(ledger, "demo", "gpt-a", "0.2", Usage(input_tokens=2000, cache_read_tokens=1500))
    await _call(ledger, "scout", "gpt-b", "0.0000001", Usage(input_tokens=1, output_tokens=1))
    await clock.advance(timedelta(days=1))
    await _call(ledger, "scout", "gpt-a", "0.05", Usage(output_tokens=5))
    await ledger.open_call("demo", "p", "gpt-b", Decimal("0.07"), "estimate")  # in flight
    yield home.root
    await db.close()


def test_by_agent_sums_exactly_and_counts_a_call_in_flight_at_its_estimate(written):
    out = plane_cli(written, "ledger", "--summary", "--day", "2026-11-29", "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert (summary["first_day"], summary["last_day"], summary["by"]) == (
        "2026-11-23",
        "2026-11-29",
        "agent",
    )
    demo, scout = summary["groups"]
    # 0.1 + 0.2 + 0.07 in floats is 0.37000000000000005; here it is exact
    assert (demo["agent"], demo["cost_usd"], demo["calls"]) == ("demo", "0.37", 3)
    assert demo["statuses"] == {"settled": 2, "pending": 1}
    assert (demo["input_tokens"], demo["cache_read_tokens"], demo["output_tokens"]) == (
        3000,
        1500,
        10,
    )
    assert (scout["agent"], scout["cost_usd"]) == ("scout", "0.0500001")
    assert summary["total"]["cost_usd"] == "0.4200001"
    assert summary["total"]["calls"] == 5


def test_by_day_and_model_and_a_narrower_window(written):
    days = json.loads(
        plane_cli(
            written, "ledger", "--summary", "--day", "2026-11-29", "--by", "day", "--json"
        ).stdout
    )
    assert [(g["day"], g["cost_usd"]) for g in days["groups"]] == [
        ("2026-11-27", "0.1"),
        ("2026-11-28", "0.2000001"),
        ("2026-11-29", "0.12"),
    ]
    two = plane_cli(
        written,
        "ledger",
        "--summary",
        "--day",
        "2026-11-29",
        "--days",
        "2",
        "--by",
        "model",
        "--csv",
    )
    rows = list(csv.DictReader(io.StringIO(two.stdout)))
    assert [(r["model"], r["calls"], r["cost_usd"]) for r in rows] == [
        ("gpt-a", "2", "0.25"),
        ("gpt-b", "2", "0.0700001"),
    ]


def test_today_is_the_plane_day_the_ledger_reached(tmp_path):
    """Without --day the window ends on the plane's day: here a day the
    ledger reached ahead of this machine's clock, as the plane would count it."""
    import asyncio

    home = Home(tmp_path / "home").ensure()

    async def write() -> None:
        db = await SqliteDatabase.open(home.db)
        ledger = Ledger(db, ManualClock(datetime(2099, 1, 2, 9, tzinfo=UTC)))
        await _call(ledger, "demo", "m", "1.5", Usage(input_tokens=1))
        await db.close()

    asyncio.run(write())
    out = plane_cli(home.root, "ledger", "--summary")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "2098-12-27 to 2099-01-02 (UTC, 7 days), by agent: 1 call, $1.50",
        "  demo      $1.50  1 call  1 in · 0 out",
    ]


def test_the_text_form(written):
    out = plane_cli(written, "ledger", "--summary", "--day", "2026-11-28", "--by", "day")
    assert out.stdout.splitlines() == [
        "2026-11-22 to 2026-11-28 (UTC, 7 days), by day: 3 calls, $0.30",
        "  2026-11-27      $0.10  1 call  1k in · 10 out",
        "  2026-11-28      $0.20  2 calls  2k in (1.5k cached) · 1 out",
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--summary", "--days", "0"], "wants a whole number of days from 1 to 3660, not '0'"),
        (["--summary", "--days", "1.5"], "not '1.5'"),
        (["--summary", "--by", "week"], "invalid choice: 'week'"),
        (["--days", "3"], "--days and --by go with --summary"),
        (["--by", "agent"], "--days and --by go with --summary"),
    ],
)
def test_a_bad_summary_command_line_is_one_line_and_exit_2(tmp_path, args, expected):
    out = plane_cli(tmp_path / "home", "ledger", *args)
    assert out.returncode == 2
    [line] = out.stderr.splitlines()
    assert expected in line


def test_no_ledger_yet_is_one_line(tmp_path):
    out = plane_cli(tmp_path / "home", "ledger", "--summary")
    assert out.returncode == 1
    assert out.stderr.splitlines() == [
        f"plane: No ledger in {tmp_path}/home yet: no plane has run there."
    ]


def test_a_file_that_is_not_a_ledger_is_one_line(tmp_path):
    home = Home(tmp_path / "home").ensure()
    home.db.write_bytes(b"not a database at all" * 100)
    out = plane_cli(home.root, "ledger", "--summary")
    assert out.returncode == 1
    [line] = out.stderr.splitlines()
    assert line.startswith(f"plane: Cannot read the ledger in {home.db} (")


async def test_an_unpriced_call_is_said_in_both_forms_never_shown_as_free(tmp_path):
    """A model with no known price is recorded at $0 with its source
    `unpriced`: the sums say how many calls they leave out, and a day's
    listing shows the word, not `$0`."""
    from plane.cli.clients import ledger_lines

    home = Home(tmp_path / "home").ensure()
    db = await SqliteDatabase.open(home.db)
    ledger = Ledger(db, ManualClock(NOON))
    await _call(ledger, "demo", "gpt-a", "0.1", Usage(input_tokens=1000, output_tokens=10))
    call = await ledger.open_call("demo", "p", "mystery", Decimal(0), "estimate")
    await ledger.settle(call, Usage(input_tokens=81, output_tokens=27), Decimal(0), "unpriced")
    by_model = ("ledger", "--summary", "--day", "2026-11-29", "--by", "model")
    out = await plane_cli_async(home.root, *by_model)
    assert out.stdout.splitlines() == [
        "2026-11-23 to 2026-11-29 (UTC, 7 days), by model: 2 calls, $0.10"
        " (1 unpriced, not in the total)",
        "  gpt-a        $0.10  1 call  1k in · 10 out",
        "  mystery   unpriced  1 call  81 in · 27 out (1 unpriced, not in the total)",
    ]
    as_json = await plane_cli_async(
        home.root, "ledger", "--summary", "--day", "2026-11-29", "--json"
    )
    summary = json.loads(as_json.stdout)
    assert summary["total"]["unpriced_calls"] == 1
    lines = ledger_lines(NOON.date(), await ledger.entries(NOON.date()))
    assert lines[0] == "2026-11-29 (UTC): 2 calls, $0.10 (1 unpriced, not in the total)"
    assert lines[2].endswith("in 81 (cached 0)  out 27  unpriced  settled")
    await db.close()


async def test_an_agent_whose_calls_are_all_unpriced_is_summed_as_unpriced(tmp_path):
    """It spent what is not known: its line is there, its amount `unpriced`
    where a figure would be, never `$0.00`."""
    home = Home(tmp_path / "home").ensure()
    db = await SqliteDatabase.open(home.db)
    try:
        ledger = Ledger(db, ManualClock(NOON))
        await _call(ledger, "demo", "gpt-a", "0.1", Usage(input_tokens=1000, output_tokens=10))
        call = await ledger.open_call("scout", "p", "mystery", Decimal(0), "unpriced")
        await ledger.settle(call, Usage(input_tokens=81, output_tokens=27), Decimal(0), "unpriced")
    finally:
        await db.close()
    out = await plane_cli_async(home.root, "ledger", "--summary", "--day", "2026-11-29")
    assert out.stdout.splitlines()[1:] == [
        "  demo       $0.10  1 call  1k in · 10 out",
        "  scout   unpriced  1 call  81 in · 27 out (1 unpriced, not in the total)",
    ]


async def test_a_call_priced_at_a_floor_is_listed_and_summed_as_its_line_says(
    start_gateway: StartGateway,
) -> None:
    """A gateway call answered by a model with no known price is charged as
    the model asked for, a floor, and its line says `$0.0002 + unpriced`.
    The day's listing says the same (not `settled (estimated)`, which reads
    as a call whose usage never came), and the sums count it apart from
    calls at $0: its floor is in the total, the rest of its cost is not
    known (`floor_priced_calls` in JSON; `unpriced_calls` stays the calls
    at $0)."""
    gw = await start_gateway()
    path, heads = gw.calls_as("aider")
    gw.llm.fault(
        200, body=chat_reply({"prompt_tokens": 1000, "completion_tokens": 100}, "mystery-model")
    )
    gw.llm.reply("ok", usage=Usage(input_tokens=10, output_tokens=5))
    async with local_client(base_url=gw.url, timeout=20) as http:
        for model in ("gpt-4o-mini", "scripted-model"):  # a floor of $0.00021, then $0.02
            body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
            answer = await http.post(path, json=body, headers=heads)
            assert answer.status_code == 200, answer.text
    said = "(1 priced at a floor, the rest of its cost unpriced)"
    listed = await plane_cli_async(gw.home.root, "ledger", "--day", "2026-11-29")
    assert listed.returncode == 0, listed.stderr
    head, floor, priced = listed.stdout.splitlines()
    assert head == f"2026-11-29 (UTC): 2 calls, $0.02 {said}"
    assert floor.endswith(
        "  mystery-model  in 1000 (cached 0)  out 100  $0.00021 + unpriced  settled"
    )
    assert priced.endswith("  scripted-model  in 10 (cached 0)  out 5  $0.02  settled")
    by_model = ("ledger", "--summary", "--day", "2026-11-29", "--by", "model")
    summed = await plane_cli_async(gw.home.root, *by_model)
    assert summed.stdout.splitlines() == [
        f"2026-11-23 to 2026-11-29 (UTC, 7 days), by model: 2 calls, $0.02 {said}",
        "  scripted-model      $0.02  1 call  10 in · 5 out",
        f"  mystery-model      <$0.01  1 call  1k in · 100 out {said}",
    ]
    summary = json.loads((await plane_cli_async(gw.home.root, *by_model, "--json")).stdout)
    mystery = summary["groups"][1]
    assert (mystery["model"], mystery["cost_usd"]) == ("mystery-model", "0.00021")
    assert (mystery["unpriced_calls"], mystery["floor_priced_calls"]) == (0, 1)
    total = summary["total"]
    assert (total["cost_usd"], total["unpriced_calls"], total["floor_priced_calls"]) == (
        "0.02021",
        0,
        1,
    )


async def test_a_call_no_price_is_known_for_is_listed_as_unpriced_alone(
    start_gateway: StartGateway,
) -> None:
    """A gateway call of a model with no known price is recorded at $0 and
    marked an estimate (it teaches no estimate): the day's listing says its
    cost is `unpriced` and its status `settled`, never `settled
    (estimated)`: nothing was estimated, its cost is not known."""
    gw = await start_gateway(CONFIG.replace("  limitUsd: 10\n", ""))  # no ceiling: it may
    path, heads = gw.calls_as("aider")
    gw.llm.fault(
        200, body=chat_reply({"prompt_tokens": 1000, "completion_tokens": 100}, "mystery-model")
    )
    async with local_client(base_url=gw.url, timeout=20) as http:
        body = {"model": "mystery-model", "messages": [{"role": "user", "content": "hi"}]}
        answer = await http.post(path, json=body, headers=heads)
        assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert (entry.price_source, entry.estimated) == ("unpriced", True)
    listed = await plane_cli_async(gw.home.root, "ledger", "--day", "2026-11-29")
    assert listed.returncode == 0, listed.stderr
    head, unpriced = listed.stdout.splitlines()
    assert head == "2026-11-29 (UTC): 1 call, $0.00 (1 unpriced, not in the total)"
    assert unpriced.endswith("  mystery-model  in 1000 (cached 0)  out 100  unpriced  settled")


async def test_calls_at_0_and_calls_at_a_floor_are_told_apart_in_one_sum(tmp_path):
    """Calls with no price ($0, not in the total) and calls priced at a floor
    (in it, at least what they cost) are said each as what they are."""
    from plane.cli.clients import ledger_lines

    home = Home(tmp_path / "home").ensure()
    db = await SqliteDatabase.open(home.db)
    try:
        ledger = Ledger(db, ManualClock(NOON))
        call = await ledger.open_call("demo", "p", "mystery", Decimal(0), "unpriced")
        await ledger.settle(call, Usage(input_tokens=81), Decimal(0), "unpriced", estimated=True)
        for _ in range(2):  # as the gateway writes a floor's source
            source = f"table, as gpt-a: other answered, {FLOOR}"
            call = await ledger.open_call("demo", "p", "gpt-a", Decimal("0.5"), "estimate")
            await ledger.settle(call, Usage(input_tokens=9), Decimal("0.1"), source, estimated=True)
        lines = ledger_lines(NOON.date(), await ledger.entries(NOON.date()))
        out = await plane_cli_async(home.root, "ledger", "--summary", "--day", "2026-11-29")
    finally:
        await db.close()
    both = "(1 unpriced, not in the total; 2 priced at a floor, the rest of their cost unpriced)"
    assert lines[0] == f"2026-11-29 (UTC): 3 calls, $0.20 {both}"
    assert out.stdout.splitlines()[0].endswith(f"by agent: 3 calls, $0.20 {both}")


async def test_each_call_in_json_and_csv_says_whether_it_was_priced_at_a_floor(tmp_path):
    """A call's row carries `floor_priced`, as the sums carry
    `floor_priced_calls`: its price source says it only in words."""
    home = Home(tmp_path / "home").ensure()
    db = await SqliteDatabase.open(home.db)
    try:
        ledger = Ledger(db, ManualClock(NOON))
        await _call(ledger, "demo", "gpt-a", "0.1", Usage(input_tokens=1000))
        source = f"table, as gpt-a: other answered, {FLOOR}"  # as the gateway writes a floor's
        call = await ledger.open_call("demo", "p", "gpt-a", Decimal("0.5"), "estimate")
        await ledger.settle(call, Usage(input_tokens=9), Decimal("0.1"), source, estimated=True)
    finally:
        await db.close()
    day = ("ledger", "--day", "2026-11-29")
    calls = json.loads((await plane_cli_async(home.root, *day, "--json")).stdout)["calls"]
    assert [c["floor_priced"] for c in calls] == [False, True]
    as_csv = (await plane_cli_async(home.root, *day, "--csv")).stdout
    rows = list(csv.DictReader(io.StringIO(as_csv)))
    assert [r["floor_priced"] for r in rows] == ["False", "True"]


def test_a_summary_for_a_plane_elsewhere_never_shows_this_machines_ledger(written):
    """`--summary` reads the ledger file of this machine's home; with --tcp the
    plane asked about is another, so its figures would be the wrong plane's."""
    elsewhere = ["--tcp", "127.0.0.1:7", "--token", "t"]
    out = plane_cli(written, *elsewhere, "ledger", "--summary", "--day", "2026-11-29")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr.splitlines() == [
        "plane ledger: --summary reads the ledger file of this machine's plane, not the one"
        " --tcp names: run it on that plane's machine (see `plane ledger --help`)."
    ]


def test_a_window_reaching_before_the_first_day_of_the_calendar_starts_on_it(written):
    out = plane_cli(written, "ledger", "--summary", "--day", "0001-01-03", "--by", "day")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "0001-01-01 to 0001-01-03 (UTC, 3 days), by day: 0 calls, $0.00\n"


def test_a_ledger_from_before_the_plane_kept_its_day_is_summed(written):
    """A plane of an older version never made `plane_day`; the newer command
    reads its ledger before any newer plane has opened (and migrated) it."""
    import sqlite3

    copy = written.parent / "old"
    copy.mkdir()
    with sqlite3.connect(written / "plane.db") as source, sqlite3.connect(copy / "plane.db") as to:
        source.backup(to)
        to.execute("DROP TABLE plane_day")
    out = plane_cli(copy, "ledger", "--summary", "--days", "3660")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].endswith("by agent: 5 calls, $0.42")


async def test_a_call_settled_at_its_estimate_is_listed_as_estimated(tmp_path):
    """Settled without the provider's usage (a stream cut off): `--json` says
    `estimated`, and so does the day's listing, or its cost reads as measured."""
    from plane.cli.clients import ledger_lines

    home = Home(tmp_path / "home").ensure()
    db = await SqliteDatabase.open(home.db)
    try:  # closed whatever the asserts say: its thread would keep the test run alive
        ledger = Ledger(db, ManualClock(NOON))
        await _call(ledger, "demo", "gpt-a", "0.1", Usage(input_tokens=1000, output_tokens=10))
        call = await ledger.open_call("demo", "p", "gpt-a", Decimal("0.5"), "estimate")
        await ledger.settle(call, Usage(input_tokens=9), Decimal("0.5"), "estimate", estimated=True)
        lines = ledger_lines(NOON.date(), await ledger.entries(NOON.date()))
    finally:
        await db.close()
    assert lines[1].endswith("  $0.1  settled")
    assert lines[2].endswith("  $0.5  settled (estimated)")


async def _written_to(store: str | None, home: Home, cost: str) -> None:
    """One settled call of `demo` costing `cost` on 2026-11-29, in `store`
    (None: the home's SQLite file), as a plane on it writes it."""
    db = await open_store(store, home.db)
    try:
        await _call(Ledger(db, ManualClock(NOON)), "demo", "m", cost, Usage(input_tokens=1))
    finally:
        await db.close()


@pytest.mark.parametrize("named_by", ["PLANE_STORE", "agents.yaml"])
async def test_on_a_shared_store_the_ledger_read_offline_is_its_not_a_file_left_in_the_home(
    tmp_path, postgres_url, monkeypatch, named_by
):
    """Several planes on PostgreSQL: the summary sums the calls there, every
    plane's, and `plane ledger` with no plane running lists them; a SQLite
    file an earlier plane left in this machine's home is not the ledger any
    more, and its figures are not shown."""
    home = Home(tmp_path / "home").ensure()
    await _written_to(None, home, "9.99")  # the home's old file
    await _written_to(postgres_url, home, "0.25")
    env = {}
    if named_by == "PLANE_STORE":
        env["PLANE_STORE"] = postgres_url
    else:
        monkeypatch.delenv("PLANE_STORE", raising=False)
        (tmp_path / "agents.yaml").write_text(f"store: {postgres_url}\nagents:\n  demo: {{}}\n")
    out = await plane_cli_async(
        home.root, "ledger", "--summary", "--day", "2026-11-29", cwd=tmp_path, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == (
        "2026-11-23 to 2026-11-29 (UTC, 7 days), by agent: 1 call, $0.25"
    )
    # `plane ledger` with no plane to ask reads the same store.
    out = await plane_cli_async(
        home.root, "ledger", "--day", "2026-11-29", "--json", cwd=tmp_path, env=env
    )
    assert out.returncode == 0, out.stderr
    assert [call["cost_usd"] for call in json.loads(out.stdout)["calls"]] == ["0.25"]


def test_only_the_files_store_key_is_read_so_agents_the_plane_would_refuse_do_not_stop_it(
    written, tmp_path, monkeypatch
):
    """The summary needs only to know where the store is: agents.yaml's
    `store:`. The file's agents are the plane's to refuse (at 10,000 of them,
    reading them all took seconds), so a file with no `store:` whose agents
    do not validate sums the home's ledger."""
    monkeypatch.delenv("PLANE_STORE", raising=False)
    (tmp_path / "agents.yaml").write_text(
        "defaults:\n  limitUsd: 5\nagents:\n  demo: {limitUsd: lots}\n  scout: {tools: [grpe]}\n"
    )
    out = plane_cli(written, "ledger", "--summary", "--day", "2026-11-28", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (
        out.stdout.splitlines()[0]
        == "2026-11-22 to 2026-11-28 (UTC, 7 days), by agent: 3 calls, $0.30"
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "agents:\n  demo: {}\nstore: sqlite:///plane.db\n",
            "agents.yaml line 3: store: 'sqlite:///plane.db' is not a postgresql:// URL",
        ),
        (
            "agents: {demo: {},\nstore: postgresql://db/plane}\n",
            "agents.yaml line 2: agents.store: should be a block of keys",
        ),
        (
            "store: postgresql://db/plane\nstore: postgresql://db/other\n",
            'agents.yaml line 2: not valid YAML (found duplicate key "store"',
        ),
    ],
)
def test_a_store_the_answer_depends_on_that_does_not_read_is_the_files_one_line(
    written, tmp_path, monkeypatch, text, said
):
    """Where the file's `store:` is wrong, or the file cannot be told to have
    one (a flow mapping carried over its lines, the key twice), the command
    refuses it with the line any reading of the file gives."""
    monkeypatch.delenv("PLANE_STORE", raising=False)
    (tmp_path / "agents.yaml").write_text(text)
    out = plane_cli(written, "ledger", "--summary", cwd=tmp_path)
    assert out.returncode == 1
    [line] = out.stderr.splitlines()
    assert line.startswith(f"plane: {said}"), line


@pytest.mark.parametrize(
    "text",
    [
        "defaults:\n  limitUsd: 5\nstore: postgresql://db/plane\nagents:\n  demo: {}\n",
        "agents:\r\n  demo: {}\r\nstore: postgresql://db/plane\r\n",
        "store: postgresql://db/plane\n  ?application_name=ledger\nagents: {}\n",
        "---\nstore: postgresql://db/plane # shared\n",
        "agents:\n  demo:\n    role: |\n      store: postgresql://not/this\n",
        "%YAML 1.2\n---\nstore: postgresql://db/plane\n",
        "{store: postgresql://db/plane,\nagents: {}}\n",
        "agents:\n  demo: {}\n",
    ],
)
def test_the_store_read_alone_is_the_store_the_whole_file_names(tmp_path, text):
    path = tmp_path / "agents.yaml"
    path.write_text(text)
    assert store_of(path) == load_config(path).store


def test_a_shared_store_out_of_reach_is_one_line(tmp_path):
    home = Home(tmp_path / "home").ensure()
    gone = "postgresql://plane@127.0.0.1:1/none?connect_timeout=2"
    out = plane_cli(home.root, "ledger", "--summary", env={"PLANE_STORE": gone})
    assert out.returncode == 1
    assert out.stderr.startswith("plane: Cannot read the shared store's ledger ("), out.stderr
    assert len(out.stderr.splitlines()) == 1
