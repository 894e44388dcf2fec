"""The operator's token as a client reads it (the plane makes it: `Home.make_token`)."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's guard, without importing typing: see plane.tuples
if TYPE_CHECKING:
    from pathlib import Path  # `plane compress` loads this module, and never pathlib


def read_token(path: Path) -> str | None:
    """The token in `path`; None when there is none to read (no file, an empty
    one, or one this process may not open)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        text = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    return text.decode("ascii", errors="replace").strip() or None
