"""A real PostgreSQL for tests: one server per test session, one database per test.

    def test_x(postgres_url):      # postgresql://plane@127.0.0.1:PORT/t_…, empty, the test's own

The server is PostgreSQL 15's own binaries (`initdb`, `pg_ctl`, on PATH or
under /usr/lib/postgresql/15/bin), in a temporary directory, listening on a
free loopback port only, trusting local connections (nothing else can reach
it). `PLANE_TEST_PG` (a server's URL, e.g. `postgresql://me@127.0.0.1:5432/postgres`)
uses that server instead: each test still gets a database of its own on it.

initdb refuses to run as root, and the tests run as root in CI: the server
then runs as the `postgres` user when there is one (Debian's package makes
it), else as `nobody`, through `runuser`; its directory is made theirs. With
no binaries at all the tests that need it skip, saying so.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidate = PG_BIN / name
    return str(candidate) if candidate.exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_user() -> str | None:
    """Who runs the server: None for the current user, unless that is root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise RuntimeError("running as root with neither a postgres nor a nobody user")


class Server:
    """A PostgreSQL server in `root`, started with `start` and stopped with `stop`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.port = _free_port()
        self.user = _server_user()
        self.url = f"postgresql://plane@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str) -> None:
        command = list(argv)
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        # Run from the server's own directory: the user it runs as may not
        # enter the one the tests were started from.
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")

    def start(self) -> None:
        initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
        assert initdb and pg_ctl
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            self.root.chmod(0o755)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self._run(initdb, "-D", str(self.data), "-U", "plane", "--auth=trust", "-E", "UTF8")
        # Only the loopback address, a socket in the server's own directory,
        # and no fsync: a test database need not survive a power cut.
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root}"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            " -c max_connections=300"
        )
        self._run(pg_ctl, "-D", str(self.data), "-o", options, "-l", str(self.root / "log"),
                  "-w", "-t", "60", "start")  # fmt: skip

    def stop(self) -> None:
        pg_ctl = _binary("pg_ctl")
        assert pg_ctl
        self._run(pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a server the session may make databases on."""
    given = os.environ.get("PLANE_TEST_PG")
    if given:
        yield given
        return
    if _binary("initdb") is None or _binary("pg_ctl") is None:
        pytest.skip("PostgreSQL's initdb and pg_ctl are not on this machine")
    root = Path(tempfile.mkdtemp(prefix="plane-pg-"))
    server = Server(root)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def _with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A database of this test's own, empty, dropped after it."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_database(postgres_server, name)
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
