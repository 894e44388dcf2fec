"""run_command under Landlock: the workspace is the agent's, the system is
readable, and nothing else can be reached — checked by the kernel."""

import json
import subprocess
import sys

import pytest

from plane.tools import registry, sandbox

pytestmark = pytest.mark.skipif(sandbox.abi() == 0, reason="this kernel has no Landlock")


@pytest.fixture
def confined(ctx):
    ctx.sandboxed = True
    return ctx


async def run(ctx, command):
    result = await registry.call("run_command", json.dumps({"command": command}), ctx)
    return result.text


async def test_inside_the_workspace_everything_works(confined):
    command = "mkdir -p a && echo hi > a/b.txt && cat a/b.txt && ls /usr >/dev/null"
    out = await run(confined, command)
    assert "hi\n[exit 0" in out
    assert (confined.workspace / "a" / "b.txt").read_text() == "hi\n"


async def test_nothing_outside_it_can_be_read_or_written(confined, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the operator's key")
    out = await run(confined, f"cat {secret}; echo x > {tmp_path}/planted; ls {tmp_path}")
    assert "the operator's key" not in out and "Permission denied" in out
    assert not (tmp_path / "planted").exists()


async def test_temporary_files_go_to_the_workspace(confined):
    out = await run(confined, "mktemp")
    assert str(confined.workspace / ".tmp") in out


def _launch(tmp_path, prelude, *argv):
    """The launcher in a process of its own (it changes namespaces), after `prelude`."""
    code = "\n".join(
        [
            "import sys",
            "from plane.tools import sandbox",
            prelude,
            "sys.exit(sandbox.main(sys.argv[1:]))",
        ]
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), "--", *argv],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_without_landlock_the_command_is_refused_not_run_unconfined(tmp_path):
    done = _launch(tmp_path, "sandbox.abi = lambda: 0", "touch", str(tmp_path / "ran"))
    assert done.returncode == sandbox.REFUSED
    assert done.stderr == (
        "The command was not run: the sandbox needs Linux Landlock (this kernel has no "
        "Landlock). Set `sandbox: false` in agents.yaml to run commands unconfined.\n"
    )
    assert not (tmp_path / "ran").exists()


def test_a_readable_root_that_holds_or_lies_in_the_planes_home_is_left_out(tmp_path):
    home = tmp_path / "data" / "plane"
    (home / "bin").mkdir(parents=True)
    tools = tmp_path / "tools"
    tools.mkdir()
    path = f"{tmp_path}:{tmp_path / 'data'}:{home / 'bin'}:{tools}"
    roots, dropped = sandbox.readable_roots(path, [home])
    assert tools in roots
    assert not any(root == home or home in root.parents or root in home.parents for root in roots)
    assert dropped == {tmp_path: home, tmp_path / "data": home, home / "bin": home}


def test_odd_path_entries_are_skipped_not_fatal(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    roots, dropped = sandbox.readable_roots(f"{a_file}:{loop}:relative::{tmp_path / 'gone'}")
    assert dropped == {}
    assert not {a_file, loop, tmp_path / "gone"} & set(roots)
    assert all(root.is_absolute() and root.is_dir() for root in roots)


def test_a_failure_that_is_not_a_missing_landlock_says_what_it_is():
    text = sandbox.refusal(OSError(22, "Invalid argument"))
    assert (
        text
        == "The command was not run: the sandbox could not be set up ([Errno 22] Invalid argument)."
    )
    assert "Landlock" not in text
