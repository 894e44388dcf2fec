"""Where the plane keeps its files.

Everything the plane writes lives under one directory: the database, the
socket, logs, agents' workspaces, transcripts. It is `PLANE_HOME` when set,
else the user's data directory (platformdirs), so one variable moves a whole
plane — which is how tests and a second plane on the same machine stay apart.

The home is private: the directory is 0700 and the plane's own files in it
0600, whatever was there before (a home made by hand, a looser umask): the
database holds every conversation, and `token` is the operator's proof.
"""

from __future__ import annotations

import errno
import os
import stat

from plane.tuples import NamedTuple
from plane.wire.errors import PlaneError
from plane.wire.token import read_token

__all__ = ["Home", "HomeNotADirectory", "read_token", "refs_db", "say_state", "user_config_path"]

APP = "plane"

TYPE_CHECKING = False  # typing's guard, without importing typing: see plane.tuples
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Literal

    PlaneState = Literal["none", "starting", "running", "stopping"]
    """What the lock file says of the plane that holds it (`none`: no plane holds it)."""
else:
    PlaneState = str  # only annotations name it

STATE_WIDTH = 8
"""Every state is written padded to this width at offset 0: one write, never a half one."""


_DB, _REFS_DB, _LOG, _LOCK = "plane.db", "refs.db", "plane.log", "plane.lock"
_TOKEN, _GATEWAY_KEYS, _GATEWAY_URL, _APPROVALS_KEY, _TUI_MEMORY = (
    "token",
    "gateway-keys",
    "gateway-url",
    "approvals-key",
    "tui.json",
)
_WORKSPACES = "workspaces"
_SQLITE_FILES = ("-wal", "-shm", "-journal")
_MADE = (_DB, _REFS_DB, _LOG, _LOCK)
"""The plane's own files, made 0600 before anything is written to them."""
_KEPT = (
    _TOKEN,
    _GATEWAY_KEYS,
    _GATEWAY_URL,
    _APPROVALS_KEY,
    _TUI_MEMORY,
    *(f"{db}{end}" for db in (_DB, _REFS_DB) for end in _SQLITE_FILES),
)
"""The plane's other files, made 0600 where they exist (SQLite gives `-wal` and `-shm`
the database's mode; the TUI makes `tui.json` 0600 itself)."""


class Home(NamedTuple):
    """The home's directory and the paths in it. (A NamedTuple, and platformdirs and
    secrets loaded only when used: `plane compress` opens the ref store here, and
    their imports were most of its start.)"""

    root: Path

    @classmethod
    def from_env(cls) -> Home:
        from pathlib import Path  # here: `plane compress` finds its store by `refs_db()`

        return cls(Path(_root_from_env()))

    def ensure(self) -> Home:
        """Make the home private, and the plane's files in it 0600 before
        anything is written to them (SQLite gives `-wal` and `-shm` the
        database's mode)."""
        _ensure(str(self.root))
        return self

    @property
    def private_files(self) -> list[Path]:
        """The plane's own files in the home, existing or about to be."""
        return [self.root / name for name in _private_names(str(self.root))]

    @property
    def db(self) -> Path:
        return self.root / _DB

    @property
    def refs_db(self) -> Path:
        """The compression store: what compressed tool output left out."""
        return self.root / _REFS_DB

    @property
    def socket(self) -> Path:
        return self.root / "plane.sock"

    @property
    def token(self) -> Path:
        """The operator's proof: every client presents it in its `hello`."""
        return self.root / _TOKEN

    @property
    def gateway_keys(self) -> Path:
        """The gateway agents' keys, hashed (see `plane.gateway.keys`)."""
        return self.root / _GATEWAY_KEYS

    @property
    def approvals_key(self) -> Path:
        """What the links in alerts are signed with (`plane.money.approvals`)."""
        return self.root / _APPROVALS_KEY

    @property
    def gateway_url(self) -> Path:
        """Where the running plane's gateway listens (`plane serve --http`),
        written once it listens and removed when it stops: what `plane
        gateway env` points clients at."""
        return self.root / _GATEWAY_URL

    def say_gateway(self, url: str | None) -> None:
        """Record the gateway's address (None: it listens no more)."""
        if url is None:
            self.gateway_url.unlink(missing_ok=True)
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self.gateway_url, flags, 0o600)
        try:
            os.write(fd, url.encode())
        finally:
            os.close(fd)

    @property
    def lock(self) -> Path:
        """Held (flock) by the running plane, which writes its state in it."""
        return self.root / _LOCK

    @property
    def log(self) -> Path:
        return self.root / _LOG

    @property
    def tui_memory(self) -> Path:
        """What the TUI remembers between launches (the agent it showed, per
        plane address). The TUI's own: the plane never reads it."""
        return self.root / _TUI_MEMORY

    @property
    def workspaces(self) -> Path:
        return self.root / _WORKSPACES

    def make_dir(self, path: Path) -> None:
        """A directory the plane needs (an agent's workspace, `workspaces/.deleted`),
        made with whatever is missing above it. In the home, each is made 0700, never
        readable by others for an instant; elsewhere (a `workspace:` in agents.yaml,
        the operator's own place), as the umask makes it."""
        if path == self.root or not path.is_relative_to(self.root):
            path.mkdir(parents=True, exist_ok=True)
            return
        self.make_dir(path.parent)
        path.mkdir(mode=0o700, exist_ok=True)

    def workspace(self, agent: str) -> Path:
        return self.workspaces / agent

    def make_token(self) -> str:
        """The token, made now if the home has none (or an empty one).

        Written whole to a file created 0600 with O_EXCL, then renamed into
        place: no process ever sees a token file half-written or readable by
        others. Only the plane calls this, holding the home's lock."""
        return self._made_once(self.token)

    def make_approvals_key(self) -> bytes:
        """The key the alerts' links are signed with, made as the token is:
        once, 0600, never readable half-written. Only the plane calls this."""
        return self._made_once(self.approvals_key).encode()

    def _made_once(self, path: Path) -> str:
        if secret := read_token(path):
            return secret
        import secrets

        secret = secrets.token_urlsafe(32)
        draft = path.with_name(f".{path.name}.new")
        draft.unlink(missing_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(draft, flags, 0o600)
        try:
            os.write(fd, secret.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(draft, path)
        return secret

    def state(self) -> PlaneState:
        """Whether a plane holds this home's lock, and what it said it is doing.

        Probed with a shared lock, so it never conflicts with another probe;
        a plane starting during the probe's instant is told it is already
        running, and its operator runs it again."""
        import fcntl  # here: `plane compress` finds its store here, and never locks

        try:
            handle = open(self.lock, "rb")
        except OSError:
            return "none"
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                said = handle.read(STATE_WIDTH).decode(errors="replace").strip()
                if said == "running":
                    return "running"
                return "stopping" if said == "stopping" else "starting"
            fcntl.flock(handle, fcntl.LOCK_UN)
            return "none"


def say_state(handle: int, state: PlaneState) -> None:
    """Record the plane's state in its lock file (held open as `handle`)."""
    os.pwrite(handle, state.ljust(STATE_WIDTH).encode(), 0)


def refs_db() -> str:
    """`Home.from_env().ensure().refs_db`, the home made private as `ensure` makes it, as a
    string: `plane compress` finds its store here, and loading pathlib was ~2 ms of a call
    (a tenth of its start) where nothing had loaded it first (an install not editable)."""
    root = _root_from_env()
    _ensure(root)
    return os.path.join(root, _REFS_DB)


def user_config_path() -> Path:
    """agents.yaml in the user's config directory, used when ./agents.yaml is absent."""
    from pathlib import Path

    import platformdirs

    return Path(platformdirs.user_config_dir(APP)) / "agents.yaml"


def _root_from_env() -> str:
    """PLANE_HOME when set, else the user's data directory: absolute, links resolved."""
    root = os.environ.get("PLANE_HOME")
    if not root:
        import platformdirs

        root = platformdirs.user_data_dir(APP)
    return os.path.realpath(os.path.expanduser(root))


def _ensure(root: str) -> None:
    """Make the home at `root` private, and the plane's files in it 0600.
    What is there is read in one pass of the directory (each entry's kind
    comes with its name), not asked of each of the plane's names in turn (a
    stat or two each): 21 system calls where there were 38."""
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        os.chmod(root, 0o700)
        with os.scandir(root) as entries:
            there = {entry.name: entry for entry in entries}
        for name in (*_MADE, *(name for name in _KEPT if name in there)):
            _private(os.path.join(root, name), there.get(name))
        workspaces = there.get(_WORKSPACES)  # an older plane made it 0755
        if workspaces is not None and workspaces.is_dir(follow_symlinks=False):
            os.chmod(workspaces.path, 0o700)
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTDIR):  # it, or a folder above it, is a file
            raise HomeNotADirectory(root) from None
        raise PlaneError(
            f"The plane's home {root} cannot be made private "
            f"({exc.strerror or exc}); it must be a directory you own."
        ) from None


class HomeNotADirectory(PlaneError):
    """`PLANE_HOME` (or a folder above it) is a file: no plane can be there,
    said alike by a plane that would start there and a client that asks one."""

    def __init__(self, root: str | Path) -> None:
        super().__init__(
            f"The plane's home {root} is not a directory; set PLANE_HOME to a directory "
            "you own (or unset it for the default)."
        )


def _private_names(root: str) -> list[str]:
    """The plane's own files in the home at `root`, existing or about to be."""
    return [*_MADE, *(name for name in _KEPT if os.path.exists(os.path.join(root, name)))]


def _private(path: str, there: os.DirEntry[str] | None) -> None:
    """Create `path` 0600 if missing (`there`: its entry, if it exists); make
    it 0600 if it is a file. A symlink or a directory of the same name is
    left alone (and is not followed)."""
    if there is not None and (there.is_symlink() or there.is_dir()):
        return
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode) and stat.S_IMODE(mode) != 0o600:  # an immutable file may be 0600
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
