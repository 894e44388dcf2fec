"""The errors both sides of the socket know: the base every plane error
derives from, the client's "no plane answers here", and its "the plane
answered with a frame the request does not name".

They live in `wire`, the bottom layer, so the socket client and the TUI
raise and catch them without loading the daemon's modules. The rest of the
hierarchy, and the tree of it, is in `plane.errors`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's guard, without importing typing: see plane.tuples

if TYPE_CHECKING:  # a type only: importing the protocol (pydantic) costs a CLI call ~0.1 s
    from pathlib import Path

    from plane.wire.protocol import ErrorCode


class PlaneError(Exception):
    code: ErrorCode = "internal"


class NotRunning(PlaneError):
    def __init__(self, where: str, start: str = "plane serve") -> None:
        """`where`: the socket or the address nothing answered on; `start`:
        the command that starts a plane there."""
        super().__init__(f"No plane is running at {where}. Start one with `{start}`.")
        self.where = where


def nothing_at(socket: Path, tcp: tuple[str, int] | None) -> NotRunning:
    """No plane answers on `socket`, or at `tcp` (`--tcp HOST:PORT`), where
    the command that starts one is `plane serve --tcp HOST:PORT`: a bare
    `plane serve` listens on the socket only."""
    if tcp is None:
        return NotRunning(str(socket))
    host, port = tcp
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # [::1]:7878, as --tcp reads
    return NotRunning(where, f"plane serve --tcp {where}")


class WrongReply(PlaneError):
    """The plane answered a request with a frame of another type than the
    request names: a plane this client cannot work with. Nothing was read
    from the frame."""

    def __init__(self, asked: str, answered: str) -> None:
        super().__init__(
            f"The plane answered a `{asked}` request with a `{answered}` frame, "
            "which this client did not expect."
        )
        self.asked = asked
        self.answered = answered
