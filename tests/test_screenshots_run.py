"""The screenshot scripts still make every picture the README shows.

They drive the running app through the plane's own requests and parts, so a
change there can leave them broken with nothing failing until someone next
regenerates the pictures. Here they run whole (the embedded model's scene
too) into a scratch folder, and every picture kept in screenshots/ comes out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[1]
SCRIPTS = ("make.py", "spend.py")


@pytest.mark.slow
@pytest.mark.embedded
@pytest.mark.timeout(560)
def test_the_scripts_make_every_picture_kept(tmp_path: Path) -> None:
    env = {**os.environ, "PLANE_SCREENSHOTS_OUT": str(tmp_path)}
    for script in SCRIPTS:
        done = subprocess.run(
            [sys.executable, str(REPO / "screenshots" / script)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=270,
            check=False,
        )
        assert done.returncode == 0, f"screenshots/{script}:\n{done.stderr[-3000:]}"
    kept = {p.name for p in (REPO / "screenshots").glob("*.svg")}
    made = {p.name for p in tmp_path.glob("*.svg")}
    assert kept <= made, f"kept but no longer made: {sorted(kept - made)}"
    assert all(p.read_text().startswith("<svg") for p in tmp_path.glob("*.svg"))
