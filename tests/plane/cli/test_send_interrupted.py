"""Ctrl+C during `plane send AGENT TEXT --wait` says in one line what is
known of the message: not sent, perhaps sent, or sent and kept (only the
wait stopped). It was exit 130 in silence, and the operator could not tell
whether to send it again.

The command runs as a user runs it (its own process, interrupted by SIGINT
as a terminal's Ctrl+C does), against a plane that answers as far as each
case needs and then says nothing more; the interrupt comes once the command
is known to wait at the step the case is about."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from plane.wire.protocol import (
    ConversationMessage,
    HelloReply,
    MessageAppended,
    SendReply,
    Snapshot,
    SnapshotReply,
    TurnStarted,
    encode,
)


class QuietPlane:
    """A plane's socket that answers up to `until` ("hello", "subscribe",
    "send": the last frame answered) and then waits in silence."""

    def __init__(self, path: Path, until: str) -> None:
        self.until = until
        self.waiting = threading.Event()
        """Set when the command waits on this plane at the step of `until`."""
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(1)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        with conn:
            lines = conn.makefile("rb")
            hello = json.loads(lines.readline())
            conn.sendall(encode(HelloReply(id=hello["id"], plane_version="0")))
            subscribe = json.loads(lines.readline())
            if self.until == "hello":  # the subscription is not answered: nothing sent yet
                self.waiting.set()
                lines.readline()  # until the command hangs up
                return
            now = datetime.now(UTC)
            snapshot = Snapshot(day=now.date(), now=now, resets_at=now, agents=[], models=[])
            conn.sendall(encode(SnapshotReply(id=subscribe["id"], snapshot=snapshot)))
            send = json.loads(lines.readline())
            if self.until == "subscribe":  # the message arrived, and no reply says so
                self.waiting.set()
                lines.readline()
                return
            said = ConversationMessage(id=1, agent="demo", at=now, kind="operator", text="hi")
            conn.sendall(encode(SendReply(id=send["id"], messages=[said])))
            thinking = ConversationMessage(id=2, agent="demo", at=now, kind="agent", text="Hm.")
            conn.sendall(encode(TurnStarted(agent="demo", turn=1)))
            conn.sendall(encode(MessageAppended(message=thinking)))
            lines.readline()

    def close(self) -> None:
        self.server.close()


@contextmanager
def ctrl_c_as_a_terminal_leaves_it() -> Iterator[None]:
    """Ctrl+C handled (not ignored) while the command is started: a test run
    started in the background (`make test &`) ignores SIGINT, and a command
    inherits an ignored signal (a handled one is reset by exec), so it would
    never see the Ctrl+C a user's terminal sends."""
    before = signal.getsignal(signal.SIGINT)
    if before is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def interrupted(home: Path, until: str) -> tuple[int, str, str]:
    """`plane send demo hi --wait`, Ctrl+C'd where `until` leaves it waiting."""
    plane = QuietPlane(home / "plane.sock", until)
    with ctrl_c_as_a_terminal_leaves_it():
        command = subprocess.Popen(
            [sys.executable, "-m", "plane", "send", "demo", "hi", "--wait"],
            env={**os.environ, "PLANE_HOME": str(home)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    try:
        if until == "send":  # it printed the agent's first words: it waits for the rest
            assert command.stdout is not None and command.stdout.readline() == "Hm.\n"
        else:
            assert plane.waiting.wait(60), "the command never reached the step"
        command.send_signal(signal.SIGINT)
        out, err = command.communicate(timeout=60)
    finally:
        command.kill()
        plane.close()
    return command.returncode, out, err


@pytest.mark.parametrize(
    ("until", "said"),
    [
        ("hello", "plane: Interrupted before the message was sent: demo did not get it."),
        (
            "subscribe",
            "plane: Interrupted as the message was sent: demo may have it (`plane log demo` says).",
        ),
        (
            "send",
            "plane: Stopped waiting: the message to demo was sent and kept, and its turn goes "
            "on (`plane log demo` shows the answer).",
        ),
    ],
)
def test_ctrl_c_while_send_waits_says_whether_the_message_went(tmp_path, until, said):
    code, _, err = interrupted(tmp_path, until)
    assert code == 130
    assert err.splitlines() == [said]
