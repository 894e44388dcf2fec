"""The screenshot scripts still make every picture the README shows.

They drive the running app through the plane's own requests and parts, so a
change there can leave them broken with nothing failing until someone next
regenerates the pictures. Here each scene runs whole (the embedded model's
too) into a scratch folder, side by side, each scene's planes in a folder of
their own, and every picture kept in screenshots/ comes out of one of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).parents[1]
SCENES = {
    ("make.py", "embedded"): {"embedded", "help"},
    ("make.py", "loop"): {"loop"},
    ("make.py", "scripted"): {"ask", "main", "main-light", "held", "new-agent", "connection-lost"},
    ("spend.py", None): {"spend", "spend-fleet", "spend-groups"},
}
"""Each run of a script (and the scene it makes alone) and the pictures it makes."""


def test_every_picture_kept_is_made_by_a_scene() -> None:
    kept = {p.stem for p in (REPO / "screenshots").glob("*.svg")}
    made = set().union(*SCENES.values())
    assert kept <= made, f"kept but made by no scene: {sorted(kept - made)}"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "scene"),
    [
        pytest.param(
            script,
            scene,
            id=f"{script}-{scene or 'all'}",
            marks=[pytest.mark.embedded] if scene == "embedded" else [],
        )
        for script, scene in SCENES
    ],
)
@pytest.mark.timeout(300)
def test_the_scripts_make_every_picture_kept(
    script: str, scene: str | None, tmp_path: Path
) -> None:
    # A short folder of its own for the scene's planes: their sockets live there.
    with tempfile.TemporaryDirectory(prefix="shots-") as work:
        env = {**os.environ, "PLANE_SCREENSHOTS_OUT": str(tmp_path), "PLANE_SCREENSHOTS_WORK": work}
        only = ["--only", scene] if scene else []
        done = subprocess.run(
            [sys.executable, str(REPO / "screenshots" / script), *only],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=270,
            check=False,
        )
    assert done.returncode == 0, f"screenshots/{script} {' '.join(only)}:\n{done.stderr[-3000:]}"
    made = {p.stem for p in tmp_path.glob("*.svg")}
    assert made == SCENES[script, scene], f"made {sorted(made)}"
    assert all(p.read_text().startswith("<svg") for p in tmp_path.glob("*.svg"))
