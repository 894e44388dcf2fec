"""The schema, as the steps that build it: written once, in SQLite's dialect.

Each entry of `MIGRATIONS` moves the schema one step, inside one
transaction, and is never edited once released — a new step is appended
instead. SQLite keeps the version in `PRAGMA user_version`
(plane/store/sqlite.py); PostgreSQL runs the same steps translated
(`ddl` in plane/store/postgres_dialect.py) and keeps it in `plane_schema`.
"""

from __future__ import annotations

SQLITE_ONLY = "-- SQLite's own\n"
"""The head of a step that only SQLite takes: PostgreSQL's has nothing to do
(its version still moves). See `sqlite_own`."""
POSTGRES_ONLY = "-- for PostgreSQL only\n"
"""The head of a step that only PostgreSQL takes: SQLite's has nothing to do
(its version still moves). No quote in it: the dialect reads a statement
with its comments (`plane.store.postgres_dialect.translate`). See `postgres_own`."""

_STATUS_IN = "CHECK (status IN ('pending', 'settled', 'interrupted', 'failed'))"
_STATUS_OR = (
    "CHECK (status = 'pending' OR status = 'settled' OR status = 'interrupted'"
    " OR status = 'failed')"
)
_PART_IN = "CHECK (part IN ('prompt', 'messages', 'tool', 'output'))"
_PART_OR = "CHECK (part = 'prompt' OR part = 'messages' OR part = 'tool' OR part = 'output')"


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE calls (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        day TEXT NOT NULL,
        at TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd TEXT NOT NULL,
        price_source TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'settled', 'interrupted', 'failed')),
        estimated INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX calls_by_day ON calls (day, agent);
    CREATE INDEX calls_pending ON calls (status) WHERE status = 'pending';

    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        at TEXT NOT NULL,
        kind TEXT NOT NULL,
        text TEXT NOT NULL,
        held INTEGER NOT NULL DEFAULT 0,
        waiting INTEGER NOT NULL DEFAULT 0,
        cost_usd TEXT,
        usage TEXT
    );
    CREATE INDEX messages_by_agent ON messages (agent, id);
    CREATE INDEX messages_waiting ON messages (agent) WHERE waiting = 1;

    CREATE TABLE context (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        tool_calls TEXT,
        tool_call_id TEXT
    );
    CREATE INDEX context_by_agent ON context (agent, id);

    CREATE TABLE ceilings (
        agent TEXT PRIMARY KEY,
        limit_usd TEXT,
        set_at TEXT NOT NULL,
        set_by TEXT NOT NULL
    );

    CREATE TABLE agents (
        name TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        provider TEXT NOT NULL,
        role TEXT NOT NULL,
        created_at TEXT NOT NULL
    );

    CREATE TABLE bookings (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        due TEXT NOT NULL,
        note TEXT NOT NULL,
        booked_at TEXT NOT NULL,
        done INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX bookings_open ON bookings (due) WHERE done = 0;

    CREATE TABLE notices (
        agent TEXT NOT NULL,
        day TEXT NOT NULL,
        kind TEXT NOT NULL,
        PRIMARY KEY (agent, day, kind)
    );
    """,
    """
    ALTER TABLE bookings ADD COLUMN ambient INTEGER NOT NULL DEFAULT 0;
    """,
    # An agent's own ask is kept apart from the operator's value, so that it
    # only ever tightens (the tighter of the two binds); asks stored as the
    # operator's before move over. And the plane's day, which never goes back.
    """
    CREATE TABLE asks (
        agent TEXT PRIMARY KEY,
        limit_usd TEXT NOT NULL,
        asked_at TEXT NOT NULL
    );
    INSERT INTO asks (agent, limit_usd, asked_at)
        SELECT agent, limit_usd, set_at FROM ceilings
        WHERE set_by = 'agent' AND limit_usd IS NOT NULL;
    DELETE FROM ceilings WHERE set_by = 'agent';

    CREATE TABLE plane_day (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        day TEXT NOT NULL
    );
    """,
    # Each agent's spend per day on the calls no longer pending, kept by the
    # ledger in the transaction that closes them, so the first gate check of
    # a day reads one row per agent instead of summing the day's calls.
    # Summed exactly (decimal_sum, the writer's own function), never as floats.
    """
    CREATE TABLE spend (
        day TEXT NOT NULL,
        agent TEXT NOT NULL,
        cost_usd TEXT NOT NULL,
        PRIMARY KEY (day, agent)
    ) WITHOUT ROWID;
    INSERT INTO spend (day, agent, cost_usd)
        SELECT day, agent, decimal_sum(cost_usd) FROM calls WHERE status != 'pending'
        GROUP BY day, agent;
    """,
    # Anthropic's 1-hour cache writes, a part of cache_write_tokens priced higher.
    """
    ALTER TABLE calls ADD COLUMN cache_write_1h_tokens INTEGER NOT NULL DEFAULT 0;
    """,
    # The tools of an agent made from the keyboard, as a JSON list of names;
    # NULL (every agent made before) is every tool, as it was.
    """
    ALTER TABLE agents ADD COLUMN tools TEXT;
    """,
    # What the operator changed of an agent after it was made (from the TUI or
    # `plane edit` / `pause`), for agents.yaml's as for those made at run time:
    # a NULL column is "as the file or its creation said". `tools` is JSON
    # (a list of names, or "all").
    """
    CREATE TABLE agent_settings (
        name TEXT PRIMARY KEY,
        model TEXT,
        provider TEXT,
        role TEXT,
        tools TEXT,
        paused INTEGER NOT NULL DEFAULT 0,
        set_at TEXT NOT NULL
    );
    """,
    # What compression kept out of the model's input, a row a turn, with its
    # price at the model's input rate (NULL when the model has no known price:
    # a saving nobody can price is not claimed as $0 either).
    """
    CREATE TABLE savings (
        id INTEGER PRIMARY KEY,
        agent TEXT NOT NULL,
        day TEXT NOT NULL,
        at TEXT NOT NULL,
        model TEXT NOT NULL,
        chars INTEGER NOT NULL,
        usd TEXT
    );
    CREATE INDEX savings_by_day ON savings (day, agent);
    """,
    # Several planes on one store (README, "Several machines"; on SQLite one
    # plane has them all): the fleet's ceiling as the operator set it, in the
    # one row every admission of a call locks; each agent's lease (times in
    # the database's clock, ms since the epoch); the planes seen, for a fair
    # share; and the plane that opened each call, for the sweep of a dead one.
    """
    CREATE TABLE fleet (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        limit_usd TEXT,
        set_at TEXT,
        set_by TEXT,
        admitted INTEGER NOT NULL DEFAULT 0
    );
    INSERT INTO fleet (id) VALUES (1);

    CREATE TABLE leases (
        agent TEXT PRIMARY KEY,
        plane TEXT NOT NULL,
        expires_ms INTEGER NOT NULL
    );
    CREATE INDEX leases_by_plane ON leases (plane);

    CREATE TABLE planes (
        name TEXT PRIMARY KEY,
        seen_ms INTEGER NOT NULL
    );

    ALTER TABLE calls ADD COLUMN plane TEXT;
    """,
    # Why each held agent was last told it is quiet (the hold's reason), so a
    # restart does not say it again; the row goes when the hold ends.
    """
    CREATE TABLE holds_told (
        agent TEXT PRIMARY KEY,
        reason TEXT NOT NULL
    );
    """,
    # Fencing (several planes): each lease's epoch, moved on every take of
    # it, so a write made under an older one (a plane that was paused or cut
    # off while another took the agent) is refused. A lease let go keeps its
    # row (expires_ms 0), so its epoch never starts again from 0.
    """
    ALTER TABLE leases ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
    """,
    # What each settled gateway call's estimated prompt and real answers cost
    # (`base_usd`), so an agent's estimates learn from its calls again after a restart
    # (plane/gateway/learned.py); the response's id, for a later call that
    # continues it, and the stored prompt or conversation it used.
    """
    CREATE TABLE gateway_calls (
        call INTEGER NOT NULL PRIMARY KEY,
        base_usd TEXT NOT NULL,
        unseen INTEGER NOT NULL,
        choices INTEGER NOT NULL,
        response_id TEXT,
        context_key TEXT
    );
    CREATE INDEX gateway_calls_by_response ON gateway_calls (response_id)
        WHERE response_id IS NOT NULL;
    CREATE INDEX gateway_calls_by_context ON gateway_calls (context_key)
        WHERE context_key IS NOT NULL;
    """,
    # The tool that gave each tool result of the model's history, and the MCP
    # server for an MCP server's tool (NULL: one of the plane's own, or a
    # result kept from before): what a result's tokens are attributed to.
    """
    ALTER TABLE context ADD COLUMN tool TEXT;
    ALTER TABLE context ADD COLUMN mcp_server TEXT;
    """,
    # One-tap approval (README, "Guard rails"): a raise from an alert's link is
    # the agent's ceiling until `ends_at` (00:00 UTC after the day it was
    # given), when the ceiling it had comes back by itself; and the offers the
    # alerts made (a raise and its Deny share one), so each is answered once,
    # kept until they expire.
    """
    CREATE TABLE raises (
        agent TEXT PRIMARY KEY,
        limit_usd TEXT NOT NULL,
        ends_at TEXT NOT NULL,
        set_at TEXT NOT NULL
    );

    CREATE TABLE offers (
        nonce TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        from_usd TEXT NOT NULL,
        to_usd TEXT NOT NULL,
        day TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        made_at TEXT NOT NULL,
        answer TEXT,
        answered_at TEXT
    );
    """,
    # Budgets by purpose (README, "Budgets by purpose"): the group each call's
    # agent was in, the tag and the client's session a gateway call carried;
    # a group's ceiling as the operator set it (the file's is in agents.yaml);
    # and each settled call's cost split by what its prompt held (the system
    # prompt and tool schemas, the messages, each tool's results) and its
    # answer, to the last digit of its cost (plane/money/attribution.py).
    """
    ALTER TABLE calls ADD COLUMN agent_group TEXT;
    ALTER TABLE calls ADD COLUMN tag TEXT;
    ALTER TABLE calls ADD COLUMN session TEXT;
    CREATE INDEX calls_by_tag ON calls (tag, day) WHERE tag IS NOT NULL;

    CREATE TABLE group_limits (
        name TEXT PRIMARY KEY,
        limit_usd TEXT,
        set_at TEXT NOT NULL,
        set_by TEXT NOT NULL
    );

    CREATE TABLE call_parts (
        call INTEGER NOT NULL,
        part TEXT NOT NULL CHECK (part IN ('prompt', 'messages', 'tool', 'output')),
        tool TEXT,
        mcp_server TEXT,
        input_tokens INTEGER NOT NULL,
        cost_usd TEXT NOT NULL
    );
    CREATE INDEX call_parts_by_call ON call_parts (call);
    """,
    # The loop guard's hold (README, "Guard rails"), kept as a pause is: what
    # it found, as JSON (plane/agents/guard.py's `Loop`), until the operator
    # resumes the agent; NULL: not held by it.
    """
    ALTER TABLE agent_settings ADD COLUMN loop TEXT;
    """,
    # The checks on a call's status and on a part's kind, written as
    # comparisons: SQLite checks `x IN (a list)` by building a temporary
    # table of the list at every row it writes (~1.4 us: a call's open, its
    # settle and each of its parts paid it, a tenth of a settled call's
    # CPU). The same rules, so every row meets them already: SQLite's
    # documented way for such a change rewrites the table's text in the
    # schema (`sqlite_master`: every version's name for it), no row moves,
    # and the schema's version moves (a table made and dropped) so every
    # connection reads it again. A SQLite that refuses it (built
    # "defensive") keeps the lists (`sqlite_own`).
    SQLITE_ONLY
    + f"""
    PRAGMA writable_schema = ON;
    UPDATE sqlite_master SET sql = replace(sql, {_quoted(_STATUS_IN)}, {_quoted(_STATUS_OR)})
        WHERE type = 'table' AND name = 'calls';
    UPDATE sqlite_master SET sql = replace(sql, {_quoted(_PART_IN)}, {_quoted(_PART_OR)})
        WHERE type = 'table' AND name = 'call_parts';
    PRAGMA writable_schema = RESET;
    CREATE TABLE schema_read_again (x);
    DROP TABLE schema_read_again;
    """,
    # A group's spend is what the calls written with its name spent (README,
    # "Budgets by purpose"), whoever is in it now: each group's sum per day of
    # its calls no longer pending, kept by the ledger as `spend` is, so
    # admitting a call of a busy group reads one row, not the group's day.
    """
    CREATE TABLE group_spend (
        day TEXT NOT NULL,
        agent_group TEXT NOT NULL,
        cost_usd TEXT NOT NULL,
        PRIMARY KEY (day, agent_group)
    ) WITHOUT ROWID;
    INSERT INTO group_spend (day, agent_group, cost_usd)
        SELECT day, agent_group, decimal_sum(cost_usd) FROM calls
        WHERE status != 'pending' AND agent_group IS NOT NULL GROUP BY day, agent_group;
    """,
    # A tag's spend, kept as a group's is: each tag's sum per day of its calls
    # no longer pending, moved by the ledger in the transaction that closes
    # them, so admitting a call of a busy tag reads one row, not the tag's day.
    # The index by tag goes: only that sum read it, and SQLite would find a
    # tag's calls in flight through it, walking the tag's whole day again,
    # where the index of calls in flight holds only those.
    """
    DROP INDEX calls_by_tag;
    CREATE TABLE tag_spend (
        day TEXT NOT NULL,
        tag TEXT NOT NULL,
        cost_usd TEXT NOT NULL,
        PRIMARY KEY (day, tag)
    ) WITHOUT ROWID;
    INSERT INTO tag_spend (day, tag, cost_usd)
        SELECT day, tag, decimal_sum(cost_usd) FROM calls
        WHERE status != 'pending' AND tag IS NOT NULL GROUP BY day, tag;
    """,
    # The loop guard's recent history (README, "Guard rails"), so a loop
    # spread across restarts is counted as one: per agent, what it needs to
    # find a repeat (the digests it keeps, their steps' times and costs), as
    # JSON (plane/agents/guard.py's `Guard.kept`), and the time of its last
    # call. Written with the transaction after each call
    # (plane/agents/guard_book.py), read at start.
    """
    CREATE TABLE IF NOT EXISTS guard_history (
        agent TEXT PRIMARY KEY,
        history TEXT NOT NULL,
        at TEXT NOT NULL
    );
    """,
    # The model a call was sent as, where another answered it (a router's
    # fallback): the row names the one that answered (`model`), and a
    # gateway agent's model after a restart is its client's choice, this one.
    """
    ALTER TABLE calls ADD COLUMN asked TEXT;
    """,
    # The calls priced at a floor (a model with no known price: the row's
    # `+$?`), by day and agent, on a store several planes share. Few, and
    # asked for by each plane of a fleet at every renewal, for the gateway
    # agents another plane served meanwhile: through the index by day, each
    # such agent's whole day was read to find none. The readers' condition
    # is this one, word for word (`plane.money.stored.FLOOR_PRICED`), so the
    # planner finds the index. Not on SQLite, whose one plane asks once, at
    # start: its condition, checked at each call's open and settle, would be
    # ~3% of the ledger's CPU a call.
    POSTGRES_ONLY
    + """
    CREATE INDEX calls_floor_priced ON calls (day, agent)
        WHERE price_source LIKE '%which has no known price';
    """,
    # Whether the turn a cost line closes failed (its answer broke off, or a
    # call failed after one it paid for): the plane that ran it says so in
    # its own events, and another plane of the fleet, which reads only the
    # lines, reads it here (`plane send --wait` through that plane).
    """
    ALTER TABLE messages ADD COLUMN failed INTEGER NOT NULL DEFAULT 0;
    """,
    # Room on each page of the leases for the renewal's new row versions
    # (plane/daemon/fleet.py renews every lease of a plane's every 5 s):
    # written beside the old one (a HOT update), no index is written. At
    # 10,000 leases on full pages, nearly every renewal wrote a new entry in
    # both indexes for each row: the table grew to 1,100-2,000 pages (157
    # with the room), the index by plane to 250-300 (11), and every tick's
    # read of the leases with them.
    POSTGRES_ONLY
    + """
    ALTER TABLE leases SET (fillfactor = 50);
    """,
    # Which lever a saving is: `compression` (tool output folded before the
    # model read it) or `compaction` (old tool results of the history put
    # behind a marker). Rows written before it are compression's, as they
    # were counted then (compaction's were among them, unmarked).
    """
    ALTER TABLE savings ADD COLUMN lever TEXT NOT NULL DEFAULT 'compression';
    """,
    # What the operator was told of a ceiling over many agents, on a store
    # several planes share (plane/daemon/alert_claims.py): each agent a
    # fleet's or a group's hold was told of (`cause`: `fleet`, `group NAME`),
    # and each day whose turning was told (`cause` `day`, `agent` the day),
    # with the day it was told and the plane that told it. Each plane shows
    # every agent's row and folds them alike; the one whose insert (or
    # delete, for a resume) takes the row tells it, the others do not: one
    # push for one event. And the fleet's secrets: the key the alerts'
    # approval links are signed with (plane/money/approvals.py), the first
    # plane's, so a link one plane made is followed on any.
    """
    CREATE TABLE alerts_told (
        cause TEXT NOT NULL,
        agent TEXT NOT NULL,
        day TEXT NOT NULL,
        plane TEXT NOT NULL,
        PRIMARY KEY (cause, agent)
    );
    CREATE TABLE fleet_secrets (
        name TEXT PRIMARY KEY,
        secret TEXT NOT NULL
    );
    """,
    # Which hold of an agent a row of `alerts_told` is (a stamp its insert
    # writes, new at each hold), so a plane that sees a hold end late ends
    # that hold only, not the agent's next one that another plane claimed
    # since by the same cause, the same day. Rows written before it have
    # none: whichever plane ends them, ends them (as they were ended then).
    """
    ALTER TABLE alerts_told ADD COLUMN hold TEXT;
    """,
)


def sqlite_own(script: str) -> bool:
    """A step only SQLite takes (`SQLITE_ONLY`): one that changes how SQLite
    checks or finds rows, never what they hold, so a store that skips it,
    or a SQLite that refuses it, holds the same rows under the same rules."""
    return script.startswith(SQLITE_ONLY)


def postgres_own(script: str) -> bool:
    """A step only PostgreSQL takes (`POSTGRES_ONLY`): one that changes how a
    shared store finds rows, never what they hold."""
    return script.startswith(POSTGRES_ONLY)


def statements(script: str) -> list[str]:
    """A migration's statements, one by one (a driver runs one at a time)."""
    return [s.strip() for s in script.split(";") if s.strip()]
