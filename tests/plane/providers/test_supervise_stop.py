"""A plane stopped by a signal to its whole process group (a terminal's
Ctrl-C, systemd's stop with KillMode=control-group) has its embedded model
ended by the same signal, a moment before its own handler stands the
watcher down: the watcher says nothing of it and restarts nothing.

A real child process (`sleep`) stands in for the model's: only its exit is
watched here; the real model's supervision is tests/plane/providers/test_supervise.py."""

from __future__ import annotations

import logging
import signal
import subprocess
import threading

import pytest

from plane.providers.supervise import Backoff, Supervisor

BOUND_S = 30
"""How long anything may take before the test fails; never a measurement."""
HANDLER_LATE_S = 0.3
"""How long after the child's death the plane's handler stands the watcher
down (`stop`), as on a plane busy when the signal came."""


def test_a_child_ended_by_sigterm_as_the_plane_stops_is_not_said_dead_nor_restarted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="plane.providers.supervise")
    child = subprocess.Popen(["sleep", "60"])
    relaunched = threading.Event()
    supervisor = Supervisor(
        lambda: (child.pid, child.wait()), relaunched.set, Backoff(first_s=0.01)
    )
    supervisor.arm()
    supervisor.watch()
    child.send_signal(signal.SIGTERM)
    child.wait(timeout=BOUND_S)
    handler = threading.Timer(HANDLER_LATE_S, supervisor.stop)
    handler.start()
    handler.join()
    supervisor.join(BOUND_S)
    assert not relaunched.is_set()
    said = [r.getMessage() for r in caplog.records if r.name == "plane.providers.supervise"]
    assert said == []
