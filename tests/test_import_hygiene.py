"""The TUI loads no part of the daemon: proved by importing it, not only by
the import-linter contract (which cannot see an import made at run time)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

ALLOWED = ("plane", "plane.home", "plane.tuples", "plane.wire")

pytestmark = pytest.mark.slow
"""Each imports in a fresh process, one of them a whole plane: seconds a
test, so `make test` runs them, not `make test-fast`."""


def loaded_after(module: str) -> list[str]:
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return [name for name in json.loads(out) if name == "plane" or name.startswith("plane.")]


def test_importing_the_tui_loads_only_plane_wire_and_plane_home() -> None:
    loaded = loaded_after("tui.app")
    others = [m for m in loaded if m not in ALLOWED and not m.startswith("plane.wire.")]
    assert others == [], f"tui.app loads {others}"
    assert "plane.wire.protocol" in loaded, "the test imports what it means to"


SERVE = """
import asyncio, json, sys, tempfile
from pathlib import Path
from plane.config import parse_config
from plane.daemon.server import Plane
from plane.home import Home

async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        plane = Plane(parse_config("agents: {}\\n"), Home(Path(tmp)))
        await plane.startup()
        await plane.shutdown()
    print(json.dumps(sorted(sys.modules)))

asyncio.run(main())
"""


def test_a_plane_on_sqlite_without_http_loads_no_psycopg_listener_or_second_http_client() -> None:
    """Each costs a start ~0.1 s: psycopg is loaded only for a PostgreSQL
    store, the listener (aiohttp's server, /metrics) only for `--http`; the
    providers' client is aiohttp's, so httpx is not loaded at all."""
    out = subprocess.run(
        [sys.executable, "-c", SERVE], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    modules = set(json.loads(out))
    loaded = {name.split(".")[0] for name in modules}
    assert "plane" in loaded, "the test imports what it means to"
    assert not loaded & {"psycopg", "prometheus_client", "httpx"}
    assert not modules & {"aiohttp.web", "plane.daemon.http"}


def test_a_plane_whose_agents_have_no_mcp_server_loads_no_mcp_sdk() -> None:
    """The SDK's models cost a start ~0.7 s of CPU: loaded with an agent's
    first session that has servers (tests/plane/tools/mcp load it then)."""
    out = subprocess.run(
        [sys.executable, "-c", SERVE], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    loaded = {name.split(".")[0] for name in json.loads(out)}
    assert "plane" in loaded, "the test imports what it means to"
    assert not loaded & {"mcp", "mcp_types"}


def test_the_command_line_loads_no_config_agents_or_ledger_until_a_command_needs_them() -> None:
    """Every command's parser and the socket client, and not agents.yaml's
    models (~0.2 s to build), the agents or the ledger: those load only for
    the commands that use them. (`plane status` loads less still: its test
    is in tests/plane/cli/test_cli.py.)"""
    loaded = loaded_after("plane.cli.program")
    assert "plane.wire.client" in loaded, "the test imports what it means to"
    heavy = ("plane.config", "plane.agents", "plane.money.ledger", "plane.daemon")
    assert [m for m in loaded if m.startswith(heavy)] == []


def test_the_store_package_loads_no_engine_until_one_is_opened() -> None:
    """`plane.store` says which store opens; the engine it opens is loaded
    then, so asking (`is_postgres`) loads neither SQLite's driver nor psycopg."""
    code = "import json, sys, plane.store; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    loaded = set(json.loads(out))
    assert "plane.store" in loaded, "the test imports what it means to"
    engines = {"plane.store.sqlite", "plane.store.postgres", "aiosqlite", "psycopg"}
    assert not loaded & engines
