"""plane.log stays bounded however long the plane runs (plane/cli/daemon.py
`PlaneLog`): past its size it is rotated to plane.log.1 (and on to
plane.log.3, the oldest dropped), the new one made 0600 as the home's files
are; a plane started in the background has its stderr follow the rotation,
so what it says as it fails still reaches `plane`, and the new plane.log."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from plane.cli.daemon import LOG_BYTES, LOG_KEPT, PlaneLog
from tests.support.command import plane_process


def test_a_log_written_for_months_stays_within_its_files(tmp_path: Path) -> None:
    path = tmp_path / "plane.log"
    handler = PlaneLog(path)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.Logger("months")
    logger.addHandler(handler)
    line = "claude: the client left before its answer " + "x" * 1000
    try:
        for _ in range((LOG_KEPT + 3) * LOG_BYTES // len(line)):  # six logs' worth
            logger.info(line)
    finally:
        handler.close()
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == ["plane.log", *(f"plane.log.{n}" for n in range(1, LOG_KEPT + 1))]
    for file in tmp_path.iterdir():
        assert file.stat().st_size <= LOG_BYTES, file.name
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file.name


@pytest.mark.slow
def test_a_plane_failing_to_start_past_a_full_log_still_says_why(tmp_path: Path) -> None:
    """Its first line rotates the log; what it then says on stderr as it
    exits is in the new plane.log, where `plane` reads its reason."""
    home = tmp_path / "home"
    (home / "plane.db").mkdir(parents=True)  # the ledger cannot be opened: the start fails
    filler = b"an old line of a plane that ran for weeks\n"
    (home / "plane.log").write_bytes(filler * (LOG_BYTES // len(filler)))
    result = plane_process(home, cwd=tmp_path, timeout=120)
    said = f"Cannot open {home / 'plane.db'}: it is a directory; the ledger must be a file."
    assert result.returncode == 1
    assert result.stderr.strip() == f"plane: The plane did not start: {said}"
    rotated, log = (home / "plane.log.1").read_bytes(), (home / "plane.log").read_text()
    assert rotated.startswith(filler) and said.encode() not in rotated
    assert "running on the built-in defaults" in log and said in log
    assert stat.S_IMODE((home / "plane.log").stat().st_mode) == 0o600
