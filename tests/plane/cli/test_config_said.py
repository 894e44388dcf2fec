"""Which agents.yaml the plane read, said where a user looks first: `plane
status` (text and --json). A plane started in a directory without the file
runs on the built-in defaults, none of the file's agents in it; the status
says so, and where it looked."""

import json
from pathlib import Path

from plane.config import load_config
from plane.daemon.server import Plane
from plane.home import Home
from tests.support.command import plane_cli_async


async def status_of(home: Path, config_file: Path | None, looked: list[Path]) -> tuple[str, dict]:
    plane = Plane(load_config(config_file, looked), Home(home))
    await plane.startup()
    try:
        text = await plane_cli_async(home, "status")
        as_json = await plane_cli_async(home, "status", "--json")
    finally:
        plane.stop_event.set()
        await plane.shutdown()
    assert text.returncode == 0 and as_json.returncode == 0, text.stderr + as_json.stderr
    return text.stdout, json.loads(as_json.stdout)


async def test_status_says_the_plane_runs_on_the_defaults_and_where_it_looked(tmp_path):
    looked = [tmp_path / "work" / "agents.yaml", tmp_path / "xdg" / "plane" / "agents.yaml"]
    text, as_json = await status_of(tmp_path / "home", None, looked)
    assert text.splitlines()[-1] == (
        f"config: built-in defaults (no agents.yaml in {tmp_path}/work or {tmp_path}/xdg/plane)"
    )
    assert as_json["config_file"] is None
    assert as_json["config_looked"] == [str(place) for place in looked]


async def test_status_names_the_file_the_plane_read(tmp_path):
    config = tmp_path / "agents.yaml"
    config.write_text("defaults:\n  limitUsd: 5\n")
    text, as_json = await status_of(tmp_path / "home", config, [config])
    assert text.splitlines()[-1] == f"config: {config}"
    assert (as_json["config_file"], as_json["config_looked"]) == (str(config), [])


def test_a_directory_named_with_control_characters_is_shown_not_obeyed():
    """The directory the plane started in is anyone's to name: an escape in it
    would recolour the terminal `plane status` prints to, a line break split its line."""
    from plane.wire.words import config_said

    said = config_said(None, ["/tmp/\x1b[2J\nx/agents.yaml"])
    assert said == "config: built-in defaults (no agents.yaml in /tmp/\\x1b[2J\\nx)"
    assert config_said("/tmp/\x1b]0;owned\x07/agents.yaml", []) == (
        "config: /tmp/\\x1b]0;owned\\x07/agents.yaml"
    )
