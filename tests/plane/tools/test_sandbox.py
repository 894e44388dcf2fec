"""run_command under Landlock: the workspace is the agent's, the system is
readable, and nothing else can be reached — checked by the kernel."""

import json

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


def test_without_landlock_the_command_is_refused_not_run_unconfined(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(sandbox, "abi", lambda: 0)
    assert sandbox.main([str(tmp_path), "--", "touch", str(tmp_path / "ran")]) == sandbox.REFUSED
    assert "sandbox: false" in capsys.readouterr().err
    assert not (tmp_path / "ran").exists()
